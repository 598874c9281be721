//! New lines of several inputs read at one look (what `--follow` and the machine view find grown),
//! put in stream time: each input's lines in their own order, interleaved as [`Clock`] says. A
//! parent's new lines no longer all go before those its children wrote meanwhile.

use std::ops::Range;

use super::clock::{Clock, Order};
use crate::wire;

/// Runs of consecutive lines of one chunk, in stream time: (chunk, byte range of whole lines).
/// Every byte of every chunk is in exactly one run; a chunk's lines keep their order.
pub fn runs(chunks: &[&[u8]]) -> Vec<(usize, Range<usize>)> {
    runs_upto(chunks, &vec![false; chunks.len()]).0
}

/// [`runs`] of chunks some of which (`more[s]`) are only the first piece of what their input
/// gained (a read stops at a bound, [`crate::source::follow::READ_MAX`]): the runs stop once
/// such a chunk's lines are all taken, since its next piece may hold lines earlier than the
/// other chunks' next ones. Each chunk's lines after that are left for the caller to hand in
/// again with what it reads next (issue 19: a dense file's second piece came after a sparse
/// file's later lines, read in the same first look). Returns the runs and how many bytes of
/// each chunk they took.
pub fn runs_upto(chunks: &[&[u8]], more: &[bool]) -> (Vec<(usize, Range<usize>)>, Vec<usize>) {
    let mut clock = Clock::new(chunks.len(), Order::Time);
    let mut at = vec![0usize; chunks.len()];
    let mut out: Vec<(usize, Range<usize>)> = Vec::new();
    let cut = |s: usize| more.get(s).copied().unwrap_or(false);
    // A chunk that brought nothing yet more follows: nothing can go before its next line.
    if chunks.iter().enumerate().any(|(s, c)| c.is_empty() && cut(s)) {
        return (out, at);
    }
    let line_end = |c: &[u8], from: usize| memchr::memchr(b'\n', &c[from..]).map_or(c.len(), |i| from + i + 1);
    let time = |line: &[u8]| wire::stream_time(line.strip_suffix(b"\n").unwrap_or(line));
    for (s, c) in chunks.iter().enumerate() {
        if !c.is_empty() {
            clock.offer(s, time(&c[..line_end(c, 0)]));
        }
    }
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
        } else if cut(s) {
            break;
        }
    }
    (out, at)
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

    /// A chunk with more to come stops the runs once its lines are taken: the other chunk's later
    /// lines wait for its next piece.
    #[test]
    fn runs_stop_where_a_cut_chunk_ends() {
        let dense = [line(10, "d"), line(20, "d")].concat();
        let sparse = [line(15, "s"), line(30, "s"), line(40, "s")].concat();
        let chunks = [dense.as_bytes(), sparse.as_bytes()];
        let d = dense.len();
        let s1 = line(15, "s").len();
        let (got, used) = runs_upto(&chunks, &[true, false]);
        assert_eq!(got, [(0, 0..line(10, "d").len()), (1, 0..s1), (0, line(10, "d").len()..d)]);
        assert_eq!(used, [d, s1]);
        // Nothing read yet of a chunk that has more: nothing is handed on.
        assert_eq!(runs_upto(&[b"", sparse.as_bytes()], &[true, false]), (vec![], vec![0, 0]));
        // Without a cut, every byte.
        assert_eq!(runs_upto(&chunks, &[false, false]).1, [d, sparse.len()]);
    }
}
