//! Records decoded and lowered on every core while the caller's thread routes them.
//!
//! One reader thread cuts the inputs into chunks of whole records (a chunk never spans two
//! inputs); decoder threads take chunks as they come, decode every record and lower every line
//! that needs nothing from the lines before it; the caller's thread puts the chunks back in input
//! order, lowers the rest (rollout lines, whose thread an earlier line named) and routes every
//! record. Decoding and such lowering are pure functions of a record's bytes and origin, so the
//! router sees what [`Pipeline::feed`] one record at a time would show it: the result is the same.

use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::ops::Range;
use std::sync::{Mutex, mpsc};

use crate::pipeline::Pipeline;
use crate::router::Sink;
use crate::source::files::{self, Input, Record};
use crate::wire::{self, Line, Lowered, Malformed, Origin};

/// Record bytes per chunk: big enough that handing one over costs next to nothing, small enough
/// that the decoders share the work evenly and a chunk with its decoded lines stays in cache. On
/// the Claude folder of `benches/ingest`, 256 KiB and 1 MiB chunks were slower than this, and
/// 24 KiB no faster.
pub const CHUNK_BYTES: usize = 48 << 10;
/// Chunks read but not yet routed, at most: what bounds the memory of the hand-over.
const IN_FLIGHT: usize = 8;

/// The inputs of one stream, opened in order by the reader thread.
pub trait Inputs: Sync {
    fn count(&self) -> usize;
    /// The input's name, for errors.
    fn name(&self, n: usize) -> String;
    fn origin(&self, n: usize) -> Origin;
    fn open(&self, n: usize) -> io::Result<Box<dyn BufRead + Send + '_>>;
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
    fn open(&self, n: usize) -> io::Result<Box<dyn BufRead + Send + '_>> {
        files::open(&self[n])
    }
}

/// Why feeding stopped: what was being done to which input, and the error.
#[derive(Debug)]
pub struct Failed {
    pub doing: &'static str,
    pub input: String,
    pub error: io::Error,
}

/// A record's place in a chunk's bytes.
enum Span {
    Line(Range<usize>),
    TooLong { len: usize, head: Range<usize> },
}

/// Records of one input, copied out of the read buffer.
struct Records {
    origin: Origin,
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

impl Records {
    fn new(origin: Origin) -> Self {
        Self { origin, bytes: Vec::with_capacity(CHUNK_BYTES + (16 << 10)), spans: Vec::new() }
    }

    /// A routed chunk's buffers, emptied for the next records (its lines are dropped here, on the
    /// reader's thread, not on the router's).
    fn reuse(chunk: Chunk, origin: Origin) -> Self {
        let mut records = chunk.into_owner().into_owner();
        records.origin = origin;
        records.bytes.clear();
        records.spans.clear();
        records
    }
}

/// Each record's line (`None` for a record over the length bound).
type Lines<'a> = Vec<Option<Result<Line<'a>, Malformed>>>;

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

fn decode(records: Records) -> Chunk {
    let decoded = Decoded::new(records, |r| {
        r.spans
            .iter()
            .map(|span| match span {
                Span::Line(range) => {
                    let mut line = Line::empty();
                    Some(wire::decode_into(&r.bytes[range.clone()], &mut line).map(|()| line))
                }
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

/// The reader's end of the hand-over: chunks numbered in input order, one token per chunk in
/// flight, and the routed chunks coming back to be dropped and their buffers reused.
struct Handover {
    work: mpsc::SyncSender<(u64, Step<Records>)>,
    tokens: mpsc::Receiver<Option<Chunk>>,
    seq: u64,
}

impl Handover {
    /// Hands a chunk on; the buffers for the next one, or `None` when the router has gone.
    fn chunk(&mut self, records: Records) -> Option<Records> {
        let token = self.tokens.recv().ok()?;
        let origin = records.origin.clone();
        self.seq += 1;
        self.work.send((self.seq, Step::Chunk(records))).ok()?;
        Some(match token {
            Some(routed) => Records::reuse(routed, origin),
            None => Records::new(origin),
        })
    }

    fn failed(&mut self, failed: Failed) {
        self.seq += 1;
        let _ = self.work.send((self.seq, Step::Failed(failed)));
    }
}

/// Reads every input in order into chunks; stops early when the router has gone.
fn read(inputs: &(impl Inputs + ?Sized), chunk_bytes: usize, handover: &mut Handover) {
    let mut spare: Option<Records> = None;
    for n in 0..inputs.count() {
        let reader = match inputs.open(n) {
            Ok(r) => r,
            Err(error) => return handover.failed(Failed { doing: "opening", input: inputs.name(n), error }),
        };
        let origin = inputs.origin(n);
        let mut records = spare.take().unwrap_or_else(|| Records::new(origin.clone()));
        records.origin = origin;
        let mut gone = false;
        let read = files::read_records(reader, files::MAX_LINE, |record| {
            if gone {
                return;
            }
            let start = records.bytes.len();
            match record {
                Record::Line(l) => {
                    records.bytes.extend_from_slice(l);
                    records.spans.push(Span::Line(start..records.bytes.len()));
                }
                Record::TooLong { len, head } => {
                    records.bytes.extend_from_slice(head);
                    records.spans.push(Span::TooLong { len, head: start..records.bytes.len() });
                }
            }
            if records.bytes.len() >= chunk_bytes {
                let full = std::mem::replace(&mut records, Records::new(Origin::NONE));
                match handover.chunk(full) {
                    Some(next) => records = next,
                    None => gone = true,
                }
            }
        });
        if gone {
            return;
        }
        // A chunk never spans two inputs: each input's records go with its origin.
        if records.spans.is_empty() {
            spare = Some(records);
        } else {
            match handover.chunk(records) {
                Some(next) => spare = Some(next),
                None => return,
            }
        }
        if let Err(error) = read {
            return handover.failed(Failed { doing: "reading", input: inputs.name(n), error });
        }
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
                    pipeline.feed_malformed(&records.bytes[range.clone()], reason, also);
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

/// Feeds every record of `inputs` to `pipeline`, in order, with the result of feeding them one by
/// one; `decoders` threads (at least one) decode while this one routes.
pub fn feed(
    inputs: &(impl Inputs + ?Sized),
    decoders: usize,
    chunk_bytes: usize,
    pipeline: &mut Pipeline,
    also: &mut (impl Sink + ?Sized),
) -> Result<(), Failed> {
    let (work_tx, work_rx) = mpsc::sync_channel::<(u64, Step<Records>)>(IN_FLIGHT);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, Step<Chunk>)>();
    // One token per chunk in flight: the reader takes one before it hands a chunk on, the router
    // gives it back, with the routed chunk, once it is routed.
    let (token_tx, token_rx) = mpsc::sync_channel::<Option<Chunk>>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        token_tx.send(None).expect("room for every token");
    }
    std::thread::scope(|scope| {
        scope.spawn(move || read(inputs, chunk_bytes, &mut Handover { work: work_tx, tokens: token_rx, seq: 0 }));
        for _ in 0..decoders.max(1) {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            scope.spawn(move || {
                // The lock is held only while waiting for the next chunk, not while decoding it.
                while let Some((seq, step)) = work_rx.lock().ok().and_then(|rx| rx.recv().ok()) {
                    let step = match step {
                        Step::Chunk(records) => Step::Chunk(decode(records)),
                        Step::Failed(f) => Step::Failed(f),
                    };
                    if done_tx.send((seq, step)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        // Owned here, so that returning early hangs up on the reader and the decoders.
        let (done_rx, token_tx) = (done_rx, token_tx);
        let mut next = 1;
        let mut early = BTreeMap::new();
        while let Ok((seq, step)) = done_rx.recv() {
            early.insert(seq, step);
            while let Some(step) = early.remove(&next) {
                next += 1;
                match step {
                    Step::Chunk(chunk) => {
                        route(&chunk, pipeline, also);
                        let _ = token_tx.send(Some(chunk));
                    }
                    Step::Failed(f) => return Err(f),
                }
            }
        }
        Ok(())
    })
}
