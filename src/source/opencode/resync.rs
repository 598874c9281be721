//! What a server holds (its sessions, their messages and parts, who is busy), in the stream's own
//! event shapes, so the tree is whole before the first live event and whole again after a
//! reconnect. Replaying what was seen already adds nothing: usage is keyed by message, cost is
//! the session's running total, items are keyed by part.
//!
//! Every answer is read as it streams, an element at a time, and cut at [`MAX_RESPONSE`]: a
//! `/session` answer streaming a 3 GB array took 7 GB read whole (issue 22 item 6). What a cut or
//! a failed request left out is told in a notice.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{Deserializer as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::http::{self, JSON, Limited};
use super::pages::PAGE_BYTES;
use super::records;

/// Most bytes of one answer read.
pub const MAX_RESPONSE: usize = 32 << 20;
/// Sessions whose messages a resync fetches at most (the newest first); the rest keep what the
/// stream gave them and are counted in `Link::Restored`.
pub const MAX_RESYNC_SESSIONS: usize = 256;

/// Characters escaped in one path segment.
const PATH_SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-').remove(b'.').remove(b'~');

/// Calls `each` with every element of a JSON array, read as it streams.
fn each_element(body: impl Read, each: impl FnMut(Box<RawValue>)) -> serde_json::Result<()> {
    struct Elements<F>(F);
    impl<'de, F: FnMut(Box<RawValue>)> Visitor<'de> for Elements<F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
                (self.0)(raw);
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(body));
    (&mut de).deserialize_seq(Elements(each))?;
    de.end()
}

/// GETs a JSON answer and reads it with `read`, within [`MAX_RESPONSE`]; what went wrong, told.
fn fetch<T>(
    authority: &str,
    path: &str,
    notes: &mut Vec<String>,
    read: impl FnOnce(&mut Limited<Box<dyn std::io::BufRead + Send>>) -> serde_json::Result<T>,
) -> Option<T> {
    let response = match http::get(authority, path, JSON) {
        Ok(r) => r,
        Err(e) => {
            notes.push(format!("resync: {e}"));
            return None;
        }
    };
    let mut body = Limited::new(response.body, MAX_RESPONSE);
    let read = read(&mut body);
    if body.cut {
        notes.push(format!("resync: GET {path}: an answer over {MAX_RESPONSE} bytes, read as far as that"));
    } else if let Err(e) = &read {
        notes.push(format!("resync: GET {path}: {e}"));
    }
    read.ok()
}

#[derive(Deserialize)]
struct Times {
    created: Option<i64>,
    updated: Option<i64>,
}

#[derive(Deserialize)]
struct SessionHead {
    id: Option<String>,
    time: Option<Times>,
}

/// A session the server listed: when, and what the server said of it. Kept as the server's own
/// text, sized to fit, and wrapped as a record only when handed on: the list holds every session
/// (up to [`MAX_RESPONSE`] of them), so a copy grown by doubling would hold twice that.
struct Listed {
    created: i64,
    updated: i64,
    id: Option<String>,
    raw: Box<RawValue>,
}

/// The server's sessions, in the order they were created (parents before children).
fn sessions(authority: &str, notes: &mut Vec<String>) -> Vec<Listed> {
    let mut listed = Vec::new();
    fetch(authority, "/session", notes, |body| {
        each_element(body, |raw| {
            let head: Option<SessionHead> = serde_json::from_str(raw.get()).ok();
            let time = head.as_ref().and_then(|h| h.time.as_ref());
            listed.push(Listed {
                created: time.and_then(|t| t.created).unwrap_or(0),
                updated: time.and_then(|t| t.updated).unwrap_or(0),
                id: head.and_then(|h| h.id),
                raw,
            });
        })
    });
    listed.sort_by_key(|s| s.created);
    listed
}

#[derive(Deserialize)]
struct WithParts<'a> {
    #[serde(borrow)]
    info: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parts: Vec<&'a RawValue>,
}

/// Hands on `out` once it holds a page; `false` once `send` wants no more.
fn flush(out: &mut Vec<u8>, send: &mut dyn FnMut(Vec<u8>) -> bool, at_least: usize) -> bool {
    out.len() < at_least.max(1) || send(std::mem::take(out))
}

/// A session's messages and their parts.
fn messages(
    authority: &str,
    id: &str,
    out: &mut Vec<u8>,
    send: &mut dyn FnMut(Vec<u8>) -> bool,
    notes: &mut Vec<String>,
) -> bool {
    let path = format!("/session/{}/message", percent_encoding::utf8_percent_encode(id, PATH_SEGMENT));
    let mut wanted = true;
    fetch(authority, &path, notes, |body| {
        each_element(body, |raw| {
            let Ok(m) = serde_json::from_str::<WithParts<'_>>(raw.get()) else { return };
            if let Some(info) = m.info {
                records::sse_state(out, "message.updated", Some(id), "info", info.get());
            }
            for part in m.parts {
                records::sse_state(out, "message.part.updated", Some(id), "part", part.get());
            }
            wanted = wanted && flush(out, send, PAGE_BYTES);
        })
    });
    wanted
}

/// What the server holds, into `send` a page at a time. Returns how many sessions' messages were
/// left out by [`MAX_RESYNC_SESSIONS`], or `None` once `send` wants no more.
pub(super) fn server_state(authority: &str, send: &mut dyn FnMut(Vec<u8>) -> bool) -> Option<usize> {
    let mut notes = Vec::new();
    let listed = sessions(authority, &mut notes);
    let mut newest: Vec<(i64, &str)> = listed.iter().filter_map(|s| Some((s.updated, s.id.as_deref()?))).collect();
    newest.sort_by(|a, b| b.cmp(a));
    let skipped = newest.len().saturating_sub(MAX_RESYNC_SESSIONS);
    let fetch_messages: HashSet<&str> = newest.into_iter().take(MAX_RESYNC_SESSIONS).map(|(_, id)| id).collect();
    let mut out = Vec::new();
    for s in &listed {
        records::sse_state(&mut out, "session.updated", None, "info", s.raw.get());
        if let Some(id) = s.id.as_deref().filter(|id| fetch_messages.contains(id)) {
            if !messages(authority, id, &mut out, send, &mut notes) {
                return None;
            }
        }
        if !flush(&mut out, send, PAGE_BYTES) {
            return None;
        }
    }
    let statuses = fetch(authority, "/session/status", &mut notes, |body| {
        serde_json::from_reader::<_, BTreeMap<String, Box<RawValue>>>(body)
    });
    for (session, status) in statuses.into_iter().flatten() {
        records::sse_state(&mut out, "session.status", Some(&session), "status", status.get());
    }
    for note in notes {
        records::notice(&mut out, "resync", &note);
    }
    flush(&mut out, send, 0).then_some(skipped)
}

/// The sessions a server lists as busy (`GET /session/status`); `None` when no OpenCode server
/// answers there (its answer is an object), so one request both probes a listener and reads it.
pub fn session_status(authority: &str) -> Option<Vec<String>> {
    let response = http::get(authority, "/session/status", JSON).ok()?;
    let statuses: serde_json::Map<String, serde_json::Value> =
        serde_json::from_reader(Limited::new(response.body, MAX_RESPONSE)).ok()?;
    let busy = |s: &serde_json::Value| s.get("type").and_then(serde_json::Value::as_str).is_some_and(|t| t != "idle");
    Some(statuses.into_iter().filter(|(_, s)| busy(s)).map(|(id, _)| id).collect())
}
