//! Feeding recorded inputs on every core (`swarmtop::feed`) gives what feeding them one record at
//! a time gives: the same events in the same order, and the same `stats --json`, whatever the
//! number of decoder threads and however the records fall into chunks.

use std::fmt::Write as _;
use std::path::PathBuf;

use swarmtop::commands::stats::render_json;
use swarmtop::feed;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::{self, Input};
use swarmtop::source::merge::{Merged, Order, Timing};

fn fixtures(paths: &[&str]) -> Vec<Input> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    files::expand(&paths.iter().map(|p| root.join(p)).collect::<Vec<_>>()).expect("fixtures are there")
}

/// Every event as text: a routed line with its lowered facts, not the whole registry each time.
fn log(out: &mut String) -> impl FnMut(&Event<'_, '_>) + '_ {
    |event: &Event<'_, '_>| {
        let _ = match event {
            Event::Line(r) => writeln!(
                out,
                "line {} {:?} thread {:?} session {:?} owner {:?} replayed {} {:?}",
                r.line_no, r.class, r.thread, r.session, r.owner, r.replayed, r.record
            ),
            other => writeln!(out, "{other:?}"),
        };
    }
}

/// The records one at a time, as the merge by stream time hands them out.
fn one_by_one(inputs: &[Input]) -> (String, String) {
    let mut events = String::new();
    let mut pipeline = Pipeline::default();
    let mut sink = log(&mut events);
    let mut merged = Merged::open(inputs, Timing::default()).expect("open");
    // A damaged input (the truncated `.gz` of hostile/) ends the stream there, as in `ingest`.
    while let Ok(Some((record, origin))) = merged.next_record() {
        pipeline.feed(record, origin, &mut sink);
    }
    pipeline.finish_with(&mut sink);
    drop(sink);
    (events, render_json(&pipeline))
}

fn on_every_core(inputs: &[Input], decoders: usize, chunk_bytes: usize) -> (String, String) {
    let mut events = String::new();
    let mut pipeline = Pipeline::default();
    let mut sink = log(&mut events);
    if let Err(f) = feed::feed(inputs, Timing::default(), decoders, chunk_bytes, &mut pipeline, &mut sink) {
        assert_eq!(f.doing, "reading", "{f:?}");
    }
    pipeline.finish_with(&mut sink);
    drop(sink);
    (events, render_json(&pipeline))
}

fn same_either_way(paths: &[&str]) {
    let inputs = fixtures(paths);
    let (events, stats) = one_by_one(&inputs);
    assert!(events.lines().count() > 10, "the inputs hold records");
    // One record per chunk with three decoders reorders the most; the default chunk the least.
    for (decoders, chunk_bytes) in [(1, feed::CHUNK_BYTES), (2, 1), (3, 1), (2, 4096), (2, feed::CHUNK_BYTES)] {
        let (e, s) = on_every_core(&inputs, decoders, chunk_bytes);
        assert!(e == events, "events differ with {decoders} decoders, {chunk_bytes}-byte chunks");
        assert_eq!(s, stats, "stats with {decoders} decoders, {chunk_bytes}-byte chunks");
    }
}

#[test]
fn codex_captures_route_the_same() {
    same_either_way(&["tests/fixtures/codex-0.171.0"]);
}

#[test]
fn claude_transcripts_route_the_same() {
    same_either_way(&["tests/fixtures/claude-2.1.39"]);
}

#[test]
fn rollouts_keep_the_thread_their_first_line_named() {
    // Rollout lines are lowered on the routing thread, in order: a file's later lines belong to
    // the thread its `session_meta` named, across chunk boundaries.
    same_either_way(&["tests/fixtures/codex-0.171.0/rollouts"]);
}

#[test]
fn hostile_and_mixed_inputs_route_the_same() {
    same_either_way(&[
        "tests/fixtures/hostile",
        "tests/fixtures/tee",
        "tests/fixtures/codex-0.171.0/probe.server.ndjson",
    ]);
}

#[test]
fn an_input_that_cannot_be_opened_stops_the_feed() {
    let mut inputs = fixtures(&["tests/fixtures/codex-0.171.0/probe.server.ndjson"]);
    inputs.push(Input::File(PathBuf::from("/nonexistent/swarmtop-feed-test.ndjson")));
    let mut pipeline = Pipeline::default();
    let nothing = &mut |_: &Event<'_, '_>| {};
    let failed = feed::feed(inputs.as_slice(), Timing::default(), 2, 1, &mut pipeline, nothing).unwrap_err();
    assert_eq!((failed.doing, failed.error.kind()), ("opening", std::io::ErrorKind::NotFound));
    assert!(failed.input.ends_with("swarmtop-feed-test.ndjson"));
    // Merged by time, every input is opened before any record is read.
    assert_eq!(pipeline.counters().lines, 0);
    // Read one after another, everything before it was routed, as the one-by-one loop would have.
    let named = Timing { order: Order::Named, until: None };
    let mut pipeline = Pipeline::default();
    let failed = feed::feed(inputs.as_slice(), named, 2, 1, &mut pipeline, nothing).unwrap_err();
    assert_eq!(failed.doing, "opening");
    assert_eq!(pipeline.counters().lines, 18);
}

#[test]
fn several_inputs_are_read_in_stream_time() {
    // The parent's file and its children's, read by time: a child's first line comes before the
    // parent's last; read one file after another, every child line would come after it.
    let inputs = fixtures(&["tests/fixtures/claude-2.1.332/parallel"]);
    let mut merged = Merged::open(inputs.as_slice(), Timing::default()).expect("open");
    let (mut times, mut files) = (Vec::new(), Vec::new());
    while let Some((_, origin)) = merged.next_record().expect("read") {
        files.push(origin.info().and_then(|i| i.file.clone()));
        times.push(merged.time());
    }
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in stream time");
    let root = files.iter().rposition(|f| f.as_deref().is_some_and(|f| f.ends_with("f0.jsonl.gz"))).expect("root");
    assert!(files[..root].iter().any(|f| f.as_deref().is_some_and(|f| f.contains("subagents"))), "interleaved");
}
