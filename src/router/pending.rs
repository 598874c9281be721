//! The pending buffer of one thread (routing.md §4): lines of a thread that is not registered yet,
//! held in arrival order until the thread is settled, within per-thread bounds.

use std::collections::VecDeque;

use crate::wire::Origin;

/// A buffered line, kept as its raw record: it is decoded and lowered again when replayed, so
/// nothing borrowed from a long-gone input buffer has to outlive it.
#[derive(Debug)]
pub(super) struct PendingLine {
    pub record: Box<[u8]>,
    /// Where it came from, its thread included: lowered again, it states the same facts.
    pub origin: Origin,
    pub line_no: u64,
    /// `turn/completed` or a final `error`: the line that closes a lane, kept above all others.
    pub terminal: bool,
    /// Raw length including the newline (routing.md §8).
    pub size: usize,
}

#[derive(Debug, Default)]
pub(super) struct PendingBuffer {
    lines: VecDeque<PendingLine>,
    bytes: usize,
}

impl PendingBuffer {
    /// Adds a line and evicts what the bounds no longer allow; returns how many were evicted.
    pub fn push(&mut self, line: PendingLine, max_lines: usize, max_bytes: usize) -> u64 {
        if line.size > max_bytes {
            if !line.terminal {
                return 1;
            }
            // A terminal line larger than the whole bound is kept alone: it is what closes the lane.
            let evicted = self.lines.len() as u64;
            self.lines.clear();
            self.bytes = line.size;
            self.lines.push_back(line);
            return evicted;
        }
        self.bytes += line.size;
        self.lines.push_back(line);
        let mut evicted = 0;
        while self.lines.len() > max_lines || self.bytes > max_bytes {
            if !self.evict_one() {
                break;
            }
            evicted += 1;
        }
        evicted
    }

    /// Evicts the oldest non-terminal line, else the oldest terminal line that is not the newest.
    fn evict_one(&mut self) -> bool {
        let newest_terminal = self.lines.iter().rposition(|l| l.terminal);
        let victim = self
            .lines
            .iter()
            .position(|l| !l.terminal)
            .or_else(|| self.lines.iter().enumerate().position(|(i, l)| l.terminal && Some(i) != newest_terminal));
        let Some(i) = victim else { return false };
        if let Some(line) = self.lines.remove(i) {
            self.bytes -= line.size;
        }
        true
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn drain(&mut self) -> impl Iterator<Item = PendingLine> + '_ {
        self.bytes = 0;
        self.lines.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64, terminal: bool, size: usize) -> PendingLine {
        PendingLine { record: Box::default(), origin: Origin::NONE, line_no: n, terminal, size }
    }

    fn numbers(b: &mut PendingBuffer) -> Vec<u64> {
        b.drain().map(|l| l.line_no).collect()
    }

    #[test]
    fn evicts_oldest_non_terminal_first() {
        let mut b = PendingBuffer::default();
        b.push(line(1, false, 1), 3, 100);
        b.push(line(2, true, 1), 3, 100);
        b.push(line(3, false, 1), 3, 100);
        assert_eq!(b.push(line(4, false, 1), 3, 100), 1);
        assert_eq!(numbers(&mut b), [2, 3, 4]);
    }

    #[test]
    fn newest_terminal_is_never_evicted() {
        let mut b = PendingBuffer::default();
        b.push(line(1, true, 1), 2, 100);
        b.push(line(2, true, 1), 2, 100);
        assert_eq!(b.push(line(3, true, 1), 2, 100), 1);
        assert_eq!(numbers(&mut b), [2, 3]);
    }

    #[test]
    fn byte_bound_evicts_too() {
        let mut b = PendingBuffer::default();
        b.push(line(1, false, 60), 10, 100);
        assert_eq!(b.push(line(2, false, 60), 10, 100), 1);
        assert_eq!(numbers(&mut b), [2]);
    }

    #[test]
    fn oversized_line_is_evicted_on_arrival_unless_terminal() {
        let mut b = PendingBuffer::default();
        b.push(line(1, false, 10), 10, 100);
        assert_eq!(b.push(line(2, false, 101), 10, 100), 1);
        assert_eq!(b.push(line(3, true, 101), 10, 100), 1);
        assert_eq!(numbers(&mut b), [3]);
    }
}
