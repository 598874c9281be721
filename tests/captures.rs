//! `stats --json` of every real capture, as reviewed snapshots. Each snapshot's tree was checked
//! against the capture by reading it: parents, depths, statuses, token totals and costs.

use std::path::PathBuf;

use swarmtop::commands::{self, stats};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0").join(name)
}

fn stats_of(files: &[&str]) -> String {
    let paths: Vec<PathBuf> = files.iter().map(|f| fixture(f)).collect();
    let pipeline =
        commands::ingest(&paths, swarmtop::pipeline::Config::default(), &mut |_: &swarmtop::router::Event<'_, '_>| {})
            .expect("fixture reads");
    let c = pipeline.counters();
    assert!(c.conserved(), "{c:?}");
    assert_eq!(c.malformed, 0);
    stats::render_json_pretty(&pipeline)
}

#[test]
fn probe() {
    insta::assert_snapshot!(stats_of(&["probe.server.ndjson"]));
}

#[test]
fn retry() {
    insta::assert_snapshot!(stats_of(&["retry.server.ndjson"]));
}

#[test]
fn fail() {
    insta::assert_snapshot!(stats_of(&["fail.server.ndjson"]));
}

#[test]
fn collab_v1() {
    insta::assert_snapshot!(stats_of(&["collab_v1.server.ndjson"]));
}

#[test]
fn collab_v2() {
    insta::assert_snapshot!(stats_of(&["collab_v2.server.ndjson"]));
}

/// Client lines read after the server's: requests are control and change no figure but the
/// control count.
#[test]
fn collab_v1_with_client_lines() {
    let both: serde_json::Value =
        serde_json::from_str(&stats_of(&["collab_v1.server.ndjson", "collab_v1.client.ndjson"])).unwrap();
    let server: serde_json::Value = serde_json::from_str(&stats_of(&["collab_v1.server.ndjson"])).unwrap();
    assert_eq!(both["threads"], server["threads"]);
    assert_eq!(both["routing"]["control"].as_u64().unwrap(), server["routing"]["control"].as_u64().unwrap() + 8);
}
