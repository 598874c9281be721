//! Decode + route any bytes: never a panic, and every line counted exactly once.
//! Run: `cargo install cargo-fuzz && cargo +nightly fuzz run decode_route` (from the repo root).
#![no_main]

use libfuzzer_sys::fuzz_target;
use swarmtop::pipeline::Pipeline;

fuzz_target!(|data: &[u8]| {
    let mut p = Pipeline::default();
    for record in data.split(|&b| b == b'\n') {
        if !record.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            p.push(record);
        }
    }
    p.finish();
    let c = p.counters();
    assert!(c.conserved(), "{c:?}");
    assert_eq!(c.early, c.replayed + c.evicted + c.pending_at_end);
});
