//! Writing text already fitted to its place into the frame's buffer. Panes use these rather than
//! a `Paragraph`: their lines are already wrapped and fitted, and skipping the paragraph's own
//! reflow keeps a frame's cost at the cells written.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph};

use super::text::{truncate, width};
use super::theme::Theme;

/// Writes lines top-down into `area`, each cut at its width.
pub fn put_lines(frame: &mut Frame, area: Rect, lines: &[Line<'_>]) {
    let buf = frame.buffer_mut();
    for (line, y) in lines.iter().zip(area.top()..area.bottom()) {
        buf.set_line(area.x, y, line, area.width);
    }
}

/// Writes `text` right-aligned in the column of `col_w` cells that ends at `end` (columns from
/// `inner.x`); returns where the column starts.
pub fn put_right(
    buf: &mut Buffer,
    inner: Rect,
    y: u16,
    (end, col_w): (usize, usize),
    text: &str,
    style: Style,
) -> usize {
    let text = truncate(text, col_w.saturating_sub(1));
    let x = end.saturating_sub(width(&text));
    buf.set_stringn(inner.x + x as u16, y, &text, col_w, style);
    end.saturating_sub(col_w)
}

/// A `w`×`h` rectangle in the middle of `area` (cut to it).
pub fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// An overlay over `rect`: `lines` in a box titled `title`, scrolled down `scroll` lines as far as
/// they go; returns the scroll drawn.
pub fn overlay(
    frame: &mut Frame,
    rect: Rect,
    (title, padding): (&str, u16),
    lines: Vec<Line<'static>>,
    scroll: usize,
    theme: &Theme,
) -> usize {
    let inner_h = rect.height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(inner_h));
    let block = Block::bordered()
        .padding(Padding::horizontal(padding))
        .border_style(theme.border_focus)
        .title(Span::styled(format!(" {title} "), theme.title))
        .title_bottom(Span::styled(" ↑↓ scroll · Esc close ", theme.dim));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll as u16, 0)), rect);
    scroll
}
