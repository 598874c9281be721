//! OpenCode (wire.md §9): its SQLite store's rows and events, and `opencode serve`'s event stream.
//!
//! The sources hand every OpenCode record on as one line `{"opencode": <where>, "event": {type,
//! properties}}`: a store row in the shape of the event that would have written it (a session row
//! as `session.updated`, a message as `message.updated`, a part as `message.part.updated`), an
//! `event` row as it is, an SSE `data:` as it came. One lowering serves all three. A store whose
//! writer is dead says so with `{"opencode": "dead", "sessionID": <root>}`; what the source skipped
//! or could not read is `{"opencode": "notice", "notice": <kind>, "message": <text>}`, a line of
//! the diagnostics log.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::wire::fact::{
    AgentOp, Answered, Breakdown, Clean, CleanStr, CostReported, Delta, ErrorFact, Fact, Format, ItemFact, ItemKind,
    ItemStatus, Lowered, ModelChange, Notice, Parentage, ResponseUsage, SessionEnded, Spawn, Status, StatusChange,
    StatusFact, Subject, Target, TextRule, ThreadFact, TurnEnded, TurnOutcome, TurnRef, TurnStarted, Usage, Via,
    Weight,
};
use crate::wire::json::{Str, opt_str};
use crate::wire::sanitize;

/// One OpenCode record, as the sources write it.
#[derive(Debug, Default, Deserialize)]
pub struct OpenCodeLine<'a> {
    /// Where it came from: `row`, `event` (the store's log), `sse`, or `dead`.
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub opencode: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub event: Option<Event<'a>>,
    /// The root session a `dead` record ends.
    #[serde(rename = "sessionID", borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    /// A `notice` record's kind (`store`, `follow`, `stream`, `resync`) and text: what the source
    /// skipped (odd values, lines over a bound) or could not read.
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub notice: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Event<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub properties: Option<Properties<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Properties<'a> {
    #[serde(rename = "sessionID", borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub info: Option<Info<'a>>,
    #[serde(borrow, default)]
    pub part: Option<Part<'a>>,
    /// `session.status`: `{type: busy|idle|retry, attempt, message, next}`.
    #[serde(borrow, default)]
    pub status: Option<SessionStatus<'a>>,
    /// `session.error`.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    /// When a part event was written, unix ms.
    #[serde(default)]
    pub time: Option<Time>,
    /// `message.part.delta`.
    #[serde(rename = "partID", borrow, default, deserialize_with = "opt_str")]
    pub part_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub field: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub delta: Option<Str<'a>>,
}

/// A time: a number, or an object of them (`{created, updated, completed}`, `{start, end}`).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(untagged)]
pub enum Time {
    At(i64),
    Span(Times),
    #[default]
    #[serde(skip)]
    None,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct Times {
    #[serde(default)]
    pub created: Option<i64>,
    #[serde(default)]
    pub updated: Option<i64>,
    #[serde(default)]
    pub completed: Option<i64>,
    #[serde(default)]
    pub start: Option<i64>,
    #[serde(default)]
    pub end: Option<i64>,
}

impl Time {
    fn span(self) -> Times {
        match self {
            Self::Span(t) => t,
            Self::At(_) | Self::None => Times::default(),
        }
    }

    /// The latest moment it names.
    fn latest(self) -> Option<i64> {
        match self {
            Self::At(t) => Some(t),
            Self::Span(t) => [t.completed, t.end, t.updated, t.start, t.created].into_iter().flatten().max(),
            Self::None => None,
        }
    }
}

/// A session's `info` or a message's (`session.*` and `message.updated` events say which).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Info<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(rename = "sessionID", borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(rename = "parentID", borrow, default, deserialize_with = "opt_str")]
    pub parent_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub title: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub role: Option<Str<'a>>,
    /// A session's model: `{id, providerID}`.
    #[serde(borrow, default)]
    pub model: Option<ModelRef<'a>>,
    #[serde(rename = "modelID", borrow, default, deserialize_with = "opt_str")]
    pub model_id: Option<Str<'a>>,
    /// US dollars, kept as written.
    #[serde(borrow, default)]
    pub cost: Option<&'a RawValue>,
    #[serde(default)]
    pub tokens: Option<Tokens>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub finish: Option<Str<'a>>,
    #[serde(default)]
    pub time: Option<Time>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    /// A user message's summary, written once its turn's first step is under way.
    #[serde(borrow, default)]
    pub summary: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ModelRef<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(rename = "modelID", borrow, default, deserialize_with = "opt_str")]
    pub model_id: Option<Str<'a>>,
}

/// OpenCode's token figures: `input` excludes the cache, `output` excludes reasoning (wire.md §9).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: Option<u64>,
    #[serde(default)]
    pub output: Option<u64>,
    #[serde(default)]
    pub reasoning: Option<u64>,
    #[serde(default)]
    pub cache: Option<Cache>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct Cache {
    #[serde(default)]
    pub read: Option<u64>,
    #[serde(default)]
    pub write: Option<u64>,
}

/// An error as OpenCode stores it: `{name, data: {message, statusCode, isRetryable}}`.
#[derive(Debug, Default, Deserialize)]
struct ErrorInfo<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<ErrorData<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorData<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    message: Option<Str<'a>>,
    #[serde(default)]
    status_code: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Part<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(rename = "sessionID", borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub text: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub tool: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub state: Option<ToolState<'a>>,
    #[serde(default)]
    pub time: Option<Time>,
    #[serde(default)]
    pub synthetic: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ToolState<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub output: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub error: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub metadata: Option<ToolMetadata<'a>>,
    #[serde(default)]
    pub time: Option<Time>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMetadata<'a> {
    /// A `task` part's child session.
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(default)]
    pub exit: Option<i64>,
    /// Set when the call was stopped by an abort (with `error: "Tool execution aborted"`).
    #[serde(default)]
    pub interrupted: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
pub struct SessionStatus<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(default)]
    pub attempt: Option<u64>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub message: Option<Str<'a>>,
}

/// A tool's input, for its one-line title (and a `task`'s card).
#[derive(Debug, Default, Deserialize)]
struct ToolInput<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    command: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    description: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    prompt: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    subagent_type: Option<Str<'a>>,
    #[serde(rename = "filePath", borrow, default, deserialize_with = "opt_str")]
    file_path: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pattern: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    url: Option<Str<'a>>,
}

impl OpenCodeLine<'_> {
    /// The record's own time: the part event's stamp, else the latest its info or part names.
    pub fn time(&self) -> Option<i64> {
        let p = self.event.as_ref()?.properties.as_ref()?;
        p.time
            .and_then(Time::latest)
            .or_else(|| p.info.as_ref().and_then(|i| i.time).and_then(Time::latest))
            .or_else(|| p.part.as_ref().and_then(|part| part.time).and_then(Time::latest))
    }
}

/// Parses an OpenCode record; `None` when it is not one.
pub fn parse(text: &str) -> Option<OpenCodeLine<'_>> {
    let line: OpenCodeLine<'_> = serde_json::from_str(text).ok()?;
    line.opencode.is_some().then_some(line)
}

fn status<'l>(change: StatusChange) -> Fact<'l> {
    Fact::Status(StatusFact { target: Target::Subject, change })
}

/// Lowers one OpenCode record into `out` (whose time and raw text the caller has set).
pub fn lower<'l>(line: &'l OpenCodeLine<'_>, out: &mut Lowered<'l>) {
    out.format = Format::OpenCode;
    out.weight = Weight::Noise;
    if line.opencode.as_deref() == Some("dead") {
        // The store's writer is gone: what it left running was killed with it (wire.md §9).
        if let Some(root) = line.session_id.as_deref() {
            out.subject = Subject::Thread(Cow::Borrowed(root));
            out.weight = Weight::Closing;
            out.facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
        }
        return;
    }
    if line.opencode.as_deref() == Some("notice") {
        let method = format!("opencode/{}", line.notice.as_deref().unwrap_or("notice"));
        out.subject = Subject::Global;
        out.facts.push(Fact::Notice(Notice {
            method: sanitize(&method).into(),
            message: line.message.as_deref().map(sanitize),
        }));
        return;
    }
    let Some(event) = &line.event else { return };
    let kind = event.kind.as_deref().unwrap_or_default();
    // The store's event types carry a version (`message.updated.1`); the live stream's do not.
    let kind = kind.strip_suffix(".1").unwrap_or(kind);
    let Some(props) = &event.properties else { return notice(kind, out) };
    match kind {
        "session.created" | "session.updated" => {
            if let Some(info) = &props.info {
                session(info, out);
            }
        }
        "message.updated" => {
            if let Some(info) = &props.info {
                message(info, props.session_id.as_deref(), out);
            }
        }
        "message.part.updated" => {
            if let Some(part) = &props.part {
                self::part(part, props.session_id.as_deref(), out);
            }
        }
        "message.part.delta" => delta(props, out),
        "session.status" => session_status(props, out),
        "session.idle" => {
            if let Some(s) = props.session_id.as_deref() {
                out.subject = Subject::Thread(Cow::Borrowed(s));
                out.facts.push(status(StatusChange::Idle));
            }
        }
        "session.error" => {
            if let Some(s) = props.session_id.as_deref() {
                out.subject = Subject::Thread(Cow::Borrowed(s));
                let (message, aborted) = error_text(props.error);
                out.weight = Weight::Closing;
                if aborted {
                    out.facts.push(status(StatusChange::Set(Status::Interrupted)));
                } else {
                    out.facts.push(Fact::Error(ErrorFact { message, retrying: false, goes_on: false }));
                }
            } else {
                notice(kind, out);
            }
        }
        _ => notice(kind, out),
    }
}

/// A line of no session (`server.connected`, heartbeats, …): for the diagnostics log only.
fn notice(kind: &str, out: &mut Lowered<'_>) {
    out.subject = Subject::Global;
    let method = format!("opencode/{kind}");
    out.facts.push(Fact::Notice(Notice { method: sanitize(&method).into(), message: None }));
}

/// A child's title is `"<description> (@<agent> subagent)"`: the description names it.
fn child_name(title: &str) -> &str {
    match title.rfind(" (@") {
        Some(i) if title.ends_with(" subagent)") => &title[..i],
        _ => title,
    }
}

/// The title OpenCode gives a session until its title request answers (`New session - <ISO time>`,
/// `Child session - …`; OpenCode's own `isDefaultTitle`): no name. Taken for one, it was the name for
/// good, as a thread keeps the first name it is given.
fn is_placeholder(title: &str) -> bool {
    let Some(time) = title.strip_prefix("New session - ").or_else(|| title.strip_prefix("Child session - ")) else {
        return false;
    };
    // `2026-12-01T17:43:49.104Z`: digits where the ISO form has them.
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    time.len() == shape.len()
        && time.bytes().zip(shape.bytes()).all(|(c, s)| if s == b'd' { c.is_ascii_digit() } else { c == s })
}

/// A session: its place under `parentID`, its names and model, and what OpenCode priced it at.
fn session<'l>(info: &'l Info<'_>, out: &mut Lowered<'l>) {
    let Some(id) = info.id.as_deref().filter(|i| !i.is_empty()) else { return };
    out.subject = Subject::Thread(Cow::Borrowed(id));
    let parentage = match info.parent_id.as_deref().filter(|p| !p.is_empty()) {
        Some(parent) => Parentage::Child { parent: Cow::Borrowed(parent), via: Via::TaskTool, card: None },
        None => Parentage::Root,
    };
    let child = matches!(parentage, Parentage::Child { .. });
    let mut fact = ThreadFact::new(Cow::Borrowed(id), parentage);
    let title = info.title.as_deref().unwrap_or_default();
    let title = if is_placeholder(title) { "" } else { title };
    fact.nickname = Some(sanitize(if child { child_name(title) } else { title })).filter(|n| !n.is_empty());
    fact.role = info.agent.as_deref().map(sanitize).filter(|r| !r.is_empty());
    let model = info.model.as_ref().and_then(|m| m.id.as_deref().or(m.model_id.as_deref())).filter(|m| !m.is_empty());
    fact.model = model.map(sanitize);
    out.facts.push(Fact::Thread(Box::new(fact)));
    // The session's cost is the sum over its own messages (wire.md §9): a running total.
    if let Some(cost) = info.cost.map(RawValue::get).filter(|c| c.parse::<f64>().is_ok_and(|v| v > 0.0)) {
        out.facts.push(Fact::CostReported(CostReported {
            model: model.map(CleanStr::new),
            usd: Cow::Borrowed(cost),
            cumulative: true,
            own: true,
        }));
    }
}

/// OpenCode's figures in the OpenAI vocabulary of [`Breakdown`]: input includes the cache, output
/// includes reasoning.
pub fn breakdown(t: &Tokens) -> Breakdown {
    let v = |x: Option<u64>| x.unwrap_or(0);
    let cache = t.cache.unwrap_or_default();
    let (read, written) = (v(cache.read), v(cache.write));
    let input = v(t.input).saturating_add(read).saturating_add(written);
    let reasoning = v(t.reasoning);
    let output = v(t.output).saturating_add(reasoning);
    Breakdown {
        total_tokens: Some(input.saturating_add(output)),
        input_tokens: Some(input),
        cached_input_tokens: Some(read),
        cache_write_input_tokens: Some(written),
        cache_write_1h_input_tokens: None,
        output_tokens: Some(output),
        reasoning_output_tokens: Some(reasoning),
    }
}

/// An error's text, and whether it was an abort (`MessageAbortedError`) rather than a failure.
pub(crate) fn error_text(raw: Option<&RawValue>) -> (Option<Clean>, bool) {
    let Some(raw) = raw else { return (None, false) };
    let e: ErrorInfo<'_> = serde_json::from_str(raw.get()).unwrap_or_default();
    let name = e.name.as_deref().unwrap_or("error");
    let data = e.data.unwrap_or_default();
    let text = match (data.message.as_deref(), data.status_code) {
        (Some(m), Some(code)) => format!("{name} (HTTP {code}): {m}"),
        (Some(m), None) => format!("{name}: {m}"),
        (None, Some(code)) => format!("{name} (HTTP {code})"),
        (None, None) => name.to_owned(),
    };
    (Some(sanitize(&text)), name == "MessageAbortedError")
}

/// A message: a user prompt opens a turn; an assistant message is one model step, with its usage,
/// and ends the turn when it finished without asking for tools, or failed.
fn message<'l>(info: &'l Info<'_>, session: Option<&'l str>, out: &mut Lowered<'l>) {
    let Some(thread) = info.session_id.as_deref().or(session).filter(|s| !s.is_empty()) else { return };
    let Some(id) = info.id.as_deref() else { return };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    let facts = &mut out.facts;
    if info.role.as_deref() == Some("user") {
        // Restated when its summary is written, after the turn may have ended: it never ends one.
        facts.push(Fact::TurnStarted(TurnStarted {
            turn: Some(Cow::Borrowed(id)),
            own_root_turn: false,
            ends_previous: false,
        }));
        // The prompt arrives: its agent works from here (status.md), not only from its first
        // step, seconds later. Restated with its summary, it says nothing of the agent (1.18.33
        // writes the summary at the first step, and again after the turn may have ended).
        if info.summary.is_none() {
            facts.push(status(StatusChange::Set(Status::Running)));
        }
        return;
    }
    let model = info.model_id.as_deref().filter(|m| !m.is_empty());
    if let Some(m) = model {
        facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m) }));
    }
    if let Some(tokens) = &info.tokens {
        facts.push(Fact::Usage(Usage::Response(Box::new(ResponseUsage {
            key: (Cow::Borrowed(id), Cow::Borrowed("")),
            tokens: breakdown(tokens),
            model: model.map(CleanStr::new),
            context: None,
        }))));
    }
    let turn = info.parent_id.as_deref().map_or(TurnRef::Latest, |p| TurnRef::IdOrLatest(Some(Cow::Borrowed(p))));
    let completed = info.time.map(Time::span).and_then(|t| t.completed);
    if info.error.is_some() {
        let (message, aborted) = error_text(info.error);
        out.weight = Weight::Closing;
        let outcome = if aborted { TurnOutcome::Interrupted } else { TurnOutcome::Failed };
        // An abort is the user's, not an error of the agent's: no error to mark its lane with.
        let error = if aborted { None } else { message.clone() };
        facts.push(Fact::TurnEnded(TurnEnded { turn, outcome: Some(outcome), error }));
        if aborted {
            facts.push(status(StatusChange::Set(Status::Interrupted)));
        } else {
            facts.push(Fact::Error(ErrorFact { message, retrying: false, goes_on: false }));
        }
    } else if completed.is_some() && info.finish.as_deref().is_some_and(|f| f != "tool-calls") {
        out.weight = Weight::Closing;
        facts.push(Fact::TurnEnded(TurnEnded { turn, outcome: Some(TurnOutcome::Completed), error: None }));
        facts.push(status(StatusChange::Idle));
    } else {
        // In flight, or between steps: its tools run, the next step follows.
        facts.push(status(StatusChange::Set(Status::Running)));
    }
}

/// A tool part's state. An `error` is not always a failure (1.18.33, as OpenCode's own UI tells
/// them): an abort (Esc, the API) stops a running call with `Tool execution aborted` and
/// `metadata.interrupted`, a `task` whose child was cancelled with `Task cancelled`; a call the user
/// refused at its permission prompt ends `The user rejected permission to use this specific tool
/// call.`
pub(super) fn item_status(s: Option<&str>, error: Option<&str>, interrupted: bool) -> ItemStatus {
    match s {
        Some("completed") => ItemStatus::Completed,
        Some("error") if interrupted || matches!(error, Some("Tool execution aborted" | "Task cancelled")) => {
            ItemStatus::Interrupted
        }
        Some("error") if error.is_some_and(|e| e.starts_with("The user rejected permission")) => ItemStatus::Declined,
        Some("error") => ItemStatus::Failed,
        _ => ItemStatus::InProgress,
    }
}

/// A part: text, reasoning and tools are items; a `task` tool is a card whose child is
/// `metadata.sessionId`. Step markers carry nothing the message does not.
pub(crate) fn part<'l>(part: &'l Part<'_>, session: Option<&'l str>, out: &mut Lowered<'l>) {
    let Some(thread) = part.session_id.as_deref().or(session).filter(|s| !s.is_empty()) else { return };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    let Some(id) = part.id.as_deref() else { return };
    // Context OpenCode adds of its own (file contents, reminders): not what anyone said.
    if part.synthetic == Some(true) {
        return;
    }
    let span = part.time.map(Time::span).unwrap_or_default();
    let item = |kind, text: &str| {
        Fact::Item(Box::new(ItemFact {
            id: Some(Cow::Borrowed(id)),
            turn: Some(TurnRef::Latest),
            kind: Some(kind),
            status: Some(if span.end.is_some() { ItemStatus::Completed } else { ItemStatus::InProgress }),
            text: Some(sanitize(text)),
            started_ms: span.start,
            completed_ms: span.end,
            ..ItemFact::default()
        }))
    };
    match part.kind.as_deref() {
        // A prompt's text carries no times; the model's has them from its first delta.
        Some("text") if part.time.is_none() => {
            out.facts.push(item(ItemKind::UserMessage, part.text.as_deref().unwrap_or_default()));
        }
        Some("text") => {
            out.weight = Weight::Output;
            out.facts.push(item(ItemKind::AgentMessage, part.text.as_deref().unwrap_or_default()));
        }
        Some("reasoning") => {
            out.weight = Weight::Output;
            out.facts.push(item(ItemKind::Reasoning, part.text.as_deref().unwrap_or_default()));
        }
        Some("tool") => {
            out.weight = Weight::Output;
            tool(part, id, &mut out.facts);
        }
        _ => {}
    }
}

fn tool<'l>(part: &'l Part<'_>, id: &'l str, facts: &mut crate::wire::fact::Facts<'l>) {
    let name = part.tool.as_deref().unwrap_or("tool");
    let state = part.state.as_ref();
    let input: ToolInput<'_> =
        state.and_then(|s| s.input).and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or_default();
    let st = state.and_then(|s| s.status.as_deref());
    let span = state.and_then(|s| s.time).map(Time::span).unwrap_or_default();
    let output = state.and_then(|s| if st == Some("error") { s.error.as_deref() } else { s.output.as_deref() });
    let mut fact = ItemFact {
        id: Some(Cow::Borrowed(id)),
        turn: Some(TurnRef::Latest),
        status: Some(item_status(
            st,
            state.and_then(|s| s.error.as_deref()),
            state.and_then(|s| s.metadata.as_ref()).and_then(|m| m.interrupted) == Some(true),
        )),
        started_ms: span.start,
        completed_ms: span.end,
        exit_code: state.and_then(|s| s.metadata.as_ref()).and_then(|m| m.exit),
        ..ItemFact::default()
    };
    if name == "task" {
        let description = input.description.as_deref().unwrap_or_default();
        fact.kind = Some(ItemKind::Collab);
        // A spawn card in OpenCode's own words (`task`); the task's description and agent type
        // name its lane.
        fact.op = Some(AgentOp::Spawn);
        fact.tool = Some(sanitize(name));
        fact.title = Some(sanitize(description));
        fact.text = Some(sanitize(input.prompt.as_deref().unwrap_or_default()));
        fact.lane_nickname = Some(sanitize(description)).filter(|d| !d.is_empty());
        fact.lane_role = input.subagent_type.as_deref().map(sanitize);
        fact.card = true;
        // The prompt stays the card's text; OpenCode's error says why the call failed.
        fact.why = state.and_then(|s| s.error.as_deref()).filter(|_| st == Some("error")).map(sanitize);
        facts.push(Fact::Item(Box::new(fact)));
        let child = state.and_then(|s| s.metadata.as_ref()).and_then(|m| m.session_id.as_deref());
        if let Some(child) = child.filter(|c| !c.is_empty()) {
            facts.push(Fact::Spawn(Spawn {
                child: Cow::Borrowed(child),
                card: Some(Cow::Borrowed(id)),
                via: Via::TaskTool,
            }));
            if st == Some("completed") {
                facts.push(Fact::Answered(Answered { child: Cow::Borrowed(child), status: Status::Idle }));
            }
        }
        return;
    }
    let (kind, title) = if name == "bash" {
        (ItemKind::Command, input.command.as_deref().unwrap_or_default().to_owned())
    } else {
        let arg = [&input.file_path, &input.pattern, &input.url, &input.command, &input.description]
            .into_iter()
            .find_map(|a| a.as_deref());
        (ItemKind::DynamicTool, arg.map_or_else(|| name.to_owned(), |a| format!("{name} {a}")))
    };
    fact.kind = Some(kind);
    fact.title = Some(sanitize(&title));
    if let Some(text) = output {
        fact.text = Some(sanitize(text));
        fact.text_rule = TextRule::Output;
    }
    facts.push(Fact::Item(Box::new(fact)));
}

/// `message.part.delta`: text streaming into a part, before the store has any of it.
fn delta<'l>(props: &'l Properties<'_>, out: &mut Lowered<'l>) {
    let (Some(thread), Some(part)) = (props.session_id.as_deref(), props.part_id.as_deref()) else { return };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    out.weight = Weight::Output;
    if props.field.as_deref().is_some_and(|f| f != "text") {
        return;
    }
    out.facts.push(Fact::Delta(Delta {
        item: Cow::Borrowed(part),
        turn: None,
        text: props.delta.as_deref().map(CleanStr::new),
        part: None,
    }));
}

/// `session.status`: busy, idle, or retrying the provider (attempt n, with its error).
fn session_status<'l>(props: &'l Properties<'_>, out: &mut Lowered<'l>) {
    let (Some(thread), Some(st)) = (props.session_id.as_deref(), props.status.as_ref()) else { return };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    match st.kind.as_deref() {
        Some("busy") => out.facts.push(status(StatusChange::Set(Status::Running))),
        Some("idle") => out.facts.push(status(StatusChange::Idle)),
        Some("retry") => {
            let text = match (st.attempt, st.message.as_deref()) {
                (Some(n), Some(m)) => format!("retry {n}: {m}"),
                (Some(n), None) => format!("retry {n}"),
                (None, m) => format!("retry: {}", m.unwrap_or_default()),
            };
            out.facts.push(Fact::Error(ErrorFact { message: Some(sanitize(&text)), retrying: true, goes_on: false }));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::fact::Parentage;

    fn lowered(text: &str, check: impl FnOnce(&Lowered<'_>)) {
        let line = parse(text).expect("an OpenCode record");
        let mut out = Lowered { time: line.time(), raw: text, ..Lowered::default() };
        lower(&line, &mut out);
        check(&out);
    }

    fn facts<'a>(l: &'a Lowered<'_>) -> Vec<&'a Fact<'a>> {
        l.facts.iter().collect()
    }

    fn row(kind: &str, props: &str) -> String {
        format!(r#"{{"opencode":"row","event":{{"type":"{kind}","properties":{props}}}}}"#)
    }

    /// The TUI (1.18.33) creates a session titled `New session - <time>` and renames it once the title
    /// request answers; the placeholder is no name, the real title names the session.
    /// What an abort and a refusal leave on a tool part (1.18.33): neither is the tool's failure.
    #[test]
    fn an_aborted_or_refused_call_is_not_a_failed_one() {
        assert_eq!(item_status(Some("error"), Some("Task cancelled"), false), ItemStatus::Interrupted);
        assert_eq!(item_status(Some("error"), Some("Tool execution aborted"), true), ItemStatus::Interrupted);
        assert_eq!(item_status(Some("error"), Some("something else"), true), ItemStatus::Interrupted);
        assert_eq!(
            item_status(Some("error"), Some("The user rejected permission to use this specific tool call."), false),
            ItemStatus::Declined
        );
        assert_eq!(item_status(Some("error"), Some("Subagent failed (task_id: ses_x)"), false), ItemStatus::Failed);
        assert_eq!(item_status(Some("completed"), None, false), ItemStatus::Completed);
        assert_eq!(item_status(Some("running"), None, false), ItemStatus::InProgress);
    }

    #[test]
    fn a_placeholder_title_is_no_name() {
        assert!(is_placeholder("New session - 2026-12-01T17:43:49.104Z"));
        assert!(is_placeholder("Child session - 2026-12-01T17:43:49.104Z"));
        assert!(!is_placeholder("New session - tomorrow"));
        assert!(!is_placeholder("Mock session title"));
        assert!(!is_placeholder("New session - 2026-12-01T17:43:49.104Z and more"));
    }

    #[test]
    fn sessions_become_threads_under_their_parent_id() {
        let child = row(
            "session.updated",
            r#"{"info":{"id":"ses_c","parentID":"ses_r","title":"List files A (@general subagent)","agent":"general","model":{"id":"mock-large","providerID":"mock"},"cost":0.018252,"time":{"created":5,"updated":9}}}"#,
        );
        lowered(&child, |l| {
            assert_eq!(l.subject, Subject::Thread("ses_c".into()));
            assert_eq!(l.time, Some(9));
            let f = facts(l);
            let Fact::Thread(t) = f[0] else { panic!("{f:?}") };
            assert!(matches!(&t.parentage, Parentage::Child { parent, via: Via::TaskTool, .. } if parent == "ses_r"));
            assert_eq!(t.nickname.as_ref().map(Clean::as_str), Some("List files A"), "the title without its agent");
            assert_eq!(t.role.as_ref().map(Clean::as_str), Some("general"));
            assert_eq!(t.model.as_ref().map(Clean::as_str), Some("mock-large"));
            // OpenCode prices the session itself: its figure is a running total of its own messages.
            assert!(matches!(f[1], Fact::CostReported(c) if c.usd == "0.018252" && c.cumulative));
        });
        // The event log's types carry a version; a session without a parent is a root.
        let root = r#"{"opencode":"event","seq":0,"event":{"type":"session.created.1","properties":{"sessionID":"ses_r","info":{"id":"ses_r","title":"Fix it","cost":0}}}}"#;
        lowered(root, |l| {
            let f = facts(l);
            assert!(matches!(f[0], Fact::Thread(t) if t.parentage == Parentage::Root));
            assert_eq!(f.len(), 1, "no cost yet, none reported");
        });
    }

    #[test]
    fn tokens_come_from_each_assistant_message_in_openai_terms() {
        // input = prompt − cached, cache.read = cached, output = completion − reasoning (wire.md §9).
        let msg = row(
            "message.updated",
            r#"{"sessionID":"ses_r","info":{"id":"msg_1","parentID":"msg_0","role":"assistant","modelID":"mock-large","cost":0.003279,"tokens":{"input":997,"output":12,"reasoning":5,"cache":{"read":110,"write":3}},"time":{"created":1,"completed":2},"finish":"stop"}}"#,
        );
        lowered(&msg, |l| {
            let f = facts(l);
            assert!(matches!(f[0], Fact::Model(m) if m.model.as_str() == "mock-large"));
            let Fact::Usage(Usage::Response(r)) = f[1] else { panic!("{f:?}") };
            assert_eq!(&*r.key.0, "msg_1", "restated messages merge by their id");
            assert_eq!(r.tokens.input_tokens, Some(997 + 110 + 3));
            assert_eq!(r.tokens.cached_input_tokens, Some(110));
            assert_eq!(r.tokens.cache_write_input_tokens, Some(3));
            assert_eq!(r.tokens.output_tokens, Some(17));
            assert_eq!(r.tokens.reasoning_output_tokens, Some(5));
            // Finished: `finish` and `time.completed`; the turn is the user message it answers.
            assert!(matches!(f[2], Fact::TurnEnded(e) if e.outcome == Some(TurnOutcome::Completed)
                && e.turn == TurnRef::IdOrLatest(Some("msg_0".into()))));
            assert!(matches!(f[3], Fact::Status(s) if s.change == StatusChange::Idle));
            assert_eq!(l.weight, Weight::Closing);
        });
        // In flight: neither; between steps (`tool-calls`) it is still working.
        for info in [
            r#"{"id":"msg_2","role":"assistant","time":{"created":1}}"#,
            r#"{"id":"msg_2","role":"assistant","time":{"created":1,"completed":2},"finish":"tool-calls"}"#,
        ] {
            lowered(&row("message.updated", &format!(r#"{{"sessionID":"s","info":{info}}}"#)), |l| {
                assert!(
                    matches!(facts(l).last(), Some(Fact::Status(s)) if s.change == StatusChange::Set(Status::Running))
                );
            });
        }
        // A user message opens a turn, its agent running, and never ends one; restated when its
        // summary is written, it opens nothing more.
        lowered(&row("message.updated", r#"{"sessionID":"s","info":{"id":"msg_0","role":"user"}}"#), |l| {
            assert!(matches!(
                facts(l)[..],
                [Fact::TurnStarted(t), Fact::Status(s)] if !t.ends_previous && t.turn.as_deref() == Some("msg_0")
                    && s.change == StatusChange::Set(Status::Running)
            ));
        });
        let restated = r#"{"sessionID":"s","info":{"id":"msg_0","role":"user","summary":{"diffs":[]}}}"#;
        lowered(&row("message.updated", restated), |l| {
            assert!(matches!(facts(l)[..], [Fact::TurnStarted(t)] if t.turn.as_deref() == Some("msg_0")));
        });
    }

    #[test]
    fn failures_aborts_and_a_dead_writer() {
        // HTTP 500 until OpenCode gives up: an APIError on the message.
        let failed = row(
            "message.updated",
            r#"{"sessionID":"s","info":{"id":"m","role":"assistant","error":{"name":"APIError","data":{"message":"mock: internal server error","statusCode":500,"isRetryable":true}},"time":{"created":1,"completed":2}}}"#,
        );
        lowered(&failed, |l| {
            let f = facts(l);
            assert!(matches!(f.last(), Some(Fact::Error(e)) if !e.retrying
                && e.message.as_ref().map(Clean::as_str) == Some("APIError (HTTP 500): mock: internal server error")));
        });
        // An abort through the API, cascading to a running child.
        let aborted = row(
            "message.updated",
            r#"{"sessionID":"s","info":{"id":"m","role":"assistant","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}}"#,
        );
        lowered(&aborted, |l| {
            let f = facts(l);
            assert!(
                matches!(f.iter().find(|f| matches!(f, Fact::TurnEnded(_))), Some(Fact::TurnEnded(e)) if e.outcome == Some(TurnOutcome::Interrupted))
            );
            assert!(matches!(f.last(), Some(Fact::Status(s)) if s.change == StatusChange::Set(Status::Interrupted)));
            // The TUI's Esc aborts this way too (1.18.33): the lane shows it interrupted, not "retried".
            assert!(!f.iter().any(|f| matches!(f, Fact::Error(_) | Fact::TurnEnded(TurnEnded { error: Some(_), .. }))));
        });
        // What the source skipped: a line of the diagnostics log, its text clean.
        lowered(r#"{"opencode":"notice","notice":"store","message":"2 odd \u001b[31mvalues"}"#, |l| {
            assert_eq!(l.subject, Subject::Global);
            assert!(matches!(&facts(l)[..], [Fact::Notice(n)] if n.method.as_str() == "opencode/store"
                && n.message.as_ref().map(Clean::as_str) == Some("2 odd values")));
        });
        // Killed: nothing written; the source says its writer is gone.
        lowered(r#"{"opencode":"dead","sessionID":"ses_r"}"#, |l| {
            assert_eq!(l.subject, Subject::Thread("ses_r".into()));
            assert!(matches!(facts(l)[..], [Fact::SessionEnded(SessionEnded { interrupted: true })]));
        });
    }

    #[test]
    fn a_task_part_is_a_card_with_its_child_in_a_lane() {
        let task = row(
            "message.part.updated",
            r#"{"sessionID":"ses_r","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_r","type":"tool","tool":"task","callID":"call_a","state":{"status":"completed","input":{"description":"List \u001b[31mfiles A","prompt":"ls","subagent_type":"general"},"output":"<task id=\"ses_c\" state=\"completed\">…</task>","metadata":{"parentSessionId":"ses_r","sessionId":"ses_c"},"time":{"start":3,"end":7}}}}"#,
        );
        lowered(&task, |l| {
            let f = facts(l);
            let Fact::Item(card) = f[0] else { panic!("{f:?}") };
            assert!(card.card && card.kind == Some(ItemKind::Collab));
            assert_eq!((card.op, card.tool.as_ref().map(Clean::as_str)), (Some(AgentOp::Spawn), Some("task")));
            assert_eq!(card.id.as_deref(), Some("prt_1"));
            assert_eq!(card.lane_nickname.as_ref().map(Clean::as_str), Some("List files A"), "sanitised");
            assert_eq!(card.lane_role.as_ref().map(Clean::as_str), Some("general"));
            assert_eq!(card.text.as_ref().map(Clean::as_str), Some("ls"), "a card shows its prompt");
            assert!(matches!(f[1], Fact::Spawn(s) if s.child == "ses_c" && s.card.as_deref() == Some("prt_1")));
            assert!(matches!(f[2], Fact::Answered(a) if a.child == "ses_c" && a.status == Status::Idle));
        });
        // A failed child: the card fails with the parent's tool error, the child's end is its own.
        let failed = row(
            "message.part.updated",
            r#"{"part":{"id":"prt_2","sessionID":"ses_r","type":"tool","tool":"task","state":{"status":"error","input":{"description":"C"},"error":"Subagent failed (task_id: ses_x)","metadata":{"sessionId":"ses_x"}}}}"#,
        );
        lowered(&failed, |l| {
            let f = facts(l);
            assert!(matches!(f[0], Fact::Item(i) if i.status == Some(ItemStatus::Failed)));
            assert!(!f.iter().any(|f| matches!(f, Fact::Answered(_))));
        });
    }

    #[test]
    fn text_reasoning_and_tools_are_items() {
        let part = |p: &str| row("message.part.updated", &format!(r#"{{"part":{p}}}"#));
        lowered(&part(r#"{"id":"p1","sessionID":"s","type":"text","text":"do it"}"#), |l| {
            assert!(
                matches!(facts(l)[0], Fact::Item(i) if i.kind == Some(ItemKind::UserMessage)),
                "a prompt has no times"
            );
        });
        lowered(&part(r#"{"id":"p2","sessionID":"s","type":"text","text":"Done.","time":{"start":1,"end":2}}"#), |l| {
            assert!(
                matches!(facts(l)[0], Fact::Item(i) if i.kind == Some(ItemKind::AgentMessage) && i.status == Some(ItemStatus::Completed))
            );
            assert_eq!(l.weight, Weight::Output);
        });
        lowered(&part(r#"{"id":"p3","sessionID":"s","type":"reasoning","text":"hm","time":{"start":1}}"#), |l| {
            assert!(
                matches!(facts(l)[0], Fact::Item(i) if i.kind == Some(ItemKind::Reasoning) && i.status == Some(ItemStatus::InProgress))
            );
        });
        let bash = r#"{"id":"p4","sessionID":"s","type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"a b","metadata":{"exit":0}}}"#;
        lowered(&part(bash), |l| {
            let Fact::Item(i) = facts(l)[0] else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::Command));
            assert_eq!(i.title.as_ref().map(Clean::as_str), Some("ls"));
            assert_eq!(i.text.as_ref().map(Clean::as_str), Some("a b"));
            assert_eq!(i.exit_code, Some(0));
        });
        lowered(&part(r#"{"id":"p5","sessionID":"s","type":"step-finish"}"#), |l| assert!(l.facts.is_empty()));
        lowered(&part(r#"{"id":"p6","sessionID":"s","type":"text","text":"<file>","synthetic":true}"#), |l| {
            assert!(l.facts.is_empty(), "OpenCode's own context is not what anyone said");
        });
    }

    #[test]
    fn the_live_stream_streams_text_and_says_when_it_retries() {
        let sse = |t: &str, p: &str| format!(r#"{{"opencode":"sse","event":{{"type":"{t}","properties":{p}}}}}"#);
        lowered(
            &sse(
                "message.part.delta",
                r#"{"sessionID":"s","messageID":"m","partID":"p","field":"text","delta":"wor"}"#,
            ),
            |l| {
                assert!(
                    matches!(facts(l)[..], [Fact::Delta(d)] if d.item == "p" && d.text.as_ref().map(CleanStr::as_str) == Some("wor"))
                );
            },
        );
        lowered(
            &sse(
                "session.status",
                r#"{"sessionID":"s","status":{"type":"retry","attempt":2,"message":"Internal Server Error","next":5}}"#,
            ),
            |l| {
                assert!(matches!(facts(l)[..], [Fact::Error(e)] if e.retrying
                && e.message.as_ref().map(Clean::as_str) == Some("retry 2: Internal Server Error")));
            },
        );
        lowered(&sse("session.status", r#"{"sessionID":"s","status":{"type":"busy"}}"#), |l| {
            assert!(matches!(facts(l)[..], [Fact::Status(s)] if s.change == StatusChange::Set(Status::Running)));
        });
        lowered(&sse("session.idle", r#"{"sessionID":"s"}"#), |l| {
            assert!(matches!(facts(l)[..], [Fact::Status(s)] if s.change == StatusChange::Idle));
        });
        lowered(&sse("server.heartbeat", "{}"), |l| assert_eq!(l.subject, Subject::Global));
    }
}
