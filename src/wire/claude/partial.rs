//! `--include-partial-messages` (stream-json of Claude Code 2.1.332): `stream_event` lines wrap the
//! Messages API's own server-sent events, for the session's responses only (a sub-agent's are never
//! streamed). Each carries `event` and `api_message_id` (= `message.id`):
//!
//! - `message_start` {`message` {`id`, `model`, `usage`}}: the stream-start usage (output 1), the
//!   figure the `assistant` lines repeat;
//! - `content_block_start` {`index`, `content_block` {`type`}}, `content_block_delta` {`index`,
//!   `delta` {`type`: `text_delta` `text` | `thinking_delta` `thinking` | `input_json_delta` |
//!   `signature_delta`}}, `content_block_stop` {`index`}: one block of the response as it streams.
//!   The `assistant` line with the finished block comes *between* its last delta and its stop;
//! - `message_delta` {`usage` {`output_tokens`, ...}}: the response's **final** output figure, the
//!   only place a stream says it;
//! - `message_stop`.
//!
//! A block streams into the item `<message id>#<index>`; the `assistant` line that finishes it
//! names the same item (through [`Partials`]), so its text replaces the deltas' instead of
//! repeating them. Usage goes under the response's key like the `assistant` lines' and is merged by
//! max: the stream-start and final figures of one response are counted once.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Usage;
use crate::wire::fact::{
    Delta, Fact, ItemFact, ItemKind, ItemStatus, Lowered, ModelChange, ResponseUsage, Status, StatusChange, StatusFact,
    Target, TurnRef, Weight,
};
use crate::wire::json::{Str, opt_str};
use crate::wire::{CleanStr, fact};

/// How many responses may stream at once per input. Only a session's own responses are streamed, one
/// at a time; more open at once are sessions piped together. Past the bound the oldest is
/// forgotten: its last block is then written as an item of its own, its final output figure lost.
pub const OPEN_RESPONSES: usize = 16;

/// How many sub-agents' spawning tool uses are remembered per input, to tell whose a line without
/// an `agent_id` is (2.1.63). Past the bound the oldest is forgotten: its lines are the session's.
pub const TASKS: usize = 1024;

/// What the lines of one stream tell about the responses still streaming.
#[derive(Debug, Default)]
pub struct Partials {
    open: Vec<Open>,
    /// Responses forgotten past [`OPEN_RESPONSES`].
    pub forgotten: u64,
    /// Spawning tool use → the sub-agent it started (`task_started`).
    tasks: Vec<(Box<str>, Box<str>)>,
    /// Sub-agents forgotten past [`TASKS`].
    pub forgotten_tasks: u64,
    /// Background commands' task id → their tool use: a task that is no sub-agent.
    commands: Vec<(Box<str>, Box<str>)>,
}

#[derive(Debug)]
struct Open {
    message: Box<str>,
    session: Box<str>,
    model: Option<Box<str>>,
    usage: Usage,
    /// The block streaming now: its index and whether it is text the `assistant` line repeats.
    block: Option<u64>,
}

impl Partials {
    fn get(&mut self, message: &str) -> Option<&mut Open> {
        self.open.iter_mut().find(|o| &*o.message == message)
    }

    fn start(&mut self, message: &str, session: &str, model: Option<&str>, usage: Usage) {
        self.open.retain(|o| &*o.message != message);
        if self.open.len() >= OPEN_RESPONSES {
            self.open.remove(0);
            self.forgotten = self.forgotten.saturating_add(1);
        }
        self.open.push(Open {
            message: message.into(),
            session: session.into(),
            model: model.map(Into::into),
            usage,
            block: None,
        });
    }

    pub(super) fn started(&mut self, card: &str, task: &str) {
        if self.tasks.iter().any(|(c, _)| &**c == card) {
            return;
        }
        if self.tasks.len() >= TASKS {
            self.tasks.remove(0);
            self.forgotten_tasks = self.forgotten_tasks.saturating_add(1);
        }
        self.tasks.push((card.into(), task.into()));
    }

    pub(super) fn command_started(&mut self, task: &str, card: &str) {
        if self.commands.iter().any(|(t, _)| &**t == task) {
            return;
        }
        if self.commands.len() >= TASKS {
            self.commands.remove(0);
            self.forgotten_tasks = self.forgotten_tasks.saturating_add(1);
        }
        self.commands.push((task.into(), card.into()));
    }

    pub(super) fn command_of(&self, task: &str) -> Option<&str> {
        self.commands.iter().find(|(t, _)| &**t == task).map(|(_, c)| &**c)
    }

    pub(super) fn task_of(&self, card: &str) -> Option<&str> {
        self.tasks.iter().find(|(c, _)| &**c == card).map(|(_, t)| &**t)
    }

    /// The response a session streams now: one at a time, the one an event of a CLI that does not
    /// name it (2.1.63: no `api_message_id`) belongs to.
    fn current(&self, session: &str) -> Option<&str> {
        self.open.iter().rev().find(|o| &*o.session == session).map(|o| &*o.message)
    }

    fn stop(&mut self, message: &str) {
        self.open.retain(|o| &*o.message != message);
    }

    /// The item an `assistant` line's block `i` of `count` is, when its response streamed: the one
    /// block of a line is the block streaming now; a line with every block of its response (older
    /// CLIs) numbers them as the stream does.
    pub fn item_of(&self, message: &str, i: usize, count: usize) -> Option<String> {
        let open = self.open.iter().find(|o| &*o.message == message)?;
        let index = if count == 1 { open.block? } else { u64::try_from(i).ok()? };
        Some(item_id(message, index))
    }
}

fn item_id(message: &str, index: u64) -> String {
    format!("{message}#{index}")
}

#[derive(Debug, Default, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    message: Option<EventMessage<'a>>,
    #[serde(borrow, default)]
    content_block: Option<Typed<'a>>,
    #[serde(borrow, default)]
    delta: Option<EventDelta<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Default, Deserialize)]
struct EventMessage<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    model: Option<Str<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Default, Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    kind: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct EventDelta<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    text: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    thinking: Option<Str<'a>>,
}

/// Lowers one `stream_event` line, said by the session (`out.subject` is set by the caller), with
/// the response it names (`api_message_id`).
pub fn lower<'l>(
    session: &str,
    named: Option<&str>,
    event: Option<&'l RawValue>,
    partials: &mut Partials,
    out: &mut Lowered<'l>,
) {
    // An event of a shape this CLI does not write yet is the session's, and no fact.
    let Some(event) = event.and_then(|e| serde_json::from_str::<Event<'l>>(e.get()).ok()) else { return };
    let started = event.message.as_ref().and_then(|m| m.id.clone());
    let current = partials.current(session).map(str::to_owned);
    let Some(message) = named.or(started.as_deref()).or(current.as_deref()) else { return };
    out.weight = Weight::Output;
    match event.kind.as_deref() {
        Some("message_start") => {
            let m = event.message.as_ref();
            let model = m.and_then(|m| m.model.as_deref()).filter(|m| !m.is_empty() && *m != "<synthetic>");
            let usage = m.and_then(|m| m.usage).unwrap_or_default();
            partials.start(message, session, model, usage);
            if let Some(model) = partials.get(message).and_then(|o| o.model.as_deref()) {
                out.facts.push(Fact::Model(ModelChange {
                    target: Target::Subject,
                    model: CleanStr::from(crate::wire::sanitize(model)),
                }));
            }
            out.facts
                .push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(Status::Running) }));
        }
        Some("content_block_start") => {
            let Some(index) = event.index else { return };
            let kind = match event.content_block.as_ref().and_then(|b| b.kind.as_deref()) {
                Some("text") => ItemKind::AgentMessage,
                Some("thinking") => ItemKind::Reasoning,
                // A tool call is an item once the `assistant` line has its input.
                _ => return,
            };
            let Some(open) = partials.get(message) else { return };
            open.block = Some(index);
            out.facts.push(Fact::Item(Box::new(ItemFact {
                id: Some(Cow::Owned(item_id(message, index))),
                turn: Some(TurnRef::Latest),
                kind: Some(kind),
                status: Some(ItemStatus::InProgress),
                ..ItemFact::default()
            })));
        }
        Some("content_block_delta") => {
            let (Some(index), Some(delta)) = (event.index, event.delta) else { return };
            let text = match delta.kind.as_deref() {
                Some("text_delta") => delta.text,
                Some("thinking_delta") => delta.thinking,
                // Tool input and signatures are not shown while they stream.
                _ => None,
            };
            let Some(text) = text else { return };
            if partials.get(message).is_none_or(|o| o.block != Some(index)) {
                return;
            }
            out.facts.push(Fact::Delta(Delta {
                item: Cow::Owned(item_id(message, index)),
                turn: None,
                text: Some(clean(text)),
                part: None,
            }));
        }
        Some("content_block_stop") => {
            if let Some(open) = partials.get(message) {
                open.block = None;
            }
        }
        Some("message_delta") => {
            let Some(open) = partials.get(message) else { return };
            let Some(last) = event.usage else { return };
            let max = |a: Option<u64>, b: Option<u64>| a.max(b);
            let u = &mut open.usage;
            u.input_tokens = max(u.input_tokens, last.input_tokens);
            u.cache_creation_input_tokens = max(u.cache_creation_input_tokens, last.cache_creation_input_tokens);
            u.cache_read_input_tokens = max(u.cache_read_input_tokens, last.cache_read_input_tokens);
            u.output_tokens = max(u.output_tokens, last.output_tokens);
            let tokens = u.breakdown();
            let model = open.model.as_deref().map(|m| CleanStr::from(crate::wire::sanitize(m)));
            out.facts.push(Fact::Usage(fact::Usage::Response(Box::new(ResponseUsage {
                key: (Cow::Owned(message.to_owned()), Cow::Borrowed("")),
                context: fact::ContextFill::of_response(&tokens),
                tokens,
                model,
            }))));
        }
        Some("message_stop") => partials.stop(message),
        _ => {}
    }
}

fn clean(text: Str<'_>) -> CleanStr<'_> {
    match text {
        Cow::Borrowed(s) => CleanStr::new(s),
        Cow::Owned(s) => CleanStr::from(crate::wire::sanitize(&s)),
    }
}

#[cfg(test)]
mod tests {
    use crate::wire::fact::Subject;
    use crate::wire::record::{Line, decode};

    const S: &str = r#""session_id":"s","parent_tool_use_id":null"#;

    /// Lowers `lines` in order through one stream's context, as the router does.
    fn lowered(lines: &[String]) -> Vec<String> {
        let mut stream = crate::wire::Stream::default();
        lines
            .iter()
            .map(|text| {
                let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
                assert!(matches!(line.line, Line::ClaudeStream(_)), "{text}");
                let out = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut stream);
                assert_eq!(out.subject, Subject::Thread("s".into()));
                format!("{:?}", out.facts.iter().collect::<Vec<_>>())
            })
            .collect()
    }

    fn event(message: &str, event: &str) -> String {
        format!(r#"{{"type":"stream_event","event":{event},{S},"uuid":"e","api_message_id":"{message}"}}"#)
    }

    fn response() -> Vec<String> {
        vec![
            event(
                "msg_1",
                r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1000,"cache_creation_input_tokens":300,"cache_read_input_tokens":5000,"output_tokens":1}}}"#,
            ),
            event("msg_1", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
            event(
                "msg_1",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll use "}}"#,
            ),
            event(
                "msg_1",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"two helpers."}}"#,
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_1","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"I'll use two helpers."}}],"usage":{{"input_tokens":1000,"cache_creation_input_tokens":300,"cache_read_input_tokens":5000,"output_tokens":1}}}},{S},"uuid":"a1","request_id":"req_1"}}"#
            ),
            event("msg_1", r#"{"type":"content_block_stop","index":0}"#),
            event(
                "msg_1",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":100}}"#,
            ),
            event("msg_1", r#"{"type":"message_stop"}"#),
        ]
    }

    #[test]
    fn a_streamed_block_is_one_item_the_assistant_line_finishes() {
        let facts = lowered(&response());
        assert!(facts[0].contains("Model") && facts[0].contains("Running"), "{}", facts[0]);
        assert!(
            facts[1].contains(r#"id: Some("msg_1#0")"#) && facts[1].contains("AgentMessage"),
            "the block starts as an item: {}",
            facts[1]
        );
        assert!(facts[2].contains(r#"item: "msg_1#0""#) && facts[2].contains(r#""I'll use ""#), "{}", facts[2]);
        assert!(facts[3].contains(r#""two helpers.""#), "{}", facts[3]);
        assert!(
            facts[4].contains(r#"id: Some("msg_1#0")"#) && facts[4].contains("Completed"),
            "the assistant line finishes the streamed item, not one of its own: {}",
            facts[4]
        );
        assert_eq!(facts[5], "[]");
    }

    #[test]
    fn the_final_output_figure_is_merged_into_the_responses_usage_not_added() {
        let facts = lowered(&response());
        // The assistant line and the message_delta state the same response, under the same key.
        assert!(facts[4].contains(r#"key: ("msg_1", "")"#) && facts[4].contains("output_tokens: Some(1)"));
        assert!(facts[6].contains(r#"key: ("msg_1", "")"#), "{}", facts[6]);
        assert!(
            facts[6].contains("input_tokens: Some(6300)") && facts[6].contains("output_tokens: Some(100)"),
            "the stream-start input with the final output: {}",
            facts[6]
        );
        assert!(facts[6].contains("total_tokens: Some(6400)"));
    }

    #[test]
    fn without_its_start_an_event_is_no_fact_and_the_assistant_line_stands_alone() {
        let lines: Vec<String> = response().into_iter().skip(1).collect();
        let facts = lowered(&lines);
        assert_eq!(facts[0], "[]", "a block of a response never started");
        assert_eq!(facts[1], "[]", "a delta of a block never started");
        assert!(facts[3].contains(r#"id: Some("a1#0")"#), "{}", facts[3]);
        assert_eq!(facts[5], "[]", "no final figure without the start's");
    }

    #[test]
    fn thinking_streams_tool_input_and_signatures_do_not() {
        let lines = vec![
            response()[0].clone(),
            event(
                "msg_1",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            event(
                "msg_1",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Plan"}}"#,
            ),
            event(
                "msg_1",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}"#,
            ),
            event("msg_1", r#"{"type":"content_block_stop","index":0}"#),
            event(
                "msg_1",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Agent","input":{}}}"#,
            ),
            event(
                "msg_1",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"descr"}}"#,
            ),
            event("msg_1", r#"{"type":"future_event","index":1}"#),
        ];
        let facts = lowered(&lines);
        assert!(facts[1].contains("Reasoning"));
        assert!(facts[2].contains(r#""Plan""#));
        assert_eq!(&facts[3..], ["[]", "[]", "[]", "[]", "[]"]);
    }

    #[test]
    fn events_that_do_not_name_their_response_are_the_one_the_session_streams_now() {
        // 2.1.63 writes no `api_message_id`: only `message_start` names the response.
        let unnamed = |line: &String| line.replace(r#","api_message_id":"msg_1""#, "");
        let lines: Vec<String> = response().iter().map(unnamed).collect();
        let facts = lowered(&lines);
        assert!(facts[2].contains(r#"item: "msg_1#0""#), "{}", facts[2]);
        assert!(facts[4].contains(r#"id: Some("msg_1#0")"#), "{}", facts[4]);
        assert!(facts[6].contains("output_tokens: Some(100)"), "{}", facts[6]);
    }

    #[test]
    fn a_sub_agents_line_without_agent_id_is_the_task_its_tool_use_started() {
        let mut stream = crate::wire::Stream::default();
        let mut subject = |text: &str| {
            let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
            let out = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut stream);
            let who = match &out.subject {
                Subject::Thread(t) => t.to_string(),
                other => format!("{other:?}"),
            };
            (who, format!("{:?}", out.facts.iter().collect::<Vec<_>>()))
        };
        subject(
            r#"{"type":"system","subtype":"task_started","task_id":"a7","tool_use_id":"toolu_A","description":"List","session_id":"s"}"#,
        );
        let (who, _) = subject(
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"ls"}]},"parent_tool_use_id":"toolu_A","session_id":"s","uuid":"u2"}"#,
        );
        assert_eq!(who, "a7");
        let (who, _) = subject(
            r#"{"type":"user","message":{"content":[{"type":"text","text":"go"}]},"parent_tool_use_id":"toolu_Z","session_id":"s","uuid":"u3"}"#,
        );
        assert_eq!(who, "s", "a tool use no task started: the session's, as before");
        // The hand-back in the session's tool result ends it (2.1.63 writes no task_updated).
        let (who, facts) = subject(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_A","content":"done"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u4","tool_use_result":{"status":"completed","agentId":"a7"}}"#,
        );
        assert_eq!(who, "s");
        assert!(facts.contains(r#"Answered { child: "a7", status: Idle }"#), "{facts}");
        let (_, launched) = subject(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_B","content":"started"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u5","tool_use_result":{"isAsync":true,"status":"async_launched","agentId":"a8"}}"#,
        );
        assert!(!launched.contains("Answered"), "a background launch has not ended: {launched}");
    }

    #[test]
    fn a_background_command_is_a_task_of_the_session_not_a_sub_agent() {
        let lines = [
            r#"{"type":"system","subtype":"task_started","task_id":"bk1","tool_use_id":"toolu_bg","description":"Build","is_backgrounded":true,"task_type":"local_bash","session_id":"s"}"#,
            r#"{"type":"system","subtype":"task_updated","task_id":"bk1","patch":{"status":"completed","end_time":1},"session_id":"s"}"#,
            r#"{"type":"system","subtype":"task_notification","task_id":"bk1","tool_use_id":"toolu_bg","status":"failed","session_id":"s"}"#,
        ];
        let mut stream = crate::wire::Stream::default();
        let mut facts = Vec::new();
        for text in lines {
            let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
            assert!(!line.lowers_alone(), "a task line reads what task_started said");
            let out = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut stream);
            assert_eq!(out.subject, Subject::Thread("s".into()), "the session's: {text}");
            facts.push(format!("{:?}", out.facts.iter().collect::<Vec<_>>()));
        }
        assert_eq!(facts[0], "[]", "no thread, no spawn");
        assert!(facts[1].contains(r#"id: Some("toolu_bg"), update_only: true"#) && facts[1].contains("Completed"));
        assert!(facts[2].contains("Failed"), "{}", facts[2]);
    }

    #[test]
    fn stream_events_and_the_sessions_assistant_lines_read_the_stream() {
        let line = |text: &str| match decode(text.as_bytes()) {
            Ok(l) => l.lowers_alone(),
            Err(m) => panic!("{m}"),
        };
        assert!(!line(&response()[1]));
        assert!(!line(&response()[4]));
        let child = r#"{"type":"assistant","message":{"id":"m","content":[]},"parent_tool_use_id":"toolu_1","agent_id":"a","session_id":"s","uuid":"u"}"#;
        assert!(line(child), "a sub-agent's responses are never streamed");
    }
}
