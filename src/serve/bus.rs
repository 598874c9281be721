//! The events `serve` sends its clients: each numbered (`id:`), the last [`RING`] kept for a
//! client that comes back with `Last-Event-ID`, and handed to every client through one bounded
//! broadcast buffer: a client that reads too slowly loses its place (it is told to resync), never
//! holds back ingest or the others, and never makes the buffer grow.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::broadcast;

/// Events kept for clients that reconnect with `Last-Event-ID`.
pub const RING: usize = 4096;
/// Events a client may be behind before it is told to resync.
pub const CLIENT_QUEUE: usize = 1024;

/// One event as a client receives it: its number, its kind (`event:`), its JSON (`data:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub id: u64,
    pub kind: &'static str,
    pub data: Arc<str>,
}

impl Sent {
    /// The event in the `text/event-stream` format.
    pub fn frame(&self) -> String {
        format!("id: {}\nevent: {}\ndata: {}\n\n", self.id, self.kind, self.data)
    }
}

struct Ring {
    next: u64,
    kept: VecDeque<Sent>,
}

pub struct Bus {
    ring: Mutex<Ring>,
    tx: broadcast::Sender<Sent>,
    capacity: usize,
}

/// Where a new client starts.
pub enum Start {
    /// The events after the one it last saw, then the live ones.
    Resume(Vec<Sent>),
    /// It last saw an event no longer kept (or one never sent): it must resync.
    Lost,
}

impl Bus {
    pub fn new() -> Self {
        Self::with_capacity(RING, CLIENT_QUEUE)
    }

    pub fn with_capacity(ring: usize, queue: usize) -> Self {
        let (tx, _) = broadcast::channel(queue.max(1));
        Self { ring: Mutex::new(Ring { next: 1, kept: VecDeque::new() }), tx, capacity: ring.max(1) }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Numbers the event and sends it to every client; returns its number.
    pub fn publish(&self, kind: &'static str, data: impl Into<Arc<str>>) -> u64 {
        let mut ring = self.ring();
        let sent = Sent { id: ring.next, kind, data: data.into() };
        ring.next += 1;
        if ring.kept.len() == self.capacity {
            ring.kept.pop_front();
        }
        ring.kept.push_back(sent.clone());
        // Sent under the lock: a client subscribing meanwhile gets it either from the ring or
        // from the channel, never both, never neither. No receiver is no error.
        let _ = self.tx.send(sent.clone());
        sent.id
    }

    /// The number the last event got (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.ring().next - 1
    }

    /// A new client: what it missed since `last_seen`, its receiver of what comes next, and the
    /// number of the last event sent before it (what comes next is numbered after it).
    pub fn subscribe(&self, last_seen: Option<u64>) -> (Start, broadcast::Receiver<Sent>, u64) {
        let ring = self.ring();
        let rx = self.tx.subscribe();
        let start = match last_seen {
            None => Start::Resume(Vec::new()),
            Some(seen) if seen >= ring.next => Start::Lost,
            Some(seen) => {
                let oldest = ring.kept.front().map_or(ring.next, |s| s.id);
                // The event after the one seen must still be kept.
                if seen.saturating_add(1) < oldest {
                    Start::Lost
                } else {
                    Start::Resume(ring.kept.iter().filter(|s| s.id > seen).cloned().collect())
                }
            }
        };
        (start, rx, ring.next - 1)
    }

    /// Clients connected.
    pub fn clients(&self) -> usize {
        self.tx.receiver_count()
    }
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_resumes_after_the_last_event_it_saw() {
        let bus = Bus::with_capacity(3, 8);
        for n in 1..=5 {
            assert_eq!(bus.publish("item", format!("{{\"n\":{n}}}")), n);
        }
        let ids = |start: Start| match start {
            Start::Resume(v) => Some(v.iter().map(|s| s.id).collect::<Vec<_>>()),
            Start::Lost => None,
        };
        assert_eq!(ids(bus.subscribe(Some(3)).0), Some(vec![4, 5]));
        assert_eq!(ids(bus.subscribe(Some(2)).0), Some(vec![3, 4, 5]), "the oldest kept follows it");
        assert_eq!(ids(bus.subscribe(Some(1)).0), None, "event 2 is no longer kept");
        assert_eq!(ids(bus.subscribe(Some(5)).0), Some(vec![]));
        assert_eq!(ids(bus.subscribe(Some(9)).0), None, "an id never sent (another daemon's)");
        assert_eq!(ids(bus.subscribe(None).0), Some(vec![]));
    }

    #[test]
    fn a_slow_client_lags_without_holding_anyone_back() {
        let bus = Bus::with_capacity(16, 2);
        let (_, mut slow, _) = bus.subscribe(None);
        for n in 0..5 {
            bus.publish("usage", n.to_string());
        }
        assert!(matches!(slow.try_recv(), Err(broadcast::error::TryRecvError::Lagged(3))));
        assert_eq!(slow.try_recv().unwrap().id, 4);
        let (_, mut fresh, last) = bus.subscribe(None);
        assert_eq!(last, 5);
        bus.publish("usage", "6");
        assert_eq!(fresh.try_recv().unwrap().frame(), "id: 6\nevent: usage\ndata: 6\n\n");
    }
}
