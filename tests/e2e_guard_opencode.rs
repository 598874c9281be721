//! `swarmtop guard --server URL --max-children N` and `--max-cost USD` with the real OpenCode 1.18.33
//! under `opencode serve`, offline against the mock of the Chat Completions API
//! (`support/chat_completions.rs`). (`--max-depth` is `tests/e2e_interrupt.rs`,
//! `the_guard_aborts_an_opencode_grandchild_past_max_depth`.)
//!
//! ```text
//! fan-out   root spawns first, second, third, one per step   ← --max-children 2: third aborted
//! spend     root spawns spender, whose first step is dear    ← --max-cost 0.02: spender aborted
//! ```
//!
//! Checked for each: the session past the limit ends `MessageAbortedError` by OpenCode's own account
//! (its API), the others and the root go on and finish; the guard says why; the act is in the acts
//! log and in the run store (as the guard's, under the root session); `tree` on OpenCode's store
//! says why that session stopped.
//!
//! Needs the OpenCode binary: `scripts/setup-opencode.sh`. Skips, loudly, without it; fails in CI.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::chat_completions::{Call, MockChat, Reply, Request, Script, Usage};
use support::opencode::{binary_or_skip, free_port, get_json, home, post_json, serve, wait_http};

const SWARMTOP: &str = env!("CARGO_BIN_EXE_swarmtop");

fn task(id: &str, agent: &str, description: &str) -> Call {
    let prompt = format!("[[AGENT:{agent}]] Do the part you are given.");
    let arguments = json!({"description": description, "prompt": prompt, "subagent_type": "general"});
    Call { id: id.into(), name: "task".into(), arguments }
}

fn fast(text: &str, calls: Vec<Call>, usage: Usage) -> Reply {
    Reply::Stream { text: text.to_owned(), calls, usage, pieces: 3, delay: Duration::from_millis(10) }
}

/// 300 words, one every 200 ms: an agent that runs for as long as the guard needs to catch it.
fn slow(usage: Usage) -> Reply {
    Reply::Stream { text: "word ".repeat(300), calls: vec![], usage, pieces: 300, delay: Duration::from_millis(200) }
}

const CHEAP: Usage = Usage { prompt: 1000, cached: 0, completion: 20, reasoning: 0 };

/// The root spawns three children, one a step; the third answers slowly.
struct FanOut;

impl Script for FanOut {
    fn reply(&self, req: &Request<'_>) -> Reply {
        match (req.agent.as_str(), req.step) {
            ("root", 0) => fast("First.", vec![task("call_1", "first", "First task")], CHEAP),
            ("root", 1) => fast("Second.", vec![task("call_2", "second", "Second task")], CHEAP),
            ("root", 2) => fast("Third.", vec![task("call_3", "third", "Third task")], CHEAP),
            ("root", _) => fast("Root finished.", vec![], CHEAP),
            ("third", _) => slow(CHEAP),
            _ => fast("Done.", vec![], CHEAP),
        }
    }
}

/// The root spawns a spender whose first step costs $0.03 (10,000 prompt tokens at $3/M) and runs
/// a command; its next step answers slowly.
struct Spender;

impl Script for Spender {
    fn reply(&self, req: &Request<'_>) -> Reply {
        let dear = Usage { prompt: 10_000, ..CHEAP };
        let echo = Call {
            id: "call_echo".into(),
            name: "bash".into(),
            arguments: json!({"command": "echo spent", "description": "Echo"}),
        };
        match (req.agent.as_str(), req.step) {
            ("root", 0) => fast("Delegating.", vec![task("call_spend", "spender", "Spend task")], CHEAP),
            ("root", _) => fast("Root finished.", vec![], CHEAP),
            ("spender", 0) => fast("Spending.", vec![echo], dear),
            ("spender", _) => slow(CHEAP),
            _ => fast("Side answer.", vec![], CHEAP),
        }
    }
}

/// A process killed when the test ends, however it ends.
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What a guarded run left: the sessions by OpenCode's account, what the guard said, and where
/// swarmtop kept its state.
struct Guarded {
    /// Every session the server has, and its last assistant message.
    sessions: Vec<(Value, Option<Value>)>,
    root: String,
    said: String,
    home: PathBuf,
    store: PathBuf,
    mock: MockChat,
    /// OpenCode's home, kept until the checks are done.
    _dir: tempfile::TempDir,
}

impl Guarded {
    fn titled(&self, description: &str) -> &(Value, Option<Value>) {
        let title = |s: &Value| s["title"].as_str().is_some_and(|t| t.starts_with(description));
        self.sessions.iter().find(|(s, _)| title(s)).unwrap_or_else(|| panic!("no session {description}"))
    }

    fn id(&self, description: &str) -> String {
        self.titled(description).0["id"].as_str().expect("an id").to_owned()
    }

    fn error(&self, description: &str) -> Option<String> {
        let last = self.titled(description).1.as_ref()?;
        last["info"]["error"]["name"].as_str().map(str::to_owned)
    }
}

/// `opencode serve` with `swarmtop guard --server URL ARGS` watching it, one prompt to a new root
/// session, until the root has finished (past its first step, no longer busy).
fn guarded(script: impl Script, args: &[&str]) -> Option<Guarded> {
    let bin = binary_or_skip()?;
    let mock = MockChat::start(script).expect("mock");
    let dir = home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let _server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    wait_http(&authority);
    let base = format!("http://{authority}");
    let home_dir = root.join("home");
    let guard = Command::new(SWARMTOP)
        .args(["guard", "--server", &base])
        .args(args)
        .env("HOME", &home_dir)
        .env("XDG_DATA_HOME", home_dir.join(".local/share"))
        .env("XDG_STATE_HOME", home_dir.join(".local/state"))
        .env_remove("SWARMTOP_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("swarmtop guard --server");
    let mut guard = KillOnDrop(Some(guard));
    // The guard is connected once the server has a subscriber; a moment is enough on an empty server.
    std::thread::sleep(Duration::from_millis(1500));
    let http = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(15))).build().new_agent();
    let session = post_json(&http, &format!("{base}/session"), &json!({}))["id"].as_str().expect("an id").to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "Delegate."}]});
    post_json(&http, &format!("{base}/session/{session}/prompt_async"), &prompt);
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < support::opencode::PATIENCE, "the root never finished");
        let busy = get_json(&http, &format!("{base}/session/status"));
        if mock.served().iter().any(|s| s.agent == "root" && s.step > 0) && busy.get(&session).is_none() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let last_assistant = |id: &str| {
        let messages = get_json(&http, &format!("{base}/session/{id}/message"));
        messages.as_array().into_iter().flatten().rev().find(|m| m["info"]["role"] == "assistant").cloned()
    };
    let listed = get_json(&http, &format!("{base}/session"));
    let sessions = listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s.clone(), last_assistant(s["id"].as_str().unwrap_or_default())))
        .collect();
    let mut guard = guard.0.take().expect("the guard");
    let _ = guard.kill();
    let out = guard.wait_with_output().expect("the guard's output");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let store = home_dir.join(".local/share/opencode/opencode.db");
    Some(Guarded { sessions, root: session, said, home: home_dir, store, mock, _dir: dir })
}

/// The guard stopped `target` alone, for `reason` (a prefix): it said so, logged it, kept it in the run
/// store under the root session, and `tree` on the store says so.
fn stopped_alone(run: &Guarded, target: &str, reason: &str) {
    let line = run.said.lines().find(|l| l.contains(target)).unwrap_or_else(|| panic!("the guard said: {}", run.said));
    assert!(line.starts_with(&format!("stopped by guard: {reason}")) && line.ends_with(": aborted"), "{line}");
    assert_eq!(run.said.lines().filter(|l| l.starts_with("stopped by")).count(), 1, "{}", run.said);

    let log = std::fs::read_to_string(run.home.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    let acts: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(acts.len(), 1, "{log}");
    assert_eq!((acts[0]["by"].as_str(), acts[0]["target"].as_str()), (Some("guard"), Some(target)));
    assert!(acts[0]["reason"].as_str().is_some_and(|r| r.starts_with(reason)), "{log}");

    let kept = swarmtop::store::Store::open(&run.home.join(".local/share/swarmtop/history.db")).expect("the run store");
    let rows = kept.backend().acts(&run.root).expect("the root's acts");
    let seen: Vec<(&str, &str, &str)> =
        rows.iter().map(|a| (a.by.as_str(), a.target.as_str(), a.outcome.as_str())).collect();
    assert_eq!(seen, [("guard", target, "aborted")]);
    assert!(rows[0].detail.contains(reason), "{}", rows[0].detail);

    let tree = swarmtop_out(&run.home, &["tree"], &run.store);
    let stopped: Vec<&str> = tree.lines().filter(|l| l.contains("stopped by")).collect();
    assert_eq!(stopped.len(), 1, "{tree}");
    assert!(stopped[0].contains(&format!("stopped by guard: {reason}")), "{tree}");
}

fn swarmtop_out(home: &Path, args: &[&str], input: &Path) -> String {
    let out = Command::new(SWARMTOP)
        .args(args)
        .arg(input)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .output()
        .expect("swarmtop");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `--max-children 2`: the root's third child is aborted as soon as it runs; the first two finished
/// by themselves, and the root goes on to its end.
#[test]
fn the_guard_aborts_an_opencode_child_past_max_children() {
    let Some(run) = guarded(FanOut, &["--max-children", "2"]) else { return };
    assert_eq!(run.error("Third task").as_deref(), Some("MessageAbortedError"));
    assert_eq!((run.error("First task"), run.error("Second task")), (None, None), "the first two finished");
    assert_eq!(run.titled_root_error(), None, "the root went on");
    assert!(run.mock.served().iter().filter(|s| s.agent == "third").count() <= 1, "stopped on its first step");
    stopped_alone(&run, &run.id("Third task"), "children 3 > 2");
}

/// `--max-cost 0.02`: once the spender's first step has cost $0.03, it is aborted while its next step
/// runs; the root goes on to its end.
#[test]
fn the_guard_aborts_an_opencode_child_past_max_cost() {
    let Some(run) = guarded(Spender, &["--max-cost", "0.02"]) else { return };
    assert_eq!(run.error("Spend task").as_deref(), Some("MessageAbortedError"));
    assert_eq!(run.titled_root_error(), None, "the root went on");
    let slow_steps = run.mock.served().iter().filter(|s| s.agent == "spender" && s.step > 0).count();
    assert!(slow_steps <= 1, "stopped on its second step");
    stopped_alone(&run, &run.id("Spend task"), "spend $0.0");
    let log = std::fs::read_to_string(run.home.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    assert!(log.contains("≥ $0.02"), "{log}");
}

impl Guarded {
    /// The root's last message's error, if it failed.
    fn titled_root_error(&self) -> Option<String> {
        let (_, last) = self.sessions.iter().find(|(s, _)| s["id"] == self.root.as_str()).expect("the root");
        let last = last.as_ref().expect("the root's message");
        let text: String = last["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect();
        assert!(text.contains("Root finished."), "{last}");
        last["info"]["error"]["name"].as_str().map(str::to_owned)
    }
}
