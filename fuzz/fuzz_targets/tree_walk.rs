//! The tree walks of the headless commands (`tree`, the `stats` table and `stats --json`) on
//! fuzzed input: never a panic or a stack overflow, the JSON is JSON, and it lists every thread.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swarmtop::commands::{stats, tree};
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::{MAX_LINE, read_records};
use swarmtop::wire::Origin;

fuzz_target!(|data: &[u8]| {
    let mut p = Pipeline::default();
    let _ = read_records(data, MAX_LINE, |record| {
        p.feed(record, &Origin::NONE, &mut |_: &Event<'_, '_>| {});
    });
    p.finish();
    let text = tree::render_tree(&p.model);
    assert!(!text.is_empty());
    let table = stats::render_text(&p);
    assert!(table.ends_with(&text), "the stats table ends with the tree");
    let json: serde_json::Value = serde_json::from_str(&stats::render_json(&p)).expect("stats --json is JSON");
    assert_eq!(json["threads"].as_array().map(Vec::len), Some(p.model.threads.len()));
    assert!(p.counters().conserved());
});
