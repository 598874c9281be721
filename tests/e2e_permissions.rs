//! End-to-end with the real Claude Code CLI 2.1.332 (`-p`, stream-json and transcripts) where it refuses
//! work: the permission checks (`--permission-mode default` without `--dangerously-skip-permissions`, and
//! `plan`), a settings.json hook that blocks a tool, and a session whose every request gets HTTP 529.
//!
//! A refused call never ran: it is `Declined`, in both inputs, never `Failed` or lost; the lines that say so
//! (`system` `permission_denied`, whose `message` is a string) are read, not malformed. A session whose
//! requests all fail is `failed`, not idle.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly, only
//! when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{Block, MessagesRequest, Reply, Script};
use support::claude_driver::binary;
use support::claude_driver::{self, ClaudeRun, RunOptions};
use support::ingest::ingest;
use swarmtop::model::Status;
use swarmtop::wire::fact::ItemStatus;

/// The lead's first answer is `calls`, its next one a closing text; every other request a side answer.
struct Calls(fn(&Path) -> Vec<Block>, std::path::PathBuf);

impl Script for Calls {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let lead = req.agent.as_deref() == Some("lead") && !req.is_subagent && !req.tools.is_empty();
        let (blocks, stop) = match (lead, req.step) {
            (true, 0) => ((self.0)(&self.1), "tool_use"),
            (true, _) => (vec![Block::Text("Some of that was refused.".to_owned())], "end_turn"),
            (false, _) => (vec![Block::Text("Side answer.".to_owned())], "end_turn"),
        };
        Reply::answer(blocks, stop)
    }
}

fn tool(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse { id: id.to_owned(), name: name.to_owned(), input }
}

async fn run(script: impl Script, world: claude_driver::World, args: &[&str]) -> Option<ClaudeRun> {
    let bin = binary()?;
    let opts = RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None };
    let run = claude_driver::run_with(&bin, script, opts, world, args)
        .await
        .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    eprintln!("run: {:?}, exit {:?}", run.elapsed, run.exit);
    Some(run)
}

fn result_line(run: &ClaudeRun) -> Value {
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let last = text.lines().rev().find(|l| l.contains(r#""type":"result""#)).expect("a result line");
    serde_json::from_str(last).expect("JSON")
}

/// The session's items by id, in both inputs, with what the session ended as.
fn check(run: &ClaudeRun, expect: &[(&str, ItemStatus)], end: Status) {
    for (what, path) in [("stream-json", run.world.stream.clone()), ("transcripts", run.world.projects())] {
        let p = ingest(&path);
        assert_eq!(p.model.threads.len(), 1, "{what}: the session alone");
        let root = &p.model.threads[0];
        for (id, status) in expect {
            let item = root.items.iter().find(|i| &*i.id == *id).unwrap_or_else(|| panic!("{what}: no item {id}"));
            assert_eq!(item.status, *status, "{what}: {id} ({})", item.text.as_str());
        }
        assert_eq!(root.status, end, "{what}: the session's end");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_refused_calls_are_declined_in_the_default_mode() {
    fn calls(_: &Path) -> Vec<Block> {
        vec![
            Block::Text("Writing outside the project, then a compound command.".to_owned()),
            tool("toolu_deny_write", "Write", json!({"file_path": "/nonexistent/swarmtop-denied.txt", "content": "x"})),
            tool(
                "toolu_deny_bash",
                "Bash",
                json!({"command": "rm -rf build && curl http://127.0.0.1:9/", "description": "Clean"}),
            ),
            tool("toolu_deny_ls", "Bash", json!({"command": "ls", "description": "List"})),
        ]
    }
    let world = claude_driver::World::new().expect("a world");
    let project = world.project.clone();
    let Some(run) = run(Calls(calls, project), world, &["--permission-mode", "default"]).await else { return };
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let denied: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .filter(|l| l["subtype"] == "permission_denied")
        .collect();
    assert_eq!(denied.len(), 2, "one permission_denied line per refused call");
    assert!(denied.iter().all(|d| d["message"].is_string()), "its message is the text the model is told");
    let listed = result_line(&run)["permission_denials"].as_array().map_or(0, Vec::len);
    assert_eq!(listed, 2, "result.permission_denials lists them");
    check(
        &run,
        &[
            ("toolu_deny_write", ItemStatus::Declined),
            ("toolu_deny_bash", ItemStatus::Declined),
            ("toolu_deny_ls", ItemStatus::Completed),
        ],
        Status::Idle,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_plan_mode_declines_writes_and_runs_reads() {
    fn calls(project: &Path) -> Vec<Block> {
        vec![
            tool("toolu_plan_ls", "Bash", json!({"command": "ls", "description": "List"})),
            tool("toolu_plan_write", "Write", json!({"file_path": project.join("PLAN.md"), "content": "x"})),
        ]
    }
    let world = claude_driver::World::new().expect("a world");
    let project = world.project.clone();
    let Some(run) = run(Calls(calls, project), world, &["--permission-mode", "plan"]).await else { return };
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    let denials = result_line(&run)["permission_denials"].clone();
    assert_eq!(denials[0]["tool_use_id"], "toolu_plan_write", "the write is refused in plan mode: {denials}");
    check(&run, &[("toolu_plan_ls", ItemStatus::Completed), ("toolu_plan_write", ItemStatus::Declined)], Status::Idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_a_blocking_hook_declines_the_call_and_hook_lines_are_read() {
    fn calls(_: &Path) -> Vec<Block> {
        vec![tool("toolu_hook_ls", "Bash", json!({"command": "ls", "description": "List"}))]
    }
    let world = claude_driver::World::new().expect("a world");
    let settings = json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo session-start"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo blocked >&2; exit 2"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
    }});
    std::fs::write(world.home.join(".claude/settings.json"), settings.to_string()).expect("settings.json");
    let project = world.project.clone();
    let Some(run) = run(Calls(calls, project), world, &["--include-hook-events"]).await else { return };
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let hooks = text.lines().filter(|l| l.contains(r#""subtype":"hook_response""#)).count();
    assert!(hooks >= 2, "hook_started / hook_response lines for SessionStart, PreToolUse, Stop: {hooks}");
    check(&run, &[("toolu_hook_ls", ItemStatus::Declined)], Status::Idle);
}

/// Every request of the session gets HTTP 529 (`CLAUDE_CODE_MAX_RETRIES=1`, so it gives up at once).
struct Overloaded;

impl Script for Overloaded {
    fn reply(&self, _: &MessagesRequest<'_>) -> Reply {
        Reply::Error { status: 529, kind: "overloaded_error", message: "Overloaded" }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_a_session_whose_requests_all_fail_is_failed() {
    let world = claude_driver::World::new().expect("a world");
    let Some(run) = run(Overloaded, world, &[]).await else { return };
    let result = result_line(&run);
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["terminal_reason"], "api_error", "{result}");
    for (what, path) in [("stream-json", run.world.stream.clone()), ("transcripts", run.world.projects())] {
        let p = ingest(&path);
        assert_eq!(p.model.threads.len(), 1, "{what}");
        let root = &p.model.threads[0];
        assert_eq!(root.status, Status::Failed, "{what}: failed, not idle");
        assert_eq!(root.tokens.total, 0, "{what}: nothing was spent");
    }
}
