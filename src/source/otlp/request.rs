//! One OTLP request body to the records it becomes: inflated (within [`MAX_INFLATED_BYTES`] and
//! [`MAX_INFLATE_RATIO`]), counted before it is decoded ([`super::tally`]), decoded, checked, then
//! written as enveloped NDJSON records, `{"otlp":"span"|"log", "resource":…, "scope":…, …}`, within
//! [`MAX_RECORDED_BYTES`]; then the span index adds `{"otlp":"link"}` records for the joins it
//! completes. Pure but for the index: this is what the fuzz target drives, and what runs off the
//! runtime's thread.

use std::io::Read as _;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::trace::v1::Span;
use serde::Serialize;

use super::hex::hex;
use super::index::{Link, SeenSpan, SpanIndex};
use super::limits::{Counters, MAX_INFLATE_RATIO, MAX_INFLATED_BYTES, MAX_RECORDED_BYTES, Refusal};
use super::tally::{self, Group, Message};
use crate::source::recording::{self, Dir};

/// The longest record written: the file reader's line bound, less room for the envelope, so that
/// every record reads back whole.
pub const RECORD_BYTES: usize = crate::source::files::MAX_LINE - 256;
/// The longest conversation or tool-call id the span index keeps: real ones are uuids and call
/// ids; a longer one is still recorded, only never joined.
pub const JOIN_ID_BYTES: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Logs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

/// What a request says its body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub signal: Signal,
    pub encoding: Encoding,
    pub gzip: bool,
}

/// An accepted request: its enveloped records, and what they hold.
#[derive(Debug, Default)]
pub struct Received {
    pub batch: Vec<u8>,
    pub spans: u64,
    pub logs: u64,
}

/// Turns one request body into enveloped records stamped `now`, or says why not. The index learns
/// the spans only of a request that is accepted.
pub fn receive(
    body: &[u8],
    kind: Kind,
    index: &Mutex<SpanIndex>,
    counters: &Counters,
    now: i64,
) -> Result<Received, Refusal> {
    let inflated;
    let body = if kind.gzip {
        inflated = inflate(body)?;
        &inflated[..]
    } else {
        body
    };
    let mut out = Records::new(now);
    match kind.signal {
        Signal::Traces => {
            let request: ExportTraceServiceRequest =
                decode(body, kind.encoding, Message::TraceRequest, "not an OTLP trace export request")?;
            tally::check_traces(&request)?;
            let spans = write(tally::span_groups(&request), "span", &mut out)?;
            let mut index = index.lock().unwrap_or_else(PoisonError::into_inner);
            for link in join(&request, &mut index, counters) {
                out.link(&link);
            }
            Ok(Received { batch: out.batch, spans, logs: 0 })
        }
        Signal::Logs => {
            let request: ExportLogsServiceRequest =
                decode(body, kind.encoding, Message::LogsRequest, "not an OTLP logs export request")?;
            tally::check_logs(&request)?;
            let logs = write(tally::log_groups(&request), "log", &mut out)?;
            Ok(Received { batch: out.batch, spans: 0, logs })
        }
    }
}

/// Inflates a gzip body within [`MAX_INFLATED_BYTES`] and [`MAX_INFLATE_RATIO`] times its size.
fn inflate(body: &[u8]) -> Result<Vec<u8>, Refusal> {
    let by_ratio = body.len().saturating_mul(MAX_INFLATE_RATIO);
    let cap = MAX_INFLATED_BYTES.min(by_ratio);
    let mut plain = Vec::new();
    let read = flate2::read::GzDecoder::new(body).take(cap as u64 + 1).read_to_end(&mut plain);
    if read.is_err() {
        return Err(Refusal::Undecodable("gzip body unreadable"));
    }
    if plain.len() > cap {
        return Err(Refusal::TooLarge(if cap == by_ratio {
            format!("gzip body inflates more than {MAX_INFLATE_RATIO} times its size")
        } else {
            format!("gzip body inflates past {MAX_INFLATED_BYTES} bytes")
        }));
    }
    Ok(plain)
}

fn decode<T: prost::Message + Default + serde::de::DeserializeOwned>(
    body: &[u8],
    encoding: Encoding,
    top: Message,
    not: &'static str,
) -> Result<T, Refusal> {
    match encoding {
        Encoding::Protobuf => {
            tally::protobuf(body, top)?;
            T::decode(body).map_err(|_| Refusal::Undecodable(not))
        }
        Encoding::Json => {
            tally::json(body)?;
            serde_json::from_slice(body).map_err(|_| Refusal::Undecodable(not))
        }
    }
}

/// The records of one request, enveloped as they are written, within their bounds.
struct Records {
    batch: Vec<u8>,
    line: Vec<u8>,
    now: i64,
}

impl Records {
    fn new(now: i64) -> Self {
        Self { batch: Vec::new(), line: Vec::new(), now }
    }

    /// Writes one record with `write`, refusing the request past [`RECORD_BYTES`] or
    /// [`MAX_RECORDED_BYTES`].
    fn push(&mut self, write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) -> Result<(), Refusal> {
        self.line.clear();
        write(&mut self.line).map_err(|_| Refusal::Undecodable("a record that cannot be written as JSON"))?;
        if self.line.len() > RECORD_BYTES {
            return Err(Refusal::TooLarge(format!("a record over {RECORD_BYTES} bytes")));
        }
        recording::encode_record(&mut self.batch, self.now, Dir::In, &self.line, false);
        if self.batch.len() > MAX_RECORDED_BYTES {
            return Err(Refusal::TooLarge(format!("records over {MAX_RECORDED_BYTES} bytes")));
        }
        Ok(())
    }

    /// Links come after the request was accepted, and are small: their ids are at most
    /// [`JOIN_ID_BYTES`] each.
    fn link(&mut self, link: &Link) {
        let line = serde_json::json!({
            "otlp": "link",
            "traceId": hex(&link.trace),
            "child": link.child,
            "parent": link.parent,
            "card": link.card,
        });
        recording::encode_record(&mut self.batch, self.now, Dir::In, line.to_string().as_bytes(), false);
    }
}

#[derive(Serialize)]
struct ResourceJson<'a> {
    attributes: &'a [KeyValue],
}

#[derive(Serialize)]
struct ScopeJson<'a> {
    name: &'a str,
    version: &'a str,
}

/// A resource's and a scope's JSON, written once for all the records under them.
fn frame(resource: &[KeyValue], scope: Option<&InstrumentationScope>) -> Result<(String, String), Refusal> {
    let unwritable = |_| Refusal::Undecodable("a resource that cannot be written as JSON");
    let resource = serde_json::to_string(&ResourceJson { attributes: resource }).map_err(unwritable)?;
    let scope = scope.map(|s| ScopeJson { name: &s.name, version: &s.version });
    let scope = serde_json::to_string(&scope).map_err(unwritable)?;
    Ok((resource, scope))
}

fn record<T: Serialize>(
    out: &mut Vec<u8>,
    otlp: &str,
    resource: &str,
    scope: &str,
    value: &T,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"otlp\":\"");
    out.extend_from_slice(otlp.as_bytes());
    out.extend_from_slice(b"\",\"resource\":");
    out.extend_from_slice(resource.as_bytes());
    out.extend_from_slice(b",\"scope\":");
    out.extend_from_slice(scope.as_bytes());
    out.extend_from_slice(b",\"");
    out.extend_from_slice(otlp.as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut *out, value)?;
    out.push(b'}');
    Ok(())
}

/// Writes every record of `groups`, each `{"otlp":KIND,"resource":…,"scope":…,KIND:…}`.
fn write<'a, T: Serialize + 'a>(
    groups: impl Iterator<Item = Group<'a, T>>,
    kind: &str,
    out: &mut Records,
) -> Result<u64, Refusal> {
    let mut n = 0;
    for g in groups {
        let (resource, scope) = frame(g.resource, g.scope)?;
        for r in g.records {
            out.push(|line| record(line, kind, &resource, &scope, r))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Tells the index every span of an accepted request; returns the links completed.
fn join(request: &ExportTraceServiceRequest, index: &mut SpanIndex, counters: &Counters) -> Vec<Link> {
    let mut links = Vec::new();
    for g in tally::span_groups(request) {
        for span in g.records {
            if let Some(seen) = seen(span, g.resource) {
                links.extend(index.see(seen, counters));
            } else {
                counters.unjoinable.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    links
}

fn seen(span: &Span, resource: &[KeyValue]) -> Option<SeenSpan> {
    let conversation = conversation_of(&span.attributes).or_else(|| conversation_of(resource));
    let tool_call = string_attr(&span.attributes, "gen_ai.tool.call.id");
    if conversation.is_some_and(|c| c.len() > JOIN_ID_BYTES) || tool_call.is_some_and(|c| c.len() > JOIN_ID_BYTES) {
        return None;
    }
    Some(SeenSpan {
        trace: span.trace_id.as_slice().try_into().ok()?,
        span: span.span_id.as_slice().try_into().ok()?,
        parent: span.parent_span_id.as_slice().try_into().ok(),
        conversation: conversation.map(ToOwned::to_owned),
        tool_call: tool_call.map(ToOwned::to_owned),
    })
}

fn string_attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()? {
        AnyValue { value: Some(Value::StringValue(s)) } if !s.is_empty() => Some(s.as_str()),
        _ => None,
    })
}

/// The agent conversation a span belongs to: the GenAI conversation id, else the agent id, else
/// the session.
fn conversation_of(attributes: &[KeyValue]) -> Option<&str> {
    ["gen_ai.conversation.id", "gen_ai.agent.id", "session.id"].iter().find_map(|k| string_attr(attributes, k))
}
