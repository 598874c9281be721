//! Records decoded and lowered on every core while the caller's thread routes them.
//!
//! Whichever thread needs work reads the next chunk of whole records of the current input (under
//! one lock, straight into the chunk's buffer; a chunk never spans two inputs), then decodes every
//! record and lowers every line that needs nothing from the lines before it, outside the lock.
//! The caller's thread puts the chunks back in input order, lowers the rest (rollout lines, whose
//! thread an earlier line named) and routes every record; while the next chunk in order is still
//! being decoded elsewhere, it decodes one itself. Each thread reads into buffers of its own and
//! frees what it decoded itself, when it reads into them again. Decoding and such lowering are
//! pure functions of a record's bytes and origin, so the router sees what [`Pipeline::feed`] one
//! record at a time would show it: the result is the same.
//!
//! Several inputs are read in stream time ([`crate::source::merge`]): the chunks are then runs of
//! one input's records in the merged order, copied out of each input's cursor. On one thread (a
//! sync reads each session on a core of its own) there are no chunks: the merge decodes each line
//! it reads for its time and the router takes that decoding, so no line is decoded twice.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::{Condvar, Mutex, MutexGuard, mpsc};

use crate::pipeline::Pipeline;
use crate::router::Sink;
use crate::source::files::{self, Cut, Cutter, Record, Span};
use crate::source::merge::{Merged, Order, Timing};
use crate::wire::{self, Lowered, Malformed, Origin};

/// Record bytes per chunk: big enough that handing one over costs next to nothing, small enough
/// that the threads share the work evenly and a chunk with its decoded lines stays in cache. On
/// the Claude folder of `benches/ingest` (measured when a reader thread of its own cut the
/// chunks), 256 KiB and 1 MiB chunks were slower than this, and 24 KiB no faster.
pub const CHUNK_BYTES: usize = 48 << 10;
/// Chunks each thread may have read but not yet routed: what bounds the memory of the hand-over.
const IN_FLIGHT: usize = 8;

pub use crate::source::merge::{Failed, Inputs};

/// A chunk of one input's records, in the buffer they were read into.
struct Records {
    /// The thread whose buffers these are: it reads into them, decodes, and frees what it
    /// decoded when it reads into them again, so that nothing a thread allocates is freed by
    /// another (a free from another thread is the allocator's slow path; with a shared pool of
    /// buffers, one stream fed on two cores took twice the CPU time of one core, for no gain).
    home: usize,
    origin: Origin,
    /// The room the records were read into; only what `cut` marks holds them.
    bytes: Vec<u8>,
    cut: Cut,
    spans: Vec<Span>,
}

impl Records {
    fn new(home: usize) -> Self {
        Self { home, origin: Origin::NONE, bytes: Vec::new(), cut: Cut::Lines(0..0), spans: Vec::new() }
    }

    /// A routed chunk's buffers, emptied for the next records (its lines are dropped here, by the
    /// thread about to read, not by the router).
    fn reuse(chunk: Chunk, chunk_bytes: usize) -> Self {
        let mut records = chunk.into_owner().into_owner();
        records.spans.clear();
        // A buffer grown for one long line goes back to the usual size.
        if records.bytes.len() > chunk_bytes.saturating_mul(4).max(1 << 20) {
            records.bytes = Vec::new();
        }
        records
    }
}

/// Each record's line (`None` for a record over the length bound).
type Lines<'a> = Vec<Option<Result<wire::Decoded<'a>, Malformed>>>;

self_cell::self_cell!(
    /// A chunk of records with their decoded lines, which borrow from its bytes.
    struct Decoded {
        owner: Records,
        #[covariant]
        dependent: Lines,
    }
);

/// Each decoded line's facts, when lowering it needs no earlier line.
type Facts<'a> = Vec<Option<Lowered<'a>>>;

self_cell::self_cell!(
    /// A decoded chunk with the facts of its lines, which borrow from them.
    struct Chunk {
        owner: Decoded,
        #[not_covariant]
        dependent: Facts,
    }
);

/// What goes from the reader, through a decoder, to the router.
enum Step<C> {
    Chunk(C),
    Failed(Failed),
}

fn decode(mut records: Records, reading: wire::Reading) -> Chunk {
    records.cut.spans(&records.bytes, files::MAX_LINE, &mut records.spans);
    let decoded = Decoded::new(records, |r| {
        r.spans
            .iter()
            .map(|span| match span {
                Span::Line(range) => Some(wire::decode_reading(&r.bytes[range.clone()], reading)),
                Span::TooLong { .. } => None,
            })
            .collect()
    });
    Chunk::new(decoded, |d| {
        let records = d.borrow_owner();
        let origin = &records.origin;
        records
            .spans
            .iter()
            .zip(d.borrow_dependent())
            .map(|(span, line)| {
                // A sidecar (one object about a thread) lowers whole, by what its origin says it is.
                if let Span::Line(range) = span
                    && let Some(Ok(lowered)) = wire::lower_sidecar(&records.bytes[range.clone()], origin)
                {
                    return Some(lowered);
                }
                match line {
                    Some(Ok(line)) if line.lowers_alone() => {
                        Some(wire::lower(line, origin, &mut wire::Stream::default()))
                    }
                    _ => None,
                }
            })
            .collect()
    })
}

/// The input being read and what comes after it: whoever holds the lock reads the next chunk.
struct Reader<'i, I: ?Sized> {
    inputs: &'i I,
    chunk_bytes: usize,
    /// The next input to open.
    next: usize,
    current: Option<(Cutter<Box<dyn Read + Send + 'i>>, Origin)>,
    /// Chunks (and the failure, if any) numbered in input order, from 1.
    seq: u64,
    /// Set once every input is read, one failed, or the router has gone: nothing more to read.
    over: bool,
    /// The last input's tail buffer, for the next one.
    spare: Vec<u8>,
    /// Several inputs (or one read up to a time), merged by stream time: read through this
    /// rather than one input after another.
    merged: Option<Merged<'i>>,
    /// A merged read that failed after a run of records: handed on after them.
    failure: Option<Failed>,
}

impl<I: Inputs + ?Sized> Reader<'_, I> {
    /// The next chunk in input order, read into `records`; `None` once there is nothing more.
    fn next(&mut self, mut records: Records) -> Option<(u64, Step<Records>)> {
        if self.merged.is_some() {
            return self.next_merged(records);
        }
        loop {
            if self.over {
                return None;
            }
            let Some((cutter, origin)) = &mut self.current else {
                if self.next == self.inputs.count() {
                    self.over = true;
                    return None;
                }
                let n = self.next;
                self.next += 1;
                match self.inputs.open(n) {
                    Ok(reader) => {
                        let cutter = Cutter::with_spare(reader, files::MAX_LINE, std::mem::take(&mut self.spare));
                        self.current = Some((cutter, self.inputs.origin(n)));
                    }
                    Err(error) => return Some(self.failed("opening", n, error)),
                }
                continue;
            };
            match cutter.cut(&mut records.bytes, self.chunk_bytes) {
                Ok(Some(cut)) => {
                    records.cut = cut;
                    records.origin = origin.clone();
                    self.seq += 1;
                    return Some((self.seq, Step::Chunk(records)));
                }
                Ok(None) => {
                    if let Some((cutter, _)) = self.current.take() {
                        self.spare = cutter.into_spare();
                    }
                }
                Err(error) => return Some(self.failed("reading", self.next - 1, error)),
            }
        }
    }

    /// The next run of records in stream time that share an input (up to a chunk's bytes),
    /// copied into `records`.
    fn next_merged(&mut self, mut records: Records) -> Option<(u64, Step<Records>)> {
        let merged = self.merged.as_mut()?;
        if self.over {
            return None;
        }
        if let Some(f) = self.failure.take() {
            self.over = true;
            self.seq += 1;
            return Some((self.seq, Step::Failed(f)));
        }
        records.bytes.clear();
        records.cut = Cut::Lines(0..0);
        let mut run: Option<Origin> = None;
        loop {
            let (record, origin) = match merged.peek() {
                Ok(Some(next)) => next,
                Ok(None) if run.is_none() => {
                    self.over = true;
                    return None;
                }
                Ok(None) => break,
                Err(f) => {
                    if run.is_some() {
                        // The records before the failure go first; the failure comes next.
                        self.failure = Some(f);
                        break;
                    }
                    self.over = true;
                    self.seq += 1;
                    return Some((self.seq, Step::Failed(f)));
                }
            };
            if run.as_ref().is_some_and(|o| o != origin) {
                break;
            }
            match record {
                Record::Line(line) => {
                    if run.is_some() && records.bytes.len() + line.len() >= self.chunk_bytes {
                        break;
                    }
                    records.bytes.extend_from_slice(line);
                    records.bytes.push(b'\n');
                }
                Record::TooLong { len, head } => {
                    if run.is_some() {
                        break;
                    }
                    records.bytes.extend_from_slice(head);
                    records.cut = Cut::TooLong { len, head: 0..head.len() };
                    records.origin = origin.clone();
                    merged.take();
                    self.seq += 1;
                    return Some((self.seq, Step::Chunk(records)));
                }
            }
            run = Some(origin.clone());
            merged.take();
        }
        let origin = run?;
        records.cut = Cut::Lines(0..records.bytes.len());
        records.origin = origin;
        self.seq += 1;
        Some((self.seq, Step::Chunk(records)))
    }

    fn failed(&mut self, doing: &'static str, n: usize, error: io::Error) -> (u64, Step<Records>) {
        self.over = true;
        self.current = None;
        self.seq += 1;
        (self.seq, Step::Failed(Failed { doing, input: self.inputs.name(n), error }))
    }
}

/// Chunk buffers free to read into, each thread's own: at most [`IN_FLIGHT`] chunks of a
/// thread are read and not yet routed.
struct Pool {
    /// By thread: the router is 0, the decoders 1 and on.
    free: Vec<Vec<Option<Chunk>>>,
    /// Whether the thread waits for one of its buffers (so a buffer given back wakes it only then).
    waiting: Vec<bool>,
    /// The router has gone: waiting is over.
    closed: bool,
}

/// What the threads share: the reader, the buffers, and the way back to the router.
struct Shared<'i, I: ?Sized> {
    reader: Mutex<Reader<'i, I>>,
    pool: Mutex<Pool>,
    /// By thread, as [`Pool::free`].
    given_back: Vec<Condvar>,
    chunk_bytes: usize,
    /// What the router would decode of each record.
    reading: wire::Reading,
}

impl<I: Inputs + ?Sized> Shared<'_, I> {
    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A free buffer of thread `home`: waits for one when `wait`, else `None` when there is none now.
    fn buffer(&self, home: usize, wait: bool) -> Option<Records> {
        let mut pool = self.pool();
        loop {
            if pool.closed {
                return None;
            }
            if let Some(spare) = pool.free[home].pop() {
                drop(pool);
                return Some(spare.map_or_else(|| Records::new(home), |c| Records::reuse(c, self.chunk_bytes)));
            }
            if !wait {
                return None;
            }
            pool.waiting[home] = true;
            pool = self.given_back[home].wait(pool).unwrap_or_else(std::sync::PoisonError::into_inner);
            pool.waiting[home] = false;
        }
    }

    fn give_back(&self, chunk: Chunk) {
        let home = chunk.borrow_owner().borrow_owner().home;
        let mut pool = self.pool();
        pool.free[home].push(Some(chunk));
        if pool.waiting[home] {
            self.given_back[home].notify_one();
        }
    }

    /// Reads the next chunk into a free buffer and decodes it; `None` when there is nothing left
    /// to read, or (when not `wait`ing for a buffer) no buffer free.
    fn work(&self, home: usize, wait: bool) -> Option<(u64, Step<Chunk>)> {
        let records = self.buffer(home, wait)?;
        let next = self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next(records);
        let Some((seq, step)) = next else {
            // Nothing more to read: the buffer stays unused (the router needs no more of them).
            return None;
        };
        Some((
            seq,
            match step {
                Step::Chunk(records) => Step::Chunk(decode(records, self.reading)),
                Step::Failed(f) => Step::Failed(f),
            },
        ))
    }

    /// Stops every reading thread: the router has gone, or is done.
    fn close(&self) {
        self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner).over = true;
        self.pool().closed = true;
        for waiting in &self.given_back {
            waiting.notify_all();
        }
    }
}

/// Closes the feed however the router leaves (returning early, or a panic), so that the other
/// threads end and the scope can be left.
struct CloseOnDrop<'s, 'i, I: Inputs + ?Sized>(&'s Shared<'i, I>);

impl<I: Inputs + ?Sized> Drop for CloseOnDrop<'_, '_, I> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Routes one chunk's records in order.
fn route(chunk: &Chunk, pipeline: &mut Pipeline, also: &mut (impl Sink + ?Sized)) {
    let decoded = chunk.borrow_owner();
    let records = decoded.borrow_owner();
    let lines = decoded.borrow_dependent();
    chunk.with_dependent(|_, facts| {
        for ((span, line), lowered) in records.spans.iter().zip(lines).zip(facts) {
            match (span, line, lowered) {
                (Span::Line(range), _, Some(lowered)) => {
                    pipeline.feed_lowered(&records.bytes[range.clone()], lowered, &records.origin, also);
                }
                (Span::Line(range), Some(Ok(line)), None) => {
                    pipeline.feed_line(&records.bytes[range.clone()], line, &records.origin, also);
                }
                (Span::Line(range), Some(Err(reason)), None) => {
                    pipeline.feed_malformed(&records.bytes[range.clone()], reason, &records.origin, also);
                }
                (Span::TooLong { len, head }, ..) => {
                    pipeline.feed(
                        Record::TooLong { len: *len, head: &records.bytes[head.clone()] },
                        &records.origin,
                        also,
                    );
                }
                (Span::Line(_), None, None) => unreachable!("every line is decoded"),
            }
        }
    });
}

/// Feeds every record of `inputs` to `pipeline`, in stream time as `timing` says, with the result
/// of feeding them one by one; `decoders` threads (at least one, this one among them) read and decode while this one
/// routes.
pub fn feed(
    inputs: &(impl Inputs + ?Sized),
    timing: Timing,
    decoders: usize,
    chunk_bytes: usize,
    pipeline: &mut Pipeline,
    also: &mut (impl Sink + ?Sized),
) -> Result<(), Failed> {
    let threads = decoders.max(1);
    // One input read to its end needs no clock: it is read as it lies, straight into the chunks.
    let merge = timing.order == Order::Time && (inputs.count() > 1 || timing.until.is_some());
    if merge && threads == 1 {
        let merged = Merged::open_decoding(inputs, timing, pipeline.router.decodes())?;
        return feed_in_order(merged.order_only(), pipeline, also);
    }
    // Routing needs the records' order only (not `Merged::time`).
    let merged = if merge { Some(Merged::open(inputs, timing)?.order_only()) } else { None };
    let shared = Shared {
        reader: Mutex::new(Reader {
            inputs,
            chunk_bytes,
            next: 0,
            current: None,
            seq: 0,
            over: false,
            spare: Vec::new(),
            merged,
            failure: None,
        }),
        pool: Mutex::new(Pool {
            free: (0..threads).map(|_| (0..IN_FLIGHT).map(|_| None).collect()).collect(),
            waiting: vec![false; threads],
            closed: false,
        }),
        given_back: (0..threads).map(|_| Condvar::new()).collect(),
        chunk_bytes,
        reading: pipeline.router.decodes(),
    };
    let (done_tx, done_rx) = mpsc::channel::<(u64, Step<Chunk>)>();
    std::thread::scope(|scope| {
        for home in 1..threads {
            let (shared, done_tx) = (&shared, done_tx.clone());
            scope.spawn(move || {
                while let Some(done) = shared.work(home, true) {
                    if done_tx.send(done).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let _close = CloseOnDrop(&shared);
        let mut next = 1;
        let mut early = BTreeMap::new();
        loop {
            while let Ok((seq, step)) = done_rx.try_recv() {
                early.insert(seq, step);
            }
            if let Some(step) = early.remove(&next) {
                next += 1;
                match step {
                    Step::Chunk(chunk) => {
                        route(&chunk, pipeline, also);
                        shared.give_back(chunk);
                    }
                    Step::Failed(f) => return Err(f),
                }
                continue;
            }
            // The next chunk is not here yet: decode one here rather than wait, if one is left.
            if let Some((seq, step)) = shared.work(0, false) {
                early.insert(seq, step);
                continue;
            }
            match done_rx.recv() {
                Ok((seq, step)) => {
                    early.insert(seq, step);
                }
                // Every other thread is done, and nothing is left to read here.
                Err(mpsc::RecvError) if shared.reader.lock().map_or(true, |r| r.over) => break,
                // Only this thread reads now: its buffers are all in `early` or free.
                Err(mpsc::RecvError) => {}
            }
        }
        debug_assert!(early.is_empty(), "every chunk read was routed");
        if let Some(merged) = shared.reader.lock().ok().as_ref().and_then(|r| r.merged.as_ref()) {
            pipeline.reopened = pipeline.reopened.saturating_add(merged.reopened());
        }
        Ok(())
    })
}

/// Several inputs on this thread alone (a sync reads sessions side by side, each on a core of its
/// own): each record routed as the merge takes it, its line decoded once, by the merge for its
/// time or, when the merge needed none, by the router. Through chunks, each line the merge read
/// for its time was read again to be decoded, and copied once more on the way.
fn feed_in_order(
    mut merged: Merged<'_>,
    pipeline: &mut Pipeline,
    also: &mut (impl Sink + ?Sized),
) -> Result<(), Failed> {
    while merged.peek()?.is_some() {
        merged.take();
        let Some((record, origin)) = merged.current() else { break };
        match (record, merged.decoded()) {
            (Record::Line(bytes), Some(Ok(line))) => pipeline.feed_line(bytes, line, origin, also),
            (Record::Line(bytes), Some(Err(reason))) => pipeline.feed_malformed(bytes, reason, origin, also),
            (record, _) => pipeline.feed(record, origin, also),
        }
    }
    pipeline.reopened = pipeline.reopened.saturating_add(merged.reopened());
    Ok(())
}
