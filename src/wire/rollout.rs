//! Codex rollout files: what the plain `codex` command line (and the app-server) writes for every
//! session under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<threadId>.jsonl`, one file per
//! thread. Lines are `{"timestamp", "type", "payload"}`; only the first, `session_meta`, names its
//! thread (a child's also its parent), so the router attributes a file's later lines to the thread
//! of the `session_meta` before them.
//!
//! A rollout line becomes a [`Message`] whose method is `rollout/<type>` (with the payload's own
//! type for `response_item` and `event_msg`: `rollout/event_msg/token_count`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::claude::iso8601_ms;
use super::decode::{Message, Str, opt_str};

#[derive(Debug, Deserialize)]
pub struct RolloutLine<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "super::decode::req_str")]
    pub kind: Str<'a>,
    #[serde(borrow, default)]
    pub payload: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub timestamp: Option<Str<'a>>,
}

/// `session_meta`: the thread, and for a sub-agent its parent and names.
#[derive(Debug, Default, Deserialize)]
pub struct SessionMeta<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub parent_thread_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_nickname: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_role: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub source: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct Source<'a> {
    #[serde(borrow, default)]
    subagent: Option<SubAgent<'a>>,
    #[serde(rename = "subAgent", borrow, default)]
    sub_agent: Option<SubAgent<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct SubAgent<'a> {
    #[serde(borrow, default)]
    thread_spawn: Option<super::decode::ThreadSpawn<'a>>,
}

impl<'a> SessionMeta<'a> {
    pub fn spawn(&self) -> Option<super::decode::ThreadSpawn<'a>> {
        let raw = self.source?.get();
        if !raw.starts_with('{') {
            return None;
        }
        let source: Source<'a> = serde_json::from_str(raw).ok()?;
        source.subagent.or(source.sub_agent)?.thread_spawn
    }

    /// The parent: `parent_thread_id`, else the spawn facts in `source`.
    pub fn parent(&self) -> Option<Cow<'a, str>> {
        match &self.parent_thread_id {
            Some(p) if !p.is_empty() => Some(p.clone()),
            _ => self.spawn()?.parent_thread_id.filter(|p| !p.is_empty()),
        }
    }
}

impl<'a> RolloutLine<'a> {
    pub fn session_meta(&self) -> Option<SessionMeta<'a>> {
        (self.kind == "session_meta").then(|| serde_json::from_str(self.payload?.get()).ok())?
    }

    /// The payload as `T`, when it has that shape.
    pub fn payload<T: Deserialize<'a>>(&self) -> Option<T> {
        serde_json::from_str(self.payload?.get()).ok()
    }
}

/// Builds the message of a rollout line; `None` when it is not one.
pub(super) fn message(text: &str) -> Option<Message<'_>> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
        kind: Option<Str<'a>>,
    }
    let line: RolloutLine<'_> = serde_json::from_str(text).ok()?;
    let sub = match &*line.kind {
        "response_item" | "event_msg" => line.payload::<Kind<'_>>().and_then(|k| k.kind),
        _ => None,
    };
    let method = match sub {
        Some(sub) => format!("rollout/{}/{sub}", line.kind),
        None => format!("rollout/{}", line.kind),
    };
    let mut msg = Message {
        method: Some(Cow::Owned(method)),
        emitted_at_ms: line.timestamp.as_deref().and_then(iso8601_ms),
        ..Message::default()
    };
    if let Some(meta) = line.session_meta() {
        msg.params.thread_id = meta.id.map(|id| Cow::Owned(id.into_owned()));
    }
    msg.rollout = Some(Box::new(line));
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_messages() {
        let meta = r#"{"timestamp":"2026-11-29T21:20:08.513Z","type":"session_meta","payload":{"id":"c","parent_thread_id":"p","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_nickname":"Kant"}}},"agent_nickname":"Kant"}}"#;
        let m = message(meta).unwrap();
        assert_eq!(m.method(), Some("rollout/session_meta"));
        assert_eq!(m.thread_id(), Some("c"));
        let line = m.rollout.as_ref().unwrap();
        assert_eq!(line.session_meta().unwrap().parent().as_deref(), Some("p"));
        let count = r#"{"timestamp":"2026-11-29T21:20:09.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#;
        let m = message(count).unwrap();
        assert_eq!(m.method(), Some("rollout/event_msg/token_count"));
        assert_eq!(m.thread_id(), None, "only session_meta names its thread");
        assert!(m.emitted_at_ms.is_some());
    }
}
