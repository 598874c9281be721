//! End-to-end with the real Claude Code CLI 2.1.332 (`-p`, stream-json and transcripts): a foreground
//! sub-agent whose first request answers (a `ls`) and whose next ones all get HTTP 529, while the lead
//! reads the failure and goes on to a closing answer. In both inputs: the child `failed` with the spend of
//! its one good response, its card (the `Agent` call) `Failed`, the lead's turn `Completed` and the session
//! idle — the child's failure is not the parent's.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly, only
//! when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::time::Duration;

use serde_json::json;
use support::anthropic::{Block, MessagesRequest, Reply, Script};
use support::claude_driver::{self, RunOptions, binary};
use support::ingest::ingest;
use swarmtop::model::Status;
use swarmtop::model::TurnStatus;
use swarmtop::router::Role;
use swarmtop::wire::fact::ItemStatus;

const CARD: &str = "toolu_failing_helper";

struct ChildFails;

impl Script for ChildFails {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let blocks = match (req.agent.as_deref(), req.is_subagent, req.step) {
            (Some("lead"), false, 0) => vec![Block::ToolUse {
                id: CARD.to_owned(),
                name: "Agent".to_owned(),
                input: json!({
                    "description": "Flaky helper",
                    "prompt": "[[agent:flaky]] List the files, then summarise them.",
                    "subagent_type": "general-purpose",
                    "run_in_background": false,
                }),
            }],
            (Some("flaky"), true, 0) => vec![Block::ToolUse {
                id: "toolu_flaky_ls".to_owned(),
                name: "Bash".to_owned(),
                input: json!({"command": "ls", "description": "List"}),
            }],
            (Some("flaky"), true, _) => {
                return Reply::Error { status: 529, kind: "overloaded_error", message: "Overloaded" };
            }
            (Some("lead"), false, _) => vec![Block::Text("The helper failed; I listed nothing more.".to_owned())],
            _ => vec![Block::Text("Side answer.".to_owned())],
        };
        let stop = if matches!(blocks[0], Block::ToolUse { .. }) { "tool_use" } else { "end_turn" };
        Reply::answer(blocks, stop)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_a_sub_agent_failing_mid_way_fails_alone() {
    let Some(bin) = binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    let opts = RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None };
    let run = claude_driver::run_with(&bin, ChildFails, opts, world, &[]).await.expect("the run");
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    claude_driver::keep_if_asked(&run, "child_fails");
    let good = run.served.iter().filter(|s| s.agent.as_deref() == Some("flaky") && s.status == 200).count();
    let failed = run.served.iter().filter(|s| s.agent.as_deref() == Some("flaky") && s.status == 529).count();
    assert_eq!(good, 1, "the helper's first request answered");
    assert!(failed >= 1, "its next ones were refused");
    for (what, path) in [("stream-json", run.world.stream.clone()), ("transcripts", run.world.projects())] {
        let p = ingest(&path);
        assert_eq!(p.model.threads.len(), 2, "{what}: the session and its helper");
        let root = p.model.threads.iter().find(|t| t.role == Role::Root).expect("the session");
        let child = p.model.threads.iter().find(|t| t.role == Role::Child).expect("the helper");
        assert_eq!(child.status, Status::Failed, "{what}: the helper failed");
        assert_eq!(child.card.as_deref(), Some(CARD), "{what}: under its card");
        let card = root.items.iter().find(|i| &*i.id == CARD).expect("the card");
        assert_eq!(card.status, ItemStatus::Failed, "{what}: the Agent call failed ({})", card.text.as_str());
        assert_eq!(root.turns.len(), 1, "{what}");
        assert_eq!(
            root.turns.get(0).unwrap().status,
            TurnStatus::Completed,
            "{what}: the lead's turn went on and completed"
        );
        assert_eq!(root.status, Status::Idle, "{what}: the session ended its turn");
        if what == "transcripts" {
            assert_eq!(child.tokens.total, 1130, "{what}: the helper's one good response (100 + 10 + 1000 + 20)");
        }
    }
}
