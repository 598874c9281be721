//! The routing reducer of routing.md: one owner of the map child thread → parent, learned from
//! the traffic itself; every line ends in exactly one class. Pure: no I/O and no clock — time
//! arrives with each line — so it is deterministic, property-tested and fuzzed.
//!
//! Output goes to a [`Sink`] as [`Event`]s, in the order the model must apply them.

mod classify;
mod pending;

use std::borrow::Cow;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use self::classify::{ChildClass, Side, child_class, side};
use self::pending::{PendingBuffer, PendingLine};
use crate::wire::methods::Method;
use crate::wire::{self, Decoded, Line, Malformed};

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

/// How a child was registered (`via` in `stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    CollabAgentToolCall,
    SubAgentActivity,
    ThreadStarted,
    ThreadRead,
    /// A Claude Code sub-agent, announced by its parent's `Task` / `Agent` tool use.
    TaskTool,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CollabAgentToolCall => "collabAgentToolCall",
            Self::SubAgentActivity => "subAgentActivity",
            Self::ThreadStarted => "threadStarted",
            Self::ThreadRead => "threadRead",
            Self::TaskTool => "taskTool",
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
}

impl Counters {
    /// routing.md §5: every line is in exactly one class, or evicted, or still pending.
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
    }
}

/// A line leaving the router with its class and its place in the tree.
#[derive(Debug)]
pub struct Routed<'r, 'l> {
    /// 1-based record number in the whole input stream.
    pub line_no: u64,
    pub class: Class,
    /// A child line that closes its lane's turn (`turn/completed`, a final `error`).
    pub terminal: bool,
    /// The thread the line is about (none for global and most control lines).
    pub thread: Option<ThreadIdx>,
    /// The root whose session shows it; `None` while the thread's chain does not reach a root.
    pub session: Option<ThreadIdx>,
    /// The child it is re-homed from (`ownerThreadId`); `None` for a root's own lines.
    pub owner: Option<ThreadIdx>,
    /// Drained from a pending buffer rather than routed on arrival.
    pub replayed: bool,
    pub line: &'r Line<'l>,
}

/// What the router tells its consumer, in order.
#[derive(Debug)]
pub enum Event<'r, 'l> {
    /// A thread is named for the first time; handles are dense and in first-seen order.
    Seen {
        thread: ThreadIdx,
        id: &'r str,
    },
    /// `child` now hangs under `parent` (also when an orphan moves under its card).
    Registered {
        child: ThreadIdx,
        parent: ThreadIdx,
        via: Via,
        card: Option<&'r str>,
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

/// What the router knows of one thread.
#[derive(Debug)]
struct ThreadFacts {
    pub id: Box<str>,
    pub role: Role,
    pub parent: Option<ThreadIdx>,
    /// Depth as decided at registration; for a depth-limited orphan, the depth it would have had,
    /// so that its descendants are refused too.
    pub depth: u32,
    pub via: Option<Via>,
    pub card: Option<Box<str>>,
    pub depth_limited: bool,
    has_children: bool,
    /// Saw a `turn/started` whose turn is its own root turn: the mark of a root thread (0.171.0).
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
    by_id: FxHashMap<Box<str>, ThreadIdx>,
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
    /// The thread of the rollout file being read (from its `session_meta`).
    rollout_thread: Option<Box<str>>,
}

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

    pub fn counters(&self) -> Counters {
        let mut c = self.counters;
        c.pending_at_end = self.threads.iter().filter_map(|t| t.buffer.as_ref()).map(|b| b.len() as u64).sum();
        c.orphan_threads = self.threads.iter().filter(|t| t.role == Role::Orphan).count() as u64;
        c
    }

    pub fn find(&self, id: &str) -> Option<ThreadIdx> {
        self.by_id.get(id).copied()
    }

    /// The root whose session a thread's lines belong to, if its chain of parents reaches one.
    pub fn session_of(&self, mut idx: ThreadIdx) -> Option<ThreadIdx> {
        for _ in 0..=self.threads.len() {
            let t = &self.threads[idx.index()];
            match t.role {
                Role::Root => return Some(idx),
                Role::Child => idx = t.parent?,
                Role::Pending | Role::Orphan => return None,
            }
        }
        None
    }

    /// Says which thread's rollout file the records that follow come from (its name tells; `None`
    /// when they come from anything else). Lines before a file's `session_meta` — a file followed
    /// from its middle, or files interleaved as they grow — are then still its thread's.
    pub fn set_rollout_thread(&mut self, thread: Option<&str>) {
        self.rollout_thread = thread.map(Into::into);
    }

    /// Routes one record (a line without its `\n`).
    pub fn push(&mut self, record: &[u8], sink: &mut impl Sink) {
        self.counters.lines += 1;
        let line_no = self.counters.lines;
        let mut line = Line::empty();
        if let Err(reason) = wire::decode_into(record, &mut line) {
            self.close_windows(None, line_no, sink);
            self.counters.malformed += 1;
            sink.event(&Event::Malformed { line_no, reason: &reason, record });
        } else {
            self.close_windows(line.time(), line_no, sink);
            self.route(&line, record, line_no, sink);
        }
    }

    /// Counts a record that was over the line-length bound and never buffered whole.
    pub fn push_oversized(&mut self, len: usize, head: &[u8], sink: &mut impl Sink) {
        self.counters.lines += 1;
        let line_no = self.counters.lines;
        self.close_windows(None, line_no, sink);
        self.counters.malformed += 1;
        sink.event(&Event::Malformed { line_no, reason: &Malformed::TooLong(len), record: head });
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

    fn route(&mut self, line: &Line<'_>, record: &[u8], line_no: u64, sink: &mut impl Sink) {
        // A rollout file names its thread once, in its first line: the lines after it are its own.
        if line.msg.rollout.is_some() {
            if let Some(id) = line.msg.thread_id() {
                self.rollout_thread = Some(id.into());
            }
            if let Some(id) = self.rollout_thread.clone() {
                self.thread_line(&id, line, record, line_no, sink);
                return;
            }
        }
        match side(line) {
            Side::Control => self.control(line, line_no, sink),
            Side::Global => {
                self.counters.global += 1;
                sink.event(&Event::Line(Routed {
                    line_no,
                    class: Class::Global,
                    terminal: false,
                    thread: None,
                    session: None,
                    owner: None,
                    replayed: false,
                    line,
                }));
            }
            Side::Thread(id) => self.thread_line(id, line, record, line_no, sink),
        }
    }

    /// Client traffic and responses feed metadata only, but two of them mark threads: a
    /// `thread/read`-like response registers its thread, a `thread/start` response or a
    /// `turn/start` request marks a root (routing.md §2, §8).
    fn control(&mut self, line: &Line<'_>, line_no: u64, sink: &mut impl Sink) {
        let msg = &line.msg;
        let mut subject = None;
        if let Some(thread) = msg.result.as_ref().and_then(|r| r.thread.as_ref()) {
            let result = msg.result.as_ref().expect("checked above");
            match thread.parent() {
                Some(parent) => {
                    let claim = Claim { child: Cow::Borrowed(&thread.id), parent, via: Via::ThreadRead, card: None };
                    subject = Some(self.register(&claim, sink));
                }
                None if result.model.is_some() && result.model_provider.is_some() && !thread.id.is_empty() => {
                    let t = self.see(&thread.id, sink);
                    self.mark_root(t, sink);
                    subject = Some(t);
                }
                None => subject = self.find(&thread.id),
            }
        } else if msg.kind == Method::TurnStart && msg.has_id {
            if let Some(id) = msg.thread_id().filter(|t| !t.is_empty()) {
                let t = self.see(id, sink);
                self.mark_root(t, sink);
                subject = Some(t);
            }
        }
        self.counters.control += 1;
        sink.event(&Event::Line(Routed {
            line_no,
            class: Class::Control,
            terminal: false,
            thread: subject,
            session: None,
            owner: None,
            replayed: false,
            line,
        }));
    }

    fn thread_line(&mut self, id: &str, line: &Line<'_>, record: &[u8], line_no: u64, sink: &mut impl Sink) {
        let thread = self.see(id, sink);

        // A thread that announces itself is settled before its own line (and its buffer first).
        if line.msg.kind == Method::ThreadStarted {
            if let Some(info) = &line.msg.params.rest().thread {
                match info.parent() {
                    Some(parent) => {
                        let claim = Claim { child: Cow::Borrowed(id), parent, via: Via::ThreadStarted, card: None };
                        self.register(&claim, sink);
                    }
                    None => self.mark_root(thread, sink),
                }
            }
        }

        // A rollout's `session_meta` announces its thread as `thread/started` does.
        if let Some(meta) = line.msg.rollout.as_ref().and_then(|r| r.session_meta()) {
            match meta.parent() {
                Some(parent) => {
                    let claim = Claim { child: Cow::Borrowed(id), parent, via: Via::ThreadStarted, card: None };
                    self.register(&claim, sink);
                }
                None => self.mark_root(thread, sink),
            }
        }

        // A line of a Claude session's own file names a root, as `thread/started` without a parent does.
        if line.msg.claude.as_ref().is_some_and(|c| c.is_main()) {
            self.mark_root(thread, sink);
        }

        let claims = claims_of(id, line);
        for claim in &claims {
            self.see(&claim.child, sink);
        }

        if self.threads[thread.index()].role == Role::Pending {
            self.buffer(thread, line, record, line_no, sink);
        } else {
            self.emit(thread, line, line_no, false, sink);
        }

        // A spawn item is classified first; the children it registers replay right after it.
        for claim in &claims {
            self.register(claim, sink);
        }
    }

    fn emit(&mut self, thread: ThreadIdx, line: &Line<'_>, line_no: u64, replayed: bool, sink: &mut impl Sink) {
        let facts = &self.threads[thread.index()];
        let (class, terminal, owner) = match facts.role {
            Role::Root => (Class::Root, false, None),
            Role::Child | Role::Orphan | Role::Pending => match child_class(line) {
                ChildClass::Suppressed => (Class::Suppressed, false, Some(thread)),
                ChildClass::Terminal => (Class::Suppressed, true, Some(thread)),
                ChildClass::Rehomed => (Class::Rehomed, false, Some(thread)),
            },
        };
        match class {
            Class::Root => self.counters.root += 1,
            Class::Rehomed => self.counters.rehomed += 1,
            _ => self.counters.suppressed += 1,
        }
        if replayed {
            self.counters.replayed += 1;
        }
        let session = self.session_of(thread);
        sink.event(&Event::Line(Routed {
            line_no,
            class,
            terminal,
            thread: Some(thread),
            session,
            owner,
            replayed,
            line,
        }));
    }

    fn buffer(&mut self, thread: ThreadIdx, line: &Line<'_>, record: &[u8], line_no: u64, sink: &mut impl Sink) {
        self.counters.early += 1;
        let facts = &mut self.threads[thread.index()];
        if line.msg.kind == Method::TurnStarted {
            if let Some(turn) = &line.msg.params.rest().turn {
                if turn.id.is_some() && turn.id == turn.root_turn_id {
                    facts.own_root_turn = true;
                }
            }
        }
        let pending = PendingLine {
            record: record.into(),
            line_no,
            terminal: child_class(line) == ChildClass::Terminal,
            size: record.len() + 1,
        };
        let opens_window = facts.buffer.is_none();
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
            let expired = self.stream_ms.is_some_and(|now| now - w.opened_ms > self.limits.window_ms);
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
        sink.event(&Event::BecameRoot { thread });
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
        facts.parent = None;
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
            match wire::decode(&pending.record) {
                Decoded::Line(line) => self.emit(thread, &line, pending.line_no, true, sink),
                // Only decoded lines are ever buffered; a record cannot decode differently twice.
                Decoded::Malformed(_) => unreachable!("a buffered record decoded once already"),
            }
        }
    }

    /// Names a thread; the first naming gives it its handle.
    fn see(&mut self, id: &str, sink: &mut impl Sink) -> ThreadIdx {
        if let Some(idx) = self.last_seen.filter(|t| *self.threads[t.index()].id == *id) {
            return idx;
        }
        if let Some(&idx) = self.by_id.get(id) {
            self.last_seen = Some(idx);
            return idx;
        }
        let idx = ThreadIdx(u32::try_from(self.threads.len()).expect("fewer than 2^32 threads"));
        self.threads.push(ThreadFacts {
            id: id.into(),
            role: Role::Pending,
            parent: None,
            depth: 0,
            via: None,
            card: None,
            depth_limited: false,
            has_children: false,
            own_root_turn: false,
            buffer: None,
        });
        self.by_id.insert(id.into(), idx);
        self.last_seen = Some(idx);
        sink.event(&Event::Seen { thread: idx, id });
        idx
    }

    /// Applies one registration signal (routing.md §2) and its guards; returns the child's handle.
    fn register(&mut self, claim: &Claim<'_>, sink: &mut impl Sink) -> ThreadIdx {
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
                return child;
            }
            Role::Pending | Role::Orphan => {}
        }
        if child == parent || self.is_ancestor(child, parent) {
            return child;
        }
        let depth = self.threads[parent.index()].depth + 1;
        if depth > self.limits.max_depth {
            self.threads[child.index()].depth = depth;
            self.orphan(child, true, sink);
            return child;
        }
        self.threads[parent.index()].has_children = true;
        let facts = &mut self.threads[child.index()];
        facts.role = Role::Child;
        facts.parent = Some(parent);
        facts.depth = depth;
        facts.via = Some(claim.via);
        facts.card = claim.card.as_deref().map(Into::into);
        sink.event(&Event::Registered { child, parent, via: claim.via, card: claim.card.as_deref(), depth });
        self.drain(child, sink);
        child
    }

    /// Whether `ancestor` is on `thread`'s chain of parents (or is `thread` itself).
    fn is_ancestor(&self, ancestor: ThreadIdx, mut thread: ThreadIdx) -> bool {
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

/// The children a line of `thread` announces (routing.md §2). `wait` and the other collab tools
/// name children that are usually known already; `register` ignores those.
fn claims_of<'l>(thread: &'l str, line: &'l Line<'_>) -> Vec<Claim<'l>> {
    if let Some(claude) = &line.msg.claude {
        return claude
            .announced_agent()
            .map(|(child, card)| Claim { child, parent: Cow::Borrowed(thread), via: Via::TaskTool, card })
            .into_iter()
            .collect();
    }
    if !matches!(line.msg.kind, Method::ItemStarted | Method::ItemCompleted) {
        return Vec::new();
    }
    let Some(item) = &line.msg.params.rest().item else {
        return Vec::new();
    };
    let card = item.id.as_deref().map(Cow::Borrowed);
    match item.kind() {
        "collabAgentToolCall" if item.status.as_deref() != Some("failed") => item
            .receiver_thread_ids
            .iter()
            .flatten()
            .filter(|c| !c.is_empty())
            .map(|child| Claim {
                child: Cow::Borrowed(child),
                parent: Cow::Borrowed(thread),
                via: Via::CollabAgentToolCall,
                card: card.clone(),
            })
            .collect(),
        "subAgentActivity" if item.activity.as_deref() == Some("started") => item
            .agent_thread_id
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(|child| Claim {
                child: Cow::Borrowed(child),
                parent: Cow::Borrowed(thread),
                via: Via::SubAgentActivity,
                card: card.clone(),
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
