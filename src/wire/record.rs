//! One record (a line without its `\n`) to a [`Decoded`] line: in the format its own keys say
//! (wire.md §1), line by line, possibly inside a recording envelope (recording.md) — a Codex
//! app-server message, a swarmtop marker, a Claude Code transcript or stream-json line, a Codex
//! rollout or `codex exec --json` line, an OpenCode record or `opencode run` line, an OTLP record.

use super::claude::{self, ClaudeLine, Reading, stream::StreamLine};
use super::codex::message::{self as codex_message, Dir, Message, Parts, TopRest};
use super::codex::parse_top;
use super::exec::{self, ExecLine};
use super::malformed::{Malformed, Shape};
use super::opencode::{self, OpenCodeLine};
use super::opencode_run::{self, RunLine};
use super::otlp::{self, OtlpLine};
use super::rollout::{self, RolloutLine};

/// A decoded record: its line, and what the recording envelope around it said.
#[derive(Debug)]
pub struct Decoded<'a> {
    /// The envelope's receive time, unix ms.
    pub ts: Option<i64>,
    /// The line's own text, verbatim (inside the envelope when there is one).
    pub raw: &'a str,
    pub line: Line<'a>,
    /// The envelope's `act` (JSON): swarmtop wrote this line into the session, and why.
    pub act: Option<&'a str>,
}

/// A line in the terms of its format: one variant per format swarmtop reads, none the default.
#[derive(Debug)]
// A Codex message is most lines of most inputs and is built in place: boxing it would allocate
// for each of them, where the other formats' lines are boxed once they are read.
#[allow(clippy::large_enum_variant)]
pub enum Line<'a> {
    /// A Codex app-server message (JSON-RPC), and which side sent it (the envelope's `dir`).
    AppServer {
        dir: Dir,
        msg: Message<'a>,
    },
    /// A swarmtop recording header or socket marker (`{"swarmtop": …}`).
    Marker,
    ClaudeTranscript(Box<ClaudeLine<'a>>),
    ClaudeStream(Box<StreamLine<'a>>),
    CodexRollout(Box<RolloutLine<'a>>),
    CodexExec(Box<ExecLine<'a>>),
    OpenCode(Box<OpenCodeLine<'a>>),
    OpenCodeRun(Box<RunLine<'a>>),
    Otlp(Box<OtlpLine>),
}

impl Line<'_> {
    /// The line's own time: `emittedAtMs`, an ISO `timestamp`, a record's time.
    fn time(&self) -> Option<i64> {
        match self {
            Self::AppServer { msg, .. } => msg.emitted_at_ms,
            Self::ClaudeTranscript(l) => l.time(),
            Self::ClaudeStream(l) => l.time(),
            Self::CodexRollout(l) => l.time(),
            Self::OpenCode(l) => l.time(),
            Self::OpenCodeRun(l) => l.time(),
            Self::Otlp(l) => l.time(),
            // `codex exec --json` carries no times.
            Self::Marker | Self::CodexExec(_) => None,
        }
    }
}

impl<'a> Decoded<'a> {
    /// A place to decode into; what it holds is replaced.
    fn slot() -> Self {
        Self { ts: None, raw: "", line: Line::Marker, act: None }
    }

    /// Whether lowering it needs nothing from the lines before it: every format's lines but a
    /// rollout's or `codex exec`'s, whose thread an earlier line named, and a Claude stream-json
    /// line that finishes what earlier lines streamed.
    pub fn lowers_alone(&self) -> bool {
        match &self.line {
            Line::CodexRollout(_) | Line::CodexExec(_) => false,
            Line::ClaudeStream(l) => !l.reads_stream(),
            _ => true,
        }
    }

    /// Its time for the pending window (routing.md §8): the envelope's `ts`, else the line's own.
    pub fn time(&self) -> Option<i64> {
        self.ts.or_else(|| self.line.time())
    }

    /// The thread an app-server message names (`params.threadId`, or `thread.id`), read without
    /// lowering it; a line of another format tells its thread only when lowered.
    pub fn thread(&self) -> Option<&str> {
        match &self.line {
            Line::AppServer { msg, .. } => msg.thread_id(),
            _ => None,
        }
    }

    /// The Codex message the slot holds, made one if it held another line: parsed into in place.
    fn message(&mut self) -> &mut Message<'a> {
        if !matches!(self.line, Line::AppServer { .. }) {
            self.line = Line::AppServer { dir: Dir::Bare, msg: Message::default() };
        }
        match &mut self.line {
            Line::AppServer { msg, .. } => msg,
            _ => unreachable!("made an app-server line above"),
        }
    }
}

/// A record's stream time, what [`Decoded::time`] says (unix ms): the one clock every reader of
/// several inputs merges them by.
pub fn stream_time(record: &[u8]) -> Option<i64> {
    // A merge asks this of every line of a Claude Code session before the line is decoded for
    // what it says: a transcript line's time is read without its message (the line's bulk).
    let text = simdutf8::basic::from_utf8(record).ok()?;
    if starts_like_transcript(text) {
        let mut l = ClaudeLine::default();
        if claude::parse_alone_into(text, Reading::Time, &mut l) {
            return l.time();
        }
    }
    decode_reading(record, Reading::Figures).ok().and_then(|d| d.time())
}

/// Decodes one record, reading it whole. Never panics; every failure is a [`Malformed`] reason.
pub fn decode(record: &[u8]) -> Result<Decoded<'_>, Malformed> {
    decode_reading(record, Reading::Whole)
}

/// [`decode`], reading what `reading` says.
pub fn decode_reading(record: &[u8], reading: Reading) -> Result<Decoded<'_>, Malformed> {
    let mut decoded = Decoded::slot();
    decode_into(record, reading, &mut decoded)?;
    Ok(decoded)
}

/// [`decode_reading`] into a slot: a Codex message is some 200 bytes, and built in place it is
/// never copied from the scanner on (the copies were an eighth of ingest time).
fn decode_into<'a>(record: &'a [u8], reading: Reading, out: &mut Decoded<'a>) -> Result<(), Malformed> {
    // SIMD validation: on the mostly-ASCII lines agents write, several times the standard library's.
    let Ok(text) = simdutf8::basic::from_utf8(record) else {
        return Err(Malformed::NotUtf8);
    };
    // A Claude Code transcript line is read once, not first by the Codex scanner (which walks all
    // of its tool results only to find that it is no Codex message).
    if starts_like_transcript(text) {
        let mut l = Box::<ClaudeLine>::default();
        if claude::parse_alone_into(text, reading, &mut l) {
            *out = Decoded { ts: None, raw: text, line: Line::ClaudeTranscript(l), act: None };
            return Ok(());
        }
    }
    read_into(text, out)
}

/// [`decode_into`] the long way: as a Codex message or envelope first, then as what its keys say.
/// `out` is a fresh slot.
fn read_into<'a>(text: &'a str, out: &mut Decoded<'a>) -> Result<(), Malformed> {
    let mut top = TopRest::default();
    parse_top(text, out.message(), &mut top)?;
    if top.raw_b64 {
        return Err(Malformed::RawBytes);
    }
    let mut dir = Dir::Bare;
    out.raw = text;
    if let Some(inner) = top.envelope_msg {
        dir = match top.dir.as_deref() {
            Some("s2c") => Dir::ServerToClient,
            Some("c2s") => Dir::ClientToServer,
            _ => Dir::In,
        };
        out.ts = top.ts;
        out.raw = inner.get();
        out.act = top.act.map(super::json::Raw::get);
        // The envelope's own members are not the message's.
        top = TopRest::default();
        *out.message() = Message::default();
        let read = parse_top(out.raw, out.message(), &mut top).and_then(|()| finish(out, dir, top.parts));
        // A line with an `act` is swarmtop's own request (the tee wrote it): what it asked of the
        // session is told whatever the request's format says of lines like it (a Claude Code
        // control request names no session).
        if read.is_err() && out.act.is_some() {
            out.line = Line::Marker;
            return Ok(());
        }
        return read;
    }
    finish(out, dir, top.parts)
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

/// A Codex message or marker is finished; anything else is read as the format its keys say
/// (wire.md §1).
fn finish<'a>(out: &mut Decoded<'a>, dir: Dir, parts: Parts<'a>) -> Result<(), Malformed> {
    let shape = parts.shape;
    let msg = out.message();
    codex_message::finish(msg, parts)?;
    // A Claude Code line can carry an `id` of its own (2.1.332 `api-request`) without being a
    // JSON-RPC response: its `type` and session keys say what it is.
    let claude = matches!(shape, Shape::ClaudeTranscript | Shape::ClaudeStream);
    let codex = codex_message::is_message(msg) && !(claude && msg.method.is_none() && msg.swarmtop.is_none());
    let marker = msg.swarmtop.is_some();
    if !codex {
        out.line = other(out.raw, shape).ok_or(Malformed::NotAMessage(shape))?;
    } else if marker {
        out.line = Line::Marker;
    } else if let Line::AppServer { dir: sender, .. } = &mut out.line {
        *sender = dir;
    }
    Ok(())
}

/// A line of a format other than the app-server's, read as its `shape` says.
fn other(text: &str, shape: Shape) -> Option<Line<'_>> {
    match shape {
        Shape::ClaudeTranscript => claude::parse(text).map(|l| Line::ClaudeTranscript(Box::new(l))),
        Shape::ClaudeStream => claude::stream::parse(text).map(|l| Line::ClaudeStream(Box::new(l))),
        Shape::CodexRollout => rollout::parse(text).map(|l| Line::CodexRollout(Box::new(l))),
        Shape::OpenCode => opencode::parse(text).map(|l| Line::OpenCode(Box::new(l))),
        Shape::Otlp => otlp::parse(text).map(|l| Line::Otlp(Box::new(l))),
        // An OpenCode line names its session; a `codex exec` line never does.
        Shape::Typed => opencode_run::parse(text)
            .map(|l| Line::OpenCodeRun(Box::new(l)))
            .or_else(|| exec::parse(text).map(|l| Line::CodexExec(Box::new(l)))),
        Shape::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn line(s: &str) -> Decoded<'_> {
        match decode(s.as_bytes()) {
            Ok(l) => l,
            Err(m) => panic!("malformed: {m}"),
        }
    }

    /// The app-server message a line is, and which side sent it.
    fn message<'d, 'a>(l: &'d Decoded<'a>) -> (Dir, &'d Message<'a>) {
        match &l.line {
            Line::AppServer { dir, msg } => (*dir, msg),
            other => panic!("not an app-server message: {other:?}"),
        }
    }

    fn malformed(s: &[u8]) -> Malformed {
        match decode(s) {
            Ok(l) => panic!("decoded: {l:?}"),
            Err(m) => m,
        }
    }

    #[test]
    fn an_act_around_a_request_of_no_known_shape_is_still_swarmtop_s_act() {
        let act = r#"{"ts":5,"dir":"c2s","act":{"kind":"interrupt","by":"swarmtop monitor","target":"a17"},"msg":{"type":"control_request","request_id":"swarmtop-n-1","request":{"subtype":"stop_task","task_id":"a17"}}}"#;
        let l = line(act);
        assert!(matches!(l.line, Line::Marker), "{l:?}");
        assert!(l.act.is_some_and(|a| a.contains("\"target\":\"a17\"")));
        let bare = r#"{"ts":5,"dir":"c2s","msg":{"type":"control_request","request_id":"x","request":{"subtype":"stop_task"}}}"#;
        assert!(decode(bare.as_bytes()).is_err(), "without an act it is what it was: malformed");
    }

    /// Both ways of reading a record, as text to compare.
    fn both_ways(record: &str) -> (String, String) {
        let mut fast = Decoded::slot();
        let fast = format!("{:?}", decode_into(record.as_bytes(), Reading::Whole, &mut fast).map(|()| fast));
        let mut long = Decoded::slot();
        let long = format!("{:?}", read_into(record, &mut long).map(|()| long));
        (fast, long)
    }

    #[test]
    fn stream_json_lines_are_not_taken_for_transcript_lines() {
        let init = r#"{"type":"system","subtype":"init","session_id":"s","uuid":"u","model":"claude-sonnet-4-5"}"#;
        assert!(matches!(line(init).line, Line::ClaudeStream(_)));
        let (fast, long) = both_ways(init);
        assert_eq!(fast, long);
        // A 2.1.332 transcript line with an `id` of its own is still a transcript line.
        let api = r#"{"type":"api-request","sessionId":"s","id":"0fdb","timestamp":"2026-12-01T12:02:44.295Z"}"#;
        assert!(matches!(line(api).line, Line::ClaudeTranscript(_)));
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
        assert_eq!(message(&l).1.method(), Some("item/agentMessage/delta"));
        assert_eq!(message(&l).1.thread_id(), Some("t1"));
        assert!(matches!(message(&l).1.params.delta, Some(Cow::Borrowed("hi"))));
        assert_eq!(l.time(), Some(5));
        assert_eq!(message(&l).0, Dir::Bare);
    }

    #[test]
    fn params_before_method_are_still_read() {
        let l = line(r#"{"params":{"threadId":"t1","willRetry":true},"method":"error"}"#);
        assert_eq!(message(&l).1.thread_id(), Some("t1"));
        assert_eq!(message(&l).1.params.rest().will_retry, Some(true));
    }

    #[test]
    fn envelope_unwraps_verbatim() {
        let inner = r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1","rootTurnId":"u1"}}}"#;
        let rec = format!(r#"{{"ts":42,"dir":"s2c","msg":{inner}}}"#);
        let l = line(&rec);
        assert_eq!(message(&l).0, Dir::ServerToClient);
        assert_eq!(l.ts, Some(42));
        assert_eq!(l.raw, inner);
        assert_eq!(message(&l).1.params.rest().turn.as_ref().unwrap().root_turn_id.as_deref(), Some("u1"));
    }

    #[test]
    fn unknown_method_reusing_a_key_is_not_malformed() {
        let l = line(r#"{"method":"thread/realtime/item/completed","params":{"threadId":"t","item":42,"status":"x"}}"#);
        assert_eq!(message(&l).1.thread_id(), Some("t"));
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
        assert!(matches!(line(r#"{"timestamp":"x","type":"event_msg","payload":{}}"#).line, Line::CodexRollout(_)));
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
        let r = message(&l).1.result.as_ref().unwrap();
        assert_eq!(r.thread.as_ref().unwrap().id, "t");
        assert_eq!(r.model_provider.as_deref(), Some("openai"));
        assert!(matches!(line(r#"{"swarmtop":"recording","version":1}"#).line, Line::Marker));
        let l = line(r#"{"id":3,"result":[]}"#);
        assert!(message(&l).1.result.is_none() && message(&l).1.has_id);
    }

    #[test]
    fn spawn_source_gives_the_parent() {
        let l = line(
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_path":"/root/a","agent_nickname":"Kant"}}}}}}"#,
        );
        let t = message(&l).1.params.rest().thread.as_ref().unwrap();
        assert_eq!(t.parent().as_deref(), Some("p"));
        assert_eq!(t.spawn().unwrap().agent_nickname.as_deref(), Some("Kant"));
    }
}

#[cfg(test)]
mod stream_time_tests {
    use super::*;

    /// Every `.jsonl` and `.ndjson` file below `dir`.
    fn records(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                records(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl" || e == "ndjson") {
                let text = std::fs::read(&path).unwrap();
                out.extend(text.split(|&b| b == b'\n').map(|l| String::from_utf8_lossy(l).into_owned()));
            }
        }
    }

    /// The merge's clock reads a transcript line's time without its message: the time the whole
    /// decode gives, on every line of the real captures (and on lines cut or broken).
    #[test]
    fn a_line_s_time_is_the_time_its_decode_gives() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"));
        let mut lines = Vec::new();
        for dir in ["claude-2.1.39", "claude-2.1.332", "codex-0.171.0", "hostile"] {
            records(&root.join(dir), &mut lines);
        }
        let cut: Vec<String> = lines.iter().step_by(7).map(|l| l[..l.len() / 2].to_owned()).collect();
        let timed = lines.iter().filter(|l| stream_time(l.as_bytes()).is_some()).count();
        assert!(timed > 2000, "{timed} lines with a time");
        for record in lines.iter().chain(&cut) {
            let slow = decode_reading(record.as_bytes(), Reading::Figures).ok().and_then(|d| d.time());
            assert_eq!(stream_time(record.as_bytes()), slow, "{record}");
        }
    }
}
