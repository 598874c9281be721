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
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::anthropic::Usage;
use support::claude_driver::{self, ClaudeBinary, RunOptions, claude_binary};
use support::claude_scenario::{Pacing, Scenario};
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::wire::fact::{ItemKind, ItemStatus};

fn ingest(path: &Path) -> Pipeline {
    let p = swarmtop::commands::ingest(&[path.to_path_buf()], Config::default(), &mut |_: &swarmtop::router::Event<
        '_,
        '_,
    >| {})
    .unwrap_or_else(|e| panic!("ingesting {}: {e}", path.display()));
    assert!(p.counters().conserved(), "every line counted once");
    assert_eq!(p.counters().malformed, 0, "no malformed lines in {}", path.display());
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_partial_messages_stream_the_sessions_text_and_count_each_response_once() {
    let bin = match claude_binary() {
        ClaudeBinary::Found(p) => p,
        ClaudeBinary::Unavailable(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED real_claude_partial_messages: {why}");
            return;
        }
        ClaudeBinary::Unavailable(why) => panic!("the end-to-end test must run in CI: {why}"),
    };
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
