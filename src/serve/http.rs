//! The daemon's HTTP side: who may ask, the routes, and the event streams.
//!
//! Who: a connection from one of our own processes on loopback (its uid read from the kernel's
//! socket table, as the OTLP receiver reads it), or a request with `Authorization: Bearer` and the
//! token; anyone else is refused. Every route answers `GET` only.
//!
//! Bounds: [`MAX_CONNECTIONS`] at once (one more is closed at once, counted), headers within
//! [`HEADER_TIMEOUT`], [`MAX_STREAMS`] event streams at once; each stream reads the one shared
//! buffer of [`super::bus`] at its own pace and is told to resync when it falls behind, with at
//! most [`SEND_BUFFER`] bytes held by the kernel on its way.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OnceCell, Semaphore, mpsc, watch};

use super::bus::{Bus, Cursor, Read};
use super::live::Sessions;
use super::{Api, Counters};
use crate::source::live::Event;
use crate::source::otlp::trust::{self, Token};
use crate::source::remote::{Window, codec};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 512;
/// Event streams open at once (each holds a place in the shared buffer, not a buffer of its own).
pub const MAX_STREAMS: usize = 256;
/// Time to send a request's headers; also how long an idle connection stays open.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes the kernel holds for one connection that its client has not read yet.
pub const SEND_BUFFER: usize = 128 << 10;
/// A comment sent on a quiet event stream this often, so that a client gone away is noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Machine feeds (`/api/feed`) open at once: each runs a machine source of its own (its files
/// followed, a walk of `/proc` a tick), so they are few.
pub const MAX_FEEDS: usize = 16;
/// Events a feed's source reads ahead of its client ([`crate::source::census::machine::spawn_holding`]):
/// a few. A feed reads its sessions from their start and a client takes them at the network's
/// pace: with the machine view's 64, a feed held up to 64 chunks of a MiB of a long session
/// (`serve_soak`: its peaks grew with the busy session, and the daemon's memory with them).
pub const FEED_EVENTS: usize = 4;
/// Bytes of a feed's events gathered into one write, when more than one is waiting.
const FEED_WRITE: usize = 256 << 10;
/// Bytes of an event stream's waiting events gathered into one write.
const STREAM_WRITE: usize = 64 << 10;

/// How the daemon starts a machine source of its own for one feed client.
#[derive(Clone)]
pub struct Feed {
    /// A source of the sessions in a window.
    pub spawn: Arc<dyn Fn(Window) -> mpsc::Receiver<Event> + Send + Sync>,
    /// The daemon's own window, for a client that names none.
    pub window: Window,
}

pub struct Shared {
    pub api: Arc<dyn Api>,
    pub bus: Bus,
    pub sessions: Sessions,
    pub counters: Arc<Counters>,
    pub unsynced: AtomicU64,
    pub syncs: super::Syncs,
    token: Option<Token>,
    feed: Option<Feed>,
    streams: AtomicUsize,
    feeds: AtomicUsize,
    sync_error: Mutex<Option<String>>,
    /// The exporter's counters, when there is one.
    export: Mutex<Option<Value>>,
    /// What the last sync that finished took, read and wrote.
    last_sync: Mutex<Option<Value>>,
    stop: watch::Receiver<bool>,
}

impl Shared {
    pub fn new(
        api: Arc<dyn Api>,
        bus: Bus,
        token: Option<Token>,
        feed: Option<Feed>,
        stop: watch::Receiver<bool>,
    ) -> Self {
        Self {
            api,
            bus,
            sessions: Sessions::default(),
            counters: Arc::default(),
            unsynced: AtomicU64::new(0),
            syncs: super::Syncs::default(),
            token,
            feed,
            streams: AtomicUsize::new(0),
            feeds: AtomicUsize::new(0),
            sync_error: Mutex::new(None),
            export: Mutex::new(None),
            last_sync: Mutex::new(None),
            stop,
        }
    }

    pub fn set_sync_error(&self, error: Option<String>) {
        *self.sync_error.lock().unwrap_or_else(PoisonError::into_inner) = error;
    }

    pub fn set_export(&self, export: Option<Value>) {
        *self.export.lock().unwrap_or_else(PoisonError::into_inner) = export;
    }

    pub fn set_last_sync(&self, figures: Value) {
        *self.last_sync.lock().unwrap_or_else(PoisonError::into_inner) = Some(figures);
    }

    pub fn last_sync_failed(&self) -> bool {
        self.sync_error.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The live state of every session followed, as a JSON array.
    fn live_sessions(&self) -> Vec<Value> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }
}

/// Accepts connections until the task is dropped.
pub async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            // Out of descriptors, most likely: let some close.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            shared.counters.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            connection(stream, peer, shared).await;
            drop(slot);
        });
    }
}

async fn connection(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    // The kernel's share of a client's queue, fixed: left to itself it grows to megabytes per
    // connection for a client that does not read.
    let _ = nix::sys::socket::setsockopt(&stream, nix::sys::socket::sockopt::SndBuf, &SEND_BUFFER);
    // This connection's own end: on a wildcard address, the one the peer connected to, which is
    // what the socket table pairs its end with.
    let Ok(local) = stream.local_addr() else { return };
    let owner = Arc::new(OnceCell::new());
    let service = {
        let shared = shared.clone();
        service_fn(move |req| handle(req, shared.clone(), owner.clone(), (local, peer)))
    };
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_reply(body: String) -> Response<Body> {
    reply(StatusCode::OK, "application/json", body)
}

fn refuse(shared: &Shared, status: StatusCode, why: &str) -> Response<Body> {
    shared.counters.refused.fetch_add(1, Ordering::Relaxed);
    reply(status, "text/plain", format!("{why}\n"))
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    owner: Arc<OnceCell<bool>>,
    (local, peer): (SocketAddr, SocketAddr),
) -> Result<Response<Body>, Infallible> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    // Asked once per connection, at its first request.
    let owner = *owner
        .get_or_init(|| async move {
            tokio::task::spawn_blocking(move || trust::peer_is_owner(local, peer)).await.unwrap_or(false)
        })
        .await;
    if !owner && !shared.token.as_ref().is_some_and(|t| t.admits(req.headers())) {
        let why = match &shared.token {
            Some(t) => format!(
                "only the user running swarmtop may ask here; others need `Authorization: Bearer` with the token in {}",
                crate::wire::Clean::path(t.path())
            ),
            None => "only the user running swarmtop may ask here".to_owned(),
        };
        let mut r = refuse(&shared, StatusCode::UNAUTHORIZED, &why);
        r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Ok(r);
    }
    if req.method() != Method::GET {
        return Ok(refuse(&shared, StatusCode::METHOD_NOT_ALLOWED, "GET only"));
    }
    let path = req.uri().path().to_owned();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let route: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    Ok(match route.as_slice() {
        ["api", "events"] => events(&req, &shared),
        ["api", "feed"] => feed(&shared, &query),
        ["api", "status"] => {
            let error = shared.sync_error.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let export = shared.export.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let last_sync = shared.last_sync.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let mut status = shared.counters.json(
                shared.bus.clients(),
                shared.bus.last_id(),
                error.as_deref(),
                export.as_ref(),
                last_sync.as_ref(),
            );
            status["feeds"] = json!(shared.feeds.load(Ordering::Relaxed));
            let (events, bytes) = shared.bus.kept();
            status["kept"] = json!({"events": events, "bytes": bytes});
            json_reply(status.to_string() + "\n")
        }
        ["api", "sessions"] => {
            let live = shared.live_sessions();
            blocking(&shared, move |api| api.sessions(&query).map(|stored| Some(with_live(&stored, live)))).await
        }
        ["api", "sessions", id] => {
            let id = decode(id);
            // A session that goes on is answered as it is now, not as of the last turn's sync.
            shared.fresh().await;
            blocking(&shared, move |api| api.session(&id)).await
        }
        ["api", "report", kind] => {
            let kind = decode(kind);
            blocking(&shared, move |api| api.report(&kind, &query)).await
        }
        ["api", "search"] => blocking(&shared, move |api| api.search(&query).map(Some)).await,
        _ => refuse(
            &shared,
            StatusCode::NOT_FOUND,
            "swarmtop serves /api/sessions, /api/events, /api/feed, /api/report/KIND, /api/search?q=",
        ),
    })
}

/// An answer of the store, made on the blocking pool.
async fn blocking(
    shared: &Arc<Shared>,
    ask: impl FnOnce(&dyn Api) -> color_eyre::Result<Option<String>> + Send + 'static,
) -> Response<Body> {
    let api = shared.api.clone();
    match tokio::task::spawn_blocking(move || ask(api.as_ref())).await {
        Ok(Ok(Some(body))) => json_reply(body),
        Ok(Ok(None)) => refuse(shared, StatusCode::NOT_FOUND, "not in the run store"),
        Ok(Err(e)) => {
            let why = crate::wire::sanitize_line(&format!("{e:#}")).to_string();
            // A question the store cannot take (a bad date, a bad time zone) is the asker's.
            reply(StatusCode::BAD_REQUEST, "text/plain", why + "\n")
        }
        Err(_) => reply(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "the answer failed\n"),
    }
}

/// `history --json` with each session's live state (`live`, null when not followed), and the
/// sessions followed but not stored yet first.
fn with_live(stored: &str, live: Vec<Value>) -> String {
    let mut json: Value = serde_json::from_str(stored).unwrap_or_else(|_| json!({"sessions": []}));
    let mut by_id: std::collections::HashMap<String, Value> =
        live.into_iter().filter_map(|v| Some((v["id"].as_str()?.to_owned(), v))).collect();
    let sessions = json["sessions"].as_array_mut().map(std::mem::take).unwrap_or_default();
    let mut out: Vec<Value> = Vec::with_capacity(sessions.len());
    let mut stored_rows = Vec::with_capacity(sessions.len());
    for mut s in sessions {
        let state = s["id"].as_str().and_then(|id| by_id.remove(id)).unwrap_or(Value::Null);
        s["live"] = state;
        s["stored"] = json!(true);
        stored_rows.push(s);
    }
    let mut unstored: Vec<Value> = by_id.into_values().collect();
    unstored.sort_by(|a, b| b["lastLineMs"].as_i64().cmp(&a["lastLineMs"].as_i64()));
    for state in unstored {
        out.push(json!({"id": state["id"].clone(), "stored": false, "live": state}));
    }
    out.extend(stored_rows);
    json["sessions"] = Value::Array(out);
    json.to_string() + "\n"
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// `a=1&b=two+words` as pairs, decoded.
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(&k.replace('+', " ")), decode(&v.replace('+', " ")))
        })
        .collect()
}

/// Releases a stream's place (among the event streams or the feeds) when it ends.
struct StreamSlot(Arc<Shared>, fn(&Shared) -> &AtomicUsize);

impl StreamSlot {
    /// A place among those `count` counts, if one of `max` is free.
    fn take(shared: &Arc<Shared>, count: fn(&Shared) -> &AtomicUsize, max: usize) -> Option<Self> {
        if count(shared).fetch_add(1, Ordering::Relaxed) >= max {
            count(shared).fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Self(shared.clone(), count))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        (self.1)(&self.0).fetch_sub(1, Ordering::Relaxed);
    }
}

/// One client's stream: what it missed first, then the live events, what is waiting in one
/// write; a resync when it falls behind; a comment when all is quiet.
struct Stream {
    shared: Arc<Shared>,
    cursor: Cursor,
    pending: Option<Bytes>,
    stop: watch::Receiver<bool>,
    _slot: StreamSlot,
}

fn events(req: &Request<Incoming>, shared: &Arc<Shared>) -> Response<Body> {
    let Some(slot) = StreamSlot::take(shared, |s| &s.streams, MAX_STREAMS) else {
        return refuse(shared, StatusCode::SERVICE_UNAVAILABLE, "too many event streams");
    };
    let last_seen =
        req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let (cursor, lost) = shared.bus.subscribe(last_seen);
    let mut first = b"retry: 2000\n\n".to_vec();
    if lost {
        first.extend_from_slice(&resync(shared, cursor.after(), "the last event seen is no longer kept", 0));
    }
    let state =
        Stream { shared: shared.clone(), cursor, pending: Some(first.into()), stop: shared.stop.clone(), _slot: slot };
    let body = StreamBody::new(futures_util::stream::unfold(state, next_frame));
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// A `resync` event: the state now, numbered as the last event sent, so that a client resuming
/// from it misses nothing after it.
fn resync(shared: &Shared, id: u64, reason: &str, missed: u64) -> Bytes {
    shared.counters.lagged.fetch_add(1, Ordering::Relaxed);
    let data = json!({"reason": reason, "missed": missed, "sessions": shared.live_sessions()});
    Bytes::from(format!("id: {id}\nevent: resync\ndata: {data}\n\n"))
}

async fn next_frame(mut s: Stream) -> Option<(Result<Frame<Bytes>, Infallible>, Stream)> {
    if let Some(frame) = s.pending.take() {
        return Some((Ok(Frame::data(frame)), s));
    }
    loop {
        if *s.stop.borrow() {
            return None;
        }
        // Everything published since this client last looked, in one write (one write per event
        // and client, 200,000 a second at 10,000 lines/s and 10 clients, is what made clients
        // fall behind).
        let frame = match s.shared.bus.read(&mut s.cursor, STREAM_WRITE) {
            Read::Frames(frames) => frames,
            Read::Lost { missed, last } => resync(&s.shared, last, "this client fell behind", missed),
            Read::Nothing => {
                tokio::select! {
                    () = s.cursor.published() => continue,
                    () = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": keepalive\n\n"),
                    _ = s.stop.changed() => return None,
                }
            }
        };
        return Some((Ok(Frame::data(frame)), s));
    }
}

/// `since=MS` or `all=1`: which sessions a feed sends (the daemon's own window by default).
fn window_of(query: &[(String, String)], default: Window) -> Result<Window, String> {
    let get = |key: &str| query.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let all = matches!(get("all"), Some("1" | "true"));
    let since_ms = match get("since") {
        Some(ms) => ms.parse().map_err(|_| format!("since: milliseconds, not {ms:?}"))?,
        None if all => 0,
        None => return Ok(default),
    };
    Ok(Window { since_ms, all })
}

/// One feed client: a machine source of its own, its events sent as it reads them; the client's
/// pace holds back only that source (its channel is bounded), never ingest or anyone else.
struct FeedStream {
    rx: mpsc::Receiver<Event>,
    pending: Option<Bytes>,
    stop: watch::Receiver<bool>,
    _slot: StreamSlot,
}

fn feed(shared: &Arc<Shared>, query: &[(String, String)]) -> Response<Body> {
    let Some(feed) = &shared.feed else {
        return refuse(shared, StatusCode::NOT_FOUND, "this daemon sends no machine feed");
    };
    let window = match window_of(query, feed.window) {
        Ok(w) => w,
        Err(why) => return reply(StatusCode::BAD_REQUEST, "text/plain", why + "\n"),
    };
    let Some(slot) = StreamSlot::take(shared, |s| &s.feeds, MAX_FEEDS) else {
        return refuse(shared, StatusCode::SERVICE_UNAVAILABLE, "too many machine feeds");
    };
    let state = FeedStream {
        rx: (feed.spawn)(window),
        pending: Some(Bytes::from_static(b"retry: 2000\n\n")),
        stop: shared.stop.clone(),
        _slot: slot,
    };
    let body = StreamBody::new(futures_util::stream::unfold(state, next_feed_frame));
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn next_feed_frame(mut s: FeedStream) -> Option<(Result<Frame<Bytes>, Infallible>, FeedStream)> {
    if let Some(frame) = s.pending.take() {
        return Some((Ok(Frame::data(frame)), s));
    }
    if *s.stop.borrow() {
        return None;
    }
    let event = tokio::select! {
        got = s.rx.recv() => got?,
        () = tokio::time::sleep(KEEPALIVE) => return Some((Ok(Frame::data(Bytes::from_static(b": keepalive\n\n"))), s)),
        _ = s.stop.changed() => return None,
    };
    // What is waiting goes in one write: a history read at start is thousands of small events.
    let mut out = String::new();
    let push = |out: &mut String, e: &Event| codec::encode(e).iter().for_each(|w| w.frame_into(out));
    push(&mut out, &event);
    while out.len() < FEED_WRITE {
        let Ok(e) = s.rx.try_recv() else { break };
        push(&mut out, &e);
    }
    Some((Ok(Frame::data(Bytes::from(out))), s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            parse_query("q=two+words&tz=Europe%2FParis&flag"),
            [("q".into(), "two words".into()), ("tz".into(), "Europe/Paris".into()), ("flag".into(), String::new())]
        );
    }

    #[test]
    fn followed_sessions_not_stored_yet_come_first() {
        let stored = r#"{"sessions":[{"id":"a","status":"completed"},{"id":"b"}]}"#;
        let live = vec![json!({"id": "b", "status": "running"}), json!({"id": "c", "status": "running"})];
        let out: Value = serde_json::from_str(&with_live(stored, live)).unwrap();
        let ids: Vec<&str> = out["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["c", "a", "b"]);
        assert_eq!(out["sessions"][2]["live"]["status"], "running");
        assert_eq!(out["sessions"][1]["live"], Value::Null);
        assert_eq!(out["sessions"][0]["stored"], false);
    }
}
