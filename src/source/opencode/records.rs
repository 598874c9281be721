//! The records this source hands on, one JSON line each, for `wire::opencode` to lower: a store
//! row in the shape of the event that would have written it, an `event` row, an SSE event, a
//! `dead` writer's root, and a `notice` of what was skipped or went wrong (the diagnostics log).

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// Appends one value as one line.
pub(super) fn push(out: &mut Vec<u8>, value: &Value) {
    // serde_json writes no raw newline: one value is one line.
    out.extend_from_slice(value.to_string().as_bytes());
    out.push(b'\n');
}

/// A store row as the event that would have written it.
pub(super) fn row_event(kind: &str, session: &str, key: &str, body: &Value) -> Value {
    json!({"opencode": "row", "event": {"type": kind, "properties": {"sessionID": session, key: body}}})
}

/// A row's JSON `data` with the ids its columns hold (data that is not an object is kept under
/// `data`, for the lowering to find nothing in rather than for the row to vanish).
pub(super) fn with_ids(data: Value, ids: &[(&str, &str)]) -> Value {
    let mut map = match data {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("data".to_owned(), other);
            m
        }
    };
    for (k, v) in ids {
        map.insert((*k).to_owned(), Value::String((*v).to_owned()));
    }
    Value::Object(map)
}

/// The store's writer is gone: what `root` left running was killed with it (wire.md §9).
pub(super) fn dead(out: &mut Vec<u8>, root: &str) {
    push(out, &json!({"opencode": "dead", "sessionID": root}));
}

/// Something the user should know that is no agent's doing (odd values skipped, a line over a
/// bound, a lost read): a line of the diagnostics log, `opencode/<what>`.
pub(super) fn notice(out: &mut Vec<u8>, what: &str, message: &str) {
    push(out, &json!({"opencode": "notice", "notice": what, "message": message}));
}

/// JSON text as one line: as it is unless whitespace between its tokens holds a line break.
pub(super) fn one_line(raw: &str) -> Cow<'_, str> {
    if !raw.contains(['\n', '\r']) {
        return Cow::Borrowed(raw);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => Cow::Owned(v.to_string()),
        Err(_) => Cow::Owned(Value::String(raw.to_owned()).to_string()),
    }
}

/// An event of the server's stream, its JSON text `raw` (already checked to be JSON) kept as it
/// came: no tree is built of what is only passed on.
pub(super) fn sse_raw(out: &mut Vec<u8>, raw: &str) {
    out.extend_from_slice(b"{\"opencode\":\"sse\",\"event\":");
    out.extend_from_slice(one_line(raw).as_bytes());
    out.extend_from_slice(b"}\n");
}

/// An SSE event whose data is not JSON: as a string, for the pipeline to count as malformed
/// rather than to lose.
pub(super) fn sse_text(out: &mut Vec<u8>, text: &str) {
    push(out, &json!({"opencode": "sse", "event": text}));
}

/// What the server holds, in the stream's own shape: `{"type": kind, "properties": {…, key: raw}}`.
pub(super) fn sse_state(out: &mut Vec<u8>, kind: &str, session: Option<&str>, key: &str, raw: &str) {
    out.extend_from_slice(b"{\"opencode\":\"sse\",\"event\":{\"type\":");
    out.extend_from_slice(Value::from(kind).to_string().as_bytes());
    out.extend_from_slice(b",\"properties\":{");
    if let Some(s) = session {
        out.extend_from_slice(b"\"sessionID\":");
        out.extend_from_slice(Value::from(s).to_string().as_bytes());
        out.push(b',');
    }
    out.extend_from_slice(Value::from(key).to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(one_line(raw).as_bytes());
    out.extend_from_slice(b"}}}\n");
}
