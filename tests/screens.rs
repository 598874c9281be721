//! The monitor's screens over a `TestBackend`, from the real captures frozen at fixed positions,
//! with the clock taken from stream time so every frame is deterministic; and the key handling of
//! the pure `update` (event in, view state out).

use std::fmt::Write as _;
use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::pipeline::Pipeline;
use swarmtop::ui::acting::{Answer, Plan, Reply};
use swarmtop::ui::{self, Action, Effect, Feed, NodeId, Overlay, Pane, Sort, Theme, View};

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 60)];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/codex-0.171.0/{name}.server.ndjson"))
}

/// A capture's lines through the pipeline: the first `lines` of them, frozen mid-run, or all of
/// them with the stream ended.
fn load(name: &str, lines: Option<usize>) -> (Pipeline, u64) {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let all: Vec<&str> = text.lines().collect();
    let n = lines.unwrap_or(all.len()).min(all.len());
    let mut p = Pipeline::default();
    for l in &all[..n] {
        p.push(l.as_bytes());
    }
    if lines.is_none() {
        p.finish();
    }
    (p, all.len() as u64)
}

fn feed(name: &str, p: &Pipeline, total: u64) -> Feed {
    Feed {
        source: swarmtop::wire::sanitize_line(name),
        speed: "10×".into(),
        position: Some((p.counters().lines, total)),
        events_per_sec: 412.0,
        now_ms: p.model.stream_ms,
        ..Feed::default()
    }
}

fn render(p: &Pipeline, feed: &Feed, view: &mut View, (w, h): (u16, u16)) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let counters = p.counters();
    term.draw(|f| ui::render(f, &p.model, &counters, feed, view)).expect("draw");
    format!("{}", term.backend())
}

fn view() -> View {
    View::with_theme(Theme::dark())
}

fn act(view: &mut View, p: &Pipeline, actions: &[Action]) -> Vec<Effect> {
    actions.iter().map(|&a| ui::update(view, &p.model, a)).collect()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn press(view: &mut View, p: &Pipeline, keys: &[KeyEvent]) -> Vec<Effect> {
    let mut effects = Vec::new();
    for &k in keys {
        if let Some(a) = ui::action_for(k, view) {
            effects.push(ui::update(view, &p.model, a));
        }
    }
    effects
}

fn chars(s: &str) -> Vec<KeyEvent> {
    s.chars().map(|c| key(KeyCode::Char(c))).collect()
}

/// Selects the first card of the first session (session ▸ turn ▸ card).
fn select_card(view: &mut View, p: &Pipeline) {
    act(view, p, &[Action::MoveDown, Action::MoveDown]);
    assert!(matches!(view.selection.node, Some(NodeId::Group(..))), "{:?}", view.selection.node);
}

fn snap_sizes(name: &str, p: &Pipeline, f: &Feed, setup: impl Fn(&mut View, &Pipeline)) {
    for size in SIZES {
        let mut v = view();
        // A first frame gives the view its layout, as the runtime's first draw would.
        render(p, f, &mut v, size);
        setup(&mut v, p);
        let screen = render(p, f, &mut v, size);
        insta::assert_snapshot!(format!("{name}_{}x{}", size.0, size.1), screen);
    }
}

#[test]
fn collab_v1_children_running_show_as_nested_lanes() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    snap_sizes("v1_running_card", &p, &f, select_card);
}

#[test]
fn collab_v1_finished_tree_and_card() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    snap_sizes("v1_end_card", &p, &f, select_card);
}

#[test]
fn collab_v1_session_transcript() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    insta::assert_snapshot!("v1_end_transcript_120x40", screen);
}

#[test]
fn expanded_lane_shows_one_child_with_its_scrollback() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    snap_sizes("v1_expanded_lane", &p, &f, |v, p| {
        select_card(v, p);
        act(v, p, &[Action::OpenLane, Action::OpenLane]);
        assert_eq!(v.panes.focus, Pane::Lanes);
        assert!(v.selection.expanded.is_some());
    });
}

#[test]
fn collab_v2_sub_agent_activity_cards() {
    let (p, total) = load("collab_v2", Some(60));
    let f = feed("collab_v2", &p, total);
    snap_sizes("v2_running_card", &p, &f, select_card);
}

/// The captures have no failing child; this appends, to the `collab_v1` capture frozen with its
/// children running, the lines the `fail` capture shows for a failing thread (a failed command,
/// then `error` without retry), addressed to the second child.
fn with_failed_child() -> (Pipeline, u64) {
    let (mut p, total) = load("collab_v1", Some(50));
    let child = "01a2292d-f95d-7300-98f9-39a1595c4b7d";
    let turn = "01a2292d-f965-7090-a6f6-22881d101d0f";
    let t = 1_795_987_209_400_i64;
    let lines = [
        format!(
            r#"{{"method":"item/started","params":{{"item":{{"type":"commandExecution","id":"exec_fail","command":"/bin/bash -lc 'cargo test -p auth'","status":"inProgress","aggregatedOutput":null,"exitCode":null}},"threadId":"{child}","turnId":"{turn}"}},"emittedAtMs":{t}}}"#
        ),
        format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"commandExecution","id":"exec_fail","command":"/bin/bash -lc 'cargo test -p auth'","status":"failed","aggregatedOutput":"running 41 tests\ntest verify::expired_token ... FAILED\ntest result: FAILED. 40 passed; 1 failed\n","exitCode":101}},"threadId":"{child}","turnId":"{turn}"}},"emittedAtMs":{}}}"#,
            t + 900
        ),
        format!(
            r#"{{"method":"error","params":{{"error":{{"message":"model not found: acme-1","codexErrorInfo":"internalServerError"}},"willRetry":false,"threadId":"{child}","turnId":"{turn}"}},"emittedAtMs":{}}}"#,
            t + 1000
        ),
    ];
    for l in &lines {
        p.push(l.as_bytes());
    }
    (p, total)
}

#[test]
fn failed_child_shows_in_tree_lane_and_transcript() {
    let (p, total) = with_failed_child();
    let f = feed("collab_v1", &p, total);
    snap_sizes("failed_child_card", &p, &f, select_card);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    select_card(&mut v, &p);
    act(&mut v, &p, &[Action::MoveDown, Action::MoveDown]);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("✗"), "{screen}");
    insta::assert_snapshot!("failed_child_transcript_120x40", screen);
}

#[test]
fn failed_and_retrying_roots() {
    let (p, total) = load("fail", None);
    let f = feed("fail", &p, total);
    let mut v = view();
    insta::assert_snapshot!("fail_80x24", render(&p, &f, &mut v, (80, 24)));
    let (p, total) = load("retry", Some(10));
    let f = feed("retry", &p, total);
    let mut v = view();
    insta::assert_snapshot!("retry_retrying_80x24", render(&p, &f, &mut v, (80, 24)));
    // Once through, the retry stays on the lane.
    let (p, total) = load("retry", None);
    let f = feed("retry", &p, total);
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("↻ retried") && screen.contains("idle"), "{screen}");
    insta::assert_snapshot!("retry_retried_120x40", screen);
}

/// What the interrupt dialog's plan says for a tee (as `commands::interrupt::plan` writes it).
fn tee_plan() -> Plan {
    Plan {
        how: vec![
            "through the tee at /run/user/1000/swarmtop/tee-4121.sock (pid 4121)".into(),
            "by turn/interrupt of its running turn (the client sees an interrupted turn)".into(),
        ],
        stops: vec!["explorer [44b2c8e1], its running turn".into()],
    }
}

/// `i` on a running child: the dialog at each moment (finding, the plan, stopping, done), `y`
/// doing nothing before there is a plan, Esc leaving the agent running, and a resize while open.
#[test]
fn the_interrupt_dialog_names_what_stops_and_asks_first() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    for size in SIZES {
        let mut v = view();
        render(&p, &f, &mut v, size);
        select_card(&mut v, &p);
        let child = v.focus_thread(&p.model).expect("a lane selected");
        let effects = press(&mut v, &p, &chars("i"));
        let [Effect::PlanAct(ask)] = effects.as_slice() else { panic!("{effects:?}") };
        assert_eq!((ask.target.as_str(), ask.subtree), (&*p.model.thread(child).id, false));
        assert_eq!(v.panes.overlay, Some(Overlay::Act));
        let finding = render(&p, &f, &mut v, size);
        assert!(finding.contains("finding what carries it"), "{finding}");
        assert!(press(&mut v, &p, &chars("y")).is_empty(), "nothing to confirm yet: y is no key here");
        v.acting.take(Reply { seq: ask.seq, answer: Answer::Planned(Ok(tee_plan())) });
        let ready = render(&p, &f, &mut v, size);
        insta::assert_snapshot!(format!("interrupt_ready_{}x{}", size.0, size.1), ready);
        // A resize while it is open: the same dialog, laid out again.
        render(&p, &f, &mut v, (200, 60));
        assert_eq!(render(&p, &f, &mut v, size), ready);
        assert_eq!(press(&mut v, &p, &chars("y")), [Effect::Act(ask.clone())]);
        let stopping = render(&p, &f, &mut v, size);
        assert!(stopping.contains("interrupting…"), "{stopping}");
        // As long as a real answer: it wraps at 80 columns, and the keys that close it still show.
        let done = vec![
            "interrupted explorer [01a239f1-08fe-7e93-8f9e-53c556745cc7], turn 01a239f1-0904-73f1-bfa4-2b5e276a9017"
                .to_owned(),
        ];
        let said = v.acting.take(Reply { seq: ask.seq, answer: Answer::Done(Ok(done)) });
        assert_eq!(said.as_deref(), Some(&*format!("interrupted {}", ui::label::text(&p.model, child))));
        let shown = render(&p, &f, &mut v, size);
        assert!(shown.contains("✓ interrupted explorer") && shown.contains("Esc close"), "{shown}");
        assert!(shown.contains("2b5e276a9017"), "the whole answer is drawn: {shown}");
        press(&mut v, &p, &[key(KeyCode::Esc)]);
        assert_eq!(v.panes.overlay, None);
        assert!(v.acting.dialog.is_none());
    }
}

/// A real tee's answer, at the sizes the e2e tests use: its long socket path and ids wrap at word
/// boundaries, and the dialog still ends with the keys that close it.
#[test]
fn the_interrupt_dialog_keeps_its_keys_under_a_long_answer() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    let plan = Plan {
        how: vec![
            "through the tee at /tmp/swarmtop-e2e-interrupt-key-8p8GGI/run/swarmtop/tee-27187.sock (pid 27187)".into(),
            "by turn/interrupt of its running turn (the client sees an interrupted turn)".into(),
        ],
        stops: vec!["solo [56745cc7], its running turn".into()],
    };
    let done = vec![
        "interrupted solo [01a239f1-08fe-7e93-8f9e-53c556745cc7], turn 01a239f1-0904-73f1-bfa4-2b5e276a9017".to_owned(),
    ];
    for size in [(80, 24), (120, 40)] {
        let mut v = view();
        render(&p, &f, &mut v, size);
        select_card(&mut v, &p);
        let effects = press(&mut v, &p, &chars("i"));
        let [Effect::PlanAct(ask)] = effects.as_slice() else { panic!("{effects:?}") };
        v.acting.take(Reply { seq: ask.seq, answer: Answer::Planned(Ok(plan.clone())) });
        press(&mut v, &p, &chars("y"));
        v.acting.take(Reply { seq: ask.seq, answer: Answer::Done(Ok(done.clone())) });
        let shown = render(&p, &f, &mut v, size);
        assert!(shown.contains("2b5e276a9017") && shown.contains("Esc close"), "{shown}");
    }
}

/// `I` asks for the subtree; a target nothing carries says why; Esc cancels a search under way.
#[test]
fn the_interrupt_dialog_says_why_it_cannot_and_esc_cancels() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (80, 24));
    let effects = press(&mut v, &p, &chars("I"));
    let [Effect::PlanAct(ask)] = effects.as_slice() else { panic!("{effects:?}") };
    assert!(ask.subtree);
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    assert_eq!((v.panes.overlay, v.acting.dialog.is_none()), (None, true), "Esc cancels while finding");
    let effects = press(&mut v, &p, &chars("I"));
    let [Effect::PlanAct(again)] = effects.as_slice() else { panic!("{effects:?}") };
    assert!(again.seq > ask.seq);
    let why = "no running tee, agent server or session process of yours carries 019a (a sub-agent outside a tee or a server cannot be stopped alone: interrupt its session)";
    v.acting.take(Reply { seq: again.seq, answer: Answer::Planned(Err(why.into())) });
    insta::assert_snapshot!("interrupt_unable_80x24", render(&p, &f, &mut v, (80, 24)));
    assert!(press(&mut v, &p, &chars("y")).is_empty(), "nothing to confirm: y is no key here");
    assert!(press(&mut v, &p, &chars("n")).is_empty(), "n answers only the question: the dialog offers Esc");
    assert_eq!(v.panes.overlay, Some(Overlay::Act));
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    assert_eq!(v.panes.overlay, None);
}

/// The words of a screen's row, its borders left out.
fn words(row: &str) -> Vec<&str> {
    row.split(|c: char| c.is_whitespace() || "\"│┌┐└┘─".contains(c)).filter(|w| !w.is_empty()).collect()
}

/// At every stage of the interrupt dialog the footer names the very answers the dialog names, as
/// both print the keymap's (issue 23: the footer said `n close` while the dialog said `n/Esc leave
/// it running`).
#[test]
fn the_footer_names_the_answers_the_interrupt_dialog_names_at_every_stage() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    let size = (80, 24);
    // Ready and unable have their snapshots in the tests above.
    let agree = |v: &mut View, stage: &str, answers: &[&str]| {
        let screen = render(&p, &f, v, size);
        let rows: Vec<&str> = screen.lines().collect();
        let (footer, body) = rows.split_last().expect("a screen");
        assert_eq!(words(footer), answers, "{stage}: the footer\n{screen}");
        assert!(body.iter().any(|r| words(r) == answers), "{stage}: the dialog names its answers\n{screen}");
        if !matches!(stage, "ready" | "unable") {
            insta::assert_snapshot!(format!("interrupt_{stage}_80x24"), screen);
        }
    };
    let mut v = view();
    render(&p, &f, &mut v, size);
    select_card(&mut v, &p);
    let effects = press(&mut v, &p, &chars("i"));
    let [Effect::PlanAct(ask)] = effects.as_slice() else { panic!("{effects:?}") };
    agree(&mut v, "finding", &["Esc", "cancel"]);
    v.acting.take(Reply { seq: ask.seq, answer: Answer::Planned(Ok(tee_plan())) });
    agree(&mut v, "ready", &["y", "interrupt", "n/Esc", "leave", "it", "running"]);
    assert_eq!(press(&mut v, &p, &chars("y")), [Effect::Act(ask.clone())]);
    agree(&mut v, "stopping", &["Esc", "hide"]);
    v.acting.take(Reply { seq: ask.seq, answer: Answer::Done(Err("the tee is gone".into())) });
    agree(&mut v, "done", &["Esc", "close"]);
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    let effects = press(&mut v, &p, &chars("I"));
    let [Effect::PlanAct(ask)] = effects.as_slice() else { panic!("{effects:?}") };
    v.acting.take(Reply { seq: ask.seq, answer: Answer::Planned(Err("nothing carries it".into())) });
    agree(&mut v, "unable", &["Esc", "close"]);
}

#[test]
fn help_overlay_is_generated_from_the_keymap() {
    let (p, total) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, total);
    for size in [(80, 24), (120, 40)] {
        let mut v = view();
        render(&p, &f, &mut v, size);
        press(&mut v, &p, &chars("?"));
        assert_eq!(v.panes.overlay, Some(Overlay::Help));
        let screen = render(&p, &f, &mut v, size);
        insta::assert_snapshot!(format!("help_{}x{}", size.0, size.1), screen);
        for b in ui::BINDINGS.iter().filter(|b| b.on_screen()) {
            // Long help texts are cut to their column; their start is what must be there.
            let head: String = b.help.chars().take(22).collect();
            assert!(screen.contains(&head) || size.1 < 40, "help lacks {:?}", b.help);
        }
    }
}

#[test]
fn diagnostics_show_counters_malformed_samples_and_the_global_log() {
    let (mut p, total) = load("collab_v1", None);
    p.push(b"{\"method\":\"item/started\",\"params\":");
    p.push(b"not json at all \x1b[31mred\x1b[0m");
    let f = feed("collab_v1", &p, total + 2);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &chars("d"));
    assert_eq!(v.panes.overlay, Some(Overlay::Diagnostics));
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(!screen.contains('\u{1b}'));
    insta::assert_snapshot!("diagnostics_120x40", screen);
}

#[test]
fn diagnostics_show_the_thread_and_item_bounds_drops() {
    let text = std::fs::read_to_string(fixture("collab_v1")).expect("fixture");
    let mut config = swarmtop::pipeline::Config::default();
    config.router.threads = 1;
    config.model.items_per_thread = 2;
    let mut p = Pipeline::new(config);
    for l in text.lines() {
        p.push(l.as_bytes());
    }
    p.finish();
    let (over, items) = (p.counters().over_thread_limit, p.model.diagnostics.dropped_items);
    assert!(over > 0 && items > 0, "the bounds must drop something: {over} {items}");
    let f = feed("collab_v1", &p, p.counters().lines);
    let mut v = view();
    press(&mut v, &p, &chars("d"));
    let screen = render(&p, &f, &mut v, (120, 40));
    let grouped = |n: u64| swarmtop::ui::text::grouped(n);
    assert!(screen.contains(&format!("thread limit {}", grouped(over))), "{screen}");
    assert!(screen.contains(&format!("dropped items {}", grouped(items))), "{screen}");
}

#[test]
fn filter_keeps_the_ancestors_of_matches() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &chars("/fey"));
    assert!(v.panes.filter.typing);
    let Some(NodeId::Thread(t)) = v.selection.node else { panic!("{:?}", v.selection.node) };
    assert_eq!(p.model.thread(t).name(), "Feynman", "the cursor goes to the first match");
    insta::assert_snapshot!("filter_typing_80x24", render(&p, &f, &mut v, (80, 24)));
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert!(!v.panes.filter.typing);
    assert_eq!(v.panes.filter.query, "fey");
    let screen = render(&p, &f, &mut v, (120, 40));
    let names: Vec<String> = v
        .rows()
        .iter()
        .filter_map(|r| match r.id {
            NodeId::Thread(t) => Some(p.model.thread(t).name()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["18037869", "Feynman"]);
    insta::assert_snapshot!("filter_applied_120x40", screen);
}

#[test]
fn a_too_small_terminal_gets_a_message() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    insta::assert_snapshot!("too_small_50x12", render(&p, &f, &mut v, (50, 12)));
    for size in [(1, 1), (59, 40), (200, 15), (60, 16)] {
        render(&p, &f, &mut v, size);
    }
}

#[test]
fn live_feed_shows_connection_and_hides_replay_keys() {
    let (p, _) = load("collab_v1", Some(80));
    let f = Feed {
        source: swarmtop::wire::sanitize_line("tee-4121.sock"),
        live: true,
        connection: Some(swarmtop::wire::sanitize_line("reconnecting in 2s")),
        now_ms: p.model.stream_ms,
        events_per_sec: 2418.0,
        ..Feed::default()
    };
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("reconnecting in 2s") && !screen.contains("speed"));
    insta::assert_snapshot!("live_attach_120x40", screen);
    // A replay's key does nothing here but say so.
    let step = ui::action_for(key(KeyCode::Char('.')), &v);
    assert_eq!(step, Some(Action::ReplayOnly("step one event (paused)")));
    ui::update(&mut v, &p.model, step.unwrap());
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("step one event (paused): only in a replay"), "{screen}");
}

// ---- robustness ----

#[test]
fn draw_never_panics_on_empty_unicode_or_huge_models() {
    let empty = Pipeline::default();
    let f = Feed::default();
    for size in SIZES {
        let mut v = view();
        render(&empty, &f, &mut v, size);
        for a in [Action::MoveDown, Action::Fold, Action::OpenLane, Action::Top, Action::Bottom] {
            ui::update(&mut v, &empty.model, a);
        }
        render(&empty, &f, &mut v, size);
    }
    let mut p = Pipeline::default();
    let id = "01a2292d-0000-7000-8000-00000000beef";
    let start = format!(
        r#"{{"method":"thread/started","params":{{"thread":{{"id":"{id}","agentNickname":"名前が長いエージェント🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀"}}}},"emittedAtMs":1}}"#
    );
    p.push(start.as_bytes());
    p.push(
        format!(r#"{{"method":"turn/started","params":{{"threadId":"{id}","turn":{{"id":"t1"}}}},"emittedAtMs":2}}"#)
            .as_bytes(),
    );
    let huge = "x".repeat(300_000);
    let wide = "全角文字と\tタブ\u{202e}bidi\u{200b}".repeat(2000);
    for (i, text) in [huge.as_str(), wide.as_str(), "", "\n\n\n"].iter().enumerate() {
        let body = serde_json::json!({
            "method": "item/completed",
            "params": {"threadId": id, "turnId": "t1",
                       "item": {"type": "agentMessage", "id": format!("m{i}"), "text": text}},
            "emittedAtMs": 3 + i,
        });
        p.push(body.to_string().as_bytes());
    }
    let f = Feed { now_ms: p.model.stream_ms, ..Feed::default() };
    for size in [(60, 16), (80, 24), (200, 60), (61, 17)] {
        let mut v = view();
        let screen = render(&p, &f, &mut v, size);
        assert!(!screen.contains('\u{202e}'));
        act(&mut v, &p, &[Action::NextPane, Action::Top]);
        render(&p, &f, &mut v, size);
        act(&mut v, &p, &[Action::OpenLane, Action::PageUp, Action::PageUp]);
        render(&p, &f, &mut v, size);
    }
}

#[test]
fn no_color_keeps_glyphs_and_drops_colours() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = View::with_theme(Theme::no_color());
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let counters = p.counters();
    term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut v)).expect("draw");
    let buf = term.backend().buffer();
    assert!(buf.content().iter().all(|c| c.fg == ratatui::style::Color::Reset && c.bg == ratatui::style::Color::Reset));
    let text = format!("{}", term.backend());
    assert!(text.contains("✓ Feynman"));
}

// ---- keys: event in, view state out ----

#[test]
fn arrows_and_vim_keys_move_and_fold() {
    let (p, _) = load("collab_v1", None);
    let mut v = view();
    ui::update(&mut v, &p.model, Action::Top);
    let root = v.selection.node;
    press(&mut v, &p, &chars("jj"));
    assert!(matches!(v.selection.node, Some(NodeId::Group(..))));
    press(&mut v, &p, &[key(KeyCode::Left)]);
    assert!(v.panes.folded.contains(&v.selection.node.unwrap()), "← folds an open node");
    let rows_folded = v.rows().len();
    press(&mut v, &p, &chars("l"));
    assert!(v.rows().len() > rows_folded, "→ unfolds");
    press(&mut v, &p, &chars("l"));
    assert!(matches!(v.selection.node, Some(NodeId::Thread(_))), "→ on an open node goes to its first child");
    press(&mut v, &p, &chars("h"));
    assert!(matches!(v.selection.node, Some(NodeId::Group(..))), "← on a leaf goes to the parent");
    press(&mut v, &p, &chars("G"));
    assert_eq!(v.selected_row(), Some(v.rows().len() - 1));
    press(&mut v, &p, &chars("g"));
    assert_eq!(v.selection.node, root);
    press(&mut v, &p, &chars("k"));
    assert_eq!(v.selection.node, root, "k at the top stays");
}

#[test]
fn enter_opens_the_lane_and_esc_closes_innermost_first() {
    let (p, _) = load("collab_v1", None);
    let mut v = view();
    select_card(&mut v, &p);
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert_eq!(v.panes.focus, Pane::Lanes);
    press(&mut v, &p, &chars("j"));
    assert_eq!(v.selection.lane, 1, "j moves between stacked lanes");
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    let expanded = v.selection.expanded.expect("Enter expands the lane");
    assert_eq!(p.model.thread(expanded).name(), "Feynman");
    press(&mut v, &p, &chars("?"));
    press(&mut v, &p, &chars("/"));
    assert!(!v.panes.filter.typing, "/ does nothing under the help overlay");
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None]);
    assert_eq!(v.panes.overlay, None, "Esc closes the overlay first");
    assert!(v.selection.expanded.is_some());
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None]);
    assert_eq!(v.selection.expanded, None, "then the expanded lane");
    press(&mut v, &p, &chars("/ans"));
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None]);
    assert!(v.panes.filter.query.is_empty(), "then the filter");
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None], "Esc never quits");
    assert_eq!(press(&mut v, &p, &chars("q")), [Effect::Quit], "q does (a replay is not lost)");
}

#[test]
fn filter_typing_takes_every_character_and_esc_clears_it() {
    let (p, _) = load("collab_v1", None);
    let mut v = view();
    press(&mut v, &p, &chars("/q?jd"));
    assert!(v.panes.filter.typing);
    assert_eq!(v.panes.filter.query, "q?jd", "keys are text while typing");
    assert_eq!(v.panes.overlay, None);
    press(&mut v, &p, &[key(KeyCode::Backspace), key(KeyCode::Backspace)]);
    assert_eq!(v.panes.filter.query, "q?");
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    assert!(!v.panes.filter.typing && v.panes.filter.query.is_empty());
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    press(&mut v, &p, &chars("/x"));
    assert_eq!(press(&mut v, &p, &[ctrl_c]), [Effect::Quit], "Ctrl-C quits even while typing");
}

#[test]
fn filter_by_status_and_model() {
    let (p, _) = load("collab_v1", None);
    let mut v = view();
    press(&mut v, &p, &chars("/closed"));
    let names: Vec<String> = v
        .rows()
        .iter()
        .filter_map(|r| match r.id {
            NodeId::Thread(t) => Some(p.model.thread(t).name()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["18037869", "Kant"], "the match and its ancestors");
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    press(&mut v, &p, &chars("/luna"));
    assert!(v.rows().iter().any(|r| matches!(r.id, NodeId::Thread(t) if p.model.thread(t).name() == "Feynman")));
    assert_eq!(v.rows().iter().filter(|r| matches!(r.id, NodeId::Thread(_))).count(), 2);
}

#[test]
fn follow_keeps_the_newest_active_lane_selected() {
    let (mut p, _) = load("collab_v1", Some(30));
    let mut v = view();
    press(&mut v, &p, &[key(KeyCode::Left)]);
    assert_eq!(v.rows().len(), 1, "the session folded");
    press(&mut v, &p, &chars("f"));
    assert!(v.selection.follow);
    let text = std::fs::read_to_string(fixture("collab_v1")).expect("fixture");
    for l in text.lines().skip(30).take(10) {
        p.push(l.as_bytes());
    }
    v.refresh(&p.model);
    let Some(NodeId::Group(_, _)) = v.selection.node else { panic!("follow selects the card: {:?}", v.selection.node) };
    let lanes = ui::outline::lanes_of(&p.model, v.selection.node.unwrap(), &v.derived.groups, &v.derived.tops);
    let followed = lanes[v.selection.lane];
    assert!(p.model.thread(followed).status.is_active());
    assert_eq!(lanes.len(), 3);
    assert_eq!(v.selection.lane, 2, "the newest of the active children");
    assert!(v.selected_row().is_some(), "follow unfolds what hides the lane");
    press(&mut v, &p, &chars("k"));
    assert!(!v.selection.follow, "moving by hand stops following");
}

#[test]
fn sort_tab_overlays_and_replay_effects() {
    let (p, _) = load("collab_v1", None);
    let mut v = view();
    v.derived.replay = true;
    press(&mut v, &p, &chars("s"));
    assert_eq!(v.panes.sort, Sort::Cost, "s sorts the cost table, from the cost pane");
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    assert_eq!(v.panes.focus, Pane::Lanes);
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    assert_eq!(v.panes.focus, Pane::Cost);
    press(&mut v, &p, &chars("s"));
    assert_eq!(v.panes.sort, Sort::Tokens);
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    assert_eq!(v.panes.focus, Pane::Tree);
    press(&mut v, &p, &[key(KeyCode::BackTab)]);
    assert_eq!(v.panes.focus, Pane::Cost);
    let effects = press(&mut v, &p, &chars(" .[]+-"));
    assert_eq!(
        effects,
        [
            Effect::TogglePause,
            Effect::Step,
            Effect::Seek(-ui::SEEK_STEP_MS),
            Effect::Seek(ui::SEEK_STEP_MS),
            Effect::Speed(1),
            Effect::Speed(-1)
        ]
    );
    press(&mut v, &p, &chars("d"));
    assert_eq!(v.panes.overlay, Some(Overlay::Diagnostics));
    press(&mut v, &p, &chars("?"));
    assert_eq!(v.panes.overlay, Some(Overlay::Diagnostics), "? is not a key of the diagnostics view");
    press(&mut v, &p, &chars("q"));
    assert_eq!(v.panes.overlay, None, "q closes an overlay");
    assert_eq!(press(&mut v, &p, &chars("q")), [Effect::Quit]);
}

#[test]
fn mouse_clicks_select_and_toggle_and_the_wheel_scrolls() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    let tree = v.layout.tree;
    let click = |column, row| MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    // The third row of the tree is the card.
    let at = click(tree.x + 4, tree.y + 3);
    let a = ui::action_for_mouse(at, &v).expect("click");
    ui::update(&mut v, &p.model, a);
    assert!(matches!(v.selection.node, Some(NodeId::Group(..))));
    let rows = v.rows().len();
    ui::update(&mut v, &p.model, a);
    assert!(v.rows().len() < rows, "a second click folds");
    ui::update(&mut v, &p.model, a);
    assert_eq!(v.rows().len(), rows, "a third unfolds");
    render(&p, &f, &mut v, (120, 40));
    let (header, lane) = v.layout.lane_headers[2];
    ui::update(&mut v, &p.model, Action::Click { column: header.x + 3, row: header.y });
    assert_eq!((v.panes.focus, v.selection.lane), (Pane::Lanes, lane));
    let wheel = MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: tree.x + 2,
        row: tree.y + 2,
        modifiers: KeyModifiers::NONE,
    };
    let a = ui::action_for_mouse(wheel, &v).expect("wheel");
    ui::update(&mut v, &p.model, a);
    assert_eq!(v.panes.focus, Pane::Lanes, "the wheel does not move the focus");
    assert!(v.selected_row().unwrap_or(0) >= 3);
}

/// The shipped demo (`assets/demo.ndjson`, a recording through the tee) frozen at a line.
fn demo(lines: usize) -> (Pipeline, u64) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")).expect("demo");
    let all: Vec<&str> = text.lines().collect();
    let mut p = Pipeline::default();
    for l in &all[..lines.min(all.len())] {
        p.push(l.as_bytes());
    }
    (p, all.len() as u64)
}

#[test]
fn demo_mid_run_four_lanes_with_a_grandchild_card() {
    let (p, total) = demo(600);
    let f = feed("demo", &p, total);
    snap_sizes("demo_600_card", &p, &f, select_card);
}

#[test]
fn demo_grandchildren_and_the_failed_lane() {
    let (p, total) = demo(900);
    let f = feed("demo", &p, total);
    // The planner's own card: its two children stacked.
    snap_sizes("demo_900_grandchildren", &p, &f, |v, p| {
        select_card(v, p);
        act(v, p, &[Action::MoveDown, Action::MoveDown, Action::MoveDown, Action::MoveDown]);
        assert!(matches!(v.selection.node, Some(NodeId::Group(..))), "{:?}", v.selection.node);
    });
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    act(&mut v, &p, &[Action::Bottom, Action::OpenLane]);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("✗"), "{screen}");
    insta::assert_snapshot!("demo_900_failed_lane_120x40", screen);
}

#[test]
fn demo_finished_with_nicknames_and_sorted_by_tokens() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (200, 60));
    act(&mut v, &p, &[Action::Sort]);
    insta::assert_snapshot!("demo_end_tokens_200x60", render(&p, &f, &mut v, (200, 60)));
}

#[test]
fn quiet_active_agents_show_as_stalled() {
    let (p, total) = load("collab_v1", Some(50));
    let mut f = feed("collab_v1", &p, total);
    f.stall_ms = 5_000;
    f.now_ms = p.model.stream_ms.map(|t| t + 90_000);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    select_card(&mut v, &p);
    let screen = render(&p, &f, &mut v, (120, 40));
    // Parent and children all quiet: the whole subtree is stalled, the parent included.
    assert!(screen.contains("◔ ") && screen.contains("stalled"), "{screen}");
    assert!(!screen.contains("waiting on"), "{screen}");
    assert!(screen.contains("quiet 90s"), "{screen}");
}

/// The burn rate as the runtime computes it: sampled at stream time after every slice of 256
/// lines, so it reads the same however often frames are drawn.
#[test]
fn burn_rate_follows_stream_time_not_frame_cadence() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")).expect("demo");
    let all: Vec<&str> = text.lines().collect();
    let run = |frame_every: usize| {
        let mut p = Pipeline::default();
        let mut v = view();
        let mut screen = String::new();
        for (i, l) in all.iter().enumerate() {
            p.push(l.as_bytes());
            if i % 256 == 255 || i + 1 == all.len() {
                let m = &p.model;
                let total: i128 = m.sessions.iter().chain(&m.unattributed).map(|&t| m.thread(t).subtree.cost.0).sum();
                v.sample_burn(m.stream_ms, total);
            }
            if i % frame_every == 0 || i + 1 == all.len() {
                let f = feed("demo", &p, all.len() as u64);
                screen = render(&p, &f, &mut v, (120, 40));
            }
        }
        assert!(v.derived.burn.len() <= ui::SPARK_SAMPLES);
        let rate = screen.lines().next().and_then(|l| l.split('│').find(|p| p.contains("/min"))).map(str::to_owned);
        (rate, v.burn_per_min())
    };
    let (fast, fast_rate) = run(7);
    let (slow, slow_rate) = run(300);
    assert!(fast.is_some(), "the header shows the burn rate");
    assert_eq!(fast, slow, "the same rate whatever the frame cadence");
    assert_eq!(fast_rate, slow_rate);
}

#[test]
fn a_seek_back_to_a_shorter_model_keeps_the_view_valid() {
    let (long, total) = demo(usize::MAX);
    let f = feed("demo", &long, total);
    let mut v = view();
    render(&long, &f, &mut v, (120, 40));
    act(&mut v, &long, &[Action::Bottom, Action::OpenLane, Action::Sort]);
    render(&long, &f, &mut v, (120, 40));
    // What the runtime does on `[`: re-run the reducer to an earlier line, same view.
    for n in [40, 0, 200] {
        let (short, total) = demo(n);
        let f = feed("demo", &short, total);
        render(&short, &f, &mut v, (120, 40));
        render(&short, &f, &mut v, (80, 24));
        ui::update(&mut v, &short.model, Action::MoveDown);
    }
}

#[test]
fn transcript_scrolls_back_by_pages_and_home_stops_at_the_oldest_line() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    assert!(matches!(v.selection.node, Some(NodeId::Thread(_))), "the session's transcript");
    let newest = render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &[key(KeyCode::Tab), key(KeyCode::PageUp)]);
    assert_eq!(v.panes.focus, Pane::Lanes);
    assert!(v.panes.scroll > 0);
    let back = render(&p, &f, &mut v, (120, 40));
    assert_ne!(back, newest);
    assert!(back.contains(&format!("↑{}", v.panes.scroll)), "{back}");
    press(&mut v, &p, &[key(KeyCode::Home)]);
    let first = render(&p, &f, &mut v, (120, 40));
    let oldest = v.panes.scroll;
    assert!(oldest < 1 << 20, "Home is clamped to the history there is: {oldest}");
    // The indicator shows the scroll as clamped on that same frame, never the raw request.
    assert!(first.contains(&format!("↑{oldest} ")) && !first.contains("↑1073741"), "{first}");
    let top = render(&p, &f, &mut v, (120, 40));
    assert!(top.contains("› [task:lead]"), "{top}");
    press(&mut v, &p, &[key(KeyCode::Char('k'))]);
    render(&p, &f, &mut v, (120, 40));
    assert_eq!(v.panes.scroll, oldest, "no further back than the oldest line");
    press(&mut v, &p, &[key(KeyCode::End)]);
    assert_eq!(v.panes.scroll, 0);
    assert!(render(&p, &f, &mut v, (120, 40)).contains("then the  ││"), "back at the newest line");
}

/// Writes the cells of a few screens, with their styles, for `scripts/screenshot.py`-style
/// rendering to an image; run by hand when changing the look.
#[test]
#[ignore = "dumps styled frames for a person to look at"]
fn dump_styled_frames() {
    let dir = std::env::var("SWARMTOP_DUMP").unwrap_or_else(|_| "/tmp/swarmtop-frames".into());
    std::fs::create_dir_all(&dir).expect("dir");
    let (p, total) = demo(600);
    let f = feed("demo", &p, total);
    for (name, theme, size, keys) in [
        ("dark_card", Theme::dark(), (120, 40), ""),
        ("light_card", Theme::light(), (120, 40), ""),
        ("nocolor_card", Theme::no_color(), (120, 40), ""),
        ("dark_help", Theme::dark(), (120, 40), "?"),
        ("dark_lanes_focus", Theme::dark(), (120, 40), "\t"),
        ("dark_80", Theme::dark(), (80, 24), ""),
        ("dark_200", Theme::dark(), (200, 60), ""),
    ] {
        let mut v = View::with_theme(theme);
        let mut term = Terminal::new(TestBackend::new(size.0, size.1)).expect("terminal");
        let counters = p.counters();
        term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut v)).expect("draw");
        select_card(&mut v, &p);
        let evs: Vec<KeyEvent> =
            keys.chars().map(|c| if c == '\t' { key(KeyCode::Tab) } else { key(KeyCode::Char(c)) }).collect();
        press(&mut v, &p, &evs);
        term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut v)).expect("draw");
        let buf = term.backend().buffer();
        let mut out = String::new();
        for y in 0..size.1 {
            for x in 0..size.0 {
                let c = &buf[(x, y)];
                let _ = writeln!(out, "{}\t{:?}\t{:?}\t{:?}", c.symbol().replace('\t', " "), c.fg, c.bg, c.modifier);
            }
        }
        std::fs::write(format!("{dir}/{name}.{}x{}.tsv", size.0, size.1), out).expect("write");
    }
}

/// A session that spawned `n` children in one turn, each with a line of output.
fn wide_card(n: usize) -> Pipeline {
    let id = |k: usize| format!("01a2292d-0000-7000-8000-{k:012x}");
    let mut p = Pipeline::default();
    let mut push = |s: String| p.push(s.as_bytes());
    push(format!(
        r#"{{"method":"thread/started","params":{{"thread":{{"id":"{}","model":"gpt-5.5"}}}},"emittedAtMs":1}}"#,
        id(0)
    ));
    push(format!(
        r#"{{"method":"turn/started","params":{{"threadId":"{}","turn":{{"id":"t0"}}}},"emittedAtMs":2}}"#,
        id(0)
    ));
    for k in 1..=n {
        push(format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"collabAgentToolCall","id":"s{k}","tool":"spawnAgent","status":"completed","receiverThreadIds":["{}"],"prompt":"part {k}","model":"gpt-5.6-luna"}},"threadId":"{}","turnId":"t0"}},"emittedAtMs":3}}"#,
            id(k),
            id(0)
        ));
        push(format!(
            r#"{{"method":"turn/started","params":{{"threadId":"{}","turn":{{"id":"t{k}"}}}},"emittedAtMs":4}}"#,
            id(k)
        ));
        push(format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"agentMessage","id":"m{k}","text":"lane {k} says hello"}},"threadId":"{}","turnId":"t{k}"}},"emittedAtMs":5}}"#,
            id(k)
        ));
    }
    p
}

#[test]
fn a_card_with_hundreds_of_lanes_scrolls_to_the_selected_one() {
    let p = wide_card(300);
    let f = Feed { now_ms: p.model.stream_ms, ..Feed::default() };
    let mut v = view();
    render(&p, &f, &mut v, (80, 24));
    select_card(&mut v, &p);
    press(&mut v, &p, &[key(KeyCode::Enter), key(KeyCode::End)]);
    assert_eq!(v.selection.lane, 299);
    let screen = render(&p, &f, &mut v, (80, 24));
    assert!(screen.contains("lane 300 says hello"), "{screen}");
    assert!(screen.contains("lanes 292–300 of 300"), "{screen}");
    insta::assert_snapshot!("wide_card_end_80x24", screen);
    assert!(!screen.contains("lane 1 says hello"));
    press(&mut v, &p, &[key(KeyCode::Home)]);
    let screen = render(&p, &f, &mut v, (80, 24));
    assert!(screen.contains("lane 1 says hello"), "{screen}");
    assert!(screen.contains("⑂ spawnAgent ×300"), "the agent's own call: {screen}");
}

#[test]
fn threads_nobody_announced_show_under_unattributed() {
    let (mut p, total) = load("collab_v1", Some(50));
    let stray = "01a2292d-ffff-7000-8000-0000000000aa";
    let lines = [
        format!(
            r#"{{"method":"turn/started","params":{{"threadId":"{stray}","turn":{{"id":"tx"}}}},"emittedAtMs":1795987209000}}"#
        ),
        format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"agentMessage","id":"mx","text":"who am I"}},"threadId":"{stray}","turnId":"tx"}},"emittedAtMs":1795987209001}}"#
        ),
    ];
    for line in &lines {
        p.push(line.as_bytes());
    }
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("pending registration") || screen.contains("unattributed"), "{screen}");
    p.finish();
    let f = feed("collab_v1", &p, total);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("? unattributed ×1"), "{screen}");
    act(&mut v, &p, &[Action::Bottom]);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("who am I"), "{screen}");
}

/// One of each kind of item a transcript shows, through the real decoder.
#[test]
fn every_item_kind_renders_in_a_transcript() {
    let id = "01a2292d-0000-7000-8000-0000000000cc";
    let mut p = Pipeline::default();
    let items = [
        r#"{"type":"userMessage","id":"u","content":[{"type":"text","text":"Fix the flaky auth test"}]}"#,
        r#"{"type":"reasoning","id":"r","summary":["The test depends on wall-clock time; inject a clock."]}"#,
        r#"{"type":"commandExecution","id":"c","command":"/bin/bash -lc 'cargo test -p auth'","status":"failed","aggregatedOutput":"test token::expired ... FAILED\n","exitCode":101}"#,
        r#"{"type":"fileChange","id":"f","status":"completed","changes":[{"path":"src/auth/token.rs","diff":"@@ -1,2 +1,2 @@\n-let now = SystemTime::now();\n+let now = clock.now();\n context line"}]}"#,
        r#"{"type":"mcpToolCall","id":"m","server":"github","tool":"create_issue","status":"failed","error":{"message":"403 forbidden"}}"#,
        r#"{"type":"webSearch","id":"w","query":"rust inject clock for tests"}"#,
        r#"{"type":"plan","id":"p","text":"1. inject clock\n2. fix test"}"#,
        r#"{"type":"contextCompaction","id":"k"}"#,
        r#"{"type":"somethingNew","id":"n"}"#,
        r#"{"type":"agentMessage","id":"a","text":"Done: the test now uses a fixed clock."}"#,
    ];
    p.push(format!(r#"{{"method":"thread/started","params":{{"thread":{{"id":"{id}","model":"gpt-5.5"}}}},"emittedAtMs":1000}}"#).as_bytes());
    p.push(
        format!(r#"{{"method":"turn/started","params":{{"threadId":"{id}","turn":{{"id":"t"}}}},"emittedAtMs":1000}}"#)
            .as_bytes(),
    );
    for (i, item) in items.iter().enumerate() {
        p.push(
            format!(
                r#"{{"method":"item/completed","params":{{"item":{item},"threadId":"{id}","turnId":"t"}},"emittedAtMs":{}}}"#,
                2000 + i * 1000
            )
            .as_bytes(),
        );
    }
    let f =
        Feed { source: swarmtop::wire::sanitize_line("replay: kinds"), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    for needle in [
        "› Fix the flaky",
        "$ cargo test -p auth",
        "exit 101",
        "✎ src/auth/token.rs",
        "+let now = clock.now();",
        "⚙ github.create_issue",
        "403 forbidden",
        "⌕ rust inject",
        "≡ plan",
        "context compacted",
        "Done: the test",
    ] {
        assert!(screen.contains(needle), "{needle:?} missing:\n{screen}");
    }
    insta::assert_snapshot!("item_kinds_120x40", screen);
}

/// The rows kept between frames (while the tree's shape is unchanged) are always the rows a fresh
/// view would build, after every line of the real captures and the demo.
#[test]
fn kept_rows_always_match_fresh_rows() {
    let demo_text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")).expect("demo");
    let v1 = std::fs::read_to_string(fixture("collab_v1")).expect("fixture");
    let v2 = std::fs::read_to_string(fixture("collab_v2")).expect("fixture");
    for text in [v1, v2, demo_text] {
        let mut p = Pipeline::default();
        let mut kept = view();
        for line in text.lines() {
            p.push(line.as_bytes());
            kept.refresh(&p.model);
            let mut fresh = view();
            fresh.refresh(&p.model);
            assert_eq!(kept.rows(), fresh.rows(), "after {line}");
        }
        p.finish();
        kept.refresh(&p.model);
        let mut fresh = view();
        fresh.refresh(&p.model);
        assert_eq!(kept.rows(), fresh.rows());
    }
}

// ---- issue 10: quitting, statuses, the header, search, the timeline, the new keys ----

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn live_feed(p: &Pipeline) -> Feed {
    Feed { source: swarmtop::wire::sanitize_line("stdin"), live: true, now_ms: p.model.stream_ms, ..Feed::default() }
}

#[test]
fn q_asks_before_losing_a_live_stream_and_esc_never_quits() {
    let (p, _) = load("collab_v1", Some(80));
    let f = live_feed(&p);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    assert!(v.derived.live_source);
    for _ in 0..5 {
        assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None], "Esc is back, never quit");
    }
    assert_eq!(press(&mut v, &p, &chars("q")), [Effect::None]);
    assert_eq!(v.panes.overlay, Some(Overlay::ConfirmQuit));
    let screen = render(&p, &f, &mut v, (80, 24));
    assert!(screen.contains("quit?") && screen.contains("stdin is live"), "{screen}");
    insta::assert_snapshot!("confirm_quit_80x24", screen);
    assert_eq!(press(&mut v, &p, &chars("n")), [Effect::None], "n stays");
    assert_eq!(v.panes.overlay, None);
    press(&mut v, &p, &chars("q"));
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None], "Esc stays too");
    press(&mut v, &p, &chars("q"));
    assert_eq!(press(&mut v, &p, &chars("y")), [Effect::Quit]);
    // Ctrl-C twice quits from anywhere, even while typing a filter.
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &chars("/ab"));
    assert_eq!(press(&mut v, &p, &[ctrl('c'), ctrl('c')]), [Effect::None, Effect::Quit]);
    // An ended live stream has nothing left to lose: q quits at once.
    let ended = Feed { ended: Some(swarmtop::wire::sanitize_line("ended (exit 0)")), ..live_feed(&p) };
    let mut v = view();
    render(&p, &ended, &mut v, (120, 40));
    assert_eq!(press(&mut v, &p, &chars("q")), [Effect::Quit]);
}

#[test]
fn one_state_in_the_header_live_paused_ended() {
    let (p, _) = load("collab_v1", Some(80));
    let mut v = view();
    let paused = Feed { paused: true, arrived: 1234, ..live_feed(&p) };
    let screen = render(&p, &paused, &mut v, (80, 24));
    let head = screen.lines().next().unwrap_or_default().to_owned();
    assert!(head.contains("‖ paused · 1,234 new") && !head.contains("live"), "{head}");
    assert!(head.contains('$'), "cost stays visible at 80 columns: {head}");
    insta::assert_snapshot!("live_paused_80x24", screen);
    let connecting = Feed { connection: Some(swarmtop::wire::sanitize_line("connecting")), ..live_feed(&p) };
    let head = render(&p, &connecting, &mut v, (120, 40)).lines().next().unwrap_or_default().to_owned();
    assert!(head.contains("◌ connecting") && !head.contains("● live"), "{head}");
    let (done, total) = load("collab_v1", None);
    let mut f = feed("collab_v1", &done, total);
    f.ended = Some(swarmtop::wire::sanitize_line("replay ended"));
    let screen = render(&done, &f, &mut v, (120, 40));
    let head = screen.lines().next().unwrap_or_default().to_owned();
    assert!(head.contains("■ replay ended") && !head.contains("▶"), "{head}");
    insta::assert_snapshot!("replay_ended_120x40", screen);
}

#[test]
fn a_replay_that_ends_mid_run_leaves_no_agent_running() {
    let (p, total) = load("collab_v1", Some(50));
    let mut f = feed("collab_v1", &p, total);
    f.ended = Some(swarmtop::wire::sanitize_line("replay ended"));
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    select_card(&mut v, &p);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("◌") && screen.contains("unfinished"), "{screen}");
    assert!(!screen.contains("running"), "{screen}");
}

#[test]
fn a_parent_whose_children_work_is_waiting_on_them() {
    let (p, total) = load("collab_v1", Some(50));
    let mut f = feed("collab_v1", &p, total);
    // The parent's last line is older than the stall time; its children are still streaming.
    let root = p.model.sessions[0];
    let parent_last = p.model.thread(root).last_ms.expect("timed");
    let newest = p.model.stream_ms.expect("timed");
    assert!(newest > parent_last, "the capture's children outlive the parent's last line");
    f.stall_ms = u64::try_from((newest - parent_last) / 2).unwrap_or(1).max(1);
    let mut v = view();
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("◷"), "{screen}");
    assert!(!screen.lines().nth(3).unwrap_or_default().contains('◔'), "the root is not stalled: {screen}");
}

#[test]
fn children_are_named_by_their_task_until_a_nickname_arrives() {
    let (p, _) = load("collab_v1", Some(50));
    let f = feed("collab_v1", &p, 0);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    let unnamed: Vec<_> =
        p.model.threads.iter().enumerate().filter(|(_, t)| t.nickname.is_none() && t.parent.is_some()).collect();
    assert!(!unnamed.is_empty(), "the capture has children without nicknames at line 50");
    for (i, _) in unnamed {
        let label = ui::label::of(&p.model, swarmtop::router::ThreadIdx(i as u32));
        assert!(label.id.is_some(), "named from its spawn, the id secondary: {label:?}");
        assert_ne!(Some(&label.name), label.id.as_ref());
    }
}

#[test]
fn text_search_highlights_and_n_moves_between_matches() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    assert_eq!(v.panes.focus, Pane::Lanes);
    press(&mut v, &p, &chars("/verify_token"));
    assert!(v.panes.search.typing && v.panes.search.query == "verify_token", "typed into the search, not the filter");
    assert!(v.panes.filter.query.is_empty());
    // While typing, the bottom border says how many rows of the transcript match.
    let typing = render(&p, &f, &mut v, (120, 40));
    let border = typing.lines().find(|l| l.contains("/verify_token")).expect("the search on the border");
    let count: usize = border
        .split(" · ")
        .nth(1)
        .and_then(|t| t.split(" matches").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a count: {border}"));
    assert!(count >= 2, "{border}");
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("/verify_token"), "{screen}");
    assert!(screen.contains(&format!("· 1/{count} ")), "Enter goes to the newest of the {count}: {screen}");
    let first = v.panes.search.at.expect("a match");
    press(&mut v, &p, &chars("n"));
    render(&p, &f, &mut v, (120, 40));
    let second = v.panes.search.at.expect("an older match");
    assert!(second > first, "n goes further back: {first} → {second}");
    assert!(v.panes.scroll > 0 || second < 30, "the match is brought on screen");
    press(&mut v, &p, &chars("N"));
    render(&p, &f, &mut v, (120, 40));
    assert_eq!(v.panes.search.at, Some(first), "N comes back");
    insta::assert_snapshot!("search_120x40", render(&p, &f, &mut v, (120, 40)));
    // The match is highlighted on screen.
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let counters = p.counters();
    term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut v)).expect("draw");
    let buf = term.backend().buffer();
    let marked = buf.content().iter().filter(|c| c.bg == ratatui::style::Color::Yellow).count();
    assert!(marked >= "verify_token".len(), "{marked} cells highlighted");
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    assert!(v.panes.search.query.is_empty(), "Esc clears the search");
}

/// Stacked lanes are searched as they show: the count is of the matches on screen.
#[test]
fn a_search_over_stacked_lanes_counts_what_is_on_screen() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    select_card(&mut v, &p);
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    press(&mut v, &p, &chars("/test"));
    let screen = render(&p, &f, &mut v, (120, 40));
    let border = screen.lines().find(|l| l.contains("/test▏")).expect("the search on the border");
    assert!(border.contains(" on screen "), "{border}");
}

/// A run of a few seconds at 200 columns: each whole second is marked once on the axis.
#[test]
fn the_timeline_axis_names_each_second_once() {
    let (p, total) = load("collab_v1", None);
    let f = feed("collab_v1", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (200, 60));
    press(&mut v, &p, &chars("t"));
    let screen = render(&p, &f, &mut v, (200, 60));
    let axis = screen.lines().find(|l| l.contains('╵')).expect("an axis");
    let marks: Vec<&str> = axis.split('╵').skip(1).map(|m| m.split_whitespace().next().unwrap_or("")).collect();
    assert!(marks.len() >= 2, "{axis}");
    let mut distinct = marks.clone();
    distinct.dedup();
    assert_eq!(marks, distinct, "{axis}");
}

#[test]
fn the_timeline_shows_every_agent_over_time() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    snap_sizes("timeline", &p, &f, |v, p| {
        act(v, p, &[Action::Timeline]);
        assert!(v.panes.timeline);
    });
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &chars("t"));
    let screen = render(&p, &f, &mut v, (120, 40));
    assert!(screen.contains("timeline") && screen.contains("━"), "{screen}");
    assert!(screen.contains("Poincare") && screen.contains("Helmholtz"), "one row per agent: {screen}");
    // Focused: arrows scroll and zoom time; up and down move the tree's selection.
    press(&mut v, &p, &[key(KeyCode::Tab)]);
    assert_eq!(ui::keymap::context(&v), ui::keymap::When::TIMELINE);
    press(&mut v, &p, &chars(">"));
    let span = v.panes.window.span_ms;
    assert!(span > 0);
    press(&mut v, &p, &chars(">"));
    assert_eq!(v.panes.window.span_ms, span / 2, "zoom in halves the window");
    press(&mut v, &p, &[key(KeyCode::Left)]);
    assert!(v.panes.window.end_ms.is_some(), "scrolled back from now");
    let scrolled = render(&p, &f, &mut v, (120, 40));
    assert!(scrolled.contains("0 back to now"), "{scrolled}");
    press(&mut v, &p, &chars("0"));
    assert_eq!(v.panes.window.end_ms, None);
    let before = v.selection.node;
    press(&mut v, &p, &chars("j"));
    assert_ne!(v.selection.node, before, "j moves to the next agent");
    assert!(matches!(v.selection.node, Some(NodeId::Thread(_))));
    let picked = v.selection.node;
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert!(!v.panes.timeline, "Enter opens the agent's transcript");
    assert_eq!(v.selection.expanded.map(NodeId::Thread), picked);
    press(&mut v, &p, &chars("t"));
    assert_eq!(press(&mut v, &p, &[key(KeyCode::Esc)]), [Effect::None]);
}

#[test]
fn the_cost_table_is_navigable_and_enter_goes_to_the_agent() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    press(&mut v, &p, &[key(KeyCode::BackTab)]);
    assert_eq!(v.panes.focus, Pane::Cost);
    press(&mut v, &p, &chars("jj"));
    assert_eq!(v.selection.cost_row, 2);
    render(&p, &f, &mut v, (120, 40));
    let want = v.layout.cost_rows[2].1;
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert_eq!(v.selection.node, Some(NodeId::Thread(want)));
    assert_eq!(v.panes.focus, Pane::Tree);
    assert!(v.selected_row().is_some(), "its row is in the tree");
}

#[test]
fn sort_expand_collapse_zoom_yank_and_suspend() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (120, 40));
    let names = |v: &View| -> Vec<String> {
        v.rows()
            .iter()
            .filter_map(|r| match r.id {
                NodeId::Thread(t) if r.depth == 3 => Some(p.model.thread(t).name()),
                _ => None,
            })
            .collect()
    };
    let arrival = names(&v);
    let title = |screen: &str| screen.lines().nth(2).unwrap_or_default().to_owned();
    assert!(!title(&render(&p, &f, &mut v, (120, 40))).contains('▼'), "arrival is the order by default: no mark");
    press(&mut v, &p, &chars("o"));
    assert_eq!(v.panes.tree_sort, ui::TreeSort::Cost);
    let sorted = render(&p, &f, &mut v, (120, 40));
    assert!(title(&sorted).contains("┌ agents ▼cost "), "the order is on the tree's title: {}", title(&sorted));
    let by_cost = names(&v);
    assert_ne!(arrival, by_cost, "the children reorder by cost");
    let cost_of = |n: &str| p.model.threads.iter().find(|t| t.name() == n).map_or(0, |t| t.subtree.cost.0);
    assert!(by_cost.windows(2).all(|w| cost_of(&w[0]) >= cost_of(&w[1])), "{by_cost:?}");
    press(&mut v, &p, &chars("oooo"));
    assert_eq!(v.panes.tree_sort, ui::TreeSort::Arrival);
    let all = v.rows().len();
    press(&mut v, &p, &chars("E"));
    assert_eq!(v.rows().len(), p.model.sessions.len(), "everything folded");
    press(&mut v, &p, &chars("e"));
    assert_eq!(v.rows().len(), all, "everything open again");
    press(&mut v, &p, &chars("z"));
    assert!(v.panes.zoom);
    let zoomed = render(&p, &f, &mut v, (120, 40));
    assert!(!zoomed.contains("┌ cost"), "the tree alone: {zoomed}");
    insta::assert_snapshot!("zoom_tree_120x40", zoomed);
    press(&mut v, &p, &[key(KeyCode::Esc)]);
    assert!(!v.panes.zoom, "Esc leaves the zoom");
    let Some(NodeId::Thread(t)) = v.selection.node else { panic!("{:?}", v.selection.node) };
    assert_eq!(press(&mut v, &p, &chars("y")), [Effect::Copy(p.model.thread(t).id.to_string())]);
    assert_eq!(press(&mut v, &p, &[ctrl('z')]), [Effect::Suspend]);
}

#[test]
fn the_footer_and_help_list_the_new_keys() {
    let (p, total) = demo(usize::MAX);
    let f = feed("demo", &p, total);
    let mut v = view();
    render(&p, &f, &mut v, (200, 60));
    press(&mut v, &p, &chars("?"));
    let help = render(&p, &f, &mut v, (200, 60));
    for what in ["timeline", "zoom", "search the text", "order agents", "copy", "suspend"] {
        assert!(help.contains(what), "{what}: {help}");
    }
    // Below the keys, `?` explains every mark: each status glyph with its word, the tree's and
    // the timeline's marks. At 200×60 the legend is on screen once scrolled to its end.
    press(&mut v, &p, &chars("G"));
    let screen = render(&p, &f, &mut v, (200, 60));
    insta::assert_snapshot!("help_legend_200x60", screen);
    for mark in [
        "●         running",
        "◷         waiting on its sub-agents",
        "◔         stalled",
        "◼         interrupted",
        "○         pending",
        "✓         done",
        "✗         failed",
        "⑂         a card",
        "━         a turn",
        "┃         a tool call",
        "▒         waiting on its sub-agents",
        "—         unpriced",
    ] {
        assert!(screen.contains(mark), "{mark}:\n{screen}");
    }
}

/// The screens issue 10 added, each at the three sizes.
#[test]
fn new_screens_at_every_size() {
    let (p, _) = load("collab_v1", Some(80));
    let live = live_feed(&p);
    snap_sizes("confirm_quit", &p, &live, |v, p| {
        ui::update(v, &p.model, Action::Quit);
        assert_eq!(v.panes.overlay, Some(Overlay::ConfirmQuit));
    });
    let paused = Feed { paused: true, arrived: 1234, ..live_feed(&p) };
    snap_sizes("live_paused", &p, &paused, |_, _| {});
    let (done, total) = load("collab_v1", None);
    let mut ended = feed("collab_v1", &done, total);
    ended.ended = Some(swarmtop::wire::sanitize_line("replay ended"));
    snap_sizes("replay_ended", &done, &ended, |_, _| {});
    let (d, total) = demo(usize::MAX);
    let f = feed("demo", &d, total);
    snap_sizes("search", &d, &f, |v, p| {
        act(v, p, &[Action::NextPane, Action::SearchStart]);
        for c in "verify_token".chars() {
            ui::update(v, &p.model, Action::SearchInput(c));
        }
        ui::update(v, &p.model, Action::SearchAccept);
    });
    snap_sizes("zoom_tree", &d, &f, |v, p| {
        act(v, p, &[Action::Zoom]);
    });
    snap_sizes("zoom_timeline", &d, &f, |v, p| {
        act(v, p, &[Action::Timeline, Action::NextPane, Action::Zoom]);
    });
    snap_sizes("cost_table_cursor", &d, &f, |v, p| {
        act(v, p, &[Action::PrevPane, Action::MoveDown, Action::MoveDown]);
        assert_eq!(v.panes.focus, Pane::Cost);
    });
}

/// One session whose one spawn card started `kids` children, each in a turn of its own.
fn one_card(kids: usize) -> Pipeline {
    let id = |n: usize| format!("01a2292d-0000-7000-8000-{n:012x}");
    let note =
        |method: &str, params: String| format!(r#"{{"method":"{method}","params":{params},"emittedAtMs":1000}}"#);
    let mut config = swarmtop::pipeline::Config::default();
    config.router.threads = kids + 1;
    let mut p = Pipeline::new(config);
    let root = id(0);
    let receivers: Vec<String> = (1..=kids).map(|k| format!("\"{}\"", id(k))).collect();
    let lines = [
        note("thread/started", format!(r#"{{"thread":{{"id":"{root}","model":"gpt-5.5","parentThreadId":null}}}}"#)),
        note("turn/started", format!(r#"{{"threadId":"{root}","turn":{{"id":"t0","status":"inProgress"}}}}"#)),
        note(
            "item/completed",
            format!(
                r#"{{"threadId":"{root}","turnId":"t0","item":{{"type":"collabAgentToolCall","id":"card","tool":"spawnAgent","status":"completed","senderThreadId":"{root}","receiverThreadIds":[{}],"prompt":"fan out"}}}}"#,
                receivers.join(",")
            ),
        ),
    ];
    for l in &lines {
        p.push(l.as_bytes());
    }
    for k in 1..=kids {
        let turn = format!(r#"{{"threadId":"{}","turn":{{"id":"k{k}","status":"inProgress"}}}}"#, id(k));
        p.push(note("turn/started", turn).as_bytes());
    }
    p
}

/// Median time of one key through `update` plus the frame after it, and of a frame alone, with
/// the spawn card of [`one_card`] selected and its lanes focused.
fn key_and_frame_times(p: &Pipeline) -> (std::time::Duration, std::time::Duration) {
    use std::time::{Duration, Instant};
    let f = feed("synthetic", p, p.counters().lines);
    let counters = p.counters();
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    let mut v = view();
    let mut frame =
        |v: &mut View| term.draw(|fr| ui::render(fr, &p.model, &counters, &f, v)).map(|_| ()).expect("draw");
    frame(&mut v);
    act(&mut v, p, &[Action::MoveDown, Action::MoveDown, Action::NextPane]);
    frame(&mut v);
    let median = |mut d: Vec<Duration>| {
        d.sort_unstable();
        d[d.len() / 2]
    };
    let (mut keys, mut frames) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        for k in [KeyCode::Down, KeyCode::Enter, KeyCode::Esc] {
            let start = Instant::now();
            press(&mut v, p, &[key(k)]);
            keys.push(start.elapsed());
            let start = Instant::now();
            frame(&mut v);
            frames.push(start.elapsed());
        }
    }
    (median(keys), median(frames))
}

/// 100,000 lanes under one card cost a key and a frame about what ten lanes do: the work follows
/// what is visible. Prints the figures (`--nocapture`); the bound is loose, the machine is shared.
#[test]
fn a_hundred_thousand_lanes_under_one_card_cost_what_is_visible() {
    let small = one_card(10);
    let big = one_card(100_000);
    assert_eq!(big.model.threads.len(), 100_001);
    assert_eq!(big.model.threads[0].items.len(), 1, "one card");
    let (small_key, small_frame) = key_and_frame_times(&small);
    let (big_key, big_frame) = key_and_frame_times(&big);
    let ratio = |a: std::time::Duration, b: std::time::Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    eprintln!(
        "10 lanes: key {small_key:?} frame {small_frame:?}; 100k lanes: key {big_key:?} ({:.1}×) frame {big_frame:?} ({:.1}×)",
        ratio(big_key, small_key),
        ratio(big_frame, small_frame)
    );
}

#[test]
fn a_lane_header_shows_the_agent_s_own_cost_as_the_tree_does() {
    // A Claude session whose sub-agent runs on a model the price table lacks; the session's
    // `cost-state` line gives the CLI's own figure for it.
    let lines = [
        r#"{"type":"user","sessionId":"s","uuid":"u0","isSidechain":false,"timestamp":"2026-12-01T12:00:00.000Z","message":{"role":"user","content":"survey"}}"#,
        r#"{"type":"assistant","sessionId":"s","uuid":"u1","requestId":"r1","timestamp":"2026-12-01T12:00:01.000Z","message":{"id":"m1","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"Survey","prompt":"look","subagent_type":"Explore"}}],"usage":{"input_tokens":10,"output_tokens":5}}}"#,
        r#"{"type":"progress","sessionId":"s","uuid":"u2","parentToolUseID":"toolu_1","timestamp":"2026-12-01T12:00:02.000Z","data":{"type":"agent_progress","agentId":"a1"}}"#,
        r#"{"type":"assistant","sessionId":"s","agentId":"a1","isSidechain":true,"uuid":"u3","requestId":"r2","timestamp":"2026-12-01T12:00:03.000Z","message":{"id":"m2","model":"claude-nova-9","content":[{"type":"text","text":"found it"}],"usage":{"input_tokens":1000,"output_tokens":10}}}"#,
        r#"{"type":"cost-state","sessionId":"s","uuid":"u4","timestamp":"2026-12-01T12:00:04.000Z","modelUsage":{"claude-nova-9":{"inputTokens":1000,"outputTokens":10,"costUSD":0.5},"claude-opus-4-6":{"inputTokens":10,"outputTokens":5,"costUSD":0.000175}}}"#,
    ];
    let mut p = Pipeline::default();
    for l in lines {
        p.push(l.as_bytes());
    }
    let f = Feed { source: swarmtop::wire::sanitize_line("claude"), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut v = view();
    render(&p, &f, &mut v, (120, 24));
    select_card(&mut v, &p);
    let screen = render(&p, &f, &mut v, (120, 24));
    let header = screen.lines().find(|l| l.contains("(agent)")).expect("the child's lane header");
    assert!(header.contains("$0.50 (agent)"), "{header}");
    insta::assert_snapshot!("claude_agent_cost_lane_120x24", screen);
    // The cost pane's table marks it as the tree does, whole: `$0.50*`, never `$0.50 …`.
    let tall = render(&p, &f, &mut v, (200, 60));
    let table = tall
        .lines()
        .map(|l| l.rsplit("││").next().unwrap_or_default())
        .find(|l| l.contains("● Survey"))
        .expect("the agent's row");
    assert!(table.contains("$0.50*") && !table.contains('…'), "{table}");
}

/// The header's rates are of now: a live stream that goes quiet decays to nothing spent, and once
/// the stream is over (a replay finished, the input closed) there is no rate, never the last one.
#[test]
fn rates_decay_when_the_stream_is_quiet_and_are_gone_once_it_ends() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")).expect("demo");
    let all: Vec<&str> = text.lines().collect();
    let mut p = Pipeline::default();
    let mut v = view();
    for (i, l) in all.iter().enumerate() {
        p.push(l.as_bytes());
        if i % 64 == 63 || i + 1 == all.len() {
            let m = &p.model;
            let total: i128 = m.sessions.iter().chain(&m.unattributed).map(|&t| m.thread(t).subtree.cost.0).sum();
            v.sample_burn(m.stream_ms, total);
        }
    }
    let last = p.model.stream_ms.expect("stream time");
    let header = |p: &Pipeline, v: &mut View, f: &Feed, w: u16| -> String {
        render(p, f, v, (w, 24)).lines().take(2).collect::<Vec<_>>().join("\n")
    };
    let rate = |screen: &str| {
        let part = screen.lines().next().and_then(|l| l.split('│').find(|p| p.contains("/min")))?;
        part.split_whitespace().next().map(str::to_owned)
    };
    let playing = feed("demo", &p, all.len() as u64);
    let busy = header(&p, &mut v, &playing, 200);
    let busy_rate = rate(&busy).expect("a replay that plays shows its burn");
    assert!(busy_rate != "$0/min" && busy.contains("412 ev/s"), "{busy}");
    // Live and current: the clock is the wall clock, and it moves on while nothing arrives.
    let quiet = |after_ms: i64| Feed {
        live: true,
        position: None,
        events_per_sec: 0.0,
        now_ms: Some(last + after_ms),
        ..playing.clone()
    };
    let half = rate(&header(&p, &mut v, &quiet(30_000), 200)).expect("a live stream shows its burn");
    assert_ne!(half, busy_rate, "thirty quiet seconds lower the rate");
    let gone_quiet = header(&p, &mut v, &quiet(90_000), 200);
    assert_eq!(rate(&gone_quiet).as_deref(), Some("$0/min"), "{gone_quiet}");
    let ended = Feed { ended: Some(swarmtop::wire::sanitize_line("replay ended")), ..playing.clone() };
    for w in [80, 200] {
        let screen = header(&p, &mut v, &ended, w);
        assert!(!screen.contains("/min") && !screen.contains("ev/s"), "{screen}");
        insta::assert_snapshot!(format!("header_replay_ended_{w}x24"), screen);
    }
    insta::assert_snapshot!("header_live_quiet_200x24", gone_quiet);
    // The cost pane says the same: no rate of an ended stream.
    let full = render(&p, &ended, &mut v, (200, 60));
    let burn = full.lines().find(|l| l.contains("burn ")).expect("the burn line");
    assert!(burn.contains(" —/min") && !burn.contains('$'), "{burn}");
}

/// Two sub-agents whose names differ only at their end (`List the files (A)` and `(B)`), on a
/// tree too narrow for either: each is cut in its middle, so the rows still tell them apart.
#[test]
fn siblings_that_differ_at_their_end_are_cut_in_the_middle() {
    let mut p = Pipeline::default();
    let task = |id: &str, d: &str| {
        format!(
            r#"{{"type":"tool_use","id":"{id}","name":"Task","input":{{"description":"{d}","prompt":"go","subagent_type":"general-purpose"}}}}"#
        )
    };
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","tools":[]}"#.to_owned(),
        format!(
            r#"{{"type":"assistant","session_id":"s1","parent_tool_use_id":null,"message":{{"id":"m1","model":"claude-sonnet-4-5","content":[{},{},{}],"usage":{{"input_tokens":1,"output_tokens":1}}}}}}"#,
            task("tu1", "List the files (A)"),
            task("tu2", "List the files (B)"),
            task("tu3", "Survey the tests")
        ),
        r#"{"type":"system","subtype":"task_started","session_id":"s1","task_id":"a1","tool_use_id":"tu1","description":"List the files (A)"}"#.to_owned(),
        r#"{"type":"system","subtype":"task_started","session_id":"s1","task_id":"a2","tool_use_id":"tu2","description":"List the files (B)"}"#.to_owned(),
        r#"{"type":"system","subtype":"task_started","session_id":"s1","task_id":"a3","tool_use_id":"tu3","description":"Survey the tests"}"#.to_owned(),
    ];
    for l in &lines {
        p.push(l.as_bytes());
    }
    let f = Feed { now_ms: p.model.stream_ms, ..Feed::default() };
    let mut v = view();
    let screen = render(&p, &f, &mut v, (80, 24));
    // The tree's rows: the lanes beside it have the names whole.
    let rows: Vec<String> =
        screen.lines().map(|l| l.chars().take(32).collect::<String>()).filter(|l| l.contains("List")).collect();
    assert!(rows.iter().any(|r| r.contains("(A)")) && rows.iter().any(|r| r.contains("(B)")), "{screen}");
    // A name alike no neighbour's keeps its start.
    assert!(screen.contains("Survey the"), "{screen}");
}

/// A replay of more files than the monitor holds open (`merge::OPEN_MAX`): those past the bound
/// are opened again each time they are read, and `d` shows how often, as `stats --json` says it
/// in `input.reopened`.
#[test]
fn diagnostics_show_files_reopened_past_the_open_file_bound() {
    use std::time::{Duration, Instant};
    use swarmtop::source::files::Input;
    use swarmtop::source::recorded::Recorded;
    use swarmtop::source::replay::Pace;
    use swarmtop::ui::runtime::{self, Runtime, Settings};

    let dir = tempfile::tempdir().expect("tempdir");
    let n = swarmtop::source::merge::OPEN_MAX + 3;
    let inputs: Vec<Input> = (0..n)
        .map(|i| {
            let path = dir.path().join(format!("s{i:04}.ndjson"));
            let ms = 1_796_188_304_000 + i64::try_from(i).expect("small");
            let line = |ms: i64| {
                format!(r#"{{"type":"step_start","timestamp":{ms},"sessionID":"ses_{i:04}","part":{{"type":"step-start"}}}}"#)
            };
            std::fs::write(&path, format!("{}\n{}\n", line(ms), line(ms + 10_000))).expect("write");
            Input::File(path)
        })
        .collect();
    let recorded = Recorded::from_inputs(&[dir.path().to_owned()], &inputs, false, &runtime::time_of).expect("load");
    let settings = Settings { fps: 30, stall_ms: 60_000, max_gap_ms: 2_000, pace: Pace::Max, clock: Instant::now };
    let t0 = Instant::now();
    let mut rt = Runtime::replay(recorded, view(), &settings, swarmtop::pipeline::Config::default(), t0);
    // Named as a path would be: a temporary one changes from run to run.
    rt.feed.source = swarmtop::wire::sanitize_line("sessions/");
    let mut now = t0;
    while rt.feed.ended.is_none() {
        rt.advance(now, None);
        now += Duration::from_millis(10);
        assert!(now < t0 + Duration::from_secs(600), "the replay ends");
    }
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    term.draw(|f| rt.draw(f, now)).expect("draw");
    rt.input(runtime::Input::Terminal(crossterm::event::Event::Key(key(KeyCode::Char('d')))), now);
    term.draw(|f| rt.draw(f, now)).expect("draw");
    let screen = format!("{}", term.backend());
    // Each closed file's two lines lie 10 s apart, every other file's between them: read twice.
    assert_eq!(rt.feed.reopened, 2 * 3, "{screen}");
    assert!(screen.contains("files reopened 6"), "{screen}");
    insta::assert_snapshot!("diagnostics_files_reopened_120x40", screen);
}

/// The real Claude Code 2.1.332 `badtype` capture (`tests/fixtures/README.md`: an `Agent` call
/// refused, then a healthy helper) with the refusal's reason made long and hostile: hundreds of
/// columns, newlines, a CR, escape sequences, a bell and a bidi override, as a CLI's error text
/// may come.
fn with_long_failure_reason() -> Pipeline {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332/badtype.ndjson");
    let text = std::fs::read_to_string(path).expect("fixture");
    let real = "Agent type 'no-such-agent' not found. Available agents: claude, Explore, general-purpose, Plan, statusline-setup";
    let mut long = String::from("Agent type 'no-such-agent' not found.\r\n\u{1b}[31mAvailable agents:\u{1b}[0m\n");
    for k in 0..24 {
        write!(long, "agent-{k:02}-with-a-long-name\u{7}, ").expect("write");
    }
    long.push_str("\u{202e}reversed\u{202c}\tand then the END-OF-REASON");
    let escaped = serde_json::to_string(&long).expect("json");
    let escaped = &escaped[1..escaped.len() - 1];
    let mut p = Pipeline::default();
    for line in text.lines() {
        p.push(line.replace(real, escaped).as_bytes());
    }
    p.finish();
    p
}

/// A failed spawn's reason (issue 19, `Item::why`) is the CLI's own text, which can be long: on
/// the lanes it takes at most two rows, cut with `…`, so the cards under it stay on screen; the
/// lane opened alone (Enter) shows all of it. Nothing of its control characters reaches the screen.
#[test]
fn a_long_failure_reason_is_cut_on_the_lanes_and_whole_in_the_open_lane() {
    let p = with_long_failure_reason();
    let f = Feed { source: swarmtop::wire::sanitize_line("badtype"), now_ms: p.model.stream_ms, ..Feed::default() };
    for size in [(80, 24), (200, 60)] {
        let mut v = View::with_theme(Theme::no_color());
        let screen = render(&p, &f, &mut v, size);
        for bad in ['\u{1b}', '\u{7}', '\u{202e}', '\r'] {
            assert!(!screen.contains(bad), "{bad:?} on the screen:\n{screen}");
        }
        assert!(
            screen.contains("✗ Agent failed") && screen.contains("Agent type 'no-such-agent' not found."),
            "{screen}"
        );
        assert!(screen.contains('…') && !screen.contains("END-OF-REASON"), "the reason is cut:\n{screen}");
        // The rows under the failed call: the helper's call and the answer after it.
        assert!(screen.contains("⑂ Agent"), "the helper's card pushed off:\n{screen}");
        insta::assert_snapshot!(format!("long_failure_reason_{}x{}", size.0, size.1), screen);
    }
    let mut v = View::with_theme(Theme::no_color());
    render(&p, &f, &mut v, (200, 60));
    press(&mut v, &p, &[key(KeyCode::Enter)]);
    assert!(v.selection.expanded.is_some(), "Enter opens the lane");
    let screen = render(&p, &f, &mut v, (200, 60));
    assert!(screen.contains("END-OF-REASON"), "the open lane shows the whole reason:\n{screen}");
    insta::assert_snapshot!("long_failure_reason_open_lane_200x60", screen);
}
