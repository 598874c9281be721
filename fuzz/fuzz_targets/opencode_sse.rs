//! `opencode serve`'s event stream, as the live source reads it: any bytes, delivered in pieces
//! of the size the first byte says, with line and event bounds the second byte says (so that
//! cut lines and events are exercised), through the SSE reader and into records. Never a panic
//! or an error but the stream's end; every record is one line of JSON; every event's data keeps
//! within its bound; every record goes through the pipeline as one line.
#![no_main]

use std::io::{BufReader, Read};

use libfuzzer_sys::fuzz_target;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::{MAX_LINE, read_records};
use swarmtop::source::opencode::{Serve, sse_records};
use swarmtop::source::sse::{Sse, SseBounds, read_sse};
use swarmtop::wire::Origin;

/// Hands out its bytes `step` at a time, as a socket may.
struct Pieces<'a> {
    rest: &'a [u8],
    step: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.step).min(self.rest.len());
        out[..n].copy_from_slice(&self.rest[..n]);
        self.rest = &self.rest[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let [step, bound, input @ ..] = data else { return };
    let step = usize::from(*step).max(1);
    let bounds = SseBounds { line: usize::from(*bound) + 8, event: usize::from(*bound) / 2 + 1 };
    let reader = || BufReader::with_capacity(step.max(8), Pieces { rest: input, step });

    let mut events = 0usize;
    let ended = read_sse(&mut reader(), bounds, &mut |e| {
        if let Sse::Event { data: text, .. } = e
            && !text.is_empty()
        {
            events += 1;
            // Replacement characters are three bytes for every bad byte at most.
            assert!(text.len() <= 3 * bounds.event, "{} bytes over the event bound {}", text.len(), bounds.event);
        }
        true
    });
    assert!(matches!(ended, Ok(true)), "{ended:?}");

    for serve in [Serve::All, Serve::Deltas] {
        let mut lines = 0u64;
        let mut p = Pipeline::default();
        let ended = sse_records(&mut reader(), serve, bounds, |records| {
            assert_eq!(records.last(), Some(&b'\n'), "records end their lines");
            for line in records[..records.len() - 1].split(|&b| b == b'\n') {
                serde_json::from_slice::<serde_json::Value>(line).expect("every record is JSON");
                lines += 1;
            }
            let _ =
                read_records(records.as_slice(), MAX_LINE, |r| p.feed(r, &Origin::NONE, &mut |_: &Event<'_, '_>| {}));
            true
        });
        assert!(matches!(ended, Ok(true)), "{ended:?}");
        p.finish();
        let c = p.counters();
        assert_eq!(c.lines, lines, "every record is one line of the pipeline");
        assert!(c.conserved(), "{c:?}");
        if serve == Serve::All {
            assert!(lines as usize >= events, "every event is a record");
        }
    }
});
