//! The cost sidebar: totals, burn rate, the selected agent's subtree and context fill, then every
//! agent by cost or tokens.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::layout::{Layout, scrolled};
use super::paint::{put_lines, put_right};
use super::scene::Scene;
use super::text::{cost_text, fit, right, short_model, tokens, truncate, width};
use super::theme::Theme;
use super::view::{Pane, Sort, View};
use crate::model::{Model, ShownCost, format_usd};
use crate::router::ThreadIdx;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Columns of the cost table, right to left: cost, tokens, then the model where it fits.
const COST_W: usize = 8;
const TOK_W: usize = 7;
const MODEL_W: usize = 9;
/// From this inner width the table has a model column (and this much more with a session column).
const MODEL_FROM: usize = 34;
const SESSION_W: usize = 10;

pub fn draw(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let (model, view) = (s.model, s.view);
    let focused = view.panes.focus == Pane::Cost && view.panes.overlay.is_none();
    let block = Block::bordered()
        .border_style(if focused { view.theme.border_focus } else { view.theme.border })
        .title(Span::styled(" cost ", view.theme.title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    layout.cost = area;
    if inner.height == 0 || inner.width < 10 {
        return;
    }
    let w = inner.width as usize;
    let mut lines = totals_lines(s, w);
    if let Some(t) = view.focus_thread(model).filter(|t| t.index() < model.threads.len()) {
        lines.extend(focus_lines(model, t, &view.theme, w));
    }
    let table_rows = (inner.height as usize).saturating_sub(lines.len() + 1);
    lines.push(table_head(view, w));
    // The scroll that keeps the cursor on screen is at most where the cursor or the last scroll
    // is: the rows down to there and a screenful are all the table may show.
    let need = view.panes.cost_scroll.max(view.selection.cost_row) + table_rows;
    let order = view.agent_order(model, need);
    // The selected row stays on screen, scrolling as little as possible.
    let scroll = scrolled(view.panes.cost_scroll, view.selection.cost_row, order.listed, table_rows);
    layout.cost_scroll = Some(scroll);
    layout.cost_listed = Some(order.listed);
    let top = lines.len() as u16;
    put_lines(frame, inner, &lines);
    let table = Rect { y: inner.y + top, height: inner.height.saturating_sub(top), ..inner };
    let shown = order.first.iter().copied().skip(scroll).take(table_rows);
    table_body(frame, table, s, (scroll, shown), layout);
}

/// `total $0.20  55.8k tok`, how many agents (and unpriced), the burn line, a blank.
fn totals_lines(s: &Scene<'_>, w: usize) -> Vec<Line<'static>> {
    let (totals, theme) = (&s.totals, &s.view.theme);
    let unpriced = totals.threads.saturating_sub(totals.priced);
    let mut agents = vec![Span::styled(
        format!("{} agent{}", totals.threads, if totals.threads == 1 { "" } else { "s" }),
        theme.dim,
    )];
    if unpriced > 0 {
        // `—` is how an unpriced cost prints; say what it means once, here.
        agents.push(Span::styled(format!(" · {unpriced} unpriced (—)"), theme.warn));
    }
    let mut lines = vec![
        Line::from(vec![
            Span::styled("total ", theme.dim),
            Span::styled(format_usd(totals.cost_usd()), theme.cost.add_modifier(ratatui::style::Modifier::BOLD)),
            Span::raw(format!("  {} tok", tokens(totals.tokens.total))),
        ]),
        Line::from(agents),
    ];
    // The table lists agents: the part of the total no agent can be credited with is said here,
    // so that the rows and this line sum to the total.
    let part = s
        .model
        .sessions
        .iter()
        .fold(crate::model::Rollup::default(), |sum, &r| sum.plus(&s.model.unattributed_part(r)));
    if part.tokens.total > 0 || part.cost > crate::model::prices::Pico::default() {
        lines.push(Line::from(Span::styled(
            format!("incl. unattributed {} · {} tok", format_usd(Some(part.cost)), tokens(part.tokens.total)),
            theme.dim,
        )));
    }
    lines.push(burn_line(s.view, theme, w));
    lines.push(Line::default());
    lines
}

/// The agent the screen describes: its name and subtree's figures, its context fill, a blank.
fn focus_lines(model: &Model, t: ThreadIdx, theme: &Theme, w: usize) -> Vec<Line<'static>> {
    let th = model.thread(t);
    let sub = model.spent(t);
    let n = sub.threads;
    let scope = if n == 1 { String::new() } else { format!(" · {n} agents") };
    // Unpriced threads are left out of the sum, never counted as $0: say how many.
    let unpriced = sub.threads.saturating_sub(sub.priced);
    let missing = if unpriced > 0 { format!(" · {unpriced} unpriced") } else { String::new() };
    let name_w = w.saturating_sub(width(&scope) + width(&missing));
    vec![
        Line::from(vec![
            Span::styled(fit(&super::label::of(model, t).name, name_w).trim_end().to_owned(), theme.bold),
            Span::styled(scope, theme.dim),
            Span::styled(missing, theme.warn),
        ]),
        Line::from(vec![
            Span::styled(" subtree ", theme.dim),
            Span::styled(format_usd(sub.cost_usd()), theme.cost),
            Span::raw(format!(" · {} tok", tokens(sub.tokens.total))),
        ]),
        gauge(th.context, theme, w),
        Line::default(),
    ]
}

/// The table's columns for an inner width of `w`, left to right: the agent, its session (the
/// machine view: one table over many sessions), its model where it fits, tokens and cost.
#[derive(Clone, Copy)]
struct Columns {
    name: usize,
    session: usize,
    model: usize,
}

impl Columns {
    fn of(w: usize, machine: bool) -> Self {
        let session = if machine { SESSION_W } else { 0 };
        // The session column goes first: it tells apart the same `lead` in several sessions.
        let model = if w >= MODEL_FROM + session { MODEL_W } else { 0 };
        Self { name: w.saturating_sub(TOK_W + COST_W + model + session), session, model }
    }
}

/// The table's head: its columns, the sorted one marked `▼`.
fn table_head(view: &View, w: usize) -> Line<'static> {
    let cols = Columns::of(w, view.derived.machine);
    let (tok_head, cost_head) = match view.panes.sort {
        Sort::Cost => ("tok", "$▼"),
        Sort::Tokens => ("tok▼", "$"),
    };
    let mut head = fit("  agent", cols.name);
    if cols.session > 0 {
        head.push_str(&fit("session", cols.session));
    }
    if cols.model > 0 {
        head.push_str(&fit(" model", cols.model));
    }
    head.push_str(&right(tok_head, TOK_W));
    head.push_str(&right(cost_head, COST_W));
    Line::from(Span::styled(head, view.theme.dim))
}

/// The table's rows from `scroll` on, placed cell by cell like the tree's (no padding written).
fn table_body(
    frame: &mut Frame,
    area: Rect,
    s: &Scene<'_>,
    (scroll, rows): (usize, impl Iterator<Item = ThreadIdx>),
    layout: &mut Layout,
) {
    let (model, view) = (s.model, s.view);
    let theme = &view.theme;
    let w = area.width as usize;
    let cols = Columns::of(w, view.derived.machine);
    let focused = view.panes.focus == Pane::Cost && view.panes.overlay.is_none();
    let selected_style = if focused { theme.selected } else { theme.selected_idle };
    let focus = view.focus_thread(model);
    let buf = frame.buffer_mut();
    for (k, (idx, y)) in rows.zip(area.top()..).enumerate() {
        layout.cost_rows.push((y, idx));
        let t = model.thread(idx);
        let shown = view.shown(model, idx);
        buf.set_stringn(area.x, y, shown.glyph(), 1, theme.status(shown));
        let name = truncate(&super::label::of(model, idx).name, cols.name.saturating_sub(3));
        buf.set_stringn(area.x + 2, y, name, cols.name, Style::new());
        if cols.session > 0 {
            let root = model.ancestors(idx).last().unwrap_or(idx);
            let session = truncate(&super::label::of(model, root).name, cols.session - 1);
            buf.set_stringn(area.x + cols.name as u16, y, session, cols.session - 1, theme.dim);
        }
        // The agent's own figure for a model the table lacks is marked `*`, as in the tree.
        let cost = match model.shown_cost(idx) {
            ShownCost::Reported(c) => cost_text(Some(c), "*", COST_W - 1),
            _ => cost_text(t.cost, "", COST_W - 1),
        };
        let style = if t.cost.is_some() { theme.cost } else { theme.dim };
        let end = put_right(buf, area, y, (w, COST_W), &cost, style);
        let end = put_right(buf, area, y, (end, TOK_W), &tokens(t.tokens.total), Style::new());
        if cols.model > 0 {
            let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
            let mx = end.saturating_sub(cols.model) + 1;
            buf.set_stringn(area.x + mx as u16, y, truncate(m, cols.model - 1), cols.model - 1, theme.model);
        }
        // Focused, the table has its own cursor (Enter goes to that agent); otherwise it marks
        // the agent the rest of the screen describes.
        let marked = if focused { scroll + k == view.selection.cost_row } else { Some(idx) == focus };
        if marked {
            buf.set_style(Rect { y, height: 1, ..area }, selected_style);
        }
    }
}

/// `burn ▁▂▃▅▇█ $0.21/min`: cost added per sample over the last samples, and the rate over the
/// last minute of stream time.
fn burn_line(view: &View, theme: &Theme, w: usize) -> Line<'static> {
    let samples = &view.derived.burn;
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
