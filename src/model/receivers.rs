//! Threads an item names before they appear. A parent's rollout is read before its children's, so
//! its wait and close cards name children not seen yet: each such receiver is kept under the name
//! the item gave (a thread id, or a Codex agent path such as `/root/part_1`) and joins the item's
//! receivers when a thread of that id or path appears. The work is per arrival, never per frame.

use rustc_hash::FxHashMap;

use crate::router::{Registry, ThreadIdx};

/// One item still waiting for a thread it names: its thread and its slot there.
pub(super) type Holder = (ThreadIdx, usize);

#[derive(Debug, Default)]
pub(super) struct Awaited {
    by_name: FxHashMap<Box<str>, Vec<Holder>>,
    /// Holders kept over every name (the bound counts against this).
    held: usize,
    /// The agent path of each thread that has one: an item may name an agent by it.
    paths: FxHashMap<Box<str>, ThreadIdx>,
}

impl Awaited {
    /// The thread a receiver names, when it is known already.
    pub(super) fn find(&self, registry: &Registry, name: &str) -> Option<ThreadIdx> {
        registry.find(name).or_else(|| self.paths.get(name).copied())
    }

    /// Keeps `holder` until a thread called `name` appears; `false` when the bound is reached
    /// (the caller counts the drop).
    pub(super) fn hold(&mut self, name: &str, holder: Holder, bound: usize) -> bool {
        if let Some(holders) = self.by_name.get_mut(name) {
            if !holders.contains(&holder) {
                if self.held >= bound {
                    return false;
                }
                holders.push(holder);
                self.held += 1;
            }
            return true;
        }
        if self.held >= bound {
            return false;
        }
        self.by_name.insert(name.into(), vec![holder]);
        self.held += 1;
        true
    }

    /// A thread appeared under `name` (its id, or an agent path it was given): the items that
    /// named it.
    pub(super) fn arrived(&mut self, name: &str) -> Vec<Holder> {
        let holders = self.by_name.remove(name).unwrap_or_default();
        self.held -= holders.len();
        holders
    }

    /// Remembers a thread's agent path (the first it is given).
    pub(super) fn path(&mut self, path: &str, thread: ThreadIdx) {
        self.paths.entry(path.into()).or_insert(thread);
    }
}
