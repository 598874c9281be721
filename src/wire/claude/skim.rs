//! A transcript line read in one pass (wire.md §6): the members lowering needs are decoded as the
//! full parse ([`super::parse`]) decodes them, content blocks included; what no fact needs — the
//! bulk of a line: `toolUseResult` beyond `agentId`/`status`, a progress line's nested message,
//! thinking signatures, a tool call's file contents — is stepped over unread.
//!
//! Anything unusual (a member of another format, a key met twice, a value of an unexpected type)
//! gives up with `None`, and the full parse reads the line: this reader only ever agrees with it.

// The outer `None` is "give up, leave it to the full parse"; the inner one is JSON's null.
#![allow(clippy::option_option)]

use super::cursor::{Cursor, Seen};
use super::transcript::{
    AgentResult, Block, CacheCreation, ClaudeLine, ClaudeMessage, Decision, ProgressData, ToolInput, Usage, joined,
};
use crate::wire::json::Str;
use crate::wire::record::Reading;

/// Content nested deeper than this (a tool result inside a tool result …) is left to the full parse.
const MAX_NESTING: u32 = 8;

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
pub fn line_into<'a>(text: &'a str, reading: Reading, line: &mut ClaudeLine<'a>) -> Option<()> {
    let mut c = Cursor::new(text);
    let mut seen = Seen::default();
    let mut snake_session = false;
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        match key {
            b"type" => {
                seen.once(0)?;
                line.kind = c.opt_str()?;
            }
            b"uuid" => {
                seen.once(1)?;
                line.uuid = c.opt_str()?;
            }
            b"sessionId" => {
                seen.once(2)?;
                line.session_id = c.opt_str()?;
            }
            b"agentId" => {
                seen.once(3)?;
                line.agent_id = c.opt_str()?;
            }
            b"isSidechain" => {
                seen.once(4)?;
                line.is_sidechain = c.opt_bool()?;
            }
            b"isMeta" => {
                seen.once(5)?;
                line.is_meta = c.opt_bool()?;
            }
            b"timestamp" => {
                seen.once(6)?;
                line.timestamp = c.opt_str()?;
            }
            b"requestId" => {
                seen.once(7)?;
                line.request_id = c.opt_str()?;
            }
            b"requestSessionId" => {
                seen.once(15)?;
                line.request_session_id = c.opt_str()?;
            }
            b"message" => {
                seen.once(8)?;
                line.message = message(&mut c, reading)?;
            }
            b"data" => {
                seen.once(9)?;
                line.data = progress(&mut c)?;
            }
            b"parentToolUseID" => {
                seen.once(10)?;
                line.parent_tool_use_id = c.opt_str()?;
            }
            b"toolUseResult" => {
                seen.once(11)?;
                line.agent_result = agent_result(&mut c)?;
            }
            b"isApiErrorMessage" => {
                seen.once(12)?;
                line.is_api_error_message = c.opt_bool()?;
            }
            b"apiErrorStatus" => {
                seen.once(13)?;
                line.api_error_status = c.parse()?;
            }
            b"isAbortedMidStream" => {
                seen.once(14)?;
                line.is_aborted_mid_stream = c.opt_bool()?;
            }
            b"subtype" => {
                seen.once(19)?;
                line.subtype = c.opt_str()?;
            }
            b"isCompactSummary" => {
                seen.once(20)?;
                line.is_compact_summary = c.opt_bool()?;
            }
            b"toolDenialKind" => {
                seen.once(21)?;
                line.tool_denial_kind = c.opt_str()?;
            }
            b"entrypoint" => {
                seen.once(18)?;
                line.entrypoint = c.opt_str()?;
            }
            // A failed hook run is read by the full parse; any other attachment is no fact.
            b"attachment" => {
                let raw = c.value()?;
                if super::hook::FAILED_ATTACHMENTS.iter().any(|k| raw.contains(k)) {
                    return None;
                }
            }
            b"permissionDecision" => {
                seen.once(17)?;
                line.permission_decision = decision(&mut c)?;
            }
            // Another format's members: its reader decides.
            b"method" | b"params" | b"id" | b"result" | b"error" | b"emittedAtMs" | b"swarmtop" | b"ts" | b"dir"
            | b"msg" | b"rawB64" | b"payload" => return None,
            // stream-json's spelling; a transcript line may carry it beside `sessionId` (checked below).
            b"session_id" => {
                seen.once(16)?;
                snake_session = true;
                line.note_stream_session_id();
                c.value()?;
            }
            _ => {
                c.value()?;
            }
        }
    }
    c.end()?;
    line.kind.as_ref()?;
    // Without `sessionId`, a snake-case session makes it a stream-json line.
    if snake_session && line.session_id.is_none() {
        return None;
    }
    Some(())
}

fn message<'a>(c: &mut Cursor<'a>, reading: Reading) -> Option<Option<ClaudeMessage<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut m = ClaudeMessage::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        match key {
            b"id" => {
                seen.once(0)?;
                m.id = c.opt_str()?;
            }
            b"model" => {
                seen.once(1)?;
                m.model = c.opt_str()?;
            }
            b"content" => {
                seen.once(2)?;
                m.content = content(c, 0, reading)?;
            }
            b"usage" => {
                seen.once(3)?;
                m.usage = usage(c)?;
            }
            b"stop_reason" => {
                seen.once(4)?;
                m.stop_reason = c.opt_str()?;
            }
            _ => {
                c.value()?;
            }
        }
    }
    Some(Some(m))
}

/// A response's usage, as serde reads it: read here when it is what transcripts write (plain
/// integers, string or integer members beside them), else by serde on the value's text.
fn usage(c: &mut Cursor<'_>) -> Option<Option<Usage>> {
    let mut probe = c.clone();
    if let Some(usage) = plain_usage(&mut probe) {
        *c = probe;
        return Some(usage);
    }
    c.parse()
}

fn plain_usage(c: &mut Cursor<'_>) -> Option<Option<Usage>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut u = Usage::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        c.peek()?;
        match key {
            b"input_tokens" => {
                seen.once(0)?;
                u.input_tokens = c.opt_plain_u64()?;
            }
            b"cache_creation_input_tokens" => {
                seen.once(1)?;
                u.cache_creation_input_tokens = c.opt_plain_u64()?;
            }
            b"cache_read_input_tokens" => {
                seen.once(2)?;
                u.cache_read_input_tokens = c.opt_plain_u64()?;
            }
            b"output_tokens" => {
                seen.once(3)?;
                u.output_tokens = c.opt_plain_u64()?;
            }
            b"cache_creation" => {
                seen.once(4)?;
                u.cache_creation = cache_creation(c)?;
            }
            // Another member (`service_tier`, …): serde would step over it, checking it; what is
            // checked here as serde checks it is a string or a plain number; anything else goes
            // to serde.
            _ => match c.peek()? {
                b'"' => {
                    c.string()?;
                }
                _ => {
                    c.opt_plain_u64()?;
                }
            },
        }
    }
    Some(Some(u))
}

fn cache_creation(c: &mut Cursor<'_>) -> Option<Option<CacheCreation>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut cc = CacheCreation::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        c.peek()?;
        match key {
            b"ephemeral_5m_input_tokens" => {
                seen.once(0)?;
                cc.ephemeral_5m_input_tokens = c.opt_plain_u64()?;
            }
            b"ephemeral_1h_input_tokens" => {
                seen.once(1)?;
                cc.ephemeral_1h_input_tokens = c.opt_plain_u64()?;
            }
            _ => return None,
        }
    }
    Some(Some(cc))
}

/// A message's content: a string is one text block; anything but a string or blocks is none.
fn content<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Option<Vec<Block<'a>>> {
    match c.peek()? {
        b'"' => Some(vec![Block::text(c.string()?)]),
        b'[' => {
            let mut blocks = Vec::new();
            let mut elements = c.array()?;
            while c.next(&mut elements)? {
                blocks.push(block(c, depth, reading)?);
            }
            Some(blocks)
        }
        _ => {
            c.value()?;
            Some(Vec::new())
        }
    }
}

fn block<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Option<Block<'a>> {
    if depth > MAX_NESTING || c.peek()? != b'{' {
        return None;
    }
    let mut b = Block::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        match key {
            b"type" => {
                seen.once(0)?;
                b.kind = c.opt_str()?;
            }
            b"text" => {
                seen.once(1)?;
                b.text = c.opt_str()?;
            }
            b"thinking" => {
                seen.once(2)?;
                b.thinking = c.opt_str()?;
            }
            b"id" => {
                seen.once(3)?;
                b.id = c.opt_str()?;
            }
            b"name" => {
                seen.once(4)?;
                b.name = c.opt_str()?;
            }
            b"input" => {
                seen.once(5)?;
                b.input = tool_input(c)?;
            }
            b"tool_use_id" => {
                seen.once(6)?;
                b.tool_use_id = c.opt_str()?;
            }
            b"content" => {
                seen.once(7)?;
                b.content = result_content(c, depth + 1, reading)?;
            }
            b"is_error" => {
                seen.once(8)?;
                b.is_error = c.opt_bool()?;
            }
            _ => {
                c.value()?;
            }
        }
    }
    Some(b)
}

/// A tool result's text: its string, or its text blocks' a line each; none, stepped over, when
/// only figures are read (a transcript's tool outputs are most of its bytes, and no figure, status
/// or name is read from them).
fn result_content<'a>(c: &mut Cursor<'a>, depth: u32, reading: Reading) -> Option<Str<'a>> {
    if reading == Reading::Figures {
        c.value()?;
        return Some(Str::Borrowed(""));
    }
    match c.peek()? {
        b'"' => c.string(),
        b'[' => {
            let blocks = content(c, depth, reading)?;
            Some(joined(blocks.into_iter().filter_map(|b| b.text)))
        }
        _ => {
            c.value()?;
            Some(Str::Borrowed(""))
        }
    }
}

/// The members of a tool call's input a title reads; an input that is no object reads as none.
fn tool_input<'a>(c: &mut Cursor<'a>) -> Option<ToolInput<'a>> {
    match c.peek()? {
        b'{' => {}
        // serde reads a struct from an array too, by position: left to it.
        b'[' => return None,
        _ => {
            c.value()?;
            return Some(ToolInput::default());
        }
    }
    let mut input = ToolInput::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        let (bit, slot) = match key {
            b"command" => (0, &mut input.command),
            b"description" => (1, &mut input.description),
            b"prompt" => (2, &mut input.prompt),
            b"subagent_type" => (3, &mut input.subagent_type),
            b"file_path" => (4, &mut input.file_path),
            b"pattern" => (5, &mut input.pattern),
            b"url" => (6, &mut input.url),
            b"query" => (7, &mut input.query),
            _ => {
                c.value()?;
                continue;
            }
        };
        seen.once(bit)?;
        *slot = c.opt_str()?;
    }
    Some(input)
}

/// `toolUseResult` as a sub-agent's answer; a string (a failure's text) or a scalar is none.
fn agent_result<'a>(c: &mut Cursor<'a>) -> Option<Option<AgentResult<'a>>> {
    match c.peek()? {
        b'{' => {}
        b'[' => return None,
        _ => {
            c.value()?;
            return Some(None);
        }
    }
    let mut result = AgentResult::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        match key {
            b"agentId" => {
                seen.once(0)?;
                result.agent_id = c.opt_str()?;
            }
            b"status" => {
                seen.once(1)?;
                result.status = c.opt_str()?;
            }
            _ => {
                c.value()?;
            }
        }
    }
    Some(Some(result))
}

/// `permissionDecision`: its `decision`; `source`, `reasonCode` are stepped over.
fn decision<'a>(c: &mut Cursor<'a>) -> Option<Option<Decision<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut d = Decision::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        if key == b"decision" {
            seen.once(0)?;
            d.decision = c.opt_str()?;
        } else {
            c.value()?;
        }
    }
    Some(Some(d))
}

/// A progress line's `data`: its type and agent; its nested message is stepped over.
fn progress<'a>(c: &mut Cursor<'a>) -> Option<Option<ProgressData<'a>>> {
    if c.peek()? != b'{' {
        return c.null();
    }
    let mut data = ProgressData::default();
    let mut seen = Seen::default();
    let mut members = c.object()?;
    while let Some(key) = c.key(&mut members)? {
        match key {
            b"type" => {
                seen.once(0)?;
                data.kind = c.opt_str()?;
            }
            b"agentId" => {
                seen.once(1)?;
                data.agent_id = c.opt_str()?;
            }
            _ => {
                c.value()?;
            }
        }
    }
    Some(Some(data))
}

#[cfg(test)]
mod tests {
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
        let mut outputs = 0;
        for record in text.lines() {
            let mut whole = line(record, Reading::Whole).expect("plain");
            let figures = line(record, Reading::Figures).expect("plain");
            for block in whole.message.iter_mut().flat_map(|m| &mut m.content) {
                if !block.content.is_empty() {
                    outputs += 1;
                    block.content = Str::Borrowed("");
                }
            }
            assert_eq!(format!("{figures:?}"), format!("{whole:?}"), "{record}");
        }
        assert!(outputs > 50, "{outputs} tool outputs");
    }

    #[test]
    fn a_tool_output_is_stepped_over_as_one_value() {
        let record = r#"{"type":"user","uuid":"u","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a \"quoted\" {brace"}],"is_error":true}]}}"#;
        let figures = line(record, Reading::Figures).expect("plain");
        let block = &figures.message.as_ref().unwrap().content[0];
        assert_eq!((block.tool_use_id.as_deref(), block.is_error, block.content.as_ref()), (Some("t"), Some(true), ""));
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
}
