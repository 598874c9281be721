//! The tee's log of records and the monitors subscribed to it (`recording.md`, "Live socket
//! protocol").
//!
//! The log is the recording file when there is one: history for a late monitor is read back from
//! the file, and live batches are sent from it too (`sendfile`), so the tee holds no copy of a
//! long session in memory and never copies a record into a monitor's socket. With `--no-record` the log is
//! kept in memory, bounded by [`MEMORY_HISTORY_BYTES`]: a monitor attaching late to such a tee
//! gets the header and the newest records only. When the recording fails (disk full), what it
//! holds stays the start of the history and the log goes on in memory from there: a monitor
//! attaching later gets the file, then memory, without a gap (until memory's bound drops the
//! oldest of what came after, which is counted).
//!
//! Offsets are byte positions in the log. Monitors get batches in log order, each only once its
//! pump has forwarded it: a batch offered before an earlier one (the other pump is still
//! forwarding that) is held until the earlier one is offered. A monitor first reads history up to
//! the published offset and registers for live batches in the same critical section, at that
//! offset: no record is sent twice or missed across the switch.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::sendfile::sendfile64;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Interest};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, mpsc};

use super::recording::Recorder;

/// Records queued for one monitor before it is dropped as lagging. A monitor that keeps up holds
/// far less (it drains each batch as it arrives); 8 MiB rides out a monitor busy for a second
/// during a burst.
pub const SUBSCRIBER_QUEUE_BYTES: usize = 8 << 20;

/// History kept in memory when the tee does not record (`--no-record`).
pub const MEMORY_HISTORY_BYTES: usize = 64 << 20;

/// How long, and how many bytes, a batch may be held behind an earlier batch that its pump is
/// still forwarding (a peer that stopped reading). Past either bound (checked whenever a batch is
/// appended or offered) the earlier batch is published unforwarded: it is in the recording
/// already, and the other direction must not stall the monitors or grow memory without bound.
const HOLD_TIME: Duration = Duration::from_millis(100);
const HOLD_BYTES: usize = 4 << 20;

/// History is read from the recording in slices of this size.
const HISTORY_SLICE_BYTES: usize = 256 << 10;

/// How long a lagging or finished monitor gets to take its last bytes and marker before the tee
/// closes the connection anyway.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

pub const LIVE_MARKER: &[u8] = b"{\"swarmtop\":\"live\"}\n";

/// Longest request line a monitor may send on the control channel; a longer one ends the channel.
pub const MAX_REQUEST_BYTES: usize = 64 << 10;

/// Who is at the other end of a monitor's connection (`SO_PEERCRED`): recorded with each act.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peer {
    pub pid: Option<i32>,
}

impl Peer {
    fn of(stream: &UnixStream) -> Self {
        let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials);
        Self { pid: cred.ok().map(|c| c.pid()).filter(|&p| p > 0) }
    }
}

/// What a connection may ask of the tee, one request a line (the socket's control channel): the
/// replies, whole lines, go back on the same connection between records.
pub trait Control: Send + Sync + 'static {
    /// Handles one request (blocking is allowed: it runs on a blocking thread).
    fn request(&self, line: &[u8], peer: Peer, reply: &mpsc::UnboundedSender<Vec<u8>>);
}

/// Records appended to the log in one `write`.
#[derive(Debug, Clone)]
pub struct Batch {
    start: u64,
    len: usize,
    ts: i64,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    /// Complete in the recording at `start..start + len`: monitors are sent that range of the file
    /// with `sendfile`, so the kernel hands them the page cache's pages instead of the tee copying
    /// every record into every monitor's socket (that copy was the tee's largest cost).
    InFile,
    /// Kept in memory (`--no-record`, or the recording failed).
    Bytes(Arc<Vec<u8>>),
}

/// A batch of the in-memory history.
struct Stored {
    start: u64,
    data: Arc<Vec<u8>>,
}

enum Store {
    File {
        recorder: Recorder,
        reader: Arc<File>,
    },
    /// The log in memory, after `prefix` when there is one: the recording's first bytes (the
    /// header and the records written before the recording failed), read from the file.
    Memory {
        header: Arc<Vec<u8>>,
        prefix: Option<(Arc<File>, u64)>,
        batches: VecDeque<Stored>,
        bytes: usize,
    },
}

enum Out {
    Records(Arc<Vec<u8>>),
    /// Bytes `start..start + len` of the recording.
    InFile {
        start: u64,
        len: usize,
    },
    End(i32),
}

struct Lag {
    notify: Notify,
    dropped_from_ms: AtomicI64,
}

struct Subscriber {
    /// Only batches at or after this offset are live for it; earlier ones were its history.
    start: u64,
    tx: mpsc::UnboundedSender<Out>,
    queued: Arc<AtomicUsize>,
    lag: Arc<Lag>,
}

/// A batch in the log that monitors do not have yet.
struct Held {
    batch: Batch,
    offered: bool,
    since: Instant,
}

struct Inner {
    store: Store,
    /// The recording, opened for reading: history and the live batches that are in it are sent
    /// from here. Kept after a failed write, for the batches recorded before it.
    file: Option<Arc<File>>,
    header: Arc<Vec<u8>>,
    /// End of the log.
    len: u64,
    /// End of what monitors have been given (history ends here for a new monitor).
    published: u64,
    held: VecDeque<Held>,
    held_bytes: usize,
    subscribers: Vec<Subscriber>,
    ended: Option<i32>,
    /// Bytes of history dropped by [`MEMORY_HISTORY_BYTES`]: late monitors miss these.
    history_dropped_bytes: u64,
}

pub struct Hub {
    inner: Mutex<Inner>,
    queue_bytes: usize,
    /// Told whenever batches are published.
    published_moved: Notify,
}

/// What a monitor does next while catching up.
enum Step {
    Send(Vec<Arc<Vec<u8>>>, u64),
    Read { file: Arc<File>, offset: u64, len: usize },
    Live(Subscription),
}

struct Subscription {
    rx: mpsc::UnboundedReceiver<Out>,
    file: Option<Arc<File>>,
    queued: Arc<AtomicUsize>,
    lag: Arc<Lag>,
}

impl Hub {
    /// A log kept in the recording file that `recorder` writes (its header is already there).
    pub fn recorded(recorder: Recorder, header: Vec<u8>) -> io::Result<Self> {
        let reader = Arc::new(File::open(recorder.path())?);
        let len = recorder.len();
        Ok(Self::new(Store::File { recorder, reader: reader.clone() }, Some(reader), header, len))
    }

    /// A log kept in memory, for `--no-record`.
    pub fn in_memory(header: Vec<u8>) -> Self {
        let header = Arc::new(header);
        let len = header.len() as u64;
        let store = Store::Memory { header: header.clone(), prefix: None, batches: VecDeque::new(), bytes: 0 };
        Self::new(store, None, header.to_vec(), len)
    }

    fn new(store: Store, file: Option<Arc<File>>, header: Vec<u8>, len: u64) -> Self {
        let inner = Inner {
            store,
            file,
            header: Arc::new(header),
            len,
            published: len,
            held: VecDeque::new(),
            held_bytes: 0,
            subscribers: Vec::new(),
            ended: None,
            history_dropped_bytes: 0,
        };
        Self { inner: Mutex::new(inner), queue_bytes: SUBSCRIBER_QUEUE_BYTES, published_moved: Notify::new() }
    }

    /// Overrides the per-monitor queue bound (tests and benchmarks exercise lagging with it).
    #[must_use]
    pub fn with_queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere must not stop the proxy from recording and forwarding.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends whole records (the "record" step of the tee's ordering guarantee). If the recording
    /// cannot be written (disk full), the session must go on: the log continues in memory and the
    /// error is returned once so that the caller can say so.
    /// `data` is only borrowed: a recorded batch is not copied at all, so the caller can encode
    /// every batch into the same buffer.
    pub fn append(&self, data: &[u8], ts: i64) -> (Batch, Option<(std::path::PathBuf, io::Error)>) {
        let mut inner = self.lock();
        let start = inner.len;
        let mut failed = None;
        let mut body = Body::InFile;
        let mut spilled = None;
        match &mut inner.store {
            Store::File { recorder, reader } => {
                if let Err(e) = recorder.append(data) {
                    failed = Some((recorder.path().to_owned(), e));
                    // The recorder cut the torn write off: the file holds the log up to here.
                    spilled = Some((reader.clone(), recorder.len()));
                }
            }
            Store::Memory { .. } => {}
        }
        if let Some(prefix) = spilled {
            let header = inner.header.clone();
            inner.store = Store::Memory { header, prefix: Some(prefix), batches: VecDeque::new(), bytes: 0 };
        }
        let mut evicted = 0;
        if let Store::Memory { batches, bytes, .. } = &mut inner.store {
            let data = Arc::new(data.to_vec());
            *bytes += data.len();
            batches.push_back(Stored { start, data: data.clone() });
            while *bytes > MEMORY_HISTORY_BYTES && batches.len() > 1 {
                if let Some(old) = batches.pop_front() {
                    *bytes -= old.data.len();
                    evicted += old.data.len() as u64;
                }
            }
            body = Body::Bytes(data);
        }
        if evicted > 0 {
            inner.history_dropped_bytes += evicted;
            tracing::debug!(dropped = inner.history_dropped_bytes, "history beyond MEMORY_HISTORY_BYTES dropped");
        }
        let batch = Batch { start, len: data.len(), ts, body };
        inner.len += batch.len as u64;
        inner.held_bytes += batch.len;
        inner.held.push_back(Held { batch: batch.clone(), offered: false, since: Instant::now() });
        self.publish(&mut inner);
        (batch, failed)
    }

    /// Offers a forwarded batch to the live monitors (the last step of the ordering guarantee).
    /// Never blocks: a monitor whose queue is full is dropped as lagging.
    pub fn offer(&self, batch: &Batch) {
        let mut inner = self.lock();
        if let Some(h) = inner.held.iter_mut().find(|h| h.batch.start == batch.start) {
            h.offered = true;
        }
        self.publish(&mut inner);
    }

    /// Hands the batches at the head of the log that may go to the monitors.
    fn publish(&self, inner: &mut Inner) {
        let before = inner.published;
        self.publish_due(inner);
        if inner.published != before {
            self.published_moved.notify_waiters();
        }
    }

    fn publish_due(&self, inner: &mut Inner) {
        while let Some(front) = inner.held.front() {
            let due = front.offered || inner.held_bytes > HOLD_BYTES || front.since.elapsed() > HOLD_TIME;
            if !due {
                break;
            }
            let Some(Held { batch, .. }) = inner.held.pop_front() else {
                break;
            };
            inner.held_bytes -= batch.len;
            inner.published = batch.start + batch.len as u64;
            self.deliver(inner, &batch);
        }
    }

    fn deliver(&self, inner: &mut Inner, batch: &Batch) {
        let bound = self.queue_bytes;
        let n = batch.len;
        inner.subscribers.retain(|sub| {
            if batch.start < sub.start {
                return true;
            }
            let queued = sub.queued.load(Ordering::Acquire);
            // A monitor with nothing queued is keeping up, however large this batch is.
            if queued > 0 && queued + n > bound {
                sub.lag.dropped_from_ms.store(batch.ts, Ordering::Release);
                sub.lag.notify.notify_one();
                return false;
            }
            sub.queued.fetch_add(n, Ordering::AcqRel);
            let out = match &batch.body {
                Body::InFile => Out::InFile { start: batch.start, len: n },
                Body::Bytes(data) => Out::Records(data.clone()),
            };
            sub.tx.send(out).is_ok()
        });
    }

    /// The proxied command exited: every monitor gets the end marker after what it has queued.
    pub fn end(&self, exit_code: i32) {
        let mut inner = self.lock();
        for h in &mut inner.held {
            h.offered = true;
        }
        self.publish(&mut inner);
        inner.ended = Some(exit_code);
        for sub in inner.subscribers.drain(..) {
            let _ = sub.tx.send(Out::End(exit_code));
        }
    }

    /// Waits (at most [`HOLD_TIME`]) until what is recorded now is published. A pump offers a
    /// batch just after forwarding it, so a client can see a line before monitors are offered it:
    /// a monitor connecting in that moment (say, because the client saw the line) would otherwise
    /// get that line live rather than in its history.
    async fn settle(&self) {
        let target = self.lock().len;
        let deadline = tokio::time::Instant::now() + HOLD_TIME;
        loop {
            let mut moved = std::pin::pin!(self.published_moved.notified());
            // Registered before the check, so that a publish in between is not missed.
            moved.as_mut().enable();
            if self.lock().published >= target {
                return;
            }
            if tokio::time::timeout_at(deadline, moved).await.is_err() {
                return;
            }
        }
    }

    fn step(&self, offset: u64) -> Step {
        let mut inner = self.lock();
        if offset < inner.published {
            let published = inner.published;
            match &inner.store {
                Store::File { reader, .. } => {
                    let len = (published - offset).min(HISTORY_SLICE_BYTES as u64) as usize;
                    return Step::Read { file: reader.clone(), offset, len };
                }
                Store::Memory { header, prefix, batches, .. } => {
                    match prefix {
                        Some((file, end)) if offset < *end => {
                            let len = (*end - offset).min(HISTORY_SLICE_BYTES as u64) as usize;
                            return Step::Read { file: file.clone(), offset, len };
                        }
                        None if offset < header.len() as u64 => {
                            return Step::Send(vec![header.clone()], header.len() as u64);
                        }
                        _ => {}
                    }
                    let first = batches.partition_point(|b| b.start < offset);
                    let mut out = Vec::new();
                    let mut next = offset;
                    let mut bytes = 0;
                    for b in batches.range(first..) {
                        if bytes >= HISTORY_SLICE_BYTES || b.start >= published {
                            break;
                        }
                        bytes += b.data.len();
                        next = b.start + b.data.len() as u64;
                        out.push(b.data.clone());
                    }
                    if !out.is_empty() {
                        return Step::Send(out, next);
                    }
                }
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let lag = Arc::new(Lag { notify: Notify::new(), dropped_from_ms: AtomicI64::new(0) });
        if let Some(code) = inner.ended {
            let _ = tx.send(Out::End(code));
        } else {
            let start = inner.published;
            inner.subscribers.push(Subscriber { start, tx, queued: queued.clone(), lag: lag.clone() });
        }
        Step::Live(Subscription { rx, file: inner.file.clone(), queued, lag })
    }
}

fn read_at(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// One monitor's connection: history, the live marker, live records, and the end or lagged
/// marker; with `control`, the requests it sends are handled and their replies written between
/// records. Errors only end this monitor.
pub async fn serve(hub: Arc<Hub>, stream: UnixStream, control: Option<Arc<dyn Control>>) {
    let peer = Peer::of(&stream);
    let (read, mut write) = stream.into_split();
    let (reply_tx, mut replies) = mpsc::unbounded_channel();
    let listening = control.map(|c| tokio::spawn(listen(read, c, peer, reply_tx)));
    let _ = serve_inner(&hub, &mut write, &mut replies).await;
    if let Some(task) = listening {
        task.abort();
    }
    let _ = tokio::time::timeout(CLOSE_GRACE, write.shutdown()).await;
}

/// Reads a connection's requests, one a line, each handled before the next is read.
async fn listen(read: OwnedReadHalf, control: Arc<dyn Control>, peer: Peer, reply: mpsc::UnboundedSender<Vec<u8>>) {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let Ok(n) = (&mut read).take(MAX_REQUEST_BYTES as u64 + 1).read_until(b'\n', &mut line).await else {
            return;
        };
        if n == 0 {
            return;
        }
        if line.last() != Some(&b'\n') {
            if line.len() > MAX_REQUEST_BYTES {
                let why =
                    format!("{{\"swarmtop\":\"refused\",\"error\":\"a request over {MAX_REQUEST_BYTES} bytes\"}}\n");
                let _ = reply.send(why.into_bytes());
            }
            return;
        }
        let (control, reply, request) = (control.clone(), reply.clone(), std::mem::take(&mut line));
        let handled = tokio::task::spawn_blocking(move || control.request(&request, peer, &reply)).await;
        if handled.is_err() {
            return;
        }
    }
}

async fn serve_inner(
    hub: &Hub,
    stream: &mut OwnedWriteHalf,
    replies: &mut mpsc::UnboundedReceiver<Vec<u8>>,
) -> io::Result<()> {
    hub.settle().await;
    let mut offset = 0;
    let sub = loop {
        match hub.step(offset) {
            Step::Send(parts, next) => {
                for part in parts {
                    stream.write_all(&part).await?;
                }
                offset = next;
            }
            Step::Read { file, offset: at, len } => {
                let buf =
                    tokio::task::spawn_blocking(move || read_at(&file, at, len)).await.map_err(io::Error::other)??;
                stream.write_all(&buf).await?;
                offset = at + len as u64;
            }
            Step::Live(sub) => break sub,
        }
    };
    stream.write_all(LIVE_MARKER).await?;
    let Subscription { mut rx, file, queued, lag } = sub;
    loop {
        let out = tokio::select! {
            biased;
            () = lag.notify.notified() => return flush_then_lagged(stream, file.as_deref(), &mut rx, &lag, None).await,
            Some(reply) = replies.recv() => {
                stream.write_all(&reply).await?;
                continue;
            }
            out = rx.recv() => out,
        };
        match out {
            None => return Ok(()),
            Some(Out::End(code)) => {
                while let Ok(reply) = replies.try_recv() {
                    stream.write_all(&reply).await?;
                }
                let marker = format!("{{\"swarmtop\":\"end\",\"exitCode\":{code}}}\n");
                return tokio::time::timeout(CLOSE_GRACE, stream.write_all(marker.as_bytes()))
                    .await
                    .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()));
            }
            Some(out @ (Out::Records(_) | Out::InFile { .. })) => {
                let len = match &out {
                    Out::Records(data) => data.len(),
                    Out::InFile { len, .. } => *len,
                    Out::End(_) => 0,
                };
                let lagged = {
                    let mut write = Box::pin(send(stream, file.as_deref(), &out));
                    tokio::select! {
                        biased;
                        r = &mut write => { r?; None }
                        () = lag.notify.notified() => {
                            // The batch is whole lines: finish it so the marker starts a line.
                            let deadline = tokio::time::Instant::now() + CLOSE_GRACE;
                            match tokio::time::timeout_at(deadline, write).await {
                                Ok(Ok(())) => Some(deadline),
                                _ => return Ok(()),
                            }
                        }
                    }
                };
                queued.fetch_sub(len, Ordering::AcqRel);
                if let Some(deadline) = lagged {
                    return flush_then_lagged(stream, file.as_deref(), &mut rx, &lag, Some(deadline)).await;
                }
            }
        }
    }
}

/// Writes a batch of records to a monitor.
async fn send(stream: &mut OwnedWriteHalf, file: Option<&File>, out: &Out) -> io::Result<()> {
    match (out, file) {
        (Out::Records(data), _) => stream.write_all(data).await,
        (Out::InFile { start, len }, Some(file)) => send_file(stream.as_ref(), file, *start, *len).await,
        (Out::InFile { .. }, None) => Err(io::Error::other("a recorded batch without a recording")),
        (Out::End(_), _) => Ok(()),
    }
}

/// `sendfile` from the recording into the (non-blocking) socket until the range is sent.
async fn send_file(stream: &UnixStream, file: &File, start: u64, len: usize) -> io::Result<()> {
    let mut offset = i64::try_from(start).map_err(io::Error::other)?;
    let end = offset + i64::try_from(len).map_err(io::Error::other)?;
    while offset < end {
        stream.writable().await?;
        let want = (end - offset) as usize;
        let sent = stream
            .try_io(Interest::WRITABLE, || sendfile64(stream, file, Some(&mut offset), want).map_err(io::Error::from));
        match sent {
            // The range was written before it was published: the file cannot end before it.
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A lagging monitor first gets what was queued for it before the batch it was dropped at: those
/// records are older than `droppedFromMs`, which says where its stream stops. All within the close
/// grace; past it the connection is closed without the marker.
async fn flush_then_lagged(
    stream: &mut OwnedWriteHalf,
    file: Option<&File>,
    rx: &mut mpsc::UnboundedReceiver<Out>,
    lag: &Lag,
    deadline: Option<tokio::time::Instant>,
) -> io::Result<()> {
    let deadline = deadline.unwrap_or_else(|| tokio::time::Instant::now() + CLOSE_GRACE);
    // The hub has let go of this monitor: what is in the queue is all there will be.
    while let Ok(out) = rx.try_recv() {
        match tokio::time::timeout_at(deadline, send(stream, file, &out)).await {
            Ok(Ok(())) => {}
            _ => return Ok(()),
        }
    }
    send_lagged(stream, lag, deadline).await
}

async fn send_lagged(stream: &mut OwnedWriteHalf, lag: &Lag, deadline: tokio::time::Instant) -> io::Result<()> {
    let ts = lag.dropped_from_ms.load(Ordering::Acquire);
    let marker = format!("{{\"swarmtop\":\"lagged\",\"droppedFromMs\":{ts}}}\n");
    tokio::time::timeout_at(deadline, stream.write_all(marker.as_bytes()))
        .await
        .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
}

#[cfg(test)]
impl Hub {
    /// The whole log as text, published or not (tests of what the tee records).
    pub(crate) fn history_for_tests(&self) -> String {
        let inner = self.lock();
        let mut out = String::from_utf8_lossy(&inner.header).into_owned();
        if let Store::Memory { batches, .. } = &inner.store {
            for b in batches {
                out.push_str(&String::from_utf8_lossy(&b.data));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscribe(hub: &Hub) -> (Vec<u8>, Subscription) {
        let mut history = Vec::new();
        let mut offset = 0;
        loop {
            match hub.step(offset) {
                Step::Send(parts, next) => {
                    for p in parts {
                        history.extend_from_slice(&p);
                    }
                    offset = next;
                }
                Step::Read { file, offset: at, len } => {
                    history.extend_from_slice(&read_at(&file, at, len).expect("read"));
                    offset = at + len as u64;
                }
                Step::Live(sub) => return (history, sub),
            }
        }
    }

    fn drain(sub: &mut Subscription) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            match sub.rx.try_recv() {
                Ok(Out::Records(r)) => out.extend_from_slice(&r),
                Ok(Out::InFile { start, len }) => {
                    let file = sub.file.as_ref().expect("a recorded hub has its file");
                    out.extend_from_slice(&read_at(file, start, len).expect("read"));
                }
                _ => return out,
            }
        }
    }

    fn append(hub: &Hub, data: &[u8], ts: i64) -> Batch {
        hub.append(data, ts).0
    }

    #[test]
    fn monitors_get_batches_in_log_order_once_forwarded() {
        let hub = Hub::in_memory(b"H\n".to_vec());
        let (history, mut sub) = subscribe(&hub);
        assert_eq!(history, b"H\n");
        let a = append(&hub, b"A\n", 1);
        let b = append(&hub, b"B\n", 2);
        hub.offer(&b);
        assert_eq!(drain(&mut sub), b"", "B waits for A, still being forwarded");
        hub.offer(&a);
        assert_eq!(drain(&mut sub), b"A\nB\n");
    }

    #[test]
    fn a_batch_stuck_in_its_forward_is_published_after_the_hold_time() {
        let hub = Hub::in_memory(b"H\n".to_vec());
        let (_, mut sub) = subscribe(&hub);
        append(&hub, b"A\n", 1);
        let b = append(&hub, b"B\n", 2);
        hub.offer(&b);
        std::thread::sleep(HOLD_TIME + Duration::from_millis(20));
        append(&hub, b"C\n", 3);
        assert_eq!(drain(&mut sub), b"A\nB\n", "C is not forwarded yet");
    }

    #[test]
    fn history_ends_where_publishing_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.ndjson");
        let recorder = Recorder::create(&path, b"H\n").expect("create");
        let hub = Hub::recorded(recorder, b"H\n".to_vec()).expect("hub");
        let a = append(&hub, b"A\n", 1);
        hub.offer(&a);
        let b = append(&hub, b"B\n", 2);
        let (history, mut sub) = subscribe(&hub);
        assert_eq!(history, b"H\nA\n", "B is recorded but not forwarded yet");
        hub.offer(&b);
        assert_eq!(drain(&mut sub), b"B\n");
        assert_eq!(std::fs::read(&path).expect("read"), b"H\nA\nB\n");
    }

    #[test]
    fn a_new_monitor_waits_for_what_is_being_forwarded() {
        let hub = Arc::new(Hub::in_memory(b"H\n".to_vec()));
        let a = append(&hub, b"A\n", 1);
        let offering = {
            let hub = hub.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                hub.offer(&a);
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let started = Instant::now();
        runtime.block_on(hub.settle());
        assert!(started.elapsed() < HOLD_TIME, "the offer ends the wait");
        let (history, _) = subscribe(&hub);
        assert_eq!(history, b"H\nA\n");
        offering.join().expect("offer");
    }

    #[test]
    fn a_monitor_whose_queue_is_full_is_dropped_as_lagging() {
        let hub = Hub::in_memory(b"H\n".to_vec()).with_queue_bytes(4);
        let (_, mut sub) = subscribe(&hub);
        // An empty queue takes a batch of any size.
        let a = append(&hub, b"AAAAAA\n", 1);
        hub.offer(&a);
        let b = append(&hub, b"B\n", 2);
        hub.offer(&b);
        assert_eq!(sub.lag.dropped_from_ms.load(Ordering::Acquire), 2);
        assert_eq!(drain(&mut sub), b"AAAAAA\n");
        assert!(hub.lock().subscribers.is_empty());
    }

    #[test]
    fn memory_history_keeps_the_header_and_the_newest_batches() {
        let hub = Hub::in_memory(b"H\n".to_vec());
        let mut piece = vec![b'x'; (1 << 20) - 1];
        piece.push(b'\n');
        let n = MEMORY_HISTORY_BYTES / piece.len() + 8;
        for ts in (0..).take(n) {
            let b = append(&hub, &piece, ts);
            hub.offer(&b);
        }
        let (history, _) = subscribe(&hub);
        assert!(history.starts_with(b"H\nxxx"));
        assert_eq!(history.len(), 2 + MEMORY_HISTORY_BYTES);
    }

    /// A recording that fails after `good` bytes (a disk that fills up): like a real failure,
    /// the write that hits the limit lands part-way.
    fn failing_recording(dir: &std::path::Path, good: u64) -> (Recorder, std::path::PathBuf) {
        let path = dir.join("r.ndjson");
        let recorder = Recorder::create(&path, b"H\n").expect("create");
        (recorder.failing_after(good), path)
    }

    #[test]
    fn after_the_recording_fails_history_is_the_file_then_memory_without_a_gap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (recorder, path) = failing_recording(dir.path(), 10);
        let hub = Hub::recorded(recorder, b"H\n".to_vec()).expect("hub");
        let (a, failed) = hub.append(b"A1\nA2\n", 1);
        assert!(failed.is_none());
        hub.offer(&a);
        let (b, failed) = hub.append(b"B1\nB2\n", 2);
        assert!(failed.is_some(), "the disk is full");
        hub.offer(&b);
        let c = append(&hub, b"C\n", 3);
        hub.offer(&c);
        assert_eq!(std::fs::read(&path).expect("read"), b"H\nA1\nA2\n", "the recording ends on a whole record");
        let (history, _) = subscribe(&hub);
        assert_eq!(history, b"H\nA1\nA2\nB1\nB2\nC\n");
    }

    #[test]
    fn the_end_reaches_monitors_after_what_they_have_queued() {
        let hub = Hub::in_memory(b"H\n".to_vec());
        let (_, mut sub) = subscribe(&hub);
        append(&hub, b"A\n", 1);
        hub.end(3);
        assert!(matches!(sub.rx.try_recv(), Ok(Out::Records(r)) if r.as_slice() == b"A\n"));
        assert!(matches!(sub.rx.try_recv(), Ok(Out::End(3))));
        let (history, mut late) = subscribe(&hub);
        assert_eq!(history, b"H\nA\n");
        assert!(matches!(late.rx.try_recv(), Ok(Out::End(3))));
    }
}
