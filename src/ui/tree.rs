//! The agents pane: the rows of [`super::outline`] with tree guides, status glyphs and figures in
//! right-aligned columns. Only the rows on screen are turned into text.

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::Feed;
use super::outline::{NodeId, Row};
use super::text::{duration, elapsed, short_model, tokens, truncate, truncate_middle, width};
use super::view::{Pane, View};
use crate::model::{Model, ShownCost, Status, TurnStatus, format_usd};
use crate::router::ThreadIdx;

/// Which figure columns fit, widest pane first.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Copy)]
struct Columns {
    model: bool,
    /// The model column's width: wider panes show longer ids whole (`5.1-codex-mini`).
    model_w: usize,
    elapsed: bool,
    tokens: bool,
    cost: bool,
}

const MODEL_W: usize = 11;
/// The model column on a pane this wide or wider grows by what is over it, up to `MODEL_W_MAX`.
const MODEL_GROWS_FROM: usize = 64;
const MODEL_W_MAX: usize = 15;
const ELAPSED_W: usize = 7;
const TOKENS_W: usize = 7;
const COST_W: usize = 8;

impl Columns {
    fn for_width(w: usize) -> Self {
        let model_w = (MODEL_W + w.saturating_sub(MODEL_GROWS_FROM) / 2).min(MODEL_W_MAX);
        Self { cost: w >= 24, elapsed: w >= 30, tokens: w >= 42, model: w >= 52, model_w }
    }

    fn width(self) -> usize {
        usize::from(self.model) * self.model_w
            + usize::from(self.elapsed) * ELAPSED_W
            + usize::from(self.tokens) * TOKENS_W
            + usize::from(self.cost) * COST_W
    }
}

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View) {
    let theme = &view.theme;
    let focused = view.focus == Pane::Tree && view.overlay.is_none();
    let mut title = vec![Span::styled(" agents ", theme.title)];
    if !view.filter.is_empty() || view.typing {
        title.push(Span::styled(format!("/{}", view.filter), theme.warn));
        if view.typing {
            title.push(Span::styled("▏", theme.warn));
        }
        title.push(Span::raw(" "));
    }
    if view.follow {
        title.push(Span::styled("follow ", theme.running));
    }
    let total = view.rows().len();
    let visible = area.height.saturating_sub(2) as usize;
    let mut block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title));
    if total > visible {
        // Where the cursor is when the tree is taller than the pane, like a pager's percentage.
        let at = view.selected_row().map_or(0, |i| i + 1);
        block = block.title_bottom(Line::from(Span::styled(format!(" {at}/{total} "), theme.dim)).right_aligned());
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    view.layout.tree = area;
    let height = inner.height as usize;
    let rows = view.rows();
    if rows.is_empty() {
        let msg = if view.filter.is_empty() { "waiting for the first thread…" } else { "nothing matches the filter" };
        frame.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), inner);
        view.layout.tree_offset = 0;
        return;
    }
    // Keep the selection on screen, scrolling as little as possible.
    let sel = view.selected_row().unwrap_or(0);
    let mut offset = view.layout.tree_offset.min(rows.len().saturating_sub(height));
    if sel < offset {
        offset = sel;
    } else if height > 0 && sel >= offset + height {
        offset = sel + 1 - height;
    }
    let cols = Columns::for_width(inner.width as usize);
    let w = inner.width as usize;
    let highlight = if focused { theme.selected } else { theme.selected_idle };
    let buf = frame.buffer_mut();
    for ((i, row), y) in rows.iter().enumerate().skip(offset).take(height).zip(inner.top()..) {
        for (x, span) in row_cells(model, feed, view, row, w, cols) {
            let Some(room) = w.checked_sub(x).filter(|&r| r > 0) else { continue };
            // An ended session's rows are greyed as a whole, whatever their own colours.
            let span = if row.ended { Span::styled(span.content, theme.dim) } else { span };
            buf.set_span(inner.x + x as u16, y, &span, room as u16);
        }
        if i == sel {
            buf.set_style(Rect { y, height: 1, ..inner }, highlight);
        }
    }
    view.layout.tree_offset = offset;
}

/// Tree guides and fold marker of a row, one column per level: `│` where an ancestor has more
/// siblings below, then `├`/`└` joined to the marker (`▾` open, `▸` folded, `─` leaf), so each
/// connector sits right under its parent's marker.
fn guides(row: &Row) -> String {
    let mut s = String::new();
    for d in 1..row.depth {
        let through = d <= 64 && row.guides & (1 << (d - 1)) != 0;
        s.push(if through { '│' } else { ' ' });
    }
    let marker = match (row.has_children, row.open) {
        (true, true) => '▾',
        (true, false) => '▸',
        (false, _) if row.depth > 0 => '─',
        (false, _) => ' ',
    };
    if row.depth > 0 {
        s.push(if row.last { '└' } else { '├' });
    }
    s.push(marker);
    s.push(' ');
    s
}

/// A row's text as spans placed at columns (no padding is written: the frame starts blank, and
/// every cell not written is a cell the terminal need not be told about).
struct Cells {
    spans: Vec<(usize, Span<'static>)>,
    /// Where the next flowing span goes.
    at: usize,
}

impl Cells {
    fn push(&mut self, span: Span<'static>) {
        let w = width(&span.content);
        self.spans.push((self.at, span));
        self.at += w;
    }

    /// A figure right-aligned in the column that ends at `end`.
    fn right(&mut self, end: usize, text: String, style: Style) {
        let x = end.saturating_sub(width(&text));
        self.spans.push((x, Span::styled(text, style)));
    }
}

fn row_cells(
    model: &Model,
    feed: &Feed,
    view: &View,
    row: &Row,
    w: usize,
    mut cols: Columns,
) -> Vec<(usize, Span<'static>)> {
    let theme = &view.theme;
    let mut cells = Cells { spans: Vec::with_capacity(8), at: 0 };
    cells.push(Span::styled(guides(row), theme.dim));
    let lead = cells.at;
    // A deep row on a narrow pane keeps room for an 8-digit id: its elapsed time goes first
    // (the cost column stays aligned with the other rows).
    if cols.elapsed && w.saturating_sub(lead + cols.width()) < 10 {
        cols.elapsed = false;
    }
    let label_w = w.saturating_sub(lead + cols.width());
    // Rows that are not threads have no figures: their label may use the whole row.
    let wide_w = w.saturating_sub(lead);
    match row.id {
        NodeId::Thread(t) => thread_cells(model, feed, view, t, label_w, w, cols, &mut cells),
        NodeId::Turn(t, turn) => {
            let th = model.thread(t);
            let (glyph, style) = match th.turns.get(turn as usize).map(|x| x.status) {
                Some(TurnStatus::InProgress) => ("● ", theme.running),
                Some(TurnStatus::Completed) => ("✓ ", theme.done),
                Some(TurnStatus::Failed) => ("✗ ", theme.failed),
                Some(TurnStatus::Interrupted) => ("◼ ", theme.interrupted),
                None => ("○ ", theme.pending),
            };
            cells.push(Span::styled(glyph, style));
            let label = format!("turn {}", turn + 1);
            let room = wide_w.saturating_sub(2);
            match super::label::prompt_of_turn(th, turn as usize) {
                Some(prompt) if room >= width(&label) + 10 => {
                    let rest = room - width(&label) - 1;
                    cells.push(Span::raw(label));
                    cells.push(Span::styled(format!(" {}", truncate(prompt, rest)), theme.dim));
                }
                _ => cells.push(Span::raw(truncate(&label, room))),
            }
        }
        NodeId::Group(t, first) => {
            let grouped = view.groups.of(model, t);
            let g = grouped.0.iter().find(|g| g.first == first);
            let (label, n, active) = g.map_or(("spawn", 0, 0), |g| {
                let active = g.lanes.iter().filter(|&&c| model.thread(c).status.is_active()).count();
                (g.label, g.lanes.len(), active)
            });
            cells.push(Span::styled("⑂ ", theme.tool));
            let mut text = format!("{label} ×{n}");
            if active > 0 {
                let _ = write!(text, " · {active} active");
            }
            cells.push(Span::raw(truncate(&text, wide_w.saturating_sub(2))));
        }
        NodeId::Unattributed => {
            cells.push(Span::styled("? ", theme.warn));
            let text = format!("unattributed ×{}", model.unattributed.len());
            cells.push(Span::styled(truncate(&text, wide_w.saturating_sub(2)), theme.warn));
        }
        NodeId::Pending => {
            cells.push(Span::styled("○ ", theme.pending));
            cells.push(Span::styled(truncate("pending registration", wide_w.saturating_sub(2)), theme.dim));
        }
        NodeId::Agent(a) => {
            let roots = view.tops.roots_of_agent(a);
            let text = view.tops.agent(a).to_owned();
            group_cells(model, view, &roots, &text, None, label_w, w, cols, &mut cells);
        }
        NodeId::Project(p) => {
            let roots = view.tops.project_group(p).map(|g| g.roots.clone()).unwrap_or_default();
            let (name, path) = view
                .tops
                .project(p)
                .map_or_else(|| ("?".to_owned(), String::new()), |p| (p.name.clone(), p.path.clone()));
            group_cells(model, view, &roots, &name, Some(&path), label_w, w, cols, &mut cells);
        }
    }
    cells.spans
}

/// An agent or project row: its name (a project's path after it, dimmed, where it fits), how many
/// sessions and how many live, and the tokens and cost of every session under it.
#[allow(clippy::too_many_arguments)]
fn group_cells(
    model: &Model,
    view: &View,
    roots: &[ThreadIdx],
    name: &str,
    path: Option<&str>,
    label_w: usize,
    w: usize,
    cols: Columns,
    cells: &mut Cells,
) {
    let theme = &view.theme;
    let roots: Vec<ThreadIdx> = roots.iter().copied().filter(|r| r.index() < model.threads.len()).collect();
    let live = roots
        .iter()
        .filter(|&&r| view.tops.session(r).is_some_and(|s| s.state == Some(crate::source::seen::State::Live)))
        .count();
    let n = roots.len();
    let mut count = format!(" ×{n}");
    if live > 0 {
        let _ = write!(count, " · {live} live");
    }
    let figures = usize::from(cols.cost) * COST_W + usize::from(cols.tokens) * TOKENS_W;
    let room = w.saturating_sub(cells.at + figures + 1).max(label_w.min(1));
    let name = truncate(name, room);
    let mut left = room.saturating_sub(width(&name));
    cells.push(Span::styled(name, theme.bold));
    if left >= width(&count) {
        left -= width(&count);
        cells.push(Span::styled(count, if live > 0 { theme.running } else { theme.dim }));
    }
    if let Some(path) = path.filter(|p| !p.is_empty()) {
        // A path cut to a few cells says nothing: whole enough to read, or not at all.
        if left > width(path).min(16) {
            cells.push(Span::styled(format!(" {}", super::header::short_path(path, left - 1)), theme.dim));
        }
    }
    let mut end = w;
    let (mut tokens_sum, mut cost, mut priced) = (0u64, 0i128, false);
    for &r in &roots {
        let sub = model.thread(r).subtree;
        tokens_sum = tokens_sum.saturating_add(sub.tokens.total);
        if let Some(c) = sub.cost_usd() {
            cost = cost.saturating_add(c.0);
            priced = true;
        }
    }
    if cols.cost {
        let text = format_usd(priced.then_some(crate::model::prices::Pico(cost)));
        cells.right(end, truncate(&text, COST_W - 1), if priced { theme.cost } else { theme.dim });
        end -= COST_W;
    }
    if cols.tokens {
        cells.right(end, tokens(tokens_sum), Style::new());
    }
}

#[allow(clippy::too_many_arguments)]
fn thread_cells(
    model: &Model,
    feed: &Feed,
    view: &View,
    idx: ThreadIdx,
    label_w: usize,
    w: usize,
    cols: Columns,
    cells: &mut Cells,
) {
    let t = model.thread(idx);
    let theme = &view.theme;
    if view.machine && t.parent.is_none() {
        if let Some(session) = view.tops.session(idx) {
            return session_cells(model, feed, view, idx, session, w, cols, cells);
        }
    }
    let shown = view.shown(model, idx);
    cells.push(Span::styled(shown.glyph(), theme.status(shown)));
    cells.at += 1;
    let name_style = match t.status {
        Status::Failed => theme.failed,
        _ if t.parent.is_none() => theme.bold,
        _ => Style::new(),
    };
    let elapsed_text =
        if cols.elapsed { elapsed(t, feed.now_ms).map(duration).unwrap_or_default() } else { String::new() };
    // A time as wide as its column would touch the name: the name gives up a cell.
    let touching = cols.elapsed && !cols.model && width(&elapsed_text) >= ELAPSED_W;
    let room = label_w.saturating_sub(2 + usize::from(touching));
    // The name first, whole if it fits; the id only in the room left after it.
    let label = super::label::of(model, idx);
    let name = if width(&label.name) > room && cut_like_a_neighbour(model, idx, &label.name, room) {
        truncate_middle(&label.name, room)
    } else {
        truncate(&label.name, room)
    };
    cells.push(Span::styled(name, name_style));
    if let Some(id) = label.id {
        let left = room.saturating_sub(width(&label.name) + 1);
        if left >= width(&id) {
            cells.push(Span::styled(format!(" {id}"), theme.dim));
        }
    }
    // The figure columns, from the right edge leftwards.
    let mut end = w;
    if cols.cost {
        let style = if t.cost.is_none() { theme.dim } else { theme.cost };
        // The agent's own figure for a model the table lacks, marked `*` in this narrow column.
        let text = match model.shown_cost(idx) {
            ShownCost::Reported(c) => format!("{}*", format_usd(Some(c))),
            _ => format_usd(t.cost),
        };
        cells.right(end, truncate(&text, COST_W - 1), style);
        end -= COST_W;
    }
    if cols.tokens {
        cells.right(end, tokens(t.tokens.total), Style::new());
        end -= TOKENS_W;
    }
    if cols.elapsed {
        cells.right(end, elapsed_text, theme.dim);
        end -= ELAPSED_W;
    }
    if cols.model {
        let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
        let x = end.saturating_sub(cols.model_w) + 1;
        cells.spans.push((x, Span::styled(truncate(m, cols.model_w - 1), theme.model)));
    }
}

/// Whether `name` cut to `room` reads as the sibling's before or after it does (`List files (A)`
/// and `(B)`, spawned together): then the end of the name is what tells them apart. Only the
/// neighbours are asked, so a row costs the same however many siblings it has.
fn cut_like_a_neighbour(model: &Model, idx: ThreadIdx, name: &str, room: usize) -> bool {
    let Some(parent) = model.thread(idx).parent else { return false };
    let siblings = &model.thread(parent).children;
    let Some(at) = siblings.iter().position(|&c| c == idx) else { return false };
    let cut = truncate(name, room);
    let neighbours = [at.checked_sub(1), Some(at + 1)].into_iter().flatten().filter_map(|i| siblings.get(i));
    neighbours.map(|&s| super::label::of(model, s).name).any(|other| other != name && truncate(&other, room) == cut)
}

/// Columns of a session row, besides cost and tokens: its state, last activity, and (where the
/// pane is wide) the process holding it, as `ps` shows it.
const STATE_W: usize = 6;
const AGO_W: usize = 6;
const PID_W: usize = 8;
const CPU_W: usize = 6;
const MEM_W: usize = 6;
/// From this pane width a session row shows its last activity.
const AGO_FROM: usize = 40;
/// From this pane width a session row shows pid, CPU % and memory (when a process holds it).
const PROCESS_FROM: usize = 64;

/// A session's root in the machine view: the agent's status glyph, the session's readable name
/// (its first prompt, else its project's folder), then from the right: cost, tokens (of the whole
/// session), last activity, live / idle / ended, and pid, CPU %, memory where they fit.
#[allow(clippy::too_many_arguments)]
fn session_cells(
    model: &Model,
    feed: &Feed,
    view: &View,
    idx: ThreadIdx,
    session: &super::tops::Session,
    w: usize,
    cols: Columns,
    cells: &mut Cells,
) {
    use crate::source::seen::State;
    let t = model.thread(idx);
    let theme = &view.theme;
    let shown = view.shown(model, idx);
    cells.push(Span::styled(shown.glyph(), theme.status(shown)));
    cells.at += 1;
    let mut end = w;
    if cols.cost {
        let sub = t.subtree;
        let style = if sub.cost_usd().is_none() { theme.dim } else { theme.cost };
        cells.right(end, truncate(&format_usd(sub.cost_usd()), COST_W - 1), style);
        end -= COST_W;
    }
    if cols.tokens {
        cells.right(end, tokens(t.subtree.tokens.total), Style::new());
        end -= TOKENS_W;
    }
    // On a narrow pane the session's name goes before its last activity.
    if cols.elapsed && w >= AGO_FROM {
        let last = session.last_activity_ms.or(t.last_ms);
        let ago = match (feed.now_ms, last) {
            (Some(now), Some(last)) if now.saturating_sub(last) < 2_000 => "now".to_owned(),
            (Some(now), Some(last)) => super::text::quiet(now.saturating_sub(last)),
            _ => String::new(),
        };
        cells.right(end, truncate(&ago, AGO_W - 1), theme.dim);
        end -= AGO_W;
    }
    if cols.model {
        let (word, style) = match session.state {
            Some(State::Live) => ("live", theme.running),
            Some(State::Idle) => ("idle", theme.pending),
            Some(State::Ended) => ("ended", theme.dim),
            None => ("", theme.dim),
        };
        cells.right(end, word.to_owned(), style);
        end -= STATE_W;
        // Only a session a process holds has these; the others' names take the room.
        if w >= PROCESS_FROM && session.pid.is_some() {
            let usage = session.usage;
            let mem = usage.map_or_else(String::new, |u| memory(u.rss_bytes));
            cells.right(end, mem, theme.dim);
            end -= MEM_W;
            let cpu = usage.map_or_else(String::new, |u| format!("{:.0}%", u.cpu_percent));
            cells.right(end, cpu, theme.dim);
            end -= CPU_W;
            let pid = session.pid.map_or_else(String::new, |p| p.to_string());
            cells.right(end, truncate(&pid, PID_W - 1), theme.dim);
            end -= PID_W;
        }
    }
    let room = end.saturating_sub(cells.at + 1);
    let project = view.tops.project(session.project).map(|p| p.name.as_str()).filter(|n| *n != "?");
    let name = super::label::session(model, idx, project);
    let style = if t.status == Status::Failed { theme.failed } else { theme.bold };
    cells.push(Span::styled(truncate(&name, room), style));
}

/// Resident memory as `ps -h` prints it: `812K`, `181M`, `1.2G`.
fn memory(bytes: u64) -> String {
    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;
    match bytes {
        0..M => format!("{}K", bytes / K),
        M..G => format!("{}M", bytes / M),
        _ => format!("{:.1}G", bytes as f64 / G as f64),
    }
}
