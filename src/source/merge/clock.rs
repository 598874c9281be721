//! The merge's bookkeeping, shared by every reader of several inputs: which stream's next record
//! comes first in stream time, and which inputs make one stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::wire::{Origin, OriginInfo};

/// The order records of several inputs are applied in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// By stream time, each input's records in their own order (what happened first comes first).
    #[default]
    Time,
    /// Each input whole, one after another as named: how they were read before the merge, kept to
    /// show what the merge changes (the moment tests fail with it).
    Named,
}

/// A k-way merge's queue: one entry per stream, keyed by the time of its next record; ties go
/// to the stream named first.
#[derive(Debug)]
pub struct Clock {
    order: Order,
    queue: BinaryHeap<Reverse<(i64, usize)>>,
    /// Each stream's time so far.
    last: Vec<Option<i64>>,
}

impl Clock {
    pub fn new(streams: usize, order: Order) -> Self {
        Self { order, queue: BinaryHeap::with_capacity(streams), last: vec![None; streams] }
    }

    /// Stream `s` has a next record, with this time of its own (if any). A record with none keeps
    /// its place after its stream's records before it; one before any timed record of its stream
    /// goes first. Returns the record's key.
    pub fn offer(&mut self, s: usize, time: Option<i64>) -> i64 {
        // A stream's clock never goes back: a record stamped before its predecessor comes where
        // its file puts it, at its predecessor's time.
        let key = match (time, self.last[s]) {
            (Some(t), Some(last)) => t.max(last),
            (Some(t), None) => t,
            (None, Some(last)) => last,
            (None, None) => i64::MIN,
        };
        if time.is_some() {
            self.last[s] = Some(key);
        }
        let queued = match self.order {
            Order::Time => key,
            Order::Named => 0,
        };
        self.queue.push(Reverse((queued, s)));
        key
    }

    /// The stream whose record comes next, taken off the queue (offer its next record to put it
    /// back).
    pub fn pop(&mut self) -> Option<usize> {
        self.queue.pop().map(|Reverse((_, s))| s)
    }

    /// How many streams have a record waiting.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The time of stream `s` so far (the key its last offered record had, when it had one).
    pub fn time(&self, s: usize) -> Option<i64> {
        self.last[s]
    }
}

/// The merged order of records held whole (a replay's index): `lists` holds each stream's
/// records in their own order, as (record, its own time); returns every record once.
pub fn order(lists: &[Vec<(usize, Option<i64>)>], order: Order) -> Vec<usize> {
    let mut clock = Clock::new(lists.len(), order);
    let mut at = vec![0; lists.len()];
    for (s, list) in lists.iter().enumerate() {
        if let Some(&(_, time)) = list.first() {
            clock.offer(s, time);
        }
    }
    let mut out = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    while let Some(s) = clock.pop() {
        out.push(lists[s][at[s]].0);
        at[s] += 1;
        if let Some(&(_, time)) = lists[s].get(at[s]) {
            clock.offer(s, time);
        }
    }
    out
}

/// The inputs that make one stream: a Claude Code sub-agent's transcript with its sidecar
/// (`agent-<id>.meta.json`), else one input alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub main: usize,
    /// The sidecar of `main`'s agent. A recorded sidecar is as last rewritten (`finished` once its
    /// agent ended), and it alone links the agent to its parent: it is applied twice — ahead of
    /// the transcript's first record as it was when the agent started ([`ahead`]), and after its
    /// last record as it stands — so a replay links the agent when it starts and ends it when it
    /// ends, as `--follow` saw it live.
    pub sidecar: Option<usize>,
}

/// The streams of inputs with these origins, in the order of their main input.
pub fn streams(origins: &[Origin]) -> Vec<Stream> {
    let key = |o: &Origin| o.info().and_then(|i| Some((i.session.clone(), i.thread.clone()?)));
    let mut streams = Vec::with_capacity(origins.len());
    let mut paired = vec![false; origins.len()];
    for (main, origin) in origins.iter().enumerate() {
        if origin.info().is_some_and(|i| i.sidecar) {
            continue;
        }
        let sidecar = key(origin).and_then(|k| {
            origins.iter().enumerate().position(|(i, o)| {
                !paired[i] && o.info().is_some_and(|info| info.sidecar) && key(o).as_ref() == Some(&k)
            })
        });
        if let Some(s) = sidecar {
            paired[s] = true;
        }
        streams.push(Stream { main, sidecar });
    }
    // A sidecar with no transcript is a stream of its own, where its name puts it.
    for (i, origin) in origins.iter().enumerate() {
        if origin.info().is_some_and(|info| info.sidecar) && !paired[i] {
            let at = streams.iter().position(|s| s.main > i).unwrap_or(streams.len());
            streams.insert(at, Stream { main: i, sidecar: None });
        }
    }
    streams
}

/// A sidecar's origin as applied ahead of its transcript: its `finished` is not yet true, and
/// the record is counted where it lies, not here.
pub fn ahead(sidecar: &Origin) -> Origin {
    let info = sidecar.info().cloned().unwrap_or_default();
    Origin::new(OriginInfo { ahead: true, ..info })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(records: &[&[Option<i64>]], how: Order) -> Vec<(usize, usize)> {
        let lists: Vec<Vec<(usize, Option<i64>)>> = records
            .iter()
            .enumerate()
            .map(|(s, r)| r.iter().enumerate().map(|(i, t)| (s * 100 + i, *t)).collect())
            .collect();
        order(&lists, how).into_iter().map(|n| (n / 100, n % 100)).collect()
    }

    #[test]
    fn records_come_by_time_each_stream_in_its_own_order() {
        let a: &[Option<i64>] = &[Some(1), None, Some(5), Some(3)];
        let b: &[Option<i64>] = &[None, Some(2), Some(4)];
        assert_eq!(
            merged(&[a, b], Order::Time),
            [(1, 0), (0, 0), (0, 1), (1, 1), (1, 2), (0, 2), (0, 3)],
            "untimed: first before any time, else after its predecessor; 3 after 5 stays in its file's place"
        );
        assert_eq!(merged(&[a, b], Order::Named), [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]);
        assert_eq!(merged(&[&[Some(7)], &[Some(7)]], Order::Time), [(0, 0), (1, 0)], "ties: the first named");
    }

    #[test]
    fn a_sidecar_joins_its_transcript() {
        let file = |thread: &str, sidecar: bool| {
            Origin::new(OriginInfo {
                file: None,
                thread: Some(thread.into()),
                session: Some("s".into()),
                sidecar,
                ahead: false,
            })
        };
        let origins = [Origin::NONE, file("a", true), file("a", false), file("b", false), file("c", true)];
        assert_eq!(
            streams(&origins),
            [
                Stream { main: 0, sidecar: None },
                Stream { main: 2, sidecar: Some(1) },
                Stream { main: 3, sidecar: None },
                Stream { main: 4, sidecar: None },
            ]
        );
        assert!(ahead(&origins[1]).info().is_some_and(|i| i.ahead && i.sidecar));
    }
}
