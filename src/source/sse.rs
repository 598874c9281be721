//! Server-sent events read within bounds (`opencode serve`'s `/event`, `swarmtop serve`'s
//! `/api/feed`), and the bounded line reader under them and under the OpenCode client's HTTP:
//! a line, an event's data and bad bytes are each counted and skipped, never the end of the
//! connection. Unbounded, one endless line or event grew memory ~400 MB/s; one invalid UTF-8
//! byte ended the connection, and with it that event and everything after it (issue 22 items 3
//! and 7).

use std::borrow::Cow;
use std::io::{self, BufRead};

/// How a bounded line read went.
pub struct LineRead {
    /// Bytes consumed, the line break included: 0 at the end of the input.
    pub consumed: usize,
    /// The line was longer than the bound: only its start is kept.
    pub cut: bool,
}

/// Reads one line into `line` (without its `\n`), keeping at most `max` bytes of it; the rest of
/// a longer line is read and dropped. More than `budget` bytes consumed is an error.
pub fn read_line(r: &mut dyn BufRead, max: usize, budget: usize, line: &mut Vec<u8>) -> io::Result<LineRead> {
    line.clear();
    let mut got = LineRead { consumed: 0, cut: false };
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(got);
        }
        let newline = memchr::memchr(b'\n', buf);
        let body = &buf[..newline.unwrap_or(buf.len())];
        let room = max.saturating_sub(line.len());
        got.cut |= body.len() > room;
        line.extend_from_slice(&body[..body.len().min(room)]);
        let used = newline.map_or(buf.len(), |i| i + 1);
        r.consume(used);
        got.consumed = got.consumed.saturating_add(used);
        if got.consumed > budget {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a line over {budget} bytes")));
        }
        if newline.is_some() {
            return Ok(got);
        }
    }
}

/// Most bytes of data one event holds: a record must fit the line bound the pipeline reads
/// records with, so a longer one would be counted malformed anyway, after being buffered whole.
pub const MAX_SSE_EVENT: usize = crate::source::files::MAX_LINE;
/// Longest line kept: an event's data and its field name.
pub const MAX_SSE_LINE: usize = MAX_SSE_EVENT + 64;

/// How long a line and an event may be: [`MAX_SSE_LINE`] and [`MAX_SSE_EVENT`] unless a test or
/// a fuzz target wants them small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseBounds {
    pub line: usize,
    pub event: usize,
}

impl Default for SseBounds {
    fn default() -> Self {
        Self { line: MAX_SSE_LINE, event: MAX_SSE_EVENT }
    }
}

/// What the stream gave.
pub enum Sse<'a> {
    /// An event: its `event:` name (empty when it had none) and its data (its `data:` lines,
    /// joined).
    Event { kind: &'a str, data: &'a str },
    /// Something was skipped or replaced: what, in words, with the count so far.
    Skipped(String),
}

/// What was skipped so far on one connection.
#[derive(Debug)]
struct Counts {
    bounds: SseBounds,
    long_lines: u64,
    long_events: u64,
    bad_utf8: u64,
}

/// Why the event being read is skipped.
#[derive(Clone, Copy)]
enum Skip {
    LongLine,
    LongEvent,
}

impl Counts {
    fn skipped(&mut self, why: Skip) -> String {
        match why {
            Skip::LongLine => {
                self.long_lines += 1;
                format!("an event with a line over {} bytes skipped ({} so far)", self.bounds.line, self.long_lines)
            }
            Skip::LongEvent => {
                self.long_events += 1;
                format!("an event over {} bytes skipped ({} so far)", self.bounds.event, self.long_events)
            }
        }
    }
}

/// Reads events until the stream ends (`Ok(true)`) or `each` wants no more (`Ok(false)`).
pub fn read_sse(body: &mut dyn BufRead, bounds: SseBounds, each: &mut dyn FnMut(Sse<'_>) -> bool) -> io::Result<bool> {
    let (mut line, mut data, mut kind) = (Vec::new(), Vec::new(), String::new());
    let mut skip: Option<Skip> = None;
    let mut counts = Counts { bounds, long_lines: 0, long_events: 0, bad_utf8: 0 };
    loop {
        let got = read_line(body, bounds.line, usize::MAX, &mut line)?;
        if got.consumed == 0 {
            return Ok(true);
        }
        if got.cut {
            skip = skip.or(Some(Skip::LongLine));
            data.clear();
            continue;
        }
        let l = line.strip_suffix(b"\r").unwrap_or(&line);
        if l.is_empty() {
            // A blank line ends the event.
            let more = match skip.take() {
                Some(why) => each(Sse::Skipped(counts.skipped(why))),
                None if data.is_empty() && kind.is_empty() => true,
                None => dispatch(&kind, &data, &mut counts, each),
            };
            data.clear();
            kind.clear();
            if !more {
                return Ok(false);
            }
            continue;
        }
        if skip.is_some() {
            continue;
        }
        if let Some(name) = l.strip_prefix(b"event:") {
            kind = String::from_utf8_lossy(name.strip_prefix(b" ").unwrap_or(name)).into_owned();
            continue;
        }
        // Other fields (`id:`, `retry:`) and comments carry nothing the data does not.
        let Some(d) = l.strip_prefix(b"data:") else { continue };
        let d = d.strip_prefix(b" ").unwrap_or(d);
        let joined = if data.is_empty() { d.len() } else { data.len() + 1 + d.len() };
        if joined > bounds.event {
            skip = Some(Skip::LongEvent);
            data.clear();
            continue;
        }
        if !data.is_empty() {
            data.push(b'\n');
        }
        data.extend_from_slice(d);
    }
}

/// Hands on one event; invalid UTF-8 in its data is read with its bad bytes replaced, and told.
fn dispatch(kind: &str, data: &[u8], counts: &mut Counts, each: &mut dyn FnMut(Sse<'_>) -> bool) -> bool {
    let text = match std::str::from_utf8(data) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(String::from_utf8_lossy(data).into_owned()),
    };
    if !each(Sse::Event { kind, data: &text }) {
        return false;
    }
    if matches!(text, Cow::Owned(_)) {
        counts.bad_utf8 += 1;
        let told =
            format!("an event with invalid UTF-8, read with its bad bytes replaced ({} so far)", counts.bad_utf8);
        return each(Sse::Skipped(told));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> Vec<String> {
        let mut got = Vec::new();
        let mut r = input;
        read_sse(&mut r, SseBounds::default(), &mut |e| {
            got.push(match e {
                Sse::Event { data, .. } => format!("event {data}"),
                Sse::Skipped(s) => format!("skipped {s}"),
            });
            true
        })
        .unwrap();
        got
    }

    #[test]
    fn a_line_is_kept_up_to_its_bound_and_read_past() {
        let mut r: &[u8] = b"abcdef\nxy\r\nlast";
        let mut line = Vec::new();
        let got = read_line(&mut r, 3, usize::MAX, &mut line).unwrap();
        assert_eq!((line.as_slice(), got.cut, got.consumed), (&b"abc"[..], true, 7));
        let got = read_line(&mut r, 3, usize::MAX, &mut line).unwrap();
        assert_eq!((line.as_slice(), got.cut), (&b"xy\r"[..], false));
        let got = read_line(&mut r, 3, usize::MAX, &mut line).unwrap();
        assert_eq!((line.as_slice(), got.consumed), (&b"las"[..], 4), "a last line without a break");
        assert_eq!(read_line(&mut r, 3, usize::MAX, &mut line).unwrap().consumed, 0);
        let mut r: &[u8] = b"0123456789";
        assert!(read_line(&mut r, 3, 5, &mut line).is_err(), "over the budget");
    }

    #[test]
    fn data_lines_join_and_a_blank_line_ends_an_event() {
        let got = read(b": comment\nevent: x\ndata: {\"a\":\r\ndata:1}\r\n\r\n\ndata: 2\n\n");
        assert_eq!(got, ["event {\"a\":\n1}", "event 2"]);
    }

    #[test]
    fn an_event_carries_its_name_even_without_data() {
        let mut got = Vec::new();
        let mut r: &[u8] = b"event: live

: keepalive

event:resumed
data: {}

data: 2

";
        read_sse(&mut r, SseBounds::default(), &mut |e| {
            if let Sse::Event { kind, data } = e {
                got.push((kind.to_owned(), data.to_owned()));
            }
            true
        })
        .unwrap();
        let want = [("live", ""), ("resumed", "{}"), ("", "2")].map(|(k, d)| (k.to_owned(), d.to_owned()));
        assert_eq!(got, want);
    }

    #[test]
    fn bad_bytes_are_replaced_and_told_and_the_stream_goes_on() {
        let got = read(b"data: a\xffb\n\ndata: after\n\n");
        assert_eq!(got[0], "event a\u{fffd}b");
        assert!(got[1].starts_with("skipped an event with invalid UTF-8"), "{got:?}");
        assert_eq!(got[2], "event after");
    }

    #[test]
    fn an_event_over_its_bound_is_skipped_and_told() {
        let mut input = Vec::new();
        let line = format!("data: {}\n", "x".repeat(1 << 20));
        for _ in 0..=(MAX_SSE_EVENT >> 20) {
            input.extend_from_slice(line.as_bytes());
        }
        input.extend_from_slice(b"\ndata: after\n\n");
        let got = read(&input);
        assert_eq!(got.len(), 2, "{:?}", got.iter().map(|g| &g[..g.len().min(60)]).collect::<Vec<_>>());
        assert!(got[0].starts_with("skipped an event over"));
        assert_eq!(got[1], "event after");
    }
}
