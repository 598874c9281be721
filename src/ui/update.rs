//! `update`: the only place where input changes the view. What the view cannot do itself (quit,
//! pause, seek) goes back to the runtime as an [`Effect`].

use ratatui::layout::{Position, Rect};

use super::acting::Ask;
use super::history::{self, Listing};
use super::keymap::Action;
use super::outline::{self, NodeId};
use super::view::{Jump, Overlay, Pane, Sort, View};
use super::window;
use crate::model::Model;

/// How far `[` and `]` seek, in stream milliseconds.
pub const SEEK_STEP_MS: i64 = 10_000;

/// What the runtime must do after an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    TogglePause,
    /// Apply one more event (while paused).
    Step,
    /// Move the replay by this many milliseconds of stream time (negative: back), re-running
    /// the reducer from the start when going back.
    Seek(i64),
    /// +1 one speed step faster, -1 slower (1× → 2× → 10× → max).
    Speed(i32),
    /// Ctrl-Z: give the terminal back to the shell until `fg`.
    Suspend,
    /// Put this text on the terminal's clipboard (OSC 52).
    Copy(String),
    /// Sync the run store and read its sessions (off the UI thread), for the history view.
    LoadHistory,
    /// Open this past session: a replay of its files if they are all there, else from the store.
    OpenPast(String),
    /// Leave this screen (a session opened from a history) for the one it was opened from.
    Return,
    /// Find what carries this agent and what stopping it takes (off the UI thread), for the
    /// interrupt dialog.
    PlanAct(Ask),
    /// Stop it, as the dialog said (off the UI thread).
    Act(Ask),
}

/// How far the timeline's arrows move, as a share of the window.
const TIME_STEP_DIV: i64 = 4;

pub fn update(view: &mut View, model: &Model, action: Action) -> Effect {
    view.refresh(model);
    // The cursor is the user's from the first key on (the machine view no longer places it).
    view.selection.chosen = true;
    let effect = match action {
        Action::Quit if view.derived.live_source => {
            view.panes.overlay = Some(Overlay::ConfirmQuit);
            Effect::None
        }
        Action::Quit | Action::ConfirmQuit => Effect::Quit,
        Action::Suspend => Effect::Suspend,
        Action::ReplayOnly(what) => {
            view.panes.notice = Some(format!("{what}: only in a replay (this view is live)"));
            Effect::None
        }
        Action::TogglePause => Effect::TogglePause,
        Action::Step => Effect::Step,
        Action::SeekBack => Effect::Seek(-SEEK_STEP_MS),
        Action::SeekForward => Effect::Seek(SEEK_STEP_MS),
        Action::SpeedUp => Effect::Speed(1),
        Action::SpeedDown => Effect::Speed(-1),
        Action::Yank => yank(view, model),
        Action::History => open_history(view),
        Action::Interrupt | Action::InterruptSubtree => interrupt(view, model, action == Action::InterruptSubtree),
        Action::ConfirmAct => view.acting.confirm().map_or(Effect::None, Effect::Act),
        Action::Back if view.panes.overlay == Some(Overlay::Act) => {
            view.acting.close();
            view.panes.overlay = None;
            Effect::None
        }
        // Nothing left to close on a screen opened from a history: back to that history.
        Action::Back if !view.history.open => {
            if back(view) || !view.history.nested {
                Effect::None
            } else {
                Effect::Return
            }
        }
        _ if in_history(view, action) => match history::keys::act(&mut view.history, &view.layout, action) {
            Some(history::Ask::List) => Effect::LoadHistory,
            Some(history::Ask::Open(id)) => Effect::OpenPast(id),
            None => Effect::None,
        },
        Action::FilterStart
        | Action::FilterInput(_)
        | Action::FilterBackspace
        | Action::FilterAccept
        | Action::FilterCancel => {
            filter(view, model, action);
            Effect::None
        }
        Action::SearchStart
        | Action::SearchInput(_)
        | Action::SearchBackspace
        | Action::SearchAccept
        | Action::SearchCancel
        | Action::SearchOlder
        | Action::SearchNewer => {
            search(view, action);
            Effect::None
        }
        other => {
            screen(view, model, other);
            Effect::None
        }
    };
    view.refresh(model);
    effect
}

/// `i` / `I`: the interrupt dialog on the agent the sidebar describes (the cost table's row when
/// it has the focus); what carries it is found off the screen's thread.
fn interrupt(view: &mut View, model: &Model, subtree: bool) -> Effect {
    let Some(t) = selected_agent(view, model) else {
        view.panes.notice = Some("select an agent to interrupt".to_owned());
        return Effect::None;
    };
    let label = super::label::text(model, t);
    let ask = view.acting.open(model.thread(t).id.to_string(), label, subtree);
    view.panes.overlay = Some(Overlay::Act);
    Effect::PlanAct(ask)
}

/// The agent `y` and `i` act on: the cost table's selected row when it has the focus, else the
/// thread the sidebar describes.
fn selected_agent(view: &View, model: &Model) -> Option<crate::router::ThreadIdx> {
    let thread = match view.panes.focus {
        Pane::Cost => {
            let row = view.selection.cost_row.saturating_sub(view.panes.cost_scroll);
            view.layout.cost_rows.get(row).map(|&(_, t)| t)
        }
        _ => view.focus_thread(model),
    };
    thread.filter(|t| t.index() < model.threads.len())
}

/// `H`: the history view, its sessions read again (the list read last shows meanwhile).
fn open_history(view: &mut View) -> Effect {
    let h = &mut view.history;
    h.open = true;
    if !matches!(h.listing, Listing::Ready(_)) {
        h.listing = Listing::Reading;
    }
    Effect::LoadHistory
}

/// Whether the history view takes the action: it is open with nothing over it, and the action is
/// not one of those that work the same everywhere (quit, help, diagnostics, the filter's prompt).
fn in_history(view: &View, action: Action) -> bool {
    let general = matches!(
        action,
        Action::Quit
            | Action::ConfirmQuit
            | Action::Suspend
            | Action::Help
            | Action::Diagnostics
            | Action::FilterInput(_)
            | Action::FilterBackspace
            | Action::FilterAccept
            | Action::FilterCancel
    );
    view.history.open && view.panes.overlay.is_none() && !general
}

/// `/` in the tree (or the history): the filter as it is typed; the cursor goes to the first match.
fn filter(view: &mut View, model: &Model, action: Action) {
    if view.history.open {
        let h = &mut view.history;
        match action {
            Action::FilterInput(c) => h.filter.query.push(c),
            Action::FilterBackspace => {
                h.filter.query.pop();
            }
            Action::FilterAccept => h.filter.typing = false,
            Action::FilterCancel => {
                h.filter.typing = false;
                h.filter.query.clear();
            }
            _ => {}
        }
        // The newest session the filter keeps.
        h.selected = 0;
        return;
    }
    let filter = &mut view.panes.filter;
    match action {
        Action::FilterStart => {
            filter.typing = true;
            view.selection.follow = false;
        }
        Action::FilterInput(c) => {
            filter.query.push(c);
            select_first_match(view, model);
        }
        Action::FilterBackspace => {
            filter.query.pop();
            select_first_match(view, model);
        }
        Action::FilterAccept => filter.typing = false,
        Action::FilterCancel => {
            filter.typing = false;
            filter.query.clear();
        }
        _ => {}
    }
}

/// `/` in the lanes: the search as it is typed, and `n` / `N` to its matches (resolved by the
/// next frame, which knows the wrapping width).
fn search(view: &mut View, action: Action) {
    let search = &mut view.panes.search;
    match action {
        Action::SearchStart => {
            search.typing = true;
            search.query.clear();
        }
        Action::SearchInput(c) => search.query.push(c),
        Action::SearchBackspace => {
            search.query.pop();
        }
        Action::SearchCancel => {
            search.typing = false;
            search.query.clear();
        }
        Action::SearchAccept => search.typing = false,
        _ => {}
    }
    match action {
        // Enter goes to the newest match at or above the bottom of the pane, `n` further back.
        Action::SearchAccept | Action::SearchOlder if !search.query.is_empty() => search.jump = Some(Jump::Older),
        Action::SearchNewer if !search.query.is_empty() => search.jump = Some(Jump::Newer),
        Action::SearchAccept | Action::SearchOlder | Action::SearchNewer => {}
        // A new query: no match has been gone to yet.
        _ => {
            search.note = None;
            search.at = None;
        }
    }
}

/// Everything else: overlays, panes, the tree's order and folds, moving, the timeline's window.
fn screen(view: &mut View, model: &Model, action: Action) {
    match action {
        Action::Back => {
            back(view);
        }
        Action::Help => toggle_overlay(view, Overlay::Help),
        Action::Diagnostics => toggle_overlay(view, Overlay::Diagnostics),
        Action::Follow => view.selection.follow = !view.selection.follow,
        Action::Sort => {
            view.panes.sort = match view.panes.sort {
                Sort::Cost => Sort::Tokens,
                Sort::Tokens => Sort::Cost,
            };
        }
        Action::SortTree => view.panes.tree_sort = view.panes.tree_sort.next(),
        Action::ExpandAll => view.expand_all(),
        Action::CollapseAll => view.collapse_all(model),
        Action::Timeline => {
            view.panes.timeline = !view.panes.timeline;
            if view.panes.timeline {
                view.selection.expanded = None;
            }
        }
        Action::TimeEarlier | Action::TimeLater => pan_time(view, model, action == Action::TimeLater),
        Action::TimeZoomIn | Action::TimeZoomOut => zoom_time(view, model, action == Action::TimeZoomIn),
        Action::TimeNow => view.panes.window.end_ms = None,
        Action::Zoom => view.panes.zoom = !view.panes.zoom,
        Action::NextPane => view.panes.focus = cycle(view.panes.focus, true),
        Action::PrevPane => view.panes.focus = cycle(view.panes.focus, false),
        Action::MoveUp => step(view, model, -1),
        Action::MoveDown => step(view, model, 1),
        Action::PageUp => page(view, model, -1),
        Action::PageDown => page(view, model, 1),
        Action::Top => ends(view, model, true),
        Action::Bottom => ends(view, model, false),
        Action::Fold => fold(view),
        Action::Unfold => unfold(view),
        Action::OpenLane => open(view, model),
        Action::ToggleLane => toggle_lane(view, model),
        Action::Click { column, row } => click(view, model, Position::new(column, row)),
        Action::Scroll { column, row, delta } => scroll(view, model, Position::new(column, row), delta),
        _ => {}
    }
}

/// Esc closes the innermost thing: a prompt, an overlay (the quit question among them), the
/// zoom, an expanded lane, the timeline, a search, an applied filter. It never quits: with
/// `cmd | swarmtop` a stream lost is lost for good. Whether it closed something.
fn back(view: &mut View) -> bool {
    if view.panes.filter.typing {
        view.panes.filter.typing = false;
        view.panes.filter.query.clear();
    } else if view.panes.search.typing {
        view.panes.search.typing = false;
        view.panes.search.query.clear();
    } else if view.panes.overlay.is_some() {
        view.panes.overlay = None;
        view.panes.overlay_scroll = 0;
    } else if view.panes.zoom {
        view.panes.zoom = false;
    } else if view.selection.expanded.is_some() {
        view.selection.expanded = None;
        view.panes.scroll = 0;
    } else if view.panes.timeline {
        view.panes.timeline = false;
    } else if !view.panes.search.query.is_empty() {
        view.panes.search.query.clear();
        view.panes.search.note = None;
    } else if !view.panes.filter.query.is_empty() {
        view.panes.filter.query.clear();
    } else {
        return false;
    }
    true
}

fn pan_time(view: &mut View, model: &Model, later: bool) {
    let now_ms = view.derived.clock.now_ms;
    let (Some(e), Some((from, to))) = (window::extent(view, model), window::resolved(view, model, now_ms)) else {
        return;
    };
    let span = to - from;
    let shift = (span / TIME_STEP_DIV).max(1);
    let end = if later { to.saturating_add(shift) } else { to.saturating_sub(shift) };
    let w = &mut view.panes.window;
    w.span_ms = span;
    w.session = e.session;
    // Past now is now again: the window follows the stream from there.
    w.end_ms = (end < e.now(now_ms)).then_some(end);
}

fn zoom_time(view: &mut View, model: &Model, zoom_in: bool) {
    let now_ms = view.derived.clock.now_ms;
    let (Some(e), Some((from, to))) = (window::extent(view, model), window::resolved(view, model, now_ms)) else {
        return;
    };
    let span = to - from;
    let w = &mut view.panes.window;
    if w.session != e.session {
        // A window set on another session's timeline: this one starts from its whole extent.
        w.end_ms = None;
    }
    w.session = e.session;
    w.span_ms = if zoom_in { (span / 2).max(window::MIN_SPAN_MS) } else { span.saturating_mul(2) };
}

/// `y`: the lane text on screen when the lanes have the focus, else the selected agent's id.
fn yank(view: &View, model: &Model) -> Effect {
    if view.panes.focus == Pane::Lanes && !view.panes.timeline && !view.layout.lane_text.is_empty() {
        return Effect::Copy(view.layout.lane_text.join("\n"));
    }
    selected_agent(view, model).map_or(Effect::None, |t| Effect::Copy(model.thread(t).id.to_string()))
}

/// While typing a filter the cursor goes to the first thread that matches (not to an ancestor
/// kept only to show where the match sits).
fn select_first_match(view: &mut View, model: &Model) {
    view.refresh(model);
    let q = view.panes.filter.query.to_lowercase();
    let hit = view.rows().iter().find_map(|r| match r.id {
        NodeId::Thread(t) if !q.is_empty() && outline::matches(model, t, &q) => Some(r.id),
        _ => None,
    });
    if let Some(id) = hit {
        view.select(id);
    }
}

fn toggle_overlay(view: &mut View, which: Overlay) {
    view.panes.overlay = (view.panes.overlay != Some(which)).then_some(which);
    view.panes.overlay_scroll = 0;
}

fn cycle(p: Pane, forward: bool) -> Pane {
    match (p, forward) {
        (Pane::Tree, true) | (Pane::Cost, false) => Pane::Lanes,
        (Pane::Lanes, true) | (Pane::Tree, false) => Pane::Cost,
        (Pane::Cost, true) | (Pane::Lanes, false) => Pane::Tree,
    }
}

/// Whether the lanes pane shows one thread's whole transcript (scrolls) or stacked lanes (moves).
fn lanes_scroll_text(view: &View, model: &Model) -> bool {
    view.selection.expanded.is_some()
        || matches!(view.selection.node, Some(NodeId::Thread(_)))
        || lane_count(view, model) <= 1
}

fn lane_count(view: &View, model: &Model) -> usize {
    view.selection.node.map_or(0, |s| outline::lanes_of(model, s, &view.derived.groups, &view.derived.tops).len())
}

fn move_tree(view: &mut View, delta: isize) {
    let rows = view.rows();
    if rows.is_empty() {
        return;
    }
    let at = view.selected_row().unwrap_or(0);
    let to = at.saturating_add_signed(delta).min(rows.len() - 1);
    let id = rows[to].id;
    view.select(id);
    view.selection.follow = false;
}

fn step(view: &mut View, model: &Model, delta: isize) {
    if view.panes.overlay.is_some() {
        view.panes.overlay_scroll = view.panes.overlay_scroll.saturating_add_signed(delta);
        return;
    }
    match view.panes.focus {
        // The timeline's rows are the tree's agents: one selection for both.
        Pane::Tree => move_tree(view, delta),
        Pane::Lanes if view.panes.timeline => move_timeline(view, delta),
        Pane::Lanes if lanes_scroll_text(view, model) => {
            // Up reads older lines: scroll grows away from the newest line.
            view.panes.scroll = view.panes.scroll.saturating_add_signed(-delta);
        }
        Pane::Lanes => {
            let n = lane_count(view, model);
            view.selection.lane = view.selection.lane.saturating_add_signed(delta).min(n.saturating_sub(1));
            view.selection.follow = false;
        }
        Pane::Cost => {
            let last = model.threads.len().saturating_sub(1);
            view.selection.cost_row = view.selection.cost_row.saturating_add_signed(delta).min(last);
        }
    }
}

/// Up and down on the timeline go from agent to agent (its rows are the tree's threads).
fn move_timeline(view: &mut View, delta: isize) {
    let threads: Vec<usize> =
        view.rows().iter().enumerate().filter(|(_, r)| matches!(r.id, NodeId::Thread(_))).map(|(i, _)| i).collect();
    if threads.is_empty() {
        return;
    }
    let at = view.selected_row().unwrap_or(0);
    // The nearest thread row at or above the selection, then `delta` threads on.
    let here = threads.iter().rposition(|&i| i <= at).unwrap_or(0);
    let to = here.saturating_add_signed(delta).min(threads.len() - 1);
    let id = view.rows()[threads[to]].id;
    view.select(id);
    view.selection.follow = false;
}

fn page_rows(area: Rect) -> isize {
    isize::try_from(area.height.saturating_sub(3).max(1)).unwrap_or(1)
}

fn page(view: &mut View, model: &Model, dir: isize) {
    let rows = match (view.panes.overlay, view.panes.focus) {
        (Some(_), _) => page_rows(view.layout.overlay),
        (None, Pane::Tree) => page_rows(view.layout.tree),
        (None, Pane::Lanes) => page_rows(view.layout.lanes),
        (None, Pane::Cost) => page_rows(view.layout.cost).min(10),
    };
    step(view, model, dir * rows);
}

fn ends(view: &mut View, model: &Model, top: bool) {
    // Far enough to reach either end; the draw clamps it to what exists.
    let far = if top { -(1 << 30) } else { 1 << 30 };
    step(view, model, far);
}

fn fold(view: &mut View) {
    let Some(at) = view.selected_row() else {
        return;
    };
    let row = view.rows()[at];
    if row.is_open() {
        view.fold(row.id);
    } else if let Some(parent) = outline::parent_row(view.rows(), at) {
        let id = view.rows()[parent].id;
        view.select(id);
    }
}

fn unfold(view: &mut View) {
    let Some(at) = view.selected_row() else {
        return;
    };
    let row = view.rows()[at];
    if row.has_children() && !row.is_open() {
        view.unfold(row.id);
    } else if row.is_open() {
        if let Some(next) = view.rows().get(at + 1).map(|r| r.id) {
            view.select(next);
        }
    }
}

fn open(view: &mut View, model: &Model) {
    match view.panes.focus {
        Pane::Tree => {
            if let Some(NodeId::Thread(t)) = view.selection.node {
                view.selection.expanded = Some(t);
                view.panes.scroll = 0;
            }
            view.panes.timeline = false;
            view.panes.focus = Pane::Lanes;
        }
        Pane::Lanes if view.panes.timeline => {
            // From a row of the timeline to that agent's transcript.
            if let Some(NodeId::Thread(t)) = view.selection.node {
                view.selection.expanded = Some(t);
                view.panes.scroll = 0;
            }
            view.panes.timeline = false;
        }
        Pane::Lanes => {
            if view.selection.expanded.is_some() {
                view.selection.expanded = None;
            } else if let Some(sel) = view.selection.node {
                view.selection.expanded = outline::lanes_of(model, sel, &view.derived.groups, &view.derived.tops)
                    .get(view.selection.lane)
                    .copied();
                if let Some(t) = view.selection.expanded {
                    view.panes.collapsed.remove(&t);
                }
            }
            view.panes.scroll = 0;
        }
        Pane::Cost => {
            // The table's row, in the order it was drawn: go to that agent in the tree.
            if let Some(&(_, t)) =
                view.layout.cost_rows.get(view.selection.cost_row.saturating_sub(view.panes.cost_scroll))
            {
                view.reveal(model, t);
                view.panes.focus = Pane::Tree;
            }
        }
    }
}

fn toggle_lane(view: &mut View, model: &Model) {
    let Some(sel) = view.selection.node else { return };
    if let Some(&t) = outline::lanes_of(model, sel, &view.derived.groups, &view.derived.tops).get(view.selection.lane) {
        if !view.panes.collapsed.remove(&t) {
            view.panes.collapsed.insert(t);
        }
    }
}

fn click(view: &mut View, model: &Model, at: Position) {
    if view.panes.overlay.is_some() {
        if !view.layout.overlay.contains(at) {
            view.panes.overlay = None;
        }
        return;
    }
    let layout = &view.layout;
    if layout.tree.contains(at) {
        view.panes.focus = Pane::Tree;
        // Rows start one line below the pane's top border.
        let Some(offset) = (at.y as usize).checked_sub(layout.tree.y as usize + 1) else {
            return;
        };
        // The bottom border is not a row.
        if offset + 2 >= layout.tree.height as usize {
            return;
        }
        let index = layout.tree_offset + offset;
        let Some(row) = view.rows().get(index).copied() else {
            return;
        };
        if view.selection.node == Some(row.id) && row.has_children() {
            if row.is_open() {
                view.fold(row.id);
            } else {
                view.unfold(row.id);
            }
        } else {
            view.select(row.id);
            view.selection.follow = false;
        }
    } else if layout.lanes.contains(at) {
        view.panes.focus = Pane::Lanes;
        let hit = layout.lane_headers.iter().find(|(r, _)| r.contains(at)).map(|&(_, i)| i);
        if let Some(i) = hit {
            if view.selection.lane == i {
                toggle_lane(view, model);
            }
            view.selection.lane = i;
            view.selection.follow = false;
        }
    } else if layout.cost.contains(at) {
        view.panes.focus = Pane::Cost;
        if let Some(k) = layout.cost_rows.iter().position(|&(y, _)| y == at.y) {
            let row = view.panes.cost_scroll + k;
            if view.selection.cost_row == row {
                // A second click on the row goes to the agent, as Enter does.
                open(view, model);
            } else {
                view.selection.cost_row = row;
            }
        }
    } else if let Some(&(_, row)) =
        layout.timeline_rows.iter().find(|&&(y, _)| y == at.y).filter(|_| layout.timeline.contains(at))
    {
        view.panes.focus = Pane::Lanes;
        if let Some(id) = view.rows().get(row).map(|r| r.id) {
            view.select(id);
            view.selection.follow = false;
        }
    }
}

fn scroll(view: &mut View, model: &Model, at: Position, delta: i16) {
    let delta = isize::from(delta);
    if view.panes.overlay.is_some() {
        view.panes.overlay_scroll = view.panes.overlay_scroll.saturating_add_signed(delta);
        return;
    }
    let layout = &view.layout;
    if layout.tree.contains(at) {
        move_tree(view, delta);
    } else if layout.lanes.contains(at) {
        if lanes_scroll_text(view, model) {
            view.panes.scroll = view.panes.scroll.saturating_add_signed(-delta);
        } else {
            let n = lane_count(view, model);
            view.selection.lane = view.selection.lane.saturating_add_signed(delta.signum()).min(n.saturating_sub(1));
        }
    } else if layout.cost.contains(at) {
        let last = model.threads.len().saturating_sub(1);
        view.selection.cost_row = view.selection.cost_row.saturating_add_signed(delta).min(last);
    } else if layout.timeline.contains(at) {
        move_timeline(view, delta.signum());
    }
}
