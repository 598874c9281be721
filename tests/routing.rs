//! The routing contract (routing.md), one rule per test: a few NDJSON lines, then assertions on the
//! routed classes, the tree and the counters. Every test also checks conservation (§5).

use serde_json::{Value, json};
use swarmtop::model::{ItemStatus, Status};
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::router::{self, Class, Event, Role};

/// One routed line as a test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    line: u64,
    class: Class,
    thread: Option<String>,
    session: Option<String>,
    owner: Option<String>,
    replayed: bool,
}

struct Run {
    p: Pipeline,
    out: Vec<Out>,
}

impl Run {
    fn thread(&self, id: &str) -> &swarmtop::model::Thread {
        let idx = self.p.find(id).unwrap_or_else(|| panic!("no thread {id}"));
        self.p.model.thread(idx)
    }

    fn parent(&self, id: &str) -> Option<String> {
        self.thread(id).parent.map(|p| self.p.model.thread(p).id.to_string())
    }

    fn lines_of(&self, id: &str) -> Vec<&Out> {
        self.out.iter().filter(|o| o.thread.as_deref() == Some(id)).collect()
    }

    fn counters(&self) -> router::Counters {
        self.p.counters()
    }
}

fn run_with(lines: &[String], limits: router::Limits, finish: bool) -> Run {
    let mut p = Pipeline::new(Config { router: limits, ..Config::default() });
    let mut ids: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut sink = |e: &Event<'_, '_>| match e {
        Event::Seen { id, .. } => ids.push(id.to_string()),
        Event::Line(r) => out.push(Out {
            line: r.line_no,
            class: r.class,
            thread: r.thread.map(|t| ids[t.index()].clone()),
            session: r.session.map(|t| ids[t.index()].clone()),
            owner: r.owner.map(|t| ids[t.index()].clone()),
            replayed: r.replayed,
        }),
        Event::Malformed { line_no, .. } => out.push(Out {
            line: *line_no,
            class: Class::Malformed,
            thread: None,
            session: None,
            owner: None,
            replayed: false,
        }),
        _ => {}
    };
    for l in lines {
        p.push_with(l.as_bytes(), &mut sink);
    }
    if finish {
        p.finish_with(&mut sink);
    }
    let run = Run { p, out };
    let c = run.counters();
    assert!(c.conserved(), "conservation broken: {c:?}");
    assert_eq!(c.early, c.replayed + c.evicted + c.pending_at_end, "early == replayed + evicted + pendingAtEnd: {c:?}");
    run
}

fn run(lines: &[String]) -> Run {
    run_with(lines, router::Limits::default(), true)
}

// ---- line builders: the shapes of wire.md §2, trimmed to what matters ----

fn note(method: &str, params: &Value, ms: Option<i64>) -> String {
    let mut v = json!({"method": method, "params": params});
    if let Some(ms) = ms {
        v["emittedAtMs"] = json!(ms);
    }
    v.to_string()
}

fn root_started(t: &str) -> String {
    note(
        "thread/started",
        &json!({"thread": {"id": t, "parentThreadId": null, "source": "vscode", "model": "gpt-5.5"}}),
        None,
    )
}

fn status(t: &str, kind: &str) -> String {
    note("thread/status/changed", &json!({"threadId": t, "status": {"type": kind, "activeFlags": []}}), None)
}

fn waiting(t: &str) -> String {
    note(
        "thread/status/changed",
        &json!({"threadId": t, "status": {"type": "active", "activeFlags": ["waitingOnApproval"]}}),
        None,
    )
}

fn turn_started(t: &str, turn: &str, root_turn: &str) -> String {
    note(
        "turn/started",
        &json!({"threadId": t, "turn": {"id": turn, "rootTurnId": root_turn, "status": "inProgress"}}),
        None,
    )
}

fn turn_completed(t: &str, turn: &str, status: &str) -> String {
    note("turn/completed", &json!({"threadId": t, "turn": {"id": turn, "rootTurnId": turn, "status": status}}), None)
}

fn collab(event: &str, parent: &str, item: &str, tool: &str, status: &str, receivers: &[&str], model: &str) -> String {
    note(
        event,
        &json!({"threadId": parent, "turnId": "pt", "item": {"type": "collabAgentToolCall", "id": item, "tool": tool,
               "status": status, "senderThreadId": parent, "receiverThreadIds": receivers, "model": model, "agentsStates": {}}}),
        None,
    )
}

fn spawn(parent: &str, item: &str, child: &str) -> Vec<String> {
    vec![
        collab("item/started", parent, item, "spawnAgent", "inProgress", &[], ""),
        collab("item/completed", parent, item, "spawnAgent", "completed", &[child], "gpt-5.6-luna"),
    ]
}

fn activity(parent: &str, item: &str, kind: &str, child: &str, path: &str) -> String {
    note(
        "item/completed",
        &json!({"threadId": parent, "turnId": "pt", "item": {"type": "subAgentActivity", "id": item, "kind": kind,
               "agentThreadId": child, "agentPath": path, "model": "gpt-5.5"}}),
        None,
    )
}

fn message(t: &str, item: &str, text: &str) -> Vec<String> {
    vec![
        note(
            "item/started",
            &json!({"threadId": t, "turnId": "u", "item": {"type": "agentMessage", "id": item, "text": ""}}),
            None,
        ),
        note("item/agentMessage/delta", &json!({"threadId": t, "turnId": "u", "itemId": item, "delta": text}), None),
    ]
}

fn error(t: &str, will_retry: &Value) -> String {
    note("error", &json!({"threadId": t, "turnId": "u", "willRetry": will_retry, "error": {"message": "boom"}}), None)
}

fn tokens(t: &str, input: u64, cached: u64, output: u64) -> String {
    note(
        "thread/tokenUsage/updated",
        &json!({"threadId": t, "turnId": "u", "tokenUsage": {
            "total": {"totalTokens": input + output, "inputTokens": input, "cachedInputTokens": cached, "outputTokens": output, "reasoningOutputTokens": 0},
            "last": {"totalTokens": 100, "inputTokens": 90, "cachedInputTokens": 0, "outputTokens": 10, "reasoningOutputTokens": 0},
            "modelContextWindow": 1000}}),
        None,
    )
}

fn lines(parts: &[Vec<String>]) -> Vec<String> {
    parts.concat()
}

// ---- registration (§2) ----

#[test]
fn spawn_receivers_register_on_item_completed_only() {
    let r = run(&lines(&[vec![root_started("P")], spawn("P", "s1", "C"), vec![status("C", "idle")]]));
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    let c = r.thread("C");
    assert_eq!(c.via, Some(router::Via::CollabAgentToolCall));
    assert_eq!(c.card.as_deref(), Some("s1"));
    // The spawn's resolved model (item/completed) is the child's model; item/started's "" never is.
    assert_eq!(c.model.as_ref().map(|m| m.as_str().to_owned()).as_deref(), Some("gpt-5.6-luna"));
    let p = r.thread("P");
    assert_eq!(p.item("s1").unwrap().lanes.len(), 1);
}

#[test]
fn child_traffic_before_registration_is_replayed_exactly_once_in_order() {
    let input = lines(&[
        vec![root_started("P"), status("C", "idle"), turn_started("C", "ct", "pt")],
        message("C", "m1", "early"),
        spawn("P", "s1", "C"),
        message("C", "m2", "late"),
    ]);
    let r = run(&input);
    let c = r.counters();
    assert_eq!((c.early, c.replayed, c.evicted), (4, 4, 0));
    let child_lines: Vec<u64> = r.lines_of("C").iter().map(|o| o.line).collect();
    assert_eq!(child_lines, [2, 3, 4, 5, 8, 9], "each child line once, in arrival order");
    let replayed: Vec<u64> = r.lines_of("C").iter().filter(|o| o.replayed).map(|o| o.line).collect();
    assert_eq!(replayed, [2, 3, 4, 5]);
    // The replay comes right after the spawn's item/completed (line 7), which is routed first.
    let pos_spawn = r.out.iter().position(|o| o.line == 7).unwrap();
    let pos_first_replay = r.out.iter().position(|o| o.line == 2).unwrap();
    assert_eq!(pos_first_replay, pos_spawn + 1);
    for o in r.lines_of("C") {
        assert_eq!(o.session.as_deref(), Some("P"));
        assert_eq!(o.owner.as_deref(), Some("C"));
    }
    assert_eq!(r.thread("C").item("m1").unwrap().text.as_str(), "early");
}

#[test]
fn thread_started_with_parent_replays_before_its_own_line() {
    let started = note(
        "thread/started",
        &json!({"thread": {"id": "C", "source": {"subAgent": {"thread_spawn": {"parent_thread_id": "P", "depth": 1, "agent_nickname": "Kant"}}}}}),
        None,
    );
    let r = run(&[root_started("P"), status("C", "idle"), started]);
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    assert_eq!(r.thread("C").via, Some(router::Via::ThreadStarted));
    assert_eq!(r.thread("C").name(), "Kant");
    let order: Vec<u64> = r.lines_of("C").iter().map(|o| o.line).collect();
    assert_eq!(order, [2, 3]);
}

#[test]
fn thread_read_response_registers_and_names() {
    let read = json!({"id": 10, "result": {"thread": {"id": "C", "parentThreadId": "P", "agentNickname": "Feynman", "agentRole": "worker", "model": "gpt-5.4"}}}).to_string();
    let r = run(&[root_started("P"), status("C", "idle"), read]);
    let c = r.thread("C");
    assert_eq!(c.via, Some(router::Via::ThreadRead));
    assert_eq!(c.name(), "Feynman");
    assert_eq!(c.model.as_ref().unwrap().as_str(), "gpt-5.4");
    assert_eq!(r.counters().control, 1);
}

#[test]
fn sub_agent_activity_started_registers_with_its_path() {
    let r = run(&[root_started("P"), activity("P", "a1", "started", "C", "/root/alpha"), status("C", "idle")]);
    let c = r.thread("C");
    assert_eq!(c.via, Some(router::Via::SubAgentActivity));
    assert_eq!(c.name(), "alpha");
    assert_eq!(c.card.as_deref(), Some("a1"));
}

#[test]
fn interacted_about_root_from_a_child_changes_nothing() {
    let input = lines(&[
        vec![root_started("P"), activity("P", "a1", "started", "C", "/root/c"), turn_started("C", "ct", "pt")],
        // Sent from the child about its root (seen with 0.145.0): a known bug elsewhere.
        vec![activity("C", "a2", "interacted", "P", "/root"), activity("C", "a3", "started", "P", "/root")],
    ]);
    let r = run(&input);
    assert_eq!(r.thread("P").role, Role::Root);
    assert_eq!(r.thread("P").parent, None);
    assert!(r.thread("C").children.is_empty());
    assert_eq!(r.thread("P").agent_path, None, "nor does it name the root");
}

#[test]
fn wait_receivers_never_reparent_a_known_child() {
    let input = lines(&[
        vec![root_started("P"), root_started("Q")],
        spawn("P", "s1", "C"),
        vec![collab("item/started", "Q", "w1", "wait", "inProgress", &["C"], "")],
        vec![collab("item/completed", "Q", "w1", "wait", "completed", &["C"], "")],
    ]);
    let r = run(&input);
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    assert_eq!(r.thread("C").card.as_deref(), Some("s1"));
}

#[test]
fn failed_spawns_register_nothing() {
    let input = vec![
        root_started("P"),
        collab("item/completed", "P", "s1", "spawnAgent", "failed", &["C"], "gpt-5.5"),
        status("C", "idle"),
    ];
    let r = run(&input);
    assert_eq!(r.thread("C").role, Role::Orphan);
    assert_eq!(r.counters().orphan_threads, 1);
}

#[test]
fn never_register_a_root_or_an_ancestor() {
    let input = lines(&[
        vec![root_started("P")],
        spawn("P", "s1", "C"),
        spawn("C", "s2", "G"),
        // G claims its own grandparent, C claims the root P: cycles and roots are refused.
        spawn("G", "s3", "P"),
        spawn("G", "s4", "C"),
        spawn("C", "s5", "C"),
    ]);
    let r = run(&input);
    assert_eq!(r.thread("P").role, Role::Root);
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    assert_eq!(r.parent("G").as_deref(), Some("C"));
    assert_eq!(r.thread("G").depth, 2);
}

#[test]
fn depth_33_chain_stops_at_the_guard() {
    let mut input = vec![root_started("t0")];
    for d in 1..=34 {
        input.extend(spawn(&format!("t{}", d - 1), &format!("s{d}"), &format!("t{d}")));
        input.push(status(&format!("t{d}"), "idle"));
    }
    let r = run(&input);
    assert_eq!(r.thread("t32").depth, 32);
    assert_eq!(r.thread("t32").role, Role::Child);
    assert_eq!(r.thread("t33").role, Role::Orphan, "depth 33 is over the default guard of 32");
    // Depth keeps counting through the orphan: its child is refused too.
    assert_eq!(r.thread("t34").role, Role::Orphan);
    assert_eq!(r.counters().depth_limited, 2);
    assert_eq!(r.counters().orphan_threads, 2);
}

// ---- pending buffers and windows (§4) ----

#[test]
fn eviction_keeps_the_terminal_line() {
    let limits = router::Limits { pending_lines_per_thread: 3, ..router::Limits::default() };
    let mut input = vec![root_started("P"), turn_started("C", "ct", "pt")];
    input.extend(message("C", "m1", "a"));
    input.push(turn_completed("C", "ct", "completed"));
    input.extend(message("C", "m2", "b"));
    input.extend(spawn("P", "s1", "C"));
    let r = run_with(&input, limits, true);
    let c = r.counters();
    assert_eq!((c.early, c.evicted, c.replayed), (6, 3, 3));
    let kept: Vec<u64> = r.lines_of("C").iter().map(|o| o.line).collect();
    assert_eq!(kept, [5, 6, 7], "the terminal turn/completed (line 5) survives, the oldest others go");
}

#[test]
fn window_closes_by_stream_time_into_an_orphan() {
    let input = vec![
        note("thread/status/changed", &json!({"threadId": "X", "status": {"type": "idle"}}), Some(1_000)),
        note("warning", &json!({"threadId": "X", "message": "hm"}), Some(2_000)),
        note("configWarning", &json!({"message": "late"}), Some(31_001)),
        note("item/agentMessage/delta", &json!({"threadId": "X", "itemId": "m", "delta": "after"}), Some(31_002)),
    ];
    let r = run_with(&input, router::Limits::default(), false);
    assert_eq!(r.thread("X").role, Role::Orphan, "30 s after its first line, unregistered");
    let c = r.counters();
    assert_eq!((c.early, c.replayed, c.pending_at_end), (2, 2, 0));
    // After the window, its lines are applied directly, as a child's with no session.
    let last = r.out.last().unwrap();
    assert_eq!((last.line, last.class, last.session.clone(), last.replayed), (4, Class::Rehomed, None, false));
}

#[test]
fn window_by_line_count_when_no_time_is_known() {
    let limits = router::Limits { window_lines: 3, ..router::Limits::default() };
    let input =
        vec![status("X", "idle"), root_started("P"), status("P", "idle"), status("P", "idle"), status("P", "idle")];
    let r = run_with(&input, limits, false);
    assert_eq!(r.thread("X").role, Role::Orphan);
    assert_eq!(r.counters().pending_at_end, 0);
}

#[test]
fn a_pending_thread_with_children_becomes_a_root() {
    // Attached mid-session: the root's own announcement was missed.
    let input = lines(&[vec![status("P", "active")], spawn("P", "s1", "C"), vec![status("C", "idle")]]);
    let r = run(&input);
    assert_eq!(r.thread("P").role, Role::Root);
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    // Lines of C routed while P was still pending had no session yet.
    assert!(r.lines_of("C").iter().all(|o| o.session.is_none()));
}

#[test]
fn a_turn_that_is_its_own_root_marks_a_root() {
    let r = run(&[
        status("R", "active"),
        turn_started("R", "u1", "u1"),
        status("K", "active"),
        turn_started("K", "u2", "u1"),
    ]);
    assert_eq!(r.thread("R").role, Role::Root);
    assert_eq!(r.thread("K").role, Role::Orphan, "a child turn carries its parent's rootTurnId");
}

#[test]
fn orphan_that_registers_later_moves_with_its_history() {
    let mut input = vec![
        note("thread/status/changed", &json!({"threadId": "C", "status": {"type": "idle"}}), Some(1_000)),
        note(
            "item/agentMessage/delta",
            &json!({"threadId": "C", "turnId": "u", "itemId": "m", "delta": "hello "}),
            Some(1_001),
        ),
        note("thread/started", &json!({"thread": {"id": "P", "source": "vscode"}}), Some(40_000)),
    ];
    input.push(note(
        "item/agentMessage/delta",
        &json!({"threadId": "C", "turnId": "u", "itemId": "m", "delta": "world"}),
        Some(40_001),
    ));
    input.extend(spawn("P", "s1", "C"));
    let r = run(&input);
    assert_eq!(r.parent("C").as_deref(), Some("P"));
    assert_eq!(r.thread("C").role, Role::Child);
    assert!(r.p.model.unattributed.is_empty());
    assert_eq!(r.thread("C").item("m").unwrap().text.as_str(), "hello world");
    assert_eq!(r.counters().orphan_threads, 0);
    assert_eq!(r.thread("P").subtree.threads, 2);
}

#[test]
fn pending_thread_cap_closes_the_oldest_window() {
    let limits = router::Limits { pending_threads: 2, ..router::Limits::default() };
    let r = run_with(&[status("A", "idle"), status("B", "idle"), status("C", "idle")], limits, false);
    assert_eq!(r.thread("A").role, Role::Orphan);
    assert_eq!(r.thread("B").role, Role::Pending);
    assert_eq!(r.counters().pending_at_end, 2);
}

// ---- classification (§3) ----

#[test]
fn child_lines_are_suppressed_terminal_or_rehomed() {
    let input = lines(&[
        vec![root_started("P")],
        spawn("P", "s1", "C"),
        vec![
            turn_started("C", "ct", "pt"),
            note("item/plan/delta", &json!({"threadId": "C", "itemId": "p", "delta": "x"}), None),
        ],
        message("C", "m", "hi"),
        vec![error("C", &json!(true)), turn_completed("C", "ct", "completed")],
    ]);
    let r = run(&input);
    let classes: Vec<Class> = r.lines_of("C").iter().map(|o| o.class).collect();
    use Class::*;
    assert_eq!(classes, [Suppressed, Suppressed, Rehomed, Rehomed, Rehomed, Suppressed]);
    let c = r.counters();
    assert_eq!((c.root, c.rehomed, c.suppressed), (3, 3, 3));
}

#[test]
fn lines_without_a_thread_are_global_and_client_lines_control() {
    let input = vec![
        note("account/rateLimits/updated", &json!({"rateLimits": {}}), None),
        note("mcpServer/startupStatus/updated", &json!({"name": "x"}), None),
        json!({"method": "initialize", "id": 1, "params": {}}).to_string(),
        json!({"method": "initialized"}).to_string(),
        json!({"id": 1, "result": {"userAgent": "x"}}).to_string(),
        json!({"swarmtop": "recording", "version": 1}).to_string(),
        note("thread/teleported", &json!({"threadId": "T"}), None),
        note("brand/new", &json!({"x": 1}), None),
    ];
    let r = run(&input);
    let c = r.counters();
    assert_eq!((c.global, c.control), (3, 4));
    // An unknown method naming a thread surfaces as that thread's traffic.
    assert_eq!(r.thread("T").lines, 1);
}

#[test]
fn malformed_lines_are_counted_and_skipped() {
    let input = vec![
        "not json".to_owned(),
        "{\"method\":\"item/agentMessage/delta\",\"params\":{\"thr".to_owned(),
        String::from_utf8_lossy(b"\xff").into_owned(),
        json!({"hello": "world"}).to_string(),
        error("T", &json!("nope")),
        root_started("P"),
    ];
    let mut p = Pipeline::default();
    for l in &input {
        p.push(l.as_bytes());
    }
    p.push(b"\xff\xfe{}");
    p.finish();
    let c = p.counters();
    assert_eq!(c.malformed, 6);
    assert!(c.conserved());
    assert_eq!(p.model.diagnostics.malformed.len(), 6);
}

#[test]
fn recording_envelopes_route_by_direction_and_time() {
    let inner = status("C", "idle");
    let input = vec![
        json!({"swarmtop": "recording", "version": 1, "startedMs": 1, "source": "tee"}).to_string(),
        format!(
            r#"{{"ts":5,"dir":"c2s","msg":{}}}"#,
            json!({"method": "turn/start", "id": 3, "params": {"threadId": "R"}})
        ),
        format!(r#"{{"ts":6,"dir":"s2c","msg":{inner}}}"#),
        format!(r#"{{"ts":7,"dir":"in","rawB64":"AAE="}}"#),
    ];
    let r = run(&input);
    let c = r.counters();
    assert_eq!((c.control, c.malformed), (2, 1));
    assert_eq!(r.thread("R").role, Role::Root, "a recorded turn/start request marks a root");
    assert_eq!(r.p.model.stream_ms, Some(6));
}

// ---- state (§6) ----

#[test]
fn will_retry_true_is_transient_false_is_failure() {
    let input = lines(&[
        vec![root_started("P"), turn_started("P", "u", "u"), error("P", &json!(true))],
        message("P", "m", "ok"),
    ]);
    let r = run(&input);
    assert_eq!(r.thread("P").status, Status::Running, "the next line restores the status before the retry");

    let r = run(&[root_started("P"), turn_started("P", "u", "u"), error("P", &json!(true))]);
    assert_eq!(r.thread("P").status, Status::Retrying);

    let r = run(&[root_started("P"), turn_started("P", "u", "u"), error("P", &json!(false))]);
    assert_eq!(r.thread("P").status, Status::Failed);
}

#[test]
fn a_childs_failure_fails_only_its_lane() {
    let input = lines(&[
        vec![root_started("P"), turn_started("P", "u", "u")],
        spawn("P", "s1", "C"),
        vec![turn_started("C", "cu", "u"), error("C", &json!(false)), turn_completed("C", "cu", "failed")],
    ]);
    let r = run(&input);
    assert_eq!(r.thread("C").status, Status::Failed);
    assert_eq!(r.thread("P").status, Status::Running);
    assert_eq!(r.thread("C").last_error.as_ref().unwrap().as_str(), "boom");
}

#[test]
fn interrupted_turns_close_their_dangling_items() {
    let input = lines(&[
        vec![root_started("P"), turn_started("P", "u", "u")],
        vec![collab("item/started", "P", "w1", "wait", "inProgress", &[], "")],
        vec![note("turn/completed", &json!({"threadId": "P", "turn": {"id": "u", "status": "interrupted"}}), None)],
    ]);
    let input: Vec<String> = input.into_iter().map(|l| l.replace("\"turnId\":\"pt\"", "\"turnId\":\"u\"")).collect();
    let r = run(&input);
    let p = r.thread("P");
    assert_eq!(p.item("w1").unwrap().status, ItemStatus::Interrupted);
    assert_eq!(p.status, Status::Interrupted);
}

#[test]
fn status_transitions_follow_the_table() {
    let r = run(&[root_started("P"), status("P", "idle")]);
    assert_eq!(r.thread("P").status, Status::Pending, "idle only from running, waiting or retrying");
    let r = run(&[root_started("P"), turn_started("P", "u", "u"), waiting("P")]);
    assert_eq!(r.thread("P").status, Status::Waiting);
    let r = run(&[root_started("P"), turn_started("P", "u", "u"), waiting("P"), status("P", "active")]);
    assert_eq!(r.thread("P").status, Status::Running);
    let r = run(&[root_started("P"), turn_started("P", "u", "u"), status("P", "idle")]);
    assert_eq!(r.thread("P").status, Status::Idle);
    let r = run(&[root_started("P"), status("P", "notLoaded")]);
    assert_eq!(r.thread("P").status, Status::Closed);
    let r = run(&[
        root_started("P"),
        turn_started("P", "u", "u"),
        note("thread/status/changed", &json!({"threadId": "P", "status": {"type": "systemError"}}), None),
    ]);
    assert_eq!(r.thread("P").status, Status::Running, "systemError alone changes nothing");
}

#[test]
fn tokens_merge_by_max_and_cost_is_exact() {
    let r =
        run(&[root_started("P"), tokens("P", 1000, 200, 50), tokens("P", 3000, 1000, 40), tokens("P", 1000, 200, 50)]);
    let p = r.thread("P");
    assert_eq!((p.tokens.input, p.tokens.cached_input, p.tokens.output), (3000, 1000, 50));
    // gpt-5.5: (3000-1000)*5 + 1000*0.5 + 50*30 = 12000 USD per million tokens.
    assert_eq!(p.cost.unwrap().to_string(), "0.012");
    assert_eq!(p.context.unwrap().ratio(), Some(0.1));
}

#[test]
fn unknown_models_are_unpriced_never_zero() {
    let input = lines(&[
        vec![root_started("P")],
        vec![collab("item/completed", "P", "s1", "spawnAgent", "completed", &["C"], "acme-1")],
        vec![tokens("C", 100, 0, 10)],
    ]);
    let r = run(&input);
    assert!(r.thread("C").cost.is_none());
    assert_eq!(r.p.model.unpriced_threads(), 1);
    assert_eq!(r.thread("C").subtree.cost_usd(), None);
    // P used nothing ($0, known): a sum of nothing known beside an unpriced thread is no $0.
    assert_eq!(r.thread("P").subtree.cost_usd(), None, "nothing known was spent");
    let input = lines(&[
        vec![root_started("P"), tokens("P", 100, 0, 10)],
        vec![collab("item/completed", "P", "s1", "spawnAgent", "completed", &["C"], "acme-1")],
        vec![tokens("C", 100, 0, 10)],
    ]);
    let r = run(&input);
    assert!(r.thread("P").subtree.cost_usd().is_some(), "a sum over a set with a priced spend is priced");
}

#[test]
fn subtree_rolls_up_descendants() {
    let input = lines(&[
        vec![root_started("P"), tokens("P", 100, 0, 10)],
        spawn("P", "s1", "C"),
        vec![tokens("C", 200, 0, 20)],
        spawn("C", "s2", "G"),
        vec![tokens("G", 400, 0, 40)],
    ]);
    let r = run(&input);
    let p = r.thread("P");
    assert_eq!(p.subtree.threads, 3);
    assert_eq!(p.subtree.tokens.input, 700);
    assert_eq!(r.thread("C").subtree.tokens.output, 60);
}

// ---- the settled tree and its bounds (issue 8) ----

fn child_started(t: &str, parent: &str) -> String {
    note(
        "thread/started",
        &json!({"thread": {"id": t, "parentThreadId": parent, "source": {"subAgent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}}}),
        None,
    )
}

/// A chain announced deepest first: `t{n}` under `t{n-1}` … `t1` under `t0`, then `t0` a root.
fn chain_child_first(n: usize) -> Vec<String> {
    let mut input: Vec<String> =
        (1..=n).rev().map(|d| child_started(&format!("t{d}"), &format!("t{}", d - 1))).collect();
    input.push(root_started("t0"));
    input
}

#[test]
fn depth_is_derived_again_when_a_parent_registers_later() {
    let r = run(&chain_child_first(25_000));
    for d in [1, 2, 31, 32] {
        let t = r.thread(&format!("t{d}"));
        assert_eq!((t.role, t.depth), (Role::Child, d), "t{d}");
    }
    // Past the guard, whichever order the chain came in.
    let deep = r.thread("t33");
    assert_eq!(deep.role, Role::Orphan);
    assert_eq!(r.thread("t25000").role, Role::Orphan);
    assert_eq!(r.counters().depth_limited, 25_000 - 32);
    assert_eq!(r.thread("t0").subtree.threads, 33, "the root's subtree is the part of the chain it keeps");
    // Every walk of that tree is iterative: the headless renderings do not overflow.
    assert!(swarmtop::commands::tree::render_tree(&r.p.model).lines().count() > 25_000);
    assert!(swarmtop::commands::stats::render_text(&r.p).contains("depth-limited 24968"));
}

#[test]
fn a_line_of_a_deep_thread_does_not_walk_its_chain() {
    let mut input = chain_child_first(20_000);
    let deepest = "t20000";
    for i in 0..25_000u64 {
        input.push(note(
            "item/agentMessage/delta",
            &json!({"threadId": deepest, "turnId": "u", "itemId": "m", "delta": "x"}),
            None,
        ));
        input.push(tokens(deepest, i, 0, 1));
    }
    let start = std::time::Instant::now();
    let r = run(&input);
    // The old router walked 20,000 parents per line (7 s in a release build); this is a few ms.
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
    assert_eq!(r.thread(deepest).tokens.input, 24_999);
    assert_eq!(r.lines_of(deepest).len(), 50_001);
}

#[test]
fn threads_over_the_thread_bound_are_dropped_and_counted() {
    let limits = router::Limits { threads: 3, ..router::Limits::default() };
    let input = lines(&[
        vec![root_started("P")],
        spawn("P", "s1", "A"),
        spawn("P", "s2", "B"),
        spawn("P", "s3", "C"),
        message("C", "m", "lost"),
        message("A", "m", "kept"),
    ]);
    let r = run_with(&input, limits, true);
    assert!(r.p.find("C").is_none(), "a fourth thread is never made");
    assert_eq!(r.p.model.threads.len(), 3);
    assert_eq!(r.counters().over_thread_limit, 2, "C's two lines");
    assert_eq!(r.lines_of("A").len(), 2);
}

#[test]
fn a_wild_first_time_does_not_hold_pending_windows_open() {
    let text = std::fs::read_to_string("tests/fixtures/hostile/min-time.ndjson").unwrap();
    let input: Vec<String> = text.lines().map(str::to_owned).collect();
    // Without the end of input: the windows of C and D closed when stream time passed them.
    let r = run_with(&input, router::Limits::default(), false);
    assert_eq!(r.thread("C").role, Role::Orphan);
    assert_eq!(r.thread("D").role, Role::Orphan);
    assert_eq!(r.counters().pending_at_end, 1, "only R's line, the newest, still waits");
}

#[test]
fn hostile_inputs_keep_their_figures() {
    let mut seen = 0;
    for entry in std::fs::read_dir("tests/fixtures/hostile").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "ndjson") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let input: Vec<String> = text.lines().map(str::to_owned).collect();
        let r = run(&input);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match name.as_str() {
            "token-wrap.ndjson" => {
                assert_eq!(r.thread("R").subtree.tokens.input, u64::MAX, "saturates, never wraps");
                assert_eq!(r.p.model.totals().tokens.input, u64::MAX);
            }
            "negative-cost.ndjson" => assert_eq!(r.thread("R").cost.unwrap().to_string(), "0.00005"),
            "min-time.ndjson" => assert_eq!(r.thread("R").role, Role::Orphan),
            "deep-chain-child-first.ndjson" => {
                assert_eq!(r.thread("t32").depth, 32);
                assert_eq!(r.thread("t33").role, Role::Orphan);
                assert_eq!(r.counters().depth_limited, 200 - 32);
            }
            other => panic!("{other}: a hostile input without its figure"),
        }
        seen += 1;
    }
    assert_eq!(seen, 4);
}

/// X's rollout file, followed from its middle: no line names X; the file's name (its origin) does.
fn rollout_of_x() -> Vec<String> {
    [
        json!({"timestamp": "2026-11-29T21:20:09.000Z", "type": "event_msg", "payload": {"type": "task_started", "turn_id": "u1"}}),
        json!({"timestamp": "2026-11-29T21:20:10.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "id": "msg", "content": [{"type": "output_text", "text": "hi"}]}}),
        json!({"timestamp": "2026-11-29T21:20:11.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}}),
        json!({"timestamp": "2026-11-29T21:20:12.000Z", "type": "event_msg", "payload": {"type": "task_complete", "turn_id": "u1"}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

#[test]
fn a_buffered_line_replays_to_the_facts_a_live_one_states() {
    use swarmtop::source::files::Record;
    use swarmtop::wire::{Origin, OriginInfo};
    let file = Origin::new(OriginInfo { thread: Some("X".into()), ..OriginInfo::default() });
    let parent = lines(&[vec![root_started("R")], spawn("R", "s1", "X")]);
    let nothing = &mut |_: &Event<'_, '_>| {};
    let figures = |p: &Pipeline| {
        let t = p.model.thread(p.find("X").unwrap());
        (
            t.role,
            t.status,
            t.tokens.input,
            t.turns.len(),
            t.items.iter().map(|i| i.text.to_string()).collect::<Vec<_>>(),
        )
    };
    // Live: X is registered before its lines come.
    let mut live = Pipeline::default();
    for l in &parent {
        live.push(l.as_bytes());
    }
    for l in rollout_of_x() {
        live.feed(Record::Line(l.as_bytes()), &file, nothing);
    }
    live.finish();
    // Replayed: X's lines wait in its pending buffer, then replay when the spawn registers it.
    let mut replayed = Pipeline::default();
    for l in rollout_of_x() {
        replayed.feed(Record::Line(l.as_bytes()), &file, nothing);
    }
    for l in &parent {
        replayed.push(l.as_bytes());
    }
    replayed.finish();
    assert_eq!(replayed.counters().replayed, 4);
    assert_eq!(figures(&live), figures(&replayed));
    assert_eq!(figures(&live), (Role::Child, Status::Idle, 10, 1, vec!["hi".to_owned()]));
}

// ---- routing rules stated in facts (no format's lines) ----

mod facts {
    use std::borrow::Cow;

    use swarmtop::pipeline::Pipeline;
    use swarmtop::router::{Class, Event, Role, Via};
    use swarmtop::wire::Origin;
    use swarmtop::wire::fact::{Fact, Lowered, Parentage, Spawn, Subject, ThreadFact, Weight};

    /// What a test sees of the events, in order.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Registered(String, String),
        Root(String),
        Line(Class, String),
    }

    struct Run {
        p: Pipeline,
        ids: Vec<String>,
        seen: Vec<Seen>,
    }

    impl Run {
        fn new() -> Self {
            Self { p: Pipeline::default(), ids: Vec::new(), seen: Vec::new() }
        }

        /// Routes one line stating `facts` about `subject`. (None of these lines waits in a pending
        /// buffer: a buffered line is replayed from its record, which these lines have not.)
        fn line(&mut self, subject: Subject<'_>, weight: Weight, facts: Vec<Fact<'_>>) {
            let mut record = Lowered { subject, weight, ..Lowered::default() };
            for f in facts {
                record.facts.push(f);
            }
            let (ids, seen) = (&mut self.ids, &mut self.seen);
            let mut sink = |e: &Event<'_, '_>| match e {
                Event::Seen { id, .. } => ids.push(id.to_string()),
                Event::Registered { child, parent, .. } => {
                    seen.push(Seen::Registered(ids[child.index()].clone(), ids[parent.index()].clone()));
                }
                Event::BecameRoot { thread } => seen.push(Seen::Root(ids[thread.index()].clone())),
                Event::Line(r) => {
                    let who = r.thread.map_or_else(String::new, |t| ids[t.index()].clone());
                    seen.push(Seen::Line(r.class, who));
                }
                _ => {}
            };
            self.p.feed_lowered(b"{}", &record, &Origin::NONE, &mut sink);
        }
    }

    fn thread<'a>(id: &'a str, parentage: Parentage<'a>) -> Fact<'a> {
        Fact::Thread(Box::new(ThreadFact::new(Cow::Borrowed(id), parentage)))
    }

    fn on(id: &str) -> Subject<'_> {
        Subject::Thread(Cow::Borrowed(id))
    }

    fn spawn<'a>(child: &'a str, card: &'a str) -> Fact<'a> {
        Fact::Spawn(Spawn {
            child: Cow::Borrowed(child),
            card: Some(Cow::Borrowed(card)),
            via: Via::CollabAgentToolCall,
        })
    }

    #[test]
    fn a_thread_placed_by_its_own_line_is_placed_before_it_and_a_spawn_after_it() {
        let mut r = Run::new();
        r.line(on("R"), Weight::Noise, vec![thread("R", Parentage::Root)]);
        r.line(on("R"), Weight::Output, vec![spawn("C", "card")]);
        let child = Parentage::Child { parent: Cow::Borrowed("C"), via: Via::ThreadStarted, card: None };
        r.line(on("G"), Weight::Noise, vec![thread("G", child)]);
        assert_eq!(
            r.seen,
            [
                Seen::Root("R".into()),
                Seen::Line(Class::Root, "R".into()),
                Seen::Line(Class::Root, "R".into()),
                Seen::Registered("C".into(), "R".into()),
                Seen::Registered("G".into(), "C".into()),
                Seen::Line(Class::Suppressed, "G".into()),
            ]
        );
        let g = r.p.model.thread(r.p.find("G").unwrap());
        assert_eq!(g.depth, 2);
        assert_eq!(r.p.router.session_of(r.p.find("G").unwrap()), r.p.find("R"));
    }

    #[test]
    fn a_childs_line_is_classed_by_its_weight_a_roots_is_not() {
        let mut r = Run::new();
        r.line(on("R"), Weight::Closing, vec![thread("R", Parentage::Root), spawn("C", "card")]);
        for w in [Weight::Output, Weight::Noise, Weight::Closing] {
            r.line(on("C"), w, vec![]);
        }
        let lines: Vec<&Seen> = r.seen.iter().filter(|s| matches!(s, Seen::Line(..))).collect();
        assert_eq!(
            lines,
            [
                &Seen::Line(Class::Root, "R".into()),
                &Seen::Line(Class::Rehomed, "C".into()),
                &Seen::Line(Class::Suppressed, "C".into()),
                &Seen::Line(Class::Suppressed, "C".into()),
            ]
        );
    }

    #[test]
    fn a_control_line_places_the_thread_it_describes_or_only_names_it() {
        let mut r = Run::new();
        r.line(Subject::Control, Weight::Output, vec![thread("R", Parentage::Root)]);
        r.line(Subject::Control, Weight::Output, vec![thread("unknown", Parentage::Unknown)]);
        assert_eq!(
            r.seen,
            [Seen::Root("R".into()), Seen::Line(Class::Control, "R".into()), Seen::Line(Class::Control, String::new())]
        );
        assert!(r.p.find("unknown").is_none(), "describing a thread never makes one");
        assert_eq!(r.p.model.thread(r.p.find("R").unwrap()).role, Role::Root);
    }

    #[test]
    fn a_second_signal_for_a_registered_child_only_fills_its_card() {
        let mut r = Run::new();
        r.line(on("R"), Weight::Output, vec![thread("R", Parentage::Root)]);
        r.line(on("P"), Weight::Output, vec![thread("P", Parentage::Root)]);
        let child = Parentage::Child { parent: Cow::Borrowed("R"), via: Via::ThreadStarted, card: None };
        r.line(on("C"), Weight::Noise, vec![thread("C", child)]);
        r.line(on("P"), Weight::Output, vec![spawn("C", "late-card")]);
        let c = r.p.model.thread(r.p.find("C").unwrap());
        assert_eq!(r.p.model.thread(c.parent.unwrap()).id.as_ref(), "R", "first signal wins");
        assert_eq!(c.card.as_deref(), Some("late-card"));
    }
}
