//! Codex rollout files: what the plain `codex` command line (and the app-server) writes for every
//! session under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<threadId>.jsonl`, one file per
//! thread. Lines are `{"timestamp", "type", "payload"}`; only the first, `session_meta`, names its
//! thread (a child's also its parent): a file's later lines belong to the thread of the
//! `session_meta` before them, else to the thread its name tells (its [`Origin`]).
//!
//! `response_item`s are the transcript (messages, reasoning, function calls and their outputs),
//! `event_msg` `token_count` the usage (cumulative, merged with `max` as for the app-server),
//! `task_started` / `task_complete` the turns. An `event_msg` `item_completed` of a spawn (v1's
//! `CollabAgentToolCall`, v2's `SubAgentActivity` `started`) names the call and the agent it
//! started by their ids, before the agent's own file says anything: the child is its call's from
//! its first moment (its `session_meta` names only its parent), and a spawn that failed is one.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::codex::message::ThreadSpawn;
use super::fact::{
    AgentOp, Answered, Breakdown, CleanStr, ContextFill, ErrorFact, Fact, Facts, Format, Id, ItemFact, ItemKind,
    ItemStatus, Lowered, ModelChange, Notice, Parentage, Spawn, Status, StatusChange, StatusFact, Subject, Target,
    TextRule, ThreadFact, TurnEnded, TurnOutcome, TurnRef, TurnStarted, Usage, Via, Weight,
};
use super::json::{Str, opt_str, req_str};
use super::origin::Origin;
use super::sanitize;
use super::time::iso8601_ms;

#[derive(Debug, Deserialize)]
pub struct RolloutLine<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "req_str")]
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
    thread_spawn: Option<ThreadSpawn<'a>>,
}

impl<'a> SessionMeta<'a> {
    pub fn spawn(&self) -> Option<ThreadSpawn<'a>> {
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

impl RolloutLine<'_> {
    pub fn time(&self) -> Option<i64> {
        self.timestamp.as_deref().and_then(iso8601_ms)
    }
}

/// Parses a rollout line; `None` when it is not one (its `type` is not a string).
pub fn parse(text: &str) -> Option<RolloutLine<'_>> {
    serde_json::from_str(text).ok()
}

/// Which file's lines are being read, and the thread its `session_meta` named: the lines after it
/// are that thread's, until records come from another file.
#[derive(Debug, Default)]
pub struct Follow {
    origin: Origin,
    thread: Option<Box<str>>,
    /// Spawn calls whose `item_completed` said they failed, their output not read yet (it is a
    /// plain message, which alone reads as a tool's answer). The newest few: an output follows
    /// its item at once.
    failed_spawns: Vec<Box<str>>,
}

/// Failed spawn calls remembered until their output.
const FAILED_SPAWNS: usize = 64;

impl Follow {
    fn thread_for(&mut self, origin: &Origin, named: Option<&str>) -> Option<Box<str>> {
        if self.origin != *origin {
            self.origin = origin.clone();
            self.thread = None;
        }
        if let Some(id) = named {
            self.thread = Some(id.into());
        }
        self.thread.clone().or_else(|| origin.thread().map(Into::into))
    }
}

#[derive(Deserialize, Default)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    summary: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    #[serde(borrow, default)]
    turn_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(borrow, default)]
    thread_settings: Option<Settings<'a>>,
    #[serde(default)]
    info: Option<Info>,
    /// A `task_complete`'s error (0.171.0: `{message, codex_error_info}`): the turn failed.
    #[serde(borrow, default)]
    error: Option<TaskError<'a>>,
    /// An `item_completed`'s item.
    #[serde(borrow, default)]
    item: Option<EventItem<'a>>,
}

/// What an `item_completed` says of a spawn: v1's `CollabAgentToolCall` (`tool: spawn_agent`,
/// its agents in `receiver_thread_ids`), v2's `SubAgentActivity` (`kind: started`,
/// `agent_thread_id`); `id` is the spawning call's `call_id` in both.
#[derive(Deserialize, Default)]
struct EventItem<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool: Option<Str<'a>>,
    #[serde(borrow, default)]
    status: Option<Str<'a>>,
    #[serde(rename = "kind", borrow, default)]
    activity: Option<Str<'a>>,
    #[serde(borrow, default)]
    receiver_thread_ids: Option<Vec<Str<'a>>>,
    #[serde(borrow, default)]
    agent_thread_id: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct TaskError<'a> {
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct Settings<'a> {
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<TokenCounts>,
    #[serde(default)]
    last_token_usage: Option<TokenCounts>,
    #[serde(default)]
    model_context_window: Option<u64>,
}

/// The app-server's breakdown in snake_case (the field names are the format's).
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default, Clone, Copy)]
struct TokenCounts {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    reasoning_output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl TokenCounts {
    fn breakdown(self) -> Breakdown {
        Breakdown {
            total_tokens: self.total_tokens,
            input_tokens: self.input_tokens,
            cached_input_tokens: self.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens,
            cache_write_1h_input_tokens: None,
            output_tokens: self.output_tokens,
            reasoning_output_tokens: self.reasoning_output_tokens,
        }
    }
}

fn joined(parts: Option<&Vec<Part<'_>>>) -> String {
    parts.map(|p| p.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n\n")).unwrap_or_default()
}

/// A function call's arguments, for its title.
#[derive(Deserialize, Default)]
struct Arguments<'a> {
    #[serde(borrow, default)]
    cmd: Option<Str<'a>>,
    #[serde(default)]
    command: Option<serde_json::Value>,
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
    #[serde(borrow, default)]
    target: Option<Str<'a>>,
    /// `wait_agent`'s children (v1: thread ids; v2 waits for any and names none).
    #[serde(borrow, default)]
    targets: Option<Vec<Str<'a>>>,
}

impl Arguments<'_> {
    /// The agents a call that manages them names: a wait's targets (v1: thread ids; v2 waits for
    /// any and names none), another call's target. A spawn names its child only in its output.
    fn named(&self, op: AgentOp) -> Vec<Id<'static>> {
        match op {
            AgentOp::Spawn | AgentOp::List => Vec::new(),
            AgentOp::Wait => self.targets.iter().flatten().filter(|t| !t.is_empty()).map(|t| owned(t)).collect(),
            _ => self.target.as_deref().filter(|t| !t.is_empty()).map(owned).into_iter().collect(),
        }
    }
}

/// What a `spawn_agent` call returns: the child's thread id (v1), or its agent path (v2).
#[derive(Deserialize, Default)]
struct Spawned<'a> {
    #[serde(borrow, default)]
    agent_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    task_name: Option<Str<'a>>,
}

impl Spawned<'_> {
    fn child(&self) -> Option<&str> {
        self.agent_id.as_deref().or(self.task_name.as_deref()).filter(|c| !c.is_empty())
    }
}

fn owned(id: &str) -> Id<'static> {
    Cow::Owned(id.to_owned())
}

/// Lowers one rollout line into `out` (whose time and raw text the caller has set).
pub fn lower<'l>(line: &'l RolloutLine<'_>, origin: &Origin, follow: &mut Follow, out: &mut Lowered<'l>) {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
        kind: Option<Str<'a>>,
    }
    out.format = Format::CodexRollout;
    let sub = match &*line.kind {
        "response_item" | "event_msg" => line.payload::<Kind<'_>>().and_then(|k| k.kind),
        _ => None,
    };
    let sub = sub.as_deref().unwrap_or("");
    let meta = line.session_meta();
    let Some(thread) = follow.thread_for(origin, meta.as_ref().and_then(|m| m.id.as_deref())) else {
        // No file and no `session_meta` yet: nothing tells whose line it is.
        out.subject = Subject::Global;
        let method =
            if sub.is_empty() { format!("rollout/{}", line.kind) } else { format!("rollout/{}/{sub}", line.kind) };
        out.facts.push(Fact::Notice(Notice { method: sanitize(&method).into(), message: None }));
        return;
    };
    out.weight = match (&*line.kind, sub) {
        ("event_msg", "task_complete" | "turn_aborted") => Weight::Closing,
        ("session_meta" | "turn_context" | "world_state" | "token_usage_record", _)
        | ("event_msg", "token_count" | "task_started" | "thread_settings_applied") => Weight::Noise,
        _ => Weight::Output,
    };
    let id: Id<'l> = Cow::Owned(thread.into_string());
    if let Some(meta) = &meta {
        out.facts.push(Fact::Thread(Box::new(meta.fact(id.clone()))));
    }
    out.subject = Subject::Thread(id);
    if let Some(p) = line.payload::<Payload<'_>>() {
        payload_facts(&line.kind, &p, follow, out);
    }
}

impl SessionMeta<'_> {
    /// What a `session_meta` says of its thread: its place in the tree and its names.
    fn fact<'l>(&self, thread: Id<'l>) -> ThreadFact<'l> {
        let parentage = match self.parent() {
            Some(parent) => Parentage::Child { parent: owned(&parent), via: Via::ThreadStarted, card: None },
            None => Parentage::Root,
        };
        let mut fact = ThreadFact::new(thread, parentage);
        fact.nickname = self.agent_nickname.as_deref().filter(|n| !n.is_empty()).map(sanitize);
        fact.role = self.agent_role.as_deref().filter(|n| !n.is_empty()).map(sanitize);
        // Multi-agent v2 names a child by its path (`/root/part_1`) where v1 uses its thread id.
        fact.path = self.spawn().and_then(|s| s.agent_path).filter(|p| !p.is_empty()).map(|p| sanitize(&p));
        fact
    }
}

/// What a line's payload says, by the line's type and the payload's.
fn payload_facts(line_kind: &str, p: &Payload<'_>, follow: &mut Follow, out: &mut Lowered<'_>) {
    let time = out.time;
    let facts = &mut out.facts;
    let model = |m: Option<&str>| {
        m.filter(|m| !m.is_empty())
            .map(|m| Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m).to_clean().into() }))
    };
    let kind = p.kind.as_deref().unwrap_or_default();
    match (line_kind, kind) {
        ("turn_context", _) => facts.extend(model(p.model.as_deref())),
        ("event_msg", "thread_settings_applied") => {
            facts.extend(model(p.thread_settings.as_ref().and_then(|s| s.model.as_deref())));
        }
        ("event_msg", "task_started") => {
            let turn = p.turn_id.as_deref().map_or(Cow::Borrowed("turn"), |t| Cow::Owned(t.to_owned()));
            facts.push(Fact::TurnStarted(TurnStarted { turn: Some(turn), own_root_turn: false, ends_previous: false }));
            facts
                .push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(Status::Running) }));
        }
        ("event_msg", "task_complete" | "turn_aborted") => turn_ended(kind == "turn_aborted", p, facts),
        ("event_msg", "token_count") => facts.extend(p.info.map(Info::usage)),
        ("response_item", "message") => message(p, out),
        ("response_item", "reasoning") => {
            let text = sanitize(&joined(p.summary.as_ref()));
            facts.push(item(p.id.as_deref(), ItemKind::Reasoning, time, |f| {
                f.text = Some(text);
                f.status = Some(ItemStatus::Completed);
            }));
        }
        ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
            facts.push(call(p, time));
        }
        ("response_item", "function_call_output" | "custom_tool_call_output") => {
            let failed = p.call_id.as_deref().and_then(|c| follow.failed_spawns.iter().position(|f| **f == *c));
            let failed = failed.map(|at| follow.failed_spawns.remove(at)).is_some();
            facts.extend(call_output(p, time, failed));
        }
        ("event_msg", "item_completed") => {
            if let Some(item) = &p.item {
                spawned(item, time, follow, facts);
            }
        }
        _ => {}
    }
}

/// `task_complete` (a turn whose requests failed for good is still written so, with an `error`)
/// or `turn_aborted`.
fn turn_ended(aborted: bool, p: &Payload<'_>, facts: &mut Facts<'_>) {
    let error = p.error.as_ref().map(|e| sanitize(e.message.as_deref().unwrap_or("the turn failed")));
    let outcome = match (aborted, &error) {
        (true, _) => TurnOutcome::Interrupted,
        (_, Some(_)) => TurnOutcome::Failed,
        _ => TurnOutcome::Completed,
    };
    if let Some(message) = &error {
        facts.push(Fact::Error(ErrorFact { message: Some(message.clone()), retrying: false, goes_on: false }));
    }
    facts.push(Fact::TurnEnded(TurnEnded {
        turn: TurnRef::IdOrLatest(p.turn_id.as_deref().map(|t| Cow::Owned(t.to_owned()))),
        outcome: Some(outcome),
        error,
    }));
}

impl Info {
    /// A `token_count`'s figures: the thread's totals, and the context of its latest response.
    fn usage<'l>(self) -> Fact<'l> {
        let context = match (self.last_token_usage.and_then(|l| l.total_tokens), self.model_context_window) {
            (Some(used), Some(window)) => Some(ContextFill { used, window: Some(window) }),
            _ => None,
        };
        Fact::Usage(Usage::Cumulative { total: self.total_token_usage.map(TokenCounts::breakdown), context })
    }
}

/// A message of the transcript: the assistant's, or the user's — unless Codex wrote it in the
/// user's name ([`Injected`]). The instructions Codex sends as developer messages are not the
/// conversation.
fn message(p: &Payload<'_>, out: &mut Lowered<'_>) {
    let time = out.time;
    let kind = match p.role.as_deref() {
        Some("assistant") => ItemKind::AgentMessage,
        Some("user") => ItemKind::UserMessage,
        _ => return,
    };
    let raw = if kind == ItemKind::UserMessage {
        let (said, context) = spoken(p.content.as_deref().unwrap_or_default());
        if context && said.trim().is_empty() {
            out.weight = Weight::Noise;
            return;
        }
        if let Some(injected) = injected(&said) {
            injected.lower(p.id.as_deref(), out);
            return;
        }
        said
    } else {
        joined(p.content.as_ref())
    };
    let text = sanitize(&raw);
    out.facts.push(item(p.id.as_deref(), kind, time, |f| {
        f.text = Some(text);
        f.status = Some(ItemStatus::Completed);
    }));
}

/// A function call: a call that manages agents (a card; the agents it names are its receivers,
/// shown by name, never its title), a command, or another tool.
fn call<'l>(p: &Payload<'_>, time: Option<i64>) -> Fact<'l> {
    let name = p.name.as_deref().unwrap_or("tool");
    let args: Arguments<'_> = p.arguments.as_deref().and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
    let command = args.cmd.as_deref().map(str::to_owned).or_else(|| match &args.command {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Array(a)) => Some(a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(" ")),
        _ => None,
    });
    let (op, tool) = super::codex::agent_call(name);
    let (kind, title, receivers) = match op {
        Some(op) => (ItemKind::Collab, args.message.as_deref().unwrap_or_default().to_owned(), args.named(op)),
        None if command.is_some() => (ItemKind::Command, command.unwrap_or_default(), Vec::new()),
        None => (ItemKind::DynamicTool, name.to_owned(), Vec::new()),
    };
    item(p.call_id.as_deref().or(p.id.as_deref()), kind, time, |f| {
        f.title = Some(sanitize(&title));
        f.op = op;
        f.tool = op.map(|_| tool);
        f.status = Some(ItemStatus::InProgress);
        f.receivers = receivers;
    })
}

/// A spawn's `item_completed`: the agent it started, under the call's id (its card), or the call
/// failed and started none.
fn spawned(item: &EventItem<'_>, time: Option<i64>, follow: &mut Follow, facts: &mut Facts<'_>) {
    let Some(call) = item.id.as_deref().filter(|c| !c.is_empty()) else { return };
    let (agents, via): (Vec<&str>, Via) = match (item.kind.as_deref(), item.tool.as_deref()) {
        (Some("CollabAgentToolCall"), Some("spawn_agent")) => {
            if item.status.as_deref() == Some("failed") {
                if follow.failed_spawns.len() >= FAILED_SPAWNS {
                    follow.failed_spawns.remove(0);
                }
                follow.failed_spawns.push(call.into());
                facts.push(Fact::Item(Box::new(ItemFact {
                    id: Some(owned(call)),
                    update_only: true,
                    status: Some(ItemStatus::Failed),
                    completed_ms: time,
                    ..ItemFact::default()
                })));
                return;
            }
            (item.receiver_thread_ids.iter().flatten().map(|r| &**r).collect(), Via::CollabAgentToolCall)
        }
        (Some("SubAgentActivity"), _) if item.activity.as_deref() == Some("started") => {
            (item.agent_thread_id.as_deref().into_iter().collect(), Via::SubAgentActivity)
        }
        _ => return,
    };
    for agent in agents.into_iter().filter(|a| !a.is_empty()) {
        facts.push(Fact::Spawn(Spawn { child: owned(agent), card: Some(owned(call)), via }));
    }
}

/// A function call's output: its call is completed, with the output as its text. A spawn's output
/// names its child; any other output that parses so is a tool's own. `failed`: the call is a
/// spawn its `item_completed` said failed (its output is the reason).
fn call_output<'l>(p: &Payload<'_>, time: Option<i64>, failed: bool) -> Option<Fact<'l>> {
    let call = p.call_id.as_deref()?;
    let output = p.output.map(|raw| serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned()));
    let spawned = output
        .as_deref()
        .filter(|o| o.starts_with('{'))
        .and_then(|o| serde_json::from_str::<Spawned<'_>>(o).ok())
        .and_then(|s| s.child().map(owned));
    let exec = output.as_deref().and_then(ExecOutput::parse);
    let exit_code = exec.as_ref().and_then(|e| e.exit_code);
    let text = match &exec {
        Some(e) => Some(sanitize(e.output)),
        None => output.as_deref().map(sanitize),
    };
    Some(Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(call.to_owned())),
        update_only: true,
        receivers: spawned.into_iter().collect(),
        text,
        text_rule: TextRule::Output,
        exit_code,
        status: Some(match exit_code {
            _ if failed => ItemStatus::Failed,
            Some(0) | None => ItemStatus::Completed,
            Some(_) => ItemStatus::Failed,
        }),
        completed_ms: time,
        ..ItemFact::default()
    })))
}

/// What `exec_command` returns to the model in 0.171.0: a header for the model (`Chunk ID: …`,
/// `Wall time: … seconds`, `Process exited with code N` or `Process running with session ID N`,
/// `Original token count: N`) and, after an `Output:` line, what the command printed. A person
/// reads the command's output; the exit code is the item's.
struct ExecOutput<'a> {
    exit_code: Option<i64>,
    output: &'a str,
}

impl<'a> ExecOutput<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        if !text.starts_with("Chunk ID: ") {
            return None;
        }
        let (head, output) = match text.split_once("\nOutput:\n") {
            Some(split) => split,
            None => (text.strip_suffix("\nOutput:").unwrap_or(text), ""),
        };
        let known = [
            "Chunk ID: ",
            "Wall time: ",
            "Process exited with code ",
            "Process running with ",
            "Original token count: ",
        ];
        if !head.lines().all(|l| known.iter().any(|k| l.starts_with(k))) {
            return None;
        }
        let exit_code = head.lines().find_map(|l| l.strip_prefix("Process exited with code ")?.trim().parse().ok());
        Some(Self { exit_code, output })
    }
}

/// A user message's parts that are the user's (joined), and whether any were context Codex adds
/// to the history as user parts: the project's `AGENTS.md` (`# AGENTS.md instructions for <dir>`,
/// before the first prompt whenever the project has one; `<user_instructions>` in older builds),
/// `<environment_context>` (cwd, shell, date, sandbox, restated every turn) and a `<skill>`'s
/// instructions. None is what the user asked: never a prompt, never a root's name.
fn spoken(parts: &[Part<'_>]) -> (String, bool) {
    let mut context = false;
    let mut said = Vec::with_capacity(parts.len());
    for text in parts.iter().filter_map(|p| p.text.as_deref()) {
        let start = text.trim_start();
        let injected = ["# AGENTS.md instructions for ", "<environment_context>", "<user_instructions>", "<skill>"]
            .iter()
            .any(|tag| start.starts_with(tag));
        if injected {
            context = true;
        } else {
            said.push(text);
        }
    }
    (said.join("\n\n"), context)
}

/// What Codex writes into a thread's history as a `user` message that the user never typed.
enum Injected {
    /// `<subagent_notification>`: a child's status reaching its parent.
    Notification(Notification),
    /// `<turn_aborted>`: the note that the user interrupted the turn (codex-rs `tasks/mod.rs`,
    /// `interrupted_turn_history_marker`; seen in `rollouts/interrupt`).
    TurnAborted,
    /// `<user_shell_command>`: a command the user ran with `!` (`rollouts/tui_shell`).
    Shell(Shell),
}

/// A `<user_shell_command>` as 0.171.0 writes it: `<command>\n…\n</command>` and `<result>` with
/// `Exit code: N`, `Duration: …` and `Output:` lines, the output after the last.
struct Shell {
    command: String,
    exit_code: Option<i64>,
    output: String,
}

impl Shell {
    fn parse(body: &str) -> Option<Self> {
        let between = |open: &str, close: &str| {
            let (_, rest) = body.split_once(open)?;
            rest.rsplit_once(close).map(|(inside, _)| inside.trim_matches('\n'))
        };
        let command = between("<command>", "</command>")?.trim().to_owned();
        let result = between("<result>", "</result>").unwrap_or_default();
        let (head, output) = result.split_once("Output:").unwrap_or((result, ""));
        let exit_code = head.lines().find_map(|l| l.trim().strip_prefix("Exit code:")?.trim().parse().ok());
        let output = output.strip_prefix('\n').unwrap_or(output).trim_end().to_owned();
        Some(Self { command, exit_code, output })
    }
}

impl Injected {
    /// What Codex wrote in the user's name says, as the item `id` of the message.
    fn lower(self, id: Option<&str>, out: &mut Lowered<'_>) {
        let time = out.time;
        match self {
            Self::TurnAborted => {
                // The turn the user interrupted, not their words: Codex writes this note into
                // that turn's history just before its `turn_aborted` event (and alone into a fork
                // of an interrupted session), so it ends the latest turn as the app-server's
                // `turn/completed` `interrupted` does; the event repeats it.
                out.weight = Weight::Closing;
                out.facts.push(Fact::TurnEnded(TurnEnded {
                    turn: TurnRef::Latest,
                    outcome: Some(TurnOutcome::Interrupted),
                    error: None,
                }));
            }
            Self::Shell(shell) => {
                // `!cmd` typed in the TUI: Codex ran it and wrote its command and result as a user
                // message of a turn of its own. What the user did is a command.
                out.facts.push(item(id, ItemKind::Command, time, |f| {
                    f.title = Some(sanitize(&shell.command));
                    f.text = Some(sanitize(&shell.output));
                    f.exit_code = shell.exit_code;
                    f.status = Some(match shell.exit_code {
                        Some(0) | None => ItemStatus::Completed,
                        Some(_) => ItemStatus::Failed,
                    });
                }));
            }
            Self::Notification(n) => {
                out.facts.extend(n.fact());
                out.facts.push(item(id, ItemKind::Other(sanitize("agent reported")), time, |f| {
                    f.text = Some(sanitize(&n.summary()));
                    f.status = Some(ItemStatus::Completed);
                    f.receivers = vec![owned(&n.agent_path)];
                }));
            }
        }
    }
}

fn injected(text: &str) -> Option<Injected> {
    let text = text.trim();
    if text.starts_with("<turn_aborted>") {
        return Some(Injected::TurnAborted);
    }
    if let Some(body) = text.strip_prefix("<user_shell_command>").and_then(|b| b.strip_suffix("</user_shell_command>"))
    {
        return Shell::parse(body).map(Injected::Shell);
    }
    let body = text.strip_prefix("<subagent_notification>")?.strip_suffix("</subagent_notification>")?;
    serde_json::from_str(body.trim()).ok().map(Injected::Notification)
}

/// The body of a `<subagent_notification>`: the child (v1: its thread id) and its `AgentStatus`,
/// a bare word (`running`, `shutdown`, ...) or a one-key object (`{"completed": message}`).
#[derive(Deserialize)]
struct Notification {
    agent_path: String,
    status: serde_json::Value,
}

impl Notification {
    /// The status word and the message it may carry.
    fn status(&self) -> (&str, Option<&str>) {
        match &self.status {
            serde_json::Value::String(word) => (word, None),
            serde_json::Value::Object(o) => {
                o.iter().next().map_or(("", None), |(word, message)| (word.as_str(), message.as_str()))
            }
            _ => ("", None),
        }
    }

    /// The child's end as its parent learns it; statuses that say nothing new of the child add nothing.
    fn fact(&self) -> Option<Fact<'static>> {
        let child: Id<'static> = Cow::Owned(self.agent_path.clone());
        let answered = |status| Some(Fact::Answered(Answered { child: child.clone(), status }));
        let set = |status| {
            Some(Fact::Status(StatusFact { target: Target::Thread(child.clone()), change: StatusChange::Set(status) }))
        };
        match self.status().0 {
            "completed" => answered(Status::Idle),
            "errored" => answered(Status::Failed),
            "interrupted" => set(Status::Interrupted),
            "shutdown" => set(Status::Closed),
            _ => None,
        }
    }

    /// What the child reported; the item's receiver says who (by name, not by id).
    fn summary(&self) -> String {
        match self.status() {
            (word, Some(message)) if !message.is_empty() => format!("{word}: {message}"),
            (word, _) => word.to_owned(),
        }
    }
}

/// A transcript item, filed under the thread's latest turn. Items without an id of their own are
/// told apart by the line that brought them.
fn item<'l>(id: Option<&str>, kind: ItemKind, time: Option<i64>, fill: impl FnOnce(&mut ItemFact<'l>)) -> Fact<'l> {
    let mut fact = ItemFact {
        id: id.map(|i| Cow::Owned(i.to_owned())),
        turn: Some(TurnRef::Latest),
        kind: Some(kind),
        text_rule: TextRule::Authoritative,
        started_ms: time,
        ..ItemFact::default()
    };
    fill(&mut fact);
    Fact::Item(Box::new(fact))
}
#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(text: &str, origin: &Origin, follow: &mut Follow, check: impl FnOnce(&Lowered<'_>)) {
        let line = parse(text).expect("a rollout line");
        let mut out = Lowered { time: line.time(), raw: text, ..Lowered::default() };
        lower(&line, origin, follow, &mut out);
        check(&out);
    }

    const META: &str = r#"{"timestamp":"2026-11-29T21:20:08.513Z","type":"session_meta","payload":{"id":"c","parent_thread_id":"p","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_nickname":"Kant"}}},"agent_nickname":"Kant"}}"#;
    const COUNT: &str = r#"{"timestamp":"2026-11-29T21:20:09.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"total_tokens":7},"last_token_usage":{"total_tokens":7},"model_context_window":100}}}"#;

    #[test]
    fn session_meta_announces_its_thread_and_owns_the_lines_after_it() {
        let mut follow = Follow::default();
        lowered(META, &Origin::NONE, &mut follow, |l| {
            assert_eq!(l.subject, Subject::Thread("c".into()));
            assert_eq!(l.weight, Weight::Noise);
            let Some(Fact::Thread(t)) = l.facts.iter().next() else { panic!() };
            assert!(matches!(&t.parentage, Parentage::Child { parent, via: Via::ThreadStarted, .. } if parent == "p"));
            assert_eq!(t.nickname.as_ref().map(super::super::Clean::as_str), Some("Kant"));
        });
        lowered(COUNT, &Origin::NONE, &mut follow, |l| {
            assert_eq!(l.subject, Subject::Thread("c".into()), "the thread of the session_meta before it");
            assert!(l.time.is_some());
            assert!(
                matches!(l.facts.iter().next(), Some(Fact::Usage(Usage::Cumulative { context: Some(c), .. })) if c.window == Some(100))
            );
        });
    }

    #[test]
    fn a_spawns_item_completed_names_its_agent_by_the_calls_id_and_a_failed_one_stays_failed() {
        let parent = Origin::new(crate::wire::OriginInfo { thread: Some("p".into()), ..Default::default() });
        let mut follow = Follow::default();
        // As codex 0.171.0 writes it (collab_v1), the spawn's agent under the call's id.
        let v1 = r#"{"timestamp":"2026-11-29T21:20:08.522Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"p","item":{"type":"CollabAgentToolCall","id":"call_spawn_1","tool":"spawn_agent","status":"completed","sender_thread_id":"p","receiver_thread_ids":["c1"]}}}"#;
        lowered(v1, &parent, &mut follow, |l| {
            assert_eq!(l.subject, Subject::Thread("p".into()));
            assert!(matches!(l.facts.iter().next(),
                Some(Fact::Spawn(s)) if s.child == "c1" && s.card.as_deref() == Some("call_spawn_1") && s.via == Via::CollabAgentToolCall));
        });
        // v2 (collab_v2): the activity that started the agent carries the call's id.
        let v2 = r#"{"timestamp":"2026-11-29T21:20:15.777Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"SubAgentActivity","id":"call_spawn_2","kind":"started","agent_thread_id":"c2","agent_path":"/root/part_2"}}}"#;
        lowered(v2, &parent, &mut follow, |l| {
            assert!(matches!(l.facts.iter().next(),
                Some(Fact::Spawn(s)) if s.child == "c2" && s.card.as_deref() == Some("call_spawn_2") && s.via == Via::SubAgentActivity));
        });
        // A spawn over the thread limit: failed, no agent; its output (a message) leaves it failed.
        let failed = r#"{"timestamp":"2026-11-29T21:20:09.000Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CollabAgentToolCall","id":"call_spawn_3","tool":"spawn_agent","status":"failed","receiver_thread_ids":[]}}}"#;
        lowered(failed, &parent, &mut follow, |l| {
            assert!(!l.facts.iter().any(|f| matches!(f, Fact::Spawn(_))));
            assert!(matches!(l.facts.iter().next(),
                Some(Fact::Item(i)) if i.id.as_deref() == Some("call_spawn_3") && i.status == Some(ItemStatus::Failed)));
        });
        let output = r#"{"timestamp":"2026-11-29T21:20:09.001Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_spawn_3","output":"agent thread limit reached"}}"#;
        lowered(output, &parent, &mut follow, |l| {
            assert!(matches!(l.facts.iter().next(), Some(Fact::Item(i)) if i.status == Some(ItemStatus::Failed)));
        });
        // Another call's output is a tool's answer, as before.
        let other = r#"{"timestamp":"2026-11-29T21:20:09.002Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_9","output":"ok"}}"#;
        lowered(other, &parent, &mut follow, |l| {
            assert!(matches!(l.facts.iter().next(), Some(Fact::Item(i)) if i.status == Some(ItemStatus::Completed)));
        });
    }

    #[test]
    fn a_turn_completed_with_an_error_failed() {
        // As codex 0.171.0 writes a child whose requests failed until it gave up.
        let file = Origin::new(crate::wire::OriginInfo { thread: Some("t".into()), ..Default::default() });
        let line = r#"{"timestamp":"2026-12-01T15:53:14.700Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":null,"error":{"message":"We’re currently experiencing high demand","codex_error_info":"internal_server_error"}}}"#;
        lowered(line, &file, &mut Follow::default(), |l| {
            let facts: Vec<_> = l.facts.iter().collect();
            assert!(facts.iter().any(
                |f| matches!(f, Fact::Error(e) if e.message.as_ref().is_some_and(|m| m.as_str().contains("high demand")))
            ));
            assert!(facts.iter().any(|f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Failed))));
        });
        let ok = r#"{"timestamp":"2026-12-01T15:53:14.700Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}}"#;
        lowered(ok, &file, &mut Follow::default(), |l| {
            assert!(
                l.facts.iter().any(|f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Completed)))
            );
            assert!(!l.facts.iter().any(|f| matches!(f, Fact::Error(_))));
        });
    }

    #[test]
    fn a_line_names_no_thread_but_its_file_may() {
        lowered(COUNT, &Origin::NONE, &mut Follow::default(), |l| assert_eq!(l.subject, Subject::Global));
        let file = Origin::new(crate::wire::OriginInfo { thread: Some("t".into()), ..Default::default() });
        lowered(COUNT, &file, &mut Follow::default(), |l| assert_eq!(l.subject, Subject::Thread("t".into())));
    }

    fn call(name: &str, arguments: &str) -> String {
        serde_json::json!({
            "timestamp": "2026-11-29T21:20:09.016Z",
            "type": "response_item",
            "payload": { "type": "function_call", "name": name, "arguments": arguments, "call_id": "c1" }
        })
        .to_string()
    }

    fn receivers_of(text: &str) -> (Vec<String>, Option<String>) {
        let mut out = (Vec::new(), None);
        let file = Origin::new(crate::wire::OriginInfo { thread: Some("t".into()), ..Default::default() });
        lowered(text, &file, &mut Follow::default(), |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!("an item") };
            out = (i.receivers.iter().map(ToString::to_string).collect(), i.title.as_ref().map(ToString::to_string));
        });
        out
    }

    #[test]
    fn collab_calls_name_their_agents_as_receivers_never_in_their_text() {
        let (r, title) = receivers_of(&call("close_agent", r#"{"target":"k1","id":"k1"}"#));
        assert_eq!((r, title.as_deref()), (vec!["k1".to_owned()], Some("")));
        let (r, _) = receivers_of(&call("wait_agent", r#"{"targets":["k1","k2"],"timeout_ms":30000}"#));
        assert_eq!(r, ["k1", "k2"]);
        let (r, title) = receivers_of(&call("send_input", r#"{"target":"k2","message":"one more thing"}"#));
        assert_eq!((r, title.as_deref()), (vec!["k2".to_owned()], Some("one more thing")));
        let (r, _) = receivers_of(&call("wait_agent", r#"{"timeout_ms":10000}"#));
        assert!(r.is_empty(), "v2 waits for any agent");
        for (output, child) in [
            (r#"{\"agent_id\":\"k3\",\"nickname\":\"Kant\"}"#, "k3"),
            (r#"{\"task_name\":\"/root/part_1\"}"#, "/root/part_1"),
        ] {
            let line = format!(
                r#"{{"timestamp":"2026-11-29T21:20:09.016Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"c1","output":"{output}"}}}}"#
            );
            let (r, _) = receivers_of(&line);
            assert_eq!(r, [child], "a spawn's output names its child");
        }
    }

    #[test]
    fn exec_output_is_shown_without_codexs_header_for_the_model() {
        // As 0.171.0 writes it (rollouts/collab_v1, rollouts/interrupt).
        let ok = "Chunk ID: 0c794d\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\nchild-1-working\n";
        let e = ExecOutput::parse(ok).expect("a header");
        assert_eq!((e.exit_code, e.output), (Some(0), "child-1-working\n"));
        let failed = "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nno such file\n";
        assert_eq!(ExecOutput::parse(failed).map(|e| e.exit_code), Some(Some(2)));
        let running =
            "Chunk ID: 2\nWall time: 1.0 seconds\nProcess running with session ID 7\nOriginal token count: 0\nOutput:";
        let e = ExecOutput::parse(running).expect("a header");
        assert_eq!((e.exit_code, e.output), (None, ""));
        // A tool's own text that happens to start so, with lines of its own before `Output:`, stays whole.
        assert!(ExecOutput::parse("Chunk ID: 3\nsomething else\nOutput:\nx").is_none());
        assert!(ExecOutput::parse("plain output").is_none());
    }

    fn user(text: &str) -> String {
        let content = serde_json::json!([{ "type": "input_text", "text": text }]);
        serde_json::json!({
            "timestamp": "2026-11-29T21:20:09.016Z",
            "type": "response_item",
            "payload": { "type": "message", "id": "m", "role": "user", "content": content }
        })
        .to_string()
    }

    #[test]
    fn context_codex_adds_as_user_parts_is_no_prompt() {
        let mut follow = Follow::default();
        lowered(META, &Origin::NONE, &mut follow, |_| {});
        // As 0.171.0 writes a project's AGENTS.md: one message, the instructions and the environment.
        let parts = |texts: &[&str]| {
            let content: Vec<_> =
                texts.iter().map(|t| serde_json::json!({ "type": "input_text", "text": t })).collect();
            serde_json::json!({
                "timestamp": "2026-12-01T20:36:00.000Z",
                "type": "response_item",
                "payload": { "type": "message", "role": "user", "content": content }
            })
            .to_string()
        };
        let agents = "# AGENTS.md instructions for /home/dev/work\n\n<INSTRUCTIONS>\nUse tabs.\n\n</INSTRUCTIONS>";
        let env = "<environment_context>\n  <cwd>/home/dev/work</cwd>\n</environment_context>";
        lowered(&parts(&[agents, env]), &Origin::NONE, &mut follow, |l| {
            assert!(l.facts.iter().next().is_none(), "no transcript item");
            assert_eq!(l.weight, Weight::Noise);
        });
        lowered(&parts(&[agents, "fix the parser"]), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::UserMessage));
            assert_eq!(i.text.as_ref().map(super::super::Clean::as_str), Some("fix the parser"));
        });
        lowered(&parts(&["how do I write # AGENTS.md instructions for a repo?"]), &Origin::NONE, &mut follow, |l| {
            assert!(matches!(l.facts.iter().next(), Some(Fact::Item(i)) if i.kind == Some(ItemKind::UserMessage)));
        });
    }

    #[test]
    fn a_shell_command_the_user_ran_is_a_command_not_a_prompt() {
        let mut follow = Follow::default();
        lowered(META, &Origin::NONE, &mut follow, |_| {});
        // As the 0.171.0 TUI wrote `!echo hello-from-shell` (`rollouts/tui_shell`).
        let ran = "<user_shell_command>\n<command>\necho hello-from-shell\n</command>\n<result>\nExit code: 0\nDuration: 0.0121 seconds\nOutput:\nhello-from-shell\n\n</result>\n</user_shell_command>";
        lowered(&user(ran), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::Command));
            assert_eq!(i.title.as_ref().map(super::super::Clean::as_str), Some("echo hello-from-shell"));
            assert_eq!(i.text.as_ref().map(super::super::Clean::as_str), Some("hello-from-shell"));
            assert_eq!((i.exit_code, i.status), (Some(0), Some(ItemStatus::Completed)));
        });
        let failed = "<user_shell_command>\n<command>\nfalse\n</command>\n<result>\nExit code: 1\nDuration: 0.0010 seconds\nOutput:\n\n</result>\n</user_shell_command>";
        lowered(&user(failed), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!((i.exit_code, i.status), (Some(1), Some(ItemStatus::Failed)));
        });
        lowered(&user("<user_shell_command>what is this?</user_shell_command>"), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::UserMessage), "no command in it: the user's words");
        });
    }

    /// As codex 0.171.0 wrote it when the turn was interrupted (`rollouts/interrupt`, the root).
    const ABORT_NOTE: &str = "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified exec processes may still be running in the background. If any tools/commands were aborted, they may have partially executed.\n</turn_aborted>";

    #[test]
    fn the_turn_aborted_note_ends_the_interrupted_turn_and_is_no_prompt() {
        let mut follow = Follow::default();
        lowered(META, &Origin::NONE, &mut follow, |_| {});
        lowered(&user(ABORT_NOTE), &Origin::NONE, &mut follow, |l| {
            let facts: Vec<_> = l.facts.iter().collect();
            assert!(
                matches!(
                    facts[..],
                    [Fact::TurnEnded(TurnEnded {
                        turn: TurnRef::Latest,
                        outcome: Some(TurnOutcome::Interrupted),
                        error: None
                    })]
                ),
                "{facts:?}"
            );
            assert_eq!(l.weight, Weight::Closing, "it closes the lane's turn as the event does");
        });
        let event = r#"{"timestamp":"2026-12-01T20:20:37.587Z","type":"event_msg","payload":{"type":"turn_aborted","root_turn_id":"t1","turn_id":"t1","reason":"interrupted","started_at":1796156435,"completed_at":1796156437,"duration_ms":2498}}"#;
        lowered(event, &Origin::NONE, &mut follow, |l| {
            assert!(
                l.facts.iter().any(|f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Interrupted)
                && t.turn == TurnRef::IdOrLatest(Some("t1".into()))))
            );
        });
        lowered(&user("what does <turn_aborted> mean?"), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::UserMessage), "a prompt that mentions the tag stays a prompt");
        });
    }

    #[test]
    fn injected_user_messages_are_not_the_users_words() {
        let mut follow = Follow::default();
        lowered(META, &Origin::NONE, &mut follow, |_| {});
        let env = user("<environment_context>\n  <cwd>/home/dev</cwd>\n</environment_context>");
        lowered(&env, &Origin::NONE, &mut follow, |l| {
            assert!(l.facts.iter().next().is_none(), "environment context is no transcript item");
            assert_eq!(l.weight, Weight::Noise);
        });
        let done = user(
            "<subagent_notification>\n{\"agent_path\":\"k\",\"status\":{\"completed\":\"done: 42\"}}\n</subagent_notification>",
        );
        lowered(&done, &Origin::NONE, &mut follow, |l| {
            let facts: Vec<_> = l.facts.iter().collect();
            assert!(matches!(facts[0], Fact::Answered(a) if a.child == "k" && a.status == Status::Idle));
            let Fact::Item(i) = facts[1] else { panic!("{facts:?}") };
            assert_ne!(i.kind, Some(ItemKind::UserMessage));
            assert_eq!(i.text.as_ref().map(super::super::Clean::as_str), Some("completed: done: 42"));
            assert_eq!(i.receivers, ["k"], "the child is a receiver, resolved to its name on screen");
        });
        let failed = user(
            "<subagent_notification>{\"agent_path\":\"k\",\"status\":{\"errored\":\"boom\"}}</subagent_notification>",
        );
        lowered(&failed, &Origin::NONE, &mut follow, |l| {
            assert!(matches!(l.facts.iter().next(), Some(Fact::Answered(a)) if a.status == Status::Failed));
        });
        let closed =
            user("<subagent_notification>{\"agent_path\":\"k\",\"status\":\"shutdown\"}</subagent_notification>");
        lowered(&closed, &Origin::NONE, &mut follow, |l| {
            assert!(matches!(
                l.facts.iter().next(),
                Some(Fact::Status(StatusFact { target: Target::Thread(k), change: StatusChange::Set(Status::Closed) })) if k == "k"
            ));
        });
        lowered(&user("<subagent_notification> not json"), &Origin::NONE, &mut follow, |l| {
            let Some(Fact::Item(i)) = l.facts.iter().next() else { panic!() };
            assert_eq!(i.kind, Some(ItemKind::UserMessage), "what is not a notification stays the user's");
        });
    }
}
