//! One clock for every input: the records of several inputs (a Claude Code transcript with its
//! sub-agents' files and sidecars, a Codex session's rollouts, several recordings) merged by
//! stream time, each input's records in their own order — a k-way merge over one cursor per
//! input, holding one record and a read buffer of each, never the inputs whole. Headless commands
//! read through [`Merged`]; a replay orders its index with the same [`Clock`] and [`streams`].
//!
//! - [`clock`]: the merge's queue, and which inputs make one stream.
//! - [`pull`]: one input's records, pulled one at a time.
//! - [`runs`]: what several inputs gained at one look (`--follow`, the machine view), by time.

pub mod clock;
pub mod pull;
pub mod runs;

use std::io::{self, BufReader, Read};

pub use self::clock::{Clock, Order, Stream, ahead, streams};
use self::pull::Pull;
pub use self::runs::{runs, runs_upto};
use super::files::{self, Input, MAX_LINE, Record};
use crate::wire::{self, Decoded, Malformed, Origin, Reading};

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

/// Read buffers of a merge of few inputs (a session's few files) share this much, up to 64 KiB
/// each: a read per 16 KiB was some 13,000 calls to read a 200 MB Claude folder, and the calls'
/// own cost a third of what copying the bytes cost (perf, `report daily` on an empty store).
const CURSOR_BUFFERS: usize = 256 << 10;

/// The read buffer of each of `inputs` cursors.
fn cursor_buffer(inputs: usize) -> usize {
    (CURSOR_BUFFERS / inputs.max(1)).clamp(CURSOR_BUFFER, 4 * CURSOR_BUFFER)
}

/// Most inputs a merge holds open at once. A Codex home holds thousands of rollouts, a process
/// may open 1024 files: past this, the input used least lately is closed where it stands (its
/// record kept) and opened again when its turn comes, counted ([`Merged::reopened`]).
pub const OPEN_MAX: usize = 256;

/// Opens input `n` anew.
type Opener<'i> = Box<dyn Fn(usize) -> io::Result<Box<dyn Read + Send + 'i>> + Send + 'i>;

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

/// A line decoded, or why it is none.
type Decoding<'a> = Result<Decoded<'a>, Malformed>;

self_cell::self_cell!(
    /// An input's current line with its decoding, which borrows from the line's bytes (taken from
    /// its reader, which goes on reading into the room of the line before).
    struct DecodedLine {
        owner: Vec<u8>,
        #[covariant]
        dependent: Decoding,
    }
);

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
    /// Its input's number, to open it again.
    n: usize,
    /// When it last moved on (the merge's count of moves): the one used least lately is closed
    /// first.
    used: u64,
    origin: Origin,
    /// The sidecar's record, with its origin ahead and as it lies.
    sidecar: Option<(Held, Origin, Origin)>,
    part: Part,
    /// Its input's current line, decoded for its time when the merge decodes
    /// ([`Merged::open_decoding`]); kept for whoever takes the record.
    decoded: Option<DecodedLine>,
    /// The bytes of the last line decoded, their room reused for the next.
    spare: Vec<u8>,
}

impl Cursor<'_> {
    fn record(&self) -> Option<(Record<'_>, &Origin)> {
        match (self.part, &self.sidecar) {
            (Part::Ahead, Some((held, ahead, _))) => Some((held.record(), ahead)),
            (Part::After, Some((held, _, lies))) => Some((held.record(), lies)),
            // A line decoded is the cursor's own.
            (Part::Main, _) => match &self.decoded {
                Some(d) => Some((Record::Line(d.borrow_owner()), &self.origin)),
                None => self.main.record().map(|r| (r, &self.origin)),
            },
            _ => None,
        }
    }

    /// The current record's own time (applied ahead, the sidecar takes its transcript's first).
    /// `decoding`: the line is decoded whole for it, and kept (else only its time is read).
    fn time(&mut self, timed: bool, decoding: Option<Reading>) -> Option<i64> {
        let record = match self.part {
            Part::Ahead | Part::Main if timed => self.main.record(),
            _ => return None,
        };
        if let Some(d) = &self.decoded {
            // Its time ahead of the line, then the line's own: the same line, decoded once.
            return d.borrow_dependent().as_ref().ok().and_then(Decoded::time);
        }
        let Some(Record::Line(line)) = record else { return None };
        // A sidecar lowers whole by its origin (its reader does not decode it as a line).
        let Some(reading) = decoding.filter(|_| !self.origin.info().is_some_and(|i| i.sidecar)) else {
            return wire::stream_time(line);
        };
        let bytes = self.main.take_line(std::mem::take(&mut self.spare));
        let d = DecodedLine::new(bytes, |b| wire::decode_reading(b, reading));
        let time = d.borrow_dependent().as_ref().ok().and_then(Decoded::time);
        self.decoded = Some(d);
        time
    }

    /// The current record decoded, when it is its input's line and was decoded for its time.
    fn decoded(&self) -> Option<&Decoding<'_>> {
        match self.part {
            Part::Main => self.decoded.as_ref().map(DecodedLine::borrow_dependent),
            _ => None,
        }
    }

    /// Moves to the next record: `false` when the stream is done.
    fn advance(&mut self) -> io::Result<bool> {
        if self.part == Part::Main
            && let Some(d) = self.decoded.take()
        {
            // The line decoded is left behind: its room serves the next.
            self.spare = d.into_owner();
        }
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
    open_input: Opener<'i>,
    /// Inputs held open at most, and now.
    open_max: usize,
    open: usize,
    /// Inputs closed to stay under `open_max` and opened again.
    reopened: u64,
    moves: u64,
    /// Each open input's read buffer ([`cursor_buffer`]).
    buffer: usize,
    clock: Clock,
    /// Stop before the first record after this stream time (unix ms).
    until: Option<i64>,
    /// Whether records' times are read at all: one input read to its end needs none.
    timed: bool,
    /// [`Merged::order_only`].
    order_only: bool,
    /// [`Merged::open_decoding`]: how lines are decoded for their times.
    decoding: Option<Reading>,
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
        Self::open_bounded(inputs, timing, OPEN_MAX)
    }

    /// [`Merged::open`], holding at most `open_max` inputs open at once.
    pub fn open_bounded(inputs: &'i (impl Inputs + ?Sized), timing: Timing, open_max: usize) -> Result<Self, Failed> {
        Self::open_with(inputs, timing, open_max, None)
    }

    /// [`Merged::open`] for a reader that decodes every line it takes, as `reading` says: a line
    /// read for its time is decoded whole then, and kept for the taker ([`Merged::decoded`]), so
    /// that no line is read twice (a Claude Code line's time comes after its message, its bulk:
    /// reading for it was half the cost of decoding it, a seventh of a first sync's CPU, perf).
    pub fn open_decoding(inputs: &'i (impl Inputs + ?Sized), timing: Timing, reading: Reading) -> Result<Self, Failed> {
        Self::open_with(inputs, timing, OPEN_MAX, Some(reading))
    }

    fn open_with(
        inputs: &'i (impl Inputs + ?Sized),
        timing: Timing,
        open_max: usize,
        decoding: Option<Reading>,
    ) -> Result<Self, Failed> {
        let Timing { order, until } = timing;
        let origins: Vec<Origin> = (0..inputs.count()).map(|n| inputs.origin(n)).collect();
        let streams = streams(&origins);
        let timed = until.is_some() || streams.len() > 1;
        // A sidecar is open beside its stream's main input only until its one record is read.
        let buffer = cursor_buffer(streams.len().min(open_max));
        let mut merged = Self {
            cursors: Vec::with_capacity(streams.len()),
            names: Vec::with_capacity(streams.len()),
            open_input: Box::new(move |n| inputs.open(n)),
            open_max: open_max.max(1),
            open: 0,
            reopened: 0,
            moves: 0,
            buffer,
            clock: Clock::new(streams.len(), order),
            until,
            timed,
            order_only: false,
            decoding,
            last: None,
            head: None,
            over: false,
        };
        for stream in &streams {
            let failed = |doing, n: usize, error| Failed { doing, input: inputs.name(n), error };
            let open = |n: usize| -> Result<Reader<'i>, Failed> {
                let reader = inputs.open(n).map_err(|e| failed("opening", n, e))?;
                Ok(Pull::new(BufReader::with_capacity(buffer, reader), MAX_LINE))
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
            let mut cursor = Cursor {
                main,
                n: stream.main,
                used: 0,
                origin: origins[stream.main].clone(),
                sidecar,
                part,
                decoded: None,
                spare: Vec::new(),
            };
            let s = merged.cursors.len();
            if cursor.part != Part::Done {
                merged.clock.offer(s, cursor.time(timed, decoding));
            }
            merged.cursors.push(cursor);
            merged.names.push(inputs.name(stream.main));
            if merged.cursors[s].main.is_open() {
                merged.open += 1;
                merged.make_room(None);
            }
        }
        Ok(merged)
    }

    /// The merge for a reader that needs the records' order, not their times: once one stream
    /// is left (and no `until` stops it), its records are not read for their times, only taken
    /// in their order, as they would have been.
    #[must_use]
    pub fn order_only(mut self) -> Self {
        self.order_only = true;
        self
    }

    /// How many times an input closed to stay under the bound was opened again.
    pub fn reopened(&self) -> u64 {
        self.reopened
    }

    /// Closes the inputs used least lately (not `keep`) until there is room for one more, or,
    /// at most, as many as the bound.
    fn make_room(&mut self, keep: Option<usize>) {
        let room = if keep.is_some() { self.open_max - 1 } else { self.open_max };
        while self.open > room {
            let lru = self
                .cursors
                .iter()
                .enumerate()
                .filter(|&(s, c)| Some(s) != keep && c.main.is_open())
                .min_by_key(|(_, c)| c.used)
                .map(|(s, _)| s);
            let Some(s) = lru else { return };
            self.cursors[s].main.park();
            if self.cursors[s].main.is_open() {
                // A failed read is kept open to give its error: nothing else is closed for it.
                return;
            }
            self.open -= 1;
        }
    }

    /// Opens cursor `s`'s input again where it was closed, if it was.
    fn reopen(&mut self, s: usize) -> Result<(), Failed> {
        let c = &self.cursors[s];
        // Only a move within its input reads from it.
        if c.main.is_open() || c.part != Part::Main {
            return Ok(());
        }
        let n = c.n;
        self.make_room(Some(s));
        let failed = |error| Failed { doing: "opening again", input: self.names[s].clone(), error };
        let reader = (self.open_input)(n).map_err(failed)?;
        self.cursors[s].main.resume(BufReader::with_capacity(self.buffer, reader)).map_err(failed)?;
        self.open += 1;
        self.reopened += 1;
        Ok(())
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

    /// The record taken last decoded, when the merge decoded it for its time
    /// ([`Merged::open_decoding`]; else its taker decodes it).
    pub fn decoded(&self) -> Option<&Result<Decoded<'_>, Malformed>> {
        self.last.and_then(|s| self.cursors[s].decoded())
    }

    /// The next record, left to be taken ([`Merged::take`]) or looked at again.
    pub fn peek(&mut self) -> Result<Option<(Record<'_>, &Origin)>, Failed> {
        if self.head.is_none() && !self.over {
            self.head = self.choose()?;
        }
        Ok(self.head.and_then(|s| self.cursors[s].record()))
    }

    /// The stream time of the record taken last (as the merge keys it: an untimed record has its
    /// input's time so far; [`Merged::order_only`]: the last stream left is not timed, so its
    /// records have the time of its last one read while others were).
    pub fn time(&self) -> Option<i64> {
        self.last.and_then(|s| self.clock.time(s))
    }

    /// Takes the record [`Merged::peek`] showed: the next look moves past it.
    pub fn take(&mut self) {
        self.last = self.head.take();
    }

    fn choose(&mut self) -> Result<Option<usize>, Failed> {
        if let Some(s) = self.last.take() {
            if let Err(f) = self.reopen(s) {
                self.over = true;
                return Err(f);
            }
            self.moves += 1;
            let c = &mut self.cursors[s];
            c.used = self.moves;
            let was_open = c.main.is_open();
            let moved = c.advance();
            if was_open && !c.main.is_open() {
                self.open -= 1;
            }
            match moved {
                Ok(true) => {
                    // The last stream left goes on in its own order, whatever its times say: its
                    // records are not read for them (a session's transcript, once its sub-agents'
                    // files are done, was read twice: for its time, then for what it says).
                    let alone = self.order_only && self.until.is_none() && self.clock.queued() == 0;
                    let time = c.time(self.timed && !alone, self.decoding);
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

#[cfg(test)]
mod tests {
    use std::io::Cursor as Bytes;

    use super::*;

    /// Inputs in memory, counting how often each is opened.
    struct Memory {
        inputs: Vec<Vec<u8>>,
        opened: Vec<std::sync::atomic::AtomicUsize>,
    }

    impl Memory {
        fn new(inputs: Vec<Vec<u8>>) -> Self {
            let opened = inputs.iter().map(|_| std::sync::atomic::AtomicUsize::new(0)).collect();
            Self { inputs, opened }
        }
    }

    impl Inputs for Memory {
        fn count(&self) -> usize {
            self.inputs.len()
        }
        fn name(&self, n: usize) -> String {
            format!("input {n}")
        }
        fn origin(&self, _: usize) -> Origin {
            Origin::NONE
        }
        fn open(&self, n: usize) -> io::Result<Box<dyn Read + Send + '_>> {
            self.opened[n].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Box::new(Bytes::new(self.inputs[n].as_slice())))
        }
    }

    fn line(session: usize, ms: i64) -> String {
        format!(
            r#"{{"type":"step_start","timestamp":{ms},"sessionID":"ses_{session}","part":{{"type":"step-start"}}}}"#
        )
    }

    fn read_all(inputs: &Memory, open_max: usize) -> (Vec<String>, u64) {
        let mut merged = Merged::open_bounded(inputs, Timing::default(), open_max).expect("in memory");
        let mut out = Vec::new();
        while let Some((record, _)) = merged.next_record().expect("in memory") {
            let Record::Line(l) = record else { panic!("no line is too long") };
            out.push(String::from_utf8_lossy(l).into_owned());
        }
        (out, merged.reopened())
    }

    /// Six inputs interleaved in time, read two open at a time: the same records in the same
    /// order as with all of them open, each closed input opened again where it stood, counted.
    #[test]
    fn at_most_open_max_inputs_are_open_and_the_order_is_the_same() {
        let inputs = Memory::new(
            (0..6)
                .map(|s| {
                    // Blank lines and a byte order mark: where a closed input goes on counts them.
                    let mut text = String::from(if s == 0 { "\u{feff}" } else { "" });
                    for k in 0..5 {
                        text.push_str(&line(s, 1000 + k * 10 + i64::try_from(s).unwrap()));
                        text.push_str("\n\n");
                    }
                    text.into_bytes()
                })
                .collect(),
        );
        let (all, none) = read_all(&inputs, OPEN_MAX);
        assert_eq!(none, 0);
        assert_eq!(all.len(), 30);
        let times: Vec<i64> = all.iter().map(|l| wire::stream_time(l.as_bytes()).expect("timed")).collect();
        assert!(times.is_sorted(), "{times:?}");
        let (bounded, reopened) = read_all(&inputs, 2);
        assert_eq!(bounded, all);
        assert!(reopened > 0, "inputs were closed and opened again");
        let opened: usize = inputs.opened.iter().map(|o| o.load(std::sync::atomic::Ordering::Relaxed)).sum();
        assert_eq!(
            u64::try_from(opened).unwrap(),
            6 + 6 + reopened,
            "once each unbounded, once each and the reopens bounded"
        );
    }
}
