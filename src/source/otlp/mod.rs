//! `listen --otlp`: an OTLP/HTTP receiver. SDKs and collectors POST traces and logs (protobuf or
//! JSON, optionally gzip) to `/v1/traces` and `/v1/logs`; every span and log record becomes one
//! NDJSON record, `{"otlp":"span"|"log", "resource":…, "scope":…, …}`, stamped in an `in` envelope
//! and recorded like every live line, so an OTLP session replays like any other. What the records
//! mean is for the wire stage to say.
//!
//! Everything a sender controls is bounded, and every bound counts what it refuses (the `d` view,
//! and the line `listen --headless` prints at the end) — issue 22 found each of these open:
//! - who: only our own processes on loopback, anyone else with the token ([`trust`]);
//! - connections: [`MAX_CONNECTIONS`], headers within [`HEADER_TIMEOUT`] (which also closes idle
//!   connections), bodies within [`BODY_TIMEOUT`] and [`MAX_BODY_BYTES`] ([`conns`]);
//! - decoding: inflated bytes and ratio, values and records counted before anything is built, ids
//!   of their specified sizes, nesting within [`MAX_VALUE_DEPTH`], recorded bytes ([`request`]),
//!   on the blocking pool, [`MAX_DECODERS`] at a time, never on the thread that draws and reads keys;
//! - the span join: entries and bytes ([`index`]).

mod conns;
mod hex;
pub mod index;
mod limits;
pub mod request;
mod tally;
pub mod trust;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OnceCell, Semaphore, mpsc};

use self::conns::{Conn, Conns, Phase};
use self::index::SpanIndex;
pub use self::limits::{
    BODY_TIMEOUT, Counters, HEADER_TIMEOUT, MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_DECODERS, MAX_INFLATE_RATIO,
    MAX_INFLATED_BYTES, MAX_MESSAGES, MAX_RECORDED_BYTES, MAX_RECORDS, MAX_VALUE_DEPTH, Refusal,
};
use self::request::{Encoding, Kind, Signal};
use self::trust::Token;
use super::recording;

/// Where `listen --otlp` listens when no address is given: the OTLP/HTTP port, loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:4318";

/// A bound listener and what it needs to decide whom to serve.
pub struct Receiver {
    pub listener: TcpListener,
    pub counters: Arc<Counters>,
    /// What senders other than us must present; without one, only we can send.
    pub token: Option<Arc<Token>>,
}

struct Shared {
    index: Mutex<SpanIndex>,
    out: mpsc::Sender<Vec<u8>>,
    counters: Arc<Counters>,
    token: Option<Arc<Token>>,
    conns: Arc<Conns>,
    decoders: Arc<Semaphore>,
}

/// Accepts OTLP/HTTP requests until the consumer goes away; each request's records are sent to
/// `out` as one batch of enveloped lines.
pub async fn serve(receiver: Receiver, out: mpsc::Sender<Vec<u8>>) {
    let Receiver { listener, counters, token } = receiver;
    let shared = Arc::new(Shared {
        index: Mutex::new(SpanIndex::default()),
        out,
        counters,
        token,
        conns: Arc::new(Conns::default()),
        decoders: Arc::new(Semaphore::new(MAX_DECODERS)),
    });
    loop {
        let (stream, peer) = tokio::select! {
            conn = listener.accept() => if let Ok(conn) = conn { conn } else {
                // Out of descriptors, typically: senders retry, the loop must not spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            },
            () = shared.out.closed() => return,
        };
        if let Some(conn) = shared.conns.admit(&shared.counters) {
            tokio::spawn(connection(stream, peer, shared.clone(), conn));
        }
    }
}

/// Whether an address keeps the receiver on this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

async fn connection(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>, conn: Conn) {
    let conn = Arc::new(conn);
    let close = conn.close.clone();
    // Who the peer is, asked once, at its first request: a connection that never sends one costs
    // no look-up.
    let owner = Arc::new(OnceCell::new());
    // The connection's own end, not the listener's: on `0.0.0.0` the socket table lists the address
    // the client dialled, and looking up the listener's would refuse our own loopback clients.
    let local = stream.local_addr().ok();
    let service = {
        let (shared, conn) = (shared.clone(), conn.clone());
        service_fn(move |req| handle(req, shared.clone(), conn.clone(), owner.clone(), (local, peer)))
    };
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    let serving = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        served = serving => {
            // After a first request, a header timeout is an idle keep-alive connection ending.
            if served.is_err_and(|e| e.is_timeout()) && conn.served() == 0 {
                shared.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            }
        }
        () = close.notified() => {}
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A refusal, counted in `refused` and in the figure of its reason, if it has one. The connection
/// closes after it unless the request was read whole.
fn refuse(shared: &Shared, status: StatusCode, why: &str, reason: Option<&AtomicU64>) -> Reply {
    shared.counters.refused.fetch_add(1, Ordering::Relaxed);
    if let Some(c) = reason {
        c.fetch_add(1, Ordering::Relaxed);
    }
    let mut r = reply(status, "text/plain", format!("{why}\n"));
    r.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

fn refusal(shared: &Shared, why: &Refusal) -> Reply {
    let c = &shared.counters;
    let reason = match why {
        Refusal::TooLarge(_) => &c.too_large,
        Refusal::Undecodable(_) => &c.undecodable,
        Refusal::BadId(_) => &c.bad_ids,
        Refusal::TooDeep => &c.too_deep,
    };
    let status = StatusCode::from_u16(why.status()).unwrap_or(StatusCode::BAD_REQUEST);
    refuse(shared, status, &why.to_string(), Some(reason))
}

/// Puts the connection back to waiting however the request ends.
struct Settle(Arc<Conn>);

impl Drop for Settle {
    fn drop(&mut self) {
        self.0.set(Phase::Waiting);
    }
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    conn: Arc<Conn>,
    owner: Arc<OnceCell<bool>>,
    (local, peer): (Option<SocketAddr>, SocketAddr),
) -> Result<Reply, std::convert::Infallible> {
    conn.set(Phase::Receiving);
    let _settle = Settle(conn.clone());
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let owner = *owner
        .get_or_init(|| async move {
            let Some(local) = local else { return false };
            tokio::task::spawn_blocking(move || trust::peer_is_owner(local, peer)).await.unwrap_or(false)
        })
        .await;
    if !owner && !shared.token.as_ref().is_some_and(|t| t.admits(req.headers())) {
        let why = match &shared.token {
            Some(t) => format!(
                "only the user running swarmtop may send here; others need `Authorization: Bearer` with the token in {}",
                crate::wire::Clean::path(t.path())
            ),
            None => "only the user running swarmtop may send here".to_owned(),
        };
        let mut r = refuse(&shared, StatusCode::UNAUTHORIZED, &why, Some(&shared.counters.untrusted));
        r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Ok(r);
    }
    let kind = match kind_of(&req) {
        Ok(kind) => kind,
        Err(r) => return Ok(r(&shared)),
    };
    let body = match read_body(req, &shared).await {
        Ok(body) => body,
        Err(r) => return Ok(r),
    };
    conn.set(Phase::Answering);
    Ok(answer(body, kind, &shared).await)
}

type Refuse = fn(&Shared) -> Reply;

/// What a request asks to send, from its path and headers.
fn kind_of(req: &Request<Incoming>) -> Result<Kind, Refuse> {
    let signal = match req.uri().path() {
        "/v1/traces" => Signal::Traces,
        "/v1/logs" => Signal::Logs,
        // Metrics are accepted and dropped: SDKs that send all three signals must not see errors.
        "/v1/metrics" if req.method() == Method::POST => {
            return Err(|_| reply(StatusCode::OK, "application/json", "{}"));
        }
        _ => {
            return Err(|s| {
                refuse(s, StatusCode::NOT_FOUND, "swarmtop receives OTLP at /v1/traces and /v1/logs", None)
            });
        }
    };
    if req.method() != Method::POST {
        return Err(|s| refuse(s, StatusCode::METHOD_NOT_ALLOWED, "POST only", None));
    }
    let header = |name| req.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("");
    let encoding = match header(CONTENT_TYPE).split(';').next().unwrap_or("").trim() {
        "application/x-protobuf" | "application/protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        _ => {
            return Err(|s| {
                refuse(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "send application/x-protobuf or application/json", None)
            });
        }
    };
    let gzip = match header(CONTENT_ENCODING).trim() {
        "" | "identity" => false,
        "gzip" => true,
        _ => return Err(|s| refuse(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "content encodings: gzip, identity", None)),
    };
    Ok(Kind { signal, encoding, gzip })
}

/// The whole body, within [`MAX_BODY_BYTES`] and [`BODY_TIMEOUT`].
async fn read_body(req: Request<Incoming>, shared: &Shared) -> Result<Bytes, Reply> {
    let too_large = || {
        let why = format!("request body over {MAX_BODY_BYTES} bytes");
        refuse(shared, StatusCode::PAYLOAD_TOO_LARGE, &why, Some(&shared.counters.too_large))
    };
    let declared = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(BODY_TIMEOUT, Limited::new(req.into_body(), MAX_BODY_BYTES).collect()).await {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(_)) => Err(refuse(shared, StatusCode::BAD_REQUEST, "the request body ended early", None)),
        Err(_) => {
            let why = format!("the request body took longer than {} s", BODY_TIMEOUT.as_secs());
            Err(refuse(shared, StatusCode::REQUEST_TIMEOUT, &why, Some(&shared.counters.timed_out)))
        }
    }
}

/// Decodes a body on the blocking pool and hands its records on.
async fn answer(body: Bytes, kind: Kind, shared: &Arc<Shared>) -> Reply {
    let Ok(permit) = shared.decoders.clone().acquire_owned().await else {
        return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "swarmtop is closing\n");
    };
    let now = recording::unix_ms();
    let work = shared.clone();
    let received = tokio::task::spawn_blocking(move || {
        // The permit goes with the work: a sender that hangs up does not free a decoder early.
        let _permit = permit;
        request::receive(&body, kind, &work.index, &work.counters, now)
    })
    .await;
    let received = match received {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => return refusal(shared, &why),
        Err(_) => {
            return refuse(shared, StatusCode::INTERNAL_SERVER_ERROR, "swarmtop could not read this request", None);
        }
    };
    shared.counters.spans.fetch_add(received.spans, Ordering::Relaxed);
    shared.counters.logs.fetch_add(received.logs, Ordering::Relaxed);
    if !received.batch.is_empty() && shared.out.send(received.batch).await.is_err() {
        return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "swarmtop is closing\n");
    }
    // An empty export response means "all accepted" in both encodings.
    match kind.encoding {
        Encoding::Protobuf => reply(StatusCode::OK, "application/x-protobuf", Bytes::new()),
        Encoding::Json => reply(StatusCode::OK, "application/json", "{}"),
    }
}
