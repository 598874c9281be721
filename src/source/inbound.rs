//! One-way live sources: producers pushing NDJSON into a `listen` socket, and a piped stdin.
//! Every line is stamped with its arrival time in an `in` envelope (producers' own envelopes are
//! kept as they are), recorded when asked, then handed to the consumer: the consumer sees exactly
//! what the recording holds, header first.

use std::io::{self, Read};
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use super::live::{CHANNEL_EVENTS, End, Event, Records};
use super::recording::{self, Dir, Encoder, Recorder, Wrap};

const READ_BYTES: usize = 128 << 10;

/// Producers connected to one `listen` socket at once. Another is told why and closed: each
/// holds up to [`PRODUCER_LINE_BYTES`] while a line is unfinished, so this bounds memory too.
pub const MAX_PRODUCERS: usize = 32;

/// Bytes of one unfinished line a producer may hold; a longer line is recorded in pieces of this
/// size (each `partial`, each counted malformed), never buffered whole. The reader's line bound:
/// a longer line is malformed anyway.
pub const PRODUCER_LINE_BYTES: usize = super::files::MAX_LINE;

/// The line a producer refused for [`MAX_PRODUCERS`] reads before the socket closes.
const REFUSED_LINE: &str = "swarmtop listen: too many producers connected; try again later\n";

/// Records what arrives (when asked) and passes it on, in that order.
struct Journal {
    recorder: Option<Recorder>,
    tx: mpsc::Sender<Event>,
}

impl Journal {
    /// `Err` when the consumer has gone.
    async fn write(&mut self, records: Vec<u8>) -> Result<(), ()> {
        if records.is_empty() {
            return Ok(());
        }
        self.record(&records);
        self.tx.send(Event::Records(Records::new(records))).await.map_err(|_| ())
    }

    fn write_blocking(&mut self, records: Vec<u8>) -> Result<(), ()> {
        if records.is_empty() {
            return Ok(());
        }
        self.record(&records);
        self.tx.blocking_send(Event::Records(Records::new(records))).map_err(|_| ())
    }

    fn record(&mut self, records: &[u8]) {
        if let Some(rec) = &mut self.recorder {
            if let Err(e) = rec.append(records) {
                // The live view goes on; only the recording stops, and the user is told once.
                let path = crate::wire::Clean::path(rec.path());
                eprintln!("swarmtop: cannot write the recording {path}: {e}; going on without it");
                self.recorder = None;
            }
        }
    }
}

/// Accepts producers on `listener` (and OTLP/HTTP senders on `otlp`) until the consumer goes away.
/// `header` is the header line the recorder (if any) was created with; it is also the first record
/// the consumer gets. Each connection has its own line splitting, so lines of two producers never mix.
/// At most [`MAX_PRODUCERS`] are served at once; the consumer hears of each one refused
/// ([`Event::Notice`]).
pub async fn listen(
    listener: UnixListener,
    otlp: Option<super::otlp::Receiver>,
    header: Vec<u8>,
    recorder: Option<Recorder>,
    tx: mpsc::Sender<Event>,
) {
    let mut journal = Journal { recorder, tx };
    if journal.tx.send(Event::Records(Records::new(header))).await.is_err() {
        return;
    }
    let (batch_tx, mut batches) = mpsc::channel::<Vec<u8>>(CHANNEL_EVENTS);
    if let Some(otlp) = otlp {
        tokio::spawn(super::otlp::serve(otlp, batch_tx.clone()));
    }
    let batch_tx = Arc::new(batch_tx);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_PRODUCERS));
    let mut refused = 0u64;
    loop {
        tokio::select! {
            conn = listener.accept() => match conn {
                // Only our own processes feed the monitor (see `socket::check_peer`).
                Ok((stream, _)) if super::socket::check_peer(&stream).is_err() => drop(stream),
                Ok((mut stream, _)) => {
                    if let Ok(slot) = slots.clone().try_acquire_owned() {
                        tokio::spawn(producer(stream, batch_tx.clone(), slot));
                        continue;
                    }
                    refused += 1;
                    tokio::spawn(async move {
                        use tokio::io::AsyncWriteExt as _;
                        let write = stream.write_all(REFUSED_LINE.as_bytes());
                        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
                    });
                    let notice = format!("refused {refused} producer(s): {MAX_PRODUCERS} are connected at most");
                    if journal.tx.send(Event::Notice(crate::wire::sanitize_line(&notice))).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = journal.tx.send(Event::Ended(End::Failed(crate::wire::sanitize_line(&format!("accepting producers: {e}"))))).await;
                    return;
                }
            },
            Some(batch) = batches.recv() => {
                if journal.write(batch).await.is_err() {
                    return;
                }
            }
            () = journal.tx.closed() => return,
        }
    }
}

async fn producer(
    mut stream: UnixStream,
    batches: Arc<mpsc::Sender<Vec<u8>>>,
    _slot: tokio::sync::OwnedSemaphorePermit,
) {
    let mut encoder = Encoder::new(Dir::In, Wrap::KeepEnvelopes).with_max_line(PRODUCER_LINE_BYTES);
    let mut buf = vec![0u8; READ_BYTES];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut out = Vec::new();
        encoder.encode(recording::unix_ms(), &buf[..n], &mut out);
        if !out.is_empty() && batches.send(out).await.is_err() {
            return;
        }
    }
    let mut out = Vec::new();
    encoder.finish(recording::unix_ms(), &mut out);
    if !out.is_empty() {
        let _ = batches.send(out).await;
    }
}

/// Reads a live byte stream (a piped stdin) on its own thread, blocking as a pipe reader should;
/// the consumer gets the header, the records, then `Ended(Closed)` at end of input.
pub fn spawn_reader<R: Read + Send + 'static>(
    mut input: R,
    header: Vec<u8>,
    recorder: Option<Recorder>,
    tx: mpsc::Sender<Event>,
) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("source-stdin".into()).spawn(move || {
        let mut journal = Journal { recorder, tx };
        if journal.tx.blocking_send(Event::Records(Records::new(header))).is_err() {
            return;
        }
        let mut encoder = Encoder::new(Dir::In, Wrap::KeepEnvelopes);
        let mut buf = vec![0u8; READ_BYTES];
        let end = loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break End::Closed,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break End::Failed(crate::wire::sanitize_line(&format!("reading: {e}"))),
            };
            let mut out = Vec::new();
            encoder.encode(recording::unix_ms(), &buf[..n], &mut out);
            if journal.write_blocking(out).is_err() {
                return;
            }
        };
        let mut out = Vec::new();
        encoder.finish(recording::unix_ms(), &mut out);
        if journal.write_blocking(out).is_ok() {
            let _ = journal.tx.blocking_send(Event::Ended(end));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::recording::Source;

    #[test]
    fn a_piped_stream_is_recorded_and_passed_on_identically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("stdin.ndjson");
        let header = recording::header_line(Source::Stdin, None, 5);
        let recorder = Recorder::create(&path, &header).expect("create");
        let (tx, mut rx) = mpsc::channel(4);
        let input: &[u8] = b"{\"method\":\"a\"}\nnot json\n{\"method\"";
        let handle = spawn_reader(input, header, Some(recorder), tx).expect("spawn");
        let mut got = Vec::new();
        let mut end = None;
        while let Some(e) = rx.blocking_recv() {
            match e {
                Event::Records(r) => got.extend_from_slice(r.as_bytes()),
                Event::Ended(e) => end = Some(e),
                other => panic!("unexpected {other:?}"),
            }
        }
        handle.join().expect("join");
        assert_eq!(end, Some(End::Closed));
        assert_eq!(std::fs::read(&path).expect("read"), got);
        let lines: Vec<serde_json::Value> = got
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("JSON"))
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1]["msg"]["method"], "a");
        assert_eq!(lines[2]["rawB64"], "bm90IGpzb24=");
        assert_eq!(lines[3]["partial"], true);
    }
}
