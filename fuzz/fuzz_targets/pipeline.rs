//! Every wire format (Codex app-server lines, rollouts, Claude transcripts, recording envelopes,
//! anything else) through the public pipeline entry, split into records by the files' reader with
//! a small line bound so that over-long records are exercised too: never a panic, every line
//! counted exactly once, every early line accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::read_records;
use swarmtop::wire::{Origin, OriginInfo};

/// A rollout file's name tells its thread; the first byte says whether the input is one.
const ROLLOUT_THREAD: &str = "01a2292d-f8ac-71e0-b822-647118037869";

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let mut p = Pipeline::default();
    let origin = if flags & 1 == 1 {
        Origin::new(OriginInfo { thread: Some(ROLLOUT_THREAD.into()), ..OriginInfo::default() })
    } else {
        Origin::NONE
    };
    let max_line = if flags & 2 == 2 { 64 } else { 1 << 20 };
    let mut records = 0u64;
    let _ = read_records(input, max_line, |record| {
        records += 1;
        p.feed(record, &origin, &mut |_: &Event<'_, '_>| {});
    });
    p.finish();
    let c = p.counters();
    assert!(c.conserved(), "{c:?}");
    assert_eq!(c.lines, records, "every record is one line");
    assert_eq!(c.early, c.replayed + c.evicted + c.pending_at_end, "{c:?}");
});
