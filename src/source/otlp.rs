//! `listen --otlp`: an OTLP/HTTP receiver. SDKs and collectors POST traces and logs (protobuf or
//! JSON, optionally gzip) to `/v1/traces` and `/v1/logs`; every span and log record becomes one
//! NDJSON record, `{"otlp":"span"|"log", "resource":…, "scope":…, …}`, stamped in an `in` envelope
//! and recorded like every live line, so an OTLP session replays like any other.
//!
//! Spans name their parent only by span id, and agents export a span when it *ends*: a sub-agent's
//! spans arrive before the spawn call that contains them. A bounded index of recent spans joins the
//! two and adds an `{"otlp":"link"}` record when a span turns out to hang under a span of another
//! conversation (the parent agent's spawn call): what this is is for the wire stage to say.

use std::collections::VecDeque;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::recording::{self, Dir};

/// Where `listen --otlp` listens when no address is given: the OTLP/HTTP port, loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:4318";
/// Largest request body accepted, compressed or not (an SDK batch is far smaller).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Spans remembered for joining parents and children; the oldest are forgotten first.
pub const INDEX_SPANS: usize = 1 << 16;

/// What the receiver did, for diagnostics.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub spans: AtomicU64,
    pub logs: AtomicU64,
    /// Requests refused: not OTLP, undecodable, too large, or to another path.
    pub refused: AtomicU64,
    /// Spans forgotten by the index bound before their parent arrived.
    pub forgotten: AtomicU64,
}

impl Counters {
    /// `12 requests, 340 spans, 61 log records, 0 refused`.
    pub fn describe(&self) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{} requests, {} spans, {} log records, {} refused, {} unjoined",
            n(&self.requests),
            n(&self.spans),
            n(&self.logs),
            n(&self.refused),
            n(&self.forgotten)
        )
    }
}

struct Shared {
    index: Mutex<SpanIndex>,
    out: mpsc::Sender<Vec<u8>>,
    counters: Arc<Counters>,
}

/// Accepts OTLP/HTTP requests until the consumer goes away; each request's records are sent to
/// `out` as one batch of enveloped lines.
pub async fn serve(listener: TcpListener, out: mpsc::Sender<Vec<u8>>, counters: Arc<Counters>) {
    let shared = Arc::new(Shared { index: Mutex::new(SpanIndex::default()), out, counters });
    loop {
        let stream = tokio::select! {
            conn = listener.accept() => if let Ok((stream, _)) = conn { stream } else {
                // Out of descriptors, typically: senders retry, the loop must not spin.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            },
            () = shared.out.closed() => return,
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, shared.clone()));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Whether an address keeps the receiver on this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn refuse(shared: &Shared, status: StatusCode, why: &str) -> Reply {
    shared.counters.refused.fetch_add(1, Ordering::Relaxed);
    reply(status, "text/plain", format!("{why}\n"))
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Result<Reply, std::convert::Infallible> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let signal = match req.uri().path() {
        "/v1/traces" => Signal::Traces,
        "/v1/logs" => Signal::Logs,
        // Metrics are accepted and dropped: SDKs that send all three signals must not see errors.
        "/v1/metrics" if req.method() == Method::POST => return Ok(reply(StatusCode::OK, "application/json", "{}")),
        _ => return Ok(refuse(&shared, StatusCode::NOT_FOUND, "swarmtop receives OTLP at /v1/traces and /v1/logs")),
    };
    if req.method() != Method::POST {
        return Ok(refuse(&shared, StatusCode::METHOD_NOT_ALLOWED, "POST only"));
    }
    let header = |name| req.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("").to_owned();
    let content_type = header(CONTENT_TYPE);
    let encoding = match content_type.split(';').next().unwrap_or("").trim() {
        "application/x-protobuf" | "application/protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        _ => {
            return Ok(refuse(
                &shared,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send application/x-protobuf or application/json",
            ));
        }
    };
    let gzip = match header(CONTENT_ENCODING).trim() {
        "" | "identity" => false,
        "gzip" => true,
        _ => return Ok(refuse(&shared, StatusCode::UNSUPPORTED_MEDIA_TYPE, "content encodings: gzip, identity")),
    };
    let Ok(body) = Limited::new(req.into_body(), MAX_BODY_BYTES).collect().await else {
        return Ok(refuse(&shared, StatusCode::PAYLOAD_TOO_LARGE, "request body over the limit"));
    };
    let mut body = body.to_bytes().to_vec();
    if gzip {
        let mut plain = Vec::new();
        let read = flate2::read::GzDecoder::new(&body[..]).take(MAX_BODY_BYTES as u64 + 1).read_to_end(&mut plain);
        if read.is_err() || plain.len() > MAX_BODY_BYTES {
            return Ok(refuse(&shared, StatusCode::BAD_REQUEST, "gzip body unreadable or over the limit"));
        }
        body = plain;
    }
    let now = recording::unix_ms();
    let lines = match signal {
        Signal::Traces => match decode::<ExportTraceServiceRequest>(&body, encoding) {
            Some(r) => trace_lines(&r, &shared),
            None => return Ok(refuse(&shared, StatusCode::BAD_REQUEST, "not an OTLP trace export request")),
        },
        Signal::Logs => match decode::<ExportLogsServiceRequest>(&body, encoding) {
            Some(r) => log_lines(&r, &shared),
            None => return Ok(refuse(&shared, StatusCode::BAD_REQUEST, "not an OTLP logs export request")),
        },
    };
    let mut batch = Vec::new();
    for line in &lines {
        recording::encode_record(&mut batch, now, Dir::In, line.as_bytes(), false);
    }
    if !batch.is_empty() && shared.out.send(batch).await.is_err() {
        return Ok(reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "swarmtop is closing\n"));
    }
    // An empty export response means "all accepted" in both encodings.
    Ok(match encoding {
        Encoding::Protobuf => reply(StatusCode::OK, "application/x-protobuf", Bytes::new()),
        Encoding::Json => reply(StatusCode::OK, "application/json", "{}"),
    })
}

fn decode<T: prost::Message + Default + serde::de::DeserializeOwned>(body: &[u8], encoding: Encoding) -> Option<T> {
    match encoding {
        Encoding::Protobuf => T::decode(body).ok(),
        Encoding::Json => serde_json::from_slice(body).ok(),
    }
}

fn resource_json(attributes: &[KeyValue]) -> serde_json::Value {
    json!({ "attributes": attributes })
}

fn trace_lines(request: &ExportTraceServiceRequest, shared: &Shared) -> Vec<String> {
    let mut lines = Vec::new();
    let mut index = shared.index.lock().unwrap_or_else(PoisonError::into_inner);
    for rs in &request.resource_spans {
        let resource = rs.resource.as_ref().map(|r| r.attributes.as_slice()).unwrap_or_default();
        for ss in &rs.scope_spans {
            let scope = ss.scope.as_ref().map(|s| json!({ "name": s.name, "version": s.version }));
            for span in &ss.spans {
                shared.counters.spans.fetch_add(1, Ordering::Relaxed);
                let conversation = conversation_of(&span.attributes).or_else(|| conversation_of(resource));
                let line = json!({
                    "otlp": "span",
                    "resource": resource_json(resource),
                    "scope": scope,
                    "span": span,
                });
                lines.push(line.to_string());
                let seen = SeenSpan {
                    trace: span.trace_id.clone(),
                    span: span.span_id.clone(),
                    parent: span.parent_span_id.clone(),
                    conversation,
                    tool_call: string_attr(&span.attributes, "gen_ai.tool.call.id"),
                };
                for link in index.see(seen, &shared.counters) {
                    lines.push(link.to_string());
                }
            }
        }
    }
    lines
}

fn log_lines(request: &ExportLogsServiceRequest, shared: &Shared) -> Vec<String> {
    let mut lines = Vec::new();
    for rl in &request.resource_logs {
        let resource = rl.resource.as_ref().map(|r| r.attributes.as_slice()).unwrap_or_default();
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref().map(|s| json!({ "name": s.name, "version": s.version }));
            for record in &sl.log_records {
                shared.counters.logs.fetch_add(1, Ordering::Relaxed);
                let line = json!({ "otlp": "log", "resource": resource_json(resource), "scope": scope, "log": record });
                lines.push(line.to_string());
            }
        }
    }
    lines
}

fn string_attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()? {
        AnyValue { value: Some(Value::StringValue(s)) } if !s.is_empty() => Some(s.clone()),
        _ => None,
    })
}

/// The agent conversation a span belongs to: the GenAI conversation id, else the agent id, else
/// the session.
fn conversation_of(attributes: &[KeyValue]) -> Option<String> {
    ["gen_ai.conversation.id", "gen_ai.agent.id", "session.id"].iter().find_map(|k| string_attr(attributes, k))
}

struct SeenSpan {
    trace: Vec<u8>,
    span: Vec<u8>,
    parent: Vec<u8>,
    conversation: Option<String>,
    tool_call: Option<String>,
}

/// What is known of one recent span: its conversation, its tool call, its own parent.
struct Known {
    conversation: Option<String>,
    tool_call: Option<String>,
    parent: Vec<u8>,
}

/// Joins spans to their parents by id, within a bound.
#[derive(Default)]
struct SpanIndex {
    known: FxHashMap<(Vec<u8>, Vec<u8>), Known>,
    order: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// Conversations whose spans named a parent span not seen yet, by that parent.
    waiting: FxHashMap<(Vec<u8>, Vec<u8>), Vec<String>>,
    /// Conversations already linked to a parent (a link is said once).
    linked: FxHashSet<String>,
}

/// Steps walked up from a span to the nearest ancestor that belongs to a conversation.
const MAX_WALK: usize = 8;

impl SpanIndex {
    /// Notes a span; returns the links it completes: its own conversation under its parent's, and
    /// any waiting conversations under this span.
    fn see(&mut self, s: SeenSpan, counters: &Counters) -> Vec<serde_json::Value> {
        let mut links = Vec::new();
        let key = (s.trace.clone(), s.span.clone());
        if let Some(child) = &s.conversation {
            if !s.parent.is_empty() && !self.linked.contains(child) {
                let parent_key = (s.trace.clone(), s.parent.clone());
                match self.owner(&parent_key) {
                    Some((owner, card)) if owner != *child => {
                        links.push(self.link(&s.trace, child, &owner, card.as_deref()));
                    }
                    Some(_) => {}
                    None => {
                        let w = self.waiting.entry(parent_key).or_default();
                        if !w.contains(child) && w.len() < 64 {
                            w.push(child.clone());
                        }
                    }
                }
            }
        }
        self.known.insert(
            key.clone(),
            Known { conversation: s.conversation.clone(), tool_call: s.tool_call.clone(), parent: s.parent },
        );
        self.order.push_back(key.clone());
        if let Some(children) = self.waiting.remove(&key) {
            if let Some((owner, card)) = self.owner(&key) {
                for child in children {
                    if child != owner && !self.linked.contains(&child) {
                        links.push(self.link(&s.trace, &child, &owner, card.as_deref()));
                    }
                }
            }
        }
        while self.order.len() > INDEX_SPANS {
            if let Some(old) = self.order.pop_front() {
                self.known.remove(&old);
                if self.waiting.remove(&old).is_some() {
                    counters.forgotten.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Waiting lists are bounded by the same count.
        if self.waiting.len() > INDEX_SPANS {
            counters.forgotten.fetch_add(self.waiting.len() as u64, Ordering::Relaxed);
            self.waiting.clear();
        }
        links
    }

    /// The conversation that owns a span, and the tool call on the way up (the spawn's card).
    fn owner(&self, key: &(Vec<u8>, Vec<u8>)) -> Option<(String, Option<String>)> {
        let mut card = None;
        let mut at = key.clone();
        for _ in 0..MAX_WALK {
            let k = self.known.get(&at)?;
            card = card.or_else(|| k.tool_call.clone());
            if let Some(c) = &k.conversation {
                return Some((c.clone(), card));
            }
            if k.parent.is_empty() {
                return None;
            }
            at = (at.0, k.parent.clone());
        }
        None
    }

    fn link(&mut self, trace: &[u8], child: &str, parent: &str, card: Option<&str>) -> serde_json::Value {
        self.linked.insert(child.to_owned());
        if self.linked.len() > INDEX_SPANS {
            self.linked.clear();
        }
        json!({ "otlp": "link", "traceId": hex(trace), "child": child, "parent": parent, "card": card })
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: u8, parent: Option<u8>, conversation: &str, tool_call: Option<&str>) -> SeenSpan {
        SeenSpan {
            trace: vec![1; 16],
            span: vec![id; 8],
            parent: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            conversation: Some(conversation.to_owned()),
            tool_call: tool_call.map(ToOwned::to_owned),
        }
    }

    /// Claude Code exports a sub-agent's spans before the parent's `Agent` tool span that holds them.
    #[test]
    fn children_that_end_first_are_linked_when_their_parent_span_arrives() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        assert!(index.see(span(3, Some(2), "child", None), &c).is_empty());
        assert!(index.see(span(4, Some(2), "child", None), &c).is_empty());
        let links = index.see(span(2, Some(1), "root", Some("toolu_1")), &c);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0]["child"], "child");
        assert_eq!(links[0]["parent"], "root");
        assert_eq!(links[0]["card"], "toolu_1");
        assert!(index.see(span(1, None, "root", None), &c).is_empty());
    }

    /// swarmtop's own exports and most SDKs send parents first.
    #[test]
    fn children_after_their_parent_are_linked_at_once_and_once() {
        let mut index = SpanIndex::default();
        let c = Counters::default();
        assert!(index.see(span(1, None, "root", None), &c).is_empty());
        assert!(index.see(span(2, Some(1), "root", Some("call_spawn_1")), &c).is_empty());
        let links = index.see(span(3, Some(2), "child", None), &c);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0]["card"], "call_spawn_1");
        assert!(index.see(span(5, Some(2), "child", None), &c).is_empty());
    }
}
