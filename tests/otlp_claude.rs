//! The real Claude Code CLI (2.1.332, the harness of `tests/e2e_claude.rs`: pinned by
//! `scripts/setup-claude.sh`, run offline against the Rust mock of the Messages API) with its own
//! OpenTelemetry pointed at `swarmtop listen --otlp`: the tree swarmtop builds from the telemetry is
//! the one it builds from the transcripts the same run wrote — every agent, its parent, its tokens.

mod otlp;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use otlp::{Listener, stats};
use serde_json::Value;
use support::claude_driver::binary;
use support::claude_driver::{self, RunOptions};
use support::claude_scenario::{Pacing, Scenario};

/// Each thread's parent and token figures, by id.
fn figures(stats: &Value) -> BTreeMap<String, (Value, Value, Value, Value)> {
    stats["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["id"].as_str().unwrap().to_owned();
            let tok = &t["tokens"];
            (id, (t["parent"].clone(), tok["input"].clone(), tok["cachedInput"].clone(), tok["output"].clone()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_telemetry_gives_its_transcripts_tree() {
    let Some(bin) = binary() else { return };
    let listener = Listener::start(&[]);
    let world = claude_driver::World::new().expect("a world");
    let run = claude_driver::run(
        &bin,
        Scenario::team(Pacing::LIVE),
        RunOptions { timeout: Duration::from_secs(90), interrupt_after: None, telemetry: Some(listener.url()) },
        world,
    )
    .await
    .unwrap_or_else(|e| panic!("the team session did not complete: {e}"));
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    // The CLI flushes its exporters as it exits; the last request is applied as it arrives.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (received, err) = listener.stop();
    eprintln!("{err}");
    assert_eq!(received["input"]["format"], "otlp");
    assert_eq!(received["routing"]["malformed"], 0);
    let transcripts = stats(&[run.world.projects()]);
    let agents = figures(&transcripts);
    assert!(agents.len() >= 5, "the team: a session, children, a grandchild: {agents:?}");
    assert_eq!(figures(&received), agents, "the telemetry's tree is the transcripts'");
}
