//! OpenTelemetry records (what `listen --otlp` receives, one span or log record per line, see
//! `source::otlp`) lowered into the facts every format shares. Three senders matter, and one reading
//! serves them all because they share the GenAI conventions:
//!
//! - swarmtop's own exports: `invoke_agent` spans per agent (with `swarmtop.*` figures and the
//!   parent's id), `execute_tool` spans per tool call;
//! - Claude Code's telemetry (2.1.332, `CLAUDE_CODE_ENABLE_TELEMETRY=1`): spans `claude_code.interaction`
//!   (`invoke_agent`, the session's turn), `claude_code.llm_request` (`chat`, one API response with its
//!   usage), `claude_code.tool` (`execute_tool`), each naming its agent in `gen_ai.conversation.id`
//!   (the session id, or a sub-agent's `agent_id`); logs `user_prompt`, `api_request`, `tool_decision`,
//!   `tool_result`, `subagent_completed` carrying `session.id` and, in a sub-agent, `agent_id`;
//! - any `gen_ai.*` instrumentation.
//!
//! A child's place comes from `link` records: the receiver's join of a span to the spawn call of
//! its parent agent (spans name their parent only by span id).

use std::borrow::Cow;

use serde::Deserialize;

use super::fact::{
    AgentOp, Breakdown, CostReported, ErrorFact, Fact, Format, ItemFact, ItemKind, ItemStatus, Lowered, ModelChange,
    Notice, Parentage, ResponseUsage, Spawn, Status, StatusChange, StatusFact, Subject, Target, ThreadFact, TurnEnded,
    TurnOutcome, TurnRef, TurnStarted, Usage, Via, Weight,
};
use super::{CleanStr, sanitize};

/// One received record.
#[derive(Debug, Deserialize)]
pub struct OtlpLine {
    otlp: String,
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(default)]
    span: Option<SpanJson>,
    #[serde(default)]
    log: Option<LogJson>,
    #[serde(default)]
    child: Option<String>,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    card: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Resource {
    #[serde(default)]
    attributes: Vec<Attr>,
}

#[derive(Debug, Deserialize)]
struct Attr {
    key: String,
    #[serde(default)]
    value: Option<AnyVal>,
}

// The field names are OTLP/JSON's.
#[allow(clippy::struct_field_names)]
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyVal {
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    int_value: Option<Number>,
    #[serde(default)]
    double_value: Option<f64>,
    #[serde(default)]
    bool_value: Option<bool>,
}

/// OTLP/JSON writes 64-bit integers as strings; some senders write numbers.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Number {
    fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Float(f) => Some(*f as i64),
            Self::Text(s) => s.trim().parse().ok(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpanJson {
    #[serde(default)]
    span_id: String,
    #[serde(default)]
    parent_span_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    start_time_unix_nano: Option<Number>,
    #[serde(default)]
    end_time_unix_nano: Option<Number>,
    #[serde(default)]
    attributes: Vec<Attr>,
    #[serde(default)]
    status: Option<SpanStatus>,
}

#[derive(Debug, Default, Deserialize)]
struct SpanStatus {
    #[serde(default)]
    code: Option<Number>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogJson {
    #[serde(default)]
    time_unix_nano: Option<Number>,
    #[serde(default)]
    observed_time_unix_nano: Option<Number>,
    #[serde(default)]
    attributes: Vec<Attr>,
    #[serde(default)]
    event_name: Option<String>,
    #[serde(default)]
    body: Option<AnyVal>,
}

/// A record with an `otlp` member is one of ours; anything unreadable is malformed.
pub fn parse(text: &str) -> Option<OtlpLine> {
    serde_json::from_str(text).ok()
}

fn ms(nanos: Option<&Number>) -> Option<i64> {
    nanos.and_then(Number::as_i64).filter(|&n| n > 0).map(|n| n / 1_000_000)
}

impl OtlpLine {
    /// The record's time: a span's end (when it was exported), a log record's time.
    pub fn time(&self) -> Option<i64> {
        if let Some(s) = &self.span {
            return ms(s.end_time_unix_nano.as_ref()).or_else(|| ms(s.start_time_unix_nano.as_ref()));
        }
        let l = self.log.as_ref()?;
        ms(l.time_unix_nano.as_ref()).or_else(|| ms(l.observed_time_unix_nano.as_ref()))
    }
}

/// Attributes of a record, its own first, then its resource's.
struct Attrs<'a> {
    own: &'a [Attr],
    resource: &'a [Attr],
}

impl<'a> Attrs<'a> {
    fn get(&self, key: &str) -> Option<&'a AnyVal> {
        self.own.iter().chain(self.resource).find(|a| a.key == key).and_then(|a| a.value.as_ref())
    }

    fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key)?.string_value.as_deref().filter(|s| !s.is_empty())
    }

    fn int(&self, key: &str) -> Option<u64> {
        let v = self.get(key)?;
        let n = v
            .int_value
            .as_ref()
            .and_then(Number::as_i64)
            .or(v.double_value.map(|d| d as i64))
            .or_else(|| v.string_value.as_deref().and_then(|s| s.trim().parse().ok()))?;
        u64::try_from(n).ok()
    }

    fn float(&self, key: &str) -> Option<f64> {
        let v = self.get(key)?;
        v.double_value
            .or_else(|| v.int_value.as_ref().and_then(Number::as_i64).map(|i| i as f64))
            .or_else(|| v.string_value.as_deref().and_then(|s| s.trim().parse().ok()))
    }

    fn bool(&self, key: &str) -> Option<bool> {
        let v = self.get(key)?;
        v.bool_value.or_else(|| v.string_value.as_deref().and_then(|s| s.parse().ok()))
    }

    /// The agent a record is about: the GenAI conversation (Claude Code: the session, or the
    /// sub-agent's id), else the agent id, else the session.
    fn conversation(&self) -> Option<&'a str> {
        self.str("gen_ai.conversation.id")
            .or_else(|| self.str("gen_ai.agent.id"))
            .or_else(|| self.str("agent_id"))
            .or_else(|| self.str("session.id"))
    }
}

pub fn lower<'l>(line: &'l OtlpLine, out: &mut Lowered<'l>) {
    out.format = Format::Otlp;
    let resource = line.resource.as_ref().map(|r| r.attributes.as_slice()).unwrap_or_default();
    match line.otlp.as_str() {
        "link" => link(line, out),
        "span" => {
            if let Some(span) = &line.span {
                lower_span(span, &Attrs { own: &span.attributes, resource }, out);
            }
        }
        "log" => {
            if let Some(log) = &line.log {
                lower_log(log, &Attrs { own: &log.attributes, resource }, out);
            }
        }
        other => notice(out, &format!("otlp/{other}"), None),
    }
}

fn notice(out: &mut Lowered<'_>, method: &str, message: Option<&str>) {
    out.subject = Subject::Global;
    out.facts.push(Fact::Notice(Notice { method: sanitize(method).into(), message: message.map(sanitize) }));
}

fn owned(s: &str) -> Cow<'static, str> {
    Cow::Owned(s.to_owned())
}

/// A span joined to the spawn call of another agent: that agent's child.
fn link<'l>(line: &'l OtlpLine, out: &mut Lowered<'l>) {
    let (Some(child), Some(parent)) = (line.child.as_deref(), line.parent.as_deref()) else {
        return notice(out, "otlp/link", Some("a link without child or parent"));
    };
    out.subject = Subject::Thread(Cow::Borrowed(parent));
    out.weight = Weight::Noise;
    out.facts.push(Fact::Spawn(Spawn {
        child: Cow::Borrowed(child),
        card: line.card.as_deref().map(Cow::Borrowed),
        via: Via::OtlpTrace,
    }));
}

fn status(change: StatusChange) -> Fact<'static> {
    Fact::Status(StatusFact { target: Target::Subject, change })
}

fn failed(span: &SpanJson) -> Option<String> {
    let s = span.status.as_ref()?;
    (s.code.as_ref().and_then(Number::as_i64) == Some(2)).then(|| s.message.clone().unwrap_or_default())
}

/// Claude Code names a sub-agent's place on each of its records: `agent_id`, and `parent_agent_id`
/// when its parent is another sub-agent (else the session, `session.id`, is). Not the call that
/// spawned it: every record of a sub-agent hangs under the call's `claude_code.tool.execution`
/// span, the one record that names the call (`tool_use_id`), and it is exported only when the
/// call is answered (`source::otlp::index` then links the two). Until then the agents of one
/// parent and its calls are paired in order, the agents by when they `began` (a span's start;
/// spans arrive in the order they ended).
fn sub_agent<'l>(thread: &'l str, a: &Attrs<'l>, began: Option<i64>, out: &mut Lowered<'l>) {
    if a.str("agent_id") != Some(thread) {
        return;
    }
    let Some(parent) = a.str("parent_agent_id").or_else(|| a.str("session.id")).filter(|p| *p != thread) else {
        return;
    };
    let mut fact = ThreadFact::new(
        Cow::Borrowed(thread),
        Parentage::Child { parent: Cow::Borrowed(parent), via: Via::OtlpTrace, card: None },
    );
    // Its kind of agent: the logs' `agent.name`; a response span says it first, in its query
    // source (`agent.builtin.general-purpose`): named so from its first record, not by its id
    // until a log came.
    let from_source = || {
        let source = a.str("query_source_safe").or_else(|| a.str("query_source"))?;
        let mut parts = source.splitn(3, ['.', ':']);
        (parts.next() == Some("agent")).then_some(())?;
        parts.nth(1).filter(|name| !name.is_empty())
    };
    fact.role = a.str("agent.name").or_else(|| a.str("agent_type")).or_else(from_source).map(sanitize);
    fact.began_ms = began;
    out.facts.push(Fact::Thread(Box::new(fact)));
    // Each record naming it is of its work (a response, a tool call, their logs): its prompt
    // is never exported, so the first such record is the first sign it started. Its tool logs
    // come in the next log batch, after its spans (`claude-2.1.332-otlp/parallel.ndjson`: the
    // grandchild was `○ pending` for all of its life but its last 0.5 s).
    out.facts.push(status(StatusChange::Began));
}

fn lower_span<'l>(span: &'l SpanJson, a: &Attrs<'l>, out: &mut Lowered<'l>) {
    let Some(thread) = a.conversation() else {
        return notice(out, "otlp/span", Some(&span.name));
    };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    let start = ms(span.start_time_unix_nano.as_ref());
    sub_agent(thread, a, start, out);
    let end = ms(span.end_time_unix_nano.as_ref());
    match a.str("gen_ai.operation.name") {
        Some("invoke_agent") => agent(span, a, thread, start, end, out),
        Some("execute_tool") => tool(span, a, start, end, out),
        Some("chat" | "text_completion" | "generate_content") => chat(span, a, out),
        // Claude Code's `tool.execution` and `tool.blocked_on_user` spans repeat their tool span.
        _ => out.weight = Weight::Noise,
    }
}

fn agent<'l>(
    span: &'l SpanJson,
    a: &Attrs<'l>,
    thread: &'l str,
    start: Option<i64>,
    end: Option<i64>,
    out: &mut Lowered<'l>,
) {
    let parentage = if span.parent_span_id.is_empty() {
        Parentage::Root
    } else if let Some(parent) = a.str("swarmtop.parent.id") {
        Parentage::Child {
            parent: Cow::Borrowed(parent),
            via: Via::OtlpTrace,
            card: a.str("swarmtop.card").map(Cow::Borrowed),
        }
    } else {
        Parentage::Unknown
    };
    let mut fact = ThreadFact::new(Cow::Borrowed(thread), parentage);
    fact.nickname = a.str("gen_ai.agent.name").map(sanitize);
    fact.role = a.str("swarmtop.agent.role").map(sanitize);
    fact.path = a.str("swarmtop.agent.path").map(sanitize);
    fact.model = a.str("gen_ai.response.model").or_else(|| a.str("gen_ai.request.model")).map(sanitize);
    out.facts.push(Fact::Thread(Box::new(fact)));
    // An agent span is one invocation (Claude Code: one prompt's turn; swarmtop: the whole agent).
    let turn = Cow::Borrowed(span.span_id.as_str());
    let unfinished = a.bool("swarmtop.unfinished") == Some(true);
    out.facts.push(Fact::TurnStarted(TurnStarted {
        turn: Some(turn.clone()),
        own_root_turn: false,
        // Exported when it ended, it is the turn a `user_prompt` log opened under the prompt's
        // id (Claude Code's `interaction` span names no prompt): that one is over too
        // (`claude-2.1.332-otlp/parallel.ndjson`: the session's prompt turn stayed open).
        ends_previous: !unfinished,
    }));
    let _ = start;
    // An agent whose `chat` spans carry its usage response by response says so: those count.
    let per_response = a.bool("swarmtop.usage.per_response") == Some(true);
    if !per_response && (a.int("gen_ai.usage.input_tokens").is_some() || a.int("gen_ai.usage.output_tokens").is_some())
    {
        out.facts.push(Fact::Usage(Usage::Cumulative { total: Some(breakdown(a)), context: None }));
    }
    if let Some(usd) = a.float("swarmtop.cost_usd") {
        out.facts.push(Fact::CostReported(CostReported {
            model: None,
            usd: Cow::Owned(usd.to_string()),
            cumulative: true,
            own: false,
        }));
    }
    let error = failed(span);
    let outcome = match (&error, a.str("swarmtop.status")) {
        (_, Some("interrupted")) => TurnOutcome::Interrupted,
        (Some(_), _) => TurnOutcome::Failed,
        _ => TurnOutcome::Completed,
    };
    if !unfinished {
        out.facts.push(Fact::TurnEnded(TurnEnded {
            turn: TurnRef::Id(turn),
            outcome: Some(outcome),
            error: error.as_deref().filter(|m| !m.is_empty()).map(sanitize),
        }));
    }
    let state = match a.str("swarmtop.status") {
        Some("running") => Some(Status::Running),
        Some("waiting") => Some(Status::Waiting),
        Some("closed") => Some(Status::Closed),
        Some("failed") => Some(Status::Failed),
        Some("interrupted") => Some(Status::Interrupted),
        Some("idle") => Some(Status::Idle),
        _ if error.is_some() => Some(Status::Failed),
        _ => end.map(|_| Status::Idle),
    };
    if let Some(s) = state {
        out.facts.push(status(StatusChange::Set(s)));
    }
}

/// The GenAI usage attributes (input counts cached and cache-written input, output counts reasoning).
/// The total is swarmtop's own when it exported the span, else input and output added (issue 22
/// item 11: an `invoke_agent` span of another sender showed 0 tokens beside its price).
fn breakdown(a: &Attrs<'_>) -> Breakdown {
    let (input, output) = (a.int("gen_ai.usage.input_tokens"), a.int("gen_ai.usage.output_tokens"));
    let added = (input.is_some() || output.is_some()).then(|| input.unwrap_or(0).saturating_add(output.unwrap_or(0)));
    Breakdown {
        total_tokens: a.int("swarmtop.usage.total_tokens").or(added),
        input_tokens: input,
        cached_input_tokens: a.int("gen_ai.usage.cache_read.input_tokens"),
        // Claude Code names the cache writes `cache_write`; the conventions, `cache_creation`.
        cache_write_input_tokens: a
            .int("gen_ai.usage.cache_creation.input_tokens")
            .or_else(|| a.int("gen_ai.usage.cache_write.input_tokens")),
        cache_write_1h_input_tokens: None,
        output_tokens: output,
        reasoning_output_tokens: a.int("gen_ai.usage.reasoning.output_tokens"),
    }
}

fn tool_kind(name: &str, a: &Attrs<'_>) -> (ItemKind, bool) {
    match name {
        "spawn_agent" | "Task" | "Agent" => (ItemKind::Collab, true),
        "shell" | "exec_command" | "Bash" => (ItemKind::Command, false),
        "apply_patch" => (ItemKind::FileChange, false),
        "web_search" => (ItemKind::WebSearch, false),
        _ if a.str("gen_ai.tool.type") == Some("extension") => (ItemKind::McpTool, false),
        _ => (ItemKind::DynamicTool, false),
    }
}

fn tool<'l>(span: &'l SpanJson, a: &Attrs<'l>, start: Option<i64>, end: Option<i64>, out: &mut Lowered<'l>) {
    let name = a.str("gen_ai.tool.name").unwrap_or("tool");
    let id = a.str("gen_ai.tool.call.id").unwrap_or(span.span_id.as_str());
    let (kind, spawn) = tool_kind(name, a);
    let title = a.str("swarmtop.tool.title").map_or_else(|| name.to_owned(), ToOwned::to_owned);
    let exit_code = a.get("process.exit.code").and_then(|v| v.int_value.as_ref()).and_then(Number::as_i64);
    let item_status = match (a.str("swarmtop.status"), failed(span)) {
        (Some("inProgress"), _) => ItemStatus::InProgress,
        (Some("interrupted"), _) => ItemStatus::Interrupted,
        (Some("declined"), _) => ItemStatus::Declined,
        (_, Some(_)) => ItemStatus::Failed,
        _ => ItemStatus::Completed,
    };
    out.facts.push(Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Borrowed(id)),
        turn: Some(TurnRef::Known(None)),
        kind: Some(kind),
        status: Some(item_status),
        title: Some(sanitize(&title)),
        exit_code,
        op: spawn.then_some(AgentOp::Spawn),
        tool: spawn.then(|| sanitize(name)),
        card: spawn,
        started_ms: start,
        completed_ms: end.filter(|_| item_status != ItemStatus::InProgress),
        // Claude Code's `Agent` call ends when its agent answered, unless it launched it in the
        // background; the span comes after the `link` that put the agent under it, while the
        // agent's own `subagent_completed` log may come a log batch later.
        answers: spawn && span.name == "claude_code.tool",
        ..ItemFact::default()
    })));
}

/// One model response (Claude Code's `llm_request`): its usage, keyed by the response id, so the
/// same response told again by an `api_request` log counts once.
fn chat<'l>(span: &'l SpanJson, a: &Attrs<'l>, out: &mut Lowered<'l>) {
    out.weight = Weight::Noise;
    let model = a.str("gen_ai.response.model").or_else(|| a.str("gen_ai.request.model"));
    if let Some(m) = model {
        out.facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m) }));
    }
    let key = a.str("gen_ai.response.id").or_else(|| a.str("request_id")).unwrap_or(span.span_id.as_str());
    let mut tokens = breakdown(a);
    tokens.total_tokens = tokens.total_tokens.or(Some(0));
    out.facts.push(Fact::Usage(Usage::Response(Box::new(ResponseUsage {
        key: (Cow::Borrowed(key), Cow::Borrowed("")),
        tokens,
        model: model.map(CleanStr::new),
        context: None,
    }))));
    if let Some(message) = failed(span) {
        out.facts.push(Fact::Error(ErrorFact { message: Some(sanitize(&message)), retrying: true, goes_on: false }));
    }
}

fn lower_log<'l>(log: &'l LogJson, a: &Attrs<'l>, out: &mut Lowered<'l>) {
    let event = a
        .str("event.name")
        .or(log.event_name.as_deref())
        .or_else(|| log.body.as_ref().and_then(|b| b.string_value.as_deref()))
        .unwrap_or("");
    let event = event.strip_prefix("claude_code.").unwrap_or(event);
    // In a sub-agent, Claude Code's events name it in `agent_id`; the session's own have none.
    let Some(thread) = a.str("agent_id").or_else(|| a.str("gen_ai.conversation.id")).or_else(|| a.str("session.id"))
    else {
        return notice(out, &format!("otlp/{event}"), None);
    };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    sub_agent(thread, a, out.time, out);
    let time = out.time;
    let is_session = a.str("agent_id").is_none();
    match event {
        "user_prompt" => {
            if is_session {
                out.facts.push(Fact::Thread(Box::new(ThreadFact::new(Cow::Borrowed(thread), Parentage::Root))));
            }
            let turn = a.str("prompt.id").map(Cow::Borrowed);
            out.facts.push(Fact::TurnStarted(TurnStarted { turn, own_root_turn: false, ends_previous: true }));
            out.facts.push(status(StatusChange::Set(Status::Running)));
        }
        "api_request" => {
            out.weight = Weight::Noise;
            let model = a.str("model");
            if let Some(m) = model {
                out.facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m) }));
            }
            // Anthropic's figures: `input_tokens` leaves out the cache reads and writes.
            let (fresh, read, written) =
                (a.int("input_tokens"), a.int("cache_read_tokens"), a.int("cache_creation_tokens"));
            // Saturating: the figures are the sender's (issue 22 item 10: i64::MAX twice wrapped to 0).
            let input = fresh.unwrap_or(0).saturating_add(read.unwrap_or(0)).saturating_add(written.unwrap_or(0));
            let tokens = Breakdown {
                total_tokens: Some(input.saturating_add(a.int("output_tokens").unwrap_or(0))),
                input_tokens: Some(input),
                cached_input_tokens: read,
                cache_write_input_tokens: written,
                cache_write_1h_input_tokens: a.int("cache_creation_1h_tokens"),
                output_tokens: a.int("output_tokens"),
                ..Breakdown::default()
            };
            let key = a.str("request_id").unwrap_or_default();
            out.facts.push(Fact::Usage(Usage::Response(Box::new(ResponseUsage {
                key: (Cow::Borrowed(key), Cow::Borrowed("")),
                tokens,
                model: model.map(CleanStr::new),
                context: None,
            }))));
        }
        "api_error" => {
            let message = a.str("error").map(sanitize);
            out.facts.push(Fact::Error(ErrorFact { message, retrying: true, goes_on: false }));
        }
        "tool_decision" => {
            if let Some(id) = a.str("tool_use_id") {
                let name = a.str("tool_name").unwrap_or("tool");
                let (kind, spawn) = tool_kind(name, a);
                out.facts.push(Fact::Item(Box::new(ItemFact {
                    id: Some(Cow::Borrowed(id)),
                    turn: Some(TurnRef::Latest),
                    kind: Some(kind),
                    status: Some(ItemStatus::InProgress),
                    title: Some(sanitize(name)),
                    op: spawn.then_some(AgentOp::Spawn),
                    tool: spawn.then(|| sanitize(name)),
                    card: spawn,
                    started_ms: time,
                    ..ItemFact::default()
                })));
                out.facts.push(status(StatusChange::Set(Status::Running)));
            }
        }
        "tool_result" => {
            if let Some(id) = a.str("tool_use_id") {
                let ok = a.bool("success") != Some(false);
                out.facts.push(Fact::Item(Box::new(ItemFact {
                    id: Some(owned(id)),
                    update_only: true,
                    status: Some(if ok { ItemStatus::Completed } else { ItemStatus::Failed }),
                    completed_ms: time,
                    ..ItemFact::default()
                })));
            }
        }
        "subagent_completed" => out.facts.push(status(StatusChange::Set(Status::Idle))),
        _ => out.weight = Weight::Noise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(text: &str, check: impl FnOnce(&Lowered<'_>)) {
        let line = parse(text).expect("an otlp line");
        let mut out = Lowered { time: line.time(), raw: text, ..Lowered::default() };
        lower(&line, &mut out);
        check(&out);
    }

    #[test]
    fn a_link_spawns_the_child_under_its_card() {
        lowered(r#"{"otlp":"link","traceId":"t","child":"c","parent":"p","card":"call_1"}"#, |l| {
            assert_eq!(l.subject, Subject::Thread("p".into()));
            let f: Vec<_> = l.facts.iter().collect();
            assert!(matches!(f[0], Fact::Spawn(s) if s.child == "c" && s.card.as_deref() == Some("call_1")));
        });
    }

    /// Claude Code 2.1.332's `llm_request` span (attributes as the real CLI sent them).
    #[test]
    fn a_chat_span_states_its_response_usage() {
        let span = r#"{"otlp":"span","resource":{"attributes":[]},"span":{"spanId":"s1","parentSpanId":"p","name":"claude_code.llm_request","startTimeUnixNano":"1796127217533000000","endTimeUnixNano":"1796127217817626247","attributes":[
            {"key":"session.id","value":{"stringValue":"sess"}},
            {"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},
            {"key":"gen_ai.conversation.id","value":{"stringValue":"agent-a"}},
            {"key":"gen_ai.response.id","value":{"stringValue":"req_1"}},
            {"key":"gen_ai.response.model","value":{"stringValue":"claude-sonnet-4-5"}},
            {"key":"gen_ai.usage.input_tokens","value":{"intValue":"6300"}},
            {"key":"gen_ai.usage.output_tokens","value":{"intValue":"100"}},
            {"key":"gen_ai.usage.cache_read.input_tokens","value":{"intValue":"5000"}},
            {"key":"gen_ai.usage.cache_write.input_tokens","value":{"intValue":"300"}}]}}"#;
        lowered(span, |l| {
            assert_eq!(l.subject, Subject::Thread("agent-a".into()));
            assert_eq!(l.time, Some(1_796_127_217_817));
            let usage = l.facts.iter().find_map(|f| match f {
                Fact::Usage(Usage::Response(r)) => Some(r),
                _ => None,
            });
            let r = usage.expect("usage");
            assert_eq!(&*r.key.0, "req_1");
            assert_eq!(r.tokens.input_tokens, Some(6300));
            assert_eq!(r.tokens.cached_input_tokens, Some(5000));
            assert_eq!(r.tokens.cache_write_input_tokens, Some(300));
        });
    }

    #[test]
    fn records_of_no_agent_are_notices_and_bad_ones_are_not_lines() {
        lowered(r#"{"otlp":"span","span":{"spanId":"s","name":"GET /"}}"#, |l| {
            assert_eq!(l.subject, Subject::Global);
        });
        assert!(parse(r#"{"otlp":"span","span":7}"#).is_none());
    }
}
