//! Input to [`Action`]s through one table. The footer and the `?` overlay are generated from the
//! same table, so what the screen says a key does is what it does.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::acting::Stage;
use super::view::{Overlay, Pane, View};

/// What the user asked for, as data; `update` gives it meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    MoveUp,
    MoveDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// ← : fold the selected node, or go to its parent.
    Fold,
    /// → : unfold the selected node, or go to its first child.
    Unfold,
    ExpandAll,
    CollapseAll,
    /// Enter: open the selection's lane (tree), expand the selected lane (lanes), go to the
    /// agent of the selected row (cost table, timeline).
    OpenLane,
    /// Fold or unfold the selected lane.
    ToggleLane,
    NextPane,
    PrevPane,
    FilterStart,
    FilterInput(char),
    FilterBackspace,
    FilterAccept,
    FilterCancel,
    /// `/` in the lanes: search the text shown there.
    SearchStart,
    SearchInput(char),
    SearchBackspace,
    SearchAccept,
    SearchCancel,
    /// `n`: the next match further back (older); `N`: towards the newest line.
    SearchOlder,
    SearchNewer,
    Follow,
    /// The cost table's order (cost / tokens).
    Sort,
    /// The tree's order among siblings (arrival, cost, tokens, elapsed, start).
    SortTree,
    Timeline,
    /// Earlier / later on the timeline, and its scale.
    TimeEarlier,
    TimeLater,
    TimeZoomIn,
    TimeZoomOut,
    /// Back to the newest moment (live) or the replay's position.
    TimeNow,
    Zoom,
    /// Copy the selected agent's id, or the lane text on screen (OSC 52).
    Yank,
    Help,
    Diagnostics,
    /// `H`: past sessions from the run store.
    History,
    /// `r` in the history: sync the store and read it again.
    Reload,
    /// `i`: interrupt the selected agent (asks first); `I`: it and everything below it.
    Interrupt,
    InterruptSubtree,
    /// `y` in the interrupt dialog: stop what it names.
    ConfirmAct,
    /// Esc: closes the innermost thing open (prompt, overlay, zoom, expanded lane, filter). Never quits.
    Back,
    /// `q`: quits, after asking while a live stream would be lost.
    Quit,
    /// `y` in the question "quit?".
    ConfirmQuit,
    Suspend,
    TogglePause,
    Step,
    SeekBack,
    SeekForward,
    SpeedUp,
    SpeedDown,
    Click {
        column: u16,
        row: u16,
    },
    Scroll {
        column: u16,
        row: u16,
        delta: i16,
    },
    /// A replay's key (seek, step, speed) pressed on a live view: said in the footer, rather than
    /// the key doing nothing without a word.
    ReplayOnly(&'static str),
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct When(u16);

impl When {
    pub const TREE: Self = Self(1);
    pub const LANES: Self = Self(2);
    pub const COST: Self = Self(4);
    pub const HELP: Self = Self(8);
    pub const DIAG: Self = Self(16);
    pub const TYPING: Self = Self(32);
    /// The question "quit?".
    pub const CONFIRM: Self = Self(64);
    /// Typing a text search (after `/` in the lanes).
    pub const SEARCH: Self = Self(128);
    /// The timeline in the lanes' place, focused.
    pub const TIMELINE: Self = Self(256);
    /// The history's list of past sessions.
    pub const HISTORY: Self = Self(512);
    /// A past session opened from the run store.
    pub const PAST: Self = Self(1024);
    /// The interrupt dialog, by its stage: finding what carries the agent, asking (`y` stops it),
    /// stopping, and ended (unable, or done). Each stage has its own answers, which the footer and
    /// the dialog both print from this table.
    pub const ACT_FINDING: Self = Self(2048);
    pub const ACT_READY: Self = Self(4096);
    pub const ACT_STOPPING: Self = Self(8192);
    pub const ACT_ENDED: Self = Self(16384);
    pub const ACT: Self = Self(2048 | 4096 | 8192 | 16384);
    /// The dialogs that name their answers (quit?, interrupt?).
    pub const DIALOGS: Self = Self(64 | 2048 | 4096 | 8192 | 16384);
    pub const PANES: Self = Self(1 | 2 | 4 | 256);
    pub const OVERLAYS: Self = Self(8 | 16);
    /// The history view, its list or a session opened from it.
    pub const HISTORY_VIEW: Self = Self(512 | 1024);
    pub const SCROLLABLE: Self = Self(1 | 2 | 4 | 8 | 16 | 256 | 512 | 1024);
    pub const PROMPTS: Self = Self(32 | 128 | 2048 | 4096 | 8192 | 16384);

    const fn or(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }

    pub fn has(self, o: Self) -> bool {
        self.0 & o.0 != 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Move,
    Filter,
    Panes,
    Timeline,
    Replay,
    History,
    Act,
    App,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Self::Move => "Move",
            Self::Filter => "Filter and search (after /)",
            Self::Timeline => "Timeline (t)",
            Self::Panes => "Panes",
            Self::Replay => "Replay",
            Self::History => "History (H)",
            Self::Act => "Interrupt (asks first)",
            Self::App => "Screen",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn key(code: KeyCode) -> Key {
    Key { code, mods: KeyModifiers::NONE }
}

const fn ch(c: char) -> Key {
    key(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Key {
    Key { code: KeyCode::Char(c), mods: KeyModifiers::CONTROL }
}

#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    pub help: &'static str,
    /// Footer hint; consecutive bindings with the same hint share one footer entry (`↑↓ move`).
    pub hint: Option<&'static str>,
    /// Footer priority: 1 is kept longest when the footer is too narrow.
    pub prio: u8,
    pub when: When,
    /// Only for replays (step, seek, speed).
    pub replay: bool,
    pub section: Section,
}

impl Binding {
    /// Pressed on the screen itself or in its prompts, not in the quit prompt or an overlay
    /// (those name their own keys where they are drawn).
    pub fn on_screen(&self) -> bool {
        self.when.has(When::PANES.or(When::TYPING).or(When::SEARCH).or(When::HISTORY_VIEW))
    }
}

const fn b(
    keys: &'static [Key],
    action: Action,
    help: &'static str,
    hint: Option<&'static str>,
    prio: u8,
    when: When,
    section: Section,
) -> Binding {
    Binding { keys, action, help, hint, prio, when, replay: false, section }
}

const fn replay(mut binding: Binding) -> Binding {
    binding.replay = true;
    binding
}

use Action as A;
use KeyCode as K;
use Section as S;

const ESC_IN_DIALOG: &str = "leave it running; Esc: cancel, hide or close";

/// The keymap, in footer order.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    // keys                          action            help                                 footer hint           prio  where
    b(&[key(K::Enter)],             A::FilterAccept,    "keep the filter",                  Some("keep"),           1, When::TYPING, S::Filter),
    b(&[key(K::Esc)],               A::FilterCancel,    "clear the filter",                 Some("clear"),          1, When::TYPING, S::Filter),
    b(&[key(K::Backspace)],         A::FilterBackspace, "delete a character",               None,                   0, When::TYPING, S::Filter),
    b(&[key(K::Enter)],             A::SearchAccept,    "keep the search (n/N to move)",    Some("keep"),           1, When::SEARCH, S::Filter),
    b(&[key(K::Esc)],               A::SearchCancel,    "clear the search",                 Some("clear"),          1, When::SEARCH, S::Filter),
    b(&[key(K::Backspace)],         A::SearchBackspace, "delete a character",               None,                   0, When::SEARCH, S::Filter),
    b(&[ch('y'), ch('q')],          A::ConfirmQuit,     "quit and lose the live stream",    Some("quit"),           1, When::CONFIRM, S::App),
    b(&[ch('n'), key(K::Esc)],      A::Back,            "stay",                             Some("stay"),           1, When::CONFIRM, S::App),
    b(&[ch('y')],                   A::ConfirmAct,      "interrupt what the dialog names",  Some("interrupt"),      1, When::ACT_READY, S::Act),
    // One help text for Esc at every stage (help prints it once, with the first binding's keys);
    // the footer and the dialog say the stage's own word.
    b(&[ch('n'), key(K::Esc)],      A::Back,            ESC_IN_DIALOG,                      Some("leave it running"), 1, When::ACT_READY, S::Act),
    b(&[key(K::Esc)],               A::Back,            ESC_IN_DIALOG,                      Some("cancel"),         1, When::ACT_FINDING, S::Act),
    b(&[key(K::Esc)],               A::Back,            ESC_IN_DIALOG,                      Some("hide"),           1, When::ACT_STOPPING, S::Act),
    b(&[key(K::Esc)],               A::Back,            ESC_IN_DIALOG,                      Some("close"),          1, When::ACT_ENDED, S::Act),
    b(&[key(K::Up), ch('k')],       A::MoveUp,          "move up",                          Some("move"),           1, When::SCROLLABLE.or(When::TYPING), S::Move),
    b(&[key(K::Down), ch('j')],     A::MoveDown,        "move down",                        Some("move"),           1, When::SCROLLABLE.or(When::TYPING), S::Move),
    b(&[key(K::Left), ch('h')],     A::Fold,            "fold, or go to the parent",        Some("fold"),           2, When::TREE, S::Move),
    b(&[key(K::Right), ch('l')],    A::Unfold,          "unfold, or go to the first child", Some("fold"),           2, When::TREE, S::Move),
    b(&[key(K::Left), ch('h')],     A::TimeEarlier,     "earlier in time",                  Some("scroll"),         2, When::TIMELINE, S::Timeline),
    b(&[key(K::Right), ch('l')],    A::TimeLater,       "later in time",                    Some("scroll"),         2, When::TIMELINE, S::Timeline),
    b(&[ch('>')],                   A::TimeZoomIn,      "zoom in (less time, more detail)", Some("zoom"),           3, When::TIMELINE, S::Timeline),
    b(&[ch('<')],                   A::TimeZoomOut,     "zoom out",                         Some("zoom"),           3, When::TIMELINE, S::Timeline),
    b(&[ch('0')],                   A::TimeNow,         "back to now (follow the stream)",  Some("now"),            4, When::TIMELINE, S::Timeline),
    b(&[key(K::PageUp)],            A::PageUp,          "page up (lanes: scroll back)",     None,                   0, When::SCROLLABLE, S::Move),
    b(&[key(K::PageDown)],          A::PageDown,        "page down",                        None,                   0, When::SCROLLABLE, S::Move),
    b(&[key(K::Home), ch('g')],     A::Top,             "first row (lanes: oldest line)",   None,                   0, When::SCROLLABLE, S::Move),
    b(&[key(K::End), ch('G')],      A::Bottom,          "last row (lanes: newest line)",    None,                   0, When::SCROLLABLE, S::Move),
    b(&[ch('e')],                   A::ExpandAll,       "unfold everything",                None,                   0, When::TREE, S::Move),
    b(&[ch('E')],                   A::CollapseAll,     "fold everything",                  None,                   0, When::TREE, S::Move),
    b(&[key(K::Enter)],             A::OpenLane,        "open the lane / expand it / go to the agent", Some("open"), 2, When::PANES, S::Panes),
    b(&[ch('x')],                   A::ToggleLane,      "fold the selected lane",           Some("fold lane"),      4, When::LANES, S::Panes),
    b(&[key(K::Tab)],               A::NextPane,        "next pane",                        Some("pane"),           3, When::PANES, S::Panes),
    b(&[key(K::BackTab)],           A::PrevPane,        "previous pane",                    None,                   0, When::PANES, S::Panes),
    b(&[ch('/')],                   A::FilterStart,     "filter agents by name, status or model", Some("filter"),   2, When::TREE.or(When::COST).or(When::TIMELINE), S::Panes),
    b(&[ch('/')],                   A::SearchStart,     "search the text of the lanes",     Some("search"),         2, When::LANES, S::Panes),
    b(&[ch('n')],                   A::SearchOlder,     "next match (further back)",        Some("next"),           3, When::LANES, S::Panes),
    b(&[ch('N')],                   A::SearchNewer,     "previous match (towards the newest)", None,                0, When::LANES, S::Panes),
    b(&[ch('t')],                   A::Timeline,        "timeline of the swarm / back to the lanes", Some("timeline"), 2, When::PANES, S::Panes),
    b(&[ch('z')],                   A::Zoom,            "zoom the pane to the full screen", Some("zoom"),           4, When::PANES, S::Panes),
    b(&[ch('f')],                   A::Follow,          "follow the newest active lane",    Some("follow"),         3, When::PANES, S::Panes),
    b(&[ch('o')],                   A::SortTree,        "order agents: arrival, cost, tokens, elapsed, start", Some("order"), 4, When::TREE.or(When::TIMELINE), S::Panes),
    b(&[ch('s')],                   A::Sort,            "sort the cost table by cost / tokens", Some("sort"),       4, When::COST, S::Panes),
    b(&[ch('y')],                   A::Yank,            "copy the agent's id (lanes: the text on screen)", Some("copy"), 5, When::PANES, S::Panes),
    b(&[ch(' ')],                   A::TogglePause,     "pause / resume the view",          Some("pause"),          2, When::PANES, S::Replay),
    replay(b(&[ch('.')],            A::Step,            "step one event (paused)",          Some("step"),           4, When::PANES, S::Replay)),
    replay(b(&[ch('[')],            A::SeekBack,        "seek back 10 s",                   Some("seek"),           4, When::PANES, S::Replay)),
    replay(b(&[ch(']')],            A::SeekForward,     "seek forward 10 s",                Some("seek"),           4, When::PANES, S::Replay)),
    replay(b(&[ch('+'), ch('=')],   A::SpeedUp,         "faster",                           Some("speed"),          3, When::PANES, S::Replay)),
    replay(b(&[ch('-')],            A::SpeedDown,       "slower",                           Some("speed"),          3, When::PANES, S::Replay)),
    b(&[ch('i')],                   A::Interrupt,       "interrupt the selected agent", Some("interrupt"), 4, When::PANES, S::Act),
    b(&[ch('I')],                   A::InterruptSubtree, "interrupt it and all below it", Some("interrupt"), 4, When::PANES, S::Act),
    b(&[ch('H')],                   A::History,         "past sessions from the run store", Some("history"),        3, When::PANES, S::History),
    b(&[key(K::Enter)],             A::OpenLane,        "open: replay its files, else the store's copy", Some("open"), 1, When::HISTORY, S::History),
    b(&[ch('/')],                   A::FilterStart,     "filter by agent, project, name, status or id", Some("filter"), 2, When::HISTORY, S::History),
    b(&[ch('r')],                   A::Reload,          "sync the run store and read it again", Some("sync"),  3, When::HISTORY, S::History),
    b(&[key(K::Esc), ch('q')],      A::Back,            "back: to the list, then to the monitor", Some("back"), 1, When::HISTORY_VIEW, S::History),
    b(&[ch('d')],                   A::Diagnostics,     "diagnostics: counters, bad lines, log", Some("diagnostics"), 3, When::PANES.or(When::DIAG).or(When::HISTORY_VIEW), S::App),
    b(&[ch('?')],                   A::Help,            "this help",                        Some("help"),           1, When::PANES.or(When::HELP).or(When::HISTORY_VIEW), S::App),
    b(&[key(K::Esc), ch('q')],      A::Back,            "close",                            Some("close"),          1, When::OVERLAYS, S::App),
    b(&[key(K::Esc)],               A::Back,            "back: prompt, zoom, lane, filter, or history", None,  0, When::PANES, S::App),
    b(&[ch('q')],                   A::Quit,            "quit (asks first while live)",     Some("quit"),           1, When::PANES, S::App),
    b(&[ctrl('c')],                 A::Quit,            "quit, from anywhere",              None,                   0, When::SCROLLABLE.or(When::PROMPTS), S::App),
    b(&[ctrl('c')],                 A::ConfirmQuit,     "quit",                             None,                   0, When::CONFIRM, S::App),
    b(&[ctrl('z')],                 A::Suspend,         "suspend to the shell (fg resumes)", None,                  0, When::SCROLLABLE.or(When::PROMPTS), S::App),
];

/// The context the view is in: one overlay, the filter prompt, or a focused pane.
pub fn context(view: &View) -> When {
    let panes = &view.panes;
    if panes.overlay == Some(Overlay::ConfirmQuit) {
        When::CONFIRM
    } else if panes.overlay == Some(Overlay::Act) {
        match view.acting.dialog.as_ref().map(|d| &d.stage) {
            Some(Stage::Finding) => When::ACT_FINDING,
            Some(Stage::Ready(_)) => When::ACT_READY,
            Some(Stage::Stopping(_)) => When::ACT_STOPPING,
            Some(Stage::Unable(_) | Stage::Done(..)) | None => When::ACT_ENDED,
        }
    } else if panes.filter.typing || view.history.filter.typing {
        When::TYPING
    } else if panes.search.typing {
        When::SEARCH
    } else if let Some(o) = panes.overlay {
        match o {
            Overlay::Help => When::HELP,
            Overlay::Diagnostics | Overlay::ConfirmQuit | Overlay::Act => When::DIAG,
        }
    } else if view.history.open {
        if view.history.opened.is_some() { When::PAST } else { When::HISTORY }
    } else {
        match panes.focus {
            Pane::Tree => When::TREE,
            Pane::Lanes if panes.timeline => When::TIMELINE,
            Pane::Lanes => When::LANES,
            Pane::Cost => When::COST,
        }
    }
}

/// The bindings that apply right now.
pub fn active(view: &View) -> impl Iterator<Item = &'static Binding> + '_ {
    let ctx = context(view);
    BINDINGS.iter().filter(move |b| b.when.has(ctx) && (!b.replay || view.derived.replay))
}

pub fn action_for(ev: KeyEvent, view: &View) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    // Shift is part of the character itself (`G`, `?`, `+`), not a modifier to match.
    let mods = ev.modifiers - KeyModifiers::SHIFT;
    let ctx = context(view);
    if ctx == When::TYPING || ctx == When::SEARCH {
        if let KeyCode::Char(c) = ev.code {
            if !mods.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                let filter = view.panes.filter.typing || view.history.filter.typing;
                return Some(if filter { Action::FilterInput(c) } else { Action::SearchInput(c) });
            }
        }
    }
    let code = match ev.code {
        // Terminals send Shift-Tab as BackTab or as Tab with Shift.
        KeyCode::Tab if ev.modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
        c => c,
    };
    let pressed = |b: &&Binding| b.keys.iter().any(|k| k.code == code && k.mods == mods);
    active(view).find(pressed).map(|b| b.action).or_else(|| {
        BINDINGS.iter().filter(|b| b.replay && b.when.has(ctx)).find(pressed).map(|b| Action::ReplayOnly(b.help))
    })
}

pub fn action_for_mouse(ev: MouseEvent, view: &View) -> Option<Action> {
    let panes = &view.panes;
    let typing = panes.filter.typing || panes.search.typing || view.history.filter.typing;
    if typing || matches!(panes.overlay, Some(Overlay::ConfirmQuit | Overlay::Act)) {
        return None;
    }
    let (column, row) = (ev.column, ev.row);
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => Some(Action::Click { column, row }),
        MouseEventKind::ScrollUp => Some(Action::Scroll { column, row, delta: -3 }),
        MouseEventKind::ScrollDown => Some(Action::Scroll { column, row, delta: 3 }),
        _ => None,
    }
}

/// A key as the footer and help print it.
pub fn key_name(k: &Key) -> String {
    let base = match k.code {
        K::Up => "↑".into(),
        K::Down => "↓".into(),
        K::Left => "←".into(),
        K::Right => "→".into(),
        K::Enter => "⏎".into(),
        K::Tab => "Tab".into(),
        K::BackTab => "S-Tab".into(),
        K::Esc => "Esc".into(),
        K::Backspace => "⌫".into(),
        K::PageUp => "PgUp".into(),
        K::PageDown => "PgDn".into(),
        K::Home => "Home".into(),
        K::End => "End".into(),
        K::Char(' ') => "space".into(),
        K::Char(c) => c.to_string(),
        other => format!("{other:?}"),
    };
    if k.mods.contains(KeyModifiers::CONTROL) { format!("^{}", base.to_uppercase()) } else { base }
}

/// Footer entries valid right now: (keys, hint, priority), merged by hint. A dialog's answers name
/// every key (`n/Esc`), as the dialog prints these same entries; elsewhere the first key stands
/// for its binding, to keep the footer short.
pub fn footer_entries(view: &View) -> Vec<(String, &'static str, u8)> {
    let mut out: Vec<(String, &'static str, u8)> = Vec::new();
    let mut last_hint = None;
    let every_key = context(view).has(When::DIALOGS);
    for bind in active(view) {
        let Some(hint) = bind.hint else {
            last_hint = None;
            continue;
        };
        let Some(first) = bind.keys.first() else {
            continue;
        };
        let name =
            if every_key { bind.keys.iter().map(key_name).collect::<Vec<_>>().join("/") } else { key_name(first) };
        match out.last_mut() {
            Some(entry) if last_hint == Some(hint) => {
                let glue = if matches!(first.code, K::Char(_)) { "/" } else { "" };
                entry.0.push_str(glue);
                entry.0.push_str(&name);
            }
            _ => out.push((name, hint, bind.prio)),
        }
        last_hint = Some(hint);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In any one context a key means one thing: the table cannot shadow itself.
    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        let contexts = [
            When::TREE,
            When::LANES,
            When::COST,
            When::HELP,
            When::DIAG,
            When::TYPING,
            When::CONFIRM,
            When::SEARCH,
            When::TIMELINE,
            When::HISTORY,
            When::PAST,
            When::ACT_FINDING,
            When::ACT_READY,
            When::ACT_STOPPING,
            When::ACT_ENDED,
        ];
        for ctx in contexts {
            let mut seen: Vec<Key> = Vec::new();
            for b in BINDINGS.iter().filter(|b| b.when.has(ctx)) {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice in {ctx:?}");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn footer_merges_pairs_and_hides_replay_keys_on_live_feeds() {
        let mut view = View::with_theme(crate::ui::Theme::no_color());
        let live: Vec<(String, &str, u8)> = footer_entries(&view);
        assert!(live.iter().any(|(k, h, _)| k == "↑↓" && *h == "move"));
        assert!(live.iter().any(|(k, h, _)| k == "←→" && *h == "fold"));
        assert!(!live.iter().any(|(_, h, _)| *h == "speed"));
        view.derived.replay = true;
        let replay = footer_entries(&view);
        assert!(replay.iter().any(|(k, h, _)| k == "+/-" && *h == "speed"));
        assert!(replay.iter().any(|(k, h, _)| k == "[/]" && *h == "seek"));
    }

    #[test]
    fn a_replay_key_on_a_live_view_says_so() {
        let mut view = View::with_theme(crate::ui::Theme::no_color());
        let seek = KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE);
        assert_eq!(action_for(seek, &view), Some(Action::ReplayOnly("seek back 10 s")));
        let model = crate::model::Model::default();
        crate::ui::update(&mut view, &model, Action::ReplayOnly("seek back 10 s"));
        assert_eq!(view.panes.notice.as_deref(), Some("seek back 10 s: only in a replay (this view is live)"));
        view.derived.replay = true;
        assert_eq!(action_for(seek, &view), Some(Action::SeekBack));
    }

    #[test]
    fn shift_is_part_of_the_character() {
        let view = View::with_theme(crate::ui::Theme::no_color());
        let g = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(action_for(g, &view), Some(Action::Bottom));
        let back_tab = KeyEvent::new(KeyCode::Tab, KeyModifiers::SHIFT);
        assert_eq!(action_for(back_tab, &view), Some(Action::PrevPane));
    }
}
