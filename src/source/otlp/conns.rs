//! The receiver's connections, at most [`MAX_CONNECTIONS`] at once. A connection is waiting (for
//! a request's headers, or idle between requests), receiving a body, or answering (decoding and
//! handing on what it received). When one more arrives at the cap, the connection that has been
//! waiting or receiving the longest is closed to make room: a legitimate sender sends its request
//! in milliseconds, so what is oldest is what holds a slot without using it (issue 22 item 4: 5,000
//! half-sent headers stayed open past 70 s, and idle connections used up the descriptors).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use super::limits::{Counters, MAX_CONNECTIONS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Waiting,
    Receiving,
    Answering,
}

struct Slot {
    phase: Phase,
    since: Instant,
    /// Requests answered on this connection.
    served: u64,
    close: Arc<Notify>,
}

/// The open connections.
#[derive(Default)]
pub struct Conns {
    open: Mutex<(u64, FxHashMap<u64, Slot>)>,
}

/// One connection's place; dropping it frees the place.
pub struct Conn {
    id: u64,
    conns: Arc<Conns>,
    /// Notified when the connection must close to make room.
    pub close: Arc<Notify>,
}

impl Conns {
    /// A place for a new connection, making room at the cap by closing the connection that has
    /// waited or received the longest; `None` when every one is answering.
    pub fn admit(self: &Arc<Self>, counters: &Counters) -> Option<Conn> {
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (next, open) = &mut *guard;
        if open.len() >= MAX_CONNECTIONS {
            let oldest = open.iter().filter(|(_, s)| s.phase != Phase::Answering).min_by_key(|&(&id, s)| (s.since, id));
            let Some(id) = oldest.map(|(&id, _)| id) else {
                counters.connections_refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            if let Some(slot) = open.remove(&id) {
                slot.close.notify_one();
                counters.connections_closed.fetch_add(1, Ordering::Relaxed);
            }
        }
        *next += 1;
        let close = Arc::new(Notify::new());
        open.insert(*next, Slot { phase: Phase::Waiting, since: Instant::now(), served: 0, close: close.clone() });
        Some(Conn { id: *next, conns: self.clone(), close })
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).1.len()
    }
}

impl Conn {
    /// The connection moves to `phase` now.
    pub fn set(&self, phase: Phase) {
        let mut guard = self.conns.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = guard.1.get_mut(&self.id) {
            if phase == Phase::Waiting && slot.phase != Phase::Waiting {
                slot.served += 1;
            }
            slot.phase = phase;
            slot.since = Instant::now();
        }
    }

    /// Requests answered so far: a header timeout before the first one is a slow sender, after it
    /// an idle keep-alive connection.
    pub fn served(&self) -> u64 {
        self.conns.open.lock().unwrap_or_else(PoisonError::into_inner).1.get(&self.id).map_or(0, |s| s.served)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.conns.open.lock().unwrap_or_else(PoisonError::into_inner).1.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_waiting_connection_makes_room() {
        let conns = Arc::new(Conns::default());
        let c = Counters::default();
        let held: Vec<Conn> = (0..MAX_CONNECTIONS).map(|_| conns.admit(&c).unwrap()).collect();
        held[1].set(Phase::Answering);
        let newcomer = conns.admit(&c).expect("room is made");
        assert_eq!(conns.len(), MAX_CONNECTIONS);
        assert_eq!(c.connections_closed.load(Ordering::Relaxed), 1);
        // The oldest, held[0], was told to close; the answering one was not.
        assert!(futures_util::FutureExt::now_or_never(held[0].close.notified()).is_some());
        assert!(futures_util::FutureExt::now_or_never(held[1].close.notified()).is_none());
        drop(newcomer);
        assert_eq!(conns.len(), MAX_CONNECTIONS - 1);
    }

    #[test]
    fn when_every_connection_is_answering_a_newcomer_is_refused() {
        let conns = Arc::new(Conns::default());
        let c = Counters::default();
        let held: Vec<Conn> = (0..MAX_CONNECTIONS).map(|_| conns.admit(&c).unwrap()).collect();
        for h in &held {
            h.set(Phase::Answering);
        }
        assert!(conns.admit(&c).is_none());
        assert_eq!(c.connections_refused.load(Ordering::Relaxed), 1);
    }
}
