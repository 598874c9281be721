//! A source read through the pipeline, as rows: one per root session, one per thread (a run),
//! each run with its spend over time and its items. Figures are the model's own, so what the
//! store reports is what `stats` says of the same files.

use std::collections::HashMap;

use crate::model::prices::Prices;
use crate::model::{ItemKind, ItemStatus, Model, ShownCost, Thread};
use crate::pipeline::Pipeline;
use crate::router::{Role, ThreadIdx};

use super::ledger::{Ledger, merged};
use super::rows::{Figures, ItemRow, RunRow, SessionRow, Source, SourceRows, UsageRow};
use super::text;

/// What a source's reading gave, besides the pipeline: how to name a thread as `tree` does, and
/// `stats --json` and `tree` of the whole.
pub struct Rendered<'a> {
    pub label: &'a dyn Fn(&Model, ThreadIdx) -> String,
    pub stats_json: String,
    pub tree_text: String,
    pub error: Option<String>,
}

pub fn rows(
    source: Source,
    synced_ms: i64,
    pipeline: &Pipeline,
    ledger: &Ledger,
    prices: &Prices,
    rendered: Rendered<'_>,
) -> SourceRows {
    let model = &pipeline.model;
    let session_of: HashMap<ThreadIdx, usize> = model.sessions.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let sessions: Vec<SessionRow> = model.sessions.iter().map(|&root| session(model, root, &rendered)).collect();
    let mut runs: Vec<RunRow> = (0..model.threads.len())
        .map(|i| {
            let idx = ThreadIdx(i as u32);
            let session = model.root_of(idx).and_then(|r| session_of.get(&r).copied());
            run(model, idx, session, &source, ledger, prices, &rendered)
        })
        .collect();
    for (i, (&root, s)) in model.sessions.iter().zip(&sessions).enumerate() {
        unattributed(model, root, (i, s.ended_ms), ledger, &mut runs);
    }
    SourceRows {
        source,
        synced_ms,
        lines: pipeline.counters().lines,
        bytes: pipeline.bytes,
        format: pipeline.format().to_owned(),
        error: rendered.error.clone(),
        stats_json: rendered.stats_json,
        tree_text: rendered.tree_text,
        sessions,
        runs,
    }
}

fn session(model: &Model, root: ThreadIdx, rendered: &Rendered<'_>) -> SessionRow {
    let t = model.thread(root);
    let spent = model.spent(root);
    let (mut started, mut ended, mut depth) = (t.first_ms, t.last_ms, 0);
    let mut stack = vec![(root, 0u32)];
    // The tree's own walk: a chain can be deeper than the call stack.
    while let Some((i, level)) = stack.pop() {
        let th = model.thread(i);
        started = min_some(started, th.first_ms);
        ended = ended.max(th.last_ms);
        depth = depth.max(level);
        stack.extend(th.children.iter().map(|&c| (c, level.saturating_add(1))));
    }
    SessionRow {
        thread: t.id.to_string(),
        name: (rendered.label)(model, root),
        started_ms: started,
        ended_ms: ended,
        status: t.status.as_str().to_owned(),
        agents: spent.threads,
        depth,
        figures: Figures { tokens: spent.tokens, cost: spent.cost, priced: spent.priced > 0 },
    }
}

/// The session's unattributed part (what its agent reported and no thread accounts for: the
/// screen's `unattributed` row) with the root's usage, as the root's own spend is: a report of the
/// session then adds up to what `stats` says of it, the sub-agents' part unchanged.
fn unattributed(
    model: &Model,
    root: ThreadIdx,
    (session, end): (usize, Option<i64>),
    ledger: &Ledger,
    runs: &mut [RunRow],
) {
    let part = model.unattributed_part(root);
    if root.index() >= runs.len() {
        return;
    }
    let seen: Vec<&UsageRow> = runs.iter().filter(|r| r.session == Some(session)).flat_map(|r| &r.usage).collect();
    let extra = ledger.unattributed(root.index(), model.thread(root), &part, end, &seen);
    if extra.is_empty() {
        return;
    }
    let usage = &mut runs[root.index()].usage;
    usage.extend(extra);
    *usage = merged(std::mem::take(usage));
}

fn min_some(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn run(
    model: &Model,
    idx: ThreadIdx,
    session: Option<usize>,
    source: &Source,
    ledger: &Ledger,
    prices: &Prices,
    rendered: &Rendered<'_>,
) -> RunRow {
    let t = model.thread(idx);
    // As `stats` places it (routing.md §7): an orphan has no parent and depth 0.
    let (role, depth, via) = match t.role {
        Role::Root => ("root", 0, None),
        Role::Child => ("child", t.depth, t.via.map(crate::router::Via::as_str)),
        Role::Orphan => ("orphan", 0, Some("orphan")),
        Role::Pending => ("pending", 0, None),
    };
    let card = t.parent.zip(t.card.as_deref()).and_then(|(p, card)| model.thread(p).item(card));
    let agent_type = t.agent_role.as_ref().or_else(|| card.and_then(|c| c.agent_type()));
    let brief = match card {
        Some(c) if !c.text.is_empty() => Some(c.text.as_str()),
        Some(c) => Some(c.title.as_str()).filter(|s| !s.is_empty()),
        None => first_prompt(t),
    };
    let (ordinals, entries): (Vec<u64>, Vec<ItemRow>) =
        t.items.entries().map(|(n, i)| (u64::try_from(n).unwrap_or(u64::MAX), item(model, i))).unzip();
    let mut models: Vec<String> = t.model.iter().map(ToString::to_string).collect();
    // The settled responses' models first: they were stated first.
    let settled = t.settled_spend().iter().map(|s| &s.model);
    for m in settled.chain(t.responses().iter().map(|r| &r.model)) {
        if let Some(m) = m.as_ref().filter(|m| !models.iter().any(|k| k == m.as_str())) {
            models.push(m.to_string());
        }
    }
    RunRow {
        thread: t.id.to_string(),
        parent: t.parent.filter(|_| t.role == Role::Child).map(ThreadIdx::index),
        session,
        depth,
        role,
        via,
        card: t.card.as_deref().map(str::to_owned),
        agent_type: agent_type.map(ToString::to_string).filter(|s| !s.is_empty()),
        name: (rendered.label)(model, idx),
        nickname: t.nickname.as_ref().map(ToString::to_string),
        brief: brief.map(|b| text::cap(b, text::BRIEF)),
        model: t.model.as_ref().map(ToString::to_string),
        models,
        status: t.status.as_str().to_owned(),
        started_ms: t.first_ms,
        ended_ms: t.last_ms,
        turns: u32::try_from(t.turns.len()).unwrap_or(u32::MAX),
        items: u32::try_from(t.items.len()).unwrap_or(u32::MAX),
        tool_calls: u32::try_from(t.items.iter().filter(|i| is_tool_call(&i.kind)).count()).unwrap_or(u32::MAX),
        figures: Figures { tokens: t.tokens, cost: t.cost.unwrap_or_default(), priced: t.cost.is_some() },
        // `table`, `agent` or `none` (it used nothing); no source for an unpriced cost.
        cost_source: t.cost.map(|_| t.cost_source.as_str()),
        reported_cost: match model.shown_cost(idx) {
            ShownCost::Reported(c) => Some(c),
            _ => None,
        },
        answer: t
            .items
            .iter()
            .rev()
            .find(|i| i.kind == ItemKind::AgentMessage && !i.text.is_empty())
            .map(|i| text::cap(i.text.as_str(), text::BRIEF)),
        files_changed: files_changed(t),
        file: file_of(&t.id, source),
        usage: ledger.usage(idx.index(), t, prices),
        digests: entries.iter().map(|i| digest(&i.text)).collect(),
        item_ordinals: ordinals,
        entries,
    }
}

/// What the store keys an item's text by (`None`: it has no text).
fn digest(text: &str) -> Option<[u8; 32]> {
    use sha2::Digest as _;
    (!text.is_empty()).then(|| sha2::Sha256::digest(text.as_bytes()).into())
}

/// A root's brief: the first user message of its first turn that is what a person asked, not a
/// tagged block of context the client sent as one (`<environment_context>…`).
fn first_prompt(t: &Thread) -> Option<&str> {
    let turn = t.turns.first()?;
    turn.items
        .iter()
        .take(4)
        .filter_map(|&i| t.items.get(i))
        .take_while(|i| i.kind == ItemKind::UserMessage)
        .map(|i| i.text.as_str().trim())
        .find(|text| !text.is_empty() && !text.starts_with('<'))
}

/// Items that are the agent calling a tool (a command, an edit, a search, a spawn, …).
fn is_tool_call(kind: &ItemKind) -> bool {
    matches!(
        kind,
        ItemKind::Command
            | ItemKind::FileChange
            | ItemKind::McpTool
            | ItemKind::DynamicTool
            | ItemKind::WebSearch
            | ItemKind::ImageView
            | ItemKind::Collab
    )
}

/// The files its file changes name, each once, in order.
fn files_changed(t: &Thread) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in t.items.iter().filter(|i| i.kind == ItemKind::FileChange) {
        for path in item.title.as_str().split(['\n', ',']).map(str::trim).filter(|p| !p.is_empty()) {
            if out.len() >= text::FILES {
                return out;
            }
            if !out.iter().any(|p| p == path) {
                out.push(text::cap(path, text::TITLE));
            }
        }
    }
    out
}

/// The source file whose name holds the thread's id (a sub-agent's own file, a rollout), else
/// the source's first file.
fn file_of(thread: &str, source: &Source) -> Option<String> {
    let own = source.files.iter().find(|f| {
        f.path.file_name().and_then(|n| n.to_str()).is_some_and(|n| !thread.is_empty() && n.contains(thread))
    });
    own.or(source.files.first()).map(|f| f.path.display().to_string())
}

/// An item as its lane draws it: its kind and text, and the agent's own name for the call, its
/// id, its turn and the threads it names (schema 4: a stored lane reads as the live one did).
fn item(model: &Model, i: &crate::model::Item) -> ItemRow {
    ItemRow {
        id: text::cap(&i.id, text::TITLE),
        kind: kind_name(&i.kind).to_owned(),
        status: status_name(i.status),
        title: text::cap(i.title.as_str(), text::TITLE),
        text: text::cap(i.text.as_str(), text::ITEM),
        at_ms: i.started_ms.or(i.completed_ms),
        turn: i.turn.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
        tool: i.tool.as_deref().map(|t| text::cap(t, text::TITLE)),
        op: i.op,
        exit_code: i.exit_code,
        receivers: i
            .receivers
            .iter()
            .filter(|r| r.index() < model.threads.len())
            .take(text::RECEIVERS)
            .map(|&r| model.thread(r).id.to_string())
            .collect(),
        why: i.why.as_deref().map(|w| text::cap(w.as_str(), text::ITEM)),
    }
}

/// An item's status by Codex's name (the one vocabulary of `wire`).
pub fn status_name(status: ItemStatus) -> &'static str {
    match status {
        ItemStatus::InProgress => "inProgress",
        ItemStatus::Completed => "completed",
        ItemStatus::Failed => "failed",
        ItemStatus::Interrupted => "interrupted",
        ItemStatus::Declined => "declined",
    }
}

/// An item's kind by Codex's `type` name (the one vocabulary of `wire`, which names them).
pub fn kind_name(kind: &ItemKind) -> &str {
    kind.name()
}
