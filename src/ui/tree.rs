//! The agents pane: the rows of [`super::outline`] with tree guides, status glyphs and figures in
//! right-aligned columns. Only the rows on screen are turned into text.

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::layout::{Layout, scrolled};
use super::outline::{Fold, NodeId, Row, TreeSort};
use super::scene::Scene;
use super::text::{cost_text, duration, elapsed, short_model, tokens, truncate, truncate_middle, width};
use super::theme::Theme;
use super::tops::{Figures, Session};
use super::view::{Pane, View};
use crate::model::{Model, ShownCost, Status, Thread, TurnStatus, format_usd};
use crate::router::ThreadIdx;
use crate::source::seen::State;

/// The figure columns that fit, widest pane first: each one's width, 0 where it does not fit.
#[derive(Clone, Copy)]
struct Columns {
    /// Wider panes show longer model ids whole (`5.1-codex-mini`).
    model: usize,
    elapsed: usize,
    tokens: usize,
    cost: usize,
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
        let fits = |from: usize, width: usize| if w >= from { width } else { 0 };
        Self {
            cost: fits(24, COST_W),
            elapsed: fits(30, ELAPSED_W),
            tokens: fits(42, TOKENS_W),
            model: fits(52, model_w),
        }
    }

    fn width(self) -> usize {
        self.model + self.elapsed + self.tokens + self.cost
    }
}

pub fn draw(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let view = s.view;
    let theme = &view.theme;
    let focused = view.panes.focus == Pane::Tree && view.panes.overlay.is_none();
    let total = view.rows().len();
    let visible = area.height.saturating_sub(2) as usize;
    let mut block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title(view)));
    if total > visible {
        // Where the cursor is when the tree is taller than the pane, like a pager's percentage.
        let at = view.selected_row().map_or(0, |i| i + 1);
        block = block.title_bottom(Line::from(Span::styled(format!(" {at}/{total} "), theme.dim)).right_aligned());
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    layout.tree = area;
    let height = inner.height as usize;
    let rows = view.rows();
    if rows.is_empty() {
        let msg = if view.panes.filter.query.is_empty() {
            "waiting for the first thread…"
        } else {
            "nothing matches the filter"
        };
        frame.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), inner);
        layout.tree_offset = 0;
        return;
    }
    let sel = view.selected_row().unwrap_or(0);
    let offset = scrolled(layout.tree_offset, sel, rows.len(), height);
    let w = inner.width as usize;
    let ctx = Ctx { s, w, cols: Columns::for_width(w) };
    let highlight = if focused { theme.selected } else { theme.selected_idle };
    let buf = frame.buffer_mut();
    for ((i, row), y) in rows.iter().enumerate().skip(offset).take(height).zip(inner.top()..) {
        for (x, span) in ctx.row_cells(row) {
            let Some(room) = w.checked_sub(x).filter(|&r| r > 0) else { continue };
            // An ended session's rows are greyed as a whole, whatever their own colours.
            let span = if row.ended { Span::styled(span.content, theme.dim) } else { span };
            buf.set_span(inner.x + x as u16, y, &span, room as u16);
        }
        if i == sel {
            buf.set_style(Rect { y, height: 1, ..inner }, highlight);
        }
    }
    layout.tree_offset = offset;
}

/// ` agents ▼cost /query▏ follow `: the order of siblings when it is not their arrival (`o`),
/// the filter as it is typed, and whether the selection follows.
fn title(view: &View) -> Vec<Span<'static>> {
    let theme = &view.theme;
    let filter = &view.panes.filter;
    let mut title = vec![Span::styled(" agents ", theme.title)];
    title.extend(order_mark(view.panes.tree_sort, theme));
    if !filter.query.is_empty() || filter.typing {
        title.push(Span::styled(format!("/{}", filter.query), theme.warn));
        if filter.typing {
            title.push(Span::styled("▏", theme.warn));
        }
        title.push(Span::raw(" "));
    }
    if view.selection.follow {
        title.push(Span::styled("follow ", theme.running));
    }
    title
}

/// `▼cost `: the tree's order (and the timeline's rows') when `o` changed it from arrival.
pub fn order_mark(sort: TreeSort, theme: &Theme) -> Option<Span<'static>> {
    (sort != TreeSort::Arrival).then(|| Span::styled(format!("▼{} ", sort.label()), theme.key))
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
    let marker = match row.fold {
        Fold::Open => '▾',
        Fold::Folded => '▸',
        Fold::Leaf if row.depth > 0 => '─',
        Fold::Leaf => ' ',
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

/// What every row of one frame shares: the scene, the pane's inner width and its columns.
struct Ctx<'a> {
    s: &'a Scene<'a>,
    w: usize,
    cols: Columns,
}

impl Ctx<'_> {
    fn row_cells(&self, row: &Row) -> Vec<(usize, Span<'static>)> {
        let (model, view) = (self.s.model, self.s.view);
        let theme = &view.theme;
        let mut cells = Cells { spans: Vec::with_capacity(8), at: 0 };
        cells.push(Span::styled(guides(row), theme.dim));
        let lead = cells.at;
        let mut cols = self.cols;
        // A deep row on a narrow pane keeps room for an 8-digit id: its elapsed time goes first
        // (the cost column stays aligned with the other rows).
        if cols.elapsed > 0 && self.w.saturating_sub(lead + cols.width()) < 10 {
            cols.elapsed = 0;
        }
        let row_ctx = Ctx { s: self.s, w: self.w, cols };
        let label_w = self.w.saturating_sub(lead + cols.width());
        // Rows that are not threads have no figures: their label may use the whole row.
        let wide_w = self.w.saturating_sub(lead);
        match row.id {
            NodeId::Thread(t) => row_ctx.thread_cells(t, label_w, &mut cells),
            NodeId::Turn(t, turn) => turn_cells(model.thread(t), turn as usize, wide_w, theme, &mut cells),
            NodeId::Group(t, first) => {
                let grouped = view.derived.groups.of(model, t);
                let g = grouped.0.iter().find(|g| g.first == first);
                let (label, n, active) = g.map_or(("spawn", 0, 0), |g| {
                    let active = g.lanes.iter().filter(|&&c| model.thread(c).status.is_active()).count();
                    (g.shown(), g.lanes.len(), active)
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
            NodeId::Spent(t) => row_ctx.spent_cells(t, label_w, &mut cells),
            NodeId::Pending => {
                cells.push(Span::styled("○ ", theme.pending));
                cells.push(Span::styled(truncate("pending registration", wide_w.saturating_sub(2)), theme.dim));
            }
            NodeId::Agent(a) => {
                let tops = &view.derived.tops;
                let group = Group { figures: tops.figures(model).agent(a), name: tops.agent(a), path: None };
                row_ctx.group_cells(&group, label_w, &mut cells);
            }
            NodeId::Project(p) => {
                let tops = &view.derived.tops;
                let figures = tops.figures(model).project(p);
                let (name, path) = tops.project(p).map_or(("?", ""), |p| (p.name.as_str(), p.path.as_str()));
                row_ctx.group_cells(&Group { figures, name, path: Some(path) }, label_w, &mut cells);
            }
        }
        cells.spans
    }

    /// An agent or project row: its name (a project's path after it, dimmed, where it fits), how
    /// many sessions and how many live, and the tokens and cost of every session under it.
    fn group_cells(&self, group: &Group<'_>, label_w: usize, cells: &mut Cells) {
        let (theme, cols, w) = (&self.s.view.theme, self.cols, self.w);
        let Figures { sessions: n, live, tokens: tokens_sum, cost } = group.figures;
        let mut count = format!(" ×{n}");
        if live > 0 {
            let _ = write!(count, " · {live} live");
        }
        let figures = cols.cost + cols.tokens;
        let room = w.saturating_sub(cells.at + figures + 1).max(label_w.min(1));
        let name = truncate(group.name, room);
        let mut left = room.saturating_sub(width(&name));
        cells.push(Span::styled(name, theme.bold));
        if left >= width(&count) {
            left -= width(&count);
            cells.push(Span::styled(count, if live > 0 { theme.running } else { theme.dim }));
        }
        if let Some(path) = group.path.filter(|p| !p.is_empty()) {
            // A path cut to a few cells says nothing: whole enough to read, or not at all.
            if left > width(path).min(16) {
                cells.push(Span::styled(format!(" {}", super::header::short_path(path, left - 1)), theme.dim));
            }
        }
        let mut end = w;
        if cols.cost > 0 {
            let text = format_usd(cost);
            cells.right(end, truncate(&text, COST_W - 1), if cost.is_some() { theme.cost } else { theme.dim });
            end -= COST_W;
        }
        if cols.tokens > 0 {
            cells.right(end, tokens(tokens_sum), Style::new());
        }
    }

    /// A session's unattributed row: what its agent reported beyond its agents' own figures, in
    /// the figure columns, so that the session's rows sum to its total.
    fn spent_cells(&self, root: ThreadIdx, label_w: usize, cells: &mut Cells) {
        let (model, theme, cols) = (self.s.model, &self.s.view.theme, self.cols);
        let part = model.unattributed_part(root);
        cells.push(Span::styled("+ ", theme.dim));
        cells.push(Span::styled(truncate("unattributed", label_w.saturating_sub(2)), theme.dim));
        let mut end = self.w;
        if cols.cost > 0 {
            cells.right(end, cost_text(Some(part.cost), "*", COST_W - 1), theme.cost);
            end -= COST_W;
        }
        if cols.tokens > 0 {
            cells.right(end, tokens(part.tokens.total), theme.dim);
        }
    }

    fn thread_cells(&self, idx: ThreadIdx, label_w: usize, cells: &mut Cells) {
        let (model, view) = (self.s.model, self.s.view);
        let (theme, cols) = (&view.theme, self.cols);
        let t = model.thread(idx);
        if view.derived.machine && t.parent.is_none() {
            if let Some(session) = view.derived.tops.session(idx) {
                return self.session_cells(idx, session, cells);
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
        let elapsed_text = if cols.elapsed > 0 {
            elapsed(t, self.s.feed.now_ms).map(duration).unwrap_or_default()
        } else {
            String::new()
        };
        // A time as wide as its column would touch the name: the name gives up a cell.
        let touching = cols.elapsed > 0 && cols.model == 0 && width(&elapsed_text) >= ELAPSED_W;
        let room = label_w.saturating_sub(2 + usize::from(touching));
        // The agent's one label (no id beside a name: `y` copies the id).
        let label = super::label::of(model, idx);
        let name = if width(&label.name) > room && cut_like_a_neighbour(model, idx, &label.name, room) {
            truncate_middle(&label.name, room)
        } else {
            truncate(&label.name, room)
        };
        cells.push(Span::styled(name, name_style));
        // The figure columns, from the right edge leftwards.
        let mut end = self.w;
        if cols.cost > 0 {
            let style = if t.cost.is_none() { theme.dim } else { theme.cost };
            // The agent's own figure for a model the table lacks, marked `*` in this narrow column.
            let text = match model.shown_cost(idx) {
                ShownCost::Reported(c) => cost_text(Some(c), "*", COST_W - 1),
                _ => cost_text(t.cost, "", COST_W - 1),
            };
            cells.right(end, text, style);
            end -= COST_W;
        }
        if cols.tokens > 0 {
            cells.right(end, tokens(t.tokens.total), Style::new());
            end -= TOKENS_W;
        }
        if cols.elapsed > 0 {
            cells.right(end, elapsed_text, theme.dim);
            end -= ELAPSED_W;
        }
        if cols.model > 0 {
            let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
            let x = end.saturating_sub(cols.model) + 1;
            cells.spans.push((x, Span::styled(truncate(m, cols.model - 1), theme.model)));
        }
    }

    /// A session's root in the machine view: the agent's status glyph, the session's label,
    /// then from the right: cost, tokens (of the whole session), last activity, live / idle /
    /// ended and the pid holding it (an 80-column screen has room for those), CPU % and memory
    /// where they fit.
    fn session_cells(&self, idx: ThreadIdx, session: &Session, cells: &mut Cells) {
        let (model, view) = (self.s.model, self.s.view);
        let (theme, cols, w) = (&view.theme, self.cols, self.w);
        let t = model.thread(idx);
        let shown = view.shown(model, idx);
        cells.push(Span::styled(shown.glyph(), theme.status(shown)));
        cells.at += 1;
        let mut end = w;
        let sub = model.spent(idx);
        if cols.cost > 0 {
            let style = if sub.cost_usd().is_none() { theme.dim } else { theme.cost };
            cells.right(end, truncate(&format_usd(sub.cost_usd()), COST_W - 1), style);
            end -= COST_W;
        }
        if cols.tokens > 0 {
            cells.right(end, tokens(sub.tokens.total), Style::new());
            end -= TOKENS_W;
        }
        // On a narrow pane the session's name goes before its last activity.
        if cols.elapsed > 0 && w >= AGO_FROM {
            let last = session.last_activity_ms.or(t.last_ms);
            let ago = match (self.s.feed.now_ms, last) {
                (Some(now), Some(last)) if now.saturating_sub(last) < 2_000 => "now".to_owned(),
                (Some(now), Some(last)) => super::text::quiet(now.saturating_sub(last)),
                _ => String::new(),
            };
            cells.right(end, truncate(&ago, AGO_W - 1), theme.dim);
            end -= AGO_W;
        }
        end = process_cells(session, end, w, theme, cells);
        let room = end.saturating_sub(cells.at + 1);
        // The session's label, the same as in its lane, the timeline and the cost table.
        let name = super::label::of(model, idx).name;
        let style = if t.status == Status::Failed { theme.failed } else { theme.bold };
        cells.push(Span::styled(truncate(&name, room), style));
    }
}

/// A group row's name and what its sessions add up to.
struct Group<'a> {
    figures: Figures,
    name: &'a str,
    /// A project's path, after its name.
    path: Option<&'a str>,
}

/// A turn row: its glyph, `turn N` and the prompt that opened it.
fn turn_cells(th: &Thread, turn: usize, wide_w: usize, theme: &Theme, cells: &mut Cells) {
    let (glyph, style) = match th.turns.get(turn).map(|x| x.status) {
        Some(TurnStatus::InProgress) => ("● ", theme.running),
        Some(TurnStatus::Completed) => ("✓ ", theme.done),
        Some(TurnStatus::Failed) => ("✗ ", theme.failed),
        Some(TurnStatus::Interrupted) => ("◼ ", theme.interrupted),
        None => ("○ ", theme.pending),
    };
    cells.push(Span::styled(glyph, style));
    let label = format!("turn {}", turn + 1);
    let room = wide_w.saturating_sub(2);
    match super::label::prompt_of_turn(th, turn) {
        Some(prompt) if room >= width(&label) + 10 => {
            let rest = room - width(&label) - 1;
            cells.push(Span::raw(label));
            cells.push(Span::styled(format!(" {}", truncate(prompt, rest)), theme.dim));
        }
        _ => cells.push(Span::raw(truncate(&label, room))),
    }
}

/// A session's live / idle / ended, and the pid holding it (CPU % and memory too on a wide
/// pane) when a process does; right-aligned from `end`, returns where they start.
fn process_cells(session: &Session, mut end: usize, w: usize, theme: &Theme, cells: &mut Cells) -> usize {
    if w < STATE_FROM {
        return end;
    }
    let (word, style) = match session.state {
        Some(State::Live) => ("live", theme.running),
        Some(State::Idle) => ("idle", theme.pending),
        Some(State::Ended) => ("ended", theme.dim),
        None => ("", theme.dim),
    };
    cells.right(end, word.to_owned(), style);
    end -= STATE_W;
    // Only a session a process holds has these; the others' names take the room.
    let Some(pid) = session.pid.filter(|_| w >= PID_FROM) else { return end };
    if w >= PROCESS_FROM {
        let usage = session.usage;
        let mem = usage.map_or_else(String::new, |u| memory(u.rss_bytes));
        cells.right(end, mem, theme.dim);
        end -= MEM_W;
        let cpu = usage.map_or_else(String::new, |u| format!("{:.0}%", u.cpu_percent));
        cells.right(end, cpu, theme.dim);
        end -= CPU_W;
    }
    cells.right(end, truncate(&pid.to_string(), PID_W - 1), theme.dim);
    end - PID_W
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
/// From this pane width a session row shows live / idle / ended (the machine view's tree at 80
/// columns is this wide and more).
const STATE_FROM: usize = 30;
/// From this pane width a session row shows the pid holding it.
const PID_FROM: usize = 36;
/// From this pane width a session row shows CPU % and memory too.
const PROCESS_FROM: usize = 64;

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
