//! New lines of several inputs read at one look (what `--follow` and the machine view find grown),
//! put in stream time: each input's lines in their own order, interleaved as [`Clock`] says. A
//! parent's new lines no longer all go before those its children wrote meanwhile.

use std::ops::Range;

use super::clock::{Clock, Order};
use crate::wire;

/// Runs of consecutive lines of one chunk, in stream time: (chunk, byte range of whole lines).
/// Every byte of every chunk is in exactly one run; a chunk's lines keep their order.
pub fn runs(chunks: &[&[u8]]) -> Vec<(usize, Range<usize>)> {
    let mut clock = Clock::new(chunks.len(), Order::Time);
    let mut at = vec![0usize; chunks.len()];
    let line_end = |c: &[u8], from: usize| memchr::memchr(b'\n', &c[from..]).map_or(c.len(), |i| from + i + 1);
    let time = |line: &[u8]| wire::stream_time(line.strip_suffix(b"\n").unwrap_or(line));
    for (s, c) in chunks.iter().enumerate() {
        if !c.is_empty() {
            clock.offer(s, time(&c[..line_end(c, 0)]));
        }
    }
    let mut out: Vec<(usize, Range<usize>)> = Vec::new();
    while let Some(s) = clock.pop() {
        let c = chunks[s];
        let (start, end) = (at[s], line_end(c, at[s]));
        match out.last_mut() {
            Some((last, range)) if *last == s && range.end == start => range.end = end,
            _ => out.push((s, start..end)),
        }
        at[s] = end;
        if end < c.len() {
            clock.offer(s, time(&c[end..line_end(c, end)]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ms: i64, what: &str) -> String {
        format!(r#"{{"type":"step_start","timestamp":{ms},"sessionID":"ses_{what}","part":{{"type":"step-start"}}}}"#)
            + "\n"
    }

    #[test]
    fn lines_of_several_chunks_come_by_time_in_runs() {
        let parent = [line(10, "p"), line(40, "p"), line(50, "p")].concat();
        let child = [line(20, "c"), String::from("\n"), line(30, "c"), line(60, "c")].concat();
        let chunks = [parent.as_bytes(), child.as_bytes()];
        let got = runs(&chunks);
        let p = |n: usize| parent.match_indices('\n').nth(n).map_or(0, |(i, _)| i + 1);
        let c = |n: usize| child.match_indices('\n').nth(n).map_or(0, |(i, _)| i + 1);
        assert_eq!(got, [(0, 0..p(0)), (1, 0..c(2)), (0, p(0)..p(2)), (1, c(2)..c(3))], "{got:?}");
        // Every byte once.
        let total: usize = got.iter().map(|(_, r)| r.len()).sum();
        assert_eq!(total, parent.len() + child.len());
        assert_eq!(runs(&[b"", b"x\n"]), [(1, 0..2)]);
        assert!(runs(&[]).is_empty());
    }
}
