//! One input's records pulled one at a time, as [`files::read_records`] hands them out: a merge
//! holds one of these per input and takes each input's next record when its turn comes. Memory is
//! the reader's buffer and one record (a record over the bound keeps only its head).

use std::io::{self, BufRead};

use crate::source::files::{self, BOM, HEAD, Record};
use crate::source::recording::is_continuation;

pub struct Pull<R> {
    /// `None` while parked: the file is closed, `consumed` says where to take it up again.
    reader: Option<R>,
    /// Bytes taken from the reader so far (decompressed): where the next record starts.
    consumed: u64,
    max_line: usize,
    /// The current record's bytes (its head, when it is over the bound).
    line: Vec<u8>,
    /// The current record's length when it is over the bound.
    over: Option<usize>,
    /// Whether there is a current record.
    held: bool,
    /// Bytes of a byte order mark matched at the very start so far (`None` once past it): a mark
    /// split over two reads is a mark all the same.
    mark: Option<usize>,
    /// A read that failed: returned once the record read before it is handed out.
    failed: Option<io::Error>,
    ended: bool,
}

impl<R: BufRead> Pull<R> {
    pub fn new(reader: R, max_line: usize) -> Self {
        Self {
            reader: Some(reader),
            consumed: 0,
            max_line: max_line.max(HEAD),
            line: Vec::new(),
            over: None,
            held: false,
            mark: Some(0),
            failed: None,
            ended: false,
        }
    }

    /// The current record (after [`Pull::advance`] said there is one).
    pub fn record(&self) -> Option<Record<'_>> {
        if !self.held {
            return None;
        }
        Some(match self.over {
            Some(len) => Record::TooLong { len, head: &self.line },
            None => Record::Line(&self.line),
        })
    }

    /// Takes the current line's bytes, leaving `room` (emptied) for the next: the caller keeps
    /// the record from then on, and [`Pull::record`] reads empty until the next [`Pull::advance`].
    pub fn take_line(&mut self, mut room: Vec<u8>) -> Vec<u8> {
        room.clear();
        std::mem::replace(&mut self.line, room)
    }

    /// Whether its reader is open: not parked, and not past its end.
    pub fn is_open(&self) -> bool {
        self.reader.is_some()
    }

    /// Closes its reader (its file), keeping the current record and where the next starts. A
    /// read that failed is kept open, to give its error.
    pub fn park(&mut self) {
        if self.failed.is_none() {
            self.reader = None;
        }
    }

    /// Takes up a parked input again from `reader`, the same input opened anew: what was read
    /// already is skipped.
    pub fn resume(&mut self, mut reader: R) -> io::Result<()> {
        let mut left = self.consumed;
        while left > 0 {
            let chunk = match reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it shrank while it was read"));
            }
            let n = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            reader.consume(n);
            left -= n as u64;
        }
        self.reader = Some(reader);
        Ok(())
    }

    /// Moves to the next record: `false` at the end (its reader closed then). A failed read ends
    /// the input after the unfinished line read before it, then gives the error.
    pub fn advance(&mut self) -> io::Result<bool> {
        loop {
            self.held = false;
            if let Some(e) = self.failed.take() {
                self.ended = true;
                return Err(e);
            }
            if self.ended {
                // Nothing more to read: its file is closed at once, not when the merge ends.
                self.reader = None;
                return Ok(false);
            }
            let any = self.read_line();
            if !any {
                self.ended = true;
                if self.failed.is_none() {
                    self.reader = None;
                    return Ok(false);
                }
                continue;
            }
            if self.keeps() {
                self.held = true;
                return Ok(true);
            }
        }
    }

    /// Reads one raw line (without its `\n`) into `line`, keeping only the head past the bound;
    /// `false` when nothing was left to read.
    fn read_line(&mut self) -> bool {
        self.line.clear();
        self.over = None;
        let mut any = false;
        let Some(reader) = self.reader.as_mut() else {
            self.failed = Some(io::Error::other("read while its file was closed"));
            return false;
        };
        loop {
            let chunk = match reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.failed = Some(e);
                    return any;
                }
            };
            if chunk.is_empty() {
                if let Some(m) = self.mark.take().filter(|&m| m > 0) {
                    // The input ended within what looked like a mark: it was text.
                    files::append(&mut self.line, &mut self.over, &BOM[..m], self.max_line);
                }
                return any;
            }
            any = true;
            let mut start = 0;
            if let Some(matched) = self.mark {
                let mut m = matched;
                while m < BOM.len() && start < chunk.len() && chunk[start] == BOM[m] {
                    (m, start) = (m + 1, start + 1);
                }
                if m < BOM.len() && start == chunk.len() {
                    self.mark = Some(m);
                    reader.consume(start);
                    self.consumed += start as u64;
                    continue;
                }
                self.mark = None;
                if m < BOM.len() {
                    // No mark after all: what looked like its start is text.
                    files::append(&mut self.line, &mut self.over, &BOM[..m], self.max_line);
                }
            }
            let (piece, used, done) = match memchr::memchr(b'\n', &chunk[start..]) {
                Some(i) => (&chunk[start..start + i], start + i + 1, true),
                None => (&chunk[start..], chunk.len(), false),
            };
            files::append(&mut self.line, &mut self.over, piece, self.max_line);
            reader.consume(used);
            self.consumed += used as u64;
            if done {
                return true;
            }
        }
    }

    /// Whether the raw line read is a record: blank lines and the later pieces of over-long
    /// recorded lines are none (as in [`files::read_records`]).
    fn keeps(&mut self) -> bool {
        if is_continuation(&self.line) {
            return false;
        }
        if self.over.is_some() {
            return true;
        }
        // A line over the bound went to `over` as it was read.
        !files::is_blank(&self.line)
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use proptest::prelude::*;

    use crate::source::files::record_bytes;

    use super::*;

    type Owned = (Vec<u8>, Option<usize>);

    fn owned(r: Record<'_>) -> Owned {
        match r {
            Record::Line(l) => (l.to_vec(), None),
            Record::TooLong { len, head } => (head.to_vec(), Some(len)),
        }
    }

    fn pulled(data: &[u8], cap: usize, max_line: usize) -> (Vec<Owned>, bool) {
        let mut pull = Pull::new(BufReader::with_capacity(cap, data), max_line);
        let mut out = Vec::new();
        loop {
            match pull.advance() {
                Ok(true) => out.push(owned(pull.record().expect("a record"))),
                Ok(false) => return (out, true),
                Err(_) => return (out, false),
            }
        }
    }

    #[test]
    fn blank_lines_marks_and_over_long_lines() {
        let mut data = b"\xef\xbb\xbfa\n\n  \nbcd\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 500));
        data.extend_from_slice(b"\nlast");
        let (got, ended) = pulled(&data, 7, HEAD + 10);
        assert!(ended);
        let heads: Vec<(usize, Option<usize>)> = got.iter().map(|(b, o)| (b.len(), *o)).collect();
        assert_eq!(heads, [(1, None), (4, None), (HEAD, Some(500)), (4, None)]);
        // A mark split over reads is still a mark; the start of one that is not, text.
        assert_eq!(pulled(b"\xef\xbb\xbfa\n", 1, HEAD).0, [(b"a".to_vec(), None)]);
        assert_eq!(pulled(b"\xef\xbbx\n", 1, HEAD).0, [(b"\xef\xbbx".to_vec(), None)]);
        assert_eq!(pulled(b"\xef", 1, HEAD).0, [(b"\xef".to_vec(), None)]);
    }

    /// Records pulled with the input closed and opened again after every one of them.
    fn pulled_parked(data: &[u8], cap: usize, max_line: usize) -> Vec<Owned> {
        let mut pull = Pull::new(BufReader::with_capacity(cap, data), max_line);
        let mut out = Vec::new();
        while pull.advance().expect("in memory") {
            out.push(owned(pull.record().expect("a record")));
            pull.park();
            assert!(!pull.is_open());
            pull.resume(BufReader::with_capacity(cap, data)).expect("the same input");
        }
        assert!(!pull.is_open(), "closed at its end");
        out
    }

    proptest! {
        #[test]
        fn a_parked_input_goes_on_where_it_stopped(
            data in record_bytes(),
            cap in 1usize..700,
            max_line in HEAD..900,
        ) {
            prop_assert_eq!(pulled_parked(&data, cap, max_line), pulled(&data, cap, max_line).0);
        }

        #[test]
        fn pulled_records_are_those_read_records_gives(
            data in record_bytes(),
            cap in 1usize..700,
            max_line in HEAD..900,
        ) {
            let mut expected = Vec::new();
            files::read_records(BufReader::with_capacity(64, data.as_slice()), max_line, |r| expected.push(owned(r)))
                .expect("memory");
            let (got, ended) = pulled(&data, cap, max_line);
            prop_assert!(ended);
            prop_assert_eq!(got, expected);
        }
    }
}
