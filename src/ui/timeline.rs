//! The timeline (`t`): one row per agent in tree order, its turns as bars over time — coloured
//! by how each turn ended, tool calls as ticks, `wait` calls on children hatched — under an axis
//! of time since the run began. The window follows now (live, or the replay's position) until
//! the user scrolls or zooms; the selection is the tree's.
//!
//! Work per frame follows what is on screen: only the rows in view are drawn, and of each row's
//! items only those inside the window are visited (found by binary search on start times).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::Feed;
use super::outline::NodeId;
use super::text::{duration, truncate, width};
use super::update::{resolved_window, time_extent};
use super::view::{Pane, View};
use crate::model::{Item, ItemKind, Model, Thread, TurnStatus};
use crate::router::ThreadIdx;

/// Columns of the agent names left of the bars.
const LABEL_MAX: usize = 26;
/// Ticks drawn per row at most: a thread with more tool calls in the window than the row has
/// columns gains nothing from the rest.
const TICKS_PER_COLUMN: usize = 2;

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View) {
    let focused = view.focus == Pane::Lanes && view.overlay.is_none();
    let theme = view.theme.clone();
    view.layout.timeline = area;
    let window = resolved_window(view, model, feed.now_ms);
    let follows = view.window.end_ms.is_none();
    let mut title = vec![Span::styled(" timeline ", theme.title)];
    if let (Some((from, to)), Some((start, _))) = (window, time_extent(model)) {
        title.push(Span::styled(format!("{} – {} ", duration(from - start), duration(to - start)), theme.dim));
        title.push(Span::styled(if follows { "following " } else { "‖ scrolled · 0 back to now " }, theme.dim));
    }
    let block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some((from, to)) = window.filter(|_| inner.height >= 2 && inner.width >= 20) else {
        let msg = "no timed lines yet";
        frame.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), inner);
        return;
    };
    let Some((start, _)) = time_extent(model) else { return };
    let label_w = (inner.width as usize / 4).clamp(10, LABEL_MAX);
    let bars_x = inner.x + label_w as u16 + 1;
    let bars_w = inner.right().saturating_sub(bars_x) as usize;
    if bars_w < 4 {
        return;
    }
    let scale = Scale { from, to, cols: bars_w };
    axis(frame, Rect { y: inner.y, height: 1, ..inner }, bars_x, &scale, start, &theme);
    // The agents, in tree order; the selection and its neighbours on screen.
    let rows: Vec<(usize, ThreadIdx, u16)> = view
        .rows()
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r.id {
            NodeId::Thread(t) => Some((i, t, r.depth)),
            _ => None,
        })
        .collect();
    let height = inner.height as usize - 1;
    let sel_row = view.selected_row();
    let sel = sel_row.and_then(|s| rows.iter().rposition(|&(i, ..)| i <= s)).unwrap_or(0);
    let mut offset = view.layout.timeline_offset.min(rows.len().saturating_sub(height));
    if sel < offset {
        offset = sel;
    } else if height > 0 && sel >= offset + height {
        offset = sel + 1 - height;
    }
    view.layout.timeline_offset = offset;
    let now = feed.now_ms.or(model.stream_ms).unwrap_or(to);
    for (k, &(row_index, t, depth)) in rows.iter().enumerate().skip(offset).take(height) {
        let y = inner.y + 1 + (k - offset) as u16;
        let th = model.thread(t);
        let shown = view.shown(model, t);
        let indent = " ".repeat((depth as usize).min(label_w / 3));
        let name = truncate(&format!("{indent}{} {}", shown.glyph(), super::label::of(model, t).name), label_w);
        let buf = frame.buffer_mut();
        buf.set_stringn(inner.x, y, &name, label_w, theme.status(shown));
        buf.set_stringn(bars_x - 1, y, "│", 1, theme.border);
        bar_row(buf, bars_x, y, th, &scale, now, &theme);
        view.layout.timeline_rows.push((y, row_index));
        if sel_row.is_some() && k == sel {
            let style = if focused { theme.selected } else { theme.selected_idle };
            buf.set_style(Rect { x: inner.x, y, width: label_w as u16, height: 1 }, style);
        }
    }
    if rows.is_empty() {
        let msg = Span::styled("no agents yet", theme.dim);
        frame.render_widget(Paragraph::new(msg), Rect { y: inner.y + 1, height: 1, ..inner });
    }
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
fn axis(frame: &mut Frame, area: Rect, bars_x: u16, scale: &Scale, start: i64, theme: &super::theme::Theme) {
    let buf = frame.buffer_mut();
    buf.set_stringn(area.x, area.y, "agent", (bars_x - area.x) as usize, theme.dim);
    let mut x = 0;
    while x < scale.cols {
        let ms = scale.from + ((scale.to - scale.from) as f64 * x as f64 / (scale.cols.max(2) - 1) as f64) as i64;
        let label = format!("╵{}", duration(ms - start));
        let w = width(&label);
        if x + w > scale.cols {
            break;
        }
        buf.set_stringn(bars_x + x as u16, area.y, &label, w, theme.dim);
        x += w.max(10) + 2;
    }
}

/// One agent's turns, ticks and waits across the bar area.
fn bar_row(
    buf: &mut ratatui::buffer::Buffer,
    x0: u16,
    y: u16,
    t: &Thread,
    scale: &Scale,
    now: i64,
    theme: &super::theme::Theme,
) {
    for turn in &t.turns {
        let Some(a) = turn.started_ms.or(t.first_ms) else { continue };
        let b = turn.completed_ms.unwrap_or(if turn.status == TurnStatus::InProgress { now } else { a });
        let Some((c0, c1)) = scale.span(a, b) else { continue };
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
            let b = item.completed_ms.unwrap_or(now);
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
    item.kind == ItemKind::Collab && item.tool.as_deref() == Some("wait")
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
