//! `claude -p … --output-format stream-json --verbose` (wire.md §6, captures in NOTES of the e2e run):
//! one JSON object per line, snake_case, told from a transcript line by its `session_id`.
//!
//! What each line says:
//! - `system` `init`: the session (a root) and its model; one per turn (a background child's
//!   notification starts a second turn with a second `init`).
//! - `system` `task_started`: a sub-agent (`task_id` = its agent id) spawned by the tool use
//!   `tool_use_id` of the session, or of `parent_task_id` at depth >= 2; `description`,
//!   `subagent_type`, `spawn_depth`, `is_backgrounded`.
//! - `system` `task_progress`: the sub-agent works; `task_updated` `patch.status` and
//!   `task_notification` `status` end it: `completed`, `failed` (with the error), `killed` / `stopped`.
//! - `tool_progress` with `subagent_retry`: a sub-agent's request failed and is retried.
//! - `assistant` / `user`: a message of the session (`parent_tool_use_id: null`) or of the sub-agent
//!   `agent_id`. Their usage is the stream-start usage (output 1), and much of what sub-agents say is
//!   not emitted at all: per-agent figures from a stream are partial.
//! - `result`: the end of a turn, with `modelUsage`, the CLI's own running total of the whole session
//!   by model (every agent, cumulative over the turns): the figures the partial ones are reconciled with.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::partial::Partials;
use super::transcript::Decision;
use super::{Block, Usage, blocks_of};
use crate::wire::fact::{
    Answered, Breakdown, CostReported, ErrorFact, Fact, Format, ItemFact, ItemKind, ItemStatus, Lowered, ModelChange,
    Parentage, ReportedUsage, SessionEnded, Spawn, Status, StatusChange, StatusFact, Subject, Target, TextRule,
    ThreadFact, TurnEnded, TurnOutcome, TurnRef, TurnStarted, Via, Weight,
};
use crate::wire::{CleanStr, sanitize};

type Str<'a> = Cow<'a, str>;

/// The parts of a stream-json line swarmtop reads.
#[derive(Debug, Default, Deserialize)]
pub struct StreamLine<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub subtype: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub uuid: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub timestamp: Option<Str<'a>>,
    /// `init`: the session's model.
    #[serde(borrow, default)]
    pub model: Option<Str<'a>>,
    /// The sub-agent an `assistant` / `user` line belongs to.
    #[serde(borrow, default)]
    pub agent_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub parent_tool_use_id: Option<Str<'a>>,
    /// A message line's message; on `permission_denied` the refusal as the user was told it.
    #[serde(borrow, default, deserialize_with = "message_or_note")]
    pub message: Option<StreamMessage<'a>>,
    #[serde(borrow, default)]
    pub task_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub tool_use_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub parent_task_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub description: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub subagent_type: Option<Str<'a>>,
    /// `task_started`: `local_agent` (a sub-agent), `local_bash` (a background command), ...
    #[serde(borrow, default)]
    pub task_type: Option<Str<'a>>,
    #[serde(default)]
    pub spawn_depth: Option<u32>,
    /// `task_notification`'s end status.
    #[serde(borrow, default)]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub patch: Option<Patch<'a>>,
    #[serde(borrow, default)]
    pub subagent_retry: Option<Retry<'a>>,
    #[serde(borrow, default)]
    pub terminal_reason: Option<Str<'a>>,
    #[serde(default)]
    pub is_error: Option<bool>,
    /// `result.modelUsage`: model -> the session's totals so far.
    #[serde(rename = "modelUsage", borrow, default)]
    pub model_usage: Option<BTreeMap<Str<'a>, ModelUsage<'a>>>,
    /// `stream_event`: the API's own server-sent event, read by [`super::partial`].
    #[serde(borrow, default)]
    pub event: Option<&'a RawValue>,
    /// `stream_event`: the response it is part of (`message.id`).
    #[serde(borrow, default)]
    pub api_message_id: Option<Str<'a>>,
    /// A `user` line's tool result as the CLI read it: for a foreground sub-agent's hand-back,
    /// `{status: completed, agentId, ...}` (the only end of a sub-agent 2.1.63 writes to a stream).
    #[serde(borrow, default)]
    pub tool_use_result: Option<&'a RawValue>,
    /// `compact_boundary`: how the context was compacted.
    #[serde(borrow, default)]
    pub compact_metadata: Option<Compaction<'a>>,
    /// `api_retry` (the session's request failed and is retried): attempt n of `max_retries`.
    #[serde(default)]
    pub attempt: Option<u64>,
    #[serde(default)]
    pub max_retries: Option<u64>,
    #[serde(default)]
    pub error_status: Option<u64>,
    /// `api_retry`: a category (`unknown`, `rate_limit`, ...); kept raw, as other lines may say more.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    /// A `user` line's tool results as the CLI decided them: which calls it refused to run.
    #[serde(borrow, default)]
    pub tool_result_meta: Option<Vec<ResultMeta<'a>>>,
    /// `result`: every call refused this turn.
    #[serde(borrow, default)]
    pub permission_denials: Option<Vec<Denial<'a>>>,
}

/// `tool_result_meta[]` of a `user` line.
#[derive(Debug, Default, Deserialize)]
pub struct ResultMeta<'a> {
    #[serde(borrow, default)]
    pub id: Option<Str<'a>>,
    #[serde(default)]
    pub permission_decision: Option<Decision<'a>>,
    /// Why the call did not run: `user-rejected` (a No at the prompt, or SIGINT while it waited or
    /// ran), `permission-rule` (a rule or hook; with a `reject` decision).
    #[serde(borrow, default)]
    pub non_execution_kind: Option<Str<'a>>,
}

/// `result.permission_denials[]`.
#[derive(Debug, Default, Deserialize)]
pub struct Denial<'a> {
    #[serde(borrow, default)]
    pub tool_use_id: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamMessage<'a> {
    #[serde(borrow, default)]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub model: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// `message` was a string, not a message (`permission_denied`).
    #[serde(skip)]
    pub note: Option<Str<'a>>,
}

/// `message` is an API message on message lines and the text shown to the user on
/// `permission_denied`; a message object that does not read is still an error of the line.
fn message_or_note<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<StreamMessage<'de>>, D::Error> {
    let Some(raw) = Option::<&'de RawValue>::deserialize(d)? else { return Ok(None) };
    if raw.get().starts_with('"') {
        let note: Str<'de> = serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
        return Ok(Some(StreamMessage { note: Some(note), ..StreamMessage::default() }));
    }
    serde_json::from_str(raw.get()).map(Some).map_err(serde::de::Error::custom)
}

/// `compact_boundary` `compact_metadata`.
#[derive(Debug, Default, Deserialize)]
pub struct Compaction<'a> {
    /// `manual` (`/compact`) or `auto`.
    #[serde(borrow, default)]
    pub trigger: Option<Str<'a>>,
    #[serde(default)]
    pub pre_tokens: Option<u64>,
    #[serde(default)]
    pub post_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Patch<'a> {
    #[serde(borrow, default)]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub error: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Retry<'a> {
    #[serde(borrow, default)]
    pub agent_id: Option<Str<'a>>,
    #[serde(default)]
    pub attempt: Option<u64>,
    #[serde(default)]
    pub max_retries: Option<u64>,
    #[serde(default)]
    pub error_status: Option<u64>,
    #[serde(borrow, default)]
    pub error_category: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage<'a> {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(rename = "cacheCreationEphemeral1hInputTokens", default)]
    pub cache_creation_1h_input_tokens: Option<u64>,
    /// Kept as the number's text: money is summed exactly.
    #[serde(rename = "costUSD", borrow, default)]
    pub cost_usd: Option<&'a RawValue>,
    /// The model's window (2.1.332 stream-json; `cost-state` does not say it).
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// A stream-json line, or `None` when the text is not one (a transcript line has `sessionId`).
pub fn parse(text: &str) -> Option<StreamLine<'_>> {
    let line: StreamLine<'_> = serde_json::from_str(text).ok()?;
    (line.kind.is_some() && line.session_id.is_some()).then_some(line)
}

impl StreamLine<'_> {
    /// Only `user` lines carry a time.
    pub fn time(&self) -> Option<i64> {
        self.timestamp.as_deref().and_then(crate::wire::time::iso8601_ms)
    }

    /// Whether a `task_started` is a sub-agent's (`local_agent`; 2.1.63 says so too) rather than a
    /// background command's (`local_bash`) or another task of the session's own.
    fn is_agent_task(&self) -> bool {
        self.task_type.as_deref().is_none_or(|t| t.contains("agent"))
    }

    /// What `permission_denied` told the user.
    fn note(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.note.as_deref())
    }

    /// What `tool_result_meta` says of the call `call`, if anything.
    fn meta(&self, call: &str) -> Option<&ResultMeta<'_>> {
        self.tool_result_meta.iter().flatten().find(|m| m.id.as_deref() == Some(call))
    }

    /// Whether the CLI refused to run the tool call `call`.
    fn refused(&self, call: &str) -> bool {
        self.meta(call).and_then(|m| m.permission_decision.as_ref()).is_some_and(Decision::refused)
    }

    /// Whether the user stopped the call `call` (the line cannot tell a No from an interrupt).
    fn stopped(&self, call: &str) -> bool {
        self.meta(call).is_some_and(|m| m.non_execution_kind.as_deref() == Some("user-rejected"))
    }

    /// Whether lowering it reads what earlier lines of the stream said: a streamed event, and a
    /// session's `assistant` line, which finishes the block the events streamed.
    pub fn reads_stream(&self) -> bool {
        match (self.kind.as_deref(), self.subtype.as_deref()) {
            (Some("stream_event"), _)
            | (Some("system"), Some("task_started" | "task_progress" | "task_updated" | "task_notification")) => true,
            // A sub-agent's line without its `agent_id` (2.1.63) is told by its spawn's tool use.
            (Some("assistant" | "user"), _) => self.parent_tool_use_id.is_none() || self.agent_id.is_none(),
            _ => false,
        }
    }

    /// The agent a message line belongs to: its sub-agent (by `agent_id`, else by the task its
    /// `parent_tool_use_id` started), else the session.
    fn speaker<'l>(&'l self, partials: &Partials) -> Option<Cow<'l, str>> {
        if let Some(card) = self.parent_tool_use_id.as_deref() {
            if let Some(agent) = self.agent_id.as_deref() {
                return Some(Cow::Borrowed(agent));
            }
            if let Some(task) = partials.task_of(card) {
                return Some(Cow::Owned(task.to_owned()));
            }
        }
        self.session_id.as_deref().map(Cow::Borrowed)
    }
}

fn id(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

fn set(target: Target<'_>, status: Status) -> Fact<'_> {
    Fact::Status(StatusFact { target, change: StatusChange::Set(status) })
}

/// Lowers one stream-json line; `partials` is what the stream's earlier lines said of the responses
/// still streaming.
pub fn lower<'l>(line: &'l StreamLine<'_>, partials: &mut Partials, out: &mut Lowered<'l>) {
    out.format = Format::ClaudeStream;
    let Some(session) = line.session_id.as_deref() else { return };
    out.subject = Subject::Thread(id(session));
    out.weight = Weight::Noise;
    match (line.kind.as_deref(), line.subtype.as_deref()) {
        (Some("system"), Some("init")) => init(line, session, out),
        (Some("system"), Some("task_started")) if !line.is_agent_task() => {
            // A background command (`run_in_background`): the session's tool call, still running.
            if let (Some(task), Some(card)) = (line.task_id.as_deref(), line.tool_use_id.as_deref()) {
                partials.command_started(task, card);
            }
        }
        (Some("system"), Some("task_started")) => task_started(line, session, partials, out),
        (Some("system"), Some("task_progress" | "task_updated" | "task_notification"))
            if line.task_id.as_deref().is_some_and(|t| partials.command_of(t).is_some()) =>
        {
            command_end(line, partials, out);
        }
        (Some("system"), Some("task_progress")) => {
            if let Some(task) = line.task_id.as_deref() {
                out.subject = Subject::Thread(id(task));
                out.facts.push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Active }));
            }
        }
        (Some("system"), Some("task_updated")) => {
            let patch = line.patch.as_ref();
            task_end(line, patch.and_then(|p| p.status.as_deref()), patch.and_then(|p| p.error.as_deref()), out);
        }
        (Some("system"), Some("task_notification")) => task_end(line, line.status.as_deref(), None, out),
        (Some("system"), Some("api_retry")) => api_retry(line, out),
        (Some("system"), Some("compact_boundary")) => compacted(line, out),
        (Some("system"), Some("permission_denied")) => {
            out.weight = Weight::Output;
            out.facts.extend(line.tool_use_id.as_deref().map(|call| declined(call, line.note(), out.time)));
        }
        (Some("system"), Some("hook_response")) => {
            let raw = out.raw;
            super::hook::response(raw, out.time, &mut out.facts);
        }
        (Some("tool_progress"), _) => retry(line, out),
        (Some("stream_event"), _) => {
            super::partial::lower(session, line.api_message_id.as_deref(), line.event, partials, out);
        }
        (Some("assistant"), _) => assistant(line, partials, out),
        (Some("user"), _) => user(line, partials, out),
        (Some("result"), _) => result(line, out),
        // `status` (`requesting`), `thinking_tokens`, `background_tasks_changed`, and what comes
        // next: the session's, no fact.
        _ => {}
    }
}

fn init<'l>(line: &'l StreamLine<'_>, session: &'l str, out: &mut Lowered<'l>) {
    let mut thread = ThreadFact::new(id(session), Parentage::Root);
    thread.model = line.model.as_deref().filter(|m| !m.is_empty()).map(sanitize);
    out.facts.push(Fact::Thread(Box::new(thread)));
    out.facts.push(Fact::TurnStarted(TurnStarted {
        turn: line.uuid.as_deref().map(id),
        own_root_turn: true,
        ends_previous: true,
    }));
    out.facts.push(set(Target::Subject, Status::Running));
}

fn task_started<'l>(line: &'l StreamLine<'_>, session: &'l str, partials: &mut Partials, out: &mut Lowered<'l>) {
    let Some(task) = line.task_id.as_deref() else { return };
    if let Some(card) = line.tool_use_id.as_deref() {
        partials.started(card, task);
    }
    // The spawning agent: the session at depth 1, `parent_task_id` deeper.
    let parent = line.parent_task_id.as_deref().unwrap_or(session);
    let card = line.tool_use_id.as_deref().map(id);
    out.subject = Subject::Thread(id(parent));
    let mut thread =
        ThreadFact::new(id(task), Parentage::Child { parent: id(parent), via: Via::TaskTool, card: card.clone() });
    thread.nickname = line.description.as_deref().filter(|d| !d.is_empty()).map(sanitize);
    thread.role = line.subagent_type.as_deref().filter(|r| !r.is_empty()).map(sanitize);
    thread.depth = line.spawn_depth;
    out.facts.push(Fact::Thread(Box::new(thread)));
    out.facts.push(Fact::Spawn(Spawn { child: id(task), card, via: Via::TaskTool }));
    out.facts.push(set(Target::Thread(id(task)), Status::Running));
}

/// A background command's progress and end: its tool call's, in the session.
fn command_end<'l>(line: &'l StreamLine<'_>, partials: &Partials, out: &mut Lowered<'l>) {
    let Some(card) = line.task_id.as_deref().and_then(|t| partials.command_of(t)) else { return };
    let status = match line.subtype.as_deref() {
        Some("task_updated") => line.patch.as_ref().and_then(|p| p.status.as_deref()),
        Some("task_notification") => line.status.as_deref(),
        _ => None,
    };
    let status = match status {
        Some("completed") => ItemStatus::Completed,
        Some("failed") => ItemStatus::Failed,
        Some("killed" | "stopped") => ItemStatus::Interrupted,
        _ => return,
    };
    out.facts.push(Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(card.to_owned())),
        update_only: true,
        status: Some(status),
        completed_ms: out.time,
        ..ItemFact::default()
    })));
}

/// A sub-agent's end, from `task_updated` or `task_notification` (both come; the facts are the same).
fn task_end<'l>(line: &'l StreamLine<'_>, status: Option<&str>, error: Option<&str>, out: &mut Lowered<'l>) {
    let Some(task) = line.task_id.as_deref() else { return };
    out.subject = Subject::Thread(id(task));
    let end = match status {
        Some("completed") => Status::Idle,
        Some("failed") => Status::Failed,
        Some("killed" | "stopped") => Status::Interrupted,
        // `running` and what a newer CLI adds: it still works.
        _ => {
            out.facts.push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Active }));
            return;
        }
    };
    out.weight = Weight::Closing;
    if end == Status::Failed {
        out.facts.push(Fact::Error(ErrorFact { message: error.map(sanitize), retrying: false, goes_on: false }));
    }
    let outcome = match end {
        Status::Idle => TurnOutcome::Completed,
        Status::Failed => TurnOutcome::Failed,
        _ => TurnOutcome::Interrupted,
    };
    out.facts.push(Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Latest,
        outcome: Some(outcome),
        error: error.map(sanitize),
    }));
    if matches!(end, Status::Idle | Status::Failed) {
        out.facts.push(Fact::Answered(Answered { child: id(task), status: end }));
    }
    out.facts.push(set(Target::Subject, end));
}

fn retry<'l>(line: &'l StreamLine<'_>, out: &mut Lowered<'l>) {
    let Some(r) = &line.subagent_retry else { return };
    let Some(agent) = r.agent_id.as_deref() else { return };
    out.subject = Subject::Thread(id(agent));
    let what = match (r.error_status, r.error_category.as_deref()) {
        (Some(s), Some(c)) => format!("HTTP {s} ({c})"),
        (Some(s), None) => format!("HTTP {s}"),
        (None, Some(c)) => c.to_owned(),
        (None, None) => "API error".to_owned(),
    };
    let attempt = match (r.attempt, r.max_retries) {
        (Some(a), Some(m)) => format!(", retry {a}/{m}"),
        _ => String::new(),
    };
    out.facts.push(Fact::Error(ErrorFact {
        message: Some(sanitize(&format!("{what}{attempt}"))),
        retrying: true,
        goes_on: false,
    }));
    out.facts.push(set(Target::Subject, Status::Retrying));
}

/// `compact_boundary`: the session's context was summarised (`/compact` or automatically); the
/// summary request itself is not reported as a message.
fn compacted<'l>(line: &'l StreamLine<'_>, out: &mut Lowered<'l>) {
    let Some(uuid) = line.uuid.as_deref() else { return };
    let meta = line.compact_metadata.as_ref();
    let trigger = meta.and_then(|m| m.trigger.as_deref()).unwrap_or("compacted");
    let tokens = match (meta.and_then(|m| m.pre_tokens), meta.and_then(|m| m.post_tokens)) {
        (Some(pre), Some(post)) => format!(": {pre} → {post} tokens of context"),
        _ => String::new(),
    };
    out.weight = Weight::Output;
    out.facts.push(Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Borrowed(uuid)),
        turn: Some(TurnRef::Latest),
        kind: Some(ItemKind::Compaction),
        status: Some(ItemStatus::Completed),
        title: Some(sanitize(&format!("context compacted ({trigger}){tokens}"))),
        ..ItemFact::default()
    })));
}

/// `api_retry`: a request of the session failed and is retried (a sub-agent's come as
/// `tool_progress` `subagent_retry`).
fn api_retry<'l>(line: &'l StreamLine<'_>, out: &mut Lowered<'l>) {
    let category = line.error.and_then(|e| serde_json::from_str::<Str<'_>>(e.get()).ok());
    let what = match (line.error_status, category.as_deref()) {
        (Some(s), Some(c)) => format!("HTTP {s} ({c})"),
        (Some(s), None) => format!("HTTP {s}"),
        (None, Some(c)) => format!("API error ({c})"),
        (None, None) => "API error".to_owned(),
    };
    let attempt = match (line.attempt, line.max_retries) {
        (Some(a), Some(m)) => format!(", retry {a}/{m}"),
        _ => String::new(),
    };
    out.weight = Weight::Output;
    out.facts.push(Fact::Error(ErrorFact {
        message: Some(sanitize(&format!("{what}{attempt}"))),
        retrying: true,
        goes_on: false,
    }));
    out.facts.push(set(Target::Subject, Status::Retrying));
}

fn assistant<'l>(line: &'l StreamLine<'_>, partials: &Partials, out: &mut Lowered<'l>) {
    let Some(speaker) = line.speaker(partials) else { return };
    out.subject = Subject::Thread(speaker);
    out.weight = Weight::Output;
    let Some(message) = &line.message else { return };
    let model = message.model.as_deref().filter(|m| !m.is_empty() && *m != "<synthetic>");
    if let Some(m) = model {
        out.facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m) }));
    }
    if let (Some(usage), Some(mid)) = (&message.usage, message.id.as_deref()) {
        // The stream-start usage: partial, and reconciled with `result.modelUsage` downstream.
        out.facts.push(Fact::Usage(crate::wire::fact::Usage::Response(Box::new(crate::wire::fact::ResponseUsage {
            key: (id(mid), id("")),
            tokens: usage.breakdown(),
            model: model.map(CleanStr::new),
            // The stream-start usage: its prompt is whole, its output not yet.
            context: crate::wire::fact::ContextFill::of_response(&usage.breakdown()),
        }))));
    }
    let uuid = line.uuid.as_deref().unwrap_or_default();
    let blocks = blocks_of(message.content);
    // A block that streamed is the item its deltas built, finished here.
    let item = |i: usize| {
        message
            .id
            .as_deref()
            .and_then(|m| partials.item_of(m, i, blocks.len()))
            .unwrap_or_else(|| format!("{uuid}#{i}"))
    };
    for (i, block) in blocks.iter().enumerate() {
        let item = match block.kind.as_deref() {
            Some("text") => block.text.as_deref().map(|t| text_item(item(i), ItemKind::AgentMessage, t)),
            Some("thinking") => block.thinking.as_deref().map(|t| text_item(item(i), ItemKind::Reasoning, t)),
            Some("tool_use") => tool_use(block, out.time),
            _ => None,
        };
        out.facts.extend(item);
    }
    out.facts.push(set(Target::Subject, Status::Running));
}

fn user<'l>(line: &'l StreamLine<'_>, partials: &Partials, out: &mut Lowered<'l>) {
    let Some(speaker) = line.speaker(partials) else { return };
    out.subject = Subject::Thread(speaker);
    out.weight = Weight::Output;
    let Some(message) = &line.message else { return };
    let blocks = blocks_of(message.content);
    let mut results = false;
    for block in blocks.iter().filter(|b| b.kind.as_deref() == Some("tool_result")) {
        results = true;
        let Some(tool_use) = block.tool_use_id.as_deref() else { continue };
        let status = if line.refused(tool_use) {
            ItemStatus::Declined
        } else if line.stopped(tool_use) {
            ItemStatus::Interrupted
        } else if block.is_error == Some(true) {
            ItemStatus::Failed
        } else {
            ItemStatus::Completed
        };
        let text = sanitize(&block.content);
        out.facts.push(Fact::Item(Box::new(ItemFact {
            id: Some(Cow::Owned(tool_use.to_owned())),
            update_only: true,
            why: (status == ItemStatus::Failed).then(|| text.clone()),
            text: Some(text),
            text_rule: TextRule::Output,
            status: Some(status),
            completed_ms: out.time,
            ..ItemFact::default()
        })));
    }
    if results {
        handed_back(line, out);
        return;
    }
    let text: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
    let text = text.join("\n");
    // The CLI's own note of a SIGINT / Esc: nothing of the agent runs any more.
    if text.starts_with("[Request interrupted by user") {
        out.facts.push(Fact::TurnEnded(TurnEnded {
            turn: TurnRef::Latest,
            outcome: Some(TurnOutcome::Interrupted),
            error: None,
        }));
        out.facts.push(set(Target::Subject, Status::Interrupted));
        if line.agent_id.is_none() {
            out.facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
        }
        return;
    }
    // A sub-agent's first message is its prompt: its turn starts.
    let uuid = line.uuid.as_deref().unwrap_or_default();
    out.facts.push(Fact::TurnStarted(TurnStarted { turn: Some(id(uuid)), own_root_turn: false, ends_previous: true }));
    out.facts.push(text_item(uuid.to_owned(), ItemKind::UserMessage, &text));
    out.facts.push(set(Target::Subject, Status::Running));
}

/// A sub-agent's answer in its parent's tool result: it has finished (the `task_updated` of newer
/// CLIs says the same). A background launch (`async_launched`) or an error names no end.
fn handed_back<'l>(line: &'l StreamLine<'_>, out: &mut Lowered<'l>) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct HandBack<'a> {
        #[serde(borrow, default)]
        status: Option<Str<'a>>,
        #[serde(borrow, default)]
        agent_id: Option<Str<'a>>,
    }
    let Some(raw) = line.tool_use_result else { return };
    let Ok(back) = serde_json::from_str::<HandBack<'l>>(raw.get()) else { return };
    if back.status.as_deref() != Some("completed") {
        return;
    }
    let Some(agent) = back.agent_id.filter(|a| !a.is_empty()) else { return };
    out.facts.push(Fact::Answered(Answered { child: agent.clone(), status: Status::Idle }));
    out.facts.push(set(Target::Thread(agent), Status::Idle));
}

fn result<'l>(line: &'l StreamLine<'_>, out: &mut Lowered<'l>) {
    out.weight = Weight::Closing;
    let aborted = line.terminal_reason.as_deref().is_some_and(|r| r.starts_with("aborted"));
    let outcome = if aborted {
        TurnOutcome::Interrupted
    } else if line.is_error == Some(true) || line.subtype.as_deref().is_some_and(|s| s != "success") {
        TurnOutcome::Failed
    } else {
        TurnOutcome::Completed
    };
    out.facts.push(Fact::TurnEnded(TurnEnded { turn: TurnRef::Latest, outcome: Some(outcome), error: None }));
    // Said again here, for a stream whose `permission_denied` lines were lost or never written.
    for call in line.permission_denials.iter().flatten().filter_map(|d| d.tool_use_id.as_deref()) {
        out.facts.push(declined(call, None, out.time));
    }
    for (model, usage) in line.model_usage.iter().flatten() {
        out.facts.push(Fact::ReportedUsage(ReportedUsage {
            model: CleanStr::new(model),
            tokens: model_breakdown(usage),
            context_window: usage.context_window,
        }));
        if let Some(usd) = usage.cost_usd {
            out.facts.push(Fact::CostReported(CostReported {
                model: Some(CleanStr::new(model)),
                usd: Cow::Borrowed(usd.get()),
                cumulative: true,
                own: false,
            }));
        }
    }
    let end = match outcome {
        TurnOutcome::Completed => Status::Idle,
        TurnOutcome::Failed => Status::Failed,
        TurnOutcome::Interrupted => Status::Interrupted,
    };
    out.facts.push(set(Target::Subject, end));
    if aborted {
        out.facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
    }
}

/// A tool call the CLI refused to run (the permission mode, a rule, the working-directory check):
/// it never ran, which is not a failure of the tool.
fn declined<'l>(call: &'l str, told: Option<&str>, at: Option<i64>) -> Fact<'l> {
    Fact::Item(Box::new(ItemFact {
        id: Some(id(call)),
        update_only: true,
        status: Some(ItemStatus::Declined),
        text: told.map(sanitize),
        text_rule: TextRule::Output,
        completed_ms: at,
        ..ItemFact::default()
    }))
}

fn text_item<'l>(item: String, kind: ItemKind, text: &str) -> Fact<'l> {
    Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(item)),
        turn: Some(TurnRef::Latest),
        kind: Some(kind),
        status: Some(ItemStatus::Completed),
        text: Some(sanitize(text)),
        ..ItemFact::default()
    }))
}

/// A tool call, lowered as a transcript's is; a spawn is a card here, the only place its lanes are
/// announced in a stream. It starts at its line's time: the `task_started` that follows has none,
/// and a sub-agent was spawned by this call, not at its first line of its own.
fn tool_use<'l>(block: &Block<'_>, time: Option<i64>) -> Option<Fact<'l>> {
    let mut fact = super::transcript::tool_use(block, time)?;
    if let Fact::Item(item) = &mut fact {
        item.card = item.kind == Some(ItemKind::Collab);
    }
    Some(fact)
}

/// Anthropic usage in the vocabulary's terms: input includes the cache reads and writes.
fn model_breakdown(u: &ModelUsage<'_>) -> Breakdown {
    let v = |x: Option<u64>| x.unwrap_or(0);
    let written = v(u.cache_creation_input_tokens);
    let one_hour = v(u.cache_creation_1h_input_tokens).min(written);
    super::transcript::tokens(v(u.input_tokens), v(u.cache_read_input_tokens), written, one_hour, v(u.output_tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Clean;

    fn lowered(text: &str, check: impl FnOnce(&Lowered<'_>, Vec<&Fact<'_>>)) {
        let line = parse(text).expect("a stream-json line");
        let mut out = Lowered { time: line.time(), raw: text, ..Lowered::default() };
        lower(&line, &mut Partials::default(), &mut out);
        let facts: Vec<&Fact<'_>> = out.facts.iter().collect();
        check(&out, facts);
    }

    /// With `--include-hook-events` every hook run is a `hook_started` / `hook_response` pair naming
    /// the session; a response with `outcome: error` other than a block (exit 2) is an item.
    #[test]
    fn a_failed_hook_response_is_an_item_and_the_rest_are_noise() {
        let failed = r#"{"type":"system","subtype":"hook_response","hook_id":"h1","hook_name":"PostToolUse:Bash","hook_event":"PostToolUse","output":"post-failed\n","stdout":"","stderr":"post-failed\n","exit_code":1,"outcome":"error","uuid":"u1","session_id":"s"}"#;
        lowered(failed, |_, facts| {
            let [Fact::Item(item)] = facts.as_slice() else { panic!("one item: {facts:?}") };
            assert_eq!(item.id.as_deref(), Some("hook:h1"));
            assert_eq!(item.status, Some(ItemStatus::Failed));
            assert_eq!(item.text.as_ref().map(Clean::as_str), Some("post-failed"));
        });
        let blocked = failed.replace(r#""exit_code":1"#, r#""exit_code":2"#);
        lowered(&blocked, |_, facts| assert!(facts.is_empty(), "{facts:?}"));
        let ok = failed.replace(r#""outcome":"error""#, r#""outcome":"success""#);
        lowered(&ok, |_, facts| assert!(facts.is_empty(), "{facts:?}"));
        let started = r#"{"type":"system","subtype":"hook_started","hook_id":"h1","hook_name":"PostToolUse:Bash","hook_event":"PostToolUse","uuid":"u0","session_id":"s"}"#;
        lowered(started, |_, facts| assert!(facts.is_empty(), "{facts:?}"));
    }

    fn is_set(f: &Fact<'_>, target: &Target<'_>, status: Status) -> bool {
        matches!(f, Fact::Status(s) if s.target == *target && s.change == StatusChange::Set(status))
    }

    #[test]
    fn a_transcript_line_is_not_a_stream_line() {
        assert!(parse(r#"{"type":"user","sessionId":"s","uuid":"u"}"#).is_none());
        assert!(parse(r#"{"type":"user","session_id":"s","uuid":"u"}"#).is_some());
        assert!(parse("not json").is_none());
    }

    #[test]
    fn init_is_the_session_a_root_on_its_model_starting_a_turn() {
        lowered(
            r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5","uuid":"i1"}"#,
            |l, f| {
                assert_eq!(l.format, Format::ClaudeStream);
                assert_eq!(l.subject, Subject::Thread("s".into()));
                let Fact::Thread(t) = f[0] else { panic!("{:?}", f[0]) };
                assert_eq!(
                    (t.parentage.clone(), t.model.as_ref().map(Clean::as_str)),
                    (Parentage::Root, Some("claude-sonnet-4-5"))
                );
                assert!(matches!(f[1], Fact::TurnStarted(t) if t.ends_previous));
                assert!(is_set(f[2], &Target::Subject, Status::Running));
            },
        );
    }

    #[test]
    fn task_started_links_a_child_under_its_card_and_a_grandchild_under_its_parent_task() {
        let child = r#"{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"toolu_1","description":"Survey the project","subagent_type":"general-purpose","is_backgrounded":false,"spawn_depth":1,"session_id":"s"}"#;
        lowered(child, |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()), "said by the spawning agent");
            let Fact::Thread(t) = f[0] else { panic!() };
            assert_eq!(t.thread, "a1");
            assert_eq!(
                t.parentage,
                Parentage::Child { parent: "s".into(), via: Via::TaskTool, card: Some("toolu_1".into()) }
            );
            assert_eq!(t.nickname.as_ref().map(Clean::as_str), Some("Survey the project"));
            assert_eq!(t.role.as_ref().map(Clean::as_str), Some("general-purpose"));
            assert_eq!(t.depth, Some(1));
            assert!(matches!(f[1], Fact::Spawn(s) if s.child == "a1" && s.card.as_deref() == Some("toolu_1")));
            assert!(is_set(f[2], &Target::Thread("a1".into()), Status::Running), "running as soon as it starts");
        });
        let grandchild = r#"{"type":"system","subtype":"task_started","task_id":"a2","tool_use_id":"toolu_2","description":"Grep","spawn_depth":2,"parent_task_id":"a1","session_id":"s"}"#;
        lowered(grandchild, |l, f| {
            assert_eq!(l.subject, Subject::Thread("a1".into()));
            assert!(
                matches!(f[0], Fact::Thread(t) if matches!(&t.parentage, Parentage::Child { parent, .. } if parent == "a1"))
            );
        });
    }

    #[test]
    fn task_updated_ends_a_child_completed_failed_or_killed() {
        let done = r#"{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"completed","end_time":1},"session_id":"s"}"#;
        lowered(done, |l, f| {
            assert_eq!((l.subject.clone(), l.weight), (Subject::Thread("a1".into()), Weight::Closing));
            assert!(f.iter().any(|f| matches!(f, Fact::Answered(a) if a.child == "a1" && a.status == Status::Idle)));
            assert!(is_set(f[f.len() - 1], &Target::Subject, Status::Idle));
        });
        let failed = r#"{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"failed","error":"Agent terminated early due to an API error: API Error: 529 Overloaded."},"session_id":"s"}"#;
        lowered(failed, |_, f| {
            assert!(
                matches!(f[0], Fact::Error(e) if !e.retrying && e.message.as_ref().unwrap().as_str().contains("529"))
            );
            assert!(f.iter().any(|f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Failed))));
            assert!(is_set(f[f.len() - 1], &Target::Subject, Status::Failed));
        });
        let killed =
            r#"{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"killed"},"session_id":"s"}"#;
        lowered(killed, |_, f| {
            assert!(!f.iter().any(|f| matches!(f, Fact::Answered(_))), "an interrupted child answered nothing");
            assert!(is_set(f[f.len() - 1], &Target::Subject, Status::Interrupted));
        });
        let stopped =
            r#"{"type":"system","subtype":"task_notification","task_id":"a1","status":"stopped","session_id":"s"}"#;
        lowered(stopped, |_, f| assert!(is_set(f[f.len() - 1], &Target::Subject, Status::Interrupted)));
    }

    #[test]
    fn a_retry_is_a_transient_error_of_the_child() {
        let line = r#"{"type":"tool_progress","tool_use_id":"agent_msg_x","parent_tool_use_id":"toolu_1","session_id":"s","subagent_retry":{"agent_id":"a1","attempt":1,"max_retries":1,"retry_delay_ms":566,"error_status":529,"error_category":"overloaded"}}"#;
        lowered(line, |l, f| {
            assert_eq!(l.subject, Subject::Thread("a1".into()));
            assert!(
                matches!(f[0], Fact::Error(e) if e.retrying && e.message.as_ref().unwrap().as_str() == "HTTP 529 (overloaded), retry 1/1")
            );
            assert!(is_set(f[1], &Target::Subject, Status::Retrying));
        });
    }

    #[test]
    fn a_compact_boundary_is_a_compaction_of_the_session() {
        let line = r#"{"type":"system","subtype":"compact_boundary","session_id":"s","uuid":"c1","compact_metadata":{"trigger":"manual","pre_tokens":10008,"post_tokens":2845,"cumulative_dropped_tokens":7163}}"#;
        lowered(line, |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            let Fact::Item(i) = f[0] else { panic!("{:?}", f[0]) };
            assert_eq!(i.kind, Some(ItemKind::Compaction));
            assert_eq!(
                i.title.as_ref().map(Clean::as_str),
                Some("context compacted (manual): 10008 → 2845 tokens of context")
            );
        });
    }

    #[test]
    fn an_api_retry_is_a_transient_error_of_the_session() {
        let line = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":563,"error_status":529,"error":"overloaded","session_id":"s","uuid":"r1"}"#;
        lowered(line, |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            assert!(
                matches!(f[0], Fact::Error(e) if e.retrying && e.message.as_ref().unwrap().as_str() == "HTTP 529 (overloaded), retry 1/10")
            );
            assert!(is_set(f[1], &Target::Subject, Status::Retrying));
        });
        // No HTTP status when the connection failed; an error of another shape is still a retry.
        let refused = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error_status":null,"error":{"kind":"x"},"session_id":"s"}"#;
        lowered(refused, |_, f| {
            assert!(matches!(f[0], Fact::Error(e) if e.message.as_ref().unwrap().as_str() == "API error, retry 2/10"));
        });
    }

    #[test]
    fn message_lines_go_to_the_sub_agent_that_says_them() {
        let child = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"ls -la"}}],"usage":{"input_tokens":1030,"cache_creation_input_tokens":330,"cache_read_input_tokens":5210,"output_tokens":1}},"parent_tool_use_id":"toolu_1","agent_id":"a1","session_id":"s","uuid":"u1"}"#;
        lowered(child, |l, f| {
            assert_eq!((l.subject.clone(), l.weight), (Subject::Thread("a1".into()), Weight::Output));
            assert!(matches!(f[0], Fact::Model(m) if m.model.as_str() == "claude-haiku-5-5"));
            let Fact::Usage(crate::wire::fact::Usage::Response(r)) = f[1] else { panic!("{:?}", f[1]) };
            assert_eq!(r.tokens.input_tokens, Some(1030 + 330 + 5210));
            assert_eq!(r.tokens.output_tokens, Some(1), "the stream-start figure, as the stream carries it");
            assert!(
                matches!(f[2], Fact::Item(i) if i.kind == Some(ItemKind::Command) && i.title.as_ref().unwrap().as_str() == "ls -la")
            );
        });
        let session = r#"{"type":"assistant","message":{"id":"msg_0","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Agent","input":{"description":"Survey","prompt":"go","subagent_type":"general-purpose"}}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u0","timestamp":"2026-12-02T05:11:19.419Z"}"#;
        lowered(session, |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            let Fact::Item(card) = f[1] else { panic!("{:?}", f[1]) };
            assert!(card.card && card.kind == Some(ItemKind::Collab));
            assert_eq!(card.lane_nickname.as_ref().map(Clean::as_str), Some("Survey"));
            // The `task_started` that follows has no time: the child was spawned at its card's.
            assert_eq!(card.started_ms, Some(1_796_188_279_419));
        });
    }

    #[test]
    fn an_interrupt_ends_the_session_and_a_tool_result_updates_its_call() {
        let note = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u9","timestamp":"2026-12-01T12:02:47.625Z"}"#;
        lowered(note, |l, f| {
            assert_eq!(l.time, Some(1_796_126_567_625));
            assert!(f.iter().any(|f| is_set(f, &Target::Subject, Status::Interrupted)));
            assert!(f.iter().any(|f| matches!(f, Fact::SessionEnded(e) if e.interrupted)));
        });
        let result = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"User rejected tool use","is_error":true}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u8"}"#;
        lowered(result, |_, f| {
            assert!(matches!(f[0], Fact::Item(i) if i.update_only && i.status == Some(ItemStatus::Failed)));
            assert_eq!(f.len(), 1);
        });
        // 2.1.332 says why it did not run: the user stopped it (SIGINT here; a No at the prompt alike).
        let stopped = result.replace(
            r#""uuid":"u8"}"#,
            r#""uuid":"u8","tool_use_result":"User rejected tool use","tool_result_meta":[{"id":"toolu_1","non_execution_kind":"user-rejected"}]}"#,
        );
        lowered(&stopped, |_, f| {
            assert!(matches!(f[0], Fact::Item(i) if i.status == Some(ItemStatus::Interrupted)));
        });
    }

    /// Without `--dangerously-skip-permissions` (2.1.332, `-p`): a refused call gets a
    /// `permission_denied` line whose `message` is the text the model is told (a string, where
    /// message lines have an object), then its `user` tool result marked `reject`, and the
    /// `result` lists it again.
    #[test]
    fn a_refused_call_is_declined_not_failed() {
        let denied = r#"{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_w","decision_reason_type":"workingDir","decision_reason":"Path is outside allowed working directories","message":"Claude requested permissions to write to /tmp/x.txt, but you haven't granted it yet.","uuid":"d1","session_id":"s"}"#;
        lowered(denied, |l, f| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            assert_eq!(f.len(), 1);
            let Fact::Item(i) = f[0] else { panic!("{f:?}") };
            assert!(i.update_only);
            assert_eq!(i.id.as_deref(), Some("toolu_w"));
            assert_eq!(i.status, Some(ItemStatus::Declined));
            assert!(i.text.as_ref().is_some_and(|t| t.as_str().starts_with("Claude requested permissions")));
        });
        let result = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"This Bash command contains multiple operations.","is_error":true,"tool_use_id":"toolu_b"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u1","timestamp":"2026-12-01T17:22:11.791Z","tool_use_result":"Error: This Bash command contains multiple operations.","tool_result_meta":[{"id":"toolu_b","non_execution_kind":"user-rejected","permission_decision":{"decision":"reject","source":"config"}}]}"#;
        lowered(result, |_, f| {
            assert!(matches!(f[0], Fact::Item(i) if i.update_only && i.status == Some(ItemStatus::Declined)));
        });
        // An accepted call that failed is the tool's failure.
        let accepted = result.replace("reject", "accept");
        lowered(&accepted, |_, f| {
            assert!(matches!(f[0], Fact::Item(i) if i.status == Some(ItemStatus::Failed)));
        });
        let end = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s","permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_p","tool_input":{"file_path":"PLAN.md","content":"x"}}]}"#;
        lowered(end, |_, f| {
            assert!(f.iter().any(
                |f| matches!(f, Fact::Item(i) if i.id.as_deref() == Some("toolu_p") && i.status == Some(ItemStatus::Declined))
            ));
        });
    }

    /// A message object that does not read is still the line's error, not a silent default.
    #[test]
    fn only_a_string_message_is_a_note() {
        assert!(parse(r#"{"type":"assistant","session_id":"s","message":{"content":7,"id":5}}"#).is_none());
        assert!(parse(r#"{"type":"assistant","session_id":"s","message":null}"#).is_some_and(|l| l.message.is_none()));
    }

    #[test]
    fn result_reports_the_session_totals_by_model_and_ends_the_turn() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s","terminal_reason":"completed","total_cost_usd":0.078038845,"modelUsage":{"claude-sonnet-4-5":{"inputTokens":10206,"outputTokens":1206,"cacheReadInputTokens":51442,"cacheCreationInputTokens":3206,"cacheCreationEphemeral1hInputTokens":601,"costUSD":0.07751535},"claude-haiku-5-5":{"inputTokens":2061,"outputTokens":261,"cacheReadInputTokens":10427,"cacheCreationInputTokens":661,"costUSD":0.000523495}}}"#;
        lowered(line, |l, f| {
            assert_eq!((l.subject.clone(), l.weight), (Subject::Thread("s".into()), Weight::Closing));
            assert!(matches!(f[0], Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Completed)));
            let reported: Vec<(&str, Breakdown)> = f
                .iter()
                .filter_map(|f| match f {
                    Fact::ReportedUsage(r) => Some((r.model.as_str(), r.tokens)),
                    _ => None,
                })
                .collect();
            assert_eq!(reported[1].0, "claude-sonnet-4-5");
            assert_eq!(reported[1].1.input_tokens, Some(10206 + 51442 + 3206));
            assert_eq!(reported[1].1.cache_write_1h_input_tokens, Some(601));
            let costs: Vec<&str> =
                f.iter().filter_map(|f| if let Fact::CostReported(c) = f { Some(&*c.usd) } else { None }).collect();
            assert_eq!(costs, ["0.000523495", "0.07751535"], "the CLI's figures, as written");
            assert!(is_set(f[f.len() - 1], &Target::Subject, Status::Idle));
        });
        let aborted = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s","terminal_reason":"aborted_tools"}"#;
        lowered(aborted, |_, f| {
            assert!(matches!(f[0], Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Interrupted)));
            assert!(f.iter().any(|f| matches!(f, Fact::SessionEnded(e) if e.interrupted)));
        });
    }
}
