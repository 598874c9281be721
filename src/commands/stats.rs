//! `swarmtop stats [--json]`: the figures of routing.md §7, as one JSON object or as a table and
//! a tree for people.

use std::fmt::Write as _;
use std::io::Write as IoWrite;
use std::process::ExitCode;

use color_eyre::eyre::Result;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::cli::StatsArgs;
use super::ingest::{ingest_until, nothing};
use super::tree::render_tree;
use crate::model::prices::Pico;
use crate::model::{Model, Reconciled, Tokens, format_shown, format_usd};
use crate::pipeline::{Config, Pipeline};
use crate::router::{Counters, Role, ThreadIdx};
use crate::source::batches::{SESSIONS_PER_BATCH, store_in};
use crate::ui::label;
use crate::ui::text::grouped;

pub mod batched;

pub fn run(args: &StatsArgs, config: Config) -> Result<ExitCode> {
    // Figures, the tree and names only: no item text is printed.
    super::traffic::folders_hold_recordings(&args.inputs)?;
    if args.json
        && let Some(db) = store_in(&args.inputs)
        && let Some(mut read) = batched::read(&db, &config.clone().figures(), args.until.until, SESSIONS_PER_BATCH)?
    {
        if read.error.is_none() && args.until.until.is_none() {
            read.required(&args.inputs)?;
        }
        // The figures of what was read are printed, then why reading stopped.
        let error = read.error.take();
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        read.write(&mut out).and_then(|()| out.flush()).map_err(super::stdout_error)?;
        return error.map_or(Ok(ExitCode::SUCCESS), Err);
    }
    let (pipeline, error) = ingest_until(&args.inputs, config.figures(), args.until.until, &mut nothing())?;
    // Cut at a time, the stream may hold nothing yet: that is an answer, not bad input.
    if error.is_none() && args.until.until.is_none() {
        super::traffic::required(&args.inputs, &pipeline)?;
    }
    if args.json {
        // Written as it is serialised: the whole text of 1M threads held at once, with the model,
        // was most of `stats`' peak on a large OpenCode store (issue 22).
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        write_json(&pipeline, &mut out).and_then(|()| out.flush()).map_err(super::stdout_error)?;
    } else {
        super::print(render_text(&pipeline).as_bytes())?;
    }
    error.map_or(Ok(ExitCode::SUCCESS), Err)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsJson<'a> {
    input: InputJson,
    routing: RoutingJson,
    threads: ThreadsJson<'a>,
    totals: TotalsJson,
    /// What the bounds dropped; only there when they dropped something.
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped: Option<DroppedJson>,
}

/// Every thread, in first-seen order, each made as it is written: a list of them all took as much
/// again as the model (issue 22).
struct ThreadsJson<'a>(&'a Model);

impl Serialize for ThreadsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let model = self.0;
        serializer.collect_seq((0..model.threads.len()).map(|i| thread_json(model, ThreadIdx(i as u32))))
    }
}

#[derive(Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
struct DroppedJson {
    lines_over_thread_limit: u64,
    /// Items the items-per-thread bound forgot (still counted in their thread's items).
    item_lines: u64,
    /// Turns the turns-per-thread bound forgot (still counted in their thread's turns).
    turns: u64,
    text_bytes: u64,
    /// Streamed responses forgotten by lowering's bound (their last block kept, their final
    /// output figure lost).
    open_responses: u64,
    /// Sub-agents' spawning tool uses forgotten by lowering's bound (their lines the session's).
    spawning_tasks: u64,
    /// Agents an item named that the bound on late names dropped before they appeared.
    unnamed_receivers: u64,
}

impl DroppedJson {
    fn of(pipeline: &Pipeline) -> Option<Self> {
        Some(Self::counted(pipeline)).filter(|d| *d != Self::default())
    }

    /// What the bounds dropped, nothing included.
    fn counted(pipeline: &Pipeline) -> Self {
        let d = &pipeline.model.diagnostics;
        let c = pipeline.counters();
        Self {
            lines_over_thread_limit: c.over_thread_limit,
            item_lines: d.dropped_items,
            turns: d.dropped_turns,
            text_bytes: d.dropped_text_bytes,
            open_responses: c.forgotten.responses,
            spawning_tasks: c.forgotten.tasks,
            unnamed_receivers: d.dropped_receivers,
        }
    }

    fn plus(&self, o: &Self) -> Self {
        let add = u64::saturating_add;
        Self {
            lines_over_thread_limit: add(self.lines_over_thread_limit, o.lines_over_thread_limit),
            item_lines: add(self.item_lines, o.item_lines),
            turns: add(self.turns, o.turns),
            text_bytes: add(self.text_bytes, o.text_bytes),
            open_responses: add(self.open_responses, o.open_responses),
            spawning_tasks: add(self.spawning_tasks, o.spawning_tasks),
            unnamed_receivers: add(self.unnamed_receivers, o.unnamed_receivers),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InputJson {
    lines: u64,
    bytes: u64,
    format: &'static str,
    /// Inputs closed to stay under the merge's bound of open files and opened again: said only
    /// when some were.
    #[serde(skip_serializing_if = "is_zero")]
    reopened: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if hands a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RoutingJson {
    root: u64,
    rehomed: u64,
    suppressed: u64,
    global: u64,
    control: u64,
    malformed: u64,
    early: u64,
    replayed: u64,
    evicted: u64,
    pending_at_end: u64,
    orphan_threads: u64,
    depth_limited: u64,
}

impl From<Counters> for RoutingJson {
    fn from(c: Counters) -> Self {
        Self {
            root: c.root,
            rehomed: c.rehomed,
            suppressed: c.suppressed,
            global: c.global,
            control: c.control,
            malformed: c.malformed,
            early: c.early,
            replayed: c.replayed,
            evicted: c.evicted,
            pending_at_end: c.pending_at_end,
            orphan_threads: c.orphan_threads,
            depth_limited: c.depth_limited,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokensJson {
    input: u64,
    cached_input: u64,
    output: u64,
    reasoning_output: u64,
    total: u64,
}

impl From<&Tokens> for TokensJson {
    fn from(t: &Tokens) -> Self {
        Self {
            input: t.input,
            cached_input: t.cached_input,
            output: t.output,
            reasoning_output: t.reasoning_output,
            total: t.total,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThreadJson<'a> {
    id: &'a str,
    parent: Option<&'a str>,
    root: Option<&'a str>,
    depth: u32,
    via: Option<&'static str>,
    card: Option<&'a str>,
    /// Its own name (a nickname, an agent path), else its short id.
    name: String,
    /// What the screen, `tree` and the table call it (`Tesla (planner)`, a root's prompt).
    label: String,
    model: Option<&'a str>,
    status: &'static str,
    turns: usize,
    items: usize,
    tokens: TokensJson,
    /// What it spent (`null`: tokens with no price and no figure from the agent).
    cost_usd: Option<Box<RawValue>>,
    /// Where `costUsd` came from: `table` (the price table), `agent` (the agent's own figure, for a
    /// model the table does not know), `none` (it used nothing), `unpriced`.
    cost_source: &'static str,
    /// The thread and its descendants; a session's root's includes its unattributed part.
    subtree: SubtreeJson,
    /// A session whose agent reported its own totals: those, and the part no thread accounts for.
    #[serde(skip_serializing_if = "Option::is_none")]
    reported: Option<ReportedJson>,
    /// swarmtop asked it to stop: who, and why (`guard: depth 3 > 2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportedJson {
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
    /// Reported, less what the session's threads account for: shown as the session's own
    /// unattributed part, never added to an agent.
    unattributed: UnattributedJson,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UnattributedJson {
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
}

impl From<Reconciled> for ReportedJson {
    fn from(r: Reconciled) -> Self {
        Self {
            tokens: (&r.reported).into(),
            cost_usd: money(r.reported_cost),
            unattributed: UnattributedJson { tokens: (&r.unattributed).into(), cost_usd: money(r.unattributed_cost) },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SubtreeJson {
    threads: u32,
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
    /// `table`, `agent`, `mixed` (some of each) or `none`.
    cost_source: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TotalsJson {
    threads: u32,
    /// What was spent, every session's unattributed part included (the agents' own totals).
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
    /// `table`, `agent`, `mixed` (some of each) or `none`.
    cost_source: &'static str,
    /// Threads whose tokens have no price and no figure from the agent (left out of `costUsd`).
    unpriced_threads: usize,
}

/// Money as an exact JSON number (12 decimal places at most), never through binary floats.
pub(super) fn money(cost: Option<Pico>) -> Option<Box<RawValue>> {
    cost.map(|c| RawValue::from_string(c.to_string()).expect("a decimal is a JSON number"))
}

/// What `stats --json` prints: one JSON object and a newline.
pub fn render_json(pipeline: &Pipeline) -> String {
    let mut out = Vec::new();
    write_json(pipeline, &mut out).expect("stats serialise");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`render_json`], written to `out` as it is made.
pub fn write_json(pipeline: &Pipeline, out: &mut impl IoWrite) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &stats_json(pipeline))?;
    out.write_all(b"\n")
}

/// The same object, indented (for reading and for snapshots); numbers are as exact as above.
pub fn render_json_pretty(pipeline: &Pipeline) -> String {
    let mut out = serde_json::to_string_pretty(&stats_json(pipeline)).expect("stats serialise");
    out.push('\n');
    out
}

fn stats_json(pipeline: &Pipeline) -> StatsJson<'_> {
    let model = &pipeline.model;
    let counters = pipeline.counters();
    let threads = ThreadsJson(model);
    let totals = model.totals();
    StatsJson {
        input: InputJson {
            lines: counters.lines,
            bytes: pipeline.bytes,
            format: pipeline.format(),
            reopened: pipeline.reopened,
        },
        routing: counters.into(),
        dropped: DroppedJson::of(pipeline),
        threads,
        totals: TotalsJson {
            threads: totals.threads,
            tokens: (&totals.tokens).into(),
            cost_usd: money(totals.cost_usd()),
            cost_source: totals.source().as_str(),
            unpriced_threads: model.unpriced_threads(),
        },
    }
}

fn thread_json(model: &Model, idx: ThreadIdx) -> ThreadJson<'_> {
    let t = model.thread(idx);
    let spent = model.spent(idx);
    let id_of = |i: ThreadIdx| &*model.thread(i).id;
    let (parent, root, depth, via, card) = match t.role {
        Role::Root => (None, Some(&*t.id), 0, None, None),
        Role::Child => (
            t.parent.map(id_of),
            model.root_of(idx).map(id_of),
            t.depth,
            t.via.map(crate::router::Via::as_str),
            t.card.as_deref(),
        ),
        Role::Orphan => (None, None, 0, Some("orphan"), None),
        Role::Pending => (None, None, 0, None, None),
    };
    ThreadJson {
        id: &t.id,
        parent,
        root,
        depth,
        via,
        card,
        name: t.name(),
        label: label::of(model, idx).name,
        model: t.model.as_ref().map(crate::wire::Clean::as_str),
        status: t.word(),
        turns: t.turns.len(),
        items: t.items.len(),
        tokens: (&t.tokens).into(),
        cost_usd: money(t.cost),
        cost_source: t.cost_source.as_str(),
        subtree: SubtreeJson {
            threads: spent.threads,
            tokens: (&spent.tokens).into(),
            cost_usd: money(spent.cost_usd()),
            cost_source: spent.source().as_str(),
        },
        reported: (t.role == Role::Root).then(|| model.reconciled(idx)).flatten().map(Into::into),
        stopped_by: t.stopped_by.as_ref().map(crate::wire::Clean::as_str),
    }
}

/// The same figures for people: a summary, a table of threads, then the tree.
pub fn render_text(pipeline: &Pipeline) -> String {
    let model = &pipeline.model;
    let c = pipeline.counters();
    let mut out = String::new();
    let _ = writeln!(out, "input    {} lines, {} bytes, {}", c.lines, pipeline.bytes, pipeline.format());
    let _ = writeln!(
        out,
        "routing  root {} · rehomed {} · suppressed {} · global {} · control {} · malformed {}",
        c.root, c.rehomed, c.suppressed, c.global, c.control, c.malformed
    );
    let _ = writeln!(
        out,
        "pending  early {} · replayed {} · evicted {} · pending at end {} · orphans {} · depth-limited {}",
        c.early, c.replayed, c.evicted, c.pending_at_end, c.orphan_threads, c.depth_limited
    );
    if let Some(d) = DroppedJson::of(pipeline) {
        let _ = writeln!(
            out,
            "bounds   dropped: {} lines over the thread limit · {} item lines · {} text bytes · {} open responses · {} spawning tasks · {} unnamed receivers",
            d.lines_over_thread_limit,
            d.item_lines,
            d.text_bytes,
            d.open_responses,
            d.spawning_tasks,
            d.unnamed_receivers
        );
    }
    let totals = model.totals();
    let unpriced = model.unpriced_threads();
    let _ = writeln!(
        out,
        "totals   {} threads · {} tokens · {}{}",
        totals.threads,
        grouped(totals.tokens.total),
        format_usd(totals.cost_usd()),
        if unpriced > 0 { format!(" ({unpriced} unpriced)") } else { String::new() }
    );
    out.push('\n');
    out.push_str(&thread_table(model));
    for (i, t) in model.threads.iter().enumerate() {
        let idx = ThreadIdx(i as u32);
        let Some(r) = (t.role == Role::Root).then(|| model.reconciled(idx)).flatten() else { continue };
        let _ = writeln!(
            out,
            "\nreported by the agent for session {}: {} tokens · {}; unattributed (no agent's): {} tokens · {}",
            label::text(model, idx),
            grouped(r.reported.total),
            format_usd(r.reported_cost),
            grouped(r.unattributed.total),
            format_usd(r.unattributed_cost),
        );
    }
    out.push('\n');
    out.push_str(&render_tree(model));
    out
}

/// One row per thread: name, model, status, depth, turns, items, tokens, cost, subtree cost.
fn thread_table(model: &Model) -> String {
    let mut out = String::new();
    let rows: Vec<[String; 9]> = model
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let idx = ThreadIdx(i as u32);
            [
                label::text(model, idx),
                t.model.as_ref().map_or("?".to_owned(), ToString::to_string),
                t.word().to_owned(),
                match t.role {
                    Role::Orphan => "orphan".to_owned(),
                    Role::Pending => "pending".to_owned(),
                    _ => t.depth.to_string(),
                },
                t.turns.len().to_string(),
                t.items.len().to_string(),
                grouped(t.tokens.total),
                format_shown(model.shown_cost(idx)),
                format_usd(model.spent(idx).cost_usd()),
            ]
        })
        .collect();
    let header = ["agent", "model", "status", "depth", "turns", "items", "tokens", "cost", "subtree"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            // Names and words align left, figures right.
            if i < 3 {
                let _ = write!(l, "{cell}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(l, "{}{cell}  ", " ".repeat(pad));
            }
        }
        l.trim_end().to_owned()
    };
    let _ = writeln!(out, "{}", line(&header));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
    out
}
