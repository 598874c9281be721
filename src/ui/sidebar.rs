//! The cost sidebar: totals, burn rate, the selected agent's subtree and context fill, then every
//! agent by cost or tokens.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::text::{fit, right, short_model, tokens, truncate, width};
use super::theme::Theme;
use super::view::{Pane, Sort, View};
use crate::model::{Model, Rollup, format_shown, format_usd};

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, totals: &Rollup, view: &mut View) {
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
        // `—` is how an unpriced cost prints; say what it means once, here.
        agents.push(Span::styled(format!(" · {unpriced} unpriced (—)"), theme.warn));
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
        let missing = if unpriced > 0 { format!(" · {unpriced} unpriced") } else { String::new() };
        let name_w = w.saturating_sub(width(&scope) + width(&missing));
        lines.push(Line::from(vec![
            Span::styled(fit(&super::label::of(model, t).name, name_w).trim_end().to_owned(), theme.bold),
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
    let total = model.threads.len().saturating_sub(view.tops.hidden_len());
    // The selected row stays on screen, scrolling as little as possible.
    view.cost_row = view.cost_row.min(total.saturating_sub(1));
    if view.cost_row < view.cost_scroll {
        view.cost_scroll = view.cost_row;
    } else if table_rows > 0 && view.cost_row >= view.cost_scroll + table_rows {
        view.cost_scroll = view.cost_row + 1 - table_rows;
    }
    view.cost_scroll = view.cost_scroll.min(total.saturating_sub(table_rows));
    let scroll = view.cost_scroll;
    let selected_style = if focused { view.theme.selected } else { view.theme.selected_idle };
    let theme = view.theme.clone();
    let top = lines.len();
    super::put_lines(frame, inner, &lines);
    // The table's rows are placed cell by cell, like the tree's: no padding written.
    let order = view.agent_order(model, scroll + table_rows).to_vec();
    view.layout.cost_rows.clear();
    let buf = frame.buffer_mut();
    for (k, (&idx, y)) in order.iter().skip(scroll).take(table_rows).zip(inner.top() + top as u16..).enumerate() {
        view.layout.cost_rows.push((y, idx));
        let t = model.thread(idx);
        let shown = view.shown(model, idx);
        let x = inner.x;
        buf.set_stringn(x, y, shown.glyph(), 1, theme.status(shown));
        buf.set_stringn(
            x + 2,
            y,
            truncate(&super::label::of(model, idx).name, name_w.saturating_sub(3)),
            name_w,
            Style::new(),
        );
        let mut end = w;
        let cost = format_shown(model.shown_cost(idx));
        let style = if t.cost.is_some() { theme.cost } else { theme.dim };
        end = put_right(buf, inner, y, end, cost_w, &cost, style);
        end = put_right(buf, inner, y, end, tok_w, &tokens(t.tokens.total), Style::new());
        if with_model {
            let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
            let mx = end.saturating_sub(model_w) + 1;
            buf.set_stringn(x + mx as u16, y, truncate(m, model_w - 1), model_w - 1, theme.model);
        }
        // Focused, the table has its own cursor (Enter goes to that agent); otherwise it marks
        // the agent the rest of the screen describes.
        let marked = if focused { scroll + k == view.cost_row } else { Some(idx) == focus };
        if marked {
            buf.set_style(Rect { y, height: 1, ..inner }, selected_style);
        }
    }
}

/// Writes `text` right-aligned in the column of `col_w` cells that ends at `end`; returns where
/// the column starts.
fn put_right(buf: &mut Buffer, inner: Rect, y: u16, end: usize, col_w: usize, text: &str, style: Style) -> usize {
    let text = truncate(text, col_w.saturating_sub(1));
    let x = end.saturating_sub(width(&text));
    buf.set_stringn(inner.x + x as u16, y, &text, col_w, style);
    end.saturating_sub(col_w)
}

/// `burn ▁▂▃▅▇█ $0.21/min`: cost added per sample over the last samples, and the rate over the
/// last minute of stream time.
fn burn_line(view: &View, theme: &Theme, w: usize) -> Line<'static> {
    let samples = &view.burn;
    let rate = view.burn_per_min().map(|p| format!("{}/min", format_usd(Some(p))));
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

/// `ctx ███████░░░ 71%` of the selected agent's context window; `ctx 48.2k` when only its used
/// size is known (a Claude transcript never says the window: no bar is made up).
fn gauge(fill: Option<crate::model::ContextFill>, theme: &Theme, w: usize) -> Line<'static> {
    let Some(fill) = fill else {
        return Line::from(Span::styled(" ctx —", theme.dim));
    };
    let Some(ratio) = fill.ratio() else {
        return Line::from(vec![Span::styled(" ctx ", theme.dim), Span::raw(tokens(fill.used))]);
    };
    let pct = (ratio * 100.0).round() as usize;
    let bar_w = w.saturating_sub(11).min(30);
    let filled = ((ratio * bar_w as f64).round() as usize).min(bar_w);
    let style = if pct >= 85 { theme.warn } else { theme.gauge };
    Line::from(vec![
        Span::styled(" ctx ", theme.dim),
        Span::styled("█".repeat(filled), style),
        Span::styled("░".repeat(bar_w - filled), theme.dim),
        Span::raw(format!(" {pct:>3}%")),
    ])
}
