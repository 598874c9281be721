//! The model as OpenTelemetry spans, per the GenAI semantic conventions: one `invoke_agent {name}`
//! span per thread, a child of the spawn tool call that announced it, and one `execute_tool {tool}`
//! span per tool call, so the trace *is* the spawn tree at any depth. Pure: spans are built from
//! the model as it stands, and [`Tracker`] remembers what was already handed out.

use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::trace::v1::{Span, Status as SpanStatus, span::SpanKind, status::StatusCode};
use rustc_hash::FxHashSet;

use super::ids::{SpanId, agent_span_id, item_span_id, trace_id};
use crate::model::prices::Pico;
use crate::model::{AgentOp, Item, ItemKind, ItemStatus, Model, Response, Status, Thread, Tokens};
use crate::router::{Role, ThreadIdx};
use crate::source::agents::{self, Tools};

/// Longest text put in one attribute (titles are one line; commands can be long).
pub const MAX_ATTRIBUTE_CHARS: usize = 1024;

/// Who made the model calls (a provider of the agent registry), when a thread's own model name
/// does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider(&'static agents::Provider);

impl Provider {
    fn as_str(self) -> &'static str {
        self.0.name
    }

    /// The provider of the agent whose lowering writes a format (`input.format`).
    pub fn of_format(format: &str) -> Option<Self> {
        agents::of_format(format)?.spend.provider.map(Self)
    }

    fn of_thread(t: &Thread, fallback: Option<Self>) -> Option<Self> {
        if let Some(agent) = t.via.and_then(agents::of_via) {
            return agent.spend.provider.map(Self).or(fallback);
        }
        match t.model.as_ref().and_then(|m| agents::provider_of_model(m.as_str())) {
            Some(p) => Some(Self(p)),
            None => fallback,
        }
    }

    /// The names the agent that calls this provider gives its tools.
    fn tools(provider: Option<Self>) -> Tools {
        provider.and_then(|p| agents::of_provider(p.0)).map_or(Tools::DEFAULT, |a| a.spend.tools)
    }
}

/// Hands out each span once: finished spans as they finish, the rest (marked unfinished) at the end.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Span ids handed out, across model resets (a live source's history rebuilds the model).
    sent: Sent,
    marks: Vec<Mark>,
    /// The provider of threads whose model does not say.
    pub fallback: Option<Provider>,
}

/// Span ids handed out per generation of [`Sent`]: about 20 MiB at most for both, whatever the
/// hours of a `serve --otlp`.
pub const SENT_GENERATION: usize = 1 << 19;

/// Span ids handed out, in two generations. A reset rebuilds a model that holds only what its own
/// bounds keep, the newest items and responses, handed out lately; so an id older than both
/// generations is not asked for again in practice, and forgetting it keeps memory flat. If one
/// is, its span goes again (a collector keys spans by id); how many were forgotten is counted.
#[derive(Debug)]
struct Sent {
    current: FxHashSet<SpanId>,
    previous: FxHashSet<SpanId>,
    generation: usize,
    forgotten: u64,
}

impl Default for Sent {
    fn default() -> Self {
        Self::with_generation(SENT_GENERATION)
    }
}

impl Sent {
    fn with_generation(generation: usize) -> Self {
        Self { current: FxHashSet::default(), previous: FxHashSet::default(), generation, forgotten: 0 }
    }

    /// True the first time `id` is handed out (within two generations).
    fn first_time(&mut self, id: SpanId) -> bool {
        if self.previous.contains(&id) || !self.current.insert(id) {
            return false;
        }
        if self.current.len() >= self.generation {
            self.forgotten = self.forgotten.saturating_add(self.previous.len() as u64);
            self.previous = std::mem::take(&mut self.current);
        }
        true
    }
}

/// What a thread looked like at the last scan, so unchanged threads are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Mark {
    /// The thread the mark is of: a model rebuilt from scratch may put another thread at an index.
    id: std::sync::Arc<str>,
    lines: u64,
    items: usize,
    status: Option<Status>,
    /// Items before this index are all handed out or are no tool call.
    open_from: usize,
    /// Responses handed out as `chat` spans.
    chats: usize,
}

impl Tracker {
    pub fn new(fallback: Option<Provider>) -> Self {
        Self { fallback, ..Self::default() }
    }

    /// Span ids forgotten by the bound on what is remembered ([`SENT_GENERATION`]).
    pub fn forgotten(&self) -> u64 {
        self.sent.forgotten
    }

    /// The model was rebuilt from scratch: thread handles may name other threads now.
    pub fn reset(&mut self) {
        self.marks.clear();
    }

    /// Spans that ended since the last call: tool calls that completed, agents that closed,
    /// failed or were interrupted. Work is proportional to the threads that changed.
    pub fn ended(&mut self, model: &Model, out: &mut Vec<Span>) {
        self.marks.resize(model.threads.len(), Mark::default());
        for (i, t) in model.threads.iter().enumerate() {
            let idx = ThreadIdx(i as u32);
            if *self.marks[i].id != *t.id {
                self.marks[i] = Mark { id: t.id.clone(), ..Mark::default() };
            }
            let mark = &self.marks[i];
            let now = Mark {
                id: mark.id.clone(),
                lines: t.lines,
                items: t.items.len(),
                status: Some(t.status),
                open_from: mark.open_from,
                chats: mark.chats,
            };
            if now == *mark {
                continue;
            }
            let mut open_from = mark.open_from;
            let mut still_open = false;
            for (slot, item) in t.items.entries_from(mark.open_from) {
                if item.status == ItemStatus::InProgress && tool_name(t, item, self.fallback).is_some() {
                    still_open = true;
                } else if let Some(span) = self.take_tool(model, idx, slot, false) {
                    out.push(span);
                }
                if !still_open {
                    open_from = slot + 1;
                }
            }
            // A response is complete once the next one began (a thread makes one call at a time).
            // Ordinals: responses that settled before they were handed out send none.
            let complete = t.responses_stated().saturating_sub(1);
            for r in now.chats..complete {
                if let Some(span) = self.take_chat(model, idx, r) {
                    out.push(span);
                }
            }
            let ended = matches!(t.status, Status::Closed | Status::Failed | Status::Interrupted);
            if ended {
                for r in complete..t.responses_stated() {
                    if let Some(span) = self.take_chat(model, idx, r) {
                        out.push(span);
                    }
                }
                if let Some(span) = self.take_agent(model, idx, false) {
                    out.push(span);
                }
            }
            let chats = if ended { t.responses_stated() } else { complete.max(now.chats) };
            self.marks[i] = Mark { open_from, chats, ..now };
        }
    }

    /// Everything not handed out yet; what is still running is marked unfinished.
    pub fn remaining(&mut self, model: &Model, out: &mut Vec<Span>) {
        for (i, t) in model.threads.iter().enumerate() {
            let idx = ThreadIdx(i as u32);
            for (slot, item) in t.items.entries() {
                let open = item.status == ItemStatus::InProgress;
                if let Some(span) = self.take_tool(model, idx, slot, open) {
                    out.push(span);
                }
            }
            for r in 0..t.responses_stated() {
                if let Some(span) = self.take_chat(model, idx, r) {
                    out.push(span);
                }
            }
            let open = t.status.is_active() || t.status == Status::Pending;
            if let Some(span) = self.take_agent(model, idx, open) {
                out.push(span);
            }
        }
    }

    fn take_tool(&mut self, model: &Model, idx: ThreadIdx, slot: usize, unfinished: bool) -> Option<Span> {
        let t = model.thread(idx);
        let item = t.items.get(slot)?;
        tool_name(t, item, self.fallback)?;
        if !self.sent.first_time(item_span_id(&t.id, &item.id)) {
            return None;
        }
        Some(tool_span(model, idx, item, unfinished, self.fallback))
    }

    fn take_chat(&mut self, model: &Model, idx: ThreadIdx, r: usize) -> Option<Span> {
        let t = model.thread(idx);
        let response = t.response(r)?;
        if !self.sent.first_time(chat_span_id(&t.id, &response.key)) {
            return None;
        }
        Some(chat_span(model, idx, response, self.fallback))
    }

    fn take_agent(&mut self, model: &Model, idx: ThreadIdx, unfinished: bool) -> Option<Span> {
        let t = model.thread(idx);
        if !self.sent.first_time(agent_span_id(&t.id)) {
            return None;
        }
        Some(agent_span(model, idx, unfinished, self.fallback))
    }
}

/// Every span of the model at once (the `export` command): nothing is handed out yet.
pub fn all_spans(model: &Model, fallback: Option<Provider>) -> Vec<Span> {
    let mut out = Vec::new();
    Tracker::new(fallback).remaining(model, &mut out);
    out
}

/// The tool a tool-call item calls, as the agent named it; `None` for items that call no tool
/// (messages, reasoning, plans, and sub-agent notifications other than the spawn).
fn tool_name(t: &Thread, item: &Item, fallback: Option<Provider>) -> Option<String> {
    let tools = Provider::tools(Provider::of_thread(t, fallback));
    let name = match &item.kind {
        // An agent's own name for it (Claude Code's `Agent`, `Task` before 2.1.63), as its own OTLP
        // names it; else in snake case, as OTLP names tools.
        ItemKind::Collab if tools.calls_as_written => item.tool.as_deref().unwrap_or("tool").to_owned(),
        ItemKind::Collab => snake_case(item.tool.as_deref().unwrap_or("collab_agent")),
        // A multi-agent v2 spawn is announced as an activity `started` carrying the spawn's call id.
        ItemKind::SubAgentActivity if item.op == Some(AgentOp::Spawn) => tools.spawn.to_owned(),
        ItemKind::Command => tools.shell.to_owned(),
        ItemKind::FileChange => "apply_patch".to_owned(),
        ItemKind::WebSearch => "web_search".to_owned(),
        ItemKind::ImageView => "view_image".to_owned(),
        ItemKind::McpTool => non_empty(item.title.as_str()).unwrap_or("mcp").to_owned(),
        // An agent that names its other tools in their title's first word (`Read src/x.rs`).
        ItemKind::DynamicTool if tools.named_by_title => {
            item.title.as_str().split(' ').next().unwrap_or("tool").to_owned()
        }
        ItemKind::DynamicTool => non_empty(item.title.as_str()).unwrap_or("tool").to_owned(),
        _ if !item.lanes.is_empty() => tools.spawn.to_owned(),
        _ => return None,
    };
    Some(if name.is_empty() { "tool".to_owned() } else { name })
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// `spawnAgent` → `spawn_agent`: Codex's collab items name in camelCase the tools its model calls
/// in snake_case.
fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn nanos(ms: Option<i64>) -> u64 {
    ms.and_then(|m| u64::try_from(m).ok()).unwrap_or(0).saturating_mul(1_000_000)
}

/// The thread at the top of a thread's chain: its root, or the orphan it hangs from.
fn top_of(model: &Model, idx: ThreadIdx) -> ThreadIdx {
    model.ancestors(idx).last().unwrap_or(idx)
}

/// The span a thread's `invoke_agent` hangs from: the parent's spawn call, else the parent agent.
fn parent_span(model: &Model, t: &Thread, fallback: Option<Provider>) -> Option<SpanId> {
    if t.role != Role::Child {
        return None;
    }
    let parent = model.thread(t.parent?);
    let card = t.card.as_deref().and_then(|c| parent.item(c)).filter(|i| tool_name(parent, i, fallback).is_some());
    Some(card.map_or_else(|| agent_span_id(&parent.id), |c| item_span_id(&parent.id, &c.id)))
}

fn agent_span(model: &Model, idx: ThreadIdx, unfinished: bool, fallback: Option<Provider>) -> Span {
    let t = model.thread(idx);
    let name = t.name();
    let provider = Provider::of_thread(t, fallback);
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "invoke_agent");
    if let Some(p) = provider {
        a.str("gen_ai.provider.name", p.as_str());
    }
    a.str("gen_ai.agent.id", &t.id);
    a.str("gen_ai.agent.name", &name);
    a.str("gen_ai.conversation.id", &t.id);
    if let Some(m) = &t.model {
        a.str("gen_ai.request.model", m.as_str());
        a.str("gen_ai.response.model", m.as_str());
    }
    a.usage("gen_ai.usage", &t.tokens);
    a.int("swarmtop.usage.total_tokens", t.tokens.total);
    // The usage is also in the agent's `chat` spans: a receiver must not count it twice.
    if t.responses_stated() > 0 {
        a.bool("swarmtop.usage.per_response", true);
    }
    a.cost("swarmtop.cost_usd", t.cost);
    a.bool("swarmtop.unpriced", t.cost.is_none());
    a.str("swarmtop.cost_source", t.cost_source.as_str());
    // A session's subtree is what it spent: its unattributed part included.
    let spent = model.spent(idx);
    a.int("swarmtop.subtree.threads", u64::from(spent.threads));
    a.usage("swarmtop.subtree.usage", &spent.tokens);
    a.int("swarmtop.subtree.usage.total_tokens", spent.tokens.total);
    a.cost("swarmtop.subtree.cost_usd", spent.cost_usd());
    a.int("swarmtop.subtree.unpriced_threads", u64::from(spent.threads.saturating_sub(spent.priced)));
    a.str("swarmtop.status", t.status.as_str());
    a.str(
        "swarmtop.role",
        match t.role {
            Role::Root => "root",
            Role::Child => "child",
            Role::Orphan => "orphan",
            Role::Pending => "pending",
        },
    );
    a.int("swarmtop.depth", u64::from(t.depth));
    if let Some(p) = t.parent {
        a.str("swarmtop.parent.id", &model.thread(p).id);
    }
    if let Some(via) = t.via {
        a.str("swarmtop.via", via.as_str());
    }
    if let Some(role) = &t.agent_role {
        a.str("swarmtop.agent.role", role.as_str());
    }
    if let Some(path) = &t.agent_path {
        a.str("swarmtop.agent.path", path.as_str());
    }
    a.int("swarmtop.turns", t.turns.len() as u64);
    if unfinished {
        a.bool("swarmtop.unfinished", true);
    }
    let status = match t.status {
        Status::Failed => {
            a.str("error.type", "agent_failed");
            Some(error(t.last_error.as_ref().map_or("", |e| e.as_str())))
        }
        _ => None,
    };
    let start = t.first_ms.or_else(|| t.items.iter().find_map(|i| i.started_ms));
    let end = t.last_ms.or(start);
    Span {
        trace_id: trace_id(&model.thread(top_of(model, idx)).id).to_vec(),
        span_id: agent_span_id(&t.id).to_vec(),
        parent_span_id: parent_span(model, t, fallback).map(|p| p.to_vec()).unwrap_or_default(),
        name: format!("invoke_agent {name}"),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(start),
        end_time_unix_nano: nanos(end).max(nanos(start)),
        attributes: a.0,
        status,
        ..Span::default()
    }
}

fn tool_span(model: &Model, idx: ThreadIdx, item: &Item, unfinished: bool, fallback: Option<Provider>) -> Span {
    let t = model.thread(idx);
    let tool = tool_name(t, item, fallback).unwrap_or_else(|| "tool".to_owned());
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "execute_tool");
    if let Some(p) = Provider::of_thread(t, fallback) {
        a.str("gen_ai.provider.name", p.as_str());
    }
    a.str("gen_ai.tool.name", &tool);
    a.str("gen_ai.tool.call.id", &item.id);
    a.str("gen_ai.tool.type", if item.kind == ItemKind::McpTool { "extension" } else { "function" });
    a.str("gen_ai.agent.id", &t.id);
    a.str("gen_ai.agent.name", &t.name());
    a.str("gen_ai.conversation.id", &t.id);
    if !item.title.is_empty() {
        a.str("swarmtop.tool.title", item.title.as_str());
    }
    if let Some(code) = item.exit_code {
        a.signed("process.exit.code", code);
    }
    if !item.lanes.is_empty() {
        let ids: Vec<&str> = item.lanes.iter().map(|&c| &*model.thread(c).id).collect();
        a.strs("swarmtop.spawned.agent_ids", &ids);
    }
    let state = match item.status {
        ItemStatus::InProgress => "inProgress",
        ItemStatus::Completed => "completed",
        ItemStatus::Failed => "failed",
        ItemStatus::Interrupted => "interrupted",
        ItemStatus::Declined => "declined",
    };
    a.str("swarmtop.status", state);
    if let Some(turn) = item.turn.and_then(|i| t.turns.get(i)) {
        a.str("swarmtop.turn.id", &turn.id);
    }
    if unfinished {
        a.bool("swarmtop.unfinished", true);
    }
    let failed_exit = item.exit_code.is_some_and(|c| c != 0);
    let status = match item.status {
        ItemStatus::Failed | ItemStatus::Declined => {
            a.str("error.type", if item.status == ItemStatus::Declined { "declined" } else { "tool_failed" });
            Some(error(if item.kind == ItemKind::Command { "" } else { item.text.as_str() }))
        }
        _ if failed_exit => {
            a.str("error.type", "exit_code");
            Some(error(&format!("exit code {}", item.exit_code.unwrap_or_default())))
        }
        _ => None,
    };
    let turn_start = item.turn.and_then(|i| t.turns.get(i)).and_then(|turn| turn.started_ms);
    let start = item.started_ms.or(item.completed_ms).or(turn_start).or(t.first_ms);
    let end = item.completed_ms.or(if unfinished { t.last_ms } else { start });
    Span {
        trace_id: trace_id(&model.thread(top_of(model, idx)).id).to_vec(),
        span_id: item_span_id(&t.id, &item.id).to_vec(),
        parent_span_id: agent_span_id(&t.id).to_vec(),
        name: format!("execute_tool {tool}"),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: nanos(start),
        end_time_unix_nano: nanos(end).max(nanos(start)),
        attributes: a.0,
        status,
        ..Span::default()
    }
}

/// A response's span id: its key, apart from item ids by a prefix no item id has.
fn chat_span_id(thread: &str, key: &str) -> SpanId {
    item_span_id(thread, &format!("\u{1f}response\u{1f}{key}"))
}

/// One model response whose usage the agent stated by itself (Claude Code): `chat {model}`.
fn chat_span(model: &Model, idx: ThreadIdx, response: &Response, fallback: Option<Provider>) -> Span {
    let t = model.thread(idx);
    let model_name = response.model().or(t.model.as_ref()).map_or("", |m| m.as_str());
    let mut a = Attrs::default();
    a.str("gen_ai.operation.name", "chat");
    if let Some(p) = Provider::of_thread(t, fallback) {
        a.str("gen_ai.provider.name", p.as_str());
    }
    if !model_name.is_empty() {
        a.str("gen_ai.request.model", model_name);
        a.str("gen_ai.response.model", model_name);
    }
    // The key is `message id \x1f request id` (Claude Code).
    let mut parts = response.key.split('\u{1f}');
    if let Some(id) = parts.next().filter(|p| !p.is_empty()) {
        a.str("gen_ai.response.id", id);
    }
    if let Some(request) = parts.next().filter(|p| !p.is_empty()) {
        a.str("swarmtop.request.id", request);
    }
    a.str("gen_ai.agent.id", &t.id);
    a.str("gen_ai.conversation.id", &t.id);
    a.usage("gen_ai.usage", &response.tokens);
    Span {
        trace_id: trace_id(&model.thread(top_of(model, idx)).id).to_vec(),
        span_id: chat_span_id(&t.id, &response.key).to_vec(),
        parent_span_id: agent_span_id(&t.id).to_vec(),
        name: if model_name.is_empty() { "chat".to_owned() } else { format!("chat {model_name}") },
        kind: SpanKind::Client as i32,
        start_time_unix_nano: nanos(response.first_ms),
        end_time_unix_nano: nanos(response.last_ms).max(nanos(response.first_ms)),
        attributes: a.0,
        ..Span::default()
    }
}

fn error(message: &str) -> SpanStatus {
    SpanStatus { message: clip(message).to_owned(), code: StatusCode::Error as i32 }
}

fn clip(s: &str) -> &str {
    s.char_indices().nth(MAX_ATTRIBUTE_CHARS).map_or(s, |(i, _)| &s[..i])
}

/// Attributes in the order they are added.
#[derive(Default)]
struct Attrs(Vec<KeyValue>);

impl Attrs {
    fn put(&mut self, key: &str, value: Value) {
        self.0.push(KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..KeyValue::default()
        });
    }

    fn str(&mut self, key: &str, v: &str) {
        self.put(key, Value::StringValue(clip(v).to_owned()));
    }

    fn strs(&mut self, key: &str, vs: &[&str]) {
        let values = vs.iter().map(|v| AnyValue { value: Some(Value::StringValue(clip(v).to_owned())) }).collect();
        self.put(key, Value::ArrayValue(ArrayValue { values }));
    }

    fn int(&mut self, key: &str, v: u64) {
        self.put(key, Value::IntValue(i64::try_from(v).unwrap_or(i64::MAX)));
    }

    fn signed(&mut self, key: &str, v: i64) {
        self.put(key, Value::IntValue(v));
    }

    fn bool(&mut self, key: &str, v: bool) {
        self.put(key, Value::BoolValue(v));
    }

    /// Cost as a double (what trace UIs sum and chart); absent when unpriced, never $0.
    fn cost(&mut self, key: &str, cost: Option<Pico>) {
        if let Some(c) = cost {
            self.put(key, Value::DoubleValue(c.usd()));
        }
    }

    /// The GenAI usage attributes: input counts cached and cache-written input, output counts
    /// reasoning (the conventions' and the model's shared semantics).
    fn usage(&mut self, prefix: &str, t: &Tokens) {
        self.int(&format!("{prefix}.input_tokens"), t.input);
        self.int(&format!("{prefix}.output_tokens"), t.output);
        self.int(&format!("{prefix}.cache_read.input_tokens"), t.cached_input);
        self.int(&format!("{prefix}.cache_creation.input_tokens"), t.cache_write);
        self.int(&format!("{prefix}.reasoning.output_tokens"), t.reasoning_output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collab_tools_are_named_as_the_model_calls_them() {
        assert_eq!(snake_case("spawnAgent"), "spawn_agent");
        assert_eq!(snake_case("wait"), "wait");
        assert_eq!(snake_case("closeAgent"), "close_agent");
    }

    #[test]
    fn sent_ids_are_remembered_for_two_generations_and_then_forgotten_and_counted() {
        let id = |n: u8| [n; 8];
        let mut sent = Sent::with_generation(4);
        assert!((1..=4).all(|n| sent.first_time(id(n))), "each the first time");
        assert!(!sent.first_time(id(1)), "the last generation's ids are remembered");
        assert!((5..=8).all(|n| sent.first_time(id(n))));
        assert!(!sent.first_time(id(8)) && !sent.first_time(id(5)));
        assert_eq!(sent.forgotten, 4, "ids 1 to 4 went with the older generation");
        assert!(sent.first_time(id(1)), "a forgotten id is handed out again");
        assert!(sent.current.len() + sent.previous.len() <= 2 * 4, "memory stays within two generations");
    }

    #[test]
    fn attributes_are_clipped() {
        let long = "é".repeat(MAX_ATTRIBUTE_CHARS + 10);
        assert_eq!(clip(&long).chars().count(), MAX_ATTRIBUTE_CHARS);
    }
}
