//! The cost sidebar: totals, burn rate, the selected agent's subtree and context fill, then every
//! agent by cost or tokens.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::Feed;
use super::text::{Shown, fit, right, short_model, tokens, width};
use super::theme::Theme;
use super::view::{Pane, Sort, View};
use crate::model::prices::Pico;
use crate::model::{Model, Rollup, format_usd};

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, totals: &Rollup, feed: &Feed, view: &mut View) {
    let focused = view.focus == Pane::Cost && view.overlay.is_none();
    let block = Block::bordered()
        .border_style(if focused { view.theme.border_focus } else { view.theme.border })
        .title(Span::styled(" cost ", view.theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    view.layout.cost = area;
    if inner.height == 0 || inner.width < 10 {
        return;
    }
    let w = inner.width as usize;
    let unpriced = totals.threads.saturating_sub(totals.priced);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let theme = &view.theme;
    lines.push(Line::from(vec![
        Span::styled("total ", theme.dim),
        Span::styled(format_usd(totals.cost_usd()), theme.cost.add_modifier(ratatui::style::Modifier::BOLD)),
        Span::raw(format!("  {} tok", tokens(totals.tokens.total))),
    ]));
    let mut agents = vec![Span::styled(
        format!("{} agent{}", totals.threads, if totals.threads == 1 { "" } else { "s" }),
        theme.dim,
    )];
    if unpriced > 0 {
        agents.push(Span::styled(format!(" · {unpriced} unpriced —"), theme.warn));
    }
    lines.push(Line::from(agents));
    lines.push(burn_line(view, theme, w));
    lines.push(Line::default());
    if let Some(t) = view.focus_thread(model).filter(|t| t.index() < model.threads.len()) {
        let th = model.thread(t);
        let sub = th.subtree;
        let n = sub.threads;
        let scope = if n == 1 { String::new() } else { format!(" · {n} agents") };
        // Unpriced threads are left out of the sum, never counted as $0: say how many.
        let unpriced = sub.threads.saturating_sub(sub.priced);
        let missing = if unpriced > 0 { format!(" · {unpriced} —") } else { String::new() };
        let name_w = w.saturating_sub(width(&scope) + width(&missing));
        lines.push(Line::from(vec![
            Span::styled(fit(&th.name(), name_w).trim_end().to_owned(), theme.bold),
            Span::styled(scope, theme.dim),
            Span::styled(missing, theme.warn),
        ]));
        lines.push(Line::from(vec![
            Span::styled(" subtree ", theme.dim),
            Span::styled(format_usd(sub.cost_usd()), theme.cost),
            Span::raw(format!(" · {} tok", tokens(sub.tokens.total))),
        ]));
        lines.push(gauge(th.context, theme, w));
        lines.push(Line::default());
    }
    let height = inner.height as usize;
    let table_rows = height.saturating_sub(lines.len() + 1);
    let with_model = w >= 34;
    let tok_w = 7;
    let cost_w = 8;
    let model_w = if with_model { 9 } else { 0 };
    let name_w = w.saturating_sub(tok_w + cost_w + model_w);
    let (tok_head, cost_head) = match view.sort {
        Sort::Cost => ("tok", "$▼"),
        Sort::Tokens => ("tok▼", "$"),
    };
    let mut head = fit("  agent", name_w);
    if with_model {
        head.push_str(&fit(" model", model_w));
    }
    head.push_str(&right(tok_head, tok_w));
    head.push_str(&right(cost_head, cost_w));
    lines.push(Line::from(Span::styled(head, theme.dim)));
    let focus = view.focus_thread(model);
    let total = model.threads.len();
    view.cost_scroll = view.cost_scroll.min(total.saturating_sub(table_rows));
    let scroll = view.cost_scroll;
    let selected_style = if focused { view.theme.selected } else { view.theme.selected_idle };
    let theme = view.theme.clone();
    let order = view.agent_order(model);
    for &idx in order.iter().skip(scroll).take(table_rows) {
        let t = model.thread(idx);
        let shown = Shown::of(t, feed.now_ms, feed.stall_ms);
        let mut spans = vec![
            Span::styled(format!("{} ", shown.glyph()), theme.status(shown)),
            Span::raw(fit(&t.name(), name_w.saturating_sub(2))),
        ];
        if with_model {
            let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
            spans.push(Span::styled(format!(" {}", fit(m, model_w - 1)), theme.model));
        }
        spans.push(Span::raw(right(&tokens(t.tokens.total), tok_w)));
        let cost = format_usd(t.cost);
        let style = if t.cost.is_some() { theme.cost } else { theme.dim };
        spans.push(Span::styled(right(&cost, cost_w), style));
        let mut line = Line::from(spans);
        if Some(idx) == focus {
            line = line.patch_style(selected_style);
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// `burn ▁▂▃▅▇█ $0.21/min`: cost added per sample over the last samples, and the rate over the
/// last minute of stream time.
fn burn_line(view: &View, theme: &Theme, w: usize) -> Line<'static> {
    let samples = &view.burn;
    let rate = match (samples.back(), samples.len()) {
        (Some(&(sec, total)), n) if n >= 2 => {
            let from = samples.iter().find(|s| s.0 >= sec - 60).copied().unwrap_or(samples[0]);
            let mins = (sec - from.0) as f64 / 60.0;
            (mins > 0.0).then(|| format!("{}/min", format_usd(Some(Pico(((total - from.1) as f64 / mins) as i128)))))
        }
        _ => None,
    };
    let rate = rate.unwrap_or_else(|| "—/min".to_owned());
    let room = w.saturating_sub(width(&rate) + 7);
    let deltas: Vec<i128> = samples.iter().zip(samples.iter().skip(1)).map(|(a, b)| (b.1 - a.1).max(0)).collect();
    let recent = &deltas[deltas.len().saturating_sub(room)..];
    let peak = recent.iter().copied().max().unwrap_or(0);
    let spark: String = recent
        .iter()
        .map(|&d| if peak == 0 { BARS[0] } else { BARS[((d * 7 + peak / 2) / peak).clamp(0, 7) as usize] })
        .collect();
    Line::from(vec![
        Span::styled("burn ", theme.dim),
        Span::styled(spark.clone(), theme.spark),
        Span::raw(if spark.is_empty() { "" } else { " " }),
        Span::styled(rate, theme.cost),
    ])
}

/// `ctx ███████░░░ 71%` of the selected agent's context window.
fn gauge(fill: Option<crate::model::ContextFill>, theme: &Theme, w: usize) -> Line<'static> {
    let Some(fill) = fill else {
        return Line::from(Span::styled(" ctx —", theme.dim));
    };
    let pct = (fill.ratio() * 100.0).round() as usize;
    let bar_w = w.saturating_sub(11).min(30);
    let filled = ((fill.ratio() * bar_w as f64).round() as usize).min(bar_w);
    let style = if pct >= 85 { theme.warn } else { theme.gauge };
    Line::from(vec![
        Span::styled(" ctx ", theme.dim),
        Span::styled("█".repeat(filled), style),
        Span::styled("░".repeat(bar_w - filled), theme.dim),
        Span::raw(format!(" {pct:>3}%")),
    ])
}
