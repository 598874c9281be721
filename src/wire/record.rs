//! One record (a line without its `\n`) to a [`Line`]: a Codex message or swarmtop marker,
//! possibly inside a recording envelope (recording.md), else a line of another format swarmtop
//! reads. Which format a line is in is told by its own keys, line by line (wire.md §1).

use super::claude::{self, ClaudeLine, stream::StreamLine};
use super::codex::message::{Dir, Message, Parts, TopRest, parse_top};
use super::codex::{self};
use super::malformed::{Malformed, Shape};
use super::opencode::{self, OpenCodeLine};
use super::rollout::{self, RolloutLine};

/// A line of a format other than Codex app-server messages.
#[derive(Debug)]
pub enum Other<'a> {
    Claude(Box<ClaudeLine<'a>>),
    ClaudeStream(Box<StreamLine<'a>>),
    Rollout(Box<RolloutLine<'a>>),
    OpenCode(Box<OpenCodeLine<'a>>),
    Otlp(Box<super::otlp::OtlpLine>),
    CodexExec(Box<super::exec::ExecLine<'a>>),
    OpenCodeRun(Box<super::opencode_run::RunLine<'a>>),
}

impl Other<'_> {
    fn time(&self) -> Option<i64> {
        match self {
            Self::Claude(l) => l.time(),
            Self::ClaudeStream(l) => l.time(),
            Self::Rollout(l) => l.time(),
            Self::OpenCode(l) => l.time(),
            Self::Otlp(l) => l.time(),
            // `codex exec --json` carries no times.
            Self::CodexExec(_) => None,
            Self::OpenCodeRun(l) => l.time(),
        }
    }
}

#[allow(clippy::large_enum_variant)] // Decoded once per line and matched at once: boxing would cost more.
pub enum Decoded<'a> {
    Line(Line<'a>),
    Malformed(Malformed),
}

/// A decoded record: the message and where it came from.
#[derive(Debug)]
pub struct Line<'a> {
    pub dir: Dir,
    /// The envelope's receive time, unix ms.
    pub ts: Option<i64>,
    pub msg: Message<'a>,
    /// A line of another format, when the record is not a Codex message or marker.
    pub other: Option<Other<'a>>,
    /// The message's own text, verbatim (inside the envelope when there is one).
    pub raw: &'a str,
    /// The envelope's `act` (JSON): swarmtop wrote this line into the session, and why.
    pub act: Option<&'a str>,
}

impl Line<'_> {
    /// A slot for [`decode_into`].
    pub fn empty() -> Self {
        Self { dir: Dir::Bare, ts: None, msg: Message::default(), other: None, raw: "", act: None }
    }

    /// Whether lowering it needs nothing from the lines before it: every format's lines but a
    /// rollout's, whose thread the file's first line may have named, and a Claude stream-json line
    /// that finishes what earlier lines streamed.
    pub fn lowers_alone(&self) -> bool {
        match &self.other {
            Some(Other::Rollout(_) | Other::CodexExec(_)) => false,
            Some(Other::ClaudeStream(l)) => !l.reads_stream(),
            _ => true,
        }
    }

    /// Its time for the pending window (routing.md §8): the envelope's `ts`, else `emittedAtMs`, else
    /// the line's own ISO `timestamp`.
    pub fn time(&self) -> Option<i64> {
        self.ts.or(self.msg.emitted_at_ms).or_else(|| self.other.as_ref().and_then(Other::time))
    }
}

/// How much of a line decoding reads: what its consumer shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reading {
    /// Everything a screen shows: tool outputs too.
    #[default]
    Whole,
    /// What figures, the tree, statuses and names need: a headless command's reading. The bulk of a
    /// Claude Code transcript, its tool outputs, is stepped over unread (its item keeps no text);
    /// every fact but an item's text is what [`Reading::Whole`] gives.
    Figures,
}

/// Decodes one record. Never panics; every failure is a [`Malformed`] reason.
pub fn decode(record: &[u8]) -> Decoded<'_> {
    let mut line = Line::empty();
    match decode_into(record, &mut line) {
        Ok(()) => Decoded::Line(line),
        Err(e) => Decoded::Malformed(e),
    }
}

/// [`decode`] into a line the caller owns. A decoded message is some 200 bytes: built in place it
/// is never copied from the scanner to the router (the copies were an eighth of ingest time).
/// On error the slot holds no meaningful line.
pub fn decode_into<'a>(record: &'a [u8], line: &mut Line<'a>) -> Result<(), Malformed> {
    decode_reading_into(record, line, Reading::Whole)
}

/// [`decode_into`], reading what `reading` says.
pub fn decode_reading_into<'a>(record: &'a [u8], line: &mut Line<'a>, reading: Reading) -> Result<(), Malformed> {
    // SIMD validation: on the mostly-ASCII lines agents write, several times the standard library's.
    let Ok(text) = simdutf8::basic::from_utf8(record) else {
        return Err(Malformed::NotUtf8);
    };
    // A Claude Code transcript line is read once, not first by the Codex scanner (which walks all
    // of its tool results only to find that it is no Codex message).
    if starts_like_transcript(text) {
        let mut l = Box::<ClaudeLine>::default();
        if claude::parse_alone_into(text, reading, &mut l) {
            *line = Line { other: Some(Other::Claude(l)), raw: text, ..Line::empty() };
            return Ok(());
        }
    }
    read_into(text, line)
}

/// [`decode_into`] the long way: as a Codex message or envelope first, then as what its keys say.
fn read_into<'a>(text: &'a str, line: &mut Line<'a>) -> Result<(), Malformed> {
    let mut top = TopRest::default();
    parse_top(text, &mut line.msg, &mut top)?;
    if top.raw_b64 {
        return Err(Malformed::RawBytes);
    }
    if let Some(inner) = top.envelope_msg {
        line.dir = match top.dir.as_deref() {
            Some("s2c") => Dir::ServerToClient,
            Some("c2s") => Dir::ClientToServer,
            _ => Dir::In,
        };
        line.ts = top.ts;
        line.raw = inner.get();
        line.act = top.act.map(super::json::Raw::get);
        // The envelope's own members are not the message's.
        line.msg = Message::default();
        return decode_message_into(inner.get(), line);
    }
    line.dir = Dir::Bare;
    line.ts = None;
    line.raw = text;
    line.act = None;
    finish(line, top.parts, text)
}

/// Whether the first member is one a Claude Code transcript line starts with (a guess that only
/// saves time: [`claude::parse_alone_into`] decides).
fn starts_like_transcript(text: &str) -> bool {
    const FIRST: [&str; 6] =
        ["{\"parentUuid\":", "{\"type\":", "{\"isSidechain\":", "{\"uuid\":", "{\"leafUuid\":", "{\"sessionId\":"];
    // The name's first letter rules out a Codex line (`method`, `id`, `result`) at once.
    matches!(text.as_bytes().get(2), Some(b'p' | b't' | b'i' | b'u' | b'l' | b's'))
        && FIRST.iter().any(|f| text.starts_with(f))
}

fn decode_message_into<'a>(text: &'a str, line: &mut Line<'a>) -> Result<(), Malformed> {
    let mut top = TopRest::default();
    parse_top(text, &mut line.msg, &mut top)?;
    finish(line, top.parts, text)
}

/// A Codex message or marker is finished; anything else is tried as the format its keys suggest
/// (wire.md §1: Claude Code transcripts, Codex rollouts).
pub(crate) fn finish<'a>(line: &mut Line<'a>, parts: Parts<'a>, text: &'a str) -> Result<(), Malformed> {
    line.other = None;
    let shape = parts.shape;
    // A Claude Code line can carry an `id` of its own (2.1.332 `api-request`) without being a
    // JSON-RPC response: its `type` and session keys say what it is.
    let claude = matches!(shape, Shape::ClaudeTranscript | Shape::ClaudeStream);
    codex::message::finish(&mut line.msg, parts)?;
    let codex =
        codex::message::is_message(&line.msg) && !(claude && line.msg.method.is_none() && line.msg.swarmtop.is_none());
    if !codex {
        let other = match shape {
            Shape::ClaudeTranscript => claude::parse(text).map(|l| Other::Claude(Box::new(l))),
            Shape::ClaudeStream => claude::stream::parse(text).map(|l| Other::ClaudeStream(Box::new(l))),
            Shape::CodexRollout => rollout::parse(text).map(|l| Other::Rollout(Box::new(l))),
            Shape::OpenCode => opencode::parse(text).map(|l| Other::OpenCode(Box::new(l))),
            Shape::Otlp => super::otlp::parse(text).map(|l| Other::Otlp(Box::new(l))),
            // An OpenCode line names its session; a `codex exec` line never does.
            Shape::Typed => super::opencode_run::parse(text)
                .map(|l| Other::OpenCodeRun(Box::new(l)))
                .or_else(|| super::exec::parse(text).map(|l| Other::CodexExec(Box::new(l)))),
            Shape::Other => None,
        };
        line.other = Some(other.ok_or(Malformed::NotAMessage(shape))?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn line(s: &str) -> Line<'_> {
        match decode(s.as_bytes()) {
            Decoded::Line(l) => l,
            Decoded::Malformed(m) => panic!("malformed: {m}"),
        }
    }

    fn malformed(s: &[u8]) -> Malformed {
        match decode(s) {
            Decoded::Line(l) => panic!("decoded: {l:?}"),
            Decoded::Malformed(m) => m,
        }
    }

    /// Both ways of reading a record, as text to compare.
    fn both_ways(record: &str) -> (String, String) {
        let mut fast = Line::empty();
        let fast = format!("{:?}", decode_into(record.as_bytes(), &mut fast).map(|()| fast));
        let mut long = Line::empty();
        let long = format!("{:?}", read_into(record, &mut long).map(|()| long));
        (fast, long)
    }

    #[test]
    fn stream_json_lines_are_not_taken_for_transcript_lines() {
        let init = r#"{"type":"system","subtype":"init","session_id":"s","uuid":"u","model":"claude-sonnet-4-5"}"#;
        assert!(matches!(line(init).other, Some(Other::ClaudeStream(_))));
        let (fast, long) = both_ways(init);
        assert_eq!(fast, long);
        // A 2.1.332 transcript line with an `id` of its own is still a transcript line.
        let api = r#"{"type":"api-request","sessionId":"s","id":"0fdb","timestamp":"2026-12-01T12:02:44.295Z"}"#;
        assert!(matches!(line(api).other, Some(Other::Claude(_))));
    }

    #[test]
    fn transcript_lines_read_alone_as_the_long_way_reads_them() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.39/");
        let session = "4d5611e5-241a-462a-8d15-5122611a9569";
        let mut lines = 0;
        for file in [
            format!("{session}.jsonl"),
            format!("{session}/subagents/agent-a2898e3.jsonl"),
            format!("{session}/subagents/agent-acompact-e1f845.jsonl"),
        ] {
            for record in std::fs::read_to_string(format!("{root}{file}")).unwrap().lines() {
                let (fast, long) = both_ways(record);
                assert_eq!(fast, long, "{record}");
                lines += 1;
            }
        }
        assert!(lines > 1600);
    }

    #[test]
    fn lines_that_only_start_like_transcripts_are_read_the_long_way() {
        let t = r#""type":"user","uuid":"u","sessionId":"s""#;
        for record in [
            format!("{{{t},\"method\":\"turn/started\",\"params\":{{\"threadId\":\"x\"}}}}"),
            format!("{{{t},\"method\":null}}"),
            format!("{{{t},\"id\":3,\"result\":{{}}}}"),
            format!("{{{t},\"payload\":{{}},\"timestamp\":\"2026-01-01T00:00:00Z\"}}"),
            format!("{{{t},\"emittedAtMs\":5}}"),
            format!("{{{t},\"ts\":1,\"dir\":\"s2c\",\"msg\":{{\"method\":\"x\"}}}}"),
            format!("{{{t},\"swarmtop\":\"recording\"}}"),
            format!("{{{t},\"rawB64\":\"AA==\"}}"),
            format!("{{{t},\"error\":{{\"message\":\"x\"}}}}"),
            format!("{{{t},\"type\":\"assistant\"}}"),
            format!("{{{t}}} trailing"),
            r#"{"type":"system","subtype":"init","uuid":"u","session_id":"s"}"#.to_owned(),
            r#"{"type":"assistant","uuid":"u","session_id":"s","parent_tool_use_id":null}"#.to_owned(),
            r#"{"type":5,"uuid":"u"}"#.to_owned(),
            r#"{"type":"user"}"#.to_owned(),
            r#"{"type":"file-history-snapshot","messageId":"m"}"#.to_owned(),
            // stream-json carries `uuid` too, and its snake-case `session_id` says what it is.
            r#"{"type":"system","subtype":"init","uuid":"u","session_id":"s","model":"m"}"#.to_owned(),
            r#"{"parentUuid":null,"uuid":"u","type":"user","message":{"content":7}}"#.to_owned(),
        ] {
            let (fast, long) = both_ways(&record);
            assert_eq!(fast, long, "{record}");
        }
    }

    #[test]
    fn notification_borrows_its_strings() {
        let l = line(
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t1","turnId":"u","itemId":"m","delta":"hi"},"emittedAtMs":5}"#,
        );
        assert_eq!(l.msg.method(), Some("item/agentMessage/delta"));
        assert_eq!(l.msg.thread_id(), Some("t1"));
        assert!(matches!(l.msg.params.delta, Some(Cow::Borrowed("hi"))));
        assert_eq!(l.time(), Some(5));
        assert_eq!(l.dir, Dir::Bare);
    }

    #[test]
    fn params_before_method_are_still_read() {
        let l = line(r#"{"params":{"threadId":"t1","willRetry":true},"method":"error"}"#);
        assert_eq!(l.msg.thread_id(), Some("t1"));
        assert_eq!(l.msg.params.rest().will_retry, Some(true));
    }

    #[test]
    fn envelope_unwraps_verbatim() {
        let inner = r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1","rootTurnId":"u1"}}}"#;
        let rec = format!(r#"{{"ts":42,"dir":"s2c","msg":{inner}}}"#);
        let l = line(&rec);
        assert_eq!(l.dir, Dir::ServerToClient);
        assert_eq!(l.ts, Some(42));
        assert_eq!(l.raw, inner);
        assert_eq!(l.msg.params.rest().turn.as_ref().unwrap().root_turn_id.as_deref(), Some("u1"));
    }

    #[test]
    fn unknown_method_reusing_a_key_is_not_malformed() {
        let l = line(r#"{"method":"thread/realtime/item/completed","params":{"threadId":"t","item":42,"status":"x"}}"#);
        assert_eq!(l.msg.thread_id(), Some("t"));
    }

    #[test]
    fn string_status_on_other_methods_is_fine() {
        line(r#"{"method":"remoteControl/status/changed","params":{"status":"disabled"}}"#);
    }

    #[test]
    fn wrong_types_where_needed_are_malformed() {
        malformed(br#"{"method":"error","params":{"threadId":"t","willRetry":"yes"}}"#);
        malformed(br#"{"method":"turn/started","params":{"threadId":7}}"#);
        malformed(br#"{"method":"item/completed","params":{"threadId":"t","item":{"type":"collabAgentToolCall","receiverThreadIds":"c"}}}"#);
    }

    #[test]
    fn malformed_kinds() {
        assert_eq!(malformed(b"\xff\xfe"), Malformed::NotUtf8);
        assert!(matches!(malformed(b"{\"method\":"), Malformed::NotJson(_)));
        assert!(matches!(malformed(b"[1,2]"), Malformed::WrongType(_)), "JSON, but not an object");
        assert!(matches!(malformed(br#"{"method":"turn/started","params":{"threadId":7}}"#), Malformed::WrongType(_)));
        assert_eq!(malformed(br#"{"foo":1}"#), Malformed::NotAMessage(Shape::Other));
        // A rollout line is read as one; one whose type is not a word is not.
        assert!(matches!(line(r#"{"timestamp":"x","type":"event_msg","payload":{}}"#).other, Some(Other::Rollout(_))));
        assert_eq!(
            malformed(br#"{"timestamp":"x","type":5,"payload":{}}"#),
            Malformed::NotAMessage(Shape::CodexRollout)
        );
        assert_eq!(malformed(br#"{"ts":1,"dir":"in","rawB64":"AAA="}"#), Malformed::RawBytes);
    }

    #[test]
    fn responses_and_markers() {
        let l = line(
            r#"{"id":2,"result":{"thread":{"id":"t","parentThreadId":null},"model":"gpt-5.5","modelProvider":"openai"}}"#,
        );
        let r = l.msg.result.unwrap();
        assert_eq!(r.thread.unwrap().id, "t");
        assert_eq!(r.model_provider.as_deref(), Some("openai"));
        let l = line(r#"{"swarmtop":"recording","version":1}"#);
        assert_eq!(l.msg.swarmtop.as_deref(), Some("recording"));
        let l = line(r#"{"id":3,"result":[]}"#);
        assert!(l.msg.result.is_none() && l.msg.has_id);
    }

    #[test]
    fn spawn_source_gives_the_parent() {
        let l = line(
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_path":"/root/a","agent_nickname":"Kant"}}}}}}"#,
        );
        let t = l.msg.params.rest().thread.as_ref().unwrap();
        assert_eq!(t.parent().as_deref(), Some("p"));
        assert_eq!(t.spawn().unwrap().agent_nickname.as_deref(), Some("Kant"));
    }
}
