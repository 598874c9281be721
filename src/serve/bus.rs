//! The events `serve` sends its clients: each numbered (`id:`) and rendered once, the last
//! [`RING`] kept in one ring that every client reads at its own place. The ring is the only
//! queue: sending never waits for a client, memory does not grow with clients, and a client that
//! falls so far behind that the event it needs next is gone is told to resync. A client that
//! comes back with `Last-Event-ID` resumes from the same ring.
//!
//! A client is woken once for whatever was published while it was away and takes all of it at
//! once (up to the bytes of one write): ingest publishes a read's changes in one go, so a busy
//! session is a burst of events, not a trickle, and a client that took them one by one (a lock,
//! a copy, a write each) fell behind at 10,000 lines a second.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use tokio::sync::watch;

/// Events kept: for clients that reconnect with `Last-Event-ID`, and the most a client may be
/// behind before it is told to resync. One read of a busy transcript (up to 4 MiB of lines, some
/// 15,000 events for short lines) fits, so that a client reading as fast as it can does not lose
/// its place to a burst ingest makes faster than any socket takes it.
pub const RING: usize = 32_768;
/// Bytes of rendered events kept, whatever their number (long item titles).
pub const RING_BYTES: usize = 12 << 20;

/// One event as a client receives it: its number and its `text/event-stream` frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub id: u64,
    frame: Bytes,
}

impl Sent {
    fn new(id: u64, kind: &str, data: &str) -> Self {
        Self { id, frame: Bytes::from(format!("id: {id}\nevent: {kind}\ndata: {data}\n\n")) }
    }

    /// The event in the `text/event-stream` format.
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }
}

struct Ring {
    next: u64,
    kept: VecDeque<Sent>,
    bytes: usize,
}

impl Ring {
    fn oldest(&self) -> u64 {
        self.kept.front().map_or(self.next, |s| s.id)
    }
}

pub struct Bus {
    ring: Mutex<Ring>,
    /// The number of the last event published, for clients waiting for the next.
    last: watch::Sender<u64>,
    capacity: usize,
    max_bytes: usize,
    clients: Arc<AtomicUsize>,
}

/// A client's place in the ring: the last event it was given. Dropped, it is no longer counted.
pub struct Cursor {
    after: u64,
    woken: watch::Receiver<u64>,
    _client: Client,
}

struct Client(Arc<AtomicUsize>);

impl Drop for Client {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Cursor {
    /// The last event this client was given.
    pub fn after(&self) -> u64 {
        self.after
    }

    /// Returns once something was published since this client last looked (at once if it was).
    pub async fn published(&mut self) {
        let after = self.after;
        let _ = self.woken.wait_for(|&last| last > after).await;
    }
}

/// What a client read.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// The frames of the events after its place, one after the other.
    Frames(Bytes),
    /// Nothing new.
    Nothing,
    /// The event it needed next is no longer kept: `missed` events are gone, and its place is now
    /// the last event (numbered `last`), which a resync is numbered as.
    Lost { missed: u64, last: u64 },
}

impl Bus {
    pub fn new() -> Self {
        Self::with_capacity(RING, RING_BYTES)
    }

    pub fn with_capacity(events: usize, bytes: usize) -> Self {
        Self {
            ring: Mutex::new(Ring { next: 1, kept: VecDeque::new(), bytes: 0 }),
            last: watch::Sender::new(0),
            capacity: events.max(1),
            max_bytes: bytes,
            clients: Arc::default(),
        }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Numbers the event and sends it to every client; returns its number.
    pub fn publish(&self, kind: &'static str, data: &str) -> u64 {
        self.publish_all([(kind, data)])
    }

    /// Numbers the events, in order, and sends them to every client, who are woken once for all
    /// of them; returns the number of the last (that of the last before when there are none).
    pub fn publish_all<'a>(&self, events: impl IntoIterator<Item = (&'static str, &'a str)>) -> u64 {
        let mut ring = self.ring();
        let before = ring.next;
        for (kind, data) in events {
            // Rendered under the lock: the number is the ring's, and a client reading meanwhile
            // waits for the whole batch, which it then takes in one write.
            let sent = Sent::new(ring.next, kind, data);
            ring.next += 1;
            ring.bytes += sent.frame.len();
            ring.kept.push_back(sent);
            while ring.kept.len() > self.capacity || (ring.bytes > self.max_bytes && ring.kept.len() > 1) {
                let gone = ring.kept.pop_front().expect("more than one kept");
                ring.bytes -= gone.frame.len();
            }
        }
        let last = ring.next - 1;
        drop(ring);
        if last >= before {
            self.last.send_replace(last);
        }
        last
    }

    /// The number the last event got (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.ring().next - 1
    }

    /// A new client, placed after `last_seen` when the event after it is still kept, else after
    /// the last event sent; and whether it lost its place (it must be told to resync).
    pub fn subscribe(&self, last_seen: Option<u64>) -> (Cursor, bool) {
        let ring = self.ring();
        let last = ring.next - 1;
        let (after, lost) = match last_seen {
            None => (last, false),
            // An id never sent (another daemon's), or one whose next event is no longer kept.
            Some(seen) if seen > last || seen.saturating_add(1) < ring.oldest() => (last, true),
            Some(seen) => (seen, false),
        };
        self.clients.fetch_add(1, Ordering::Relaxed);
        let cursor = Cursor { after, woken: self.last.subscribe(), _client: Client(self.clients.clone()) };
        (cursor, lost)
    }

    /// The events after the client's place, up to `max_bytes` (at least one), as one buffer; its
    /// place moves past them.
    pub fn read(&self, cursor: &mut Cursor, max_bytes: usize) -> Read {
        let mut frames = Vec::new();
        {
            let ring = self.ring();
            let oldest = ring.oldest();
            if cursor.after.saturating_add(1) < oldest {
                let missed = oldest - cursor.after - 1;
                cursor.after = ring.next - 1;
                return Read::Lost { missed, last: cursor.after };
            }
            // Ids in the ring follow each other: the next event's place is its distance from the
            // oldest.
            let from = usize::try_from(cursor.after + 1 - oldest).unwrap_or(usize::MAX);
            let mut size = 0;
            for sent in ring.kept.range(from.min(ring.kept.len())..) {
                if size > 0 && size + sent.frame.len() > max_bytes {
                    break;
                }
                size += sent.frame.len();
                cursor.after = sent.id;
                // A count, not a copy: the copy into one buffer is made outside the lock.
                frames.push(sent.frame.clone());
            }
        }
        match frames.len() {
            0 => Read::Nothing,
            1 => Read::Frames(frames.pop().expect("one")),
            _ => {
                let mut out = BytesMut::with_capacity(frames.iter().map(Bytes::len).sum());
                for f in &frames {
                    out.extend_from_slice(f);
                }
                Read::Frames(out.freeze())
            }
        }
    }

    /// Events kept, and their bytes.
    pub fn kept(&self) -> (usize, usize) {
        let ring = self.ring();
        (ring.kept.len(), ring.bytes)
    }

    /// Clients connected.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
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

    fn ids(bus: &Bus, cursor: &mut Cursor) -> Vec<u64> {
        match bus.read(cursor, usize::MAX) {
            Read::Frames(b) => {
                std::str::from_utf8(&b).unwrap().lines().filter_map(|l| l.strip_prefix("id: ")?.parse().ok()).collect()
            }
            Read::Nothing => Vec::new(),
            Read::Lost { .. } => panic!("lost"),
        }
    }

    #[test]
    fn a_client_resumes_after_the_last_event_it_saw() {
        let bus = Bus::with_capacity(3, usize::MAX);
        for n in 1..=5 {
            assert_eq!(bus.publish("item", &format!("{{\"n\":{n}}}")), n);
        }
        let resume = |seen| {
            let (mut c, lost) = bus.subscribe(seen);
            (!lost).then(|| ids(&bus, &mut c))
        };
        assert_eq!(resume(Some(3)), Some(vec![4, 5]));
        assert_eq!(resume(Some(2)), Some(vec![3, 4, 5]), "the oldest kept follows it");
        assert_eq!(resume(Some(1)), None, "event 2 is no longer kept");
        assert_eq!(resume(Some(5)), Some(vec![]));
        assert_eq!(resume(Some(9)), None, "an id never sent (another daemon's)");
        assert_eq!(resume(None), Some(vec![]));
        assert_eq!(bus.subscribe(Some(1)).0.after(), 5, "a lost client goes on from the last event");
    }

    #[test]
    fn a_slow_client_lags_without_holding_anyone_back() {
        let bus = Bus::with_capacity(2, usize::MAX);
        let (mut slow, _) = bus.subscribe(None);
        for n in 0..5 {
            bus.publish("usage", &n.to_string());
        }
        assert_eq!(bus.read(&mut slow, usize::MAX), Read::Lost { missed: 3, last: 5 });
        assert_eq!(bus.read(&mut slow, usize::MAX), Read::Nothing);
        let (mut fresh, _) = bus.subscribe(None);
        assert_eq!(fresh.after(), 5);
        bus.publish("usage", "6");
        assert_eq!(bus.read(&mut fresh, usize::MAX), Read::Frames(Bytes::from("id: 6\nevent: usage\ndata: 6\n\n")));
        assert_eq!(ids(&bus, &mut slow), [6]);
        assert_eq!(bus.clients(), 2);
        drop(slow);
        assert_eq!(bus.clients(), 1);
    }

    #[test]
    fn a_burst_is_read_in_writes_of_bounded_size_and_memory_is_bounded_in_bytes() {
        let frame = Sent::new(1, "usage", "x").frame.len();
        let bus = Bus::with_capacity(usize::MAX, frame * 4);
        let (mut c, _) = bus.subscribe(None);
        assert_eq!(bus.publish_all((0..3).map(|_| ("usage", "x"))), 3);
        let Read::Frames(two) = bus.read(&mut c, frame * 2) else { panic!("frames") };
        assert_eq!(two.len(), frame * 2);
        assert_eq!(ids(&bus, &mut c), [3]);
        // One frame larger than a write still goes, alone.
        bus.publish("usage", "a longer one");
        assert!(matches!(bus.read(&mut c, 1), Read::Frames(b) if b.starts_with(b"id: 4\n")));
        bus.publish_all((0..10).map(|_| ("usage", "x")));
        assert!(bus.ring().bytes <= frame * 4, "kept {} bytes", bus.ring().bytes);
        assert!(matches!(bus.read(&mut c, usize::MAX), Read::Lost { last: 14, .. }));
    }

    #[tokio::test]
    async fn a_waiting_client_is_woken_by_what_is_published() {
        let bus = Arc::new(Bus::new());
        let (mut c, _) = bus.subscribe(None);
        let waiting = tokio::spawn(async move {
            c.published().await;
            c
        });
        tokio::task::yield_now().await;
        bus.publish_all([("item", "1"), ("usage", "2")]);
        let mut c = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await.unwrap().unwrap();
        assert_eq!(ids(&bus, &mut c), [1, 2]);
    }
}
