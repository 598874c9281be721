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
            // JSON by its grammar (numbers of any size are JSON, as `is_json` says).
            serde_json::from_slice::<&serde_json::value::RawValue>(record).expect("every record is JSON");
            let partial = record.ends_with(PARTIAL);
            let body = &record[..record.len() - if partial { PARTIAL.len() } else { 1 }];
            let dir = find(body, DIR).expect("the envelope names its direction") + DIR.len();
            let payload = &body[dir..];
            let payload = payload.strip_prefix(CONTINUED).unwrap_or(payload);
            if let Some(msg) = payload.strip_prefix(MSG) {
                back.extend_from_slice(msg);
            } else {
                let raw = payload.strip_prefix(RAW).expect("a record holds msg or rawB64");
                let b64 = std::str::from_utf8(&raw[..raw.len() - 1]).expect("base64 is ASCII");
                back.extend(base64::engine::general_purpose::STANDARD.decode(b64).expect("base64"));
            }
            if !partial {
                back.push(b'\n');
            }
        }
    }
    assert_eq!(back, input, "the recording gives back every byte");
});

/// How the encoder ends a record that is a piece of a line, and how it names its payload.
const PARTIAL: &[u8] = b",\"partial\":true}";
const RAW: &[u8] = b"\"rawB64\":\"";
const MSG: &[u8] = b"\"msg\":";
const DIR: &[u8] = b"\"dir\":\"in\",";
const CONTINUED: &[u8] = b"\"continued\":true,";

/// Where `key` first occurs: in the envelope's own prefix (`{"ts":N,"dir":"in",`) for `DIR`.
fn find(record: &[u8], key: &[u8]) -> Option<usize> {
    record.windows(key.len()).position(|w| w == key)
}
