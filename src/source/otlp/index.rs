//! The join of spans to their parents. Spans name their parent only by span id, and agents export
//! a span when it *ends*: a sub-agent's spans arrive before the spawn call that contains them. A
//! bounded index of recent spans joins the two and says, once per conversation, when a span turns
//! out to hang under a span of another conversation (the parent agent's spawn call).
//!
//! The index is bounded in entries and in bytes: ids are fixed-size by the OTLP specification (the
//! receiver refuses any other length), and what a sender can make it keep beside them (conversation
//! ids, tool-call ids) is counted against [`INDEX_BYTES`]. What it forgets to stay within its
//! bounds is counted: spans aged out, and conversations that were still waiting for their parent.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use rustc_hash::{FxHashMap, FxHashSet};

use super::limits::Counters;

/// Spans remembered for joining parents and children; the oldest are forgotten first.
pub const INDEX_SPANS: usize = 1 << 16;
/// Bytes the index may hold: its entries and the strings they keep.
pub const INDEX_BYTES: usize = 16 << 20;
/// Conversations that may wait for one parent span not seen yet.
const WAITING_PER_PARENT: usize = 64;
/// Steps walked up from a span to the nearest ancestor that belongs to a conversation.
const MAX_WALK: usize = 8;

pub type TraceId = [u8; 16];
pub type SpanId = [u8; 8];
type Key = (TraceId, SpanId);

/// One span as the index needs it.
pub struct SeenSpan {
    pub trace: TraceId,
    pub span: SpanId,
    pub parent: Option<SpanId>,
    pub conversation: Option<String>,
    pub tool_call: Option<String>,
}

/// A conversation found to hang under another one's span: the child agent of a spawn call.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub trace: TraceId,
    pub child: String,
    pub parent: String,
    pub card: Option<String>,
}

/// What is known of one recent span: its conversation, its tool call, its own parent.
struct Known {
    conversation: Option<String>,
    tool_call: Option<String>,
    parent: Option<SpanId>,
    /// Which entry of `order` is this one's (a span id seen twice has two).
    seq: u64,
}

/// Conversations whose spans named a parent span not seen yet.
struct Waiting {
    children: Vec<String>,
    seq: u64,
}

#[derive(Clone, Copy)]
enum Slot {
    Known,
    Waiting,
}

/// What an entry costs beside its strings: its key in a map and in `order`, its value, and the
/// hash map's own overhead per entry.
const ENTRY_BYTES: usize = 2 * size_of::<Key>() + size_of::<Known>() + size_of::<(Key, Slot, u64)>() + 16;

fn text_bytes(s: Option<&String>) -> usize {
    s.map_or(0, String::len)
}

fn known_bytes(k: &Known) -> usize {
    ENTRY_BYTES + text_bytes(k.conversation.as_ref()) + text_bytes(k.tool_call.as_ref())
}

fn child_bytes(child: &str) -> usize {
    size_of::<String>() + child.len()
}

/// Joins spans to their parents by id, within [`INDEX_SPANS`] and [`INDEX_BYTES`].
#[derive(Default)]
pub struct SpanIndex {
    known: FxHashMap<Key, Known>,
    waiting: FxHashMap<Key, Waiting>,
    /// Entries in arrival order, oldest first: what goes when a bound is reached.
    order: VecDeque<(Key, Slot, u64)>,
    /// Conversations already linked to a parent (a link is said once).
    linked: FxHashSet<String>,
    linked_bytes: usize,
    /// What `known` and `waiting` hold, as [`ENTRY_BYTES`] and string lengths count it.
    bytes: usize,
    seq: u64,
}

impl SpanIndex {
    /// The bytes held now (for tests and diagnostics).
    pub fn bytes(&self) -> usize {
        self.bytes + self.linked_bytes
    }

    /// Notes a span; returns the links it completes: its own conversation under its parent's, and
    /// any waiting conversations under this span.
    pub fn see(&mut self, s: SeenSpan, counters: &Counters) -> Vec<Link> {
        let mut links = Vec::new();
        let key = (s.trace, s.span);
        if let (Some(child), Some(parent)) = (&s.conversation, s.parent) {
            if !self.linked.contains(child) {
                let parent_key = (s.trace, parent);
                match self.owner(parent_key) {
                    Some((owner, card)) if owner != *child => links.push(self.link(s.trace, child, owner, card)),
                    Some(_) => {}
                    None => self.wait(parent_key, child, counters),
                }
            }
        }
        self.seq += 1;
        let known = Known { conversation: s.conversation, tool_call: s.tool_call, parent: s.parent, seq: self.seq };
        self.bytes += known_bytes(&known);
        if let Some(old) = self.known.insert(key, known) {
            self.bytes -= known_bytes(&old);
        }
        self.order.push_back((key, Slot::Known, self.seq));
        if let Some(w) = self.waiting.remove(&key) {
            self.bytes -= ENTRY_BYTES + w.children.iter().map(|c| child_bytes(c)).sum::<usize>();
            if let Some((owner, card)) = self.owner(key) {
                for child in w.children {
                    if child != owner && !self.linked.contains(&child) {
                        links.push(self.link(s.trace, &child, owner.clone(), card.clone()));
                    }
                }
            }
        }
        self.trim(counters);
        links
    }

    fn wait(&mut self, parent: Key, child: &str, counters: &Counters) {
        let w = match self.waiting.entry(parent) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                self.seq += 1;
                self.order.push_back((parent, Slot::Waiting, self.seq));
                self.bytes += ENTRY_BYTES;
                e.insert(Waiting { children: Vec::new(), seq: self.seq })
            }
        };
        if w.children.iter().any(|c| c == child) {
            return;
        }
        if w.children.len() >= WAITING_PER_PARENT {
            counters.forgotten.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.bytes += child_bytes(child);
        w.children.push(child.to_owned());
    }

    /// Forgets the oldest entries until both bounds hold, counting what is lost.
    fn trim(&mut self, counters: &Counters) {
        while self.order.len() > INDEX_SPANS || self.bytes > INDEX_BYTES {
            let Some((key, slot, seq)) = self.order.pop_front() else { break };
            match slot {
                Slot::Known => {
                    if self.known.get(&key).is_some_and(|k| k.seq == seq) {
                        if let Some(k) = self.known.remove(&key) {
                            self.bytes -= known_bytes(&k);
                            counters.index_evicted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Slot::Waiting => {
                    if self.waiting.get(&key).is_some_and(|w| w.seq == seq) {
                        if let Some(w) = self.waiting.remove(&key) {
                            self.bytes -= ENTRY_BYTES + w.children.iter().map(|c| child_bytes(c)).sum::<usize>();
                            counters.forgotten.fetch_add(w.children.len() as u64, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
    }

    /// The conversation that owns a span, and the tool call on the way up (the spawn's card).
    fn owner(&self, key: Key) -> Option<(String, Option<String>)> {
        let mut card = None;
        let mut at = key;
        for _ in 0..MAX_WALK {
            let k = self.known.get(&at)?;
            card = card.or_else(|| k.tool_call.clone());
            if let Some(c) = &k.conversation {
                return Some((c.clone(), card));
            }
            at = (at.0, k.parent?);
        }
        None
    }

    fn link(&mut self, trace: TraceId, child: &str, parent: String, card: Option<String>) -> Link {
        // Forgetting which links were said only means one may be said again, which changes nothing.
        if self.linked.len() >= INDEX_SPANS || self.linked_bytes > INDEX_BYTES / 4 {
            self.linked.clear();
            self.linked_bytes = 0;
        }
        if self.linked.insert(child.to_owned()) {
            self.linked_bytes += child_bytes(child) + 8;
        }
        Link { trace, child: child.to_owned(), parent, card }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: u8, parent: Option<u8>, conversation: &str, tool_call: Option<&str>) -> SeenSpan {
        SeenSpan {
            trace: [1; 16],
            span: [id; 8],
            parent: parent.map(|p| [p; 8]),
            conversation: Some(conversation.to_owned()),
            tool_call: tool_call.map(ToOwned::to_owned),
        }
    }

    /// Claude Code exports a sub-agent's spans before the parent's `Agent` tool span that holds them.
    #[test]
    fn children_that_end_first_are_linked_when_their_parent_span_arrives() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        assert!(index.see(span(3, Some(2), "child", None), &c).is_empty());
        assert!(index.see(span(4, Some(2), "child", None), &c).is_empty());
        let links = index.see(span(2, Some(1), "root", Some("toolu_1")), &c);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].child, "child");
        assert_eq!(links[0].parent, "root");
        assert_eq!(links[0].card.as_deref(), Some("toolu_1"));
        assert!(index.see(span(1, None, "root", None), &c).is_empty());
    }

    /// swarmtop's own exports and most SDKs send parents first.
    #[test]
    fn children_after_their_parent_are_linked_at_once_and_once() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        assert!(index.see(span(1, None, "root", None), &c).is_empty());
        assert!(index.see(span(2, Some(1), "root", Some("call_spawn_1")), &c).is_empty());
        let links = index.see(span(3, Some(2), "child", None), &c);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].card.as_deref(), Some("call_spawn_1"));
        assert!(index.see(span(5, Some(2), "child", None), &c).is_empty());
    }

    /// Issue 22 item 2: what a sender makes the index keep is bounded in bytes, not only in count,
    /// and each span or waiting conversation it lets go is counted.
    #[test]
    fn the_index_is_bounded_in_bytes_and_counts_what_it_forgets() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        let big = "c".repeat(1 << 20);
        for i in 0u32..64 {
            let mut id = [0; 8];
            id[..4].copy_from_slice(&i.to_le_bytes());
            let s = SeenSpan {
                trace: [2; 16],
                span: id,
                parent: Some([0xff; 8]),
                conversation: Some(format!("{big}{i}")),
                tool_call: Some(big.clone()),
            };
            index.see(s, &c);
            assert!(index.bytes() <= INDEX_BYTES, "{} bytes", index.bytes());
        }
        assert!(c.index_evicted.load(Ordering::Relaxed) > 0, "spans were let go to stay in bounds");
        assert!(c.forgotten.load(Ordering::Relaxed) > 0, "waiting conversations were let go, counted");
    }

    #[test]
    fn a_parent_waited_for_by_many_keeps_a_bounded_list_and_counts_the_rest() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        for i in 0..WAITING_PER_PARENT + 10 {
            let mut s = span(3, Some(2), &format!("child{i}"), None);
            s.span = [i as u8 + 10; 8];
            index.see(s, &c);
        }
        assert_eq!(c.forgotten.load(Ordering::Relaxed), 10);
        let links = index.see(span(2, None, "root", Some("call")), &c);
        assert_eq!(links.len(), WAITING_PER_PARENT);
    }
}
