//! The machine view's screen over a `TestBackend`: three sessions (a Claude Code 2.1.39 session
//! with its sub-agent, two Codex 0.171.0 rollout sessions with children) read as the machine
//! source reads them, and a discovery snapshot saying which is live, idle or ended. The clock is
//! fixed, so every frame is deterministic.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::router::Event;
use swarmtop::source::proc::Usage;
use swarmtop::source::seen::{Seen, Snapshot, State};
use swarmtop::ui::{self, Action, Feed, NodeId, Overlay, Theme, View};
use swarmtop::wire::{Clean, sanitize_line};

const CLAUDE: &str = "4d5611e5-241a-462a-8d15-5122611a9569";
const CODEX_V1: &str = "01a2292d-f8ac-71e0-b822-647118037869";
const CODEX_V2: &str = "01a2292e-150b-7bd3-ae6f-5cbd9a8eb718";
/// 2026-12-01T12:00:00Z: the screen's wall clock.
const NOW_MS: i64 = 1_796_126_400_000;
const MINUTE: i64 = 60_000;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every session's files through one pipeline, as the machine source forwards them.
fn machine_pipeline() -> Pipeline {
    let claude = fixtures().join("claude-2.1.39");
    let paths = vec![
        claude.join(format!("{CLAUDE}.jsonl")),
        claude.join(CLAUDE),
        fixtures().join("codex-0.171.0/rollouts/collab_v1"),
        fixtures().join("codex-0.171.0/rollouts/collab_v2"),
    ];
    swarmtop::commands::ingest(&paths, Config::default(), &mut |_: &Event<'_, '_>| {}).expect("fixtures read")
}

fn seen(tool: &'static str, id: &str, project: &str, state: State, pid: Option<u32>, last_ago_ms: i64) -> Seen {
    Seen {
        tool,
        id: id.to_owned(),
        project: Some(sanitize_line(project)),
        source: Clean::path(&PathBuf::from(format!("/home/dev/.{tool}/{id}.jsonl"))),
        state,
        pid,
        usage: pid.map(|_| Usage { cpu_percent: 12.4, rss_bytes: 181 << 20 }),
        last_activity_ms: Some(NOW_MS - last_ago_ms),
    }
}

/// The Claude session live (pid 4121), the first Codex session idle, the second ended 20 minutes ago.
fn snapshot(codex_v2: State, v2_ago_ms: i64) -> Snapshot {
    Snapshot {
        sessions: vec![
            seen("claude", CLAUDE, "/home/dev/src/spotter", State::Live, Some(4121), 3_000),
            seen("codex", CODEX_V1, "/home/dev/project", State::Idle, None, 2 * MINUTE),
            seen("codex", CODEX_V2, "/home/dev/project", codex_v2, None, v2_ago_ms),
        ],
        looked_in: vec![("claude", "/home/dev/.claude/projects".into()), ("codex", "/home/dev/.codex/sessions".into())],
        tee_dir: "/run/user/1000/swarmtop".into(),
        ..Snapshot::default()
    }
}

fn feed(snapshot: Snapshot) -> Feed {
    Feed {
        source: swarmtop::wire::sanitize_line("machine"),
        live: true,
        now_ms: Some(NOW_MS),
        machine: Some(std::sync::Arc::new(snapshot)),
        ..Feed::default()
    }
}

fn view(keep_ms: Option<i64>) -> View {
    let mut v = View::with_theme(Theme::dark());
    v.derived.tops.home = Some("/home/dev".to_owned());
    v.derived.tops.keep_ms = keep_ms;
    v
}

fn render(p: &Pipeline, feed: &Feed, view: &mut View, (w, h): (u16, u16)) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let counters = p.counters();
    term.draw(|f| ui::render(f, &p.model, &counters, feed, view)).expect("draw");
    term
}

fn text(term: &Terminal<TestBackend>) -> String {
    format!("{}", term.backend())
}

/// The agents pane of a 200-column screen (its left 90 columns): the cost table lists every agent.
fn agents_pane(screen: &str) -> String {
    screen.lines().map(|l| l.chars().take(90).collect::<String>() + "\n").collect()
}

/// The machine view as it opens at 200×60 on [`snapshot`] (the second Codex session ended 20
/// minutes ago, kept for ever).
fn opened() -> (Pipeline, Feed, View) {
    let p = machine_pipeline();
    let f = feed(snapshot(State::Ended, 20 * MINUTE));
    let mut v = view(None);
    render(&p, &f, &mut v, (200, 60));
    (p, f, v)
}

fn act(view: &mut View, p: &Pipeline, actions: &[Action]) {
    for &a in actions {
        ui::update(view, &p.model, a);
    }
}

#[test]
fn sessions_are_grouped_by_agent_then_project_live_first() {
    let p = machine_pipeline();
    let f = feed(snapshot(State::Ended, 20 * MINUTE));
    for size in [(80, 24), (200, 60)] {
        let mut v = view(Some(30 * MINUTE));
        let screen = text(&render(&p, &f, &mut v, size));
        // Even at 80 columns a session row says whether it is live and which process holds it.
        let row = screen.lines().find(|l| l.contains("▾ ✓ Work on")).expect("the claude session's row");
        assert!(row.contains(" 4121 ") && row.contains(" live "), "{row}");
        let ended = screen.lines().filter(|l| l.contains("▾ ✓ PARENT-TASK")).nth(1).expect("the ended session's row");
        assert!(ended.contains(" ended "), "{ended}");
        insta::assert_snapshot!(format!("grouped_{}x{}", size.0, size.1), screen);
    }
    let mut v = view(Some(30 * MINUTE));
    render(&p, &f, &mut v, (200, 60));
    // The cursor opens on the newest live session (the claude one), not on a group row.
    let claude = p.find(CLAUDE).expect("the claude session");
    assert_eq!(v.selection.node, Some(NodeId::Thread(claude)));
    let tops: Vec<NodeId> = v.rows().iter().filter(|r| r.depth < 2).map(|r| r.id).collect();
    assert_eq!(tops.len(), 4, "claude ▸ spotter, codex ▸ project: {tops:?}");
    assert!(matches!(tops[0], NodeId::Agent(_)) && matches!(tops[1], NodeId::Project(_)));
    assert_eq!(
        v.derived.tops.agent(match tops[0] {
            NodeId::Agent(a) => a,
            _ => unreachable!(),
        }),
        "claude",
        "the live session's agent comes first"
    );
}

#[test]
fn ended_sessions_are_dimmed_and_age_out_counted() {
    let p = machine_pipeline();
    let mut v = view(Some(30 * MINUTE));
    let term = render(&p, &feed(snapshot(State::Ended, 20 * MINUTE)), &mut v, (200, 60));
    let screen = text(&term);
    let buf = term.backend().buffer();
    // The ended session's row and its children are grey; the idle one's are not.
    let dim = Theme::dark().dim;
    let row_of = |needle: &str, nth: usize| {
        screen.lines().enumerate().filter(|(_, l)| l.contains(needle)).nth(nth).map(|(y, _)| y as u16).expect(needle)
    };
    // The screen's text is `"…"` per line, so a needle's column is one left of its place in it.
    let style_at = |y: u16, needle: &str| {
        let line = screen.lines().nth(y as usize).unwrap();
        let col = line.find(needle).map_or(0, |b| line[..b].chars().count()) as u16;
        buf[(col.saturating_sub(1), y)].style()
    };
    // The tree's rows (the cost pane lists the same agents).
    let arendt = row_of("─ ✓ Arendt", 0);
    assert_eq!(style_at(arendt, "Arendt").fg, dim.fg, "a child of the ended session is dimmed:\n{screen}");
    let kant = row_of("─ ✓ Kant", 0);
    assert_ne!(style_at(kant, "Kant").fg, dim.fg, "a child of the idle session is not");
    assert!(screen.contains("ended") && screen.contains("idle") && screen.contains("live"), "{screen}");

    // Past the keep bound the ended session leaves the screen, and diagnostics count it.
    let mut v = view(Some(10 * MINUTE));
    let f = feed(snapshot(State::Ended, 20 * MINUTE));
    let screen = agents_pane(&text(&render(&p, &f, &mut v, (200, 60))));
    assert!(!screen.contains("Arendt") && screen.contains("Kant"), "{screen}");
    assert!(screen.contains("machine: 1 live · 2 sessions"), "{screen}");
    assert_eq!(v.derived.tops.counts.aged_out, 1);
    // The header's totals are of what is shown; what the aged-out session spent is told in `d`.
    let full = text(&render(&p, &f, &mut v, (200, 60)));
    let header = full.lines().next().unwrap();
    assert!(header.contains("6 agents │ $10.16"), "not 10 agents, $10.20: {header}");
    assert!(full.contains("total $10.16") && !full.contains("Arendt"), "the cost pane agrees:\n{full}");
    v.panes.overlay = Some(Overlay::Diagnostics);
    let screen = text(&render(&p, &f, &mut v, (120, 40)));
    insta::assert_snapshot!("diagnostics_aged_out_120x40", screen);

    // A session that ends while on screen greys out at the next snapshot.
    let mut v = view(None);
    render(&p, &feed(snapshot(State::Idle, 20 * MINUTE)), &mut v, (200, 60));
    let term = render(&p, &feed(snapshot(State::Ended, 20 * MINUTE)), &mut v, (200, 60));
    let screen = text(&term);
    let y = screen.lines().position(|l| l.contains("─ ✓ Arendt")).expect("Arendt") as u16;
    let line = screen.lines().nth(y as usize).unwrap();
    let col = line[..line.find("Arendt").unwrap()].chars().count() as u16;
    assert_eq!(term.backend().buffer()[(col - 1, y)].style().fg, dim.fg, "{screen}");

    // Not ended: it stays, however old.
    let mut v = view(Some(10 * MINUTE));
    let screen = agents_pane(&text(&render(&p, &feed(snapshot(State::Idle, 20 * MINUTE)), &mut v, (200, 60))));
    assert!(screen.contains("Arendt"), "{screen}");
}

#[test]
fn the_header_is_live_only_while_a_session_is_and_shows_the_wall_clock() {
    let p = machine_pipeline();
    let mut v = view(None);
    let screen = text(&render(&p, &feed(snapshot(State::Ended, MINUTE)), &mut v, (120, 40)));
    let header = screen.lines().next().unwrap();
    assert!(header.contains("● live") && header.contains("12:00:00 UTC"), "{header}");
    let mut quiet = snapshot(State::Ended, MINUTE);
    quiet.sessions[0].state = State::Idle;
    quiet.sessions[0].pid = None;
    let mut v = view(None);
    let term = render(&p, &feed(quiet), &mut v, (120, 40));
    let screen = text(&term);
    let header = screen.lines().next().unwrap();
    assert!(!header.contains("live") && header.contains("○ watching"), "{header}");
    assert!(header.contains("12:00:00 UTC"), "the wall clock, not the streams' own: {header}");
    insta::assert_snapshot!("header_watching_120x40", screen.lines().take(2).collect::<Vec<_>>().join("\n"));
}

#[test]
fn groups_fold_and_filter_like_every_row_and_enter_opens_a_session() {
    let (p, f, mut v) = opened();
    let before = v.rows().len();
    // The first row is the claude group: ← folds it to one row.
    act(&mut v, &p, &[Action::Top]);
    assert!(matches!(v.selection.node, Some(NodeId::Agent(_))));
    act(&mut v, &p, &[Action::Fold]);
    render(&p, &f, &mut v, (200, 60));
    let claude_rows = before - v.rows().len();
    assert!(claude_rows >= 4, "the session and its tree went under the fold");
    act(&mut v, &p, &[Action::Unfold]);
    render(&p, &f, &mut v, (200, 60));
    assert_eq!(v.rows().len(), before);

    // A filter on a project's folder keeps its sessions; on a child's name, its chain.
    act(&mut v, &p, &[Action::FilterStart]);
    for c in "spotter".chars() {
        act(&mut v, &p, &[Action::FilterInput(c)]);
    }
    act(&mut v, &p, &[Action::FilterAccept]);
    let screen = agents_pane(&text(&render(&p, &f, &mut v, (200, 60))));
    assert!(screen.contains("claude") && !screen.contains("codex"), "{screen}");
    act(&mut v, &p, &[Action::Back]);
    let mut v = view(None);
    render(&p, &f, &mut v, (200, 60));
    let keys = |s: &str| s.chars().map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).collect::<Vec<_>>();
    for k in keys("/kant") {
        if let Some(a) = ui::action_for(k, &v) {
            ui::update(&mut v, &p.model, a);
        }
    }
    let screen = agents_pane(&text(&render(&p, &f, &mut v, (200, 60))));
    assert!(screen.contains("Kant") && screen.contains("codex") && !screen.contains("Arendt"), "{screen}");

    // Enter on a session's row opens its transcript.
    let mut v = view(None);
    render(&p, &f, &mut v, (200, 60));
    act(&mut v, &p, &[Action::Top, Action::MoveDown, Action::MoveDown, Action::OpenLane]);
    assert!(matches!(v.selection.node, Some(NodeId::Thread(_))));
    assert!(v.selection.expanded.is_some());
}

#[test]
fn help_says_how_the_machine_view_groups_and_ages_out() {
    let p = machine_pipeline();
    let f = feed(snapshot(State::Ended, 20 * MINUTE));
    let mut v = view(Some(30 * MINUTE));
    render(&p, &f, &mut v, (200, 60));
    act(&mut v, &p, &[Action::Help]);
    let screen = text(&render(&p, &f, &mut v, (200, 60)));
    assert!(screen.contains("agent ▸ project ▸ session rows fold with ←→"), "{screen}");
    assert!(screen.contains("leave 30m after their last activity (--keep)"), "{screen}");
    // Quitting loses nothing: the sessions are on disk. `q` quits without asking.
    act(&mut v, &p, &[Action::Back]);
    assert_eq!(ui::update(&mut v, &p.model, Action::Quit), ui::Effect::Quit);
}

/// With nothing found, the places looked in read as one column: `opencode` is a letter longer than
/// the other agents' names and pushed its folder out of line.
#[test]
fn the_places_looked_in_line_up() {
    let p = Pipeline::default();
    let mut snap = snapshot(State::Idle, MINUTE);
    snap.sessions.clear();
    snap.looked_in.push(("opencode", "/home/dev/.local/share/opencode".into()));
    let screen = text(&render(&p, &feed(snap), &mut view(None), (80, 24)));
    // Under the home handed to the view, paths read `~/…`.
    let starts: Vec<usize> = ["~/.claude", "~/.codex", "~/.local", "/run/user"]
        .iter()
        .map(|path| {
            let line = screen.lines().find(|l| l.contains(path)).unwrap_or_else(|| panic!("{path}:\n{screen}"));
            line.find(path).unwrap()
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{starts:?}\n{screen}");
}

/// The timeline of the machine view is the session the cursor is in: its own span (not months
/// between the oldest session and now), each agent's bars where it worked. The Claude 2.1.39
/// sub-agent ran 2:21; its turn is never closed in the transcript, and its bar stops at its last
/// line, not at the end of the session five hours later.
#[test]
fn the_timeline_shows_the_selected_session() {
    let (p, f, mut v) = opened();
    act(&mut v, &p, &[Action::Timeline]);
    let screen = text(&render(&p, &f, &mut v, (200, 60)));
    insta::assert_snapshot!("timeline_claude_session_200x60", screen);
    let title = screen.lines().nth(2).expect("the titles");
    assert!(title.contains("timeline · Work on bead") && title.contains("0:00 – 5:01:10"), "{title}");
    let bar = |name: &str| -> usize {
        let row = screen.lines().find(|l| l.contains(name) && l.contains('│')).unwrap_or_else(|| panic!("{name}"));
        row.chars().filter(|&c| c == '━').count()
    };
    let (root, child) = (bar("✓ Work on"), bar("✓ Explore"));
    // Its turns ran 16:02–16:08, 20:19–20:30 and 20:30–21:03 of 16:02–21:03: the four hours
    // between its first turn's end (`stop_hook_summary`) and the next prompt are no work.
    assert!((4..=12).contains(&root), "the session's own turns, not the hours between: {root}");
    assert!(child <= 2, "2:21 of five hours is a column or two, not {child}:\n{screen}");
    assert!(!screen.contains("PARENT-TASK  │"), "another session's agents are not on it:\n{screen}");

    // Down the tree to a Codex session: the timeline follows the cursor.
    let codex = p.find(CODEX_V1).expect("a codex session");
    while v.selection.node != Some(NodeId::Thread(codex)) {
        act(&mut v, &p, &[Action::MoveDown]);
    }
    let screen = text(&render(&p, &f, &mut v, (200, 60)));
    let title = screen.lines().nth(2).expect("the titles");
    assert!(title.contains("timeline · PARENT-TASK 0:00 – 0:0"), "{title}");
    // The timeline's pane: the 70 columns right of the agents pane's 90.
    let timeline: String = screen.lines().map(|l| l.chars().skip(91).take(70).collect::<String>() + "\n").collect();
    assert!(timeline.contains("✓ Kant") && !timeline.contains("✓ Explore"), "{timeline}");
}

/// The cost table of many sessions says whose each agent is, and lists what the filter keeps.
#[test]
fn the_cost_table_has_a_session_column_and_follows_the_filter() {
    let (p, f, mut v) = opened();
    let screen = text(&render(&p, &f, &mut v, (200, 60)));
    let cost = |screen: &str| -> Vec<String> {
        // The cost pane's inside: right of its border at column 161 (the line's first is a quote).
        screen.lines().map(|l| l.chars().skip(162).take(38).collect::<String>()).collect()
    };
    let table = cost(&screen);
    assert!(table.iter().any(|l| l.contains("agent") && l.contains("session")), "{table:#?}");
    let kant = table.iter().find(|l| l.contains("Kant")).expect("Kant's row");
    assert!(kant.contains("PARENT-T"), "{kant}");
    act(&mut v, &p, &[Action::FilterStart]);
    for c in "kant".chars() {
        act(&mut v, &p, &[Action::FilterInput(c)]);
    }
    let table = cost(&text(&render(&p, &f, &mut v, (200, 60))));
    let listed: Vec<&String> = table.iter().filter(|l| l.starts_with('✓')).collect();
    assert_eq!(listed.len(), 2, "Kant and its session's root: {table:#?}");
    assert!(listed.iter().any(|l| l.contains("Kant")) && !table.iter().any(|l| l.contains("Arendt")));
}
