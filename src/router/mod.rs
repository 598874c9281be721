//! The routing reducer of routing.md: one owner of the map child thread → parent, learned from
//! the traffic itself; every line ends in exactly one class. Pure: no I/O and no clock — time
//! arrives with each line — so it is deterministic, property-tested and fuzzed.
//!
//! It reads lines as the facts `wire` lowers them into, whatever their format: where a line goes
//! ([`Subject`]), what it weighs for a child ([`Weight`]), and the facts that place threads in the
//! tree ([`Fact::Thread`], [`Fact::Spawn`]). Output goes to a [`Sink`] as [`Event`]s, in the order
//! the model must apply them.

mod pending;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use self::pending::{PendingBuffer, PendingLine};
pub use crate::wire::fact::Via;
use crate::wire::fact::{Fact, Lowered, Parentage, Subject, Weight};
use crate::wire::{self, Decoded, Malformed, Origin};

/// A line of a thread as it arrives: its record, where it came from, what it says, its number.
#[derive(Clone, Copy)]
struct Arrival<'r, 'l> {
    record: &'r [u8],
    origin: &'r Origin,
    lowered: &'r Lowered<'l>,
    line_no: u64,
}

/// A thread's handle: its index in first-seen order (routing.md §8), the order of `stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadIdx(pub u32);

impl ThreadIdx {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The class every line ends in (routing.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Root,
    Rehomed,
    Suppressed,
    Global,
    Control,
    Malformed,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Rehomed => "rehomed",
            Self::Suppressed => "suppressed",
            Self::Global => "global",
            Self::Control => "control",
            Self::Malformed => "malformed",
        }
    }
}

/// Where a thread stands in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Seen, but neither root, child nor orphan yet.
    Pending,
    Root,
    Child,
    /// Not attributable (its window closed unregistered, or the depth guard refused it).
    Orphan,
}

/// Bounds of the reducer; every one that drops something is counted (`evicted`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub pending_lines_per_thread: usize,
    pub pending_bytes_per_thread: usize,
    pub pending_threads: usize,
    pub window_ms: i64,
    pub window_lines: u64,
    pub max_depth: u32,
    /// Threads known at most; lines of threads beyond it are dropped (`over_thread_limit`).
    pub threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            pending_lines_per_thread: 1024,
            pending_bytes_per_thread: 4 << 20,
            pending_threads: 1024,
            window_ms: 30_000,
            window_lines: 10_000,
            max_depth: 32,
            threads: 100_000,
        }
    }
}

/// The routing figures of `stats` (routing.md §7), with `lines` from `input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub lines: u64,
    pub root: u64,
    pub rehomed: u64,
    pub suppressed: u64,
    pub global: u64,
    pub control: u64,
    pub malformed: u64,
    pub early: u64,
    pub replayed: u64,
    pub evicted: u64,
    pub pending_at_end: u64,
    pub orphan_threads: u64,
    pub depth_limited: u64,
    /// Lines dropped because their thread would have been over the thread bound.
    pub over_thread_limit: u64,
    /// What lowering's bounds forgot (streamed responses, sub-agents' spawning tool uses).
    pub forgotten: wire::Forgotten,
}

impl Counters {
    /// Field by field: the figures of a stream read in parts, one after another.
    #[must_use]
    pub fn plus(&self, o: &Self) -> Self {
        let add = u64::saturating_add;
        Self {
            lines: add(self.lines, o.lines),
            root: add(self.root, o.root),
            rehomed: add(self.rehomed, o.rehomed),
            suppressed: add(self.suppressed, o.suppressed),
            global: add(self.global, o.global),
            control: add(self.control, o.control),
            malformed: add(self.malformed, o.malformed),
            early: add(self.early, o.early),
            replayed: add(self.replayed, o.replayed),
            evicted: add(self.evicted, o.evicted),
            pending_at_end: add(self.pending_at_end, o.pending_at_end),
            orphan_threads: add(self.orphan_threads, o.orphan_threads),
            depth_limited: add(self.depth_limited, o.depth_limited),
            over_thread_limit: add(self.over_thread_limit, o.over_thread_limit),
            forgotten: wire::Forgotten {
                responses: add(self.forgotten.responses, o.forgotten.responses),
                tasks: add(self.forgotten.tasks, o.forgotten.tasks),
            },
        }
    }

    /// routing.md §5: every line is in exactly one class, or evicted, or still pending (or dropped
    /// by the thread bound).
    pub fn conserved(&self) -> bool {
        self.lines
            == self.malformed
                + self.global
                + self.control
                + self.root
                + self.rehomed
                + self.suppressed
                + self.evicted
                + self.pending_at_end
                + self.over_thread_limit
    }
}

/// A line leaving the router with its class and its place in the tree.
#[derive(Debug)]
pub struct Routed<'r, 'l> {
    /// 1-based record number in the whole input stream.
    pub line_no: u64,
    pub class: Class,
    /// The thread the line is about (none for global and most control lines).
    pub thread: Option<ThreadIdx>,
    /// The root whose session shows it; `None` while the thread's chain does not reach a root.
    pub session: Option<ThreadIdx>,
    /// The child it is re-homed from (`ownerThreadId`); `None` for a root's own lines.
    pub owner: Option<ThreadIdx>,
    /// Drained from a pending buffer rather than routed on arrival.
    pub replayed: bool,
    /// The line as lowered: its time, its facts, its raw text.
    pub record: &'r Lowered<'l>,
    /// Thread ids by handle, for the facts that name other threads.
    pub registry: &'r Registry,
}

/// What the router tells its consumer, in order.
#[derive(Debug)]
pub enum Event<'r, 'l> {
    /// A thread is named for the first time; handles are dense and in first-seen order.
    Seen {
        thread: ThreadIdx,
        id: &'r Arc<str>,
    },
    /// `child` now hangs under `parent` (also when an orphan moves under its card).
    Registered {
        child: ThreadIdx,
        parent: ThreadIdx,
        via: Via,
        card: Option<&'r str>,
        depth: u32,
    },
    /// A thread registered earlier under a thread whose own place was not known yet now has its
    /// depth in the settled tree (routing.md §2: depth counts from the root).
    Depth {
        thread: ThreadIdx,
        depth: u32,
    },
    /// A later signal named the card of a child registered without one.
    CardKnown {
        child: ThreadIdx,
        card: &'r str,
    },
    BecameRoot {
        thread: ThreadIdx,
    },
    /// The thread is not attributable. A registered child is detached from its parent when the
    /// depth guard refuses it once its chain's depth is known.
    Orphaned {
        thread: ThreadIdx,
        depth_limited: bool,
    },
    Line(Routed<'r, 'l>),
    Malformed {
        line_no: u64,
        reason: &'r Malformed,
        record: &'r [u8],
    },
}

pub trait Sink {
    fn event(&mut self, event: &Event<'_, '_>);
}

impl<F: FnMut(&Event<'_, '_>)> Sink for F {
    fn event(&mut self, event: &Event<'_, '_>) {
        self(event);
    }
}

/// Whether two ids are the same, asked of a cached guess that is usually wrong (interleaved
/// sessions): ids of one length differ at their random end, so the last byte settles most
/// without a `memcmp` call.
#[inline]
pub(crate) fn same_id(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().last() == b.as_bytes().last() && a == b
}

/// Thread ids and their handles, stored once: the model, the screen and the commands read ids here
/// (or share the same `Arc`).
#[derive(Debug, Default)]
pub struct Registry {
    ids: Vec<Arc<str>>,
    by_id: FxHashMap<Arc<str>, ThreadIdx>,
}

impl Registry {
    pub fn find(&self, id: &str) -> Option<ThreadIdx> {
        self.by_id.get(id).copied()
    }

    pub fn id(&self, thread: ThreadIdx) -> &Arc<str> {
        &self.ids[thread.index()]
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The handle of `id`, and whether it is new (handles are dense, in first-seen order).
    pub fn insert(&mut self, id: &str) -> (ThreadIdx, bool) {
        if let Some(&idx) = self.by_id.get(id) {
            return (idx, false);
        }
        let idx = ThreadIdx(u32::try_from(self.ids.len()).expect("fewer than 2^32 threads"));
        let id: Arc<str> = id.into();
        self.ids.push(Arc::clone(&id));
        self.by_id.insert(id, idx);
        (idx, true)
    }
}

/// What the router knows of one thread.
#[derive(Debug)]
struct ThreadFacts {
    role: Role,
    parent: Option<ThreadIdx>,
    /// Registered children, for re-deriving the place of a subtree whose top registers later.
    children: Vec<ThreadIdx>,
    /// Depth below the top of its chain (a root, a pending thread or an orphan): the depth in the
    /// settled tree once the top is a root. For a depth-limited orphan, the depth it would have had,
    /// so that its descendants are refused too. Never above `max_depth` for a child.
    depth: u32,
    /// The root at the top of its chain, when the chain reaches one (kept current on every
    /// registration, so a line never walks the chain).
    session: Option<ThreadIdx>,
    via: Option<Via>,
    card: Option<Box<str>>,
    depth_limited: bool,
    has_children: bool,
    /// Saw a turn that is its own root turn: the mark of a root thread (0.171.0).
    own_root_turn: bool,
    buffer: Option<PendingBuffer>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    thread: ThreadIdx,
    first_line: u64,
    opened_ms: i64,
}

#[derive(Debug, Default)]
pub struct Router {
    limits: Limits,
    threads: Vec<ThreadFacts>,
    registry: Registry,
    /// The thread `see` named last: a thread's lines come in runs, and comparing one id is
    /// cheaper than hashing it.
    last_seen: Option<ThreadIdx>,
    counters: Counters,
    stream_ms: Option<i64>,
    /// Pending windows opened with a known stream time, oldest first (stream time never goes back).
    timed_windows: VecDeque<Window>,
    /// Pending windows opened before any time was known; they close after `window_lines` lines.
    counted_windows: VecDeque<Window>,
    open_windows: usize,
    /// What lowering remembers between records (a rollout file's thread).
    stream: wire::Stream,
    /// How much of each record is decoded.
    reading: wire::Reading,
    /// Spawning calls threads hold as copies ([`Fact::CopiedCall`]), at most [`COPIED_CALLS`].
    copied: VecDeque<(ThreadIdx, Box<str>)>,
    copied_forgotten: u64,
}

/// Copied spawning calls remembered (a fork copies as many as its original made); the oldest is
/// forgotten past it, counted with lowering's forgotten spawning tool uses.
pub const COPIED_CALLS: usize = 4096;

/// A registration a line asks for.
struct Claim<'l> {
    child: Cow<'l, str>,
    parent: Cow<'l, str>,
    via: Via,
    card: Option<Cow<'l, str>>,
}

impl Router {
    pub fn new(limits: Limits) -> Self {
        Self { limits, ..Self::default() }
    }

    /// A router that decodes what `reading` says of each record.
    pub fn reading(limits: Limits, reading: wire::Reading) -> Self {
        Self { limits, reading, ..Self::default() }
    }

    /// How much of each record it decodes (what a feed decoding elsewhere must read too).
    pub fn decodes(&self) -> wire::Reading {
        self.reading
    }

    pub fn counters(&self) -> Counters {
        let mut c = self.counters;
        c.pending_at_end = self.threads.iter().filter_map(|t| t.buffer.as_ref()).map(|b| b.len() as u64).sum();
        c.orphan_threads = self.threads.iter().filter(|t| t.role == Role::Orphan).count() as u64;
        c.forgotten = self.stream.forgotten();
        c.forgotten.tasks = c.forgotten.tasks.saturating_add(self.copied_forgotten);
        c
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn find(&self, id: &str) -> Option<ThreadIdx> {
        self.registry.find(id)
    }

    /// The root whose session a thread's lines belong to, if its chain of parents reaches one.
    pub fn session_of(&self, idx: ThreadIdx) -> Option<ThreadIdx> {
        self.threads[idx.index()].session
    }

    /// Routes one record (a line without its `\n`) from `origin`.
    pub fn push(&mut self, record: &[u8], origin: &Origin, sink: &mut impl Sink) {
        // A sidecar is one object about a thread, lowered whole by what its origin says it is.
        if let Some(sidecar) = wire::lower_sidecar(record, origin) {
            match sidecar {
                Ok(lowered) => self.push_lowered(record, &lowered, origin, sink),
                // Applied ahead of where it lies, it is counted malformed there.
                Err(_) if !origin.counted() => {}
                Err(reason) => self.push_malformed(record, &reason, sink),
            }
            return;
        }
        match wire::decode_reading(record, self.reading) {
            Ok(line) => self.push_line(record, &line, origin, sink),
            Err(reason) => self.push_malformed(record, &reason, sink),
        }
    }

    /// [`Router::push`] of a record decoded elsewhere: lowered here, with what earlier lines of
    /// the stream told (a rollout file's thread).
    pub fn push_line(&mut self, record: &[u8], line: &Decoded<'_>, origin: &Origin, sink: &mut impl Sink) {
        let mut lowered = Lowered::default();
        wire::lower_into(line, origin, &mut self.stream, &mut lowered);
        self.push_lowered(record, &lowered, origin, sink);
    }

    /// [`Router::push`] of a record decoded and lowered elsewhere (a line that
    /// [`Decoded::lowers_alone`], lowered with any stream context: it reads none).
    pub fn push_lowered(&mut self, record: &[u8], lowered: &Lowered<'_>, origin: &Origin, sink: &mut impl Sink) {
        // A record applied ahead of where it lies is one line, counted there.
        if !lowered.ahead {
            self.counters.lines += 1;
        }
        let line_no = self.counters.lines;
        self.close_windows(lowered.time, line_no, sink);
        match &lowered.subject {
            Subject::Control => self.control(lowered, line_no, sink),
            Subject::Global => {
                self.counters.global += 1;
                sink.event(&Event::Line(Routed {
                    line_no,
                    class: Class::Global,
                    thread: None,
                    session: None,
                    owner: None,
                    replayed: false,
                    record: lowered,
                    registry: &self.registry,
                }));
            }
            Subject::Thread(id) => self.thread_line(id, &Arrival { record, origin, lowered, line_no }, sink),
        }
    }

    /// [`Router::push`] of a record that did not decode.
    pub fn push_malformed(&mut self, record: &[u8], reason: &Malformed, sink: &mut impl Sink) {
        self.counters.lines += 1;
        let line_no = self.counters.lines;
        self.close_windows(None, line_no, sink);
        self.counters.malformed += 1;
        sink.event(&Event::Malformed { line_no, reason, record });
    }

    /// Counts a record that was over the line-length bound and never buffered whole.
    pub fn push_oversized(&mut self, len: usize, head: &[u8], sink: &mut impl Sink) {
        self.counters.lines += 1;
        let line_no = self.counters.lines;
        self.close_windows(None, line_no, sink);
        self.counters.malformed += 1;
        sink.event(&Event::Malformed { line_no, reason: &Malformed::TooLong(len), record: head });
    }

    /// Whether ending the input now would settle nothing: no thread waits for its registration,
    /// none holds lines. [`Router::finish`] then leaves the threads as they are, so a reader that
    /// goes on reading later (the daemon's sync of a growing session) may take the model as it
    /// stands for the one a finished read would give.
    pub fn settled(&self) -> bool {
        self.threads.iter().all(|t| t.role != Role::Pending && t.buffer.as_ref().is_none_or(|b| b.len() == 0))
    }

    /// End of input: every pending thread is settled (routing.md §4), oldest window first.
    pub fn finish(&mut self, sink: &mut impl Sink) {
        let mut order: Vec<(u64, ThreadIdx)> = self
            .timed_windows
            .iter()
            .chain(&self.counted_windows)
            .filter(|w| self.threads[w.thread.index()].role == Role::Pending)
            .map(|w| (w.first_line, w.thread))
            .collect();
        order.sort_unstable();
        for (_, t) in order {
            self.settle(t, sink);
        }
        self.timed_windows.clear();
        self.counted_windows.clear();
        for i in 0..self.threads.len() {
            if self.threads[i].role == Role::Pending {
                self.settle(ThreadIdx(i as u32), sink);
            }
        }
    }

    /// Client traffic and responses feed metadata only, about the thread their description names;
    /// that description may register it or mark it a root (routing.md §2, §8).
    fn control(&mut self, lowered: &Lowered<'_>, line_no: u64, sink: &mut impl Sink) {
        let mut subject = None;
        if let Some(fact) = lowered.facts.iter().find_map(|f| if let Fact::Thread(t) = f { Some(t) } else { None }) {
            subject = match &fact.parentage {
                Parentage::Child { parent, via, card } => {
                    let claim = Claim {
                        child: Cow::Borrowed(&fact.thread),
                        parent: Cow::Borrowed(parent),
                        via: *via,
                        card: card.as_deref().map(Cow::Borrowed),
                    };
                    self.register(&claim, sink)
                }
                Parentage::Root if self.admits(&fact.thread) => {
                    let t = self.see(&fact.thread, sink);
                    self.mark_root(t, sink);
                    Some(t)
                }
                Parentage::Root => None,
                Parentage::SubAgent | Parentage::Unknown => self.find(&fact.thread),
            };
        }
        self.counters.control += u64::from(!lowered.ahead);
        sink.event(&Event::Line(Routed {
            line_no,
            class: Class::Control,
            thread: subject,
            session: None,
            owner: None,
            replayed: false,
            record: lowered,
            registry: &self.registry,
        }));
    }

    fn thread_line(&mut self, id: &str, line: &Arrival<'_, '_>, sink: &mut impl Sink) {
        let lowered = line.lowered;
        if !self.admits(id) {
            self.counters.over_thread_limit += u64::from(!lowered.ahead);
            return;
        }
        let thread = self.see(id, sink);

        // A thread that describes its own place is settled before its own line (and its buffer first).
        for fact in lowered.facts.iter() {
            let Fact::Thread(fact) = fact else { continue };
            match &fact.parentage {
                Parentage::Child { parent, via, card } => {
                    let claim = Claim {
                        child: Cow::Borrowed(&fact.thread),
                        parent: Cow::Borrowed(parent),
                        via: *via,
                        card: card.as_deref().map(Cow::Borrowed),
                    };
                    self.register(&claim, sink);
                }
                Parentage::Root if self.admits(&fact.thread) => {
                    let t = self.see(&fact.thread, sink);
                    self.mark_root(t, sink);
                }
                Parentage::Root | Parentage::SubAgent | Parentage::Unknown => {}
            }
        }

        for fact in lowered.facts.iter() {
            let Fact::CopiedCall(card) = fact else { continue };
            if !self.copied.iter().any(|(t, c)| *t == thread && **c == **card) {
                if self.copied.len() >= COPIED_CALLS {
                    self.copied.pop_front();
                    self.copied_forgotten += 1;
                }
                self.copied.push_back((thread, card.as_ref().into()));
            }
        }
        let copied =
            |card: Option<&str>| card.is_some_and(|card| self.copied.iter().any(|(t, c)| *t == thread && &**c == card));
        let own: Vec<&wire::fact::Spawn<'_>> = lowered
            .facts
            .iter()
            .filter_map(|f| if let Fact::Spawn(s) = f { Some(s) } else { None })
            .filter(|s| !copied(s.card.as_deref()))
            .collect();
        let spawns = || own.iter().copied();
        for spawn in spawns() {
            if self.admits(&spawn.child) {
                self.see(&spawn.child, sink);
            }
        }

        if self.threads[thread.index()].role == Role::Pending {
            // Held back, a record applied ahead would be applied twice where it lies.
            if !lowered.ahead {
                self.buffer(thread, id, line, sink);
            }
        } else {
            self.emit(thread, lowered, line.line_no, false, sink);
        }

        // A spawn item is classified first; the children it registers replay right after it.
        for spawn in spawns() {
            let claim = Claim {
                child: Cow::Borrowed(&spawn.child),
                parent: Cow::Borrowed(id),
                via: spawn.via,
                card: spawn.card.as_deref().map(Cow::Borrowed),
            };
            self.register(&claim, sink);
        }
    }

    fn emit(&mut self, thread: ThreadIdx, lowered: &Lowered<'_>, line_no: u64, replayed: bool, sink: &mut impl Sink) {
        let facts = &self.threads[thread.index()];
        let (class, owner) = match facts.role {
            Role::Root => (Class::Root, None),
            Role::Child | Role::Orphan | Role::Pending => match lowered.weight {
                Weight::Noise | Weight::Closing => (Class::Suppressed, Some(thread)),
                Weight::Output => (Class::Rehomed, Some(thread)),
            },
        };
        match class {
            _ if lowered.ahead => {}
            Class::Root => self.counters.root += 1,
            Class::Rehomed => self.counters.rehomed += 1,
            _ => self.counters.suppressed += 1,
        }
        if replayed && !lowered.ahead {
            self.counters.replayed += 1;
        }
        let session = self.session_of(thread);
        sink.event(&Event::Line(Routed {
            line_no,
            class,
            thread: Some(thread),
            session,
            owner,
            replayed,
            record: lowered,
            registry: &self.registry,
        }));
    }

    fn buffer(&mut self, thread: ThreadIdx, id: &str, line: &Arrival<'_, '_>, sink: &mut impl Sink) {
        let Arrival { record, origin, lowered, line_no } = *line;
        self.counters.early += 1;
        if lowered.facts.iter().any(|f| matches!(f, Fact::TurnStarted(t) if t.own_root_turn)) {
            self.threads[thread.index()].own_root_turn = true;
        }
        // The buffered line is known to be this thread's, whatever told that (its own text, its
        // file, an earlier line): its replay lowers to the same facts. A sidecar's origin already
        // says all its replay needs: its thread is the agent the file describes, not the parent
        // whose line it is (made the parent's, the replay described the parent as its own child).
        let sidecar = origin.info().is_some_and(|i| i.sidecar);
        let origin = if sidecar || origin.thread() == Some(id) {
            origin.clone()
        } else {
            let mut info = origin.info().cloned().unwrap_or_default();
            info.thread = Some(id.into());
            Origin::new(info)
        };
        let pending = PendingLine {
            record: record.into(),
            origin,
            line_no,
            terminal: lowered.weight == Weight::Closing,
            size: record.len() + 1,
        };
        let opens_window = self.threads[thread.index()].buffer.is_none();
        if opens_window && self.open_windows >= self.limits.pending_threads {
            self.close_oldest_window(sink);
        }
        let facts = &mut self.threads[thread.index()];
        let buffer = facts.buffer.get_or_insert_with(PendingBuffer::default);
        self.counters.evicted +=
            buffer.push(pending, self.limits.pending_lines_per_thread, self.limits.pending_bytes_per_thread);
        if opens_window {
            self.open_windows += 1;
            let window = Window { thread, first_line: line_no, opened_ms: self.stream_ms.unwrap_or(0) };
            if self.stream_ms.is_some() {
                self.timed_windows.push_back(window);
            } else {
                self.counted_windows.push_back(window);
            }
        }
    }

    /// Advances stream time with a line's own time, then closes every window it outlived.
    fn close_windows(&mut self, time: Option<i64>, line_no: u64, sink: &mut impl Sink) {
        if let Some(t) = time {
            self.stream_ms = Some(self.stream_ms.map_or(t, |s| s.max(t)));
        }
        while let Some(w) = self.timed_windows.front().copied() {
            let expired = self.stream_ms.is_some_and(|now| now.saturating_sub(w.opened_ms) > self.limits.window_ms);
            if self.is_open(w) && !expired {
                break;
            }
            self.timed_windows.pop_front();
            if self.is_open(w) {
                self.settle(w.thread, sink);
            }
        }
        while let Some(w) = self.counted_windows.front().copied() {
            if self.is_open(w) && line_no - w.first_line <= self.limits.window_lines {
                break;
            }
            self.counted_windows.pop_front();
            if self.is_open(w) {
                self.settle(w.thread, sink);
            }
        }
    }

    fn is_open(&self, w: Window) -> bool {
        self.threads[w.thread.index()].role == Role::Pending
    }

    /// Makes room for one more pending thread by closing the window whose first line is oldest.
    fn close_oldest_window(&mut self, sink: &mut impl Sink) {
        while self.timed_windows.front().is_some_and(|w| !self.is_open(*w)) {
            self.timed_windows.pop_front();
        }
        while self.counted_windows.front().is_some_and(|w| !self.is_open(*w)) {
            self.counted_windows.pop_front();
        }
        let oldest = match (self.timed_windows.front(), self.counted_windows.front()) {
            (Some(a), Some(b)) if b.first_line < a.first_line => self.counted_windows.pop_front(),
            (Some(_), _) => self.timed_windows.pop_front(),
            (None, Some(_)) => self.counted_windows.pop_front(),
            (None, None) => None,
        };
        if let Some(w) = oldest {
            self.settle(w.thread, sink);
        }
    }

    /// The end of a pending thread's window: a root if it looks like one, else an orphan.
    fn settle(&mut self, thread: ThreadIdx, sink: &mut impl Sink) {
        let facts = &self.threads[thread.index()];
        if facts.role != Role::Pending {
            return;
        }
        if facts.has_children || facts.own_root_turn {
            self.mark_root(thread, sink);
        } else {
            self.orphan(thread, false, sink);
        }
    }

    fn mark_root(&mut self, thread: ThreadIdx, sink: &mut impl Sink) {
        let facts = &mut self.threads[thread.index()];
        if facts.role != Role::Pending {
            return;
        }
        facts.role = Role::Root;
        facts.depth = 0;
        facts.session = Some(thread);
        sink.event(&Event::BecameRoot { thread });
        // Children registered while it was pending now hang under a root.
        self.place_subtree(thread, sink);
        self.drain(thread, sink);
    }

    fn orphan(&mut self, thread: ThreadIdx, depth_limited: bool, sink: &mut impl Sink) {
        let facts = &mut self.threads[thread.index()];
        if depth_limited && !facts.depth_limited {
            facts.depth_limited = true;
            self.counters.depth_limited += 1;
        }
        if facts.role == Role::Orphan {
            return;
        }
        facts.role = Role::Orphan;
        facts.session = None;
        if let Some(parent) = facts.parent.take() {
            self.threads[parent.index()].children.retain(|&c| c != thread);
        }
        sink.event(&Event::Orphaned { thread, depth_limited });
        self.drain(thread, sink);
    }

    /// Replays a settled thread's buffer through §3, exactly once, in arrival order.
    fn drain(&mut self, thread: ThreadIdx, sink: &mut impl Sink) {
        let Some(mut buffer) = self.threads[thread.index()].buffer.take() else {
            return;
        };
        self.open_windows -= 1;
        for pending in buffer.drain() {
            // A sidecar lowers whole, as it did when it was buffered.
            if let Some(sidecar) = wire::lower_sidecar(&pending.record, &pending.origin) {
                let lowered = sidecar.expect("a buffered sidecar lowered once already");
                self.emit(thread, &lowered, pending.line_no, true, sink);
                continue;
            }
            // Only decoded lines are ever buffered; a record cannot decode differently twice.
            let line = wire::decode(&pending.record).expect("a buffered record decoded once already");
            let lowered = wire::lower(&line, &pending.origin, &mut wire::Stream::default());
            self.emit(thread, &lowered, pending.line_no, true, sink);
        }
    }

    /// Whether a thread may be named: a known one always, a new one while under the thread bound.
    fn admits(&self, id: &str) -> bool {
        self.threads.len() < self.limits.threads || self.registry.find(id).is_some()
    }

    /// Names a thread; the first naming gives it its handle.
    fn see(&mut self, id: &str, sink: &mut impl Sink) -> ThreadIdx {
        if let Some(idx) = self.last_seen.filter(|t| same_id(&self.registry.ids[t.index()], id)) {
            return idx;
        }
        let (idx, new) = self.registry.insert(id);
        self.last_seen = Some(idx);
        if !new {
            return idx;
        }
        self.threads.push(ThreadFacts {
            role: Role::Pending,
            parent: None,
            children: Vec::new(),
            depth: 0,
            session: None,
            via: None,
            card: None,
            depth_limited: false,
            has_children: false,
            own_root_turn: false,
            buffer: None,
        });
        sink.event(&Event::Seen { thread: idx, id: &self.registry.ids[idx.index()] });
        idx
    }

    /// Applies one registration signal (routing.md §2) and its guards; returns the child's handle.
    fn register(&mut self, claim: &Claim<'_>, sink: &mut impl Sink) -> Option<ThreadIdx> {
        if !self.admits(&claim.child) || !self.admits(&claim.parent) {
            return None;
        }
        let child = self.see(&claim.child, sink);
        let parent = self.see(&claim.parent, sink);
        let facts = &self.threads[child.index()];
        match facts.role {
            // First signal wins; a later one may only fill the card.
            Role::Root | Role::Child => {
                if facts.role == Role::Child && facts.card.is_none() {
                    if let Some(card) = claim.card.as_deref() {
                        self.threads[child.index()].card = Some(card.into());
                        sink.event(&Event::CardKnown { child, card });
                    }
                }
                return Some(child);
            }
            Role::Pending | Role::Orphan => {}
        }
        if child == parent || self.is_ancestor(child, parent) {
            return Some(child);
        }
        let depth = self.threads[parent.index()].depth.saturating_add(1);
        if depth > self.limits.max_depth {
            self.threads[child.index()].depth = depth;
            self.orphan(child, true, sink);
            self.place_subtree(child, sink);
            return Some(child);
        }
        let session = self.threads[parent.index()].session;
        self.threads[parent.index()].has_children = true;
        self.threads[parent.index()].children.push(child);
        let facts = &mut self.threads[child.index()];
        facts.role = Role::Child;
        facts.parent = Some(parent);
        facts.depth = depth;
        facts.session = session;
        facts.via = Some(claim.via);
        facts.card = claim.card.as_deref().map(Into::into);
        sink.event(&Event::Registered { child, parent, via: claim.via, card: claim.card.as_deref(), depth });
        // Its own children, registered before it was, move down with it.
        self.place_subtree(child, sink);
        self.drain(child, sink);
        Some(child)
    }

    /// Re-derives depth and session below `top`, whose own place just changed, without recursion:
    /// a descendant pushed past the depth guard is orphaned, and so is everything below it.
    fn place_subtree(&mut self, top: ThreadIdx, sink: &mut impl Sink) {
        if self.threads[top.index()].children.is_empty() {
            return;
        }
        let mut stack: Vec<ThreadIdx> = self.threads[top.index()].children.clone();
        while let Some(t) = stack.pop() {
            let Some(parent) = self.threads[t.index()].parent else { continue };
            let (depth, session) = {
                let p = &self.threads[parent.index()];
                (p.depth.saturating_add(1), p.session)
            };
            let facts = &mut self.threads[t.index()];
            stack.extend_from_slice(&facts.children);
            if depth > self.limits.max_depth {
                facts.depth = depth;
                self.orphan(t, true, sink);
                continue;
            }
            facts.session = session;
            if facts.depth != depth {
                facts.depth = depth;
                sink.event(&Event::Depth { thread: t, depth });
            }
        }
    }

    /// Whether `ancestor` is on `thread`'s chain of parents (or is `thread` itself). Chains are
    /// never longer than the depth guard, so this walk is short.
    fn is_ancestor(&self, ancestor: ThreadIdx, mut thread: ThreadIdx) -> bool {
        if self.threads[ancestor.index()].children.is_empty() {
            return thread == ancestor;
        }
        for _ in 0..=self.threads.len() {
            if thread == ancestor {
                return true;
            }
            match self.threads[thread.index()].parent {
                Some(p) => thread = p,
                None => return false,
            }
        }
        true
    }
}
