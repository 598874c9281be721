//! Records handed from a source thread (the store's follower, a server's stream) to a reader, as
//! one byte stream. The queue is bounded in bytes, not in messages: a message bound let a slow
//! reader hold hundreds of large records at once.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex};

/// Bytes queued at most before the source waits for the reader (one record larger than this
/// still passes alone: the queue takes it when it is empty).
pub const MAX_QUEUED: usize = 4 << 20;

#[derive(Default)]
struct Queue {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
    /// The reader has gone, or the source has.
    reader_gone: bool,
    source_gone: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// The source's end.
pub(super) struct Sender(Arc<Shared>);

/// The reader's end: the records as a byte stream, ended when the source ends.
pub struct ChannelReader {
    shared: Arc<Shared>,
    buf: Vec<u8>,
    pos: usize,
}

pub(super) fn channel() -> (Sender, ChannelReader) {
    let shared = Arc::new(Shared::default());
    (Sender(shared.clone()), ChannelReader { shared, buf: Vec::new(), pos: 0 })
}

impl Sender {
    /// Queues `records`, waiting while the queue is full; `false` once the reader has gone.
    pub fn send(&self, records: Vec<u8>) -> bool {
        if records.is_empty() {
            return true;
        }
        let Ok(mut q) = self.0.queue.lock() else { return false };
        while !q.reader_gone && q.bytes > 0 && q.bytes.saturating_add(records.len()) > MAX_QUEUED {
            let Ok(next) = self.0.changed.wait(q) else { return false };
            q = next;
        }
        if q.reader_gone {
            return false;
        }
        q.bytes += records.len();
        q.chunks.push_back(records);
        self.0.changed.notify_all();
        true
    }
}

impl Sender {
    /// Whether the reader has gone.
    pub fn closed(&self) -> bool {
        self.0.queue.lock().map_or(true, |q| q.reader_gone)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if let Ok(mut q) = self.0.queue.lock() {
            q.source_gone = true;
        }
        self.0.changed.notify_all();
    }
}

impl Drop for ChannelReader {
    fn drop(&mut self) {
        if let Ok(mut q) = self.shared.queue.lock() {
            q.reader_gone = true;
            q.chunks.clear();
            q.bytes = 0;
        }
        self.shared.changed.notify_all();
    }
}

impl ChannelReader {
    /// The next queued chunk; `None` once the source has gone and nothing is left.
    fn next_chunk(&self) -> Option<Vec<u8>> {
        let mut q = self.shared.queue.lock().ok()?;
        loop {
            if let Some(chunk) = q.chunks.pop_front() {
                q.bytes -= chunk.len();
                self.shared.changed.notify_all();
                return Some(chunk);
            }
            if q.source_gone {
                return None;
            }
            q = self.shared.changed.wait(q).ok()?;
        }
    }
}

impl io::Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.next_chunk() {
                Some(b) => {
                    self.buf = b;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_queue_holds_a_bounded_number_of_bytes_and_ends_with_its_source() {
        let (tx, mut rx) = channel();
        let source = std::thread::spawn(move || {
            for i in 0..64u8 {
                assert!(tx.send(vec![i; 1 << 20]));
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let queued = rx.shared.queue.lock().unwrap().bytes;
        assert!(queued <= MAX_QUEUED, "{queued} bytes queued");
        let mut all = Vec::new();
        rx.read_to_end(&mut all).unwrap();
        source.join().unwrap();
        assert_eq!(all.len(), 64 << 20);
        assert!(all[(1 << 20) * 63..].iter().all(|&b| b == 63));
    }

    #[test]
    fn a_source_stops_when_its_reader_has_gone() {
        let (tx, rx) = channel();
        drop(rx);
        assert!(!tx.send(b"x\n".to_vec()));
    }
}
