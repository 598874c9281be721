//! The exporter thread: spans arrive through a bounded queue and leave in batches, so a slow or
//! absent collector never slows what forwards or draws. While the collector is down a batch is
//! retried with backoff that grows over repeated failures (and across batches) until one attempt
//! succeeds; a collector's `Retry-After` is honoured up to [`RETRY_AFTER_MAX`]. When the queue is
//! full new spans are dropped and counted, and the last failure's cause is kept to be shown
//! (`connection refused`, `HTTP 429 …`), not only how many spans it cost.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;

use super::config::{Encoding, Settings, Target};
use crate::wire::{Clean, sanitize_line};

/// Spans waiting for the exporter thread; past this, new spans are dropped (and counted).
pub const QUEUE_SPANS: usize = 8192;
/// Spans per export request.
pub const BATCH_SPANS: usize = 512;
/// How long the thread waits for more spans before sending a partial batch.
const LINGER: Duration = Duration::from_millis(200);
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest `Retry-After` waited for; a collector asking more is asked again after this
/// (issue 22 item 14: `Retry-After: 999999999` was ignored and the collector got 4 requests a second).
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);
/// Most characters of a collector's error text kept as a failure's cause.
const CAUSE_CHARS: usize = 200;
/// Most of a response body read (a partial-success message, an error text).
const RESPONSE_BYTES: u64 = 64 << 10;

/// What happened to the spans offered, for diagnostics and the exit status.
#[derive(Debug, Default)]
pub struct Counters {
    pub queued: AtomicU64,
    /// Accepted by the collector (or written to the file).
    pub sent: AtomicU64,
    /// Sends of spans again after a failed attempt.
    pub retried: AtomicU64,
    /// Never sent: the queue was full, or the collector was still down when swarmtop had to stop.
    pub dropped: AtomicU64,
    /// Refused by the collector (a 4xx, or rejected in a partial success).
    pub rejected: AtomicU64,
    /// Attempts that failed and will be retried, right now (the collector is down).
    pub failing: AtomicBool,
    /// Why the last attempt that failed did: `connection refused`, `HTTP 503`, ….
    pub cause: Mutex<Option<Clean>>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub queued: u64,
    pub sent: u64,
    pub retried: u64,
    pub dropped: u64,
    pub rejected: u64,
    pub failing: bool,
    pub cause: Option<Clean>,
    /// Span ids no longer remembered as sent (`spans::SENT_GENERATION`); set by the live export.
    pub forgotten: u64,
}

impl Counters {
    pub fn summary(&self) -> Summary {
        Summary {
            queued: self.queued.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            retried: self.retried.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            failing: self.failing.load(Ordering::Relaxed),
            cause: self.cause.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone(),
            forgotten: 0,
        }
    }

    /// A collector's or the system's words: clean from here on.
    fn failed(&self, cause: &str) {
        *self.cause.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sanitize_line(cause));
    }
}

impl Summary {
    /// Every span offered was accepted.
    pub fn all_accepted(&self) -> bool {
        self.dropped == 0 && self.rejected == 0 && self.sent == self.queued
    }
}

/// The handle the session keeps: offering a span never blocks.
pub struct Exporter {
    tx: Option<SyncSender<Span>>,
    counters: Arc<Counters>,
    /// When the thread must give up retrying (set by [`Exporter::finish`]).
    deadline: Arc<Mutex<Option<Instant>>>,
    thread: Option<JoinHandle<()>>,
    target: String,
}

impl Exporter {
    pub fn start(settings: Settings, queue: usize) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel(queue.max(1));
        let counters = Arc::new(Counters::default());
        let deadline = Arc::new(Mutex::new(None));
        let target = settings.target.describe();
        let sink = Sink::open(settings.target)?;
        let worker = Worker {
            rx,
            counters: counters.clone(),
            deadline: deadline.clone(),
            sink,
            resource: settings.resource,
            backoff: BACKOFF_FIRST,
        };
        let thread = std::thread::Builder::new().name("otlp-export".into()).spawn(move || worker.run())?;
        Ok(Self { tx: Some(tx), counters, deadline, thread: Some(thread), target })
    }

    /// Queues a span; drops it (counted) when the queue is full.
    pub fn offer(&self, span: Span) {
        let Some(tx) = &self.tx else { return };
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        match tx.try_send(span) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Queues a span, waiting for room: for the headless `export`, which has nothing to keep fast.
    pub fn send(&self, span: Span) {
        let Some(tx) = &self.tx else { return };
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        if tx.send(span).is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    pub fn target(&self) -> &str {
        &self.target
    }

    /// Sends what is queued, retrying for at most `grace` while the collector is down, then stops.
    pub fn finish(mut self, grace: Duration) -> Summary {
        *self.deadline.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now() + grace);
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.counters.summary()
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            *self.deadline.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            drop(self.tx.take());
        }
    }
}

enum Sink {
    Http { agent: ureq::Agent, url: String, encoding: Encoding, headers: Vec<(String, String)> },
    File(std::io::BufWriter<std::fs::File>),
}

/// How one attempt ended.
enum Outcome {
    /// Accepted, less the spans the collector says it rejected.
    Accepted { rejected: u64 },
    /// Refused for good (a malformed request, an unknown path): retrying would not help.
    Refused { cause: String },
    /// The collector is down or busy: retry after the wait it asked for (`Retry-After`), or backoff.
    Retry { after: Option<Duration>, cause: String },
}

impl Sink {
    fn open(target: Target) -> std::io::Result<Self> {
        Ok(match target {
            Target::Http { url, encoding, headers, timeout } => {
                let config = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(timeout))
                    .user_agent(concat!("swarmtop/", env!("CARGO_PKG_VERSION")))
                    .build();
                Self::Http { agent: config.into(), url, encoding, headers }
            }
            Target::File(path) => {
                let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
                Self::File(std::io::BufWriter::new(file))
            }
        })
    }

    fn export(&mut self, request: &ExportTraceServiceRequest) -> Outcome {
        match self {
            Self::File(out) => {
                let written = serde_json::to_writer(&mut *out, request)
                    .map_err(std::io::Error::other)
                    .and_then(|()| out.write_all(b"\n"))
                    .and_then(|()| out.flush());
                match written {
                    Ok(()) => Outcome::Accepted { rejected: 0 },
                    Err(e) => {
                        tracing::warn!("writing OTLP/JSON: {e}");
                        Outcome::Refused { cause: format!("writing the file: {e}") }
                    }
                }
            }
            Self::Http { agent, url, encoding, headers } => {
                let (body, content_type) = match encoding {
                    Encoding::Protobuf => (request.encode_to_vec(), "application/x-protobuf"),
                    Encoding::Json => (serde_json::to_vec(request).unwrap_or_default(), "application/json"),
                };
                let mut post = agent.post(url.as_str()).header("Content-Type", content_type);
                for (k, v) in headers.iter() {
                    post = post.header(k.as_str(), v.as_str());
                }
                match post.send(&body[..]) {
                    Err(e) => {
                        tracing::debug!("OTLP export to {url}: {e}");
                        Outcome::Retry { after: None, cause: cause_of(&e) }
                    }
                    Ok(mut response) => {
                        let status = response.status();
                        let after = response.headers().get("retry-after").and_then(|v| retry_after(v.to_str().ok()?));
                        let bytes =
                            response.body_mut().with_config().limit(RESPONSE_BYTES).read_to_vec().unwrap_or_default();
                        match status.as_u16() {
                            200..=299 => Outcome::Accepted { rejected: rejected_in(&bytes, *encoding) },
                            // The statuses the OTLP specification says to retry.
                            429 | 502 | 503 | 504 => {
                                let asked = after.map(|a| format!(", asked to retry after {} s", a.as_secs()));
                                Outcome::Retry { after, cause: format!("HTTP {status}{}", asked.unwrap_or_default()) }
                            }
                            _ => {
                                tracing::warn!("OTLP export to {url}: HTTP {status}");
                                Outcome::Refused { cause: refused_cause(status, &bytes) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `Retry-After`: seconds, or an HTTP date.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// An attempt that never got an answer, in a user's words.
fn cause_of(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                "the connection was reset".to_owned()
            }
            std::io::ErrorKind::TimedOut => "timed out".to_owned(),
            _ => io.to_string(),
        },
        ureq::Error::Timeout(which) => format!("timed out ({which})"),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        other => other.to_string(),
    }
}

/// `HTTP 400 Bad Request: <the start of the collector's own text>`.
fn refused_cause(status: ureq::http::StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text: String = text.lines().next().unwrap_or("").chars().take(CAUSE_CHARS).collect();
    let text = crate::wire::sanitize_line(text.trim());
    if text.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {}", text.as_str()) }
}

/// Spans a collector says it rejected in an accepted request (OTLP partial success).
fn rejected_in(body: &[u8], encoding: Encoding) -> u64 {
    let response = match encoding {
        Encoding::Protobuf => ExportTraceServiceResponse::decode(body).ok(),
        Encoding::Json => serde_json::from_slice::<ExportTraceServiceResponse>(body).ok(),
    };
    response.and_then(|r| r.partial_success).map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0))
}

struct Worker {
    rx: Receiver<Span>,
    counters: Arc<Counters>,
    deadline: Arc<Mutex<Option<Instant>>>,
    sink: Sink,
    resource: Vec<KeyValue>,
    /// The wait before the next retry: it grows with each failure, batch after batch, and is back
    /// to [`BACKOFF_FIRST`] only once an attempt succeeds.
    backoff: Duration,
}

impl Worker {
    fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH_SPANS);
        let mut open = true;
        while open || !batch.is_empty() {
            // Gather a batch: what is waiting, then more until the batch is full or the queue idles.
            while open && batch.len() < BATCH_SPANS {
                let wait = if batch.is_empty() { Duration::from_secs(3600) } else { LINGER };
                match self.rx.recv_timeout(wait) {
                    Ok(span) => batch.push(span),
                    Err(RecvTimeoutError::Timeout) if batch.is_empty() => {}
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => open = false,
                }
            }
            if batch.is_empty() {
                continue;
            }
            self.deliver(std::mem::take(&mut batch));
        }
    }

    fn deadline(&self) -> Option<Instant> {
        *self.deadline.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends one batch, retrying with backoff until it is accepted, refused, or the deadline passes.
    fn deliver(&mut self, spans: Vec<Span>) {
        let n = spans.len() as u64;
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource { attributes: self.resource.clone(), ..Resource::default() }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "swarmtop".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                        ..InstrumentationScope::default()
                    }),
                    spans,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                self.counters.retried.fetch_add(n, Ordering::Relaxed);
            }
            attempt += 1;
            match self.sink.export(&request) {
                Outcome::Accepted { rejected } => {
                    let rejected = rejected.min(n);
                    self.counters.sent.fetch_add(n - rejected, Ordering::Relaxed);
                    self.counters.rejected.fetch_add(rejected, Ordering::Relaxed);
                    self.counters.failing.store(false, Ordering::Relaxed);
                    self.backoff = BACKOFF_FIRST;
                    return;
                }
                Outcome::Refused { cause } => {
                    self.counters.failed(&cause);
                    self.counters.rejected.fetch_add(n, Ordering::Relaxed);
                    return;
                }
                Outcome::Retry { after, cause } => {
                    // Said before the wait: who watches (`d`, export's notice) sees why at once.
                    self.counters.failed(&cause);
                    self.counters.failing.store(true, Ordering::Relaxed);
                    let asked = after.is_some();
                    let wait = after.map_or(self.backoff, |a| a.min(RETRY_AFTER_MAX));
                    self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                    if !self.sleep_until_retry(wait, asked) {
                        let why = if asked { ", later than swarmtop could wait" } else { "" };
                        self.counters.failed(&format!("{cause}{why}"));
                        self.counters.dropped.fetch_add(n, Ordering::Relaxed);
                        return;
                    }
                }
            }
        }
    }

    /// Waits `wait`, in small steps so that a deadline set meanwhile is seen; false when the
    /// deadline comes first and the wait was the collector's to ask (`asked`): retrying before it
    /// would not be honouring it. A wait of our own ends at the deadline, for one last attempt.
    fn sleep_until_retry(&self, wait: Duration, asked: bool) -> bool {
        let until = Instant::now() + wait;
        if self.deadline().is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        loop {
            let now = Instant::now();
            let end = match self.deadline() {
                Some(d) if asked && until > d => return false,
                Some(d) => until.min(d),
                None => until,
            };
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
    }
}
