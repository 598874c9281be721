//! End-to-end with the real OpenCode CLI (`opencode-ai` 1.18.33, issue 12), offline against the
//! project's mock of the Chat Completions API (`support/chat_completions.rs`).
//!
//! One `opencode run`: the root starts three `task` children in parallel; `child_a` spawns a
//! grandchild (`subagent_depth: 2`), `child_c`'s requests all get HTTP 500 until OpenCode gives up.
//! While it runs, a follower of the store (snapshot, then the event log) must see each child
//! running; afterwards `swarmtop stats --json` on the data directory must give the tree, the
//! statuses, and per-session tokens and costs equal to what OpenCode itself recorded.
//!
//! A second test drives `opencode serve` through its API and reads its `/event` stream as a live
//! source: text deltas stream into the slow child's lane, the failing child shows as retrying and
//! then failed, an abort through the API interrupts the root and its running child, and the
//! tokens the stream gave equal what the server stored.
//!
//! A third runs twice in one home and kills the second run (SIGKILL) while its child streams: the
//! store read mid-run shows both running, read after the kill both interrupted, and a follower of
//! the store sees them interrupted once the writer is gone.
//!
//! Needs the binary: `scripts/setup-opencode.sh` installs it into `.cache/` (`SWARMTOP_OPENCODE_BIN`
//! overrides). Without it the test skips, loudly; with `CI` set it fails.

mod support;
#[path = "support/tmux.rs"]
mod tmux;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::chat_completions::{Call, MockChat, Reply, Request, Script, Usage};
use support::opencode::{
    PATIENCE, Server, VERSION, binary_or_skip, command as opencode_command, free_port, home as opencode_home, serve,
    wait_http,
};
use swarmtop::pipeline::Pipeline;
use swarmtop::source::files::{self, Record};
use swarmtop::source::opencode::{Follower, snapshot};
use swarmtop::wire::Origin;
use swarmtop::wire::fact::Status;

/// Deterministic usage per agent and step, different for every request.
fn usage(agent: &str, step: usize) -> Usage {
    let l = match agent {
        "root" => 1,
        "child_a" => 2,
        "child_b" => 3,
        "grand_a" => 4,
        _ => 9,
    };
    let step = step as u64;
    let reasoning = if agent == "root" && step > 0 { 5 } else { 0 };
    Usage {
        prompt: l * 1000 + step * 100 + 7,
        cached: l * 100 + step * 10,
        completion: l * 10 + step + 1 + reasoning,
        reasoning,
    }
}

fn task(id: &str, agent: &str, description: &str) -> Call {
    Call {
        id: id.to_owned(),
        name: "task".to_owned(),
        arguments: json!({
            "description": description,
            "prompt": format!("[[AGENT:{agent}]] List the files here with the bash tool (run `ls`) and report them in one line."),
            "subagent_type": "general",
        }),
    }
}

fn bash(id: &str) -> Call {
    Call {
        id: id.to_owned(),
        name: "bash".to_owned(),
        arguments: json!({"command": "ls", "description": "List files"}),
    }
}

struct Swarm;

impl Script for Swarm {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        // Children answer slowly enough that a follower polling the store sees each of them run.
        let delay = Duration::from_millis(if agent == "root" || agent == "title" { 20 } else { 250 });
        let stream = |text: &str, calls: Vec<Call>| Reply::Stream {
            text: text.to_owned(),
            calls,
            usage: usage(agent, step),
            pieces: 3,
            delay,
        };
        match (agent, step) {
            ("title", _) => stream("Mock session title", vec![]),
            ("root", 0) => stream(
                "Delegating to three sub-agents in parallel.",
                vec![
                    task("call_a", "child_a", "List files A"),
                    task("call_b", "child_b", "List files B"),
                    task("call_c", "child_c", "List files C"),
                ],
            ),
            ("root", _) => stream("All sub-agents reported. Done.", vec![]),
            ("child_a", 0) => stream("", vec![bash("call_a_bash")]),
            ("child_a", 1) if req.tools.iter().any(|t| t == "task") => {
                stream("Spawning a grandchild.", vec![task("call_a_g", "grand_a", "List files G")])
            }
            ("child_a", _) => stream("Sub-agent A: files listed.", vec![]),
            ("child_b", 0) => stream("", vec![bash("call_b_bash")]),
            ("child_b", _) => stream("Sub-agent B: files listed.", vec![]),
            ("grand_a", 0) => stream("", vec![bash("call_g_bash")]),
            ("grand_a", _) => stream("Grandchild: files listed.", vec![]),
            ("child_c", _) => Reply::Error { status: 500 },
            _ => stream("Unscripted.", vec![]),
        }
    }
}

#[derive(Debug)]
struct SessionRow {
    parent: Option<String>,
    title: String,
    cost: f64,
    input: u64,
    output: u64,
    reasoning: u64,
    cache_read: u64,
    cache_write: u64,
}

fn sessions(db: &Path) -> HashMap<String, SessionRow> {
    let conn = swarmtop::source::opencode::open(db).expect("open the store");
    let mut st = conn
        .prepare("SELECT id, parent_id, title, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write FROM session")
        .unwrap();
    st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            SessionRow {
                parent: r.get(1)?,
                title: r.get(2)?,
                cost: r.get(3)?,
                input: r.get(4)?,
                output: r.get(5)?,
                reasoning: r.get(6)?,
                cache_read: r.get(7)?,
                cache_write: r.get(8)?,
            },
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn feed(pipeline: &mut Pipeline, bytes: &[u8]) {
    files::read_records(bytes, files::MAX_LINE, |r: Record<'_>| {
        pipeline.feed(r, &Origin::NONE, &mut |_: &swarmtop::router::Event<'_, '_>| {});
    })
    .unwrap();
}

/// `stats --json`'s threads, one per session: its parent, tokens and cost as OpenCode stored them.
fn each_thread_is_its_session(threads: &HashMap<&str, &Value>, rows: &HashMap<String, SessionRow>) {
    for (id, row) in rows {
        let t = threads[id.as_str()];
        assert_eq!(t["parent"].as_str(), row.parent.as_deref(), "{id}: the parent is the session's parent_id");
        let tok = &t["tokens"];
        assert_eq!(tok["input"], row.input + row.cache_read + row.cache_write, "{id} input");
        assert_eq!(tok["cachedInput"], row.cache_read, "{id} cached");
        assert_eq!(tok["output"], row.output + row.reasoning, "{id} output");
        assert_eq!(tok["reasoningOutput"], row.reasoning, "{id} reasoning");
        if row.cost > 0.0 {
            let cost = t["costUsd"].as_f64().unwrap_or_else(|| panic!("{id}: no cost in {t}"));
            assert!((cost - row.cost).abs() < 1e-9, "{id}: cost {cost} vs OpenCode's {}", row.cost);
        }
    }
}

#[test]
fn a_real_opencode_run_from_the_store_and_while_it_runs() {
    let Some(bin) = binary_or_skip() else { return };
    let mock = MockChat::start(Swarm).unwrap();
    let dir = opencode_home(&mock);
    let root = dir.path();
    let data = root.join("home/.local/share/opencode");
    let db = data.join("opencode.db");

    let started = Instant::now();
    // Killed if the test fails before it ends; its stderr to a file, so a full pipe never stalls it.
    let mut child = Server(
        opencode_command(&bin, root)
            .args(["run", "--format", "json", "[[AGENT:root]] Delegate the listing."])
            .stdout(std::fs::File::create(root.join("run.ndjson")).unwrap())
            .stderr(std::fs::File::create(root.join("run.stderr")).unwrap())
            .spawn()
            .unwrap(),
    );

    // The follower: the store as it is once it exists, then its event log as OpenCode writes it.
    let mut pipeline = Pipeline::default();
    let mut follower: Option<Follower> = None;
    let mut seen_running: HashSet<String> = HashSet::new();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < PATIENCE, "opencode run took over {PATIENCE:?}");
        if follower.is_none() && db.exists() {
            if let Ok(snap) = snapshot(&db) {
                feed(&mut pipeline, &snap.records);
                follower = Follower::new(&db, snap.cursor).ok();
            }
        }
        if let Some(f) = &mut follower {
            let records = f.poll().unwrap();
            feed(&mut pipeline, &records);
            for (id, row) in sessions(&db) {
                let running = pipeline.find(&id).is_some_and(|t| pipeline.model.thread(t).status == Status::Running);
                if row.parent.is_some() && running {
                    seen_running.insert(row.title.clone());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(root.join("run.stderr")).unwrap_or_default();
    assert!(status.success(), "opencode run failed: {stderr}");
    eprintln!("opencode run took {:?}", started.elapsed());

    let rows = sessions(&db);
    let by_title: HashMap<&str, &str> = rows.iter().map(|(id, r)| (r.title.as_str(), id.as_str())).collect();
    let titles: HashSet<&str> = by_title.keys().copied().collect();
    for t in
        ["List files A (@general subagent)", "List files B (@general subagent)", "List files G (@general subagent)"]
    {
        assert!(titles.contains(t), "OpenCode recorded {titles:?}");
        assert!(seen_running.contains(t), "the follower saw {seen_running:?} running, not {t}");
    }
    // The failing child ran (retrying) too, but its retries take milliseconds: seen at all is enough.
    let c = by_title["List files C (@general subagent)"];
    assert!(pipeline.find(c).is_some(), "the follower saw the failing child");

    // The whole store, read afterwards, through the command line.
    let out =
        assert_cmd::Command::cargo_bin("swarmtop").unwrap().args(["stats", "--json"]).arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["input"]["format"], "opencode");
    assert_eq!(stats["routing"]["malformed"], 0);
    let threads: HashMap<&str, &Value> =
        stats["threads"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), t)).collect();
    assert_eq!(threads.len(), rows.len(), "one thread per session");
    each_thread_is_its_session(&threads, &rows);
    let status_of = |title: &str| threads[by_title[title]]["status"].as_str().unwrap().to_owned();
    let root_id = rows.iter().find(|(_, r)| r.parent.is_none()).map(|(id, _)| id.as_str()).unwrap();
    assert_eq!(threads[root_id]["status"], "idle");
    assert_eq!(threads[root_id]["subtree"]["threads"], 5);
    assert_eq!(status_of("List files A (@general subagent)"), "done");
    assert_eq!(status_of("List files B (@general subagent)"), "done");
    assert_eq!(status_of("List files G (@general subagent)"), "done");
    assert_eq!(status_of("List files C (@general subagent)"), "failed");
    let g = threads[by_title["List files G (@general subagent)"]];
    assert_eq!(g["parent"].as_str(), Some(by_title["List files A (@general subagent)"]), "the grandchild is A's");
    assert_eq!(g["depth"], 2);
    // What the same run printed (`--format json`: the root's own parts), through the command line: the
    // root's figures as the store has them, its children under their task cards.
    let out = assert_cmd::Command::cargo_bin("swarmtop")
        .unwrap()
        .args(["stats", "--json"])
        .arg(root.join("run.ndjson"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["input"]["format"], "opencode");
    assert_eq!(printed["routing"]["malformed"], 0, "every line of `opencode run --format json` read");
    let printed: HashMap<&str, &Value> =
        printed["threads"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), t)).collect();
    let (root_row, root_t) = (&rows[root_id], printed[root_id]);
    assert_eq!(root_t["tokens"]["input"], root_row.input + root_row.cache_read + root_row.cache_write);
    assert_eq!(root_t["tokens"]["output"], root_row.output + root_row.reasoning);
    let cost = root_t["costUsd"].as_f64().expect("the root's cost");
    assert!((cost - root_row.cost).abs() < 1e-9, "root cost {cost} vs OpenCode's {}", root_row.cost);
    for (id, row) in rows.iter().filter(|(_, r)| r.parent.as_deref() == Some(root_id)) {
        let t = printed.get(id.as_str()).unwrap_or_else(|| panic!("{}: not named by the run's output", row.title));
        assert_eq!(t["parent"].as_str(), Some(root_id), "{}: under the root", row.title);
        // Under its task card, ended as the call did (C failed): its own rows are not in the output.
        assert!(t["card"].is_string() && (t["status"] == "failed") == row.title.contains("files C"), "{t}");
    }

    // The failing child was asked 1 + 5 retries times, then given up.
    let failures = mock.served().iter().filter(|s| s.agent == "child_c" && s.status == 500).count();
    assert_eq!(failures, 6, "OpenCode retried the 500s five times");
}

/// The server scenario: the root starts a slow child and a failing one; the test aborts the root
/// through the API while the slow child streams.
struct Served;

impl Script for Served {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        let usage = usage(agent, step);
        let fast = |text: &str, calls| Reply::Stream {
            text: text.to_owned(),
            calls,
            usage,
            pieces: 3,
            delay: Duration::from_millis(10),
        };
        match (agent, step) {
            ("title", _) => fast("Mock session title", vec![]),
            ("root", 0) => fast(
                "Delegating a long task and a failing one.",
                vec![task("call_slow", "child_slow", "Long task"), task("call_fail", "child_fail", "Failing task")],
            ),
            ("root", _) => fast("Root finished.", vec![]),
            ("child_fail", _) => Reply::Error { status: 500 },
            // One word every 200 ms, for three minutes: aborted long before it ends, however slow
            // the machine.
            ("child_slow", _) => Reply::Stream {
                text: "word ".repeat(900),
                calls: vec![],
                usage,
                pieces: 900,
                delay: Duration::from_millis(200),
            },
            _ => fast("Unscripted.", vec![]),
        }
    }
}

fn http(authority: &str, method: &str, path: &str, body: &Value) -> (u16, String) {
    use std::io::{BufRead, Read, Write};
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    // A test fails rather than hangs on a server that never answers.
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let body = body.to_string();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // By its length: the server may keep the connection open whatever we ask.
    let mut r = std::io::BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut len = 0;
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_real_opencode_server_live_with_an_abort_through_its_api() {
    use std::io::Read;
    let Some(bin) = binary_or_skip() else { return };
    let mock = MockChat::start(Served).unwrap();
    let dir = opencode_home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let _server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let mut live = loop {
        match swarmtop::source::opencode::server_reader(&authority, swarmtop::source::opencode::Serve::All, |_| true) {
            Ok(r) => break r,
            Err(_) if started.elapsed() < PATIENCE => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("opencode serve never answered: {e}"),
        }
    };
    eprintln!("connected after {:?}", started.elapsed());
    let root_id = prompt_new_session(&authority, "[[AGENT:root]] Delegate.");

    // The live stream, record by record, on another thread; this one reads the model.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = live.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    let mut pipeline = Pipeline::default();
    let mut pending = Vec::new();
    let (mut saw_retry, mut streamed_while_running, mut aborted) = (false, 0usize, false);
    let find = by_nickname;
    let db = root.join("home/.local/share/opencode/opencode.db");
    // After the abort: the server idle, the root and its running child interrupted, and every
    // session's tokens in the stream as the server stored them (the asserts below say which failed).
    let settled = |p: &Pipeline| {
        let interrupted =
            |t: Option<swarmtop::router::ThreadIdx>| t.is_some_and(|t| p.model.thread(t).status == Status::Interrupted);
        interrupted(p.find(&root_id))
            && interrupted(find(p, "Long task"))
            && http(&authority, "GET", "/session/status", &json!({})).1.trim() == "{}"
            && sessions(&db).iter().all(|(id, r)| p.find(id).is_some_and(|t| tokens_as_stored(p.model.thread(t), r)))
    };
    loop {
        if started.elapsed() > PATIENCE {
            assert!(
                aborted,
                "no abort within {PATIENCE:?}: the failing child failed, the slow one streamed {streamed_while_running} words"
            );
            break;
        }
        let Ok(bytes) = rx.recv_timeout(Duration::from_millis(100)) else {
            if aborted && settled(&pipeline) {
                break;
            }
            continue;
        };
        pending.extend_from_slice(&bytes);
        let end = pending.iter().rposition(|&b| b == b'\n').map_or(0, |e| e + 1);
        let whole: Vec<u8> = pending.drain(..end).collect();
        for line in whole.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            feed(&mut pipeline, line);
            if let Some(f) = find(&pipeline, "Failing task") {
                saw_retry |= pipeline.model.thread(f).status == Status::Retrying;
            }
            if let Some(s) = find(&pipeline, "Long task") {
                let t = pipeline.model.thread(s);
                let text: usize = t.items.iter().map(|i| i.text.as_str().matches("word").count()).sum();
                if t.status == Status::Running {
                    streamed_while_running = streamed_while_running.max(text);
                }
            }
        }
        // The abort comes once the failing child has given up: on a loaded machine its retries can
        // outlast five words of the slow child, and an abort would cancel it rather than see it fail.
        let failed = find(&pipeline, "Failing task").is_some_and(|f| pipeline.model.thread(f).status == Status::Failed);
        if !aborted && streamed_while_running >= 5 && failed {
            let (code, body) = http(&authority, "POST", &format!("/session/{root_id}/abort"), &json!({}));
            assert_eq!(code, 200, "abort: {body}");
            aborted = true;
        }
    }
    assert!(saw_retry, "the failing child was shown retrying");
    assert!(streamed_while_running >= 5, "the slow child's text streamed into its lane as it ran");
    let status = |name: &str| pipeline.model.thread(find(&pipeline, name).expect(name)).status;
    let root_idx = pipeline.find(&root_id).expect("the root");
    assert_eq!(pipeline.model.thread(root_idx).status, Status::Interrupted, "aborted through the API");
    assert_eq!(status("Long task"), Status::Interrupted, "the abort cascades to the running child");
    assert_eq!(status("Failing task"), Status::Failed);
    let failing = pipeline.model.thread(find(&pipeline, "Failing task").unwrap());
    assert!(failing.last_error.as_ref().is_some_and(|e| e.as_str().contains("500")), "{:?}", failing.last_error);
    for name in ["Long task", "Failing task"] {
        let t = find(&pipeline, name).unwrap();
        assert_eq!(pipeline.model.thread(t).parent, Some(root_idx), "{name} is the root's child");
    }

    // What the stream showed is what the server stored.
    for (id, row) in sessions(&db) {
        let t =
            pipeline.model.thread(pipeline.find(&id).unwrap_or_else(|| panic!("{id} ({}) not seen live", row.title)));
        assert!(tokens_as_stored(t, &row), "{}: {:?} vs {row:?}", row.title, t.tokens);
    }
    let _ = mock.served();
}

/// A new session on the server, prompted with `text` without waiting for the answer: its id.
fn prompt_new_session(authority: &str, text: &str) -> String {
    let (code, body) = http(authority, "POST", "/session", &json!({}));
    assert_eq!(code, 200, "{body}");
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": text}]});
    let (code, body) = http(authority, "POST", &format!("/session/{id}/prompt_async"), &prompt);
    assert!((200..300).contains(&code), "{code} {body}");
    id
}

/// The thread a session's title names (OpenCode's nickname for it).
fn by_nickname(p: &Pipeline, name: &str) -> Option<swarmtop::router::ThreadIdx> {
    (0..p.router.registry().len() as u32)
        .map(swarmtop::router::ThreadIdx)
        .find(|&t| p.model.thread(t).nickname.as_ref().is_some_and(|n| n.as_str() == name))
}

/// A thread's tokens as OpenCode stored its session's: input with cache reads and writes, output
/// with reasoning.
fn tokens_as_stored(t: &swarmtop::model::Thread, r: &SessionRow) -> bool {
    t.tokens.input == r.input + r.cache_read + r.cache_write && t.tokens.output == r.output + r.reasoning
}

/// Discovery: a root with one quick child, and (on the server) a root with a slow child that
/// streams until the test has seen it live ([`Found::seen`]).
struct Found {
    /// Set by the test once it has seen what it needs while the served session runs; until then
    /// the slow child streams a word every 100 ms (at most [`PATIENCE`]).
    seen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Script for Found {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        let usage = usage(agent, step);
        let fast = |text: &str, calls| Reply::Stream {
            text: text.to_owned(),
            calls,
            usage,
            pieces: 3,
            delay: Duration::from_millis(10),
        };
        match (agent, step) {
            ("title", _) => fast("Mock session title", vec![]),
            ("root", 0) => fast("Delegating.", vec![task("call_q", "child_a", "Quick task")]),
            ("root", _) => fast("Done.", vec![]),
            ("child_a", 0) => fast("", vec![bash("call_q_bash")]),
            ("child_a", _) => fast("Quick child done.", vec![]),
            ("served", 0) => fast("Delegating a long task.", vec![task("call_s", "child_slow", "Long task")]),
            ("served", _) => fast("Served root done.", vec![]),
            // Long enough to be seen live, however slow the machine.
            ("child_slow", _) => {
                Reply::Until { gate: self.seen.clone(), every: Duration::from_millis(100), max: PATIENCE, usage }
            }
            _ => fast("Unscripted.", vec![]),
        }
    }
}

/// `swarmtop ps --json` as it runs in that home (its other agents' places are empty there).
fn ps_rows(root: &Path) -> Vec<Value> {
    let home = root.join("home");
    let out = assert_cmd::Command::cargo_bin("swarmtop")
        .unwrap()
        .args(["ps", "--json", "--all"])
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", root.join("run"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.into_iter().filter(|r| r["tool"] == "opencode").collect()
}

/// The figures OpenCode recorded for a root and everything under it.
fn subtree_figures(rows: &HashMap<String, SessionRow>, root: &str) -> (usize, u64, f64) {
    let mut stack = vec![root.to_owned()];
    let (mut n, mut tokens, mut cost) = (0, 0, 0.0);
    while let Some(id) = stack.pop() {
        let r = &rows[&id];
        n += 1;
        tokens += r.input + r.cache_read + r.cache_write + r.output + r.reasoning;
        cost += r.cost;
        stack.extend(rows.iter().filter(|(_, c)| c.parent.as_deref() == Some(id.as_str())).map(|(k, _)| k.clone()));
    }
    (n, tokens, cost)
}

/// Every session of the store in the pipeline with exactly OpenCode's tokens.
fn counted_once(p: &Pipeline, db: &Path) -> bool {
    let rows = sessions(db);
    rows.len() == 4
        && rows.iter().all(|(id, r)| {
            p.find(id).is_some_and(|t| {
                let t = p.model.thread(t);
                t.tokens.input == r.input + r.cache_read + r.cache_write && t.tokens.output == r.output + r.reasoning
            })
        })
}

/// A finished `opencode run`: one root session, listed once by `ps`, with OpenCode's own figures.
fn a_finished_run_is_listed_once(bin: &Path, root: &Path, db: &Path) {
    let out = opencode_command(bin, root).args(["run", "--format", "json", "Delegate."]).output().unwrap();
    assert!(out.status.success(), "opencode run: {}", String::from_utf8_lossy(&out.stderr));
    let rows = sessions(db);
    let run_root = rows.iter().find(|(_, r)| r.parent.is_none()).map(|(id, _)| id.clone()).unwrap();
    let listed = ps_rows(root);
    assert_eq!(listed.len(), 1, "one row per root session: {listed:?}");
    let row = &listed[0];
    let (agents, tokens, cost) = subtree_figures(&rows, &run_root);
    assert_eq!(row["id"], run_root.as_str());
    assert_eq!(row["agents"], agents, "the root and its child");
    assert_eq!(agents, 2);
    assert_eq!(row["tokens"], tokens, "tokens as OpenCode recorded them");
    let listed_cost = row["costUsd"].as_f64().expect("a cost");
    assert!((listed_cost - cost).abs() < 1e-9, "cost {listed_cost} vs OpenCode's {cost}");
    assert_eq!(row["project"].as_str(), Some(root.join("work").to_str().unwrap()));
    assert_eq!(row["source"].as_str(), Some(db.to_str().unwrap()));
    assert_ne!(row["state"], "live", "its process is gone");
    assert!(row["pid"].is_null());
}

/// The machine view in a real terminal shows the finished run and its child.
fn the_machine_view_shows_it(root: &Path) {
    let home = root.join("home");
    let command = format!(
        "env -u CLAUDE_CONFIG_DIR -u CODEX_HOME HOME='{}' XDG_DATA_HOME='{}' XDG_STATE_HOME='{}' XDG_RUNTIME_DIR='{}' '{}'; sleep 60",
        home.display(),
        home.join(".local/share").display(),
        home.join(".local/state").display(),
        root.join("run").display(),
        env!("CARGO_BIN_EXE_swarmtop"),
    );
    if let Some(tmux) = tmux::Tmux::start("opencode-machine", 160, 45, &command) {
        tmux.wait_for("the OpenCode session and its child", |s| {
            s.contains("1 session") && s.contains("Mock session title") && s.contains("Quick task")
        });
    }
}

#[test]
fn ps_and_the_machine_view_find_a_real_opencode_store_and_its_server() {
    let Some(bin) = binary_or_skip() else { return };
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mock = MockChat::start(Found { seen: seen.clone() }).unwrap();
    let dir = opencode_home(&mock);
    let root = dir.path();
    let data = root.join("home/.local/share/opencode");
    let db = data.join("opencode.db");

    a_finished_run_is_listed_once(&bin, root, &db);
    the_machine_view_shows_it(root);
    let home = root.join("home");

    // A running `opencode serve` on the same store: found from /proc, its session live with its pid.
    let port = free_port().to_string();
    let server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    wait_http(&authority);
    let proc = swarmtop::source::proc::Proc::default();
    let env =
        swarmtop::source::agents::Env::default().with("HOME", &home).with("XDG_DATA_HOME", home.join(".local/share"));
    let opts = swarmtop::source::census::Options {
        window: swarmtop::source::agents::Window::all(),
        env,
        proc: proc.clone(),
        tee_dir: root.join("run/swarmtop"),
    };
    let mut wants = swarmtop::source::census::Wants::default();
    wants.store(swarmtop::source::proc::canonical(&db), &swarmtop::source::agents::opencode::AGENT);
    let found = swarmtop::source::census::Census::take(&opts, &wants).servers();
    assert_eq!(found.len(), 1, "the server, found from its listening socket: {found:?}");
    assert_eq!(found[0].1.pid, server.0.id());
    assert_eq!(found[0].1.authority, authority);

    // The machine view's source, attached before the prompt: rows from the store, deltas from the server.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (code, body) = http(&authority, "POST", "/session", &json!({}));
    assert_eq!(code, 200, "{body}");
    let served_root = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_owned();
    let mut pipeline = Pipeline::default();
    let (mut live_pid, mut deltas_seen, mut ps_live) = (None, 0usize, None);
    rt.block_on(async {
        let mut events = swarmtop::source::census::machine::spawn(opts);
        let prompt = json!({"parts": [{"type": "text", "text": "[[AGENT:served]] Delegate."}]});
        let (code, body) = http(&authority, "POST", &format!("/session/{served_root}/prompt_async"), &prompt);
        assert!((200..300).contains(&code), "{code} {body}");
        let started = Instant::now();
        let mut origin = Origin::NONE;
        loop {
            assert!(started.elapsed() < PATIENCE, "the served session never finished within {PATIENCE:?}");
            let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(200), events.recv()).await else {
                let idle = http(&authority, "GET", "/session/status", &json!({})).1.trim() == "{}";
                if live_pid.is_some() && idle && counted_once(&pipeline, &db) {
                    break;
                }
                continue;
            };
            match event {
                swarmtop::source::live::Event::Origin(o) => origin = o,
                swarmtop::source::live::Event::Records(r) => {
                    for line in r.iter() {
                        deltas_seen += usize::from(memchr::memmem::find(line, b"message.part.delta").is_some());
                    }
                    files::read_records(r.as_bytes(), files::MAX_LINE, |rec| {
                        pipeline.feed(rec, &origin, &mut |_: &swarmtop::router::Event<'_, '_>| {});
                    })
                    .unwrap();
                }
                swarmtop::source::live::Event::Sessions(snap) => {
                    let ours: Vec<_> = snap.sessions.iter().filter(|s| s.tool == "opencode").collect();
                    let served = ours.iter().find(|s| s.id == served_root);
                    if let Some(s) = served.filter(|s| s.state == swarmtop::source::seen::State::Live) {
                        live_pid = s.pid;
                        if ps_live.is_none() {
                            ps_live = ps_rows(root).into_iter().find(|r| r["id"] == served_root.as_str());
                        }
                    }
                    assert!(ours.iter().filter(|s| s.id == served_root).count() <= 1, "one row per session");
                }
                _ => {}
            }
            // All that is looked for while it runs was seen: the slow child may finish.
            if live_pid.is_some() && ps_live.is_some() && deltas_seen > 0 {
                seen.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    assert_eq!(live_pid, Some(server.0.id()), "the served session is live, with the server's pid");
    let ps_live = ps_live.expect("ps saw the served session while it ran");
    assert_eq!(ps_live["state"], "live");
    assert_eq!(ps_live["pid"], server.0.id());
    assert!(deltas_seen > 0, "the server's text deltas streamed into the machine view");
    // Store and stream, one session each, counted once: every session's tokens are OpenCode's.
    assert!(counted_once(&pipeline, &db));
    assert_eq!(sessions(&db).len(), 4, "two roots, a child each");
    drop(server);
}

/// Reconnecting: a root that streams for a while; the server is killed mid-stream and started
/// again on the same port and store.
struct Restarted;

impl Script for Restarted {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        let usage = usage(agent, step);
        match agent {
            "title" => Reply::Stream { text: "Title".into(), calls: vec![], usage, pieces: 1, delay: Duration::ZERO },
            "slow" => Reply::Stream {
                text: "word ".repeat(100),
                calls: vec![],
                usage,
                pieces: 100,
                delay: Duration::from_millis(100),
            },
            "root" if step == 0 => Reply::Stream {
                text: "Delegating after the restart.".into(),
                calls: vec![task("call_r", "child_a", "After restart")],
                usage,
                pieces: 3,
                delay: Duration::from_millis(10),
            },
            _ => Reply::Stream {
                text: "Quick answer after the restart.".into(),
                calls: vec![],
                usage,
                pieces: 3,
                delay: Duration::from_millis(10),
            },
        }
    }
}

#[test]
fn a_live_server_stream_survives_a_restart_of_the_server() {
    let Some(bin) = binary_or_skip() else { return };
    let mock = MockChat::start(Restarted).unwrap();
    let dir = opencode_home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let authority = format!("127.0.0.1:{port}");
    let start = || serve(&bin, root, &port);
    let mut server = start();
    wait_http(&authority);
    // The monitor's screen in a real terminal, beside the library's reader.
    let tmux = tmux::Tmux::start(
        "opencode-reconnect",
        160,
        45,
        &format!("'{}' http://{authority}; sleep 60", env!("CARGO_BIN_EXE_swarmtop")),
    );
    let links = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = links.clone();
    let mut live =
        swarmtop::source::opencode::server_reader(&authority, swarmtop::source::opencode::Serve::All, move |l| {
            seen.lock().unwrap().push(l);
            true
        })
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = live.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                return;
            }
        }
    });
    let mut pipeline = Pipeline::default();
    let mut pending = Vec::new();
    let mut pump = |pipeline: &mut Pipeline, until: &dyn Fn(&Pipeline) -> bool, what: &str| {
        let started = Instant::now();
        while !until(pipeline) {
            assert!(started.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
            let Ok(bytes) = rx.recv_timeout(Duration::from_millis(100)) else { continue };
            pending.extend_from_slice(&bytes);
            let end = pending.iter().rposition(|&b| b == b'\n').map_or(0, |e| e + 1);
            let whole: Vec<u8> = pending.drain(..end).collect();
            feed(pipeline, &whole);
        }
    };

    // A session that streams; the server dies under it.
    let (_, body) = http(&authority, "POST", "/session", &json!({}));
    let first = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "[[AGENT:slow]] Talk."}]});
    http(&authority, "POST", &format!("/session/{first}/prompt_async"), &prompt);
    let words = |p: &Pipeline, id: &str| {
        p.find(id).map_or(0, |t| p.model.thread(t).items.iter().map(|i| i.text.as_str().matches("word").count()).sum())
    };
    pump(&mut pipeline, &|p| words(p, &first) >= 5, "the first session's text");
    drop(server);
    if let Some(t) = &tmux {
        t.wait_for("the status saying the link is down", |s| s.contains("disconnected"));
    }
    // The reader, too, has seen the stream break before the server is back.
    let lost = |links: &[swarmtop::source::opencode::Link]| {
        links.iter().any(|l| matches!(l, swarmtop::source::opencode::Link::Lost { .. }))
    };
    let started = Instant::now();
    while !lost(&links.lock().unwrap()) {
        assert!(started.elapsed() < PATIENCE, "the reader never saw the stream break");
        std::thread::sleep(Duration::from_millis(50));
    }
    server = start();
    wait_http(&authority);
    pump(
        &mut pipeline,
        &|_| links.lock().unwrap().iter().any(|l| matches!(l, swarmtop::source::opencode::Link::Restored { .. })),
        "the reconnect",
    );

    // Another session on the restarted server, then everything settles.
    let (_, body) = http(&authority, "POST", "/session", &json!({}));
    let second = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "[[AGENT:root]] Again."}]});
    http(&authority, "POST", &format!("/session/{second}/prompt_async"), &prompt);
    let db = root.join("home/.local/share/opencode/opencode.db");
    let settled = |p: &Pipeline| {
        let rows = sessions(&db);
        rows.len() == 3
            && http(&authority, "GET", "/session/status", &json!({})).1.trim() == "{}"
            && rows.iter().all(|(id, r)| {
                p.find(id).is_some_and(|t| {
                    let t = p.model.thread(t);
                    t.tokens.input == r.input + r.cache_read + r.cache_write
                        && t.tokens.output == r.output + r.reasoning
                })
            })
    };
    pump(&mut pipeline, &settled, "tokens equal to OpenCode's rows after the reconnect");
    if let Some(t) = &tmux {
        t.wait_for("the notice that it reconnected", |s| s.contains("reconnected after"));
        t.wait_for("the session after the restart", |s| s.contains("After restart"));
    }
    drop(server);
}

/// Two runs in one home, the second killed: a quick answer, then a root whose child streams for
/// three minutes.
struct Killed;

impl Script for Killed {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        let fast = |text: &str, calls| Reply::Stream {
            text: text.to_owned(),
            calls,
            usage: usage(agent, step),
            pieces: 3,
            delay: Duration::from_millis(10),
        };
        match (agent, step) {
            ("title", _) => fast("Mock session title", vec![]),
            ("quick", _) => fast("Nothing to delegate.", vec![]),
            ("root", 0) => fast("Delegating a long task.", vec![task("call_slow", "child_slow", "Long task")]),
            ("root", _) => fast("Root finished.", vec![]),
            // Killed long before its three minutes end, however slow the machine.
            ("child_slow", _) => Reply::Stream {
                text: "word ".repeat(900),
                calls: vec![],
                usage: usage(agent, step),
                pieces: 900,
                delay: Duration::from_millis(200),
            },
            _ => fast("Unscripted.", vec![]),
        }
    }
}

/// The store read whole, as `swarmtop stats` and the machine view read it: each session's status.
fn statuses(db: &Path) -> HashMap<String, Status> {
    let mut p = Pipeline::default();
    feed(&mut p, &snapshot(db).unwrap().records);
    sessions(db).into_keys().filter_map(|id| Some((id.clone(), p.model.thread(p.find(&id)?).status))).collect()
}

/// OpenCode's lock (`locks/<sha>.lock/meta.json`) is its plugin install's, written late in a run and
/// left naming a process long gone: a second run in the same home must not read as dead while it
/// runs (it read as interrupted from its first row on), and once killed (SIGKILL: nothing written)
/// it and its running child must read as interrupted, not running for ever.
/// Read whole, a session spans its own times: its row (its last update) is read before its
/// messages, and the first line read made its start (every agent read from a store ran 0:00).
/// It starts by its first message, however long after the session's creation a loaded machine
/// wrote that.
fn a_whole_read_spans_the_session_s_own_times(db: &Path, id: &str) {
    let (created, updated, first_message): (i64, i64, i64) = swarmtop::source::opencode::open(db)
        .unwrap()
        .query_row("SELECT time_created, time_updated, (SELECT MIN(time_created) FROM message) FROM session", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let mut whole = Pipeline::default();
    feed(&mut whole, &snapshot(db).unwrap().records);
    let t = whole.model.thread(whole.find(id).unwrap());
    let (first, last) = (t.first_ms.unwrap(), t.last_ms.unwrap());
    assert!(
        created <= first && first <= first_message && first < updated,
        "starts at {first}: created {created}, first message {first_message}, updated {updated}"
    );
    assert!(last >= updated, "ends at {last}, updated {updated}");
}

/// The pids OpenCode's locks name.
fn lock_pids(locks: &Path) -> Vec<i64> {
    std::fs::read_dir(locks)
        .map(|d| d.flatten().collect::<Vec<_>>())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| std::fs::read_to_string(e.path().join("meta.json")).ok())
        .filter_map(|t| serde_json::from_str::<Value>(&t).ok()?["pid"].as_i64())
        .collect()
}

/// The id of the first session row `wanted` picks, once the store has one.
fn row_once(db: &Path, what: &str, wanted: impl Fn(&String, &SessionRow) -> bool) -> String {
    let started = Instant::now();
    loop {
        if let Some((id, _)) = sessions(db).iter().find(|(id, r)| wanted(id, r)) {
            return id.clone();
        }
        assert!(started.elapsed() < PATIENCE, "{what} never had a row");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_after_another_is_alive_until_killed_whatever_the_lock_says() {
    let Some(bin) = binary_or_skip() else { return };
    let mock = MockChat::start(Killed).unwrap();
    let dir = opencode_home(&mock);
    let root = dir.path();
    let db = root.join("home/.local/share/opencode/opencode.db");

    let first = opencode_command(&bin, root)
        .args(["run", "--format", "json", "[[AGENT:quick]] Say hello."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(first.success());
    let quick: Vec<String> = sessions(&db).into_keys().collect();
    assert_eq!(quick.len(), 1);
    a_whole_read_spans_the_session_s_own_times(&db, &quick[0]);
    // The precondition of the regression: a lock left behind that names a dead process.
    let locks = root.join("home/.local/state/opencode/locks");
    assert!(!lock_pids(&locks).is_empty(), "OpenCode {VERSION} leaves its lock behind in {}", locks.display());

    let second = opencode_command(&bin, root)
        .args(["run", "--format", "json", "[[AGENT:root]] Delegate the long task."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut second = Server(second);
    let started = Instant::now();
    let child = row_once(&db, "the child session", |_, r| r.title.starts_with("Long task"));
    // Read whole while it runs: never interrupted (the regression read it so from its first row
    // on), running once the child's first step has begun (on a loaded machine that can take a while).
    let running_root = row_once(&db, "the running root", |id, r| r.parent.is_none() && !quick.contains(id));
    let live = loop {
        let live = statuses(&db);
        let (r, c) = (live.get(&running_root).copied(), live.get(&child).copied());
        assert_ne!(r, Some(Status::Interrupted), "the running root, read while it runs: {live:?}");
        assert_ne!(c, Some(Status::Interrupted), "its child, read while it runs: {live:?}");
        if r == Some(Status::Running) && c == Some(Status::Running) {
            break live;
        }
        assert!(started.elapsed() < PATIENCE, "never both running: {live:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let lock_now: Vec<String> = std::fs::read_dir(&locks)
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("meta.json")).ok())
        .collect();
    eprintln!("locks while the second run runs (pid {}): {lock_now:?}", second.0.id());
    assert_eq!(live[&quick[0]], Status::Idle, "the first run's session finished");

    // Followed as `swarmtop opencode.db` follows it: the store, then its event log.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let followed = db.clone();
    std::thread::spawn(move || swarmtop::source::opencode::follow(&followed, |records| tx.send(records).is_ok()));
    let mut following = Pipeline::default();
    let status_in = |p: &Pipeline, id: &str| p.find(id).map(|t| p.model.thread(t).status);
    let until = |p: &mut Pipeline, what: &str, done: &dyn Fn(&Pipeline) -> bool| {
        let started = Instant::now();
        while !done(p) {
            assert!(started.elapsed() < PATIENCE, "the follower never saw {what}");
            if let Ok(records) = rx.recv_timeout(Duration::from_millis(200)) {
                feed(p, &records);
            }
        }
    };
    until(&mut following, "the child running", &|p| status_in(p, &child) == Some(Status::Running));

    second.0.kill().unwrap();
    second.0.wait().unwrap();
    // Nothing more is written: the follower learns it from the writer's end, within a look.
    until(&mut following, "the killed run interrupted", &|p| {
        status_in(p, &running_root) == Some(Status::Interrupted) && status_in(p, &child) == Some(Status::Interrupted)
    });
    assert_eq!(status_in(&following, &quick[0]), Some(Status::Idle), "the finished session stays finished");
    let dead = statuses(&db);
    assert_eq!(dead[&running_root], Status::Interrupted, "killed: {dead:?}");
    assert_eq!(dead[&child], Status::Interrupted, "killed with its parent: {dead:?}");
    assert_eq!(dead[&quick[0]], Status::Idle, "a finished session stays finished");
    let mut p = Pipeline::default();
    feed(&mut p, &snapshot(&db).unwrap().records);
    for id in [&running_root, &child] {
        let t = p.model.thread(p.find(id).unwrap());
        let turns: Vec<_> = t.turns.iter().map(|u| u.status).collect();
        assert!(!turns.is_empty() && !turns.contains(&swarmtop::model::TurnStatus::InProgress), "{id}: {turns:?}");
    }
}
