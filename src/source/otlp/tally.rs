//! What a request body will cost before it is decoded, and whether what was decoded may be
//! recorded. Decoding is where a small body becomes large: two bytes of protobuf are an empty span
//! of some 300 bytes of memory, and one more line of JSON when recorded (issue 22 item 1: 8 MiB
//! of empty spans took 4.5 GB). So the body is first walked without building anything, counting
//! the messages decoding would build; after decoding, ids and nesting are checked, so that what
//! is recorded is always what the reader can read back.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::encoding::{WireType, decode_key, decode_varint};

use super::limits::{MAX_MESSAGES, MAX_RECORDS, MAX_VALUE_DEPTH, Refusal};

/// The messages of an OTLP export request that hold other messages (or records), by the field
/// numbers of `opentelemetry/proto`. Any other length-delimited field is a string or bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Message {
    TraceRequest,
    LogsRequest,
    ResourceSpans,
    ResourceLogs,
    ScopeSpans,
    ScopeLogs,
    Span,
    LogRecord,
    Event,
    Link,
    Status,
    Resource,
    EntityRef,
    Scope,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    /// A repeated string: one allocation each, nothing inside.
    Text,
}

/// The message a length-delimited field of `parent` holds, if it holds one.
fn field(parent: Message, tag: u32) -> Option<Message> {
    use Message as M;
    Some(match (parent, tag) {
        (M::TraceRequest, 1) => M::ResourceSpans,
        (M::LogsRequest, 1) => M::ResourceLogs,
        (M::ResourceSpans | M::ResourceLogs, 1) => M::Resource,
        (M::ResourceSpans, 2) => M::ScopeSpans,
        (M::ResourceLogs, 2) => M::ScopeLogs,
        (M::ScopeSpans | M::ScopeLogs, 1) => M::Scope,
        (M::ScopeSpans, 2) => M::Span,
        (M::ScopeLogs, 2) => M::LogRecord,
        (M::Span, 11) => M::Event,
        (M::Span, 13) => M::Link,
        (M::Span, 15) => M::Status,
        (M::Resource, 3) => M::EntityRef,
        (M::EntityRef, 3 | 4) => M::Text,
        // Attributes.
        (M::Span, 9)
        | (M::Event | M::Scope, 3)
        | (M::Link, 4)
        | (M::Resource | M::KeyValueList, 1)
        | (M::LogRecord, 6) => M::KeyValue,
        (M::KeyValue, 2) | (M::ArrayValue, 1) | (M::LogRecord, 5) => M::AnyValue,
        (M::AnyValue, 5) => M::ArrayValue,
        (M::AnyValue, 6) => M::KeyValueList,
        _ => return None,
    })
}

/// What decoding a body would build.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Messages of every kind (the decoded request's nodes).
    pub messages: usize,
    /// Spans and log records.
    pub records: usize,
}

/// prost's own nesting limit: a deeper body does not decode anyway.
const WALK_DEPTH: usize = 100;

/// Counts what a protobuf body of `top` would decode into, refusing as soon as a bound is passed.
/// Builds nothing and reads each byte about once.
pub fn protobuf(body: &[u8], top: Message) -> Result<Tally, Refusal> {
    let mut tally = Tally::default();
    walk(body, top, 0, &mut tally)?;
    Ok(tally)
}

fn undecodable() -> Refusal {
    Refusal::Undecodable("not an OTLP protobuf request")
}

fn walk(mut buf: &[u8], message: Message, depth: usize, tally: &mut Tally) -> Result<(), Refusal> {
    if depth > WALK_DEPTH {
        return Err(Refusal::TooDeep);
    }
    while !buf.is_empty() {
        let (tag, wire) = decode_key(&mut buf).map_err(|_| undecodable())?;
        let skip = match wire {
            WireType::Varint => {
                decode_varint(&mut buf).map_err(|_| undecodable())?;
                0
            }
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::LengthDelimited => {
                let len = decode_varint(&mut buf).map_err(|_| undecodable())?;
                let len = usize::try_from(len).ok().filter(|&l| l <= buf.len()).ok_or_else(undecodable)?;
                if let Some(child) = field(message, tag) {
                    count(child, tally)?;
                    if child != Message::Text {
                        walk(&buf[..len], child, depth + 1, tally)?;
                    }
                }
                len
            }
            WireType::StartGroup | WireType::EndGroup => return Err(undecodable()),
        };
        buf = buf.get(skip..).ok_or_else(undecodable)?;
    }
    Ok(())
}

fn count(message: Message, tally: &mut Tally) -> Result<(), Refusal> {
    tally.messages += 1;
    if matches!(message, Message::Span | Message::LogRecord) {
        tally.records += 1;
        if tally.records > MAX_RECORDS {
            return Err(Refusal::TooLarge(format!("more than {MAX_RECORDS} spans or log records")));
        }
    }
    if tally.messages > MAX_MESSAGES {
        return Err(Refusal::TooLarge(format!("more than {MAX_MESSAGES} values")));
    }
    Ok(())
}

/// The JSON counterpart of [`protobuf`]: every object and array of the body is one node decoded.
pub fn json(body: &[u8]) -> Result<(), Refusal> {
    let (mut nodes, mut in_string, mut escaped) = (0usize, false, false);
    for &b in body {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                nodes += 1;
                // Two nodes a value at most (a key-value object and its value object).
                if nodes > 2 * MAX_MESSAGES {
                    return Err(Refusal::TooLarge(format!("more than {MAX_MESSAGES} values")));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn id(bytes: &[u8], len: usize, optional: bool, what: &'static str) -> Result<(), Refusal> {
    if bytes.len() == len || (optional && bytes.is_empty()) { Ok(()) } else { Err(Refusal::BadId(what)) }
}

/// How deep a value nests: a scalar is 1, an array or map of scalars 2, and so on.
fn depth(value: &AnyValue) -> usize {
    // Iterative, so a value nested as deep as prost allows never deepens this stack.
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        if d > MAX_VALUE_DEPTH {
            break;
        }
        match &v.value {
            Some(Value::ArrayValue(a)) => stack.extend(a.values.iter().map(|x| (x, d + 1))),
            Some(Value::KvlistValue(l)) => {
                stack.extend(l.values.iter().filter_map(|kv| kv.value.as_ref()).map(|x| (x, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

fn values<'a>(attributes: impl IntoIterator<Item = &'a KeyValue>) -> Result<(), Refusal> {
    for kv in attributes {
        if kv.value.as_ref().is_some_and(|v| depth(v) > MAX_VALUE_DEPTH) {
            return Err(Refusal::TooDeep);
        }
    }
    Ok(())
}

/// The records under one resource and one scope, as both signals nest them.
pub struct Group<'a, T> {
    pub resource: &'a [KeyValue],
    pub scope: Option<&'a InstrumentationScope>,
    pub records: &'a [T],
}

pub fn span_groups(request: &ExportTraceServiceRequest) -> impl Iterator<Item = Group<'_, Span>> {
    request.resource_spans.iter().flat_map(|rs| {
        let resource = rs.resource.as_ref().map(|r| r.attributes.as_slice()).unwrap_or_default();
        rs.scope_spans.iter().map(move |ss| Group { resource, scope: ss.scope.as_ref(), records: &ss.spans })
    })
}

pub fn log_groups(request: &ExportLogsServiceRequest) -> impl Iterator<Item = Group<'_, LogRecord>> {
    request.resource_logs.iter().flat_map(|rl| {
        let resource = rl.resource.as_ref().map(|r| r.attributes.as_slice()).unwrap_or_default();
        rl.scope_logs.iter().map(move |sl| Group { resource, scope: sl.scope.as_ref(), records: &sl.log_records })
    })
}

/// At most [`MAX_RECORDS`] records, values nested at most [`MAX_VALUE_DEPTH`], each record as
/// `record` says.
fn check<'a, T: 'a>(
    groups: impl Iterator<Item = Group<'a, T>>,
    record: impl Fn(&T) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    let mut n = 0;
    for g in groups {
        values(g.resource)?;
        values(g.scope.iter().flat_map(|s| &s.attributes))?;
        n += g.records.len();
        if n > MAX_RECORDS {
            return Err(Refusal::TooLarge(format!("more than {MAX_RECORDS} spans or log records")));
        }
        g.records.iter().try_for_each(&record)?;
    }
    Ok(())
}

/// Whether a decoded trace request may be recorded: ids of their specified sizes (trace 16 bytes,
/// span 8), values nested at most [`MAX_VALUE_DEPTH`], at most [`MAX_RECORDS`] spans.
pub fn check_traces(request: &ExportTraceServiceRequest) -> Result<(), Refusal> {
    check(span_groups(request), |span| {
        id(&span.trace_id, 16, false, "a trace id is not 16 bytes")?;
        id(&span.span_id, 8, false, "a span id is not 8 bytes")?;
        id(&span.parent_span_id, 8, true, "a parent span id is not 8 bytes")?;
        values(&span.attributes)?;
        values(span.events.iter().flat_map(|e| &e.attributes))?;
        span.links.iter().try_for_each(|link| {
            id(&link.trace_id, 16, false, "a link's trace id is not 16 bytes")?;
            id(&link.span_id, 8, false, "a link's span id is not 8 bytes")?;
            values(&link.attributes)
        })
    })
}

/// The logs counterpart of [`check_traces`]: a log record's ids are optional, but sized when given.
pub fn check_logs(request: &ExportLogsServiceRequest) -> Result<(), Refusal> {
    check(log_groups(request), |record| {
        id(&record.trace_id, 16, true, "a trace id is not 16 bytes")?;
        id(&record.span_id, 8, true, "a span id is not 8 bytes")?;
        values(&record.attributes)?;
        if record.body.as_ref().is_some_and(|b| depth(b) > MAX_VALUE_DEPTH) {
            return Err(Refusal::TooDeep);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(tag: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::encode_key(tag, WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn empty_spans_are_counted_before_anything_is_built() {
        let spans: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], 3).flatten().collect();
        let body = ld(1, &ld(2, &spans));
        assert_eq!(protobuf(&body, Message::TraceRequest), Ok(Tally { messages: 5, records: 3 }));
        let many: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], MAX_RECORDS + 1).flatten().collect();
        assert!(matches!(protobuf(&ld(1, &ld(2, &many)), Message::TraceRequest), Err(Refusal::TooLarge(_))));
    }

    #[test]
    fn empty_attributes_count_as_values() {
        let attrs: Vec<u8> = std::iter::repeat_n([0x4au8, 0x00], MAX_MESSAGES).flatten().collect();
        let body = ld(1, &ld(2, &ld(2, &attrs)));
        assert!(matches!(protobuf(&body, Message::TraceRequest), Err(Refusal::TooLarge(_))));
    }

    #[test]
    fn truncated_or_grouped_bodies_are_undecodable() {
        assert!(matches!(protobuf(&[0x0a, 0x05, 0x00], Message::TraceRequest), Err(Refusal::Undecodable(_))));
        assert!(matches!(protobuf(&[0x0b], Message::TraceRequest), Err(Refusal::Undecodable(_))));
        assert_eq!(protobuf(&[], Message::LogsRequest), Ok(Tally::default()));
    }

    #[test]
    fn json_nodes_are_counted_outside_strings() {
        assert_eq!(json(br#"{"a":"{[{[","b":[{}]}"#), Ok(()));
        let many = "[{}]".repeat(MAX_MESSAGES + 1);
        assert!(matches!(json(many.as_bytes()), Err(Refusal::TooLarge(_))));
    }

    #[test]
    fn values_nest_to_the_bound_and_no_further() {
        let nested = |n: usize| {
            let mut v = AnyValue { value: Some(Value::StringValue("x".into())) };
            for _ in 1..n {
                v = AnyValue {
                    value: Some(Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
                        values: vec![v],
                    })),
                };
            }
            v
        };
        assert_eq!(depth(&nested(MAX_VALUE_DEPTH)), MAX_VALUE_DEPTH);
        let kv = |v| KeyValue { key: "k".into(), value: Some(v), ..KeyValue::default() };
        assert_eq!(values(&[kv(nested(MAX_VALUE_DEPTH))]), Ok(()));
        assert_eq!(values(&[kv(nested(MAX_VALUE_DEPTH + 1))]), Err(Refusal::TooDeep));
    }
}
