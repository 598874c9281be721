//! Claude Code transcript lines (wire.md §6): `~/.claude/projects/<project>/<sessionId>.jsonl`, with
//! sub-agents in `<sessionId>/subagents/agent-<agentId>.jsonl`.
//!
//! A transcript line becomes a [`Message`] like any other: its method is `claude/<type>` and its
//! thread is the sub-agent's `agentId`, else the session. So the router routes it by the same
//! rules, and only the model needs to know what a Claude line says.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::decode::{Message, Str, opt_str};

pub mod outcome;
pub mod sidecar;
pub mod stream;

/// The parts of a transcript line swarmtop reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeLine<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub uuid: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
    #[serde(default)]
    pub is_sidechain: Option<bool>,
    #[serde(default)]
    pub is_meta: Option<bool>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub timestamp: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub request_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub message: Option<ClaudeMessage<'a>>,
    #[serde(borrow, default)]
    pub data: Option<ProgressData<'a>>,
    #[serde(rename = "parentToolUseID", borrow, default, deserialize_with = "opt_str")]
    pub parent_tool_use_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub tool_use_result: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ClaudeMessage<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model: Option<Str<'a>>,
    /// A string, or an array of content blocks.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub stop_reason: Option<Str<'a>>,
}

/// Anthropic usage of one API response. `input_tokens` excludes the cache.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation: Option<CacheCreation>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: Option<u64>,
}

/// `data` of a `progress` line: a sub-agent's progress names it (`agent_progress`, `agentId`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressData<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
}

/// One content block of a message.
#[derive(Debug, Deserialize)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub text: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub thinking: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub tool_use_id: Option<Str<'a>>,
    /// A tool result's content: a string or blocks.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(default)]
    pub is_error: Option<bool>,
}

/// `toolUseResult` of a tool result line, when a sub-agent answered it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
}

impl<'a> ClaudeLine<'a> {
    /// A compaction side-chain (`acompact-…`) is the session's own work, not a sub-agent.
    pub fn sub_agent(&self) -> Option<&str> {
        self.agent_id.as_deref().filter(|a| !a.is_empty() && !a.starts_with("acompact"))
    }

    /// The thread a line belongs to: its sub-agent, else its session.
    pub fn thread(&self) -> Option<&str> {
        self.sub_agent().or(self.session_id.as_deref()).filter(|t| !t.is_empty())
    }

    /// A line of the session's own work — its file, or its compaction side-chain — which marks the
    /// session as a root. (An inline side-chain line without an `agentId`, the oldest layout, names
    /// no agent and marks nothing.)
    pub fn is_main(&self) -> bool {
        self.sub_agent().is_none() && (self.agent_id.is_some() || self.is_sidechain != Some(true))
    }

    pub fn blocks(&self) -> Vec<Block<'a>> {
        blocks_of(self.message.as_ref().and_then(|m| m.content))
    }

    /// The sub-agent a line announces, with its card (the `Task` / `Agent` tool use), if any.
    pub fn announced_agent(&self) -> Option<(Cow<'a, str>, Option<Cow<'a, str>>)> {
        if let Some(data) = &self.data {
            if data.kind.as_deref() == Some("agent_progress") {
                let agent = data.agent_id.clone().filter(|a| !a.is_empty() && !a.starts_with("acompact"))?;
                return Some((agent, self.parent_tool_use_id.clone()));
            }
        }
        let result: AgentResult<'a> = serde_json::from_str(self.tool_use_result?.get()).ok()?;
        let agent = result.agent_id.filter(|a| !a.is_empty() && !a.starts_with("acompact"))?;
        let card = self.blocks().into_iter().find_map(|b| b.tool_use_id);
        Some((agent, card))
    }
}

/// Content as blocks: a plain string is one text block.
pub fn blocks_of(content: Option<&RawValue>) -> Vec<Block<'_>> {
    let Some(raw) = content else { return Vec::new() };
    if raw.get().starts_with('"') {
        let text: Option<Str<'_>> = serde_json::from_str(raw.get()).ok();
        return text
            .map(|t| {
                vec![Block {
                    kind: Some(Cow::Borrowed("text")),
                    text: Some(t),
                    thinking: None,
                    id: None,
                    name: None,
                    input: None,
                    tool_use_id: None,
                    content: None,
                    is_error: None,
                }]
            })
            .unwrap_or_default();
    }
    serde_json::from_str(raw.get()).unwrap_or_default()
}

/// Builds the message of a transcript line; `None` when it is not one.
pub(super) fn message(text: &str) -> Option<Message<'_>> {
    let line: ClaudeLine<'_> = serde_json::from_str(text).ok()?;
    let kind = line.kind.as_deref()?;
    let mut msg = Message {
        method: Some(Cow::Owned(format!("claude/{kind}"))),
        emitted_at_ms: line.timestamp.as_deref().and_then(iso8601_ms),
        ..Message::default()
    };
    msg.params.thread_id = line.thread().map(|t| Cow::Owned(t.to_owned()));
    msg.claude = Some(Box::new(line));
    Some(msg)
}

/// `2026-02-12T16:02:27.718Z` (or with an offset) to unix ms; `None` when it is not that shape.
pub fn iso8601_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let ms: String = frac[..digits].chars().chain("000".chars()).take(3).collect();
        millis = ms.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = rest[1..].replace(':', "");
            let h: i64 = hm.get(0..2)?.parse().ok()?;
            let m: i64 = hm.get(2..4).map_or(Some(0), |m| m.parse().ok())?;
            sign * (h * 60 + m)
        }
    };
    // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute - offset_min) * 60_000 + second * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso8601_ms("2026-02-12T16:02:27.718Z"), Some(1_770_912_147_718));
        assert_eq!(iso8601_ms("2026-02-12T17:02:27.7+01:00"), Some(1_770_912_147_700));
        assert_eq!(iso8601_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(iso8601_ms("yesterday"), None);
    }

    #[test]
    fn threads_of_lines() {
        let main = r#"{"type":"assistant","sessionId":"s","isSidechain":false,"uuid":"u","timestamp":"2026-02-12T16:02:27.718Z","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3}}}"#;
        let m = message(main).unwrap();
        assert_eq!(m.method(), Some("claude/assistant"));
        assert_eq!(m.thread_id(), Some("s"));
        assert_eq!(m.emitted_at_ms, Some(1_770_912_147_718));
        assert!(m.claude.as_ref().unwrap().is_main());
        let sub = r#"{"type":"user","sessionId":"s","agentId":"a1","isSidechain":true,"uuid":"v"}"#;
        assert_eq!(message(sub).unwrap().thread_id(), Some("a1"));
        let compact = r#"{"type":"user","sessionId":"s","agentId":"acompact-1","isSidechain":true,"uuid":"w"}"#;
        assert_eq!(message(compact).unwrap().thread_id(), Some("s"));
        let snapshot = r#"{"type":"file-history-snapshot","messageId":"x","snapshot":{}}"#;
        assert_eq!(message(snapshot).unwrap().thread_id(), None);
    }

    #[test]
    fn announced_agents() {
        let progress = r#"{"type":"progress","sessionId":"s","uuid":"u","parentToolUseID":"toolu_1","data":{"type":"agent_progress","agentId":"a1","message":{}}}"#;
        let line: ClaudeLine<'_> = serde_json::from_str(progress).unwrap();
        let (agent, card) = line.announced_agent().unwrap();
        assert_eq!((agent.as_ref(), card.as_deref()), ("a1", Some("toolu_1")));
        let result = r#"{"type":"user","sessionId":"s","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"done"}]},"toolUseResult":{"status":"completed","agentId":"a2"}}"#;
        let line: ClaudeLine<'_> = serde_json::from_str(result).unwrap();
        let (agent, card) = line.announced_agent().unwrap();
        assert_eq!((agent.as_ref(), card.as_deref()), ("a2", Some("toolu_2")));
        let bash = r#"{"type":"progress","sessionId":"s","data":{"type":"bash_progress"}}"#;
        assert!(serde_json::from_str::<ClaudeLine<'_>>(bash).unwrap().announced_agent().is_none());
    }
}
