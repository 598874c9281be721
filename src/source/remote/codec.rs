//! The machine view's events on the wire between `serve` (`/api/feed`) and `swarmtop --server`:
//! each [`Event`] as one server-sent event, its kind the `event:` field and its facts the `data:`
//! line. Records travel as base64 (a file's bytes need not be UTF-8, and JSON escaping can grow
//! one control byte to six); everything else as one line of JSON. What a server sends is
//! untrusted here: text is sanitised as it is read back, an agent this swarmtop does not know is
//! counted in the snapshot's trouble, never trusted as a name.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::source::agents;
use crate::source::live::{End, Event, Records, ResetReason};
use crate::source::proc::Usage;
use crate::source::seen::{Seen, Snapshot, State, Trouble};
use crate::wire::{Clean, Origin, OriginInfo, sanitize_line};

/// Most bytes of records in one event: a batch read from a file may be several megabytes, and a
/// client bounds the line it reads (one record longer than this still goes alone).
pub const RECORDS_PER_EVENT: usize = 1 << 20;

/// One event as it goes out: its kind and its data line (no newline in either).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    pub kind: &'static str,
    pub data: String,
}

impl Wire {
    fn json(kind: &'static str, data: &Value) -> Self {
        Self { kind, data: data.to_string() }
    }

    /// The event in the `text/event-stream` format.
    pub fn frame(&self) -> String {
        let mut out = String::new();
        self.frame_into(&mut out);
        out
    }

    /// [`Self::frame`] added to `out`, with no copy of the data beside it.
    pub fn frame_into(&self, out: &mut String) {
        out.reserve(self.kind.len() + self.data.len() + 16);
        for part in ["event: ", self.kind, "\ndata: ", &self.data, "\n\n"] {
            out.push_str(part);
        }
    }
}

/// `event` as what goes on the wire (nothing for what only means something to the source's own
/// consumer: its connection to a tee, a replay's followed file).
pub fn encode(event: &Event) -> Vec<Wire> {
    let one = |kind, data: Value| vec![Wire::json(kind, &data)];
    match event {
        Event::Records(records) => records_events(records.as_bytes()),
        Event::Oversized { len, head } => one("oversized", json!({"len": len, "head": B64.encode(head)})),
        Event::Live => one("live", json!({})),
        Event::Reset(reason) => one("reset", reset_json(*reason)),
        Event::Notice(text) => one("notice", json!({"text": text.as_str()})),
        Event::Origin(origin) => one("origin", origin_json(origin)),
        Event::Sessions(snapshot) => one("sessions", snapshot_json(snapshot)),
        Event::Stopped { id, guessed_at_ms } => one("stopped", json!({"id": id, "guessedAtMs": guessed_at_ms})),
        Event::Resumed(id) => one("resumed", json!({"id": id})),
        Event::Ended(end) => one("ended", end_json(end)),
        Event::Connected { .. } | Event::Disconnected { .. } | Event::Followed(_) => Vec::new(),
    }
}

/// Records cut at record ends into events of at most [`RECORDS_PER_EVENT`] bytes.
fn records_events(mut bytes: &[u8]) -> Vec<Wire> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let cut = if bytes.len() <= RECORDS_PER_EVENT {
            bytes.len()
        } else {
            memchr::memrchr(b'\n', &bytes[..RECORDS_PER_EVENT])
                .or_else(|| memchr::memchr(b'\n', bytes))
                .map_or(bytes.len(), |i| i + 1)
        };
        out.push(Wire { kind: "records", data: B64.encode(&bytes[..cut]) });
        bytes = &bytes[cut..];
    }
    out
}

fn reset_json(reason: ResetReason) -> Value {
    match reason {
        ResetReason::Lagged { dropped_from_ms } => json!({"reason": "lagged", "droppedFromMs": dropped_from_ms}),
        ResetReason::Reconnected => json!({"reason": "reconnected"}),
    }
}

fn end_json(end: &End) -> Value {
    match end {
        End::Exited(code) => json!({"end": "exited", "code": code}),
        End::Closed => json!({"end": "closed"}),
        End::Failed(why) => json!({"end": "failed", "reason": why.as_str()}),
    }
}

fn origin_json(origin: &Origin) -> Value {
    origin.info().map_or(Value::Null, |o| {
        json!({
            "file": o.file.as_deref(),
            "thread": o.thread.as_deref(),
            "session": o.session.as_deref(),
            "sidecar": o.sidecar,
            "ahead": o.ahead,
        })
    })
}

fn path_json(path: &std::path::Path) -> Value {
    Value::String(path.to_string_lossy().into_owned())
}

fn snapshot_json(s: &Snapshot) -> Value {
    let sessions: Vec<Value> = s
        .sessions
        .iter()
        .map(|seen| {
            json!({
                "tool": seen.tool,
                "id": seen.id,
                "project": seen.project.as_ref().map(Clean::as_str),
                "source": seen.source.as_str(),
                "state": seen.state.as_str(),
                "pid": seen.pid,
                "usage": seen.usage.map(|u| json!({"cpuPercent": u.cpu_percent, "rssBytes": u.rss_bytes})),
                "lastActivityMs": seen.last_activity_ms,
            })
        })
        .collect();
    let looked_in: Vec<Value> = s.looked_in.iter().map(|(tool, dir)| json!([tool, path_json(dir)])).collect();
    json!({
        "sessions": sessions,
        "lookedIn": looked_in,
        "teeDir": path_json(&s.tee_dir),
        "home": s.home.as_deref().map(path_json),
        "trouble": {
            "notRegular": s.trouble.not_regular,
            "namesNotUtf8": s.trouble.names_not_utf8,
            "unreadable": s.trouble.unreadable,
            "samples": s.trouble.samples.iter().map(Clean::as_str).collect::<Vec<_>>(),
        },
    })
}

/// An event the server sent that cannot be read back: its kind and why, on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

/// The event a server sent as `kind` with `data`; `None` for a kind that means nothing here.
pub fn decode(kind: &str, data: &str) -> Result<Option<Event>, Unreadable> {
    let bad = |why: &str| Unreadable(sanitize_line(&format!("a {kind} event: {why}")).as_str().to_owned());
    if kind == "records" {
        let mut bytes = B64.decode(data.trim()).map_err(|e| bad(&e.to_string()))?;
        if bytes.last().is_some_and(|&b| b != b'\n') {
            // Records end in a newline: a server that cut one is read as far as it is whole.
            bytes.push(b'\n');
        }
        return Ok(Some(Event::Records(Records::new(bytes))));
    }
    let v: Value = serde_json::from_str(data).map_err(|e| bad(&e.to_string()))?;
    let text = |key: &str| v[key].as_str().map(str::to_owned);
    Ok(Some(match kind {
        "oversized" => Event::Oversized {
            len: v["len"].as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| bad("no len"))?,
            head: B64.decode(v["head"].as_str().unwrap_or_default()).map_err(|e| bad(&e.to_string()))?,
        },
        "live" => Event::Live,
        "reset" => Event::Reset(match v["reason"].as_str() {
            Some("lagged") => ResetReason::Lagged { dropped_from_ms: v["droppedFromMs"].as_i64().unwrap_or(0) },
            _ => ResetReason::Reconnected,
        }),
        "notice" => Event::Notice(sanitize_line(&text("text").unwrap_or_default())),
        "origin" => Event::Origin(origin_of(&v)),
        "sessions" => Event::Sessions(Box::new(snapshot_of(&v).ok_or_else(|| bad("not a snapshot"))?)),
        "stopped" => {
            Event::Stopped { id: text("id").ok_or_else(|| bad("no id"))?, guessed_at_ms: v["guessedAtMs"].as_i64() }
        }
        "resumed" => Event::Resumed(text("id").ok_or_else(|| bad("no id"))?),
        "ended" => Event::Ended(match v["end"].as_str() {
            Some("exited") => End::Exited(v["code"].as_i64().and_then(|c| i32::try_from(c).ok()).unwrap_or(-1)),
            Some("failed") => End::Failed(sanitize_line(&text("reason").unwrap_or_default())),
            _ => End::Closed,
        }),
        _ => return Ok(None),
    }))
}

fn origin_of(v: &Value) -> Origin {
    if v.is_null() {
        return Origin::NONE;
    }
    let text = |key: &str| v[key].as_str().map(Into::into);
    Origin::new(OriginInfo {
        file: text("file"),
        thread: text("thread"),
        session: text("session"),
        sidecar: v["sidecar"].as_bool().unwrap_or(false),
        ahead: v["ahead"].as_bool().unwrap_or(false),
    })
}

/// The registry's own name for an agent the server names.
fn agent_named(name: &str) -> Option<&'static str> {
    agents::AGENTS.iter().map(|a| a.name).find(|&n| n == name)
}

fn count(v: &Value) -> usize {
    v.as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0)
}

fn snapshot_of(v: &Value) -> Option<Snapshot> {
    let mut trouble = Trouble {
        not_regular: count(&v["trouble"]["notRegular"]),
        names_not_utf8: count(&v["trouble"]["namesNotUtf8"]),
        unreadable: count(&v["trouble"]["unreadable"]),
        samples: Vec::new(),
    };
    for sample in v["trouble"]["samples"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        trouble.sample(sample);
    }
    let mut sessions = Vec::new();
    for s in v["sessions"].as_array()? {
        match seen_of(s) {
            Ok(seen) => sessions.push(seen),
            Err(why) => trouble.unreadable(&why),
        }
    }
    let looked_in = v["lookedIn"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some((agent_named(pair[0].as_str()?)?, PathBuf::from(pair[1].as_str()?))))
        .collect();
    Some(Snapshot {
        sessions,
        looked_in,
        tee_dir: PathBuf::from(v["teeDir"].as_str().unwrap_or_default()),
        home: v["home"].as_str().map(PathBuf::from),
        trouble,
    })
}

fn seen_of(s: &Value) -> Result<Seen, String> {
    let tool = s["tool"].as_str().unwrap_or_default();
    let Some(tool) = agent_named(tool) else {
        return Err(format!("the server's session of an agent this swarmtop does not know: {tool}"));
    };
    let id = s["id"].as_str().ok_or("the server sent a session with no id")?.to_owned();
    let state = match s["state"].as_str() {
        Some("live") => State::Live,
        Some("idle") => State::Idle,
        _ => State::Ended,
    };
    let usage = s["usage"].as_object().map(|u| Usage {
        cpu_percent: u.get("cpuPercent").and_then(Value::as_f64).unwrap_or(0.0),
        rss_bytes: u.get("rssBytes").and_then(Value::as_u64).unwrap_or(0),
    });
    Ok(Seen {
        tool,
        id,
        project: s["project"].as_str().map(sanitize_line),
        source: sanitize_line(s["source"].as_str().unwrap_or_default()),
        state,
        pid: s["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
        usage,
        last_activity_ms: s["lastActivityMs"].as_i64(),
    })
}

/// How long a client waits before connecting again after `failures` failed attempts in a row.
pub fn backoff(failures: u32) -> Duration {
    Duration::from_millis(250u64.saturating_mul(1 << failures.min(5))).min(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(event: &Event) -> Vec<Event> {
        encode(event).iter().map(|w| decode(w.kind, &w.data).unwrap().unwrap()).collect()
    }

    #[test]
    fn every_event_a_machine_source_sends_comes_back_as_it_went() {
        let origin = Origin::new(OriginInfo {
            file: Some("/h/.claude/projects/p/s/subagents/agent-a1.jsonl".into()),
            thread: Some("a1".into()),
            session: Some("s".into()),
            sidecar: false,
            ahead: true,
        });
        let mut trouble = Trouble::default();
        trouble.unreadable("/h/x: denied");
        let snapshot = Snapshot {
            sessions: vec![Seen {
                tool: agents::AGENTS[0].name,
                id: "s".into(),
                project: Some(sanitize_line("/h/web")),
                source: sanitize_line("/h/.claude/projects/p/s.jsonl"),
                state: State::Live,
                pid: Some(42),
                usage: Some(Usage { cpu_percent: 12.5, rss_bytes: 1 << 20 }),
                last_activity_ms: Some(1_796_188_290_000),
            }],
            looked_in: vec![(agents::AGENTS[1].name, PathBuf::from("/h/.codex/sessions"))],
            tee_dir: PathBuf::from("/run/user/1/swarmtop"),
            home: Some(PathBuf::from("/h")),
            trouble,
        };
        for event in [
            Event::Records(Records::new(b"{\"a\":1}\n\xff\xfe not utf-8\n".to_vec())),
            Event::Oversized { len: 20 << 20, head: b"{\"type\":\"x".to_vec() },
            Event::Live,
            Event::Reset(ResetReason::Lagged { dropped_from_ms: 5 }),
            Event::Reset(ResetReason::Reconnected),
            Event::Notice(sanitize_line("a tee refused: too many monitors")),
            Event::Origin(origin),
            Event::Origin(Origin::NONE),
            Event::Sessions(Box::new(snapshot)),
            Event::Stopped { id: "s".into(), guessed_at_ms: Some(7) },
            Event::Resumed("s".into()),
            Event::Ended(End::Exited(3)),
            Event::Ended(End::Failed(sanitize_line("gone"))),
        ] {
            assert_eq!(round_trip(&event), vec![event]);
        }
    }

    #[test]
    fn a_big_batch_goes_in_pieces_cut_at_record_ends() {
        let line = format!("{}\n", "x".repeat(999));
        let bytes = line.repeat(3000).into_bytes();
        let wires = encode(&Event::Records(Records::new(bytes.clone())));
        assert!(wires.len() >= 3, "{}", wires.len());
        let mut back = Vec::new();
        for w in &wires {
            assert!(w.data.len() <= RECORDS_PER_EVENT * 4 / 3 + 4);
            let Some(Event::Records(r)) = decode(w.kind, &w.data).unwrap() else { panic!("records") };
            assert!(r.as_bytes().ends_with(b"\n"));
            back.extend_from_slice(r.as_bytes());
        }
        assert_eq!(back, bytes);
    }

    #[test]
    fn what_a_server_sends_is_never_trusted() {
        let Ok(Some(Event::Notice(text))) = decode("notice", r#"{"text":"\u001b]0;owned\u0007 hi\nthere"}"#) else {
            panic!("a notice")
        };
        assert!(!text.as_str().contains('\u{1b}') && !text.as_str().contains('\n'), "{text:?}");
        let data =
            r#"{"sessions":[{"tool":"evil","id":"x"},{"tool":"claude","id":"y","source":"\u001b[2J"}],"teeDir":"/t"}"#;
        let Ok(Some(Event::Sessions(s))) = decode("sessions", data) else { panic!("a snapshot") };
        assert_eq!(s.sessions.len(), 1, "the unknown agent's row is counted, not shown");
        assert_eq!(s.trouble.unreadable, 1);
        assert!(!s.sessions[0].source.as_str().contains('\u{1b}'));
        assert!(decode("records", "not base64!").is_err());
        assert!(decode("stopped", "{}").is_err());
        assert_eq!(decode("something-newer", "{}"), Ok(None));
    }
}
