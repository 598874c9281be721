//! Server-sent events (`opencode serve`'s `/event`), read within bounds: a line, an event's data,
//! and bad bytes are each counted and skipped, never the end of the connection. Unbounded, one
//! endless line or event grew memory ~400 MB/s; one invalid UTF-8 byte ended the connection, and
//! with it that event and everything after it (issue 22 items 3 and 7).

use std::borrow::Cow;
use std::io::{self, BufRead};

use super::http::read_line;

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
    /// An event's data (its `data:` lines, joined).
    Event(&'a str),
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
    let (mut line, mut data) = (Vec::new(), Vec::new());
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
                None if data.is_empty() => true,
                None => dispatch(&data, &mut counts, each),
            };
            data.clear();
            if !more {
                return Ok(false);
            }
            continue;
        }
        if skip.is_some() {
            continue;
        }
        // Other fields (`event:`, `id:`, `retry:`) and comments carry nothing the data does not.
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

/// Hands on one event's data; invalid UTF-8 is read with its bad bytes replaced, and told.
fn dispatch(data: &[u8], counts: &mut Counts, each: &mut dyn FnMut(Sse<'_>) -> bool) -> bool {
    let text = match std::str::from_utf8(data) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(String::from_utf8_lossy(data).into_owned()),
    };
    if !each(Sse::Event(&text)) {
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
                Sse::Event(d) => format!("event {d}"),
                Sse::Skipped(s) => format!("skipped {s}"),
            });
            true
        })
        .unwrap();
        got
    }

    #[test]
    fn data_lines_join_and_a_blank_line_ends_an_event() {
        let got = read(b": comment\nevent: x\ndata: {\"a\":\r\ndata:1}\r\n\r\n\ndata: 2\n\n");
        assert_eq!(got, ["event {\"a\":\n1}", "event 2"]);
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
