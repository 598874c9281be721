//! One OTLP/HTTP request body, as `listen --otlp` receives it (issue 22: amplification, ids,
//! nesting). The first byte picks the signal (bit 0: logs), the encoding (bit 1: JSON) and gzip
//! (bit 2); the rest is the body. Never a panic; a refusal is a 400 or a 413; what is accepted is
//! within its bounds, every record is JSON embedded verbatim (never `rawB64`), and the wire stage
//! reads each one back. Each body is received twice, so the second time the span index already
//! knows the spans of the first.
#![no_main]

use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use swarmtop::source::otlp::index::SpanIndex;
use swarmtop::source::otlp::request::{self, Encoding, Kind, Signal};
use swarmtop::source::otlp::{Counters, MAX_RECORDED_BYTES};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else { return };
    let kind = Kind {
        signal: if flags & 1 == 0 { Signal::Traces } else { Signal::Logs },
        encoding: if flags & 2 == 0 { Encoding::Protobuf } else { Encoding::Json },
        gzip: flags & 4 != 0,
    };
    let index = Mutex::new(SpanIndex::default());
    let counters = Counters::default();
    for _ in 0..2 {
        let received = match request::receive(body, kind, &index, &counters, 1) {
            Ok(r) => r,
            Err(refusal) => {
                assert!(matches!(refusal.status(), 400 | 413), "{refusal}");
                continue;
            }
        };
        // Links follow the records, a few hundred bytes each at most.
        assert!(received.batch.len() <= MAX_RECORDED_BYTES + (8 << 20), "{} bytes", received.batch.len());
        let mut records = 0;
        for line in received.batch.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let record: serde_json::Value = serde_json::from_slice(line).expect("every record is JSON");
            let msg = record.get("msg").expect("a record embeds its line, never as rawB64");
            let text = msg.to_string();
            assert!(swarmtop::wire::otlp::parse(&text).is_some(), "the wire stage reads {text}");
            if msg["otlp"] != "link" {
                records += 1;
            }
        }
        assert_eq!(records as u64, received.spans + received.logs);
    }
});
