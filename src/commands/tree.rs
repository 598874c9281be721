//! `swarmtop tree`: the spawn tree as indented text, readable in a CI log.

use std::fmt::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::Result;

use super::cli::TreeArgs;
use super::ingest::{ingest_until, nothing};
use crate::model::prices::Pico;
use crate::model::{Model, Rollup, format_shown, format_usd};
use crate::pipeline::Config;
use crate::router::{Role, ThreadIdx};
use crate::ui::label;
use crate::ui::status::Shown;
use crate::ui::text::{grouped, truncate};

pub fn run(args: &TreeArgs, config: Config) -> Result<ExitCode> {
    // The tree and its names only: no item text is printed.
    super::traffic::folders_hold_recordings(&args.inputs)?;
    let (pipeline, error) = ingest_until(&args.inputs, config.figures(), args.until.until, &mut nothing())?;
    // Cut at a time, the stream may hold nothing yet: that is an answer, not bad input.
    if error.is_none() && args.until.until.is_none() {
        super::traffic::required(&args.inputs, &pipeline)?;
    }
    super::print(render_tree(&pipeline.model).as_bytes())?;
    error.map_or(Ok(ExitCode::SUCCESS), Err)
}

/// Every session with its descendants, then the unattributed threads and anything still pending.
pub fn render_tree(model: &Model) -> String {
    let mut out = String::new();
    for &root in &model.sessions {
        node(model, root, "", "", &mut out);
    }
    if !model.unattributed.is_empty() {
        let _ = writeln!(out, "unattributed");
        let n = model.unattributed.len();
        for (i, &orphan) in model.unattributed.iter().enumerate() {
            let last = i + 1 == n;
            node(model, orphan, if last { "└─ " } else { "├─ " }, if last { "   " } else { "│  " }, &mut out);
        }
    }
    let pending: Vec<_> = model.threads.iter().filter(|t| t.role == crate::router::Role::Pending).collect();
    if !pending.is_empty() {
        let _ = writeln!(out, "pending: {}", pending.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "));
    }
    if out.is_empty() {
        out.push_str("(no threads)\n");
    }
    out
}

/// Columns of a refused call's reason on its line: its head says what went wrong (`Agent type
/// '…' not found`); the rest is the CLI's list of what it has.
const REASON_COLUMNS: usize = 100;

/// A thread's spawn calls that failed and started no agent, each on a line under it with the
/// agent's own reason (issue 19): no agent's line says they happened, and `history SESSION`
/// prints this tree as the sync stored it.
fn refused_calls(t: &crate::model::Thread, indent: &str, out: &mut String) {
    let refused = t.items.iter().filter(|i| {
        i.op == Some(crate::model::AgentOp::Spawn) && i.status == crate::model::ItemStatus::Failed && i.lanes.is_empty()
    });
    for call in refused {
        let tool = call.tool.as_deref().unwrap_or("spawn");
        let why = call.why.as_deref().map(|w| w.as_str().split_whitespace().collect::<Vec<_>>().join(" "));
        let why = why.filter(|w| !w.is_empty()).map(|w| format!(": {}", truncate(&w, REASON_COLUMNS)));
        let _ = writeln!(out, "{indent}✗ {tool} failed{}", why.unwrap_or_default());
    }
}

/// Levels of indentation drawn; deeper threads are drawn at this indent with their depth written
/// out, so that a chain thousands deep prints in linear, not quadratic, space.
const DRAWN_LEVELS: usize = 48;

/// A line of the tree: a thread, or a session's unattributed part (its root's last child).
enum Line {
    Thread(ThreadIdx),
    Unattributed(ThreadIdx),
}

/// One thread and its descendants, depth first. The walk keeps its own stack: a chain registered
/// child-first can be far deeper than the call stack allows.
fn node(model: &Model, idx: ThreadIdx, lead: &str, indent: &str, out: &mut String) {
    let mut stack = vec![(Line::Thread(idx), 0usize, lead.to_owned(), indent.to_owned())];
    while let Some((line, level, lead, indent)) = stack.pop() {
        let idx = match line {
            Line::Thread(idx) => idx,
            Line::Unattributed(root) => {
                let part = model.unattributed_part(root);
                let _ = writeln!(
                    out,
                    "{lead}+ unattributed  {} tok  {} (agent)",
                    grouped(part.tokens.total),
                    format_usd(Some(part.cost))
                );
                continue;
            }
        };
        let t = model.thread(idx);
        let model_name = t.model.as_ref().map_or("?", |m| m.as_str());
        if level > DRAWN_LEVELS {
            let _ = write!(out, "{indent}[level {level}] ");
        } else {
            out.push_str(&lead);
        }
        let _ = write!(
            out,
            "{} {}  {model_name}  {}  turns {}  items {}  {} tok  {}",
            Shown::Is(t.status).glyph(),
            label::text(model, idx),
            t.word(),
            t.turns.len(),
            t.items.len(),
            grouped(t.tokens.total),
            format_shown(model.shown_cost(idx)),
        );
        let part = if t.role == Role::Root { model.unattributed_part(idx) } else { Rollup::default() };
        let unattributed = part.tokens.total > 0 || part.cost > Pico::default();
        if !t.children.is_empty() || unattributed {
            let spent = model.spent(idx);
            let _ = write!(out, "  (subtree {} threads, {})", spent.threads, format_usd(spent.cost_usd()));
        }
        if let Some(by) = &t.stopped_by {
            let _ = write!(out, "  stopped by {by}");
        }
        out.push('\n');
        let mut kids: Vec<Line> = t.children.iter().map(|&c| Line::Thread(c)).collect();
        if unattributed {
            kids.push(Line::Unattributed(idx));
        }
        refused_calls(t, &format!("{indent}{}", if kids.is_empty() { "   " } else { "│  " }), out);
        let n = kids.len();
        // Pushed last child first, so the first child is drawn next.
        for (i, kid) in kids.into_iter().enumerate().rev() {
            let last = i + 1 == n;
            let (child_lead, child_indent) = if level >= DRAWN_LEVELS {
                (String::new(), indent.clone())
            } else {
                (
                    format!("{indent}{}", if last { "└─ " } else { "├─ " }),
                    format!("{indent}{}", if last { "   " } else { "│  " }),
                )
            };
            stack.push((kid, level + 1, child_lead, child_indent));
        }
    }
}
