//! The recording / socket protocol both ways. Raw bytes, cut into chunks where the input says, go
//! through the monitor's framer (what attach reads from a peer): never a panic, every line is one
//! frame, and it holds no more than its bound. The same bytes through the recording encoder (what
//! tee, listen and stdin write, with a small line bound so that lines are cut into pieces) and
//! back out of the framer: every record is JSON whose `msg` is the line verbatim (or whose
//! `rawB64` is its bytes), and no byte is lost or invented.
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use swarmtop::source::attach::{Frame, Framer};
use swarmtop::source::recording::{Dir, Encoder, Wrap};

const BOUND: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else { return };
    let step = usize::from(cut).max(1);

    let mut framer = Framer::new(BOUND);
    let mut frames = Vec::new();
    for chunk in input.chunks(step) {
        framer.push(chunk, &mut frames);
        assert!(framer.held() <= BOUND + step, "{} bytes held", framer.held());
    }
    framer.finish(&mut frames);
    let lines: usize = frames.iter().map(|f| if let Frame::Records(r) = f { r.iter().count() } else { 1 }).sum();
    let newlines = input.iter().filter(|&&b| b == b'\n').count();
    let torn = usize::from(input.last().is_some_and(|&b| b != b'\n'));
    // A later piece of an over-long line is folded into the first (the recording's own framing).
    if !input.windows(16).any(|w| w == b"\"continued\":true") {
        assert_eq!(lines, newlines + torn, "every line is one frame");
    }

    // A small line bound, so that over-long lines are recorded in pieces.
    let mut encoder = Encoder::new(Dir::In, Wrap::Always).with_max_line(step * 4 + 1);
    let mut out = Vec::new();
    for chunk in input.chunks(step) {
        encoder.encode(1, chunk, &mut out);
    }
    encoder.finish(2, &mut out);
    let mut framer = Framer::new(usize::MAX);
    let mut frames = Vec::new();
    framer.push(&out, &mut frames);
    framer.finish(&mut frames);
    let mut back = Vec::new();
    for frame in &frames {
        // A line of the input that reads as a marker is wrapped: markers come only from a tee.
        let Frame::Records(records) = frame else { panic!("an encoded record read back as {frame:?}") };
        for record in records.iter() {
            let v: serde_json::Value = serde_json::from_slice(record).expect("every record is JSON");
            let partial = v.get("partial").is_some();
            if let Some(raw) = v.get("rawB64").and_then(serde_json::Value::as_str) {
                back.extend(base64::engine::general_purpose::STANDARD.decode(raw).expect("base64"));
            } else {
                let start = memchr_msg(record).expect("a record holds msg or rawB64");
                let end = record.len() - if partial { b",\"partial\":true}".len() } else { 1 };
                back.extend_from_slice(&record[start..end]);
            }
            if !partial {
                back.push(b'\n');
            }
        }
    }
    assert_eq!(back, input, "the recording gives back every byte");
});

/// Where `msg`'s value starts in an envelope built by the encoder.
fn memchr_msg(record: &[u8]) -> Option<usize> {
    let key = b"\"msg\":";
    record.windows(key.len()).position(|w| w == key).map(|i| i + key.len())
}
