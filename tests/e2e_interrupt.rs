//! `swarmtop interrupt` with the real `codex app-server` 0.171.0 behind `swarmtop tee`, offline against the
//! scripted mock of the Responses API (`support/mock_model.rs`).
//!
//! ```text
//! lead          spawns solo and mid, waits for them twice (5 s each), then closes with a short answer
//! ├── solo      streams a long answer slowly            ← interrupt SOLO (found by itself, by id prefix)
//! └── mid       spawns leaf, waits, then streams slowly ← interrupt --subtree MID (--socket, short id)
//!     └── leaf  streams a long answer slowly
//! ```
//!
//! Checked: each interrupted agent's turn ends `interrupted` by the app-server's own `turn/completed`, and
//! its rollout says so; `--subtree` stops the grandchild before its parent; the lead goes on and completes;
//! the client never sees the tee's requests or their answers, and its own request ids are untouched; the
//! recording holds every act as an envelope with `act`, and the answers to it.
//!
//! The monitor's `i` key is driven the same way, in tmux (`interrupting_from_the_monitor_through_the_tee`).
//!
//! Needs the codex binary: `scripts/setup-codex.sh` installs it (npm) into the git-ignored `.cache/`. The
//! test skips, loudly, only when npm is missing; with `CI` set even that fails.

mod support;
#[path = "support/tmux.rs"]
mod tmux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::codex_driver::Dir;
use support::harness::{codex_binary, run_script};
use support::mock_model::{MockModel, ModelRequest, Reply, Script, Usage};
use support::opencode::{get_json, post_json};
use support::responses::{History, MULTI_AGENT_NS, ResponseBuilder};
use support::scenario::Pacing;

const SWARMTOP: &str = env!("CARGO_BIN_EXE_swarmtop");
const PROMPT: &str = "[task:lead] Survey the crate with two helpers.";
/// Pause between the deltas of a slow answer: the answer would take about half a minute.
const SLOW: Duration = Duration::from_millis(60);

struct Stoppable;

fn slow_answer(r: &mut ResponseBuilder, who: &str) {
    let words: Vec<String> = (0..500).map(|i| format!("{who}{i}")).collect();
    r.message(&words.join(" "));
}

impl Script for Stoppable {
    fn reply(&self, req: &ModelRequest<'_>) -> Reply {
        let tag = req.agent.clone().unwrap_or_default();
        let history = History::read(&tag, req.body);
        let mut r = ResponseBuilder::new(&tag, history.step);
        let mut delta = Duration::ZERO;
        match (tag.as_str(), history.step) {
            ("lead", 0) => {
                r.spawn(&json!({"message": "[task:solo] Write the long report."}));
                r.spawn(&json!({"message": "[task:mid] Get a helper to write the long report."}));
            }
            ("mid", 0) => {
                r.spawn(&json!({"message": "[task:leaf] Write the long report."}));
            }
            // A child's interrupted turn is no end to `wait_agent` (codex 0.171.0 waits out its
            // timeout): the lead waits twice, briefly, then goes on without the children.
            ("lead", _) if !history.pending().is_empty() && history.waits < 2 => {
                r.call("wait_agent", Some(MULTI_AGENT_NS), &json!({"targets": history.pending(), "timeout_ms": 5_000}));
            }
            ("mid", 1) => {
                r.wait(&history.pending());
            }
            ("lead", _) => {
                r.message("All done.");
            }
            ("solo" | "mid" | "leaf", _) => {
                slow_answer(&mut r, &tag);
                delta = SLOW;
            }
            _ => {
                r.message("Nothing to do here.");
            }
        }
        let usage = Usage { input: 1000, cached_input: 0, output: 50, reasoning_output: 0 };
        Reply::Stream { events: r.into_events(), usage, pre_delay: Duration::from_millis(20), delta_delay: delta }
    }
}

/// The thread of the first request the mock served for `tag`, once there is one.
async fn thread_of(mock: &MockModel, tag: &str, deadline: Instant) -> String {
    loop {
        let found = mock.served().into_iter().find(|s| s.agent.as_deref() == Some(tag)).and_then(|s| s.thread_id);
        if let Some(id) = found {
            return id;
        }
        assert!(Instant::now() < deadline, "{tag} never asked the model: {:#?}", mock.served());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `tag` has a request of its `step` being streamed.
async fn streaming(mock: &MockModel, tag: &str, requests: usize, deadline: Instant) {
    while mock.served().iter().filter(|s| s.agent.as_deref() == Some(tag)).count() < requests {
        assert!(Instant::now() < deadline, "{tag} never made request {requests}: {:#?}", mock.served());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past the think time, into the deltas.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn swarmtop(runtime_dir: &Path, args: &[&str]) -> std::process::Output {
    let out = tokio::process::Command::new(SWARMTOP).args(args).env("XDG_RUNTIME_DIR", runtime_dir).output();
    tokio::time::timeout(Duration::from_secs(60), out).await.expect("interrupt finished in time").expect("ran")
}

fn socket_in(runtime_dir: &Path) -> PathBuf {
    let dir = runtime_dir.join("swarmtop");
    let found = std::fs::read_dir(&dir).expect("the tee's socket directory").filter_map(Result::ok).map(|e| e.path());
    found.into_iter().find(|p| p.extension().is_some_and(|x| x == "sock")).expect("the tee's socket")
}

/// `turn/completed` of `thread` as the client read them: (status, index in the transcript).
fn completions(lines: &[(Dir, Value)], thread: &str) -> Vec<(String, usize)> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, (d, m))| *d == Dir::S2c && m["method"] == "turn/completed" && m["params"]["threadId"] == thread)
        .map(|(i, (_, m))| (m["params"]["turn"]["status"].as_str().unwrap_or_default().to_owned(), i))
        .collect()
}

/// The recording: every act, as what it is (targets in `order`), and the app-server's answer to it;
/// and what the client sent is the recording's c2s without the acts.
fn the_recording_has_every_act_and_the_client_s_lines(recording: &Path, sent: &[u8], order: [&String; 3]) {
    let text = std::fs::read_to_string(recording).expect("the recording");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON record")).collect();
    let acts: Vec<&Value> = records.iter().filter(|r| r.get("act").is_some()).collect();
    let targets: Vec<&str> = acts.iter().map(|a| a["act"]["target"].as_str().unwrap_or_default()).collect();
    assert_eq!(targets, order.map(String::as_str), "one act per interrupt, leaves first");
    for a in &acts {
        assert_eq!(a["dir"], "c2s");
        assert_eq!(a["act"]["kind"], "interrupt");
        assert_eq!(a["msg"]["method"], "turn/interrupt");
        let id = a["msg"]["id"].as_str().expect("a string id of the tee's");
        assert!(id.starts_with("swarmtop-"));
        assert_eq!(a["act"]["requestId"], id);
        let answered =
            records.iter().any(|r| r["dir"] == "s2c" && r["msg"]["id"] == id && r["msg"].get("result").is_some());
        assert!(answered, "the app-server answered {id}");
    }
    // What the client sent is the recording's c2s without the acts.
    let mut c2s = Vec::new();
    for r in records.iter().filter(|r| r["dir"] == "c2s" && r.get("act").is_none()) {
        c2s.extend_from_slice(r["msg"].to_string().as_bytes());
        c2s.push(b'\n');
    }
    let sent: Vec<Value> =
        sent.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    let recorded: Vec<Value> =
        c2s.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert_eq!(sent, recorded, "the client's lines, all and only them, besides the acts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_child_and_a_subtree_through_the_tee() {
    let Some(codex) = codex_binary().or_skip("interrupting_a_child_and_a_subtree_through_the_tee") else {
        return;
    };
    let scratch = tempfile::Builder::new().prefix("swarmtop-e2e-interrupt-").tempdir().expect("temp dir");
    let runtime_dir = scratch.path().join("run");
    std::fs::create_dir_all(&runtime_dir).expect("runtime dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).expect("0700");
    }
    let recording = scratch.path().join("recording.ndjson");
    let mock = MockModel::start(Stoppable).await.expect("mock");
    let launch = {
        let (recording, runtime_dir) = (recording.clone(), runtime_dir.clone());
        move |_: &support::harness::World| -> (OsString, Vec<OsString>) {
            // The tee puts its socket where the interrupt will look for it.
            let mut runtime = OsString::from("XDG_RUNTIME_DIR=");
            runtime.push(&runtime_dir);
            let args = [runtime, SWARMTOP.into(), "tee".into(), "--record".into(), recording.into()]
                .into_iter()
                .chain(["--".into(), codex.into(), "app-server".into()])
                .collect();
            ("env".into(), args)
        }
    };

    let acting = async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let solo = thread_of(&mock, "solo", deadline).await;
        streaming(&mock, "solo", 1, deadline).await;
        let prefix = &solo[..solo.len() - 4];
        let first = swarmtop(&runtime_dir, &["interrupt", prefix]).await;

        let mid = thread_of(&mock, "mid", deadline).await;
        let leaf = thread_of(&mock, "leaf", deadline).await;
        streaming(&mock, "leaf", 1, deadline).await;
        let socket = socket_in(&runtime_dir);
        let short = &mid[mid.len() - 8..];
        let socket_arg = socket.to_string_lossy().into_owned();
        let second = swarmtop(&runtime_dir, &["interrupt", "--subtree", "--socket", &socket_arg, short]).await;
        (solo, mid, leaf, first, second)
    };
    let run = run_script(&mock, Box::new(launch), Pacing::TEST, PROMPT, Duration::from_secs(90), None);
    let (run, (solo, mid, leaf, first, second)) = tokio::join!(run, acting);
    if let Some(keep) = std::env::var_os("SWARMTOP_E2E_KEEP") {
        let keep = PathBuf::from(keep).join("interrupt");
        std::fs::create_dir_all(&keep).expect("keep dir");
        let _ = std::fs::copy(&recording, keep.join("recording.ndjson"));
        if let Ok(run) = &run {
            let _ = std::process::Command::new("cp").arg("-r").arg(&run.world.home).arg(&keep).status();
        }
    }
    let run = run.unwrap_or_else(|e| panic!("the session did not complete: {e}"));

    let say = |o: &std::process::Output| {
        format!(
            "exit {:?}\nstdout: {}\nstderr: {}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(first.status.success(), "interrupt solo: {}", say(&first));
    assert_eq!(String::from_utf8_lossy(&first.stdout).lines().count(), 1, "{}", say(&first));
    assert!(second.status.success(), "interrupt --subtree mid: {}", say(&second));
    let said: Vec<String> = String::from_utf8_lossy(&second.stdout).lines().map(str::to_owned).collect();
    assert_eq!(said.len(), 2, "leaf, then mid: {said:?}");
    assert!(said[0].contains(&leaf[leaf.len() - 8..]) && said[1].contains(&mid[mid.len() - 8..]), "{said:?}");

    // The app-server's own word, as the client read it.
    let lines: Vec<(Dir, Value)> = run
        .session
        .transcript
        .iter()
        .map(|c| (c.dir, serde_json::from_slice(&c.line).expect("the client reads JSON lines")))
        .collect();
    let solo_ends = completions(&lines, &solo);
    assert_eq!(solo_ends.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["interrupted"], "solo");
    let (leaf_ends, mid_ends) = (completions(&lines, &leaf), completions(&lines, &mid));
    assert_eq!(leaf_ends.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["interrupted"], "leaf");
    assert_eq!(mid_ends.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["interrupted"], "mid");
    assert!(leaf_ends[0].1 < mid_ends[0].1, "the grandchild stopped before its parent");
    let lead_ends = completions(&lines, &run.session.root_thread);
    assert_eq!(lead_ends.last().map(|(s, _)| s.as_str()), Some("completed"), "the lead went on and finished");

    // The client's ids are its own; nothing of the tee's reached it.
    let received = String::from_utf8_lossy(&run.session.received);
    assert!(!received.contains("\"id\":\"swarmtop-"), "an answer to the tee reached the client");
    for (dir, m) in &lines {
        if *dir == Dir::C2s && m.get("id").is_some() {
            assert!(m["id"].is_u64(), "the client's own id: {m}");
        }
    }

    the_recording_has_every_act_and_the_client_s_lines(&recording, &run.session.sent, [&solo, &leaf, &mid]);

    // The rollouts say the turns were aborted.
    let rollouts = rollout_text(&run.world.home.join("sessions"));
    for id in [&solo, &leaf, &mid] {
        let (_, text) =
            rollouts.iter().find(|(p, _)| p.contains(id.as_str())).unwrap_or_else(|| panic!("a rollout of {id}"));
        let aborted = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).any(|l| {
            l["type"] == "event_msg"
                && l["payload"]["type"] == "turn_aborted"
                && l["payload"]["reason"] == "interrupted"
        });
        assert!(aborted, "{id}'s rollout records the interrupt");
    }
}

/// The monitor's key, with a person's keys in tmux: `swarmtop attach` on the tee, `/solo` ⏎ selects the
/// streaming child, `i` opens the dialog, which names the child, the tee and how before anything is
/// done; `y` interrupts it, the dialog says so, the app-server's own `turn/completed` says
/// `interrupted`, the lead goes on, and the act is in the run store as the monitor's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_from_the_monitor_through_the_tee() {
    let Some(codex) = codex_binary().or_skip("interrupting_from_the_monitor_through_the_tee") else {
        return;
    };
    let scratch = tempfile::Builder::new().prefix("swarmtop-e2e-interrupt-key-").tempdir().expect("temp dir");
    let runtime_dir = scratch.path().join("run");
    std::fs::create_dir_all(&runtime_dir).expect("runtime dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).expect("0700");
    }
    let data = scratch.path().join("data");
    let mock = MockModel::start(Stoppable).await.expect("mock");
    let launch = {
        let runtime_dir = runtime_dir.clone();
        move |_: &support::harness::World| -> (OsString, Vec<OsString>) {
            let mut runtime = OsString::from("XDG_RUNTIME_DIR=");
            runtime.push(&runtime_dir);
            let args: Vec<OsString> =
                vec![runtime, SWARMTOP.into(), "tee".into(), "--".into(), codex.into(), "app-server".into()];
            ("env".into(), args)
        }
    };
    let acting = async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let solo = thread_of(&mock, "solo", deadline).await;
        streaming(&mock, "solo", 1, deadline).await;
        let socket = socket_in(&runtime_dir);
        let (runtime_dir, data) = (runtime_dir.clone(), data.clone());
        let screens = tokio::task::spawn_blocking(move || {
            let command = format!(
                "env XDG_RUNTIME_DIR='{}' XDG_DATA_HOME='{}' '{SWARMTOP}' attach '{}'",
                runtime_dir.display(),
                data.display(),
                socket.display()
            );
            let tmux = tmux::Tmux::start("interrupt-key", 120, 40, &command)?;
            tmux.wait_for("the swarm", |s| s.contains("solo"));
            tmux.keys(&["/", "s", "o", "l", "o", "Enter", "i"]);
            let asked = tmux.wait_for("the question", |s| s.contains("stops, in this order"));
            tmux.keys(&["y"]);
            let done = tmux.wait_for("the answer", tmux::answered);
            tmux.keys(&["Escape", "q"]);
            Some((asked, done))
        })
        .await
        .expect("tmux drove the monitor");
        (solo, screens)
    };
    let run = run_script(&mock, Box::new(launch), Pacing::TEST, PROMPT, Duration::from_secs(90), None);
    let (run, (solo, screens)) = tokio::join!(run, acting);
    let run = run.unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    let Some((asked, done)) = screens else { return };
    let short = &solo[solo.len() - 8..];
    assert!(asked.contains("Interrupt solo alone") && asked.contains(&solo[..30]), "{asked}");
    assert!(asked.contains("through the tee at") && asked.contains("by turn/interrupt"), "{asked}");
    assert!(asked.contains(&format!("solo [{short}], its running turn")), "{asked}");
    assert!(done.contains("✓ interrupted solo"), "{done}");

    let lines: Vec<(Dir, Value)> = run
        .session
        .transcript
        .iter()
        .map(|c| (c.dir, serde_json::from_slice(&c.line).expect("the client reads JSON lines")))
        .collect();
    let solo_ends = completions(&lines, &solo);
    assert_eq!(solo_ends.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["interrupted"], "solo");
    let lead_ends = completions(&lines, &run.session.root_thread);
    assert_eq!(lead_ends.last().map(|(s, _)| s.as_str()), Some("completed"), "the lead went on and finished");
    let received = String::from_utf8_lossy(&run.session.received);
    assert!(!received.contains("\"id\":\"swarmtop-"), "an answer to the tee reached the client");

    let store = swarmtop::store::Store::open(&data.join("swarmtop/history.db")).expect("the run store");
    let acts = store.backend().acts(&run.session.root_thread).expect("its acts");
    let seen: Vec<(&str, &str, &str, &str)> =
        acts.iter().map(|a| (a.by.as_str(), a.via.as_str(), a.target.as_str(), a.outcome.as_str())).collect();
    assert_eq!(seen, [("swarmtop monitor", "tee", solo.as_str(), "interrupted")]);
}

fn rollout_text(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(rollout_text(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push((p.to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap_or_default()));
        }
    }
    out
}

/// Claude Code: the lead spawns one foreground sub-agent; the sub-agent's answer, and the lead's after
/// it, stream slowly.
struct SlowKid;

impl support::anthropic::Script for SlowKid {
    fn reply(&self, req: &support::anthropic::MessagesRequest<'_>) -> support::anthropic::Reply {
        use support::anthropic::{Block, Reply as Answer};
        let agent = req.agent.as_deref().filter(|_| !req.tools.is_empty());
        if agent == Some("lead") && req.step == 0 {
            let input = json!({"description": "Kid", "prompt": "[[agent:kid]] Write the long report.",
                               "subagent_type": "general-purpose", "run_in_background": false});
            return Answer::answer(
                vec![Block::ToolUse { id: "toolu_kid".into(), name: "Agent".into(), input }],
                "tool_use",
            );
        }
        let Some(who) = agent else { return Answer::answer(vec![Block::Text("Side answer.".into())], "end_turn") };
        let words: Vec<String> = (0..300).map(|i| format!("{who}{i}")).collect();
        let mut answer = Answer::answer(vec![Block::Text(words.join(" "))], "end_turn");
        if let Answer::Message { delta_delay, signal, .. } = &mut answer {
            // The lead's closing answer is quick: once the kid is stopped the session finishes.
            if who == "kid" {
                *delta_delay = Duration::from_millis(50);
                *signal = true;
            }
        }
        answer
    }
}

/// The real Claude Code 2.1.332 hosted in stream-json input mode behind the tee: `swarmtop interrupt` on
/// its sub-agent stops that sub-agent alone (`stop_task`), by the CLI's own word (`task_updated` killed),
/// and the lead goes on to its result; the client sees nothing of the tee's request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_claude_sub_agent_hosted_in_stream_json() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let Some(claude) = support::claude_driver::binary() else { return };
    let world = support::claude_driver::World::new().expect("a world");
    let mock = support::anthropic::MockAnthropic::start(SlowKid).await.expect("mock");
    let mut streaming = mock.streaming();
    let socket = world.root.path().join("tee.sock");
    let recording = world.root.path().join("recording.ndjson");
    let mut tee = tokio::process::Command::new(SWARMTOP)
        .args(["tee", "--socket"])
        .arg(&socket)
        .arg("--record")
        .arg(&recording)
        .arg("--")
        .arg(&claude)
        .args(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5", "--dangerously-skip-permissions"])
        .env_clear()
        .envs(support::claude_driver::env(&world, &mock.base_url(), None))
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
    tokio::time::timeout(Duration::from_secs(60), streaming.changed()).await.expect("the kid streams").expect("mock");
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The kid's id, as the session's monitor knows it: its task in the recording so far.
    let text = std::fs::read_to_string(&recording).expect("the recording");
    let kid = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|r| (r["msg"]["subtype"] == "task_started").then(|| r["msg"]["task_id"].as_str().map(str::to_owned)))
        .flatten()
        .expect("the kid's task_started");
    let out = tokio::process::Command::new(SWARMTOP)
        .args(["interrupt", "--socket"])
        .arg(&socket)
        .arg(&kid)
        .output()
        .await
        .expect("swarmtop interrupt");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "interrupt: {said}");
    assert!(said.contains(&kid[kid.len() - 8..]), "{said}");

    let lines =
        tokio::time::timeout(Duration::from_secs(60), reading).await.expect("the session ends").expect("reader");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), tee.wait()).await;
    let msgs: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(
        msgs.iter().any(|m| m["subtype"] == "task_updated"
            && m["task_id"] == kid.as_str()
            && m["patch"]["status"] == "killed"),
        "the CLI says the kid was killed"
    );
    let result = msgs.last().expect("a result");
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success", "the lead went on: {result}");
    assert!(lines.iter().all(|l| !l.contains("control_response")), "the tee's answer never reached the client");
    let records: Vec<Value> =
        std::fs::read_to_string(&recording).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let act = records.iter().find(|r| r.get("act").is_some()).expect("the act is recorded");
    assert_eq!(act["msg"]["request"]["subtype"], "stop_task");
    assert_eq!(act["msg"]["request"]["task_id"], kid.as_str());
}

/// The real OpenCode 1.18.33 under `opencode serve`: `swarmtop interrupt` on a child session, found by
/// its title on a server swarmtop finds by itself, aborts it as OpenCode's own abort does (its message
/// ends `MessageAbortedError`); the root goes on and finishes; the act is logged.
#[test]
fn interrupting_an_opencode_child_session_through_its_server() {
    use support::opencode::{binary_or_skip, free_port, home, serve, wait_http};
    let Some(bin) = binary_or_skip() else { return };
    let mock = support::chat_completions::MockChat::start(support::opencode::LongTask).expect("mock");
    let dir = home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let _server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    wait_http(&authority);
    let http = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(15))).build().new_agent();
    let base = format!("http://{authority}");
    let session = post_json(&http, &format!("{base}/session"), &json!({}))["id"].as_str().expect("an id").to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "Delegate."}]});
    post_json(&http, &format!("{base}/session/{session}/prompt_async"), &prompt);

    let started = Instant::now();
    let child = loop {
        assert!(started.elapsed() < Duration::from_secs(60), "the child never ran");
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
    std::thread::sleep(Duration::from_millis(500));

    let home_dir = root.join("home");
    let out = std::process::Command::new(SWARMTOP)
        .args(["interrupt", "Long task"])
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env("HOME", &home_dir)
        .env("XDG_DATA_HOME", home_dir.join(".local/share"))
        .env("XDG_STATE_HOME", home_dir.join(".local/state"))
        .env("XDG_RUNTIME_DIR", root.join("run"))
        .output()
        .expect("swarmtop interrupt");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "interrupt: {said}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(said, format!("interrupted Long task (@general subagent) [{child}] on {authority}\n"));

    // OpenCode's own account: the child's message aborted, the root on to its end.
    let last_assistant = |id: &str| {
        let messages = get_json(&http, &format!("{base}/session/{id}/message"));
        messages.as_array().into_iter().flatten().rev().find(|m| m["info"]["role"] == "assistant").cloned()
    };
    let aborted = last_assistant(&child).expect("the child's message");
    assert_eq!(aborted["info"]["error"]["name"], "MessageAbortedError");
    let finished = loop {
        assert!(started.elapsed() < Duration::from_secs(90), "the root never finished");
        let busy = get_json(&http, &format!("{base}/session/status"));
        if busy.get(&session).is_none() {
            break last_assistant(&session).expect("the root's message");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(finished["info"].get("error").is_none(), "the root went on: {finished}");
    let text: String = finished["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect();
    assert!(text.contains("Root finished."), "{text}");

    let log = std::fs::read_to_string(home_dir.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    let act: Value = serde_json::from_str(log.lines().last().expect("an act")).expect("JSON");
    assert_eq!((act["via"].as_str(), act["target"].as_str()), (Some("opencode serve"), Some(child.as_str())));
    assert_eq!(act["outcome"], "Aborted");
}

/// Claude Code `-p`, its answer slow to come: a whole session only a signal can stop.
struct SlowAnswer;

impl support::anthropic::Script for SlowAnswer {
    fn reply(&self, _: &support::anthropic::MessagesRequest<'_>) -> support::anthropic::Reply {
        use support::anthropic::{Block, Reply as Answer};
        let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
        let mut answer = Answer::answer(vec![Block::Text(words.join(" "))], "end_turn");
        if let Answer::Message { delta_delay, .. } = &mut answer {
            *delta_delay = Duration::from_millis(100);
        }
        answer
    }
}

/// Any agent's whole session, outside a tee or a server: `swarmtop interrupt SESSION` finds the real
/// Claude Code 2.1.332's process as `ps` does, signals it SIGINT, and says which pid and project it
/// stopped once the process is gone; the act is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_whole_session_by_signal() {
    let Some(bin) = support::claude_driver::binary() else { return };
    let world = support::claude_driver::World::new().expect("a world");
    let (home, project) = (world.home.clone(), world.project.clone());
    let opts = support::claude_driver::RunOptions {
        timeout: Duration::from_secs(120),
        interrupt_after: None,
        telemetry: None,
    };
    let run = support::claude_driver::run_with(&bin, SlowAnswer, opts, world, &[]);
    let swarmtop = |args: Vec<String>| {
        let home = home.clone();
        async move {
            let out = tokio::process::Command::new(SWARMTOP)
                .args(&args)
                .env_remove("CLAUDE_CONFIG_DIR")
                .env_remove("CODEX_HOME")
                .env("HOME", &home)
                .env("XDG_DATA_HOME", home.join(".local/share"))
                .env("XDG_STATE_HOME", home.join(".local/state"))
                .env("XDG_RUNTIME_DIR", home.join("run"))
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .expect("swarmtop");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    let acting = async {
        let started = Instant::now();
        let (id, pid) = loop {
            assert!(started.elapsed() < Duration::from_secs(90), "the session never showed as live");
            let (_, rows, _) = swarmtop(vec!["ps".into(), "--json".into()]).await;
            let rows: Vec<Value> = serde_json::from_str(&rows).unwrap_or_default();
            let live = rows.iter().find(|r| r["tool"] == "claude" && r["state"] == "live");
            if let Some(r) = live {
                break (r["id"].as_str().expect("an id").to_owned(), r["pid"].as_u64().expect("a pid"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let said = swarmtop(vec!["interrupt".into(), "--yes".into(), id.clone()]).await;
        (id, pid, said)
    };
    let (run, (id, pid, (ok, out, err))) = tokio::join!(run, acting);
    let run = run.unwrap_or_else(|e| panic!("the CLI did not end: {e}"));
    assert!(ok, "interrupt: {out}{err}");
    assert!(
        !run.exit.success() || run.elapsed < Duration::from_secs(40),
        "the CLI was stopped, not finished: {:?}",
        run.exit
    );
    assert_eq!(
        out,
        format!(
            "stopped claude session {} [{id}]: pid {pid} in {} exited on SIGINT\n",
            out.split(" session ").nth(1).and_then(|r| r.split(" [").next()).unwrap_or_default(),
            project.display()
        ),
    );
    let log = std::fs::read_to_string(home.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    let act: Value = serde_json::from_str(log.lines().last().expect("an act")).expect("JSON");
    assert_eq!(
        (act["via"].as_str(), act["pid"].as_u64(), act["outcome"].as_str()),
        (Some("signal"), Some(pid), Some("SIGINT"))
    );
}

/// A process killed when the test ends, however it ends.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// OpenCode: the root hands a task to `kid`, which hands one to `grand`, whose answer streams slowly.
struct Nested;

impl support::chat_completions::Script for Nested {
    fn reply(&self, req: &support::chat_completions::Request<'_>) -> support::chat_completions::Reply {
        use support::chat_completions::{Call, Reply as Answer, Usage as Tokens};
        let usage = Tokens { prompt: 1000, cached: 0, completion: 20, reasoning: 0 };
        let fast = |text: &str, calls| Answer::Stream {
            text: text.to_owned(),
            calls,
            usage,
            pieces: 3,
            delay: Duration::from_millis(10),
        };
        let task = |id: &str, agent: &str, description: &str| {
            let prompt = format!("[[AGENT:{agent}]] Write the long report.");
            let arguments = json!({"description": description, "prompt": prompt, "subagent_type": "general"});
            Call { id: id.into(), name: "task".into(), arguments }
        };
        match (req.agent.as_str(), req.step) {
            ("root", 0) => fast("Delegating.", vec![task("call_kid", "kid", "Kid task")]),
            ("kid", 0) => fast("Delegating further.", vec![task("call_grand", "grand", "Grand task")]),
            ("grand", _) => Answer::Stream {
                text: "word ".repeat(300),
                calls: vec![],
                usage,
                pieces: 300,
                delay: Duration::from_millis(200),
            },
            ("kid", _) => fast("Kid finished.", vec![]),
            ("root", _) => fast("Root finished.", vec![]),
            _ => fast("Side answer.", vec![]),
        }
    }
}

/// The real OpenCode 1.18.33 under `opencode serve` with `swarmtop guard --server URL --max-depth 1`
/// watching it: the grandchild (depth 2) is aborted as soon as it runs, by OpenCode's own abort (its
/// message ends `MessageAbortedError`); its parent and the root go on and finish; the guard says why.
/// The monitor watching the server and one following OpenCode's store (in tmux, started before the
/// session) then show why the grandchild stopped, and so do `tree` and `stats --json` on the store,
/// from the acts log.
#[test]
fn the_guard_aborts_an_opencode_grandchild_past_max_depth() {
    use support::opencode::{binary_or_skip, free_port, home, serve, wait_http};
    let Some(bin) = binary_or_skip() else { return };
    let mock = support::chat_completions::MockChat::start(Nested).expect("mock");
    let dir = home(&mock);
    let root = dir.path();
    let port = free_port().to_string();
    let _server = serve(&bin, root, &port);
    let authority = format!("127.0.0.1:{port}");
    wait_http(&authority);
    let base = format!("http://{authority}");
    let home_dir = root.join("home");
    let guard = std::process::Command::new(SWARMTOP)
        .args(["guard", "--server", &base, "--max-depth", "1"])
        .env("HOME", &home_dir)
        .env("XDG_DATA_HOME", home_dir.join(".local/share"))
        .env("XDG_STATE_HOME", home_dir.join(".local/state"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("swarmtop guard --server");
    let mut guard = KillOnDrop(Some(guard));
    let monitor = format!(
        "env HOME='{home}' XDG_DATA_HOME='{home}/.local/share' XDG_STATE_HOME='{home}/.local/state' '{SWARMTOP}' '{base}'",
        home = home_dir.display()
    );
    let tmux = tmux::Tmux::start("guard-served", 160, 40, &monitor);
    // And one following OpenCode's store instead, as the machine view does.
    let store = root.join("home/.local/share/opencode/opencode.db");
    let follower = format!(
        "env HOME='{home}' XDG_DATA_HOME='{home}/.local/share' XDG_STATE_HOME='{home}/.local/state' '{SWARMTOP}' --follow '{}'",
        store.display(),
        home = home_dir.display()
    );
    let following = tmux::Tmux::start("guard-store", 160, 40, &follower);
    // The guard is connected once the server has a subscriber; a moment is enough on an empty server.
    std::thread::sleep(Duration::from_millis(1500));
    let http = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(15))).build().new_agent();
    let session = post_json(&http, &format!("{base}/session"), &json!({}))["id"].as_str().expect("an id").to_owned();
    let prompt = json!({"parts": [{"type": "text", "text": "Delegate."}]});
    post_json(&http, &format!("{base}/session/{session}/prompt_async"), &prompt);

    let last_assistant = |id: &str| {
        let messages = get_json(&http, &format!("{base}/session/{id}/message"));
        messages.as_array().into_iter().flatten().rev().find(|m| m["info"]["role"] == "assistant").cloned()
    };
    let started = Instant::now();
    let finished = loop {
        assert!(started.elapsed() < Duration::from_secs(90), "the root never finished");
        let busy = get_json(&http, &format!("{base}/session/status"));
        if mock.served().iter().any(|s| s.agent == "root" && s.step > 0) && busy.get(&session).is_none() {
            break last_assistant(&session).expect("the root's message");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let sessions = get_json(&http, &format!("{base}/session"));
    let child_of = |parent: &str| {
        sessions.as_array().into_iter().flatten().find(|s| s["parentID"] == parent).and_then(|s| s["id"].as_str())
    };
    let kid = child_of(&session).expect("the kid's session").to_owned();
    let grand = child_of(&kid).expect("the grandchild's session").to_owned();
    let aborted = last_assistant(&grand).expect("the grandchild's message");
    assert_eq!(aborted["info"]["error"]["name"], "MessageAbortedError", "{aborted}");
    let kid_said = last_assistant(&kid).expect("the kid's message");
    assert!(kid_said["info"].get("error").is_none(), "the kid went on: {kid_said}");
    assert!(finished["info"].get("error").is_none(), "the root went on: {finished}");
    let grand_words = mock.served().iter().filter(|s| s.agent == "grand").count();
    assert!(grand_words <= 1, "the grandchild was stopped on its first step");

    let mut guard = guard.0.take().expect("the guard");
    let _ = guard.kill();
    let out = guard.wait_with_output().expect("the guard's output");
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said.lines().find(|l| l.contains(&grand)).unwrap_or_else(|| panic!("the guard said: {said}"));
    assert!(line.starts_with("stopped by guard: depth 2 > 1") && line.ends_with(": aborted"), "{line}");
    let log = std::fs::read_to_string(home_dir.join(".local/state/swarmtop/acts.ndjson")).expect("the acts log");
    let act: Value = serde_json::from_str(log.lines().last().expect("an act")).expect("JSON");
    assert_eq!((act["by"].as_str(), act["target"].as_str()), (Some("guard"), Some(grand.as_str())));
    assert_eq!(act["reason"], "depth 2 > 1");
    the_tree_says_why(&home_dir, &store, &grand);
    for tmux in [tmux, following].into_iter().flatten() {
        tmux.wait_for("the grandchild on the monitor", |s| s.contains("Grand task"));
        tmux.keys(&["/", "G", "r", "a", "n", "d", "Enter"]);
        let screen = tmux.wait_for("the stop on the monitor", |s| s.contains("◼ stopped by guard: depth 2 > 1"));
        let header =
            screen.lines().find(|l| l.contains("stopped by guard") && !l.contains("◼ stopped")).unwrap_or_default();
        assert!(header.contains("Grand task"), "the grandchild's header says why it stopped: {screen}");
        tmux.keys(&["Escape", "q"]);
    }
}

/// `tree` and `stats --json` on OpenCode's store say of the grandchild why it stopped (the acts log
/// under `home`), and of no other session.
fn the_tree_says_why(home: &Path, store: &Path, grand: &str) {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(SWARMTOP)
            .args(args)
            .arg(store)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .output()
            .expect("swarmtop");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tree = run(&["tree"]);
    let stopped: Vec<&str> = tree.lines().filter(|l| l.contains("stopped by")).collect();
    assert_eq!(stopped.len(), 1, "{tree}");
    assert!(stopped[0].contains("Grand task") && stopped[0].ends_with("stopped by guard: depth 2 > 1"), "{tree}");
    let stats: Value = serde_json::from_str(&run(&["stats", "--json"])).expect("stats JSON");
    let by: Vec<(&str, &str)> = stats["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["id"].as_str()?, t.get("stoppedBy")?.as_str()?)))
        .collect();
    assert_eq!(by, [(grand, "guard: depth 2 > 1")]);
}
