//! `swarmtop serve`: the bridge daemon (issue 21). It follows every session the machine view
//! follows, keeps the run store up to date as they go, and serves what it knows over HTTP on
//! loopback: the sessions (`/api/sessions`, one as `stats --json` at `/api/sessions/{id}`),
//! reports and search as the commands give them, and every change as a server-sent event
//! (`/api/events`); and to `swarmtop --server`, the machine view's own events (`/api/feed`), each
//! client from a machine source of its own.
//!
//! - [`live`]: the machine source's events applied to one pipeline, each change told once;
//! - [`bus`]: the events numbered, the recent ones kept for `Last-Event-ID`, one bounded buffer
//!   for every client;
//! - [`http`]: the server: who may ask (our own processes on loopback, anyone else with the
//!   token), the routes, the event streams.
//!
//! With an exporter (`--otlp`, or `OTEL_EXPORTER_OTLP_*` in the environment), the spawn trees it
//! follows leave as OTLP traces as agents end, the rest when it stops, as a live monitor's do.
//!
//! What the commands render (`history --json`, `stats --json`, reports, search) is theirs: the
//! daemon asks for it through [`Api`], which `commands::serve` implements.

pub mod bus;
pub mod http;
pub mod live;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use color_eyre::eyre::Result;
use tokio::sync::{mpsc, watch};

use crate::export::{Live as Export, Summary};
use crate::pipeline::Config;
use crate::source::live::Event;
use crate::source::otlp::trust::Token;
use crate::wire::Clean;

/// What the daemon asks of the commands: the store's answers, rendered as the commands render
/// them, and the sync that fills it. Called on the blocking pool.
pub trait Api: Send + Sync + 'static {
    /// `history --json` for these query parameters (`since`, `until`, `tz`, `agent`, `project`).
    fn sessions(&self, query: &[(String, String)]) -> Result<String>;
    /// `history ID --json` (the `stats --json` of its files); `None` when the store has none.
    fn session(&self, id: &str) -> Result<Option<String>>;
    /// `report KIND --json`; `None` for a kind there is none of.
    fn report(&self, kind: &str, query: &[(String, String)]) -> Result<Option<String>>;
    /// `search --json` for `q` and the filters.
    fn search(&self, query: &[(String, String)]) -> Result<String>;
    /// Brings the store up to date (`full`: every session, else those changed lately); what it
    /// read and wrote.
    fn sync(&self, full: bool) -> Result<SyncFigures>;
}

/// What one sync read and wrote, for `/api/status` (`lastSync`): a daemon's owner sees what
/// keeping the store up to date costs as the sessions grow, without a profiler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncFigures {
    /// Sources read (whole, or on from where the last sync stopped).
    pub read: usize,
    /// Of them, read on from where the last sync stopped.
    pub continued: u64,
    pub bytes_read: u64,
    /// Rows of sessions, runs, usage and items written.
    pub rows: u64,
}

pub struct Options {
    pub listen: SocketAddr,
    /// What anyone but our own processes on loopback must present.
    pub token: Option<Token>,
    /// How often the store is brought up to date while sessions change.
    pub sync_every: Duration,
    /// Events kept for clients that come back or fall behind ([`bus::RING`] by default).
    pub keep_events: usize,
    /// Where the spawn trees go as traces, if anywhere.
    pub export: Option<Export>,
    /// The machine view's events for `/api/feed` (`swarmtop --server`), if it is served.
    pub feed: Option<http::Feed>,
}

/// What the daemon did, when it stopped.
pub struct Stopped {
    pub counters: Arc<Counters>,
    /// The exporter's last word (`12 spans to URL: 12 sent, …`), when there was one.
    pub export: Option<String>,
}

/// What the daemon did, for `/api/status` and the line it prints when it stops.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub refused: AtomicU64,
    pub events: AtomicU64,
    /// Clients that fell too far behind and were told to resync.
    pub lagged: AtomicU64,
    pub syncs: AtomicU64,
    /// Syncs that failed (the store unavailable, the disk full): each is retried at the next turn.
    pub sync_failures: AtomicU64,
    pub records: AtomicU64,
    /// Microseconds spent in syncs, all told.
    pub sync_micros: AtomicU64,
    /// Sessions that stopped whose held items, turns and responses were let go
    /// ([`live::Live::compact`]).
    pub compacted: AtomicU64,
}

impl Counters {
    fn json(
        &self,
        clients: usize,
        last_event: u64,
        last_error: Option<&str>,
        export: Option<&serde_json::Value>,
        last_sync: Option<&serde_json::Value>,
    ) -> serde_json::Value {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        serde_json::json!({
            "clients": clients,
            "lastEventId": last_event,
            "requests": n(&self.requests),
            "refused": n(&self.refused),
            "events": n(&self.events),
            "lagged": n(&self.lagged),
            "syncs": n(&self.syncs),
            "syncFailures": n(&self.sync_failures),
            "records": n(&self.records),
            "syncMs": n(&self.sync_micros) / 1000,
            "lastSync": last_sync,
            "compacted": n(&self.compacted),
            "lastSyncError": last_error,
            "export": export,
        })
    }

    /// One line for the end: what was served.
    pub fn describe(&self) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{} requests ({} refused), {} events, {} clients resynced, {} syncs ({} failed), {} records",
            n(&self.requests),
            n(&self.refused),
            n(&self.events),
            n(&self.lagged),
            n(&self.syncs),
            n(&self.sync_failures),
            n(&self.records)
        )
    }
}

/// Serves until `shutdown` resolves; then stops taking requests, ends the event streams, brings
/// the store up to date a last time and returns what it did. `ready` is told the address bound.
pub async fn run(
    opts: Options,
    api: Arc<dyn Api>,
    config: Config,
    events: mpsc::Receiver<Event>,
    shutdown: impl Future<Output = ()>,
    ready: impl FnOnce(SocketAddr),
) -> Result<Stopped> {
    let listener = tokio::net::TcpListener::bind(opts.listen).await?;
    let local = listener.local_addr()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let bus = bus::Bus::with_capacity(opts.keep_events, bus::RING_BYTES);
    let shared = Arc::new(http::Shared::new(api, bus, opts.token, opts.feed, stop_rx.clone()));
    let ingest = spawn_ingest(config, events, shared.clone(), opts.export, stop_rx.clone());
    let syncing = tokio::spawn(sync_loop(shared.clone(), opts.sync_every, stop_rx.clone()));
    let serving = tokio::spawn(http::accept(listener, shared.clone()));
    ready(local);
    shutdown.await;
    let _ = stop_tx.send(true);
    serving.abort();
    let _ = syncing.await;
    // The spans not sent yet go (what is still open marked unfinished) while the store is brought
    // up to date a last time (it reads the agents' files, not the daemon's memory).
    let exported = tokio::task::spawn_blocking(move || ingest.join().ok().flatten());
    sync_now(&shared, false).await;
    let export = exported.await.ok().flatten();
    Ok(Stopped { counters: shared.counters.clone(), export })
}

/// The exporter's counters, for `/api/status`.
fn export_json(x: &Export) -> serde_json::Value {
    let s: Summary = x.summary();
    serde_json::json!({
        "target": x.target(),
        "queued": s.queued,
        "sent": s.sent,
        "retried": s.retried,
        "dropped": s.dropped,
        "rejected": s.rejected,
        "failing": s.failing,
        "cause": s.cause.as_ref().map(Clean::as_str),
        "forgotten": s.forgotten,
    })
}

/// The source's events applied on a thread of their own (reading a long history must not hold a
/// worker of the runtime that answers requests); changes go out as events as they are made, spans
/// to the exporter as agents end. Until `stop`; then the exporter's last spans go, and its last
/// word is returned.
fn spawn_ingest(
    config: Config,
    mut events: mpsc::Receiver<Event>,
    shared: Arc<http::Shared>,
    mut export: Option<Export>,
    mut stop: watch::Receiver<bool>,
) -> std::thread::JoinHandle<Option<String>> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        let mut live = live::Live::new(config, shared.sessions.clone());
        live.compact = export.is_none();
        while let Some(event) = runtime.block_on(async {
            tokio::select! {
                event = events.recv() => event,
                _ = stop.changed() => None,
            }
        }) {
            let (reset, records) = (matches!(event, Event::Reset(_)), matches!(event, Event::Records(_)));
            let changes = live.apply(event);
            if !changes.is_empty() {
                // Rendered before the bus is locked; published together, clients woken once.
                let data: Vec<String> = changes.iter().map(|c| c.data.to_string()).collect();
                shared.bus.publish_all(changes.iter().zip(&data).map(|(c, d)| (c.kind, d.as_str())));
                shared.counters.events.fetch_add(changes.len() as u64, Ordering::Relaxed);
            }
            shared.counters.compacted.store(live.compacted, Ordering::Relaxed);
            let n = std::mem::take(&mut live.unsynced);
            if n > 0 {
                shared.counters.records.fetch_add(n, Ordering::Relaxed);
                shared.unsynced.fetch_add(n, Ordering::Relaxed);
            }
            if let Some(x) = export.as_mut() {
                if reset {
                    x.reset();
                } else if records {
                    x.update(live.model(), live.format());
                }
                shared.set_export(Some(export_json(x)));
            }
        }
        export.map(|x| {
            let target = x.target().to_owned();
            let summary = x.finish(live.model(), live.format());
            crate::export::describe(&summary, &target)
        })
    })
}

/// A full sync at the start, then one each turn in which records arrived, and one as soon as a
/// request wants the store as of now (`/api/sessions/{id}` of a session that goes on).
async fn sync_loop(shared: Arc<http::Shared>, every: Duration, mut stop: watch::Receiver<bool>) {
    sync_now(&shared, true).await;
    loop {
        let asked = tokio::select! {
            () = tokio::time::sleep(every) => false,
            () = shared.syncs.wanted.notified() => true,
            _ = stop.changed() => return,
        };
        if shared.unsynced.load(Ordering::Relaxed) > 0 || shared.last_sync_failed() || asked {
            sync_now(&shared, false).await;
        }
    }
}

async fn sync_now(shared: &Arc<http::Shared>, full: bool) {
    // Numbered before the records it covers are taken: a request that finds none untaken waits
    // for this sync, which reads them.
    let number = shared.syncs.started.fetch_add(1, Ordering::SeqCst) + 1;
    shared.unsynced.swap(0, Ordering::SeqCst);
    let api = shared.api.clone();
    let began = std::time::Instant::now();
    let done = tokio::task::spawn_blocking(move || api.sync(full)).await;
    let took = began.elapsed();
    let error = match done {
        Ok(Ok(figures)) => {
            shared.set_last_sync(last_sync_json(full, took, figures));
            None
        }
        Ok(Err(e)) => Some(format!("{e:#}")),
        Err(e) => Some(format!("the sync stopped: {e}")),
    };
    let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    shared.counters.sync_micros.fetch_add(micros, Ordering::Relaxed);
    shared.counters.syncs.fetch_add(1, Ordering::Relaxed);
    if let Some(e) = &error {
        shared.counters.sync_failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("serve: sync failed (retried at the next turn): {e}");
    }
    shared.set_sync_error(error);
    shared.syncs.finished.send_replace(number);
}

/// The last sync that finished, for `/api/status`: its wall time (in ms, to the tenth: a
/// continued sync of a growing session takes a few) and what it read and wrote.
fn last_sync_json(full: bool, took: Duration, f: SyncFigures) -> serde_json::Value {
    serde_json::json!({
        "ms": (took.as_secs_f64() * 10_000.0).round() / 10.0,
        "full": full,
        "read": f.read,
        "continued": f.continued,
        "bytesRead": f.bytes_read,
        "rows": f.rows,
    })
}

/// The store's syncs, for a request that wants the store as of now.
pub struct Syncs {
    /// Syncs started (each is numbered by it).
    started: AtomicU64,
    /// The number of the last sync finished.
    finished: watch::Sender<u64>,
    /// A request waits for a sync: run one now rather than at the next turn.
    wanted: tokio::sync::Notify,
}

impl Default for Syncs {
    fn default() -> Self {
        Self { started: AtomicU64::new(0), finished: watch::Sender::new(0), wanted: tokio::sync::Notify::new() }
    }
}

/// Longest a request waits for the store to be brought up to date before it is answered as it is.
const FRESH_WAIT: Duration = Duration::from_secs(60);

impl http::Shared {
    /// Returns once the store holds every record the daemon has read so far: at once when it
    /// does, else after a sync started from now (one for all who wait), or the sync under way.
    pub async fn fresh(&self) {
        let started = self.syncs.started.load(Ordering::SeqCst);
        let want = if self.unsynced.load(Ordering::SeqCst) > 0 { started + 1 } else { started };
        let mut finished = self.syncs.finished.subscribe();
        if *finished.borrow() >= want {
            return;
        }
        if want > started {
            self.syncs.wanted.notify_one();
        }
        let _ = tokio::time::timeout(FRESH_WAIT, finished.wait_for(|&done| done >= want)).await;
    }
}
