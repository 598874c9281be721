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
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::live::{End, Event, Records, ResetReason};
use super::recording::Recorder;
use super::socket::{self, Found};
use crate::wire::Clean;

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
                let _ = tx.send(Event::Ended(End::Failed(why))).await;
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
                match read_stream(stream, &tx, &mut backoff, &mut copy).await {
                    Outcome::End(code) => {
                        let _ = tx.send(Event::Ended(End::Exited(code))).await;
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
                        End::Failed(format!("connecting to {}: {e}", Clean::path(&path)))
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
        if tx.send(Event::Disconnected { retry_in, reason }).await.is_err() {
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

enum Control {
    Live,
    Lagged(i64),
    End(i32),
}

fn control(line: &[u8]) -> Option<Control> {
    if !line.starts_with(b"{\"swarmtop\":") {
        return None;
    }
    let m: Marker = serde_json::from_slice(line).ok()?;
    match m.swarmtop.as_str() {
        "live" => Some(Control::Live),
        "lagged" => Some(Control::Lagged(m.dropped_from_ms.unwrap_or(0))),
        "end" => Some(Control::End(m.exit_code.and_then(|c| i32::try_from(c).ok()).unwrap_or(-1))),
        // The recording header and markers this version does not know are records.
        _ => None,
    }
}

async fn read_stream(
    mut stream: UnixStream,
    tx: &mpsc::Sender<Event>,
    backoff: &mut Duration,
    copy: &mut Option<Copy>,
) -> Outcome {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_BYTES);
    loop {
        if buf.capacity() - buf.len() < READ_BYTES / 4 {
            buf.reserve(READ_BYTES);
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) => return Outcome::Closed("the tee closed the connection".into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Outcome::Closed(e.to_string()),
        }
        let Some(last) = memchr::memrchr(b'\n', &buf) else {
            continue;
        };
        let rest = buf.split_off(last + 1);
        let complete = std::mem::replace(&mut buf, rest);
        match split(complete, tx, backoff, copy).await {
            Ok(()) => {}
            Err(outcome) => return outcome,
        }
    }
}

/// Passes records on and acts on markers; `Err` ends this connection.
async fn split(
    complete: Vec<u8>,
    tx: &mpsc::Sender<Event>,
    backoff: &mut Duration,
    copy: &mut Option<Copy>,
) -> Result<(), Outcome> {
    let mut from = 0;
    let mut pos = 0;
    while pos < complete.len() {
        let end = memchr::memchr(b'\n', &complete[pos..]).map_or(complete.len(), |i| pos + i);
        if let Some(c) = control(&complete[pos..end]) {
            if from < pos {
                deliver(tx, copy, Records::new(complete[from..pos].to_vec())).await?;
            }
            from = end + 1;
            match c {
                Control::Live => {
                    *backoff = BACKOFF_FIRST;
                    send(tx, Event::Live).await?;
                }
                Control::Lagged(ts) => return Err(Outcome::Lagged(ts)),
                Control::End(code) => return Err(Outcome::End(code)),
            }
        }
        pos = end + 1;
    }
    if from == 0 {
        deliver(tx, copy, Records::new(complete)).await?;
    } else if from < complete.len() {
        deliver(tx, copy, Records::new(complete[from..].to_vec())).await?;
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
            a.write_all(b"{\"swarmtop\":\"live\"}\n").await.expect("write");
        });
        let (tx, mut rx) = mpsc::channel(8);
        tokio::spawn(run(Options { path: path.clone(), reconnect: false, record: None, rediscover: None }, tx));
        let events = collect(&mut rx).await;
        assert_eq!(events, vec![Event::Connected { path }, Event::Live, Event::Ended(End::Closed)]);
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
            a.write_all(b"{\"swarmtop\":\"live\"}\n{\"swarmtop\":\"end\",\"exitCode\":0}\n").await.expect("write");
        });
        let events = collect(&mut rx).await;
        let tail: Vec<_> = events.into_iter().filter(|e| !matches!(e, Event::Disconnected { .. })).collect();
        assert_eq!(tail, vec![Event::Connected { path }, Event::Live, Event::Ended(End::Exited(0))]);
    }

    #[tokio::test]
    async fn a_restarted_tee_on_another_socket_is_found_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("tee-1.sock");
        let listener = UnixListener::bind(&old).expect("bind");
        tokio::spawn(async move {
            let (mut a, _) = listener.accept().await.expect("accept");
            a.write_all(b"{\"swarmtop\":\"live\"}\n").await.expect("write");
            // The tee dies without an end marker and without removing its socket.
        });
        let (tx, mut rx) = mpsc::channel(8);
        let opts =
            Options { path: old.clone(), reconnect: true, record: None, rediscover: Some(dir.path().to_owned()) };
        tokio::spawn(run(opts, tx));
        assert_eq!(rx.recv().await, Some(Event::Connected { path: old.clone() }));
        assert_eq!(rx.recv().await, Some(Event::Live));
        assert!(matches!(rx.recv().await, Some(Event::Disconnected { .. })));
        let new = dir.path().join("tee-2.sock");
        let listener = UnixListener::bind(&new).expect("bind");
        // Like a tee, serve every connection (finding the tee probes it with one).
        tokio::spawn(async move {
            while let Ok((mut a, _)) = listener.accept().await {
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
                Event::Live,
                Event::Ended(End::Exited(0))
            ]
        );
        assert!(!old.exists(), "the dead tee's socket was removed");
    }
}
