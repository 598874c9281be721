//! The monitor's history view (`H`, issue 20): what it shows at every moment — asked, syncing,
//! listed, filtered, a session opening, opened from the store, back — over a `TestBackend`, and
//! what each key asks of the shell (the store is read off the UI thread, by `commands::past`).

mod store_support;

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::model::prices::Pico;
use swarmtop::model::{ItemStatus, Tokens};
use swarmtop::pipeline::Pipeline;
use swarmtop::ui::history::{Listing, Loaded, Opened, Past, PastAct, PastItem, PastRun, StoreFacts, Stored};
use swarmtop::ui::{self, Effect, Feed, Overlay, Theme, View};
use swarmtop::wire::{sanitize, sanitize_line};

/// The demo's first lines: the monitor the history opens over.
fn monitor() -> (Pipeline, Feed) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/codex-0.171.0/collab_v1.server.ndjson");
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut p = Pipeline::default();
    for l in text.lines().take(40) {
        p.push(l.as_bytes());
    }
    let feed =
        Feed { source: swarmtop::wire::sanitize_line("collab_v1"), now_ms: p.model.stream_ms, ..Feed::default() };
    (p, feed)
}

fn tokens(total: u64) -> Tokens {
    Tokens { input: total - total / 10, cached_input: total / 2, output: total / 10, total, ..Tokens::default() }
}

fn past(id: &str, agent: &str, project: &str, name: &str, status: &str, files: bool) -> Past {
    Past {
        id: sanitize_line(id),
        agent: sanitize_line(agent),
        name: sanitize_line(name),
        project: Some(sanitize_line(project)),
        start: Some("2026-11-29 21:20".to_owned()),
        elapsed_ms: Some(61_000),
        status: sanitize_line(status),
        agents: 4,
        depth: 1,
        tokens: tokens(15_248),
        cost: Some(Pico(51_000_000_000)),
        files_present: files,
    }
}

fn sessions() -> Arc<[Past]> {
    vec![
        past(
            "01a23344-2a6c-7593-ab01-ac24059bd6a5",
            "codex",
            "/home/dev/work",
            "narrate while helpers run",
            "interrupted",
            true,
        ),
        past("01a2292e-150b-7bd3-ae6f-5cbd9a8eb718", "codex", "/home/dev/project", "PARENT-TASK", "idle", true),
        // Hostile text from a brief: sanitised where it came in, drawn as text.
        past(
            "4d5611e5-241a-462a-8d15-5122611a9569",
            "claude",
            "/home/u/spotter",
            "bead \u{1b}[31mred\u{1b}[0m \u{202e}evil",
            "idle",
            false,
        ),
    ]
    .into()
}

fn item(kind: &str, title: &str, text: &str) -> PastItem {
    PastItem {
        id: sanitize_line(""),
        kind: sanitize_line(kind),
        status: ItemStatus::Completed,
        title: sanitize_line(title),
        text: sanitize(text),
        turn: None,
        tool: None,
        op: None,
        exit_code: None,
        receivers: Vec::new(),
        why: None,
    }
}

fn run(name: &str, depth: u32, child: bool, status: &str) -> PastRun {
    PastRun {
        thread: sanitize_line(name),
        depth,
        name: sanitize_line(name),
        agent_type: child.then(|| sanitize_line("Explore")),
        brief: Some(sanitize(&format!("{name}: find where transcripts are drawn \u{1b}]52;c;bad\u{7}"))),
        model: Some(sanitize_line("claude-opus-4-6")),
        status: sanitize_line(status),
        child,
        elapsed_ms: Some(95_000),
        turns: 2,
        tool_calls: 7,
        tokens: tokens(676_000),
        cost: Some(Pico(450_000_000_000)),
        answer: Some(sanitize("The transcript is drawn in two LiveViews.")),
        files_changed: vec![sanitize_line("lib/spotter_web/live/session_live.ex")],
        entries: vec![
            item("commandExecution", "rg -n transcript lib/", "lib/a.ex:3: transcript\nlib/b.ex:9: transcript"),
            item("agentMessage", "", "Both views render the same markup."),
        ],
    }
}

fn stored() -> Stored {
    Stored {
        session: sessions()[2].clone(),
        runs: vec![run("lead", 0, false, "idle"), run("scout", 1, true, "idle"), run("tester", 1, true, "failed")],
        acts: Vec::new(),
    }
}

fn act(target: &str, kind: &str, by: &str, via: &str, detail: &str, outcome: &str) -> PastAct {
    PastAct {
        at: "2026-11-29 21:21".to_owned(),
        kind: sanitize_line(kind),
        target: sanitize_line(target),
        by: sanitize_line(by),
        via: sanitize_line(via),
        detail: sanitize_line(detail),
        outcome: sanitize_line(outcome),
    }
}

/// The stored session with what was done to it: the tester interrupted from the monitor, and a
/// guard's refusal of a spawn the store holds no run of (it never ran: it shows on the root).
fn stored_with_acts() -> Stored {
    let mut s = stored();
    s.acts = vec![
        act("a2898e3", "deny", "guard", "hook", "Task toolu_new \u{1b}[2J", "denied: depth 2 > 1"),
        act("tester", "interrupt", "swarmtop monitor", "tee", "turn 3", "interrupted"),
    ];
    s
}

fn facts() -> StoreFacts {
    StoreFacts {
        path: sanitize_line("/home/u/.local/share/swarmtop/history.db"),
        bytes: 274_432,
        indexed: 4_080_008,
        sessions: 4,
        runs: 13,
    }
}

fn draw(p: &Pipeline, feed: &Feed, view: &mut View, (w, h): (u16, u16)) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let counters = p.counters();
    term.draw(|f| ui::render(f, &p.model, &counters, feed, view)).expect("draw");
    let screen = format!("{}", term.backend());
    assert!(!screen.contains('\u{1b}') && !screen.contains('\u{202e}'), "raw control text reached the screen");
    screen
}

fn press(view: &mut View, p: &Pipeline, keys: &str) -> Vec<Effect> {
    keys.chars().filter_map(|c| key(view, p, KeyCode::Char(c))).collect()
}

fn key(view: &mut View, p: &Pipeline, code: KeyCode) -> Option<Effect> {
    let action = ui::action_for(KeyEvent::new(code, KeyModifiers::NONE), view)?;
    Some(ui::update(view, &p.model, action))
}

/// `H`, then the store's answer: the list.
fn listed(view: &mut View, p: &Pipeline) {
    assert_eq!(press(view, p, "H"), [Effect::LoadHistory]);
    view.history.take(Loaded::Listing(Ok(sessions()), Some(facts())));
}

#[test]
fn h_asks_for_the_store_and_shows_that_it_is_syncing_until_the_list_arrives() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    assert_eq!(press(&mut v, &p, "H"), [Effect::LoadHistory]);
    let syncing = draw(&p, &feed, &mut v, (80, 24));
    assert!(syncing.contains("syncing and reading the run store"), "{syncing}");
    insta::assert_snapshot!("history_syncing_80x24", syncing);
    v.history.take(Loaded::Listing(Ok(sessions()), Some(facts())));
    for (w, h) in [(80, 24), (200, 60)] {
        let screen = draw(&p, &feed, &mut v, (w, h));
        assert!(screen.contains("history · 3 past sessions"), "{screen}");
        insta::assert_snapshot!(format!("history_list_{w}x{h}"), screen);
    }
}

#[test]
fn the_filter_narrows_the_list_as_it_is_typed_and_esc_clears_it() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    listed(&mut v, &p);
    press(&mut v, &p, "/spot");
    let typing = draw(&p, &feed, &mut v, (80, 24));
    assert!(typing.contains("1 of 3 sessions match \"spot\"") && typing.contains("filter: spot"), "{typing}");
    insta::assert_snapshot!("history_filtered_80x24", typing);
    assert_eq!(v.history.selected().map(|s| s.agent.as_str()), Some("claude"));
    key(&mut v, &p, KeyCode::Esc);
    assert!(v.history.filter.query.is_empty() && v.history.open, "Esc while typing clears the filter only");
    let all = draw(&p, &feed, &mut v, (80, 24));
    assert!(all.contains("3 past sessions"), "{all}");
}

#[test]
fn enter_opens_the_selected_session_and_esc_walks_back_to_the_monitor() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    listed(&mut v, &p);
    key(&mut v, &p, KeyCode::End);
    let effect = key(&mut v, &p, KeyCode::Enter);
    assert_eq!(effect, Some(Effect::OpenPast("4d5611e5-241a-462a-8d15-5122611a9569".to_owned())));
    let opening = draw(&p, &feed, &mut v, (80, 24));
    assert!(opening.contains("opening 4d5611e5"), "{opening}");
    v.history.take(Loaded::Stored(Ok(Box::new(stored()))));
    for (w, h) in [(80, 24), (200, 60)] {
        let screen = draw(&p, &feed, &mut v, (w, h));
        assert!(screen.contains("from the store"), "{screen}");
        insta::assert_snapshot!(format!("history_stored_{w}x{h}"), screen);
    }
    key(&mut v, &p, KeyCode::Down);
    key(&mut v, &p, KeyCode::Down);
    let failed = draw(&p, &feed, &mut v, (120, 40));
    assert!(failed.contains("✗ tester · failed"), "the selected run's title: {failed}");
    key(&mut v, &p, KeyCode::Esc);
    assert!(v.history.opened.is_none() && v.history.open);
    let back = draw(&p, &feed, &mut v, (80, 24));
    assert!(back.contains("3 past sessions"), "{back}");
    key(&mut v, &p, KeyCode::Esc);
    assert!(!v.history.open);
    let monitor = draw(&p, &feed, &mut v, (80, 24));
    assert!(monitor.contains("agents") && !monitor.contains("past sessions"), "{monitor}");
}

/// What was done to a stored session shows where it is looked at: the runs acted on are marked
/// (an act aimed at no stored run marks the root), the tree's foot counts them, and each run's
/// text begins with its acts as `history SESSION` prints them: when, what, whom, by whom, how,
/// the result.
#[test]
fn a_stored_session_shows_the_acts_done_to_it() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    listed(&mut v, &p);
    key(&mut v, &p, KeyCode::End);
    key(&mut v, &p, KeyCode::Enter);
    v.history.take(Loaded::Stored(Ok(Box::new(stored_with_acts()))));
    let root = draw(&p, &feed, &mut v, (80, 24));
    assert!(root.contains("⊘ 2 acts"), "{root}");
    assert!(root.contains("deny a2898e3 by guard via"), "the act on no stored run, on the root: {root}");
    assert!(!root.contains("interrupt tester"), "the tester's act is the tester's: {root}");
    insta::assert_snapshot!("history_stored_acts_root_80x24", root);
    key(&mut v, &p, KeyCode::Down);
    let scout = draw(&p, &feed, &mut v, (80, 24));
    assert!(!scout.contains("⊘ acts"), "nothing was done to the scout: {scout}");
    key(&mut v, &p, KeyCode::Down);
    for (w, h) in [(80, 24), (200, 60)] {
        let tester = draw(&p, &feed, &mut v, (w, h));
        assert!(tester.contains("2026-11-29 21:21  interrupt tester by swarmtop"), "{tester}");
        insta::assert_snapshot!(format!("history_stored_acts_tester_{w}x{h}"), tester);
    }
}

#[test]
fn a_store_that_cannot_be_read_or_a_session_that_cannot_be_opened_says_why() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    press(&mut v, &p, "H");
    v.history.take(Loaded::Listing(Err("the run store … was written by a newer swarmtop".to_owned()), None));
    let screen = draw(&p, &feed, &mut v, (80, 24));
    assert!(screen.contains("could not be read") && screen.contains("newer swarmtop"), "{screen}");
    assert!(matches!(v.history.listing, Listing::Failed(_)));
    v.history.take(Loaded::Listing(Ok(Vec::new().into()), None));
    let empty = draw(&p, &feed, &mut v, (80, 24));
    assert!(empty.contains("no sessions in the run store yet"), "{empty}");
    v.history.take(Loaded::Listing(Ok(sessions()), None));
    key(&mut v, &p, KeyCode::Enter);
    v.history.take(Loaded::Stored(Err("the session is no longer in the run store".to_owned())));
    assert!(matches!(v.history.opened, Some(Opened::Failed(_))));
    let failed = draw(&p, &feed, &mut v, (80, 24));
    assert!(failed.contains("could not be opened") && failed.contains("no longer in the run store"), "{failed}");
}

#[test]
fn help_lists_the_history_keys_and_the_footer_names_h() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    let screen = draw(&p, &feed, &mut v, (200, 60));
    assert!(screen.contains("H history"), "footer: {screen}");
    press(&mut v, &p, "?");
    let help = draw(&p, &feed, &mut v, (200, 60));
    for text in ["History (H)", "past sessions from the run store", "sync the run store and read it again"] {
        assert!(help.contains(text), "{text}: {help}");
    }
    key(&mut v, &p, KeyCode::Esc);
    listed(&mut v, &p);
    let footer = draw(&p, &feed, &mut v, (80, 24));
    let last = footer.lines().last().unwrap_or_default().to_owned();
    for hint in ["⏎ open", "/ filter", "Esc back"] {
        assert!(last.contains(hint), "{hint}: {last}");
    }
}

#[test]
fn diagnostics_show_the_store_size_against_what_it_indexed() {
    let (p, feed) = monitor();
    let mut v = View::with_theme(Theme::dark());
    let before = {
        press(&mut v, &p, "d");
        draw(&p, &feed, &mut v, (120, 40))
    };
    assert!(!before.contains("Run store"), "no store read, no section: {before}");
    v.history.take(Loaded::Store(facts()));
    let screen = draw(&p, &feed, &mut v, (120, 40));
    assert_eq!(v.panes.overlay, Some(Overlay::Diagnostics));
    for text in ["Run store", "store bytes 274,432", "indexed bytes 4,080,008", "6.7% of the bytes it indexed"] {
        assert!(screen.contains(text), "{text}: {screen}");
    }
}

#[test]
fn a_replay_opened_from_the_history_returns_there_on_esc() {
    let (p, _) = monitor();
    let mut v = View::with_theme(Theme::dark());
    v.history.nested = true;
    // Something open closes first; with nothing left, Esc leaves the screen.
    press(&mut v, &p, "z");
    assert_eq!(key(&mut v, &p, KeyCode::Esc), Some(Effect::None));
    assert_eq!(key(&mut v, &p, KeyCode::Esc), Some(Effect::Return));
    let mut first = View::with_theme(Theme::dark());
    press(&mut first, &p, "z");
    key(&mut first, &p, KeyCode::Esc);
    assert_eq!(key(&mut first, &p, KeyCode::Esc), Some(Effect::None), "the first screen never leaves on Esc");
}

/// A real session (`agent`'s fixture `scenario`) synced, its files then deleted (the session is the
/// store's alone), read back as the history view reads it; and a view opening it.
fn stored_without_its_files(agent: &str, scenario: &str) -> (Stored, View) {
    let m = store_support::Machine::new();
    let files = if agent == "opencode" {
        m.with_opencode(scenario);
        m.opencode_dir()
    } else {
        m.with_claude_2_1_332(scenario);
        m.claude_fixture_project()
    };
    m.run(&["sync"]);
    std::fs::remove_dir_all(files).expect("its files go");
    m.run(&["sync"]);
    let listed = m.json(&["history", "--json", "--no-sync", "--agent", agent]);
    let id = listed["sessions"][0]["id"].as_str().expect("a session").to_owned();
    assert_eq!(listed["sessions"][0]["filesPresent"], false, "{agent}");
    let store = swarmtop::store::Store::open(&m.store()).expect("the store opens");
    let stored = swarmtop::commands::stored(&store, &id).expect("the session is read back");
    let mut v = View::with_theme(Theme::dark());
    v.history.open = true;
    v.history.opened = Some(Opened::Opening(sanitize_line(&id)));
    (stored, v)
}

/// A session opened from the store draws its lanes in its agent's own words, as its live lanes
/// did (schema 4): an OpenCode session's spawn cards read `⑂ task`, a Claude Code one's
/// `⑂ Agent`, never a generic `⑂ agent`; each turn is headed where its items begin. Real
/// sessions (OpenCode 1.18.33 `tree`, Claude Code 2.1.332 `parallel`), synced, their files then
/// deleted (the session is the store's alone), opened as the history view opens them.
#[test]
fn a_stored_session_shows_each_agent_s_own_tool_names_and_its_turns() {
    let (p, feed) = monitor();
    for (agent, tool) in [("opencode", "task"), ("claude", "Agent")] {
        let (stored, mut v) = stored_without_its_files(agent, if agent == "opencode" { "tree" } else { "parallel" });
        let spawns: Vec<&PastItem> =
            stored.runs[0].entries.iter().filter(|i| i.tool.as_ref().is_some_and(|t| t.as_str() == tool)).collect();
        assert!(!spawns.is_empty(), "{agent}: the root's spawn cards keep {tool}");
        assert!(spawns.iter().all(|i| !i.id.is_empty() && i.turn.is_some()), "{agent}: with their ids and turns");
        v.history.take(Loaded::Stored(Ok(Box::new(stored))));
        let screen = draw(&p, &feed, &mut v, (120, 32));
        assert!(screen.contains(&format!("⑂ {tool}")), "{agent}: {screen}");
        assert!(!screen.contains("⑂ agent"), "{agent}: no generic word: {screen}");
        assert!(screen.contains("── turn 1 ─"), "{agent}: {screen}");
        insta::assert_snapshot!(format!("history_stored_{agent}_own_words_120x32"), screen);
    }
}

/// A Codex session from the store names the agents its calls name, as its live lane did: the
/// store keeps their thread ids, the view calls them by their runs' names (`⑂ spawnAgent → …`,
/// `⑂ wait → …`). The Codex 0.171.0 `collab_v1` rollouts, synced, then deleted.
#[test]
fn a_stored_codex_session_names_the_agents_its_calls_name() {
    let (p, feed) = monitor();
    let m = store_support::Machine::new();
    m.with_codex("collab_v1");
    m.run(&["sync"]);
    std::fs::remove_dir_all(m.codex_day()).expect("its files go");
    m.run(&["sync"]);
    let listed = m.json(&["history", "--json", "--no-sync"]);
    let id = listed["sessions"][0]["id"].as_str().expect("a session").to_owned();
    let store = swarmtop::store::Store::open(&m.store()).expect("the store opens");
    let stored = swarmtop::commands::stored(&store, &id).expect("the session is read back");
    let children: Vec<String> = stored.runs[1..].iter().map(|r| r.name.to_string()).collect();
    let named: Vec<String> =
        stored.runs[0].entries.iter().flat_map(|i| i.receivers.iter().map(ToString::to_string)).collect();
    assert!(!named.is_empty() && named.iter().all(|n| children.contains(n)), "{named:?} of {children:?}");
    let mut v = View::with_theme(Theme::dark());
    v.history.open = true;
    v.history.opened = Some(Opened::Opening(sanitize_line(&id)));
    v.history.take(Loaded::Stored(Ok(Box::new(stored))));
    let screen = draw(&p, &feed, &mut v, (160, 200));
    assert!(screen.contains("⑂ spawnAgent → ") && screen.contains("⑂ wait → "), "{screen}");
}

/// A machine view's feed that found no session where it looked.
fn empty_machine() -> Feed {
    let snapshot = swarmtop::source::seen::Snapshot {
        looked_in: vec![("claude", "/home/dev/.claude/projects".into()), ("codex", "/home/dev/.codex/sessions".into())],
        tee_dir: "/run/user/1000/swarmtop".into(),
        ..Default::default()
    };
    Feed {
        source: sanitize_line("machine"),
        live: true,
        machine: Some(std::sync::Arc::new(snapshot)),
        ..Feed::default()
    }
}

/// Issue 20: `H` in a machine view with no session on the machine opens the history list too
/// (the empty view's message was drawn in its place, whatever was open), and Esc comes back to it.
#[test]
fn h_in_an_empty_machine_view_opens_the_history_list() {
    let p = Pipeline::default();
    let feed = empty_machine();
    let mut v = View::with_theme(Theme::dark());
    let empty = draw(&p, &feed, &mut v, (80, 24));
    assert!(empty.contains("No agent sessions found on this machine yet."), "{empty}");
    assert_eq!(press(&mut v, &p, "H"), [Effect::LoadHistory]);
    let syncing = draw(&p, &feed, &mut v, (80, 24));
    assert!(syncing.contains("syncing and reading the run store"), "{syncing}");
    v.history.take(Loaded::Listing(Ok(sessions()), Some(facts())));
    let listed = draw(&p, &feed, &mut v, (80, 24));
    assert!(listed.contains("history · 3 past sessions"), "{listed}");
    assert!(!listed.contains("No agent sessions found"), "{listed}");
    insta::assert_snapshot!("history_list_over_an_empty_machine_80x24", listed);
    key(&mut v, &p, KeyCode::Esc);
    assert!(!v.history.open);
    let back = draw(&p, &feed, &mut v, (80, 24));
    assert!(back.contains("No agent sessions found on this machine yet."), "{back}");
}

/// Within the machine view's window, nothing found is nothing recent: the empty screen says so
/// and where older sessions are (as `ps` does), and at 80 columns a wrapped line does not push
/// the last one out of sight.
#[test]
fn an_empty_machine_view_within_a_window_says_so_and_where_older_sessions_are() {
    let p = Pipeline::default();
    let feed = empty_machine();
    let mut v = View::with_theme(Theme::dark());
    v.derived.tops.since_ms = Some(30 * 60 * 1000);
    let empty = draw(&p, &feed, &mut v, (80, 24));
    assert!(empty.contains("No agent sessions active in the last 30m."), "{empty}");
    assert!(!empty.contains("found on this machine"), "{empty}");
    assert!(empty.contains("Older sessions:  swarmtop --all  ·  stored runs:  H"), "{empty}");
    assert!(empty.contains("swarmtop demo"), "the last line, below a wrapped one: {empty}");
    insta::assert_snapshot!("empty_machine_view_within_a_window_80x24", empty);
}

/// A session opened from the store says why a call failed, in its agent's words, as its live lane
/// did (schema 6, issue 19): the real Claude Code 2.1.332 and OpenCode 1.18.33 `badtype` sessions
/// (an agent type they lack, then a healthy helper), synced, their files then deleted, opened as
/// the history view opens them.
#[test]
fn a_stored_session_says_why_its_call_failed() {
    let (p, feed) = monitor();
    for (agent, tool, why) in [
        ("claude", "Agent", "Agent type 'no-such-agent' not found."),
        ("opencode", "task", "Unknown agent type: no-such-agent"),
    ] {
        let (stored, mut v) = stored_without_its_files(agent, "badtype");
        let failed: Vec<&PastItem> =
            stored.runs[0].entries.iter().filter(|i| i.status == ItemStatus::Failed && i.why.is_some()).collect();
        assert_eq!(failed.len(), 1, "{agent}: the failed call keeps its reason");
        assert!(failed[0].why.as_ref().is_some_and(|w| w.as_str().starts_with(why)), "{agent}: {:?}", failed[0].why);
        v.history.take(Loaded::Stored(Ok(Box::new(stored))));
        for size in [(80, 24), (200, 60)] {
            let screen = draw(&p, &feed, &mut v, size);
            assert!(screen.contains(&format!("✗ {tool} failed")) && screen.contains(why), "{agent} {size:?}: {screen}");
        }
    }
}
