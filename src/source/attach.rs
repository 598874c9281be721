//! The monitor's side of the live socket: connect to a tee, turn what it sends into [`Event`]s,
//! and reconnect with backoff when the tee drops us (lagged) or goes away.
//!
//! The socket carries records (the tee's header and envelopes) and three markers: `live` (history
//! is over), `lagged` (we fell behind and were dropped), `end` (the command exited). Records are
//! passed on untouched, batched per `read`; markers become events.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::AsyncReadExt as _;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::files;
use super::live::{End, Event, Records, ResetReason};
use super::recording::Recorder;
use super::socket::{self, Found};
use crate::wire::{Clean, sanitize_line};

const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
const READ_BYTES: usize = 256 << 10;

#[derive(Debug)]
pub struct Options {
    pub path: PathBuf,
    /// Reconnect after the connection breaks or cannot be made (a screen waiting for a tee to
    /// come back). Without it, the first failure or close ends the stream (headless use).
    /// A `lagged` drop is always followed by a reconnect: it is how the protocol resyncs.
    pub reconnect: bool,
    /// Copy what arrives into this recording (its own header is written already).
    pub record: Option<Recorder>,
    /// When reconnecting finds the socket gone (a tee restarted has another pid, hence another
    /// socket), attach to the only tee running in this directory, if there is exactly one.
    pub rediscover: Option<PathBuf>,
}

/// `attach --record`: the tee's records, each once. After a reconnect the tee sends its history
/// again; records already copied are skipped, unless the history is another session's (a new
/// tee on the same socket path: its header differs), which is copied in full after the first.
struct Copy {
    recorder: Recorder,
    /// The header of the session being copied.
    header: Option<Vec<u8>>,
    /// Records of that session copied so far (its header included).
    copied: u64,
    /// Records of the current connection still to skip.
    skip: u64,
    /// The next record is the first of a connection (the tee's header).
    first: bool,
}

impl Copy {
    fn connected(&mut self) {
        self.skip = self.copied;
        self.first = true;
    }

    fn records(&mut self, records: &Records) -> io::Result<()> {
        let mut out = Vec::new();
        for line in records.iter() {
            if std::mem::take(&mut self.first) && self.header.as_deref() != Some(line) {
                self.header = Some(line.to_vec());
                self.copied = 0;
                self.skip = 0;
            }
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            out.extend_from_slice(line);
            out.push(b'\n');
            self.copied += 1;
        }
        if !out.is_empty() {
            self.recorder.append(&out)?;
        }
        Ok(())
    }
}

/// Copies (when recording), then hands on: the recording is never behind what was shown.
async fn deliver(tx: &mpsc::Sender<Event>, copy: &mut Option<Copy>, records: Records) -> Result<(), Outcome> {
    if let Some(c) = copy {
        if let Err(e) = c.records(&records) {
            // The live view goes on; only the copy stops, and the user is told once.
            let path = Clean::path(c.recorder.path());
            eprintln!("swarmtop: cannot write the recording {path}: {e}; going on without it");
            *copy = None;
        }
    }
    send(tx, Event::Records(records)).await
}

/// Where `swarmtop attach` without a path should look, and what it found there.
#[derive(Debug)]
pub enum Discovery {
    None { dir: PathBuf },
    One(PathBuf),
    Several(Vec<Found>),
}

/// A look into the socket directory: the tees found, and the sockets refused (and why).
#[derive(Debug)]
pub struct Discovered {
    pub pick: Discovery,
    pub refused: Vec<Clean>,
}

/// Lists the running tees in the socket directory (newest first), removing stale sockets. An
/// untrusted directory (another user's, or open to others) is an error: see [`socket::list`].
pub fn discover() -> io::Result<Discovered> {
    discover_in(socket::lookup_dir())
}

pub fn discover_in(dir: PathBuf) -> io::Result<Discovered> {
    let socket::Listing { mut found, refused } = socket::list(&dir)?;
    let pick = match found.len() {
        0 => Discovery::None { dir },
        1 => Discovery::One(found.remove(0).path),
        _ => Discovery::Several(found),
    };
    Ok(Discovered { pick, refused })
}

enum Refusal {
    /// The socket, or the process behind it, is not ours: never retried.
    Untrusted(String),
    Io(io::Error),
}

/// Connects to a tee's socket that passes the checks of [`socket`]: a socket of ours, served by a
/// process of ours.
async fn connect(path: &std::path::Path) -> Result<UnixStream, Refusal> {
    let refuse = |e: io::Error| Refusal::Untrusted(format!("refusing {}: {e}", Clean::path(path)));
    match socket::check_socket(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Err(refuse(e)),
        // Missing and the like: as for a failed connect.
        Err(e) => return Err(Refusal::Io(e)),
    }
    let stream = UnixStream::connect(path).await.map_err(Refusal::Io)?;
    socket::check_peer(&stream).map_err(refuse)?;
    Ok(stream)
}

enum Outcome {
    End(i32),
    /// The peer does not speak the protocol: never retried.
    NotATee(String),
    Lagged(i64),
    Closed(String),
    ConsumerGone,
}

/// Runs until the stream ends for good or the consumer drops its receiver.
pub async fn run(opts: Options, tx: mpsc::Sender<Event>) {
    let mut copy = opts.record.map(|recorder| Copy { recorder, header: None, copied: 0, skip: 0, first: true });
    let mut backoff = BACKOFF_FIRST;
    let mut reset: Option<ResetReason> = None;
    let mut ever_connected = false;
    let mut path = opts.path;
    loop {
        let reason = match connect(&path).await {
            Err(Refusal::Untrusted(why)) => {
                let _ = tx.send(Event::Ended(End::Failed(sanitize_line(&why)))).await;
                return;
            }
            Ok(stream) => {
                if let Some(r) = reset.take() {
                    if tx.send(Event::Reset(r)).await.is_err() {
                        return;
                    }
                }
                if tx.send(Event::Connected { path: path.clone() }).await.is_err() {
                    return;
                }
                ever_connected = true;
                if let Some(c) = &mut copy {
                    c.connected();
                }
                match read_stream(stream, &tx, &mut backoff, &mut copy, &Clean::path(&path)).await {
                    Outcome::End(code) => {
                        let _ = tx.send(Event::Ended(End::Exited(code))).await;
                        return;
                    }
                    Outcome::NotATee(why) => {
                        let _ = tx.send(Event::Ended(End::Failed(sanitize_line(&why)))).await;
                        return;
                    }
                    Outcome::ConsumerGone => return,
                    Outcome::Lagged(dropped_from_ms) => {
                        reset = Some(ResetReason::Lagged { dropped_from_ms });
                        continue;
                    }
                    Outcome::Closed(reason) => {
                        if !opts.reconnect {
                            let _ = tx.send(Event::Ended(End::Closed)).await;
                            return;
                        }
                        reset = Some(ResetReason::Reconnected);
                        reason
                    }
                }
            }
            Err(Refusal::Io(e)) => {
                if !opts.reconnect {
                    let end = if ever_connected {
                        End::Closed
                    } else {
                        End::Failed(sanitize_line(&format!("connecting to {}: {e}", Clean::path(&path))))
                    };
                    let _ = tx.send(Event::Ended(end)).await;
                    return;
                }
                let gone = matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused);
                if let (true, Some(dir)) = (gone, &opts.rediscover) {
                    if let Ok(Discovered { pick: Discovery::One(other), .. }) = discover_in(dir.clone()) {
                        if other != path {
                            path = other;
                            continue;
                        }
                    }
                }
                e.to_string()
            }
        };
        let retry_in = backoff;
        if tx.send(Event::Disconnected { retry_in, reason: sanitize_line(&reason) }).await.is_err() {
            return;
        }
        tokio::time::sleep(retry_in).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

#[derive(Deserialize)]
struct Marker {
    swarmtop: String,
    #[serde(rename = "exitCode")]
    exit_code: Option<i64>,
    #[serde(rename = "droppedFromMs")]
    dropped_from_ms: Option<i64>,
}

/// What the socket carries, split: records (passed on untouched), markers, and records too long
/// to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Records(Records),
    /// A record longer than the framer's bound: only its length and first bytes were kept (the
    /// consumer counts it as one malformed line, as `stats` does a line over the bound).
    Oversized {
        len: usize,
        head: Vec<u8>,
    },
    Live,
    Lagged(i64),
    End(i32),
}

fn control(line: &[u8]) -> Option<Frame> {
    if !line.starts_with(b"{\"swarmtop\":") {
        return None;
    }
    let m: Marker = serde_json::from_slice(line).ok()?;
    match m.swarmtop.as_str() {
        "live" => Some(Frame::Live),
        "lagged" => Some(Frame::Lagged(m.dropped_from_ms.unwrap_or(0))),
        "end" => Some(Frame::End(m.exit_code.and_then(|c| i32::try_from(c).ok()).unwrap_or(-1))),
        // The recording header and markers this version does not know are records.
        _ => None,
    }
}

/// Longest record a monitor holds while waiting for its newline: the line bound of every reader
/// (`files::MAX_LINE`), past which a record counts as one malformed line anyway. A peer that never
/// sends a newline costs this much memory, no more.
pub const MAX_RECORD_BYTES: usize = files::MAX_LINE;

/// Splits the socket's byte stream into [`Frame`]s, holding at most its bound of an unfinished
/// record. Pure: what arrives in, frames out.
#[derive(Debug)]
pub struct Framer {
    max: usize,
    /// The unfinished record, while it is within the bound.
    partial: Vec<u8>,
    /// The unfinished record once past the bound: its length so far and its head.
    oversized: Option<(usize, Vec<u8>)>,
}

impl Framer {
    pub fn new(max: usize) -> Self {
        Self { max, partial: Vec::new(), oversized: None }
    }

    /// Bytes held for an unfinished record (at most the bound plus one read).
    pub fn held(&self) -> usize {
        self.partial.len() + self.oversized.as_ref().map_or(0, |(_, head)| head.len())
    }

    /// Whether an unfinished record is pending (the stream stopped inside a record).
    pub fn in_record(&self) -> bool {
        !self.partial.is_empty() || self.oversized.is_some()
    }

    /// The frames of `chunk`, in order, appended to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Frame>) {
        while !chunk.is_empty() {
            if let Some((len, head)) = &mut self.oversized {
                let end = memchr::memchr(b'\n', chunk);
                let piece = &chunk[..end.unwrap_or(chunk.len())];
                *len = len.saturating_add(piece.len());
                let room = files::HEAD.saturating_sub(head.len());
                head.extend_from_slice(&piece[..room.min(piece.len())]);
                let Some(i) = end else { return };
                let (len, head) = self.oversized.take().unwrap_or_default();
                // A later piece of an over-long line was counted with its first piece.
                if !super::recording::is_continuation(&head) {
                    out.push(Frame::Oversized { len, head });
                }
                chunk = &chunk[i + 1..];
                continue;
            }
            let Some(last) = memchr::memrchr(b'\n', chunk) else {
                self.partial.extend_from_slice(chunk);
                self.bound();
                return;
            };
            let mut complete = std::mem::take(&mut self.partial);
            complete.extend_from_slice(&chunk[..=last]);
            split(complete, out);
            self.partial.extend_from_slice(&chunk[last + 1..]);
            self.bound();
            return;
        }
    }

    /// The stream ended: an unfinished record is handed on as it is (it will count as
    /// malformed), never dropped unseen.
    pub fn finish(&mut self, out: &mut Vec<Frame>) {
        if let Some((len, head)) = self.oversized.take() {
            if !super::recording::is_continuation(&head) {
                out.push(Frame::Oversized { len, head });
            }
        } else if !self.partial.is_empty() {
            let mut torn = std::mem::take(&mut self.partial);
            torn.push(b'\n');
            out.push(Frame::Records(Records::new(torn)));
        }
    }

    fn bound(&mut self) {
        if self.partial.len() > self.max {
            let len = self.partial.len();
            self.partial.truncate(files::HEAD);
            let head = std::mem::take(&mut self.partial);
            self.oversized = Some((len, head));
        }
    }
}

/// Complete records (ending in `\n`) to frames: markers split the records around them.
fn split(complete: Vec<u8>, out: &mut Vec<Frame>) {
    let mut from = 0;
    let mut pos = 0;
    while pos < complete.len() {
        let end = memchr::memchr(b'\n', &complete[pos..]).map_or(complete.len(), |i| pos + i);
        if let Some(marker) = control(&complete[pos..end]) {
            if from < pos {
                out.push(Frame::Records(Records::new(complete[from..pos].to_vec())));
            }
            from = end + 1;
            out.push(marker);
        }
        pos = end + 1;
    }
    if from == 0 {
        out.push(Frame::Records(Records::new(complete)));
    } else if from < complete.len() {
        out.push(Frame::Records(Records::new(complete[from..].to_vec())));
    }
}

/// How long a peer has to send its first line: a tee sends its recording header at once.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a first record is a tee's recording header.
fn is_header(records: &Records) -> bool {
    records.iter().next().is_some_and(|line| line.starts_with(b"{\"swarmtop\":\"recording\""))
}

async fn read_stream(
    mut stream: UnixStream,
    tx: &mpsc::Sender<Event>,
    backoff: &mut Duration,
    copy: &mut Option<Copy>,
    name: &Clean,
) -> Outcome {
    let mut buf: Vec<u8> = vec![0; READ_BYTES];
    let mut framer = Framer::new(MAX_RECORD_BYTES);
    let mut frames = Vec::new();
    let mut greeted = false;
    let handshake = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    loop {
        let read = if greeted {
            stream.read(&mut buf).await
        } else {
            let Ok(read) = tokio::time::timeout_at(handshake, stream.read(&mut buf)).await else {
                let secs = HANDSHAKE_TIMEOUT.as_secs();
                return Outcome::NotATee(format!("{name} sent no recording header in {secs} s: not a swarmtop tee"));
            };
            read
        };
        let n = match read {
            Ok(0) if !greeted => {
                return Outcome::NotATee(format!(
                    "{name} closed the connection without sending a recording header: not a swarmtop tee"
                ));
            }
            Ok(0) => {
                framer.finish(&mut frames);
                let torn = !frames.is_empty();
                if let Err(outcome) = hand_on(std::mem::take(&mut frames), tx, backoff, copy).await {
                    return outcome;
                }
                return Outcome::Closed(
                    if torn {
                        "the tee closed the connection inside a record"
                    } else {
                        "the tee closed the connection"
                    }
                    .into(),
                );
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Outcome::Closed(e.to_string()),
        };
        framer.push(&buf[..n], &mut frames);
        if !greeted {
            match frames.first() {
                // Not a whole line yet (a peer that never sends one meets the handshake timeout).
                None => continue,
                Some(Frame::Records(r)) if is_header(r) => greeted = true,
                _ => {
                    return Outcome::NotATee(format!(
                        "{name} is not a swarmtop tee (its first line is not a recording header)"
                    ));
                }
            }
        }
        if let Err(outcome) = hand_on(std::mem::take(&mut frames), tx, backoff, copy).await {
            return outcome;
        }
    }
}

/// Passes records on and acts on markers; `Err` ends this connection.
async fn hand_on(
    frames: Vec<Frame>,
    tx: &mpsc::Sender<Event>,
    backoff: &mut Duration,
    copy: &mut Option<Copy>,
) -> Result<(), Outcome> {
    for frame in frames {
        match frame {
            Frame::Records(records) => deliver(tx, copy, records).await?,
            Frame::Oversized { len, head } => send(tx, Event::Oversized { len, head }).await?,
            Frame::Live => {
                *backoff = BACKOFF_FIRST;
                send(tx, Event::Live).await?;
            }
            Frame::Lagged(ts) => return Err(Outcome::Lagged(ts)),
            Frame::End(code) => return Err(Outcome::End(code)),
        }
    }
    Ok(())
}

async fn send(tx: &mpsc::Sender<Event>, event: Event) -> Result<(), Outcome> {
    tx.send(event).await.map_err(|_| Outcome::ConsumerGone)
}

/// A label for a socket in the picker: its path and how long ago it appeared.
pub fn describe(found: &Found) -> String {
    let age = found.modified.elapsed().map_or_else(|_| "just now".to_owned(), |d| format_age(d.as_secs()));
    format!("{}  (started {age})", Clean::path(&found.path))
}

fn format_age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h {}m ago", secs / 3600, secs / 60 % 60),
        _ => format!("{}d ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::UnixListener;

    /// Events up to the end of the stream, all within ten seconds.
    async fn collect(rx: &mut mpsc::Receiver<Event>) -> Vec<Event> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut events = Vec::new();
        while let Some(e) = tokio::time::timeout_at(deadline, rx.recv()).await.expect("the stream ends in time") {
            let done = matches!(e, Event::Ended(_));
            events.push(e);
            if done {
                break;
            }
        }
        events
    }

    fn records(s: &str) -> Event {
        Event::Records(Records::new(s.as_bytes().to_vec()))
    }

    const HEADER: &[u8] = b"{\"swarmtop\":\"recording\",\"version\":1}\n";

    fn header() -> Event {
        Event::Records(Records::new(HEADER.to_vec()))
    }

    /// The end a peer's behaviour gives, against a fresh connection without reconnecting.
    async fn end_against(serve: impl FnOnce(tokio::net::UnixStream) + Send + 'static) -> End {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("peer.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        tokio::spawn(async move {
            let (a, _) = listener.accept().await.expect("accept");
            serve(a);
        });
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path, reconnect: true, record: None, rediscover: None }, tx));
        let events = collect(&mut rx).await;
        match events.last() {
            Some(Event::Ended(end)) => end.clone(),
            other => panic!("no end: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_peer_that_is_not_a_tee_gets_a_clear_error_in_time() {
        let silent = end_against(|a| {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                drop(a);
            });
        })
        .await;
        assert!(matches!(&silent, End::Failed(w) if w.as_str().contains("not a swarmtop tee")), "{silent:?}");
        let closes = end_against(drop).await;
        assert!(matches!(&closes, End::Failed(w) if w.as_str().contains("closed the connection")), "{closes:?}");
        let other = end_against(|mut a| {
            tokio::spawn(async move {
                let _ = a.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
        })
        .await;
        assert!(matches!(&other, End::Failed(w) if w.as_str().contains("first line")), "{other:?}");
        let endless = end_against(|mut a| {
            tokio::spawn(async move {
                let chunk = vec![b'x'; 1 << 20];
                while a.write_all(&chunk).await.is_ok() {}
            });
        })
        .await;
        assert!(matches!(&endless, End::Failed(w) if w.as_str().contains("not a swarmtop tee")), "{endless:?}");
    }

    #[test]
    fn a_record_that_never_ends_is_held_within_the_bound_and_counted_once() {
        let mut framer = Framer::new(1000);
        let mut out = Vec::new();
        framer.push(b"{\"swarmtop\":\"recording\"}\nxx", &mut out);
        for _ in 0..100 {
            framer.push(&[b'y'; 4096], &mut out);
            assert!(framer.held() <= 1000 + 4096, "{}", framer.held());
        }
        framer.push(b"yy\n{\"a\":1}\n{\"swarmtop\":\"live\"}\n", &mut out);
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(
            matches!(&out[1], Frame::Oversized { len, head } if *len == 2 + 100 * 4096 + 2 && head.len() == files::HEAD)
        );
        assert_eq!(out[2], Frame::Records(Records::new(b"{\"a\":1}\n".to_vec())));
        assert_eq!(out[3], Frame::Live);
        framer.push(b"torn", &mut out);
        assert!(framer.in_record());
        framer.finish(&mut out);
        assert_eq!(out[4], Frame::Records(Records::new(b"torn\n".to_vec())));
    }

    #[tokio::test]
    async fn lagged_reconnects_and_resets_then_end_finishes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let server = tokio::spawn(async move {
            let (mut a, _) = listener.accept().await.expect("accept");
            a.write_all(b"{\"swarmtop\":\"recording\",\"version\":1}\n{\"ts\":1,\"dir\":\"s2c\",\"msg\":{}}\n{\"swarmtop\":\"live\"}\n")
                .await
                .expect("write");
            a.write_all(b"{\"ts\":2,\"dir\":\"s2c\",\"msg\":[]}\n{\"swarmtop\":\"lagged\",\"droppedFromMs\":3}\n")
                .await
                .expect("write");
            drop(a);
            let (mut b, _) = listener.accept().await.expect("accept");
            // Split inside a line: the reader joins it.
            b.write_all(b"{\"swarmtop\":\"recording\",\"version\":1}\n{\"ts\":1,\"dir\":").await.expect("write");
            b.flush().await.expect("flush");
            tokio::time::sleep(Duration::from_millis(20)).await;
            b.write_all(b"\"s2c\",\"msg\":{}}\n{\"swarmtop\":\"live\"}\n{\"swarmtop\":\"end\",\"exitCode\":3}\n")
                .await
                .expect("write");
        });
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path: path.clone(), reconnect: false, record: None, rediscover: None }, tx));
        let events = collect(&mut rx).await;
        server.await.expect("server");
        let header = "{\"swarmtop\":\"recording\",\"version\":1}\n";
        let expected = vec![
            Event::Connected { path: path.clone() },
            records(&format!("{header}{{\"ts\":1,\"dir\":\"s2c\",\"msg\":{{}}}}\n")),
            Event::Live,
            records("{\"ts\":2,\"dir\":\"s2c\",\"msg\":[]}\n"),
            Event::Reset(ResetReason::Lagged { dropped_from_ms: 3 }),
            Event::Connected { path },
            records(header),
            records("{\"ts\":1,\"dir\":\"s2c\",\"msg\":{}}\n"),
            Event::Live,
            Event::Ended(End::Exited(3)),
        ];
        // How the second history arrives depends on the reads; compare its bytes, not its batches.
        let joined = |evs: &[Event]| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            let mut acc = String::new();
            for e in evs {
                if let Event::Records(r) = e {
                    acc.push_str(std::str::from_utf8(r.as_bytes()).expect("utf8"));
                } else {
                    if !acc.is_empty() {
                        out.push(std::mem::take(&mut acc));
                    }
                    out.push(format!("{e:?}"));
                }
            }
            out
        };
        assert_eq!(joined(&events), joined(&expected));
    }

    #[tokio::test]
    async fn without_reconnect_a_missing_socket_fails_and_a_close_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("none.sock");
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path: path.clone(), reconnect: false, record: None, rediscover: None }, tx));
        let events = collect(&mut rx).await;
        assert!(matches!(events.as_slice(), [Event::Ended(End::Failed(_))]), "{events:?}");

        let listener = UnixListener::bind(&path).expect("bind");
        tokio::spawn(async move {
            let (mut a, _) = listener.accept().await.expect("accept");
            a.write_all(HEADER).await.expect("write");
            a.write_all(b"{\"swarmtop\":\"live\"}\n").await.expect("write");
        });
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path: path.clone(), reconnect: false, record: None, rediscover: None }, tx));
        let events = collect(&mut rx).await;
        assert_eq!(events, vec![Event::Connected { path }, header(), Event::Live, Event::Ended(End::Closed)]);
    }

    #[tokio::test]
    async fn with_reconnect_it_waits_for_the_tee_to_come_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("later.sock");
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path: path.clone(), reconnect: true, record: None, rediscover: None }, tx));
        let first = rx.recv().await.expect("event");
        assert!(matches!(first, Event::Disconnected { retry_in, .. } if retry_in == BACKOFF_FIRST), "{first:?}");
        let listener = UnixListener::bind(&path).expect("bind");
        tokio::spawn(async move {
            let (mut a, _) = listener.accept().await.expect("accept");
            a.write_all(HEADER).await.expect("write");
            a.write_all(b"{\"swarmtop\":\"live\"}\n{\"swarmtop\":\"end\",\"exitCode\":0}\n").await.expect("write");
        });
        let events = collect(&mut rx).await;
        let tail: Vec<_> = events.into_iter().filter(|e| !matches!(e, Event::Disconnected { .. })).collect();
        assert_eq!(tail, vec![Event::Connected { path }, header(), Event::Live, Event::Ended(End::Exited(0))]);
    }

    #[tokio::test]
    async fn a_restarted_tee_on_another_socket_is_found_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("tee-1.sock");
        let listener = UnixListener::bind(&old).expect("bind");
        tokio::spawn(async move {
            let (mut a, _) = listener.accept().await.expect("accept");
            a.write_all(HEADER).await.expect("write");
            a.write_all(b"{\"swarmtop\":\"live\"}\n").await.expect("write");
            // The tee dies without an end marker and without removing its socket.
        });
        let (tx, mut rx) = mpsc::channel(8);
        let opts =
            Options { path: old.clone(), reconnect: true, record: None, rediscover: Some(dir.path().to_owned()) };
        tokio::spawn(run(opts, tx));
        assert_eq!(rx.recv().await, Some(Event::Connected { path: old.clone() }));
        assert_eq!(rx.recv().await, Some(header()));
        assert_eq!(rx.recv().await, Some(Event::Live));
        assert!(matches!(rx.recv().await, Some(Event::Disconnected { .. })));
        let new = dir.path().join("tee-2.sock");
        let listener = UnixListener::bind(&new).expect("bind");
        // Like a tee, serve every connection (finding the tee probes it with one).
        tokio::spawn(async move {
            while let Ok((mut a, _)) = listener.accept().await {
                let _ = a.write_all(HEADER).await;
                let _ = a.write_all(b"{\"swarmtop\":\"live\"}\n{\"swarmtop\":\"end\",\"exitCode\":0}\n").await;
            }
        });
        let events = collect(&mut rx).await;
        let tail: Vec<_> = events.into_iter().filter(|e| !matches!(e, Event::Disconnected { .. })).collect();
        assert_eq!(
            tail,
            vec![
                Event::Reset(ResetReason::Reconnected),
                Event::Connected { path: new },
                header(),
                Event::Live,
                Event::Ended(End::Exited(0))
            ]
        );
        assert!(!old.exists(), "the dead tee's socket was removed");
    }
}
