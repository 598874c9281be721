//! The exporter thread: spans arrive through a bounded queue and leave in batches, so a slow or
//! absent collector never slows what forwards or draws. While the collector is down a batch is
//! retried with backoff; when the queue is full new spans are dropped and counted.

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

/// Spans waiting for the exporter thread; past this, new spans are dropped (and counted).
pub const QUEUE_SPANS: usize = 8192;
/// Spans per export request.
pub const BATCH_SPANS: usize = 512;
/// How long the thread waits for more spans before sending a partial batch.
const LINGER: Duration = Duration::from_millis(200);
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest wait between attempts once swarmtop is stopping.
const GRACE_RETRY: Duration = Duration::from_millis(250);
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
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub queued: u64,
    pub sent: u64,
    pub retried: u64,
    pub dropped: u64,
    pub rejected: u64,
    pub failing: bool,
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
        }
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
        let worker =
            Worker { rx, counters: counters.clone(), deadline: deadline.clone(), sink, resource: settings.resource };
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
    Refused,
    /// The collector is down or busy: retry after the given wait (its `Retry-After`, or backoff).
    Retry(Option<Duration>),
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
                        Outcome::Refused
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
                        Outcome::Retry(None)
                    }
                    Ok(mut response) => {
                        let status = response.status().as_u16();
                        let retry_after = response
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(Duration::from_secs);
                        let bytes =
                            response.body_mut().with_config().limit(RESPONSE_BYTES).read_to_vec().unwrap_or_default();
                        match status {
                            200..=299 => Outcome::Accepted { rejected: rejected_in(&bytes, *encoding) },
                            // The statuses the OTLP specification says to retry.
                            429 | 502 | 503 | 504 => Outcome::Retry(retry_after),
                            _ => {
                                tracing::warn!("OTLP export to {url}: HTTP {status}");
                                Outcome::Refused
                            }
                        }
                    }
                }
            }
        }
    }
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
        let mut backoff = BACKOFF_FIRST;
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
                    return;
                }
                Outcome::Refused => {
                    self.counters.rejected.fetch_add(n, Ordering::Relaxed);
                    return;
                }
                Outcome::Retry(after) => {
                    self.counters.failing.store(true, Ordering::Relaxed);
                    let mut wait = after.unwrap_or(backoff).min(BACKOFF_MAX);
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    // Stopping: the grace left is short, so try often rather than sleep through it.
                    if self.deadline().is_some() {
                        wait = wait.min(GRACE_RETRY);
                    }
                    if !self.sleep_until_retry(wait) {
                        self.counters.dropped.fetch_add(n, Ordering::Relaxed);
                        return;
                    }
                }
            }
        }
    }

    /// Waits `wait`, in small steps so that a deadline set meanwhile is seen; false when the
    /// deadline has passed (give up).
    fn sleep_until_retry(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        loop {
            let now = Instant::now();
            if self.deadline().is_some_and(|d| now >= d) {
                return false;
            }
            if now >= until {
                return true;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(50)));
        }
    }
}
