//! The timeline (`t`): one row per agent in tree order, its turns as bars over time — coloured
//! by how each turn ended, tool calls as ticks, `wait` calls on children hatched — under an axis
//! of time since the run began (in the machine view: the session the cursor is in, since it
//! began). The window follows now (live, or the replay's position) until the user scrolls or
//! zooms; the selection is the tree's.
//!
//! Work per frame follows what is on screen: only the rows in view are drawn, and of each row's
//! items only those inside the window are visited (found by binary search on start times).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::layout::{Layout, scrolled};
use super::outline::{NodeId, Row};
use super::scene::Scene;
use super::text::{duration, truncate, width};
use super::theme::Theme;
use super::view::Pane;
use super::window;
use crate::model::{AgentOp, Item, ItemKind, Thread, TurnStatus};
use crate::router::ThreadIdx;

/// Columns of the agent names left of the bars.
const LABEL_MAX: usize = 26;
/// Ticks drawn per row at most: a thread with more tool calls in the window than the row has
/// columns gains nothing from the rest.
const TICKS_PER_COLUMN: usize = 2;

pub fn draw(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let (model, view) = (s.model, s.view);
    let focused = view.panes.focus == Pane::Lanes && view.panes.overlay.is_none();
    let theme = &view.theme;
    layout.timeline = area;
    let extent = window::extent(view, model);
    let shown = window::resolved(view, model, s.feed.now_ms);
    let follows = view.panes.window.end_ms.is_none() || view.panes.window.session != extent.and_then(|e| e.session);
    let mut title = vec![Span::styled(" timeline ", theme.title)];
    if let Some(root) = extent.and_then(|e| e.session) {
        // The machine view: the session the cursor is in, by the name its row has.
        let name_w = (area.width as usize / 4).clamp(8, 24);
        title.push(Span::styled(format!("· {} ", truncate(&super::label::of(model, root).name, name_w)), theme.title));
    }
    if let (Some((from, to)), Some(e)) = (shown, extent) {
        title.push(Span::styled(format!("{} – {} ", duration(from - e.first), duration(to - e.first)), theme.dim));
        title.push(Span::styled(if follows { "following " } else { "‖ scrolled · 0 back to now " }, theme.dim));
    }
    title.extend(super::tree::order_mark(view.panes.tree_sort, theme));
    let block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (Some((from, to)), Some(e)) = (shown.filter(|_| inner.height >= 2 && inner.width >= 20), extent) else {
        let msg = "no timed lines yet";
        frame.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), inner);
        return;
    };
    let label_w = (inner.width as usize / 4).clamp(10, LABEL_MAX);
    let bars_x = inner.x + label_w as u16 + 1;
    let bars_w = inner.right().saturating_sub(bars_x) as usize;
    if bars_w < 4 {
        return;
    }
    let scale = Scale { from, to, cols: bars_w };
    axis(frame, Rect { y: inner.y, height: 1, ..inner }, bars_x, &scale, e.first, theme);
    let body = Rect { y: inner.y + 1, height: inner.height - 1, ..inner };
    let now = e.now(s.feed.now_ms.or(model.stream_ms));
    rows(frame, body, s, &Bars { x: bars_x, label_w, scale, now, session: e.session }, layout);
}

/// Where the bars go: their first column, the width of the names left of them, the time scale;
/// the end of time (where a turn at work ends), and the session shown (the machine view).
struct Bars {
    x: u16,
    label_w: usize,
    scale: Scale,
    now: i64,
    session: Option<ThreadIdx>,
}

/// The agents, in tree order, one row each; the selection and its neighbours on screen.
fn rows(frame: &mut Frame, area: Rect, s: &Scene<'_>, bars: &Bars, layout: &mut Layout) {
    let (model, view) = (s.model, s.view);
    let theme = &view.theme;
    let focused = view.panes.focus == Pane::Lanes && view.panes.overlay.is_none();
    let rows: Vec<(usize, ThreadIdx, u16)> = session_rows(view.rows(), bars.session)
        .filter_map(|(i, r)| match r.id {
            NodeId::Thread(t) => Some((i, t, r.depth)),
            _ => None,
        })
        .collect();
    let height = area.height as usize;
    let sel_row = view.selected_row();
    let sel = sel_row.and_then(|s| rows.iter().rposition(|&(i, ..)| i <= s)).unwrap_or(0);
    let offset = scrolled(layout.timeline_offset, sel, rows.len(), height);
    layout.timeline_offset = offset;
    let label_w = bars.label_w;
    for (k, &(row_index, t, depth)) in rows.iter().enumerate().skip(offset).take(height) {
        let y = area.y + (k - offset) as u16;
        let th = model.thread(t);
        let shown = view.shown(model, t);
        let indent = " ".repeat((depth as usize).min(label_w / 3));
        let name = truncate(&format!("{indent}{} {}", shown.glyph(), super::label::of(model, t).name), label_w);
        let buf = frame.buffer_mut();
        buf.set_stringn(area.x, y, &name, label_w, theme.status(shown));
        buf.set_stringn(bars.x - 1, y, "│", 1, theme.border);
        bar_row(buf, (bars.x, y), th, &bars.scale, bars.now, theme);
        layout.timeline_rows.push((y, row_index));
        if sel_row.is_some() && k == sel {
            let style = if focused { theme.selected } else { theme.selected_idle };
            buf.set_style(Rect { x: area.x, y, width: label_w as u16, height: 1 }, style);
        }
    }
    if rows.is_empty() {
        let msg = Span::styled("no agents yet", theme.dim);
        frame.render_widget(Paragraph::new(msg), Rect { height: 1, ..area });
    }
}

/// The tree's rows the timeline shows, with their index: all of them, or one session's (its
/// root's row and the rows below it).
fn session_rows(rows: &[Row], session: Option<ThreadIdx>) -> impl Iterator<Item = (usize, &Row)> {
    let (start, end) = match session {
        None => (0, rows.len()),
        Some(root) => match rows.iter().position(|r| r.id == NodeId::Thread(root)) {
            Some(at) => {
                let depth = rows[at].depth;
                let len = rows[at + 1..].iter().take_while(|r| r.depth > depth).count();
                (at, at + 1 + len)
            }
            None => (0, 0),
        },
    };
    rows.iter().enumerate().skip(start).take(end - start)
}

/// Stream time to columns of the bar area.
struct Scale {
    from: i64,
    to: i64,
    cols: usize,
}

impl Scale {
    /// The column of an instant, clamped to the area; `None` when outside the window.
    fn col(&self, ms: i64) -> Option<usize> {
        (self.from..=self.to).contains(&ms).then(|| self.clamped(ms))
    }

    fn clamped(&self, ms: i64) -> usize {
        let span = (self.to - self.from).max(1) as f64;
        let x = ((ms.clamp(self.from, self.to) - self.from) as f64 / span * (self.cols - 1) as f64).round();
        (x as usize).min(self.cols - 1)
    }

    /// Columns covered by `[a, b]`, if it meets the window.
    fn span(&self, a: i64, b: i64) -> Option<(usize, usize)> {
        (b >= self.from && a <= self.to).then(|| (self.clamped(a), self.clamped(b)))
    }
}

/// `0:00      0:30      1:00`: time since the run's first line, a label every 10 columns or so.
fn axis(frame: &mut Frame, area: Rect, bars_x: u16, scale: &Scale, start: i64, theme: &Theme) {
    let buf = frame.buffer_mut();
    buf.set_stringn(area.x, area.y, "agent", (bars_x - area.x) as usize, theme.dim);
    let mut x = 0;
    let mut last = String::new();
    while x < scale.cols {
        let ms = scale.from + ((scale.to - scale.from) as f64 * x as f64 / (scale.cols.max(2) - 1) as f64) as i64;
        let label = format!("╵{}", duration(ms - start));
        let w = width(&label);
        if x + w > scale.cols {
            break;
        }
        // A window of a few seconds gives several marks the same whole second: each once, at its
        // first column, so the axis never reads `0:00 0:00`.
        if label == last {
            x += 1;
        } else {
            buf.set_stringn(bars_x + x as u16, area.y, &label, w, theme.dim);
            x += w.max(10) + 2;
            last = label;
        }
    }
}

/// One agent's turns, ticks and waits across the bar area.
fn bar_row(buf: &mut ratatui::buffer::Buffer, (x0, y): (u16, u16), t: &Thread, scale: &Scale, now: i64, theme: &Theme) {
    // Nothing of an agent is drawn past its last line, except a turn or a `wait` it is still at
    // work on (to now). A Claude sub-agent's turn is never closed in its transcript, and a turn
    // cut short by a stop is closed at the stream's time, which in the machine view is another
    // session's: either would draw hours the agent did not work.
    let seen_until = t.last_ms.unwrap_or(now).min(now);
    let open_until = if t.status.is_active() { now } else { seen_until };
    let ended = |end: i64| if t.status.is_active() { end } else { end.min(seen_until) };
    for turn in &t.turns {
        let Some(a) = turn.started_ms.or(t.first_ms) else { continue };
        let b = match turn.completed_ms {
            Some(end) => ended(end),
            None if turn.status == TurnStatus::InProgress => open_until,
            None => a,
        };
        let Some((c0, c1)) = scale.span(a.min(b), a.max(b)) else { continue };
        let style = match turn.status {
            TurnStatus::InProgress => theme.running,
            TurnStatus::Completed => theme.done,
            TurnStatus::Failed => theme.failed,
            TurnStatus::Interrupted => theme.interrupted,
        };
        for c in c0..=c1 {
            buf.set_stringn(x0 + c as u16, y, "━", 1, style);
        }
        if turn.status == TurnStatus::Failed {
            buf.set_stringn(x0 + c1 as u16, y, "✗", 1, theme.failed);
        }
    }
    // Items inside the window only: items are kept in arrival order, so their start times
    // (where known) rise, and a binary search finds the first one in view.
    let first = t.items.partition_point(|i| i.started_ms.is_some_and(|s| s < scale.from));
    let cap = scale.cols * TICKS_PER_COLUMN;
    for item in
        t.items.entries_from(first).map(|(_, i)| i).take_while(|i| i.started_ms.is_none_or(|s| s <= scale.to)).take(cap)
    {
        let Some(a) = item.started_ms else { continue };
        if is_wait(item) {
            let b = item.completed_ms.map_or(open_until, ended).max(a);
            if let Some((c0, c1)) = scale.span(a, b) {
                for c in c0..=c1 {
                    buf.set_stringn(x0 + c as u16, y, "▒", 1, theme.waiting);
                }
            }
        } else if let (true, Some(c)) = (is_tool(item), scale.col(a)) {
            buf.set_stringn(x0 + c as u16, y, "┃", 1, theme.tool);
        }
    }
}

fn is_wait(item: &Item) -> bool {
    item.op == Some(AgentOp::Wait)
}

fn is_tool(item: &Item) -> bool {
    matches!(
        item.kind,
        ItemKind::Command
            | ItemKind::FileChange
            | ItemKind::McpTool
            | ItemKind::DynamicTool
            | ItemKind::WebSearch
            | ItemKind::Collab
    )
}
