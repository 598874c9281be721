//! `swarmtop tree`: the spawn tree as indented text, readable in a CI log.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::Result;

use super::cli::TreeArgs;
use super::ingest::{ingest, nothing};
use crate::model::{Model, format_usd};
use crate::pipeline::Config;
use crate::router::ThreadIdx;
use crate::ui::status::Shown;
use crate::ui::text::grouped;

pub fn run(args: &TreeArgs, config: Config) -> Result<ExitCode> {
    let pipeline = ingest(&args.inputs, config, &mut nothing())?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(render_tree(&pipeline.model).as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
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

fn node(model: &Model, idx: ThreadIdx, lead: &str, indent: &str, out: &mut String) {
    let t = model.thread(idx);
    let model_name = t.model.as_ref().map_or("?", |m| m.as_str());
    let _ = write!(
        out,
        "{lead}{} {}  {model_name}  {}  turns {}  items {}  {} tok  {}",
        Shown::Is(t.status).glyph(),
        t.name(),
        t.status.as_str(),
        t.turns.len(),
        t.items.len(),
        grouped(t.tokens.total),
        format_usd(t.cost),
    );
    if !t.children.is_empty() {
        let _ = write!(out, "  (subtree {} threads, {})", t.subtree.threads, format_usd(t.subtree.cost_usd()));
    }
    out.push('\n');
    let n = t.children.len();
    for (i, &child) in t.children.iter().enumerate() {
        let last = i + 1 == n;
        let child_lead = format!("{indent}{}", if last { "└─ " } else { "├─ " });
        let child_indent = format!("{indent}{}", if last { "   " } else { "│  " });
        node(model, child, &child_lead, &child_indent, out);
    }
}
