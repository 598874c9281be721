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

/// The rollout files the server wrote for a run tell the same tree, models, tokens and costs as its
/// app-server traffic: two views of one session agree.
#[test]
fn rollouts_agree_with_the_app_server_traffic() {
    for run in ["collab_v1", "collab_v2"] {
        let dir = fixture("rollouts").join(run);
        let pipeline =
            commands::ingest(&[dir], swarmtop::pipeline::Config::default(), &mut |_: &swarmtop::router::Event<
                '_,
                '_,
            >| {})
            .expect("rollouts read");
        assert_eq!(pipeline.format(), "codex-rollout");
        assert_eq!(pipeline.counters().malformed, 0);
        let rollout: serde_json::Value = serde_json::from_str(&stats::render_json(&pipeline)).unwrap();
        let wire: serde_json::Value = serde_json::from_str(&stats_of(&[&format!("{run}.server.ndjson")])).unwrap();
        let view = |v: &serde_json::Value| -> Vec<serde_json::Value> {
            let mut threads: Vec<serde_json::Value> = v["threads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    serde_json::json!([
                        t["id"],
                        t["parent"],
                        t["depth"],
                        t["name"],
                        t["model"],
                        t["tokens"],
                        t["costUsd"]
                    ])
                })
                .collect();
            threads.sort_by_key(ToString::to_string);
            threads
        };
        assert_eq!(view(&rollout), view(&wire), "{run}");
        assert_eq!(rollout["totals"], wire["totals"], "{run}");
    }
}

/// Rollout files followed as they grow arrive in alternating pieces: told which file each piece
/// comes from, the router attributes every line as if the files had been read one by one.
#[test]
fn interleaved_rollout_files_are_attributed_by_file() {
    let dir = fixture("rollouts").join("collab_v1");
    let whole = commands::ingest(
        std::slice::from_ref(&dir),
        swarmtop::pipeline::Config::default(),
        &mut |_: &swarmtop::router::Event<'_, '_>| {},
    )
    .expect("rollouts read");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let halves: Vec<(swarmtop::wire::Origin, Vec<String>, Vec<String>)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let (a, b) = lines.split_at(lines.len() / 2);
            let origin = swarmtop::source::files::origin(&swarmtop::source::files::Input::File(f.clone()));
            (origin, a.to_vec(), b.to_vec())
        })
        .collect();
    let mut p = swarmtop::pipeline::Pipeline::default();
    // Every file's first half, then every second half: no second half starts with its session_meta.
    for pick in [1, 2] {
        for (origin, first, second) in &halves {
            for line in if pick == 1 { first } else { second } {
                p.feed(
                    swarmtop::source::files::Record::Line(line.as_bytes()),
                    origin,
                    &mut |_: &swarmtop::router::Event<'_, '_>| {},
                );
            }
        }
    }
    p.finish();
    let a: serde_json::Value = serde_json::from_str(&stats::render_json(&whole)).unwrap();
    let b: serde_json::Value = serde_json::from_str(&stats::render_json(&p)).unwrap();
    let tree = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        let mut t: Vec<_> = v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| serde_json::json!([t["id"], t["parent"], t["tokens"], t["costUsd"], t["status"]]))
            .collect();
        t.sort_by_key(ToString::to_string);
        t
    };
    assert_eq!(tree(&a), tree(&b));
    assert_eq!(a["totals"], b["totals"]);
}
