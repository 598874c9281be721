//! Items of a thread: what the lanes and transcripts show. Deltas accumulate; an authoritative
//! text replaces them (routing.md §6). All text arrives sanitised, as the facts carry it.

use crate::router::ThreadIdx;
pub use crate::wire::fact::{AgentOp, ItemKind, ItemStatus};
use crate::wire::{Clean, CleanStr};

/// First capacity of a streamed item's text, in bytes.
const STREAM_START: usize = 256;

#[derive(Debug, Clone)]
pub struct Item {
    pub id: Box<str>,
    pub kind: ItemKind,
    /// Index into the thread's turns.
    pub turn: Option<usize>,
    pub status: ItemStatus,
    /// One line: the command, the tool, the files, the collab call.
    pub title: Clean,
    /// The body: message text, reasoning, command output, diff.
    pub text: Clean,
    pub exit_code: Option<i64>,
    /// What a call that manages agents does (a card's kind of row: `⑂ spawn ×3`).
    pub op: Option<AgentOp>,
    /// The agent's own name for that call, for display only (`spawnAgent`, `Agent`, `task`), or a
    /// sub-agent activity's kind (`started`, …).
    pub tool: Option<Box<str>>,
    /// What a card says of the agents it spawns; few items say anything ([`Item::agent_type`],
    /// [`Item::lane_nickname`]).
    lane_names: Option<Box<LaneNames>>,
    /// Threads the item names (collab receivers, the activity's agent).
    pub receivers: Handles,
    /// Children registered with this item as their card: its lanes, in registration order.
    pub lanes: Handles,
    pub started_ms: Option<i64>,
    pub completed_ms: Option<i64>,
    /// Why a card's call failed, in the agent's own words (its text stays the prompt). Boxed: few
    /// calls fail, and every item carries the slot.
    pub why: Option<Box<Clean>>,
    /// Bytes of text dropped by the per-item and scrollback bounds.
    pub dropped_bytes: u64,
    /// Interrupted with its turn by [`super::Model::stopped`]: in progress again if that is undone.
    pub cut_short: bool,
    last_summary_index: Option<i64>,
}

impl super::kept::Named for Item {
    fn name(&self) -> &str {
        &self.id
    }
}

impl Item {
    pub fn new(id: &str, kind: ItemKind) -> Self {
        Self {
            id: id.into(),
            kind,
            turn: None,
            status: ItemStatus::InProgress,
            title: Clean::new(),
            text: Clean::new(),
            exit_code: None,
            op: None,
            tool: None,
            lane_names: None,
            receivers: Handles::default(),
            lanes: Handles::default(),
            started_ms: None,
            completed_ms: None,
            why: None,
            dropped_bytes: 0,
            cut_short: false,
            last_summary_index: None,
        }
    }

    /// The kind of agent a Claude Code `Task` spawns (`Explore`, `general-purpose`, …): its lanes' role.
    pub fn agent_type(&self) -> Option<&Clean> {
        self.lane_names.as_ref()?.role.as_ref()
    }

    /// What the agents this card spawns are called (a Claude `Task`'s description).
    pub fn lane_nickname(&self) -> Option<&Clean> {
        self.lane_names.as_ref()?.nickname.as_ref()
    }

    pub(super) fn lane_names_mut(&mut self) -> &mut LaneNames {
        self.lane_names.get_or_insert_with(Box::default)
    }

    /// Appends a streamed delta; a new reasoning summary part starts a new paragraph.
    pub(super) fn push_delta(&mut self, delta: &CleanStr<'_>, summary_index: Option<i64>) {
        if summary_index.is_some() && self.last_summary_index.is_some() && summary_index != self.last_summary_index {
            self.text.push_clean(&CleanStr::new("\n\n"));
        }
        if summary_index.is_some() {
            self.last_summary_index = summary_index;
        }
        if self.text.is_empty() {
            // Deltas are a few words each: growing from nothing reallocated on every other one.
            self.text.reserve(STREAM_START);
        }
        self.text.push_clean(delta);
    }

    /// Keeps at most `max` bytes of text (the newest); returns the bytes dropped.
    pub(super) fn bound_text(&mut self, max: usize) -> usize {
        let dropped = self.text.keep_tail(max);
        self.dropped_bytes += dropped as u64;
        dropped
    }
}

/// What a card says of the agents it spawns.
#[derive(Debug, Clone, Default)]
pub(super) struct LaneNames {
    pub(super) nickname: Option<Clean>,
    pub(super) role: Option<Clean>,
}

/// Threads an item names (its receivers, its lanes), in order. Most items name none: an empty
/// list is one word, not a `Vec`'s three, and the items of a long session are held by the
/// thousand in every thread (issue 22).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
// Boxed whole, so that the list an item rarely has takes one word: a boxed slice takes two.
#[allow(clippy::box_collection)]
pub struct Handles(Option<Box<Vec<ThreadIdx>>>);

impl Handles {
    pub fn push(&mut self, idx: ThreadIdx) {
        self.0.get_or_insert_with(Box::default).push(idx);
    }

    pub fn retain(&mut self, keep: impl FnMut(&ThreadIdx) -> bool) {
        if let Some(list) = &mut self.0 {
            list.retain(keep);
            if list.is_empty() {
                self.0 = None;
            }
        }
    }
}

impl std::ops::Deref for Handles {
    type Target = [ThreadIdx];

    fn deref(&self) -> &[ThreadIdx] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl PartialEq<Vec<ThreadIdx>> for Handles {
    fn eq(&self, other: &Vec<ThreadIdx>) -> bool {
        **self == **other
    }
}

impl<'a> IntoIterator for &'a Handles {
    type Item = &'a ThreadIdx;
    type IntoIter = std::slice::Iter<'a, ThreadIdx>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl IntoIterator for Handles {
    type Item = ThreadIdx;
    type IntoIter = std::vec::IntoIter<ThreadIdx>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.map(|list| *list).unwrap_or_default().into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_naming_no_agents_carries_no_room_for_them() {
        // A full window of a thread's items is 2,049 of them, in every thread of a long session.
        let size = std::mem::size_of::<Item>();
        assert!(size <= 232, "an item takes {size} bytes");
    }
}
