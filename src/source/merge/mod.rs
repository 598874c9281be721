//! One clock for every input: the records of several inputs (a Claude Code transcript with its
//! sub-agents' files and sidecars, a Codex session's rollouts, several recordings) merged by
//! stream time, each input's records in their own order — a k-way merge over one cursor per
//! input, holding one record and a read buffer of each, never the inputs whole. Headless commands
//! read through [`Merged`]; a replay orders its index with the same [`Clock`] and [`streams`].
//!
//! - [`clock`]: the merge's queue, and which inputs make one stream.
//! - [`pull`]: one input's records, pulled one at a time.

pub mod clock;
pub mod pull;

use std::io::{self, BufReader, Read};

pub use self::clock::{Clock, Order, Stream, ahead, streams};
use self::pull::Pull;
use super::files::{self, Input, MAX_LINE, Record};
use crate::wire::{self, Origin};

/// The inputs of one stream, opened as the reader needs them.
pub trait Inputs: Sync {
    fn count(&self) -> usize;
    /// The input's name, for errors.
    fn name(&self, n: usize) -> String;
    fn origin(&self, n: usize) -> Origin;
    /// The input's bytes; readers buffer them as they need, so this need not.
    fn open(&self, n: usize) -> io::Result<Box<dyn Read + Send + '_>>;
}

impl Inputs for [Input] {
    fn count(&self) -> usize {
        self.len()
    }
    fn name(&self, n: usize) -> String {
        self[n].name()
    }
    fn origin(&self, n: usize) -> Origin {
        files::origin(&self[n])
    }
    fn open(&self, n: usize) -> io::Result<Box<dyn Read + Send + '_>> {
        files::open_unbuffered(&self[n])
    }
}

/// Why reading stopped: what was being done to which input, and the error.
#[derive(Debug)]
pub struct Failed {
    pub doing: &'static str,
    pub input: String,
    pub error: io::Error,
}

/// Read buffer of each input's cursor: a merge of thousands of rollouts holds one per file.
const CURSOR_BUFFER: usize = 16 << 10;

type Reader<'i> = Pull<BufReader<Box<dyn Read + Send + 'i>>>;

/// A sidecar's record, read whole when its stream opens (one small object).
struct Held {
    bytes: Vec<u8>,
    /// Its length, when it is over the bound (`bytes` holds its head).
    over: Option<usize>,
}

impl Held {
    fn record(&self) -> Record<'_> {
        match self.over {
            Some(len) => Record::TooLong { len, head: &self.bytes },
            None => Record::Line(&self.bytes),
        }
    }
}

/// Where a stream's cursor is: its sidecar applied ahead, its input, its sidecar as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Ahead,
    Main,
    After,
    Done,
}

/// One stream's cursor: its input's records, between its sidecar's two applications.
struct Cursor<'i> {
    main: Reader<'i>,
    origin: Origin,
    /// The sidecar's record, with its origin ahead and as it lies.
    sidecar: Option<(Held, Origin, Origin)>,
    part: Part,
}

impl Cursor<'_> {
    fn record(&self) -> Option<(Record<'_>, &Origin)> {
        match (self.part, &self.sidecar) {
            (Part::Ahead, Some((held, ahead, _))) => Some((held.record(), ahead)),
            (Part::After, Some((held, _, lies))) => Some((held.record(), lies)),
            (Part::Main, _) => self.main.record().map(|r| (r, &self.origin)),
            _ => None,
        }
    }

    /// The current record's own time (applied ahead, the sidecar takes its transcript's first).
    fn time(&self, timed: bool) -> Option<i64> {
        if !timed {
            return None;
        }
        let record = match self.part {
            Part::Ahead | Part::Main => self.main.record(),
            Part::After | Part::Done => None,
        };
        match record {
            Some(Record::Line(line)) => wire::stream_time(line),
            _ => None,
        }
    }

    /// Moves to the next record: `false` when the stream is done.
    fn advance(&mut self) -> io::Result<bool> {
        self.part = match self.part {
            // The input's first record was read when the stream opened.
            Part::Ahead if self.main.record().is_some() => Part::Main,
            Part::Main if self.main.advance()? => Part::Main,
            Part::Ahead | Part::Main if self.sidecar.is_some() => Part::After,
            Part::Ahead | Part::Main | Part::After | Part::Done => Part::Done,
        };
        Ok(self.part != Part::Done)
    }
}

/// The records of several inputs in stream time, one at a time.
pub struct Merged<'i> {
    cursors: Vec<Cursor<'i>>,
    names: Vec<String>,
    clock: Clock,
    /// Stop before the first record after this stream time (unix ms).
    until: Option<i64>,
    /// Whether records' times are read at all: one input read to its end needs none.
    timed: bool,
    /// The cursor whose record was taken last: moved on when the next is looked at.
    last: Option<usize>,
    /// The cursor whose record is next, looked at and not yet taken.
    head: Option<usize>,
    over: bool,
}

/// How several inputs are read together: in what order, and up to when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    pub order: Order,
    /// The stream as of this time (unix ms): records after it are not read.
    pub until: Option<i64>,
}

impl<'i> Merged<'i> {
    /// Opens every input (each at its first record) and queues them by the time of it.
    pub fn open(inputs: &'i (impl Inputs + ?Sized), timing: Timing) -> Result<Self, Failed> {
        let Timing { order, until } = timing;
        let origins: Vec<Origin> = (0..inputs.count()).map(|n| inputs.origin(n)).collect();
        let streams = streams(&origins);
        let timed = until.is_some() || streams.len() > 1;
        let mut merged = Self {
            cursors: Vec::with_capacity(streams.len()),
            names: Vec::with_capacity(streams.len()),
            clock: Clock::new(streams.len(), order),
            until,
            timed,
            last: None,
            head: None,
            over: false,
        };
        for stream in &streams {
            let failed = |doing, n: usize, error| Failed { doing, input: inputs.name(n), error };
            let open = |n: usize| -> Result<Reader<'i>, Failed> {
                let reader = inputs.open(n).map_err(|e| failed("opening", n, e))?;
                Ok(Pull::new(BufReader::with_capacity(CURSOR_BUFFER, reader), MAX_LINE))
            };
            let mut main = open(stream.main)?;
            let sidecar = match stream.sidecar {
                Some(n) => {
                    let mut reader = open(n)?;
                    let any = reader.advance().map_err(|e| failed("reading", n, e))?;
                    let held = reader.record().filter(|_| any).map(|r| match r {
                        Record::Line(l) => Held { bytes: l.to_vec(), over: None },
                        Record::TooLong { len, head } => Held { bytes: head.to_vec(), over: Some(len) },
                    });
                    held.map(|h| (h, ahead(&origins[n]), origins[n].clone()))
                }
                None => None,
            };
            let first = main.advance().map_err(|e| failed("reading", stream.main, e))?;
            let part = match (&sidecar, first) {
                (Some(_), _) => Part::Ahead,
                (None, true) => Part::Main,
                (None, false) => Part::Done,
            };
            let cursor = Cursor { main, origin: origins[stream.main].clone(), sidecar, part };
            let s = merged.cursors.len();
            if cursor.part != Part::Done {
                merged.clock.offer(s, cursor.time(timed));
            }
            merged.cursors.push(cursor);
            merged.names.push(inputs.name(stream.main));
        }
        Ok(merged)
    }

    /// The next record in stream time with its origin; `None` at the end (or past `until`).
    pub fn next_record(&mut self) -> Result<Option<(Record<'_>, &Origin)>, Failed> {
        if self.peek()?.is_none() {
            return Ok(None);
        }
        self.take();
        Ok(self.current())
    }

    /// The record taken last, with its origin.
    pub fn current(&self) -> Option<(Record<'_>, &Origin)> {
        self.last.and_then(|s| self.cursors[s].record())
    }

    /// The next record, left to be taken ([`Merged::take`]) or looked at again.
    pub fn peek(&mut self) -> Result<Option<(Record<'_>, &Origin)>, Failed> {
        if self.head.is_none() && !self.over {
            self.head = self.choose()?;
        }
        Ok(self.head.and_then(|s| self.cursors[s].record()))
    }

    /// The stream time of the record taken last (as the merge keys it: an untimed record has its
    /// input's time so far).
    pub fn time(&self) -> Option<i64> {
        self.last.and_then(|s| self.clock.time(s))
    }

    /// Takes the record [`Merged::peek`] showed: the next look moves past it.
    pub fn take(&mut self) {
        self.last = self.head.take();
    }

    fn choose(&mut self) -> Result<Option<usize>, Failed> {
        if let Some(s) = self.last.take() {
            let c = &mut self.cursors[s];
            match c.advance() {
                Ok(true) => {
                    let time = c.time(self.timed);
                    self.clock.offer(s, time);
                }
                Ok(false) => {}
                Err(error) => {
                    self.over = true;
                    return Err(Failed { doing: "reading", input: self.names[s].clone(), error });
                }
            }
        }
        let Some(s) = self.clock.pop() else {
            self.over = true;
            return Ok(None);
        };
        if let (Some(until), Some(time)) = (self.until, self.clock.time(s))
            && time > until
        {
            self.over = true;
            return Ok(None);
        }
        Ok(Some(s))
    }
}
