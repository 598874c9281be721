//! A transcript line read in one pass (wire.md §6): the members lowering needs are decoded as the
//! full parse ([`super::parse`]) decodes them, content blocks included; what no fact needs — the
//! bulk of a line: `toolUseResult` beyond `agentId`/`status`, a progress line's nested message,
//! thinking signatures, a tool call's file contents — is stepped over unread.
//!
//! Anything unusual (a member of another format, a key met twice, a value of an unexpected type)
//! gives up with `None`, and the full parse reads the line: this reader only ever agrees with it.

use super::transcript::{
    AgentResult, Block, CacheCreation, ClaudeLine, ClaudeMessage, Decision, ProgressData, ToolInput, Usage, joined,
    parse,
};
use crate::wire::json::{Cursor, Scan, Str};

/// Content nested deeper than this (a tool result inside a tool result …) is left to the full parse.
const MAX_NESTING: u32 = 8;

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
    /// The line's time and what makes it a transcript line, no more: what a merge of several
    /// files orders records by before they are read (`wire::stream_time`). Its message, progress
    /// data and tool result are stepped over unread; the line's other members are read as
    /// [`Reading::Whole`] reads them, so that it is a transcript line exactly when that says so.
    Time,
}

/// [`parse`] of a record that is plainly a transcript line and nothing else, without first
/// reading it as a Codex message: it has a `type`, a `uuid` or `sessionId` (what makes the
/// record reader call it one), and no member of a Codex message, an envelope, a rollout line or a
/// stream-json line; read into `out`, a default line. `false` when that is not plain (and `out`
/// holds anything): the record reader then reads it the long way, to the same end.
pub fn parse_alone_into<'a>(text: &'a str, reading: Reading, out: &mut ClaudeLine<'a>) -> bool {
    // Most lines are read in one pass that steps over what no fact needs; the rest are parsed whole.
    if line_into(text, reading, out).is_some() {
        return out.uuid.is_some() || out.session_id.is_some();
    }
    match parse(text) {
        Some(line) if line.is_plain_transcript() => {
            *out = line;
            true
        }
        _ => false,
    }
}

/// The line, when it is a plain transcript line: a `type`, and no member of a Codex message, an
/// envelope, a rollout line or a stream-json line.
#[cfg(test)]
pub fn line(text: &str, reading: Reading) -> Option<ClaudeLine<'_>> {
    let mut line = ClaudeLine::default();
    line_into(text, reading, &mut line)?;
    Some(line)
}

/// [`line`] read into `line`, a default one (a line is some kilobyte: moved out of here, into its
/// box and on, its copies were a tenth of this reader's time). On `None`, `line` holds part of it.
pub fn line_into<'a>(text: &'a str, reading: Reading, line: &mut ClaudeLine<'a>) -> Scan<()> {
    let mut c = Cursor::new(text);
    let mut snake_session = false;
    c.fields(|f, key| match key {
        b"type" => f.set(0, &mut line.kind),
        b"uuid" => f.set(1, &mut line.uuid),
        b"sessionId" => f.set(2, &mut line.session_id),
        b"agentId" => f.set(3, &mut line.agent_id),
        b"isSidechain" => f.set(4, &mut line.is_sidechain),
        b"isMeta" => f.set(5, &mut line.is_meta),
        b"timestamp" => f.set(6, &mut line.timestamp),
        b"requestId" => f.set(7, &mut line.request_id),
        // Each still given once, as the other readings ask.
        b"message" if reading == Reading::Time => f.once(8)?.skip().map(drop),
        b"data" if reading == Reading::Time => f.once(9)?.skip().map(drop),
        b"toolUseResult" if reading == Reading::Time => f.once(11)?.skip().map(drop),
        b"attachment" if reading == Reading::Time => f.once(22)?.skip().map(drop),
        b"message" => message(f.once(8)?, reading).map(|m| line.message = m),
        b"data" => progress(f.once(9)?).map(|d| line.data = d),
        b"parentToolUseID" => f.set(10, &mut line.parent_tool_use_id),
        b"toolUseResult" => agent_result(f.once(11)?).map(|r| line.agent_result = r),
        b"isApiErrorMessage" => f.set(12, &mut line.is_api_error_message),
        b"apiErrorStatus" => f.once(13)?.parse().map(|s| line.api_error_status = s),
        b"isAbortedMidStream" => f.set(14, &mut line.is_aborted_mid_stream),
        b"requestSessionId" => f.set(15, &mut line.request_session_id),
        b"permissionDecision" => decision(f.once(17)?).map(|d| line.permission_decision = d),
        b"entrypoint" => f.set(18, &mut line.entrypoint),
        b"subtype" => f.set(19, &mut line.subtype),
        b"isCompactSummary" => f.set(20, &mut line.is_compact_summary),
        b"toolDenialKind" => f.set(21, &mut line.tool_denial_kind),
        // A failed hook run is read by the full parse; any other attachment is no fact (given
        // twice, serde refuses the line, and so does this).
        b"attachment" => {
            let raw = f.once(22)?.skip()?;
            (!super::hook::FAILED_ATTACHMENTS.iter().any(|k| raw.contains(k))).then_some(())
        }
        // Another format's members: its reader decides.
        b"method" | b"params" | b"id" | b"result" | b"error" | b"emittedAtMs" | b"swarmtop" | b"ts" | b"dir"
        | b"msg" | b"rawB64" | b"payload" => None,
        // stream-json's spelling; a transcript line may carry it beside `sessionId` (checked below).
        b"session_id" => {
            snake_session = true;
            line.note_stream_session_id();
            f.once(16)?.skip().map(drop)
        }
        _ => f.skip(),
    })?;
    c.end()?;
    line.kind.as_ref()?;
    // Without `sessionId`, a snake-case session makes it a stream-json line.
    if snake_session && line.session_id.is_none() {
        return None;
    }
    Some(())
}

fn message<'a>(c: &mut Cursor<'a>, reading: Reading) -> Scan<Option<ClaudeMessage<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut m = ClaudeMessage::default();
    c.fields(|f, key| match key {
        b"id" => f.set(0, &mut m.id),
        b"model" => f.set(1, &mut m.model),
        b"content" => content(f.once(2)?, 0, reading).map(|v| m.content = v),
        b"usage" => usage(f.once(3)?).map(|u| m.usage = u),
        b"stop_reason" => f.set(4, &mut m.stop_reason),
        _ => f.skip(),
    })?;
    Some(Some(m))
}

/// A response's usage, as serde reads it: read here when it is what transcripts write (plain
/// integers, string or integer members beside them), else by serde on the value's text.
fn usage(c: &mut Cursor<'_>) -> Scan<Option<Usage>> {
    let mut probe = c.clone();
    if let Some(usage) = plain_usage(&mut probe) {
        *c = probe;
        return Some(usage);
    }
    c.parse()
}

fn plain_usage(c: &mut Cursor<'_>) -> Scan<Option<Usage>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut u = Usage::default();
    c.fields(|f, key| match key {
        b"input_tokens" => f.set(0, &mut u.input_tokens),
        b"cache_creation_input_tokens" => f.set(1, &mut u.cache_creation_input_tokens),
        b"cache_read_input_tokens" => f.set(2, &mut u.cache_read_input_tokens),
        b"output_tokens" => f.set(3, &mut u.output_tokens),
        b"cache_creation" => cache_creation(f.once(4)?).map(|cc| u.cache_creation = cc),
        // Another member (`service_tier`, …): serde would step over it, checking it; what is
        // checked here as serde checks it is a string or a plain number; anything else goes
        // to serde.
        _ => {
            let c = f.cursor();
            if c.peek()? == b'"' { c.string().map(drop) } else { c.opt_u64().map(drop) }
        }
    })?;
    Some(Some(u))
}

fn cache_creation(c: &mut Cursor<'_>) -> Scan<Option<CacheCreation>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut cc = CacheCreation::default();
    c.fields(|f, key| match key {
        b"ephemeral_5m_input_tokens" => f.set(0, &mut cc.ephemeral_5m_input_tokens),
        b"ephemeral_1h_input_tokens" => f.set(1, &mut cc.ephemeral_1h_input_tokens),
        _ => None,
    })?;
    Some(Some(cc))
}

/// A message's content: a string is one text block; anything but a string or blocks is none.
fn content<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Scan<Vec<Block<'a>>> {
    match c.peek()? {
        b'"' => Some(vec![Block::text(c.string()?)]),
        b'[' => {
            let mut blocks = Vec::new();
            c.elements(|c| block(c, depth, reading).map(|b| blocks.push(b)))?;
            Some(blocks)
        }
        _ => {
            c.skip()?;
            Some(Vec::new())
        }
    }
}

fn block<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Scan<Block<'a>> {
    if depth > MAX_NESTING || c.peek()? != b'{' {
        return None;
    }
    let mut b = Block::default();
    let mut stepped_over = None;
    c.fields(|f, key| match key {
        b"type" => f.set(0, &mut b.kind),
        b"text" => f.set(1, &mut b.text),
        b"thinking" => f.set(2, &mut b.thinking),
        b"id" => f.set(3, &mut b.id),
        b"name" => f.set(4, &mut b.name),
        b"input" => tool_input(f.once(5)?).map(|i| b.input = i),
        b"tool_use_id" => f.set(6, &mut b.tool_use_id),
        b"content" if reading == Reading::Figures => f.once(7)?.skip().map(|raw| stepped_over = Some(raw)),
        b"content" => result_content(f.once(7)?, depth + 1, reading).map(|t| b.content = t),
        b"is_error" => f.set(8, &mut b.is_error),
        _ => f.skip(),
    })?;
    // A failed result's text is its reason, kept by the run store (`Item::why`: a refused spawn's
    // `Agent type '…' not found` is all it shows): read even for figures, few results fail.
    if let (Some(raw), Some(true)) = (stepped_over, b.is_error) {
        b.content = result_content(&mut Cursor::new(raw), depth + 1, Reading::Whole)?;
    }
    Some(b)
}

/// A tool result's text: its string, or its text blocks' a line each; none, stepped over, when
/// only figures are read (a transcript's tool outputs are most of its bytes, and no figure, status
/// or name is read from them).
fn result_content<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Scan<Str<'a>> {
    if reading == Reading::Figures {
        c.skip()?;
        return Some(Str::Borrowed(""));
    }
    match c.peek()? {
        b'"' => c.string(),
        b'[' => {
            let blocks = content(c, depth, reading)?;
            Some(joined(blocks.into_iter().filter_map(|b| b.text)))
        }
        _ => {
            c.skip()?;
            Some(Str::Borrowed(""))
        }
    }
}

/// The members of a tool call's input a title reads; an input that is no object reads as none.
fn tool_input<'a>(c: &mut Cursor<'a>) -> Scan<ToolInput<'a>> {
    match c.peek()? {
        b'{' => {}
        // serde reads a struct from an array too, by position: left to it.
        b'[' => return None,
        _ => {
            c.skip()?;
            return Some(ToolInput::default());
        }
    }
    let mut input = ToolInput::default();
    c.fields(|f, key| match key {
        b"command" => f.set(0, &mut input.command),
        b"description" => f.set(1, &mut input.description),
        b"prompt" => f.set(2, &mut input.prompt),
        b"subagent_type" => f.set(3, &mut input.subagent_type),
        b"file_path" => f.set(4, &mut input.file_path),
        b"pattern" => f.set(5, &mut input.pattern),
        b"url" => f.set(6, &mut input.url),
        b"query" => f.set(7, &mut input.query),
        _ => f.skip(),
    })?;
    Some(input)
}

/// `toolUseResult` as a sub-agent's answer; a string (a failure's text) or a scalar is none.
fn agent_result<'a>(c: &mut Cursor<'a>) -> Scan<Option<AgentResult<'a>>> {
    match c.peek()? {
        b'{' => {}
        b'[' => return None,
        _ => {
            c.skip()?;
            return Some(None);
        }
    }
    let mut result = AgentResult::default();
    c.fields(|f, key| match key {
        b"agentId" => f.set(0, &mut result.agent_id),
        b"status" => f.set(1, &mut result.status),
        _ => f.skip(),
    })?;
    Some(Some(result))
}

/// `permissionDecision`: its `decision`; `source`, `reasonCode` are stepped over.
fn decision<'a>(c: &mut Cursor<'a>) -> Scan<Option<Decision<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut d = Decision::default();
    c.fields(|f, key| if key == b"decision" { f.set(0, &mut d.decision) } else { f.skip() })?;
    Some(Some(d))
}

/// A progress line's `data`: its type and agent; its nested message is stepped over.
fn progress<'a>(c: &mut Cursor<'a>) -> Scan<Option<ProgressData<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut data = ProgressData::default();
    c.fields(|f, key| match key {
        b"type" => f.set(0, &mut data.kind),
        b"agentId" => f.set(1, &mut data.agent_id),
        _ => f.skip(),
    })?;
    Some(Some(data))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The one-pass reader either gives up or reads what the full parse reads.
    fn agrees(text: &str) -> bool {
        let fast = line(text, Reading::Whole);
        let full = super::super::parse(text);
        if let Some(fast) = &fast {
            assert_eq!(format!("{:?}", Some(fast)), format!("{full:?}"), "{text}");
        }
        fast.is_some()
    }

    /// Members of a default value's Debug text, at its own level.
    fn members(debug: &str) -> usize {
        let mut depth = 0;
        let mut n = 0;
        for (i, c) in debug.char_indices() {
            match c {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                ':' if depth == 1 && debug[i..].starts_with(": ") => n += 1,
                _ => {}
            }
        }
        n
    }

    #[test]
    fn every_member_the_full_parse_reads_is_read_here_too() {
        // A member added to these types must be read by this reader as well (or make it give up):
        // else the fast path would drop it without a word. Update the counts with the reader.
        assert_eq!(members(&format!("{:?}", ClaudeLine::default())), 35, "ClaudeLine");
        assert_eq!(members(&format!("{:?}", ClaudeMessage::default())), 5, "ClaudeMessage");
        assert_eq!(members(&format!("{:?}", Block::default())), 9, "Block");
        assert_eq!(members(&format!("{:?}", ToolInput::default())), 8, "ToolInput");
        assert_eq!(members(&format!("{:?}", AgentResult::default())), 2, "AgentResult");
        assert_eq!(members(&format!("{:?}", ProgressData::default())), 2, "ProgressData");
        assert_eq!(members(&format!("{:?}", Decision::default())), 1, "Decision");
    }

    #[test]
    fn every_fixture_line_reads_as_the_full_parse_reads_it() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.39/");
        let session = "4d5611e5-241a-462a-8d15-5122611a9569";
        let (mut lines, mut fast) = (0, 0);
        for file in [
            format!("{session}.jsonl"),
            format!("{session}/subagents/agent-a2898e3.jsonl"),
            format!("{session}/subagents/agent-acompact-e1f845.jsonl"),
        ] {
            for record in std::fs::read_to_string(format!("{root}{file}")).unwrap().lines() {
                lines += 1;
                fast += usize::from(agrees(record));
            }
        }
        assert!(lines > 1600);
        assert_eq!(fast, lines, "every line of the fixture is plain");
    }

    #[test]
    fn reading_figures_steps_over_tool_outputs_and_reads_the_rest_alike() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.39/");
        let text = std::fs::read_to_string(format!("{root}4d5611e5-241a-462a-8d15-5122611a9569.jsonl")).unwrap();
        let (mut outputs, mut failures) = (0, 0);
        for record in text.lines() {
            let mut whole = line(record, Reading::Whole).expect("plain");
            let figures = line(record, Reading::Figures).expect("plain");
            for block in whole.message.iter_mut().flat_map(|m| &mut m.content) {
                // A failed result's text, its reason, is read either way.
                if block.is_error == Some(true) {
                    failures += 1;
                } else if !block.content.is_empty() {
                    outputs += 1;
                    block.content = Str::Borrowed("");
                }
            }
            assert_eq!(format!("{figures:?}"), format!("{whole:?}"), "{record}");
        }
        assert!(outputs > 50, "{outputs} tool outputs");
        eprintln!("{failures} failed results read whole");
    }

    #[test]
    fn a_tool_output_is_stepped_over_as_one_value() {
        let record = r#"{"type":"user","uuid":"u","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a \"quoted\" {brace"}],"is_error":false}]}}"#;
        let figures = line(record, Reading::Figures).expect("plain");
        let block = &figures.message.as_ref().unwrap().content[0];
        assert_eq!(
            (block.tool_use_id.as_deref(), block.is_error, block.content.as_ref()),
            (Some("t"), Some(false), "")
        );
        // A failed one is read: its text is why it failed (the run store keeps it).
        let failed = record.replace(r#""is_error":false"#, r#""is_error":true"#);
        let figures = line(&failed, Reading::Figures).expect("plain");
        let block = &figures.message.as_ref().unwrap().content[0];
        assert_eq!((block.is_error, block.content.as_ref()), (Some(true), "a \"quoted\" {brace"));
        // A tool output that is not closed is no line, read either way.
        let open = &record[..record.len() - 20];
        assert!(line(open, Reading::Figures).is_none() && line(open, Reading::Whole).is_none());
    }

    #[test]
    fn look_alike_lines_agree_or_are_left_to_the_full_parse() {
        let t = r#""type":"user","uuid":"u","sessionId":"s""#;
        let plain = [
            format!("{{{t}}}"),
            format!(" {{ {t} , \"message\" : null }} "),
            format!("{{{t},\"message\":{{\"content\":\"a \\\"quoted\\\" \\\\ text\\n\"}}}}"),
            format!("{{{t},\"message\":{{\"content\":7}}}}"),
            format!("{{{t},\"message\":{{\"content\":{{\"type\":\"text\"}}}}}}"),
            format!("{{{t},\"message\":{{\"content\":[]}}}}"),
            format!(
                "{{{t},\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"x\",\"content\":[{{\"type\":\"text\",\"text\":\"a\"}},{{\"type\":\"image\",\"source\":{{\"data\":\"}}]\"}}}},{{\"type\":\"text\",\"text\":\"b\"}}]}}]}}}}"
            ),
            format!(
                "{{{t},\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"content\":null}},{{\"type\":\"tool_result\",\"content\":5}}]}}}}"
            ),
            format!(
                "{{{t},\"message\":{{\"content\":[{{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Write\",\"input\":{{\"file_path\":\"/a\",\"content\":\"{{[\\\"\"}}}}]}}}}"
            ),
            format!(
                "{{{t},\"message\":{{\"content\":[{{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"X\",\"input\":\"str\"}}]}}}}"
            ),
            format!("{{{t},\"toolUseResult\":\"Error: failed\"}}"),
            format!("{{{t},\"toolUseResult\":{{\"agentId\":\"a1\",\"status\":\"completed\",\"content\":[{{}}]}}}}"),
            format!(
                "{{{t},\"data\":{{\"type\":\"agent_progress\",\"agentId\":\"a\",\"message\":{{\"x\":[\"}}\"]}}}}}}"
            ),
            format!("{{{t},\"apiErrorStatus\":529,\"isApiErrorMessage\":true}}"),
            format!("{{{t},\"requestId\":\"r\",\"requestSessionId\":\"orig\"}}"),
            format!("{{{t},\"unknown\":{{\"a\":1}},\"unknown\":2}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":3,\"output_tokens\":1}}}}}}"),
            format!(
                "{{{t},\"message\":{{\"usage\":{{\"input_tokens\":0,\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":18446744073709551615,\"cache_creation\":{{\"ephemeral_5m_input_tokens\":5,\"ephemeral_1h_input_tokens\":0}},\"output_tokens\":9,\"service_tier\":\"standard\",\"x\":7}}}}}}"
            ),
            format!("{{{t},\"message\":{{\"usage\":null}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"cache_creation\":null,\"output_tokens\" : 2 }}}}}}"),
            // Left to serde on the value, which reads these too.
            format!(
                "{{{t},\"message\":{{\"usage\":{{\"server_tool_use\":{{\"web_search_requests\":0}},\"output_tokens\":3}}}}}}"
            ),
            format!("{{{t},\"message\":{{\"usage\":{{\"cache_creation\":{{\"other\":1}}}}}}}}"),
            // Interactive 2.1.332: the snake-case session beside the camel one (stale after `/clear`).
            format!("{{{t},\"session_id\":\"before-clear\"}}"),
            // 2.1.332: every tool result's permission check; `reject` is a refused call.
            format!(
                "{{{t},\"permissionDecision\":{{\"decision\":\"reject\",\"source\":\"config\",\"reasonCode\":\"workingDir\"}}}}"
            ),
            format!("{{{t},\"permissionDecision\":null}}"),
            format!("{{{t},\"entrypoint\":\"cli\"}}"),
            format!("{{{t},\"toolDenialKind\":\"user-rejected\"}}"),
            format!("{{{t},\"subtype\":\"local_command\",\"isCompactSummary\":true}}"),
        ];
        for record in &plain {
            assert!(agrees(record), "read in one pass: {record}");
        }
        let left = [
            format!("{{{t},\"type\":\"assistant\"}}"),
            format!("{{{t}}} trailing"),
            format!("{{{t},\"method\":null}}"),
            r#"{"type":"user","uuid":"u","session_id":"s"}"#.to_owned(),
            format!("{{{t},\"isMeta\":1}}"),
            format!("{{{t},\"apiErrorStatus\":1.5}}"),
            format!("{{{t},\"message\":\"text\"}}"),
            format!("{{{t},\"message\":{{\"content\":[7]}}}}"),
            format!("{{{t},\"message\":{{\"content\":[{{\"text\":5}}]}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":-3}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":18446744073709551616}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":1,\"input_tokens\":2}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":01}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"x\":tru}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"output_tokens\":1e1}}}}}}"),
            format!("{{{t},\"message\":{{\"usage\":{{\"input_tokens\":-0}}}}}}"),
            format!("{{{t},\"message\":{{\"content\":\"raw \u{1} byte\"}}}}"),
            format!("{{{t},\"data\":7}}"),
            format!("{{{t},\"toolUseResult\":[1]}}"),
            format!("{{{t},\"permissionDecision\":\"reject\"}}"),
            format!("{{{t},\"entrypoint\":1}}"),
            format!("{{{t},\"isCompactSummary\":\"yes\"}}"),
            format!("{{{t},\"\\u0074ype\":\"x\"}}"),
            format!("{{{t},}}"),
            format!("{{{t}"),
            r#"{"uuid":"u"}"#.to_owned(),
            r#"{"type":5,"uuid":"u"}"#.to_owned(),
        ];
        for record in &left {
            assert!(!agrees(record), "left to the full parse: {record}");
        }
    }

    /// A value for a member: mostly of the shape a transcript writes there, sometimes anything.
    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("7".to_owned()),
            Just("-1.5e3".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("\"u\"".to_owned()),
            Just("\"a\\nb \\\"c\\\" \\u00e9\"".to_owned()),
            Just("\"\\ud83e\"".to_owned()),
            Just("\"2026-02-12T16:02:27.718Z\"".to_owned()),
            Just("{\"type\":\"text\",\"text\":\"hi\"}".to_owned()),
            Just("{\"input_tokens\":3,\"cache_read_input_tokens\":10,\"output_tokens\":2}".to_owned()),
            Just("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Agent\",\"input\":{\"description\":\"d\",\"prompt\":\"p\"}}".to_owned()),
            Just("{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"is_error\":false}".to_owned()),
            Just("{\"agentId\":\"a1\",\"status\":\"completed\"}".to_owned()),
            Just("{\"decision\":\"reject\",\"source\":\"config\"}".to_owned()),
            Just("{\"type\":\"agent_progress\",\"agentId\":\"a\"}".to_owned()),
        ];
        crate::wire::json::arbitrary::nested(leaf, key)
    }

    /// Member names of transcript lines and of what they hold, and a few of other formats'.
    fn key() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(
            &[
                "type",
                "uuid",
                "sessionId",
                "agentId",
                "isSidechain",
                "isMeta",
                "timestamp",
                "requestId",
                "requestSessionId",
                "message",
                "data",
                "parentToolUseID",
                "toolUseResult",
                "isApiErrorMessage",
                "apiErrorStatus",
                "isAbortedMidStream",
                "permissionDecision",
                "entrypoint",
                "subtype",
                "isCompactSummary",
                "toolDenialKind",
                "attachment",
                "session_id",
                "id",
                "model",
                "content",
                "usage",
                "stop_reason",
                "text",
                "thinking",
                "name",
                "input",
                "tool_use_id",
                "is_error",
                "input_tokens",
                "output_tokens",
                "cache_creation",
                "status",
                "decision",
                "method",
                "payload",
                "other",
            ][..],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Whenever the one-pass reader takes a line, it reads what the full parse reads.
        #[test]
        fn the_one_pass_reader_agrees_with_the_full_parse(
            members in proptest::collection::vec((key(), value()), 0..8),
            kind in prop_oneof![Just("\"user\""), Just("\"assistant\""), Just("5")],
        ) {
            let mut parts = vec![format!("\"type\":{kind}"), "\"uuid\":\"u\"".to_owned()];
            parts.extend(members.iter().map(|(k, v)| format!("\"{k}\":{v}")));
            agrees(&format!("{{{}}}", parts.join(",")));
        }
    }
}
