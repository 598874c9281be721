//! What a Codex app-server message says, as facts (wire.md §2–§5, routing.md §2–§3, §6).

use std::borrow::Cow;

use serde::Deserialize;

use super::message::{Dir, Item, Message};
use super::methods::{self, Method, Sender};
use crate::wire::fact::{
    AgentOp, Clean, CleanStr, ContextFill, Delta, ErrorFact, Fact, Format, Id, ItemFact, ItemKind, ItemStatus, Lowered,
    ModelChange, Notice, Parentage, Spawn, Status, StatusChange, StatusFact, Target, TextRule, ThreadFact, TurnEnded,
    TurnOutcome, TurnRef, TurnStarted, Via, Wait, Weight,
};
use crate::wire::json::{Raw, Str};
use crate::wire::sanitize;

/// Lowers one message into `out` (whose time and raw text the caller has set).
pub fn lower<'l>(msg: &'l Message<'_>, dir: Dir, out: &mut Lowered<'l>) {
    out.format = Format::CodexAppServer;
    let Some(method) = msg.method() else {
        control(msg, out);
        return;
    };
    let from_server = match dir {
        Dir::ClientToServer => false,
        Dir::ServerToClient => true,
        // A method in none of the lists counts as the server's: new server methods must surface,
        // not vanish (routing.md §3). With a thread it is that thread's, without one global.
        Dir::In | Dir::Bare => !matches!(
            msg.kind.sender().unwrap_or_else(|| methods::sender(method)),
            Sender::ClientRequest | Sender::ClientNotification
        ),
    };
    if !from_server {
        control(msg, out);
        return;
    }
    let Some(thread) = msg.thread_id().filter(|t| !t.is_empty()) else {
        out.subject = crate::wire::fact::Subject::Global;
        let message = msg.params.rest().message.and_then(super::scan::string_of);
        out.facts.push(Fact::Notice(Notice { method: CleanStr::new(method), message: message.map(|m| sanitize(&m)) }));
        return;
    };
    out.subject = crate::wire::fact::Subject::Thread(Cow::Borrowed(thread));
    out.weight = weight(msg);
    thread_facts(msg, thread, out);
}

/// Client traffic and responses feed metadata only, but some of them tell about threads: a
/// `thread/read`-like response registers its thread, a `thread/start` response or a `turn/start`
/// request marks a root (routing.md §2, §8).
fn control<'l>(msg: &'l Message<'_>, out: &mut Lowered<'l>) {
    if let Some(result) = &msg.result {
        if let Some(info) = &result.thread {
            let parentage = match info.parent() {
                Some(parent) => Parentage::Child { parent, via: Via::ThreadRead, card: None },
                None if result.model.is_some() && result.model_provider.is_some() && !info.id.is_empty() => {
                    Parentage::Root
                }
                None => Parentage::Unknown,
            };
            out.facts.push(Fact::Thread(Box::new(thread_info(info, Cow::Borrowed(&*info.id), parentage))));
            if let Some(model) = result.model.as_deref().filter(|m| !m.is_empty()) {
                out.facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(model) }));
            }
        }
    } else if msg.kind == Method::TurnStart && msg.has_id {
        if let Some(id) = msg.thread_id().filter(|t| !t.is_empty()) {
            out.facts.push(Fact::Thread(Box::new(ThreadFact::new(Cow::Borrowed(id), Parentage::Root))));
        }
    }
}

/// A thread's own description (`thread/started`, `thread/read`, …): names, model, spawn facts.
fn thread_info<'l>(
    info: &'l super::message::ThreadInfo<'_>,
    thread: Id<'l>,
    parentage: Parentage<'l>,
) -> ThreadFact<'l> {
    let spawn = info.spawn();
    let pick = |own: Option<&str>, spawned: Option<&str>| own.or(spawned).filter(|s| !s.is_empty()).map(sanitize);
    let mut fact = ThreadFact::new(thread, parentage);
    fact.nickname = pick(info.agent_nickname.as_deref(), spawn.as_ref().and_then(|s| s.agent_nickname.as_deref()));
    fact.role = pick(info.agent_role.as_deref(), spawn.as_ref().and_then(|s| s.agent_role.as_deref()));
    fact.path = pick(None, spawn.as_ref().and_then(|s| s.agent_path.as_deref()));
    fact.model = pick(info.model.as_deref(), None);
    fact
}

/// How a child's line is routed (routing.md §3).
fn weight(msg: &Message<'_>) -> Weight {
    match msg.kind {
        // `willRetry` absent counts as final, as it does for status (routing.md §6).
        Method::Error if msg.params.rest().will_retry == Some(true) => Weight::Output,
        Method::TurnCompleted | Method::Error => Weight::Closing,
        Method::ThreadStarted
        | Method::ThreadStatusChanged
        | Method::ThreadClosed
        | Method::ThreadTokenUsageUpdated
        | Method::ThreadSettingsUpdated
        | Method::ModelRerouted
        | Method::TurnStarted
        | Method::TurnStart
        | Method::PlanDelta => Weight::Noise,
        Method::AgentMessageDelta
        | Method::ReasoningSummaryTextDelta
        | Method::ReasoningTextDelta
        | Method::CommandOutputDelta
        | Method::ItemStarted
        | Method::ItemCompleted
        | Method::AccountRateLimitsUpdated => Weight::Output,
        // The rest of the rule, for the methods `Method` does not name: lifecycle families are
        // suppressed, everything else is substantive.
        Method::Absent | Method::Other => {
            let method = msg.method().unwrap_or("");
            if method.starts_with("thread/") || method.starts_with("turn/") || method.starts_with("model/") {
                Weight::Noise
            } else {
                Weight::Output
            }
        }
    }
}

fn thread_facts<'l>(msg: &'l Message<'_>, thread: &'l str, out: &mut Lowered<'l>) {
    let p = msg.params.rest();
    let facts = &mut out.facts;
    match msg.kind {
        Method::ThreadStarted => {
            if let Some(info) = &p.thread {
                let parentage = match info.parent() {
                    Some(parent) => Parentage::Child { parent, via: Via::ThreadStarted, card: None },
                    None => Parentage::Root,
                };
                facts.push(Fact::Thread(Box::new(thread_info(info, Cow::Borrowed(thread), parentage))));
            }
        }
        Method::ThreadStatusChanged => {
            if let Some(change) = status_change(p.status) {
                facts.push(Fact::Status(StatusFact { target: Target::Subject, change }));
            }
        }
        Method::ThreadClosed => {
            facts.push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(Status::Closed) }));
        }
        Method::ThreadTokenUsageUpdated => {
            if let Some(usage) = &p.token_usage {
                let context = match (usage.last.and_then(|l| l.total_tokens), usage.model_context_window) {
                    (Some(used), Some(window)) => Some(ContextFill { used, window: Some(window) }),
                    _ => None,
                };
                facts.push(Fact::Usage(crate::wire::fact::Usage::Cumulative { total: usage.total, context }));
            }
        }
        Method::ThreadSettingsUpdated => model_fact(facts, p.settings_model.as_deref()),
        Method::ModelRerouted => model_fact(facts, p.to_model.as_deref()),
        Method::TurnStarted => {
            let turn = p.turn.as_ref();
            let id = turn.and_then(|t| t.id.as_deref());
            facts.push(Fact::TurnStarted(TurnStarted {
                turn: id.map(Cow::Borrowed),
                own_root_turn: id.is_some() && turn.is_some_and(|t| t.id == t.root_turn_id),
                ends_previous: false,
            }));
            facts
                .push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(Status::Running) }));
        }
        Method::TurnCompleted => {
            let Some(turn) = p.turn.as_ref() else { return };
            let Some(id) = turn.id.as_deref() else { return };
            let outcome = match turn.status.as_deref().unwrap_or("") {
                "completed" => Some(TurnOutcome::Completed),
                "failed" => Some(TurnOutcome::Failed),
                "interrupted" => Some(TurnOutcome::Interrupted),
                _ => None,
            };
            facts.push(Fact::TurnEnded(TurnEnded {
                turn: TurnRef::Id(Cow::Borrowed(id)),
                outcome,
                error: error_message(turn.error),
            }));
        }
        Method::Error => {
            let retrying = p.will_retry == Some(true);
            let message = error_message(p.error);
            facts.push(Fact::Error(ErrorFact { message: message.clone(), retrying, goes_on: false }));
            if !retrying {
                // Terminal (routing.md §3): it closes the turn; the `turn/completed` failed that
                // follows (wire.md §5; `fail.server.ndjson`: 10 ms later) tells the same end again.
                let turn = msg.params.turn_id.as_deref().map(Cow::Borrowed);
                facts.push(Fact::TurnEnded(TurnEnded {
                    turn: TurnRef::IdOrLatest(turn),
                    outcome: Some(TurnOutcome::Failed),
                    error: message,
                }));
            }
        }
        Method::ItemStarted | Method::ItemCompleted => {
            if let Some(item) = &p.item {
                item_facts(msg, item, msg.kind == Method::ItemCompleted, out);
            }
        }
        _ if msg.method().unwrap_or("").starts_with("item/") => {
            let params = &msg.params;
            if let Some(item) = params.item_id.as_deref() {
                facts.push(Fact::Delta(Delta {
                    item: Cow::Borrowed(item),
                    turn: params.turn_id.as_deref().map(Cow::Borrowed),
                    text: params.delta.as_deref().map(CleanStr::new),
                    part: params.summary_index.or(params.content_index),
                }));
            }
        }
        _ => {}
    }
}

fn model_fact<'l>(facts: &mut crate::wire::fact::Facts<'l>, model: Option<&'l str>) {
    if let Some(model) = model.filter(|m| !m.is_empty()) {
        facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(model) }));
    }
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
}

fn error_message(raw: Option<Raw<'_>>) -> Option<Clean> {
    parse_raw::<ErrorBody<'_>>(raw).and_then(|e| e.message).map(|m| sanitize(&m))
}

/// `thread/status/changed`'s `status` object (routing.md §6).
fn status_change(raw: Option<Raw<'_>>) -> Option<StatusChange> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct StatusBody<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<Str<'a>>,
        #[serde(default)]
        active_flags: Vec<Str<'a>>,
    }
    let body = parse_raw::<StatusBody<'_>>(raw)?;
    match body.kind.as_deref() {
        Some("active") => {
            let waits = body.active_flags.iter().find_map(|f| match &**f {
                "waitingOnApproval" => Some(Wait::Approval),
                "waitingOnUserInput" => Some(Wait::UserInput),
                _ => None,
            });
            Some(waits.map_or(StatusChange::Active, StatusChange::Waiting))
        }
        Some("idle") => Some(StatusChange::Idle),
        Some("notLoaded") => Some(StatusChange::Set(Status::Closed)),
        _ => None,
    }
}

/// An `item/started` or `item/completed`: the item, what a collab item does to the agents it
/// names, and the children it announces (routing.md §2).
fn item_facts<'l>(msg: &'l Message<'_>, item: &'l Item<'_>, completed: bool, out: &mut Lowered<'l>) {
    let Some(id) = item.id.as_deref() else { return };
    let kind = item.kind.as_deref().map(ItemKind::of);
    let receivers: Vec<Id<'l>> = item
        .receiver_thread_ids
        .iter()
        .flatten()
        .map(|r| Cow::Borrowed(&**r))
        .chain(item.agent_thread_id.as_deref().map(Cow::Borrowed))
        .collect();
    let op = agent_op(kind.as_ref(), item);
    let said = item.status.as_deref().and_then(ItemStatus::of).or(completed.then_some(ItemStatus::Completed));
    let mut fact = ItemFact {
        id: Some(Cow::Borrowed(id)),
        turn: Some(TurnRef::Known(msg.params.turn_id.as_deref().map(Cow::Borrowed))),
        status: said.map(|s| op.map_or(s, |op| op.own_status(s))),
        op,
        exit_code: parse_raw::<i64>(item.exit_code),
        text_rule: if completed { TextRule::Authoritative } else { TextRule::Provisional },
        card: matches!(kind, Some(ItemKind::Collab | ItemKind::SubAgentActivity)),
        started_ms: if completed { None } else { out.time },
        completed_ms: if completed { out.time } else { None },
        ..ItemFact::default()
    };
    if let Some(kind) = &kind {
        let (title, tool) = title_of(kind, item);
        fact.title = title.filter(|t| !t.is_empty());
        fact.tool = tool;
        fact.text = text_of(kind, item);
    }
    fact.kind = kind;
    fact.receivers = receivers;
    let facts = &mut out.facts;
    let receivers = fact.receivers.clone();
    facts.push(Fact::Item(Box::new(fact)));
    let card = Cow::Borrowed(id);
    match item.kind() {
        "collabAgentToolCall" => {
            // The spawn's resolved model names the child's model; item/started's never does.
            if completed && op == Some(AgentOp::Spawn) {
                if let Some(model) = item.model.as_deref().filter(|m| !m.is_empty()) {
                    for r in &receivers {
                        facts.push(Fact::Model(ModelChange {
                            target: Target::Thread(r.clone()),
                            model: CleanStr::new(model),
                        }));
                    }
                }
            }
            if completed && op == Some(AgentOp::Close) && item.status.as_deref() == Some("completed") {
                for r in &receivers {
                    facts.push(Fact::Status(StatusFact {
                        target: Target::Thread(r.clone()),
                        change: StatusChange::Set(Status::Closed),
                    }));
                }
            }
            // `wait` and the other collab tools name children that are usually known already;
            // the router ignores a spawn of a registered child.
            if item.status.as_deref() != Some("failed") {
                for child in item.receiver_thread_ids.iter().flatten().filter(|c| !c.is_empty()) {
                    facts.push(Fact::Spawn(Spawn {
                        child: Cow::Borrowed(child),
                        card: Some(card.clone()),
                        via: Via::CollabAgentToolCall,
                    }));
                }
            }
        }
        "subAgentActivity" => {
            let started = item.activity.as_deref() == Some("started");
            if let Some(agent) = item.agent_thread_id.as_deref().filter(|c| !c.is_empty()) {
                // What an activity says of its agent never changes a root (routing.md §8: a
                // child's `interacted` about `/root`).
                let mut about = ThreadFact::new(Cow::Borrowed(agent), Parentage::SubAgent);
                about.model = item.model.as_deref().filter(|m| !m.is_empty()).map(sanitize);
                if started {
                    about.path = item.agent_path.as_deref().filter(|p| !p.is_empty()).map(sanitize);
                }
                facts.push(Fact::Thread(Box::new(about)));
                if started {
                    facts.push(Fact::Spawn(Spawn {
                        child: Cow::Borrowed(agent),
                        card: Some(card),
                        via: Via::SubAgentActivity,
                    }));
                }
            }
        }
        _ => {}
    }
}

/// What a collab call or a sub-agent's activity does to agents. A collab call that names no tool
/// is taken for a spawn; an activity `started` is one.
fn agent_op(kind: Option<&ItemKind>, item: &Item<'_>) -> Option<AgentOp> {
    match kind? {
        ItemKind::Collab => raw_str(item.tool).map_or(Some(AgentOp::Spawn), |t| super::agent_call(&t).0),
        ItemKind::SubAgentActivity => (item.activity.as_deref() == Some("started")).then_some(AgentOp::Spawn),
        _ => None,
    }
}

/// An optional raw field as `T`; `None` when absent, null or of another shape.
fn parse_raw<'a, T: Deserialize<'a>>(raw: Option<Raw<'a>>) -> Option<T> {
    raw?.parse()
}

/// An optional raw field as a string; `None` when absent, null or not a string.
fn raw_str(raw: Option<Raw<'_>>) -> Option<Str<'_>> {
    super::scan::string_of(raw?)
}

/// The item's one-line title and tool name, by its kind.
fn title_of(kind: &ItemKind, item: &Item<'_>) -> (Option<Clean>, Option<Clean>) {
    let mut title = Clean::new();
    let mut tool = None;
    match kind {
        ItemKind::Command => {
            if let Some(cmd) = raw_str(item.command) {
                title.push(&cmd);
            } else if let Some(parts) = parse_raw::<Vec<Str<'_>>>(item.command) {
                title.push(&parts.join(" "));
            }
        }
        ItemKind::FileChange => {
            #[derive(Deserialize)]
            struct Change<'a> {
                #[serde(borrow)]
                path: Option<Str<'a>>,
            }
            let changes: Vec<Change<'_>> = parse_raw(item.changes).unwrap_or_default();
            let paths: Vec<&str> = changes.iter().filter_map(|c| c.path.as_deref()).collect();
            title.push(&paths.join(", "));
        }
        ItemKind::McpTool | ItemKind::DynamicTool => {
            let server = raw_str(item.server);
            let name = match (server, raw_str(item.tool)) {
                (Some(s), Some(t)) => format!("{s}.{t}"),
                (None, Some(t)) => t.into_owned(),
                (Some(s), None) => s.into_owned(),
                (None, None) => String::new(),
            };
            title.push(&name);
        }
        ItemKind::WebSearch => {
            if let Some(q) = raw_str(item.query) {
                title.push(&q);
            }
        }
        ItemKind::Collab => {
            tool = raw_str(item.tool).map(|t| sanitize(&t));
            if let Some(prompt) = raw_str(item.prompt) {
                title.push(&prompt);
            }
        }
        ItemKind::SubAgentActivity => {
            tool = item.activity.as_deref().map(sanitize);
            if let Some(path) = item.agent_path.as_deref() {
                title.push(path);
            }
        }
        _ => {}
    }
    (Some(title), tool)
}

/// `parts` joined by `sep`, sanitised into `text`; the usual single part without a joined copy.
fn push_joined(text: &mut Clean, parts: &[&str], sep: &str) {
    match parts {
        [one] => text.push(one),
        _ => text.push(&parts.join(sep)),
    }
}

/// The item's body text, by its kind; `None` when the line carries none.
fn text_of<'l>(kind: &ItemKind, item: &Item<'l>) -> Option<Clean> {
    let mut text = Clean::new();
    match kind {
        ItemKind::AgentMessage | ItemKind::Plan => text.push(&raw_str(item.text)?),
        ItemKind::UserMessage => {
            let parts = super::scan::texts_of(item.content?)?;
            let joined: Vec<&str> = parts.iter().filter_map(Option::as_deref).collect();
            push_joined(&mut text, &joined, "\n");
        }
        ItemKind::Reasoning => {
            let strings = |raw: Option<Raw<'l>>| raw.and_then(super::scan::strings_of).unwrap_or_default();
            let summary = strings(item.summary);
            let parts = if summary.is_empty() { strings(item.content) } else { summary };
            if parts.is_empty() {
                return None;
            }
            let parts: Vec<&str> = parts.iter().map(|p| &**p).collect();
            push_joined(&mut text, &parts, "\n\n");
        }
        ItemKind::Command => text.push(&raw_str(item.aggregated_output)?),
        ItemKind::FileChange => {
            #[derive(Deserialize)]
            struct Change<'a> {
                #[serde(borrow)]
                diff: Option<Str<'a>>,
            }
            let changes: Vec<Change<'_>> = parse_raw(item.changes)?;
            let diffs: Vec<&str> = changes.iter().filter_map(|c| c.diff.as_deref()).collect();
            if diffs.is_empty() {
                return None;
            }
            text.push(&diffs.join("\n"));
        }
        ItemKind::McpTool | ItemKind::DynamicTool => {
            #[derive(Deserialize)]
            struct Error<'a> {
                #[serde(borrow)]
                message: Option<Str<'a>>,
            }
            text.push(&parse_raw::<Error<'_>>(item.error)?.message?);
        }
        _ => return None,
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use crate::wire::Clean;
    use crate::wire::fact::{Fact, Lowered, Parentage, Status, StatusChange, Subject, Via, Wait, Weight};
    use crate::wire::{Origin, Stream, decode, lower};

    /// Lowers one line as the router would, and hands the result to `check`.
    fn lowered(text: &str, check: impl FnOnce(&Lowered<'_>)) {
        let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
        check(&lower(&line, &Origin::NONE, &mut Stream::default()));
    }

    fn facts<'a>(l: &'a Lowered<'_>) -> Vec<&'a Fact<'a>> {
        l.facts.iter().collect()
    }

    #[test]
    fn a_thread_started_with_a_parent_is_a_child_announcing_itself() {
        lowered(
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p","depth":1,"agent_path":"/root/a","agent_nickname":"Kant"}}},"model":"gpt-5.5"}}}"#,
            |l| {
                assert_eq!(l.subject, Subject::Thread("c".into()));
                assert_eq!(l.weight, Weight::Noise);
                let [Fact::Thread(t)] = facts(l)[..] else { panic!("{:?}", l.facts) };
                assert!(
                    matches!(&t.parentage, Parentage::Child { parent, via: Via::ThreadStarted, card: None } if parent == "p")
                );
                assert_eq!(t.nickname.as_ref().map(Clean::as_str), Some("Kant"));
                assert_eq!(t.path.as_ref().map(Clean::as_str), Some("/root/a"));
                assert_eq!(t.model.as_ref().map(Clean::as_str), Some("gpt-5.5"));
            },
        );
    }

    #[test]
    fn a_spawn_item_states_the_card_then_its_children() {
        lowered(
            r#"{"method":"item/completed","params":{"threadId":"p","turnId":"u","item":{"type":"collabAgentToolCall","id":"call","tool":"spawnAgent","status":"completed","prompt":"go \u001b[2J","receiverThreadIds":["c1","c2"],"model":"gpt-5.6-luna"}},"emittedAtMs":7}"#,
            |l| {
                let f = facts(l);
                let Fact::Item(item) = f[0] else { panic!() };
                assert!(item.card);
                assert_eq!(item.title.as_ref().map(Clean::as_str), Some("go "), "sanitised");
                assert_eq!(item.tool.as_ref().map(Clean::as_str), Some("spawnAgent"));
                assert_eq!(item.op, Some(crate::wire::fact::AgentOp::Spawn));
                assert_eq!(item.completed_ms, Some(7));
                assert!(matches!(f[1], Fact::Model(m) if m.model.as_str() == "gpt-5.6-luna"));
                let spawns: Vec<&str> =
                    f.iter().filter_map(|f| if let Fact::Spawn(s) = f { Some(&*s.child) } else { None }).collect();
                assert_eq!(spawns, ["c1", "c2"]);
            },
        );
        // A failed spawn announces nobody.
        lowered(
            r#"{"method":"item/completed","params":{"threadId":"p","item":{"type":"collabAgentToolCall","id":"call","tool":"spawnAgent","status":"failed","receiverThreadIds":["c1"]}}}"#,
            |l| assert!(!l.facts.iter().any(|f| matches!(f, Fact::Spawn(_)))),
        );
    }

    /// Codex marks a `wait` failed when an agent it waited for failed: that is the agent's failure
    /// (its lane says so), not the wait's, which did its job.
    #[test]
    fn a_wait_is_not_failed_by_the_agent_it_waited_for() {
        lowered(
            r#"{"method":"item/completed","params":{"threadId":"p","item":{"type":"collabAgentToolCall","id":"w","tool":"wait","status":"failed","receiverThreadIds":["c1"],"agentsStates":{"c1":{"status":"errored","message":"boom"}}}}}"#,
            |l| {
                let Fact::Item(item) = facts(l)[0] else { panic!("{:?}", l.facts) };
                assert_eq!(item.op, Some(crate::wire::fact::AgentOp::Wait));
                assert_eq!(item.status, Some(crate::wire::fact::ItemStatus::Completed));
            },
        );
        // A spawn that failed did fail.
        lowered(
            r#"{"method":"item/completed","params":{"threadId":"p","item":{"type":"collabAgentToolCall","id":"s","tool":"spawnAgent","status":"failed","receiverThreadIds":[]}}}"#,
            |l| {
                let Fact::Item(item) = facts(l)[0] else { panic!("{:?}", l.facts) };
                assert_eq!(item.status, Some(crate::wire::fact::ItemStatus::Failed));
            },
        );
    }

    #[test]
    fn turns_statuses_and_errors() {
        lowered(r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u1","rootTurnId":"u1"}}}"#, |l| {
            assert!(matches!(facts(l)[0], Fact::TurnStarted(t) if t.own_root_turn));
            assert!(matches!(facts(l)[1], Fact::Status(s) if s.change == StatusChange::Set(Status::Running)));
        });
        lowered(
            r#"{"method":"thread/status/changed","params":{"threadId":"t","status":{"type":"active","activeFlags":["waitingOnUserInput"]}}}"#,
            |l| assert!(matches!(facts(l)[0], Fact::Status(s) if s.change == StatusChange::Waiting(Wait::UserInput))),
        );
        lowered(r#"{"method":"error","params":{"threadId":"t","willRetry":true,"error":{"message":"429"}}}"#, |l| {
            assert_eq!(l.weight, Weight::Output, "a retried error is substantive");
            assert!(matches!(facts(l)[0], Fact::Error(e) if e.retrying));
            assert_eq!(facts(l).len(), 1, "the turn goes on");
        });
        lowered(r#"{"method":"error","params":{"threadId":"t","turnId":"u1","error":{"message":"gone"}}}"#, |l| {
            assert_eq!(l.weight, Weight::Closing, "a final error closes the lane");
            assert!(matches!(facts(l)[0], Fact::Error(e) if !e.retrying));
            assert!(
                matches!(facts(l)[1], Fact::TurnEnded(e) if e.outcome == Some(crate::wire::fact::TurnOutcome::Failed)
                    && matches!(&e.turn, crate::wire::fact::TurnRef::IdOrLatest(Some(u)) if u == "u1")),
                "and its turn"
            );
        });
    }

    #[test]
    fn client_traffic_and_responses_are_control_that_may_place_a_thread() {
        lowered(r#"{"method":"turn/start","id":3,"params":{"threadId":"r"}}"#, |l| {
            assert_eq!(l.subject, Subject::Control);
            assert!(matches!(facts(l)[0], Fact::Thread(t) if t.parentage == Parentage::Root));
        });
        lowered(r#"{"id":4,"result":{"thread":{"id":"c","parentThreadId":"p","agentNickname":"Ada"}}}"#, |l| {
            assert_eq!(l.subject, Subject::Control);
            assert!(
                matches!(facts(l)[0], Fact::Thread(t) if matches!(t.parentage, Parentage::Child { via: Via::ThreadRead, .. }))
            );
        });
        lowered(r#"{"method":"configWarning","params":{"message":"odd \u0007 config"}}"#, |l| {
            assert_eq!(l.subject, Subject::Global);
            assert!(
                matches!(facts(l)[0], Fact::Notice(n) if n.message.as_ref().map(Clean::as_str) == Some("odd  config"))
            );
        });
        lowered(r#"{"swarmtop":"recording","version":1}"#, |l| {
            assert_eq!(l.format, crate::wire::fact::Format::Marker);
            assert!(l.facts.is_empty());
        });
    }

    #[test]
    fn deltas_carry_their_clean_text() {
        lowered(
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"plain"}}"#,
            |l| {
                let [Fact::Delta(d)] = facts(l)[..] else { panic!() };
                assert_eq!(d.text.as_ref().map(crate::wire::CleanStr::as_str), Some("plain"));
            },
        );
    }
}
