//! `swarmtop guard` with the real Claude Code CLI 2.1.332, offline against the mock of the Messages API
//! (`support/anthropic.rs`): a scripted model whose every agent spawns a sub-agent of its own, three deep.
//!
//! - With `guard --install --project --max-depth 1` the session's child is spawned and the child's own
//!   spawn (a grandchild, depth 2) is refused: the reason is in the child's transcript as the call's
//!   error result, and no grandchild exists. A user's hook already in the project's settings stays and
//!   runs; it also pins what the CLI hands a hook (`docs/acting.md` §1). `--uninstall` gives the
//!   user's file back byte for byte.
//! - Without the guard the same script goes three deep.
//! - Bad input is a one-line error that refuses nothing; a call that spawns nothing passes silently.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly,
//! only when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{Block, MessagesRequest, Reply, Script};
use support::claude_driver::{self, ClaudeRun, RunOptions, World, binary};
use support::ingest::ingest;

const SWARMTOP: &str = env!("CARGO_BIN_EXE_swarmtop");
/// How deep the script would go if nothing stopped it.
const CHAIN: usize = 3;

/// Every agent's first answer spawns a foreground sub-agent one level deeper (`d1`, `d2`, …) until
/// [`CHAIN`]; its next answer is a text, whatever became of its spawn.
struct Chain;

fn depth_of(tag: &str) -> Option<usize> {
    if tag == "lead" { Some(0) } else { tag.strip_prefix('d')?.parse().ok() }
}

impl Script for Chain {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        // A side query of the CLI's (a title) has no tools.
        let Some(depth) = req.agent.as_deref().and_then(depth_of).filter(|_| !req.tools.is_empty()) else {
            return Reply::answer(vec![Block::Text("Side answer.".into())], "end_turn");
        };
        if req.step == 0 && depth < CHAIN {
            let child = depth + 1;
            let input = json!({
                "description": format!("Level {child}"),
                "prompt": format!("[[agent:d{child}]] Go one level deeper."),
                "subagent_type": "general-purpose",
                "run_in_background": false,
            });
            let call = Block::ToolUse { id: format!("toolu_chain_{child}"), name: "Agent".into(), input };
            return Reply::answer(vec![call], "tool_use");
        }
        Reply::answer(vec![Block::Text(format!("depth {depth} done"))], "end_turn")
    }
}

/// `swarmtop ARGS` in the project, with the world's HOME.
fn swarmtop(world: &World, args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(SWARMTOP)
        .args(args)
        .current_dir(&world.project)
        .env("HOME", &world.home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running swarmtop");
    child.stdin.take().expect("stdin").write_all(stdin).expect("writing stdin");
    child.wait_with_output().expect("swarmtop ran")
}

async fn run(world: World) -> Option<ClaudeRun> {
    let bin = binary()?;
    let opts = RunOptions { timeout: Duration::from_secs(120), interrupt_after: None, telemetry: None };
    let run = claude_driver::run_with(&bin, Chain, opts, world, &[])
        .await
        .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    Some(run)
}

/// The sub-agents' sidecars: `(agent id, meta.json)`.
fn sidecars(run: &ClaudeRun) -> Vec<(String, Value)> {
    let dir = run.world.project_dir().expect("the CLI created its project folder");
    let mut out = Vec::new();
    for session in std::fs::read_dir(&dir).expect("project dir").filter_map(Result::ok) {
        for e in std::fs::read_dir(session.path().join("subagents")).into_iter().flatten().filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_prefix("agent-").and_then(|n| n.strip_suffix(".meta.json")) {
                let meta = serde_json::from_str(&std::fs::read_to_string(e.path()).expect("meta")).expect("JSON");
                out.push((id.to_owned(), meta));
            }
        }
    }
    out
}

/// Every line of every transcript under `dir`.
fn transcript_lines(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir").filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(transcript_lines(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(&p).expect("transcript");
            out.extend(text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()));
        }
    }
    out
}

/// The result the CLI gave a tool call, as the transcript has it.
fn tool_result<'a>(lines: &'a [Value], call: &str) -> Option<&'a Value> {
    lines.iter().filter(|l| l["type"] == "user").find_map(|l| {
        l["message"]["content"].as_array()?.iter().find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_refuses_the_grandchild_and_says_why_in_the_transcript() {
    let world = World::new().expect("a world");
    // The user's own hook, in the project's settings before the guard: it dumps what a hook receives.
    let dump = world.root.path().join("dump");
    std::fs::create_dir_all(&dump).expect("dump dir");
    let users = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": format!("cat > {}/hook-$(date +%s%N).json", dump.display())},
    ]}]}});
    let settings = world.project.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).expect(".claude");
    let original = format!("{}\n", serde_json::to_string_pretty(&users).unwrap());
    std::fs::write(&settings, &original).expect("settings.json");

    let out = swarmtop(&world, &["guard", "--install", "--project", "--max-depth", "1"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = swarmtop(&world, &["guard", "--install", "--project", "--max-depth", "1"], b"");
    assert!(String::from_utf8_lossy(&again.stdout).contains("already"), "installing twice changes nothing");
    let installed = std::fs::read_to_string(&settings).expect("settings.json");
    assert!(installed.starts_with(&original[..original.rfind("\n    ]").unwrap()]), "the user's hook keeps its bytes");

    let Some(run) = run(world).await else { return };
    claude_driver::keep_if_asked(&run, "guard");
    let agents = sidecars(&run);
    assert_eq!(agents.len(), 1, "only the session's child was spawned: {agents:?}");
    let (child, meta) = &agents[0];
    assert_eq!(meta["spawnDepth"], 1);

    let lines = transcript_lines(&run.world.projects());
    let refused = tool_result(&lines, "toolu_chain_2").expect("the grandchild's spawn has a result");
    assert_eq!(refused["is_error"], true);
    let text = refused["content"].as_str().expect("the refusal's text");
    assert!(
        text.contains(&format!("swarmtop guard refused this spawn by sub-agent {child}: depth 2 > 1 (--max-depth 1)")),
        "the model reads why: {text}"
    );
    let allowed = tool_result(&lines, "toolu_chain_1").expect("the child's spawn has a result");
    assert_ne!(allowed["is_error"], true, "the session's own spawn passed");

    let p = ingest(&run.world.projects());
    assert_eq!(p.model.threads.len(), 2, "the session and its child");

    // What the CLI handed the hooks: the session's transcript every time, the caller's id only when
    // a sub-agent calls.
    let mut calls: Vec<Value> = std::fs::read_dir(&dump)
        .expect("dump")
        .filter_map(Result::ok)
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).expect("the hook's input"))
        .collect();
    calls.sort_by_key(|c| c["tool_use_id"].as_str().unwrap_or_default().to_owned());
    assert_eq!(calls.len(), 2, "one hook run per spawning call: {calls:#?}");
    let session_id = p.model.thread(p.model.sessions[0]).id.to_string();
    for c in &calls {
        assert_eq!(c["hook_event_name"], "PreToolUse");
        assert_eq!(c["tool_name"], "Agent");
        assert_eq!(c["session_id"], session_id.as_str());
        assert!(c["transcript_path"].as_str().unwrap().ends_with(&format!("/{session_id}.jsonl")));
    }
    assert!(calls[0].get("agent_id").is_none(), "the session calls without an agent id");
    assert_eq!(calls[1]["agent_id"], child.as_str());
    assert_eq!(calls[1]["agent_type"], "general-purpose");

    let out = swarmtop(&run.world, &["guard", "--uninstall", "--project"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), original, "uninstall gives the user's file back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_guard_the_same_script_goes_three_deep() {
    let Some(run) = run(World::new().expect("a world")).await else { return };
    let mut depths: Vec<u64> = sidecars(&run).iter().filter_map(|(_, m)| m["spawnDepth"].as_u64()).collect();
    depths.sort_unstable();
    assert_eq!(depths, [1, 2, 3]);
    let lines = transcript_lines(&run.world.projects());
    assert!(lines.iter().all(|l| !l.to_string().contains("swarmtop guard")));
}

#[test]
fn bad_input_is_one_line_that_refuses_nothing_and_other_tools_pass() {
    let world = World::new().expect("a world");
    let guard = ["guard", "--max-depth", "1"];
    let bad = swarmtop(&world, &guard, b"{not json");
    assert_eq!(bad.status.code(), Some(1), "an error Claude Code reports without blocking");
    assert!(bad.stdout.is_empty(), "no decision on stdout");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("swarmtop: "), "{err}");

    let transcript = world.root.path().join("missing.jsonl");
    let call = |tool: &str| {
        json!({"session_id": "s", "transcript_path": transcript, "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": {}, "tool_use_id": "toolu_1"})
        .to_string()
    };
    let bash = swarmtop(&world, &guard, call("Bash").as_bytes());
    assert!(bash.status.success() && bash.stdout.is_empty() && bash.stderr.is_empty(), "{bash:?}");
    let unreadable = swarmtop(&world, &guard, call("Agent").as_bytes());
    assert_eq!(unreadable.status.code(), Some(1));
    assert!(unreadable.stdout.is_empty());

    let none = swarmtop(&world, &["guard", "--install", "--project"], b"");
    assert_eq!(none.status.code(), Some(1), "installing a guard without a limit is refused");
    assert!(!world.project.join(".claude/settings.json").exists());
}

/// Codex: the lead spawns `mid`, which spawns `leaf`; `leaf` streams a long answer slowly. Waits are
/// short, so that a parent goes on without a child the guard stopped (an interrupted child is no end
/// to `wait_agent`, docs/acting.md §2).
struct Nested;

impl support::mock_model::Script for Nested {
    fn reply(&self, req: &support::mock_model::ModelRequest<'_>) -> support::mock_model::Reply {
        use support::responses::{History, MULTI_AGENT_NS, ResponseBuilder};
        let tag = req.agent.clone().unwrap_or_default();
        let history = History::read(&tag, req.body);
        let mut r = ResponseBuilder::new(&tag, history.step);
        let mut delta = Duration::ZERO;
        match (tag.as_str(), history.step) {
            ("lead", 0) => {
                r.spawn(&json!({"message": "[task:mid] Get a helper to write the report."}));
            }
            ("mid", 0) => {
                r.spawn(&json!({"message": "[task:leaf] Write the report."}));
            }
            ("lead" | "mid", 1) => {
                r.call("wait_agent", Some(MULTI_AGENT_NS), &json!({"targets": history.pending(), "timeout_ms": 4_000}));
            }
            ("leaf", _) => {
                let words: Vec<String> = (0..400).map(|i| format!("leaf{i}")).collect();
                r.message(&words.join(" "));
                delta = Duration::from_millis(60);
            }
            _ => {
                r.message("Done.");
            }
        }
        let usage = support::mock_model::Usage { input: 1000, cached_input: 0, output: 50, reasoning_output: 0 };
        support::mock_model::Reply::Stream {
            events: r.into_events(),
            usage,
            pre_delay: Duration::from_millis(20),
            delta_delay: delta,
        }
    }
}

/// `swarmtop tee --max-depth 1 -- codex app-server` with the real app-server 0.171.0: the grandchild (depth
/// 2) is interrupted by the tee's guard as soon as it runs, the app-server's own `turn/completed` says
/// so, the rest of the tree finishes, and `tree` on the recording says why it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tees_guard_interrupts_a_codex_grandchild_past_max_depth() {
    use support::harness::{codex_binary, run_script};
    let Some(codex) = codex_binary().or_skip("the_tees_guard_interrupts_a_codex_grandchild_past_max_depth") else {
        return;
    };
    let scratch = tempfile::Builder::new().prefix("swarmtop-e2e-tee-guard-").tempdir().expect("temp dir");
    let (recording, socket) = (scratch.path().join("recording.ndjson"), scratch.path().join("tee.sock"));
    let store = scratch.path().join("history.db");
    let mock = support::mock_model::MockModel::start(Nested).await.expect("mock");
    let launch = {
        let (recording, socket, store) = (recording.clone(), socket.clone(), store.clone());
        move |_: &support::harness::World| -> (std::ffi::OsString, Vec<std::ffi::OsString>) {
            let mut kept_in = std::ffi::OsString::from("SWARMTOP_STORE=");
            kept_in.push(&store);
            let args = [kept_in, SWARMTOP.into()]
                .into_iter()
                .chain(["tee", "--max-depth", "1", "--socket"].map(std::ffi::OsString::from))
                .chain([
                    socket.into(),
                    "--record".into(),
                    recording.into(),
                    "--".into(),
                    codex.into(),
                    "app-server".into(),
                ])
                .collect();
            ("env".into(), args)
        }
    };
    let prompt = "[task:lead] Get the report written.";
    let run =
        run_script(&mock, Box::new(launch), support::scenario::Pacing::TEST, prompt, Duration::from_secs(90), None)
            .await
            .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    // The grandchild, as the recording has it (the guard may stop it before it asks the model anything).
    let stats = Command::new(SWARMTOP).args(["stats", "--json"]).arg(&recording).output().expect("stats");
    let stats: Value = serde_json::from_slice(&stats.stdout).expect("stats --json");
    let threads = stats["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 3, "{threads:#?}");
    let leaf =
        threads.iter().find(|t| t["depth"] == 2).and_then(|t| t["id"].as_str()).expect("a grandchild").to_owned();

    let ends: Vec<(String, String)> = run
        .session
        .transcript
        .iter()
        .filter_map(|c| serde_json::from_slice::<Value>(&c.line).ok())
        .filter(|m| m["method"] == "turn/completed")
        .map(|m| {
            (
                m["params"]["threadId"].as_str().unwrap_or_default().to_owned(),
                m["params"]["turn"]["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let leaf_ends: Vec<&str> = ends.iter().filter(|(t, _)| *t == leaf).map(|(_, s)| s.as_str()).collect();
    assert_eq!(leaf_ends, ["interrupted"], "the guard stopped the grandchild");
    let others: Vec<&str> = ends.iter().filter(|(t, _)| *t != leaf).map(|(_, s)| s.as_str()).collect();
    assert!(!others.is_empty() && others.iter().all(|s| *s == "completed"), "the rest finished: {ends:?}");

    let tree = Command::new(SWARMTOP).arg("tree").arg(&recording).output().expect("tree");
    let tree = String::from_utf8_lossy(&tree.stdout);
    // The grandchild is the one interrupted agent (named by its random nickname).
    let line = tree.lines().find(|l| l.contains(" interrupted ")).unwrap_or_else(|| panic!("the leaf in:\n{tree}"));
    assert!(line.contains("interrupted") && line.ends_with("stopped by guard: depth 2 > 1"), "{line}");
    let stopped: Vec<&Value> = threads.iter().filter(|t| t.get("stoppedBy").is_some()).collect();
    assert_eq!(stopped.len(), 1);
    assert_eq!(
        (stopped[0]["id"].as_str(), stopped[0]["stoppedBy"].as_str()),
        (Some(leaf.as_str()), Some("guard: depth 2 > 1"))
    );

    // The run store keeps the guard's stop as it ended, confirmed by the app-server (issue 23: it
    // was kept as "interrupt asked").
    let root = threads.iter().find(|t| t["depth"] == 0).and_then(|t| t["id"].as_str()).expect("the root");
    let kept = swarmtop::store::Store::open(&store).expect("the run store");
    let acts = kept.backend().acts(root).expect("its acts");
    let seen: Vec<(&str, &str, &str, &str)> =
        acts.iter().map(|a| (a.kind.as_str(), a.by.as_str(), a.target.as_str(), a.outcome.as_str())).collect();
    assert_eq!(seen, [("interrupt", "guard", leaf.as_str(), "interrupted")]);
    assert!(acts[0].detail.ends_with(": depth 2 > 1") && acts[0].stopped(), "{:?}", acts[0]);
}
