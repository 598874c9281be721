//! End-to-end with the real Claude Code CLI 2.1.332 (`-p`, stream-json with `--include-hook-events`, and
//! transcripts) running settings.json hooks that succeed, print, and fail without blocking: nothing is
//! malformed or mis-typed, the failed run is an item of its own (`Failed`, its exit code and stderr), the
//! successful ones are none, the tool call the hooks ran around stays completed (a hook's failure is not
//! the call's), and the session ends idle.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly, only
//! when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{Block, MessagesRequest, Reply, Script};
use support::claude_driver::binary;
use support::claude_driver::{self, ClaudeRun, RunOptions};
use support::ingest::ingest;
use swarmtop::model::Status;
use swarmtop::wire::fact::ItemStatus;

/// The lead runs one `ls`, then closes with a text.
struct OneCall;

impl Script for OneCall {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let lead = req.agent.as_deref() == Some("lead") && !req.is_subagent && !req.tools.is_empty();
        let (blocks, stop) = match (lead, req.step) {
            (true, 0) => (
                vec![Block::ToolUse {
                    id: "toolu_hooked_ls".to_owned(),
                    name: "Bash".to_owned(),
                    input: json!({"command": "ls", "description": "List"}),
                }],
                "tool_use",
            ),
            (true, _) => (vec![Block::Text("Listed.".to_owned())], "end_turn"),
            (false, _) => (vec![Block::Text("Side answer.".to_owned())], "end_turn"),
        };
        Reply::answer(blocks, stop)
    }
}

async fn run(world: claude_driver::World, args: &[&str]) -> Option<ClaudeRun> {
    let bin = binary()?;
    let opts = RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None };
    let run = claude_driver::run_with(&bin, OneCall, opts, world, args)
        .await
        .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    Some(run)
}

fn hooked_world() -> claude_driver::World {
    let world = claude_driver::World::new().expect("a world");
    let settings = json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo session-start"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo prompt-seen"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre-ok"}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo post-failed >&2; exit 1"},
        ]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo stop-ok"}]}],
    }});
    std::fs::write(world.home.join(".claude/settings.json"), settings.to_string()).expect("settings.json");
    world
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_hooks_that_run_and_fail_leave_the_call_and_the_session_right() {
    let Some(run) = run(hooked_world(), &["--include-hook-events"]).await else { return };
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    claude_driver::keep_if_asked(&run, "hooks");
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let responses: Vec<&Value> = lines.iter().filter(|l| l["subtype"] == "hook_response").collect();
    assert!(responses.len() >= 4, "a hook_response per hook run: {}", responses.len());
    for (what, path) in [("stream-json", run.world.stream.clone()), ("transcripts", run.world.projects())] {
        let p = ingest(&path);
        assert_eq!(p.model.diagnostics.malformed.len(), 0, "{what}: nothing malformed");
        assert_eq!(p.model.threads.len(), 1, "{what}: the session alone");
        let root = &p.model.threads[0];
        let call = root.items.iter().find(|i| &*i.id == "toolu_hooked_ls").expect("the call's item");
        assert_eq!(
            call.status,
            ItemStatus::Completed,
            "{what}: the call ran; its PostToolUse hook's failure is the hook's"
        );
        let hooks: Vec<_> = root.items.iter().filter(|i| i.id.starts_with("hook:")).collect();
        assert_eq!(hooks.len(), 1, "{what}: one item for the one failed run, none for the four that succeeded");
        assert_eq!(hooks[0].status, ItemStatus::Failed, "{what}");
        assert_eq!(hooks[0].exit_code, Some(1), "{what}");
        assert!(hooks[0].text.as_str().contains("post-failed"), "{what}: its stderr: {}", hooks[0].text.as_str());
        assert_eq!(root.status, Status::Idle, "{what}: the session's end");
    }
}
