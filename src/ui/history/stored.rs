//! A past session as the run store keeps it, for a session whose files are gone: its runs as a
//! tree with their figures on the left, the selected run on the right (what it was asked, its
//! items as its lane showed them, in the agent's own words and headed by turn, its answer, the
//! files it changed), scrolled from the top. What
//! was done to the session (interrupts, a guard's refusals: the store's acts) marks the run it was
//! aimed at and heads that run's text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear};

use super::list::message;
use super::{HistoryView, Opened, PastAct, PastRun, Stored, shown};
use crate::model::format_usd;
use crate::ui::lanes::stored_item_lines;
use crate::ui::layout::{Layout, scrolled};
use crate::ui::paint::put_lines;
use crate::ui::text::{self, duration, right, short_model, tokens, truncate, wrap_line};
use crate::ui::theme::Theme;
use crate::ui::view::View;

/// Columns of a run's figures in the tree: tokens, cost.
const FIGURES_W: usize = 16;

/// Columns of an agent's name where an item names it (a live lane's too).
const RECEIVER_W: usize = 24;

/// Marks a run something was done to (an interrupt, a guard's refusal): its acts are in its text.
const ACT: &str = "⊘";

pub fn draw(frame: &mut Frame, area: Rect, view: &View, layout: &mut Layout) {
    let (h, theme) = (&view.history, &view.theme);
    frame.render_widget(Clear, area);
    layout.history = area;
    let stored = match &h.opened {
        Some(Opened::Ready(s)) => s,
        Some(Opened::Opening(id)) => {
            let text = format!("opening {id}…");
            return message(frame, area, vec![Line::from(Span::styled(text, theme.dim))]);
        }
        Some(Opened::Failed(why)) => {
            let lines = vec![
                Line::from(Span::styled("the session could not be opened", theme.error)),
                Line::from(Span::styled(why.clone(), theme.dim)),
                Line::from(Span::styled("Esc: back to the list", theme.dim)),
            ];
            return message(frame, area, lines);
        }
        None => return,
    };
    let tree_w = ((area.width * 2) / 5).clamp(30.min(area.width), 64);
    let tree = Rect { width: tree_w, ..area };
    let detail = Rect { x: area.x + tree_w, width: area.width - tree_w, ..area };
    draw_tree(frame, tree, stored, h, theme, layout);
    draw_run(frame, detail, stored, h, theme, layout);
}

fn draw_tree(frame: &mut Frame, area: Rect, s: &Stored, h: &HistoryView, theme: &Theme, layout: &mut Layout) {
    let p = &s.session;
    let title = format!(" {} from the store ", p.id.as_str().chars().take(8).collect::<String>());
    let bottom = format!(" {} tok · {} ", tokens(p.tokens.total), format_usd(p.cost));
    let mut block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title))
        .title_bottom(Span::styled(bottom, theme.cost));
    if !s.acts.is_empty() {
        let n = s.acts.len();
        let acts = format!(" {ACT} {n} act{} ", if n == 1 { "" } else { "s" });
        block = block.title_bottom(Span::styled(acts, theme.warn));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let name_w = width.saturating_sub(FIGURES_W);
    let selected = h.run.min(s.runs.len().saturating_sub(1));
    let offset = scrolled(layout.history_offset, selected, s.runs.len(), inner.height as usize);
    layout.history_offset = offset;
    let lines: Vec<Line<'static>> = s
        .runs
        .iter()
        .enumerate()
        .skip(offset)
        .take(inner.height as usize)
        .map(|(i, r)| {
            let base = if i == selected { theme.selected } else { Style::default() };
            let status = shown(r.status.as_str(), r.child);
            let indent = "  ".repeat(r.depth.min(12) as usize);
            let name = format!("{indent}{} {}", status.glyph(), r.name);
            // Right after the name, which gives way to it.
            let mark = if s.acts_on(i).next().is_some() { format!(" {ACT}") } else { String::new() };
            let name = truncate(&name, name_w.saturating_sub(text::width(&mark)));
            let pad = " ".repeat(name_w.saturating_sub(text::width(&name) + text::width(&mark)));
            Line::from(vec![
                Span::styled(name, base.patch(theme.status(status))),
                Span::styled(mark, base.patch(theme.warn)),
                Span::styled(pad, base),
                Span::styled(right(&tokens(r.tokens.total), 7), base),
                Span::styled(right(&format_usd(r.cost), FIGURES_W - 7), base.patch(theme.cost)),
            ])
        })
        .collect();
    put_lines(frame, inner, &lines);
}

/// A run's facts on one line: its kind, model, time, turns and tool calls.
fn facts(r: &PastRun) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(t) = &r.agent_type {
        parts.push(t.to_string());
    }
    if let Some(m) = &r.model {
        parts.push(short_model(m.as_str()).to_owned());
    }
    if let Some(ms) = r.elapsed_ms {
        parts.push(duration(ms));
    }
    parts.push(format!("{} turn{}", r.turns, if r.turns == 1 { "" } else { "s" }));
    parts.push(format!("{} tool call{}", r.tool_calls, if r.tool_calls == 1 { "" } else { "s" }));
    parts.join(" · ")
}

/// The run's whole text, wrapped to `width`: what was done to it, brief, items, answer, files
/// changed.
fn text_lines(r: &PastRun, acts: &[&PastAct], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let wrapped = |text: &str, style: Style, out: &mut Vec<Line<'static>>| {
        let mut rows = Vec::new();
        for line in text.lines() {
            wrap_line(line, width, &mut rows);
        }
        out.extend(rows.into_iter().map(|row| Line::from(Span::styled(row, style))));
    };
    out.push(Line::from(Span::styled(facts(r), theme.dim)));
    let t = &r.tokens;
    let spend = format!(
        "{} · {} tok (in {} · cached {} · out {})",
        format_usd(r.cost),
        tokens(t.total),
        tokens(t.input),
        tokens(t.cached_input),
        tokens(t.output),
    );
    out.push(Line::from(Span::styled(spend, theme.cost)));
    if !acts.is_empty() {
        out.push(Line::default());
        out.push(Line::from(Span::styled(format!("{ACT} acts"), theme.title)));
        for a in acts {
            wrapped(&a.line(), theme.warn, &mut out);
        }
    }
    if let Some(brief) = &r.brief {
        out.push(Line::default());
        out.push(Line::from(Span::styled("brief", theme.title)));
        wrapped(brief.as_str(), theme.user, &mut out);
    }
    if !r.entries.is_empty() {
        out.push(Line::default());
    }
    let mut turn = None;
    for entry in &r.entries {
        // Each turn headed where its items begin, as the tree lists a run's turns.
        if entry.turn.is_some() && entry.turn != turn {
            turn = entry.turn;
            out.push(turn_rule(entry.turn.unwrap_or_default(), width, theme));
        }
        let names: Vec<String> = entry.receivers.iter().map(|n| truncate(n.as_str(), RECEIVER_W)).collect();
        out.extend(stored_item_lines(&entry.item(), &names, width, theme));
    }
    if let Some(answer) = &r.answer {
        out.push(Line::default());
        out.push(Line::from(Span::styled("answer", theme.title)));
        wrapped(answer.as_str(), theme.base, &mut out);
    }
    if !r.files_changed.is_empty() {
        out.push(Line::default());
        out.push(Line::from(Span::styled("files changed", theme.title)));
        for f in &r.files_changed {
            out.push(Line::from(Span::styled(truncate(&format!("  {f}"), width), theme.dim)));
        }
    }
    out
}

/// A turn's heading in a run's text: `── turn 2 ─────`, across the pane.
fn turn_rule(turn: u32, width: usize, theme: &Theme) -> Line<'static> {
    let label = format!("── turn {} ", u64::from(turn) + 1);
    let rule = "─".repeat(width.saturating_sub(text::width(&label)));
    Line::from(Span::styled(truncate(&format!("{label}{rule}"), width), theme.dim))
}

fn draw_run(frame: &mut Frame, area: Rect, s: &Stored, h: &HistoryView, theme: &Theme, layout: &mut Layout) {
    let Some(r) = s.runs.get(h.run.min(s.runs.len().saturating_sub(1))) else {
        let block = Block::bordered().border_style(theme.border_focus);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let line = Line::from(Span::styled("the store holds no run of this session", theme.dim));
        return message(frame, inner, vec![line]);
    };
    let status = shown(r.status.as_str(), r.child);
    let title = format!(" {} {} · {} ", status.glyph(), r.name, status.word());
    let block = Block::bordered()
        .border_style(theme.border_focus)
        .title(Span::styled(title, theme.title))
        .title_bottom(Span::styled(" ↑↓ run · PgUp/PgDn scroll · Esc back ", theme.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let acts: Vec<&PastAct> = s.acts_on(h.run.min(s.runs.len().saturating_sub(1))).collect();
    let lines = text_lines(r, &acts, inner.width as usize, theme);
    let scroll = h.scroll.min(lines.len().saturating_sub(inner.height as usize));
    layout.history_scroll = Some(scroll);
    put_lines(frame, inner, &lines[scroll..]);
}
