//! The monitor's interrupt key (`i`, then `y`) driven as a person would, in tmux at 80×24, on the two
//! carriers besides Codex's tee (that one is `tests/e2e_interrupt.rs`,
//! `interrupting_from_the_monitor_through_the_tee`):
//!
//! - the real OpenCode 1.18.33 under `opencode serve`, the monitor watching the server: the child
//!   session is aborted by the server's own abort, found by itself (the store's process, listening on
//!   loopback), and OpenCode's API then says its message ended `MessageAbortedError`;
//! - the real Claude Code 2.1.332 hosted in stream-json input mode behind `swarmtop tee`, the monitor
//!   attached to the tee: its sub-agent is stopped alone by `stop_task` (`docs/acting.md` §4), by the
//!   CLI's own word (`task_updated` killed), and the lead goes on to its result.
//!
//! Each: the dialog names the agent, the carrier and how before anything is done; `y` does it and the
//! dialog says so; the act is in the run store as the monitor's; the screen then says who stopped it.
//!
//! Needs the OpenCode and Claude Code binaries (`scripts/setup-opencode.sh`, `scripts/setup-claude.sh`)
//! and tmux; each test skips, loudly, without them, and fails in CI.

mod support;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::opencode::{binary_or_skip, free_port, get_json, home, post_json, serve, wait_http};

const SWARMTOP: &str = env!("CARGO_BIN_EXE_swarmtop");

/// The screen as the test saw it, printed for the log (a person reads the dialog there).
fn shown(what: &str, screen: &str) {
    eprintln!("--- {what} (80×24) ---\n{screen}");
}

#[test]
fn the_interrupt_key_aborts_an_opencode_child_through_its_server() {
    let Some(bin) = binary_or_skip() else { return };
    let mock = support::chat_completions::MockChat::start(support::opencode::LongTask).expect("mock");
    let dir = home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let _server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    wait_http(&authority);
    let base = format!("http://{authority}");
    let home_dir = root.join("home");
    let monitor = format!(
        "env HOME='{home}' XDG_DATA_HOME='{home}/.local/share' XDG_STATE_HOME='{home}/.local/state' \
         XDG_RUNTIME_DIR='{run}' '{SWARMTOP}' '{base}'",
        home = home_dir.display(),
        run = root.join("run").display(),
    );
    let Some(tmux) = tmux::Tmux::start("interrupt-key-opencode", 80, 24, &monitor) else { return };
    let http = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(15))).build().new_agent();
    let session = post_json(&http, &format!("{base}/session"), &json!({}))["id"].as_str().expect("an id").to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "Delegate."}]});
    post_json(&http, &format!("{base}/session/{session}/prompt_async"), &prompt);
    let started = Instant::now();
    let child = loop {
        assert!(started.elapsed() < support::opencode::PATIENCE, "the child never ran");
        let sessions = get_json(&http, &format!("{base}/session"));
        let busy = get_json(&http, &format!("{base}/session/status"));
        let child = sessions.as_array().into_iter().flatten().find(|s| s["parentID"] == session.as_str());
        if let Some(id) = child.and_then(|c| c["id"].as_str()).filter(|id| busy.get(*id).is_some()) {
            if mock.served().iter().any(|s| s.agent == "child_slow") {
                break id.to_owned();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };

    tmux.wait_for("the child on the monitor", |s| s.contains("Long task"));
    tmux.keys(&["/", "L", "o", "n", "g", "Enter", "i"]);
    let asked = tmux.wait_for("the question", |s| s.contains("stops, in this order") || s.contains("cannot interrupt"));
    shown("the question", &asked);
    assert!(asked.contains("Interrupt Long task") && asked.contains("alone"), "{asked}");
    assert!(asked.contains(&format!("through the agent server at {authority}")), "{asked}");
    assert!(asked.contains("by POST /session/{id}/abort"), "{asked}");
    assert!(asked.contains(&format!("[{child}]")), "the stop names the session: {asked}");
    tmux.keys(&["y"]);
    let done = tmux.wait_for("the answer", tmux::answered);
    shown("the answer", &done);
    // At 80 columns the line wraps after the title.
    assert!(done.contains("✓ interrupted Long task (@general subagent)"), "{done}");
    assert!(done.contains(&format!("[{child}] on {authority}")), "{done}");

    // OpenCode's own account: the child's message aborted, the root on to its end.
    let last_assistant = |id: &str| {
        let messages = get_json(&http, &format!("{base}/session/{id}/message"));
        messages.as_array().into_iter().flatten().rev().find(|m| m["info"]["role"] == "assistant").cloned()
    };
    let aborted = last_assistant(&child).expect("the child's message");
    assert_eq!(aborted["info"]["error"]["name"], "MessageAbortedError", "{aborted}");
    let finished = loop {
        assert!(started.elapsed() < support::opencode::PATIENCE, "the root never finished");
        let busy = get_json(&http, &format!("{base}/session/status"));
        if busy.get(&session).is_none() && mock.served().iter().any(|s| s.agent == "root" && s.step > 0) {
            break last_assistant(&session).expect("the root's message");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(finished["info"].get("error").is_none(), "the root went on: {finished}");

    let acts = acts_kept(&home_dir.join(".local/share/swarmtop/history.db"), &session);
    assert_eq!(acts, [("swarmtop monitor".into(), "opencode serve".into(), child.clone(), "interrupted".into())]);
    let log = std::fs::read_to_string(home_dir.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    let act: Value = serde_json::from_str(log.lines().last().expect("an act")).expect("JSON");
    assert_eq!((act["by"].as_str(), act["target"].as_str()), (Some("swarmtop monitor"), Some(child.as_str())));

    tmux.keys(&["Escape"]);
    let after = tmux.wait_for("who stopped it", |s| s.contains("stopped by swarmtop monitor"));
    shown("after", &after);
    tmux.keys(&["q"]);
}

/// The run store's acts of `session`: (by, via, target, outcome).
fn acts_kept(db: &Path, session: &str) -> Vec<(String, String, String, String)> {
    let store = swarmtop::store::Store::open(db).expect("the run store");
    let acts = store.backend().acts(session).expect("its acts");
    acts.into_iter().map(|a| (a.by, a.via, a.target, a.outcome)).collect()
}

/// Claude Code: the lead spawns one foreground sub-agent, `Kid`, whose answer streams slowly (300
/// words, 100 ms apart); the lead's answer after it is quick.
struct SlowKid;

impl support::anthropic::Script for SlowKid {
    fn reply(&self, req: &support::anthropic::MessagesRequest<'_>) -> support::anthropic::Reply {
        use support::anthropic::{Block, Reply};
        let agent = req.agent.as_deref().filter(|_| !req.tools.is_empty());
        if agent == Some("lead") && req.step == 0 {
            let input = json!({"description": "Kid", "prompt": "[[agent:kid]] Write the long report.",
                               "subagent_type": "general-purpose", "run_in_background": false});
            return Reply::answer(
                vec![Block::ToolUse { id: "toolu_kid".into(), name: "Agent".into(), input }],
                "tool_use",
            );
        }
        let Some(who) = agent else { return Reply::answer(vec![Block::Text("Side answer.".into())], "end_turn") };
        let words: Vec<String> = (0..300).map(|i| format!("{who}{i}")).collect();
        let mut answer = Reply::answer(vec![Block::Text(words.join(" "))], "end_turn");
        if let Reply::Message { delta_delay, signal, .. } = &mut answer {
            if who == "kid" {
                *delta_delay = Duration::from_millis(100);
                *signal = true;
            }
        }
        answer
    }
}

fn socket_in(runtime_dir: &Path) -> std::path::PathBuf {
    let dir = runtime_dir.join("swarmtop");
    let found = std::fs::read_dir(&dir).expect("the tee's socket directory").filter_map(Result::ok).map(|e| e.path());
    found.into_iter().find(|p| p.extension().is_some_and(|x| x == "sock")).expect("the tee's socket")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interrupt_key_stops_a_claude_sub_agent_hosted_in_stream_json() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let Some(claude) = support::claude_driver::binary() else { return };
    let world = support::claude_driver::World::new().expect("a world");
    let mock = support::anthropic::MockAnthropic::start(SlowKid).await.expect("mock");
    let mut streaming = mock.streaming();
    let runtime_dir = world.root.path().join("run");
    std::fs::create_dir_all(&runtime_dir).expect("runtime dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).expect("0700");
    }
    let data = world.root.path().join("data");
    let mut tee = tokio::process::Command::new(SWARMTOP)
        .args(["tee", "--"])
        .arg(&claude)
        .args(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5", "--dangerously-skip-permissions"])
        .env_clear()
        .envs(support::claude_driver::env(&world, &mock.base_url(), None))
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .current_dir(&world.project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("swarmtop tee -- claude");
    let mut stdin = tee.stdin.take().expect("stdin");
    let reading = {
        let stdout = tee.stdout.take().expect("stdout");
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            let mut out = Vec::new();
            while let Ok(Some(l)) = lines.next_line().await {
                let done = l.contains("\"type\":\"result\"");
                out.push(l);
                if done {
                    break;
                }
            }
            out
        })
    };
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "[[agent:lead]] Use a helper."}});
    stdin.write_all(format!("{prompt}\n").as_bytes()).await.expect("the prompt");
    tokio::time::timeout(Duration::from_secs(90), streaming.changed()).await.expect("the kid streams").expect("mock");

    let monitor = format!(
        "env HOME='{}' XDG_DATA_HOME='{}' XDG_RUNTIME_DIR='{}' '{SWARMTOP}' attach '{}'",
        world.home.display(),
        data.display(),
        runtime_dir.display(),
        socket_in(&runtime_dir).display()
    );
    let screens = tokio::task::spawn_blocking(move || {
        let tmux = tmux::Tmux::start("interrupt-key-claude", 80, 24, &monitor)?;
        tmux.wait_for("the sub-agent", |s| s.contains("Kid"));
        tmux.keys(&["/", "K", "i", "d", "Enter", "i"]);
        let asked =
            tmux.wait_for("the question", |s| s.contains("stops, in this order") || s.contains("cannot interrupt"));
        tmux.keys(&["y"]);
        let done = tmux.wait_for("the answer", tmux::answered);
        tmux.keys(&["Escape"]);
        let after = tmux.wait_for("who stopped it", |s| s.contains("stopped by swarmtop monitor"));
        tmux.keys(&["q"]);
        Some((asked, done, after))
    })
    .await
    .expect("tmux drove the monitor");
    let lines =
        tokio::time::timeout(Duration::from_secs(90), reading).await.expect("the session ends").expect("reader");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), tee.wait()).await;
    let Some((asked, done, after)) = screens else { return };
    shown("the question", &asked);
    shown("the answer", &done);
    shown("after", &after);

    let msgs: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kid = msgs
        .iter()
        .find_map(|m| (m["subtype"] == "task_started").then(|| m["task_id"].as_str()).flatten())
        .expect("the kid's task_started")
        .to_owned();
    let session = msgs.iter().find_map(|m| m["session_id"].as_str()).expect("the session's id").to_owned();
    assert!(asked.contains("Interrupt Kid alone") && asked.contains("through the tee at"), "{asked}");
    assert!(asked.contains("by a control request: interrupt (the session), stop_task"), "{asked}");
    assert!(asked.contains(&format!("Kid [{}], its running turn", &kid[kid.len() - 8..])), "{asked}");
    assert!(done.contains("✓ interrupted Kid"), "{done}");
    assert!(
        msgs.iter().any(|m| m["subtype"] == "task_updated"
            && m["task_id"] == kid.as_str()
            && m["patch"]["status"] == "killed"),
        "the CLI says the kid was killed"
    );
    let result = msgs.last().expect("a result");
    assert_eq!((result["type"].as_str(), result["subtype"].as_str()), (Some("result"), Some("success")), "{result}");
    assert!(lines.iter().all(|l| !l.contains("control_response")), "the tee's answer never reached the client");
    let acts = acts_kept(&data.join("swarmtop/history.db"), &session);
    assert_eq!(acts, [("swarmtop monitor".into(), "tee".into(), kid, "interrupted".into())]);
}
