//! End-to-end with the real Claude Code CLI 2.1.332 in the mode SDK users pipe most:
//! `-p --output-format stream-json --verbose --include-partial-messages`, offline against the scripted mock
//! of `support/anthropic.rs` (the `team` session of `support/claude_scenario.rs`).
//!
//! First the facts of the raw stream (so a CLI that writes something else fails here, naming the fact), then
//! swarmtop: the session's text streams into the items its `assistant` lines finish (none twice), and each of
//! its responses is counted once with its final output figure, exactly what the mock served.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly, only
//! when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{Block, MessagesRequest, Reply, Script, Usage};
use support::claude_driver::binary;
use support::claude_driver::{self, RunOptions};
use support::claude_scenario::{Pacing, Scenario};
use support::ingest::ingest;
use swarmtop::wire::fact::{ItemKind, ItemStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_partial_messages_stream_the_sessions_text_and_count_each_response_once() {
    let Some(bin) = binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    let run = claude_driver::run_with(
        &bin,
        Scenario::team(Pacing::LIVE),
        RunOptions { timeout: Duration::from_secs(90), interrupt_after: None, telemetry: None },
        world,
        &["--include-partial-messages"],
    )
    .await
    .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    eprintln!("partial run: {:?}, exit {:?}", run.elapsed, run.exit);
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());

    // The facts of the stream (wire.md §6, partial mode).
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let events: Vec<&Value> = lines.iter().filter(|l| l["type"] == "stream_event").collect();
    assert!(!events.is_empty(), "--include-partial-messages writes stream_event lines");
    for e in &events {
        assert!(e["parent_tool_use_id"].is_null(), "only the session's responses stream: {e}");
        assert!(e["api_message_id"].is_string(), "each event names its response: {e}");
    }
    let kinds: HashSet<&str> = events.iter().filter_map(|e| e["event"]["type"].as_str()).collect();
    for k in ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta"] {
        assert!(kinds.contains(k), "no {k} event");
    }
    let session = lines.iter().find_map(|l| l["session_id"].as_str()).expect("a session id").to_owned();

    // Through swarmtop.
    let p = ingest(&run.world.stream);
    assert_eq!(p.format(), "claude-stream-json");
    let root = p.model.thread(p.find(&session).expect("the session"));
    // Every response of the lead, counted once, with the output its message_delta said.
    let mut served = Usage::default();
    for s in &run.served {
        if let (Some("lead"), Some(u), 200, false) = (s.agent.as_deref(), s.usage, s.status, s.is_subagent) {
            served.add(u);
        }
    }
    eprintln!(
        "session: {} tokens ({} output) from the stream; the mock served {} ({} output)",
        root.tokens.total,
        root.tokens.output,
        served.total(),
        served.output
    );
    assert_eq!(root.tokens.output, served.output, "the session's final output figures, each once");
    assert_eq!(root.tokens.total, served.total(), "the session's responses, each once");
    // The streamed text ends as the assistant lines say it, one item per block.
    let texts: Vec<&str> = root
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::AgentMessage | ItemKind::Reasoning))
        .map(|i| i.text.as_str())
        .collect();
    assert!(!texts.is_empty(), "the session said something");
    let unique: HashSet<&&str> = texts.iter().collect();
    assert_eq!(unique.len(), texts.len(), "no block twice: {texts:#?}");
    for i in root.items.iter().filter(|i| matches!(i.kind, ItemKind::AgentMessage | ItemKind::Reasoning)) {
        assert_eq!(i.status, ItemStatus::Completed, "{} streamed and was finished", i.id);
        assert!(!i.text.is_empty(), "{} has its text", i.id);
    }
}

/// The lead's tools besides sub-agents, in one answer: a background Bash (a `task_started` of `task_type:
/// local_bash` in the stream, which is no sub-agent), a failing Bash, a Read of a file that is not there, a
/// TodoWrite; then a closing text (again after the background command's notification).
struct Tools;

impl Script for Tools {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let lead = req.agent.as_deref() == Some("lead") && !req.is_subagent && !req.tools.is_empty();
        let tool =
            |id: &str, name: &str, input: Value| Block::ToolUse { id: id.to_owned(), name: name.to_owned(), input };
        let blocks = match (lead, req.step) {
            (true, 0) => vec![
                Block::Text("Checking a few things.".to_owned()),
                tool(
                    "toolu_tools_bg",
                    "Bash",
                    json!({"command": "sleep 1; echo built", "description": "Build", "run_in_background": true}),
                ),
                tool("toolu_tools_fail", "Bash", json!({"command": "exit 3", "description": "Fail"})),
                tool("toolu_tools_read", "Read", json!({"file_path": "/nonexistent/swarmtop/missing.txt"})),
                tool(
                    "toolu_tools_todo",
                    "TodoWrite",
                    json!({"todos": [{"content": "Check", "status": "in_progress", "activeForm": "Checking"}]}),
                ),
            ],
            (true, _) => vec![Block::Text(format!("Done (step {}).", req.step))],
            (false, _) => vec![Block::Text("Side answer.".to_owned())],
        };
        let stop = if matches!((lead, req.step), (true, 0)) { "tool_use" } else { "end_turn" };
        Reply::Message {
            blocks,
            stop,
            usage: Usage {
                input: 100 + req.step as u64,
                cache_write_5m: 10,
                cache_write_1h: 0,
                cache_read: 1000,
                output: 20 + req.step as u64,
            },
            model: None,
            pre_delay: Duration::from_millis(50),
            delta_delay: Duration::from_millis(5),
            signal: false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_tools_background_bash_errors_and_todos_are_typed_and_nothing_is_lost() {
    let Some(bin) = binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    let run = claude_driver::run_with(
        &bin,
        Tools,
        RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None },
        world,
        &["--include-partial-messages"],
    )
    .await
    .unwrap_or_else(|e| panic!("the session did not complete: {e}"));
    eprintln!("tools run: {:?}, exit {:?}", run.elapsed, run.exit);
    claude_driver::keep_if_asked(&run, "tools");
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    for (what, path) in [("stream-json", run.world.stream.clone()), ("transcripts", run.world.projects())] {
        let p = ingest(&path);
        assert_eq!(p.model.threads.len(), 1, "{what}: the session alone, no tool taken for an agent");
        let root = &p.model.threads[0];
        let item =
            |id: &str| root.items.iter().find(|i| &*i.id == id).unwrap_or_else(|| panic!("{what}: no item {id}"));
        for i in &root.items {
            eprintln!("{what}: {} {:?} {:?} {:?}", i.id, i.kind, i.status, i.title.as_str());
        }
        assert_eq!(item("toolu_tools_bg").kind, ItemKind::Command, "{what}");
        assert_eq!(item("toolu_tools_bg").status, ItemStatus::Completed, "{what}: launched");
        assert_eq!(item("toolu_tools_fail").status, ItemStatus::Failed, "{what}: exit 3 is an error");
        assert_eq!(item("toolu_tools_read").status, ItemStatus::Failed, "{what}: a missing file is an error");
        // 2.1.332 offers no TodoWrite in -p mode (TaskCreate, TaskUpdate, ... instead): the call is refused.
        assert_eq!(item("toolu_tools_todo").status, ItemStatus::Failed, "{what}: a tool not offered");
        assert_eq!(root.status, swarmtop::model::Status::Idle, "{what}: the session ended idle");
    }
}
