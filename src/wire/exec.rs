//! `codex exec --json` (Codex 0.171.0): what a script piping Codex sees, one JSON object per line,
//! snake_case, with no thread id but on its first line:
//!
//! - `thread.started` {`thread_id`}: the session (a new one, or the resumed one of `codex exec
//!   resume <id>`); every line after it is that thread's;
//! - `turn.started`; `turn.completed` {`usage` {`input_tokens`, `cached_input_tokens`,
//!   `cache_write_input_tokens`, `output_tokens`, `reasoning_output_tokens`}}: the **thread's**
//!   running total (a resumed thread's includes the turns before it), OpenAI semantics;
//!   `turn.failed` {`error` {`message`}}; `error` {`message`} (a retry notice, or the fatal one
//!   before `turn.failed`);
//! - `item.started` / `item.updated` / `item.completed` {`item` {`id`, `type`, ...}}: `agent_message`
//!   and `reasoning` {`text`}, `command_execution` {`command`, `aggregated_output`, `exit_code`,
//!   `status`}, `file_change` {`changes`}, `mcp_tool_call` {`server`, `tool`}, `web_search`
//!   {`query`}, `todo_list`, `error` {`message`}, and `collab_tool_call` {`tool` (`spawn_agent`,
//!   `wait`, `send_input`, `close_agent`, ...), `sender_thread_id`, `receiver_thread_ids`,
//!   `prompt`, `agents_states` {child: {`status`, `message`}}, `status`}.
//!
//! Only the session's own thread is reported: a sub-agent says nothing of its own. Its existence
//! (a completed `spawn_agent`), its state (`agents_states`: `pending_init`, `running`, `completed`,
//! `errored`, `interrupted`, `shutdown`, `not_found`) and its final message come through its
//! parent's collab items; its tokens are in its rollout file only. `codex exec` ends with the
//! session's turn, and a child still running is stopped with it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::fact::{
    AgentOp, Answered, Breakdown, Clean, ErrorFact, Fact, Facts, Format, ItemFact, ItemKind, ItemStatus, Lowered,
    Parentage, SessionEnded, Spawn, Status, StatusChange, StatusFact, Subject, Target, TextRule, ThreadFact, TurnEnded,
    TurnOutcome, TurnRef, TurnStarted, Usage, Via, Weight,
};
use super::json::{Str, opt_str};
use super::origin::Origin;
use super::sanitize;

/// One line of `codex exec --json`.
#[derive(Debug, Default, Deserialize)]
pub struct ExecLine<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub thread_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub item: Option<ExecItem<'a>>,
    #[serde(default)]
    pub usage: Option<ExecUsage>,
    #[serde(borrow, default)]
    pub error: Option<Message<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct ExecUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cached_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning_output_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ExecItem<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub text: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub command: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub aggregated_output: Option<Str<'a>>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(borrow, default)]
    pub changes: Option<Vec<Change<'a>>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub server: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub tool: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub query: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub sender_thread_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub receiver_thread_ids: Option<Vec<Str<'a>>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub prompt: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub agents_states: Option<BTreeMap<Str<'a>, AgentState<'a>>>,
    /// Anything else a newer `codex exec` adds is not read.
    #[serde(borrow, default)]
    pub items: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Change<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub path: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct AgentState<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
}

/// A `codex exec --json` line, or `None` when the text is not one (by its `type`'s spelling).
pub fn parse(text: &str) -> Option<ExecLine<'_>> {
    let line: ExecLine<'_> = serde_json::from_str(text).ok()?;
    let kind = line.kind.as_deref()?;
    let ours = kind == "thread.started" || kind == "error" || kind.starts_with("turn.") || kind.starts_with("item.");
    ours.then_some(line)
}

/// The thread the input's last `thread.started` named: the lines after it are its.
#[derive(Debug, Default)]
pub struct Follow {
    origin: Origin,
    thread: Option<Box<str>>,
    /// Turns started since: a turn has no id of its own here.
    turns: u64,
}

impl Follow {
    fn thread_for(&mut self, origin: &Origin, named: Option<&str>) -> Option<Box<str>> {
        if self.origin != *origin {
            self.origin = origin.clone();
            self.thread = None;
            self.turns = 0;
        }
        if let Some(id) = named.filter(|id| !id.is_empty()) {
            self.thread = Some(id.into());
        }
        self.thread.clone()
    }
}

fn set(target: Target<'_>, status: Status) -> Fact<'_> {
    Fact::Status(StatusFact { target, change: StatusChange::Set(status) })
}

/// Lowers one line; `follow` carries the thread `thread.started` named.
pub fn lower<'l>(line: &'l ExecLine<'_>, origin: &Origin, follow: &mut Follow, out: &mut Lowered<'l>) {
    out.format = Format::CodexExec;
    let kind = line.kind.as_deref().unwrap_or_default();
    let named = if kind == "thread.started" { line.thread_id.as_deref() } else { None };
    let Some(thread) = follow.thread_for(origin, named) else {
        // A line before any `thread.started` (the output's head cut off): nobody's.
        out.subject = Subject::Global;
        return;
    };
    let thread: Cow<'l, str> = Cow::Owned(thread.into_string());
    out.subject = Subject::Thread(thread.clone());
    out.weight = Weight::Output;
    let facts = &mut out.facts;
    match kind {
        "thread.started" => {
            out.weight = Weight::Noise;
            facts.push(Fact::Thread(Box::new(ThreadFact::new(thread, Parentage::Root))));
        }
        "turn.started" => {
            follow.turns = follow.turns.saturating_add(1);
            let turn = Cow::Owned(format!("turn-{}", follow.turns));
            facts.push(Fact::TurnStarted(TurnStarted { turn: Some(turn), own_root_turn: true, ends_previous: true }));
            facts.push(set(Target::Subject, Status::Running));
        }
        "turn.completed" => {
            out.weight = Weight::Closing;
            if let Some(u) = line.usage {
                facts.push(Fact::Usage(Usage::Cumulative { total: Some(breakdown(u)), context: None }));
            }
            facts.push(Fact::TurnEnded(TurnEnded {
                turn: TurnRef::Latest,
                outcome: Some(TurnOutcome::Completed),
                error: None,
            }));
            // `codex exec` exits with its turn: a child still at work is stopped with it.
            facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
            facts.push(set(Target::Subject, Status::Idle));
        }
        "turn.failed" => {
            out.weight = Weight::Closing;
            let error = line.error.as_ref().and_then(|e| e.message.as_deref()).map(sanitize);
            facts.push(Fact::Error(ErrorFact { message: error.clone(), retrying: false, goes_on: false }));
            facts.push(Fact::TurnEnded(TurnEnded { turn: TurnRef::Latest, outcome: Some(TurnOutcome::Failed), error }));
            facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
            facts.push(set(Target::Subject, Status::Failed));
        }
        "error" => {
            // A fatal error is followed by `turn.failed`; until then the turn goes on, and the
            // agent is not failed before it is (issue 19: ✗ showed while the turn still ran).
            let message = line.message.as_deref();
            let retrying = message.is_some_and(|m| m.starts_with("Reconnecting"));
            facts.push(Fact::Error(ErrorFact { message: message.map(sanitize), retrying, goes_on: !retrying }));
            if retrying {
                facts.push(set(Target::Subject, Status::Retrying));
            }
        }
        _ => {
            if let Some(item) = &line.item {
                item_facts(item, kind == "item.completed", out);
            }
        }
    }
}

fn breakdown(u: ExecUsage) -> Breakdown {
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    Breakdown {
        total_tokens: Some(input.saturating_add(output)),
        input_tokens: Some(input),
        cached_input_tokens: u.cached_input_tokens,
        cache_write_input_tokens: u.cache_write_input_tokens,
        cache_write_1h_input_tokens: None,
        output_tokens: Some(output),
        reasoning_output_tokens: u.reasoning_output_tokens,
    }
}

fn kind_of(kind: &str) -> ItemKind {
    match kind {
        "agent_message" => ItemKind::AgentMessage,
        "reasoning" => ItemKind::Reasoning,
        "command_execution" => ItemKind::Command,
        "file_change" => ItemKind::FileChange,
        "mcp_tool_call" => ItemKind::McpTool,
        "web_search" => ItemKind::WebSearch,
        "todo_list" => ItemKind::Plan,
        "collab_tool_call" => ItemKind::Collab,
        other => ItemKind::Other(sanitize(other)),
    }
}

fn status_of(status: &str) -> Option<ItemStatus> {
    Some(match status {
        "in_progress" => ItemStatus::InProgress,
        "completed" => ItemStatus::Completed,
        "failed" => ItemStatus::Failed,
        "declined" => ItemStatus::Declined,
        "interrupted" => ItemStatus::Interrupted,
        _ => return None,
    })
}

fn item_facts<'l>(item: &'l ExecItem<'_>, completed: bool, out: &mut Lowered<'l>) {
    let Some(id) = item.id.as_deref() else { return };
    let kind = kind_of(item.kind.as_deref().unwrap_or_default());
    let (op, tool) = match kind {
        ItemKind::Collab => crate::wire::codex::agent_call(item.tool.as_deref().unwrap_or_default()),
        _ => (None, Clean::new()),
    };
    let said = item.status.as_deref().and_then(status_of).or(completed.then_some(ItemStatus::Completed));
    let collab = kind == ItemKind::Collab;
    let receivers: Vec<Cow<'l, str>> =
        item.receiver_thread_ids.iter().flatten().filter(|r| !r.is_empty()).map(|r| Cow::Borrowed(&**r)).collect();
    let mut fact = ItemFact {
        id: Some(Cow::Borrowed(id)),
        turn: Some(TurnRef::Latest),
        status: said.map(|s| op.map_or(s, |op| op.own_status(s))),
        exit_code: item.exit_code,
        text_rule: if completed { TextRule::Authoritative } else { TextRule::Provisional },
        card: collab,
        started_ms: if completed { None } else { out.time },
        completed_ms: if completed { out.time } else { None },
        receivers: receivers.clone(),
        op,
        tool: collab.then_some(tool),
        ..ItemFact::default()
    };
    describe(&kind, item, &mut fact);
    let is_error = item.kind.as_deref() == Some("error");
    fact.kind = Some(kind);
    let facts = &mut out.facts;
    facts.push(Fact::Item(Box::new(fact)));
    if is_error {
        // An `error` item is a notice (Codex's "non-fatal error"): the turn goes on.
        let message = item.message.as_deref().map(sanitize);
        facts.push(Fact::Error(ErrorFact { message, retrying: false, goes_on: true }));
    }
    if collab {
        let call = Call { id, op, completed, failed: said == Some(ItemStatus::Failed) };
        call_facts(item, &call, receivers, facts);
    }
}

/// An item's title and text, by its kind.
fn describe<'l>(kind: &ItemKind, item: &'l ExecItem<'_>, fact: &mut ItemFact<'l>) {
    match kind {
        ItemKind::AgentMessage | ItemKind::Reasoning => fact.text = item.text.as_deref().map(sanitize),
        ItemKind::Command => {
            fact.title = item.command.as_deref().map(sanitize);
            fact.text = item.aggregated_output.as_deref().map(sanitize);
            fact.text_rule = TextRule::Output;
        }
        ItemKind::FileChange => {
            let paths: Vec<&str> = item.changes.iter().flatten().filter_map(|c| c.path.as_deref()).collect();
            fact.title = Some(sanitize(&paths.join(", ")));
        }
        ItemKind::McpTool => {
            let name = match (item.server.as_deref(), item.tool.as_deref()) {
                (Some(s), Some(t)) => format!("{s}.{t}"),
                (s, t) => s.or(t).unwrap_or_default().to_owned(),
            };
            fact.title = Some(sanitize(&name));
        }
        ItemKind::WebSearch => fact.title = item.query.as_deref().map(sanitize),
        // The prompt is the card's title, as the app-server's item says it (wire::codex): the
        // only name this wire gives a child (it was shown by its short id alone).
        ItemKind::Collab => fact.title = item.prompt.as_deref().filter(|p| !p.is_empty()).map(sanitize),
        _ => fact.text = item.message.as_deref().or(item.text.as_deref()).map(sanitize),
    }
}

/// A call that manages agents, as its item line says it.
struct Call<'l> {
    id: &'l str,
    op: Option<AgentOp>,
    completed: bool,
    /// What the line said of the call (a wait says `failed` when an agent it waited for did).
    failed: bool,
}

/// What a call that manages agents says of them: a spawn registers its children, every call tells
/// how the agents it names are, a close closes them.
fn call_facts<'l>(item: &'l ExecItem<'_>, call: &Call<'l>, receivers: Vec<Cow<'l, str>>, facts: &mut Facts<'l>) {
    let parent = item.sender_thread_id.as_deref().filter(|s| !s.is_empty());
    // A failed spawn spawned nothing; a failed `wait` still says how its children are (one errored).
    if call.op == Some(AgentOp::Spawn) && call.completed && !call.failed {
        for child in &receivers {
            // A child says nothing of its own here: its spawn is all that registers it.
            if let Some(parent) = parent {
                facts.push(Fact::Thread(Box::new(ThreadFact::new(
                    child.clone(),
                    Parentage::Child {
                        parent: Cow::Borrowed(parent),
                        via: Via::CollabAgentToolCall,
                        card: Some(Cow::Borrowed(call.id)),
                    },
                ))));
            }
            facts.push(Fact::Spawn(Spawn {
                child: child.clone(),
                card: Some(Cow::Borrowed(call.id)),
                via: Via::CollabAgentToolCall,
            }));
        }
    }
    // What the parent learnt of each child is the only word of it.
    for (child, state) in item.agents_states.iter().flatten() {
        let child: Cow<'l, str> = Cow::Borrowed(&**child);
        let end = match state.status.as_deref() {
            Some("pending_init") => Status::Pending,
            Some("running") => Status::Running,
            Some("completed") => Status::Idle,
            Some("errored") => Status::Failed,
            Some("interrupted") => Status::Interrupted,
            Some("shutdown") => Status::Closed,
            _ => continue,
        };
        if matches!(end, Status::Idle | Status::Failed) {
            facts.push(Fact::Answered(Answered { child: child.clone(), status: end }));
        }
        facts.push(set(Target::Thread(child), end));
    }
    if call.op == Some(AgentOp::Close) && call.completed {
        for child in receivers {
            facts.push(set(Target::Thread(child), Status::Closed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::record::{Line, decode};

    /// Lowers `lines` in order through one input's context, as the router does.
    fn lowered(lines: &[&str]) -> Vec<(Subject<'static>, String)> {
        let mut stream = crate::wire::Stream::default();
        lines
            .iter()
            .map(|text| {
                let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
                assert!(matches!(line.line, Line::CodexExec(_)), "{text}");
                let out = crate::wire::lower(&line, &Origin::NONE, &mut stream);
                assert_eq!(out.format, Format::CodexExec);
                let subject = match &out.subject {
                    Subject::Thread(t) => Subject::Thread(Cow::Owned(t.to_string())),
                    Subject::Global => Subject::Global,
                    other @ Subject::Control => panic!("{other:?}"),
                };
                (subject, format!("{:?}", out.facts.iter().collect::<Vec<_>>()))
            })
            .collect()
    }

    const STARTED: &str = r#"{"type":"thread.started","thread_id":"t0"}"#;

    #[test]
    fn the_lines_after_thread_started_are_its_threads_and_turns_are_numbered() {
        let got = lowered(&[
            r#"{"type":"turn.started"}"#,
            STARTED,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"done"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":11350,"cached_input_tokens":5632,"cache_write_input_tokens":0,"output_tokens":172,"reasoning_output_tokens":32}}"#,
        ]);
        assert_eq!(got[0], (Subject::Global, "[]".to_owned()), "before any thread.started: nobody's");
        assert!(got[1].1.contains("Root"), "{}", got[1].1);
        assert_eq!(got[2].0, Subject::Thread("t0".into()));
        assert!(got[2].1.contains(r#"turn: Some("turn-1")"#), "{}", got[2].1);
        assert!(got[3].1.contains("AgentMessage") && got[3].1.contains(r#""done""#), "{}", got[3].1);
        let end = &got[4].1;
        assert!(end.contains("Cumulative"), "the thread's running total: {end}");
        assert!(end.contains("input_tokens: Some(11350)") && end.contains("total_tokens: Some(11522)"), "{end}");
        assert!(end.contains("cached_input_tokens: Some(5632)") && end.contains("reasoning_output_tokens: Some(32)"));
        assert!(end.contains("SessionEnded"), "codex exec exits with its turn: {end}");
    }

    #[test]
    fn a_spawn_registers_its_child_under_its_card_and_agents_states_are_its_only_word() {
        let got = lowered(&[
            STARTED,
            r#"{"type":"item.started","item":{"id":"item_1","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t0","receiver_thread_ids":[],"prompt":"TASK-1","agents_states":{},"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t0","receiver_thread_ids":["c1"],"prompt":"TASK-1","agents_states":{"c1":{"status":"pending_init","message":null}},"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_4","type":"collab_tool_call","tool":"wait","sender_thread_id":"t0","receiver_thread_ids":["c1"],"prompt":null,"agents_states":{"c1":{"status":"completed","message":"Child 1 finished"}},"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_5","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t0","receiver_thread_ids":[],"agents_states":{},"status":"failed"}}"#,
        ]);
        assert!(got[1].1.contains(r#"tool: Some("spawnAgent")"#) && got[1].1.contains("card: true"));
        assert!(!got[1].1.contains("Spawn("), "no child before the spawn completes");
        let spawn = &got[2].1;
        assert!(spawn.contains(r#"Child { parent: "t0", via: CollabAgentToolCall, card: Some("item_1") }"#), "{spawn}");
        assert!(spawn.contains(r#"Spawn(Spawn { child: "c1", card: Some("item_1")"#), "{spawn}");
        assert!(spawn.contains(r#"Thread("c1"), change: Set(Pending)"#), "{spawn}");
        let wait = &got[3].1;
        assert!(wait.contains(r#"Answered { child: "c1", status: Idle }"#), "{wait}");
        assert!(!got[4].1.contains("Spawn("), "a failed spawn spawned nothing");
        let failed_wait = lowered(&[
            STARTED,
            r#"{"type":"item.completed","item":{"id":"item_6","type":"collab_tool_call","tool":"wait","sender_thread_id":"t0","receiver_thread_ids":["c2"],"agents_states":{"c2":{"status":"errored","message":"boom"}},"status":"failed"}}"#,
        ]);
        assert!(
            failed_wait[1].1.contains(r#"Thread("c2"), change: Set(Failed)"#),
            "a wait fails with its child: {}",
            failed_wait[1].1
        );
    }

    #[test]
    fn commands_errors_and_failed_turns() {
        let got = lowered(&[
            STARTED,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc ls","aggregated_output":"a\nb\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_9","type":"some_future_item","status":"completed"}}"#,
        ]);
        assert!(got[1].1.contains("Command") && got[1].1.contains(r#"title: Some("bash -lc ls")"#));
        assert!(got[1].1.contains("exit_code: Some(0)"));
        assert!(got[2].1.contains("retrying: true") && got[2].1.contains("Retrying"));
        assert!(got[3].1.contains("Failed") && got[3].1.contains("stream disconnected"));
        assert!(got[4].1.contains(r#"Other("some_future_item")"#), "an unknown item is shown for what it says");
    }

    #[test]
    fn an_error_that_does_not_end_the_turn_does_not_fail_the_agent_before_turn_failed() {
        use crate::model::Status;
        let mut p = crate::pipeline::Pipeline::default();
        let status = |p: &crate::pipeline::Pipeline| p.model.thread(p.find("t0").expect("t0")).status;
        for l in [STARTED, r#"{"type":"turn.started"}"#] {
            p.push(l.as_bytes());
        }
        // A notice item and the fatal error: the turn goes on until `turn.failed` says it ended.
        p.push(br#"{"type":"item.completed","item":{"id":"item_1","type":"error","message":"model refused a tool"}}"#);
        assert_eq!(status(&p), Status::Running, "a non-fatal error item");
        p.push(br#"{"type":"error","message":"stream disconnected before completion"}"#);
        assert_eq!(status(&p), Status::Running, "the turn still runs");
        let t = p.model.thread(p.find("t0").expect("t0"));
        assert_eq!(
            t.last_error.as_ref().map(crate::wire::Clean::as_str),
            Some("stream disconnected before completion")
        );
        p.push(br#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"partial"}}"#);
        assert_eq!(status(&p), Status::Running);
        p.push(br#"{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}"#);
        assert_eq!(status(&p), Status::Failed, "failed once the turn failed");
    }

    #[test]
    fn only_codex_exec_types_are_taken() {
        assert!(parse(r#"{"type":"turn.started"}"#).is_some());
        assert!(parse(r#"{"type":"step_start","sessionID":"ses_1"}"#).is_none());
        assert!(parse(r#"{"type":7}"#).is_none());
    }
}
