//! The interrupt dialog drawn over the body ([`super::acting`] holds its state): the agent, what
//! will stop and how, then each confirmed stop or why it failed, and the keys that answer it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph, Wrap};

use super::acting::{Plan, Stage};
use super::keymap::footer_entries;
use super::layout::Layout;
use super::paint::centred;
use super::view::{Overlay, View};

/// Draws the open dialog over `area`.
pub fn draw(frame: &mut Frame, area: Rect, view: &View, layout: &mut Layout) {
    let Some(d) = view.acting.dialog.as_ref().filter(|_| view.panes.overlay == Some(Overlay::Act)) else {
        return;
    };
    let theme = &view.theme;
    let what = if d.ask.subtree { "and everything below it" } else { "alone" };
    let mut lines = vec![Line::from(vec![
        Span::raw("Interrupt "),
        Span::styled(d.label.clone(), theme.bold),
        Span::raw(format!(" {what}")),
    ])];
    lines.push(Line::from(Span::styled(d.ask.target.clone(), theme.dim)));
    lines.push(Line::default());
    let plan = |lines: &mut Vec<Line<'static>>, p: &Plan| {
        lines.extend(p.how.iter().map(|h| Line::from(h.clone())));
        lines.push(Line::from(Span::styled("stops, in this order:", theme.dim)));
        lines.extend(p.stops.iter().map(|s| Line::from(format!("  {s}"))));
    };
    match &d.stage {
        Stage::Finding => lines.push(Line::from(Span::styled("finding what carries it…", theme.dim))),
        Stage::Unable(why) => {
            lines.push(Line::from(Span::styled(format!("cannot interrupt it: {why}"), theme.error)));
        }
        Stage::Ready(p) => plan(&mut lines, p),
        Stage::Stopping(p) => {
            plan(&mut lines, p);
            lines
                .push(Line::from(Span::styled("interrupting… (Esc hides this; the footer tells the end)", theme.warn)));
        }
        Stage::Done(p, result) => {
            plan(&mut lines, p);
            match result {
                Ok(done) => lines.extend(done.iter().map(|l| Line::from(Span::styled(format!("✓ {l}"), theme.done)))),
                Err(why) => lines.push(Line::from(Span::styled(format!("✗ {why}"), theme.error))),
            }
        }
    }
    let w = area.width.min(76);
    let inner = w.saturating_sub(4).max(1);
    // The text, a blank row and the keys' row, inside the border.
    let text_rows: usize = lines.iter().map(|l| wrapped_rows(l, inner)).sum();
    let h = u16::try_from(text_rows + 4).unwrap_or(u16::MAX).min(area.height);
    let rect = centred(area, w, h);
    let block = Block::bordered()
        .border_style(theme.warn)
        .title(Span::styled(" interrupt? ", theme.title))
        .padding(Padding::horizontal(1));
    let body = block.inner(rect);
    frame.render_widget(Clear, rect);
    frame.render_widget(block, rect);
    // The keys keep their own last row: when the text is taller than the screen it is cut, never
    // the keys that answer the dialog.
    let keys_row = Rect { y: body.bottom().saturating_sub(1), height: body.height.min(1), ..body };
    let text = Rect { height: body.height.saturating_sub(2), ..body };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text);
    frame.render_widget(Paragraph::new(answers(view)), keys_row);
    layout.overlay = rect;
}

/// A dialog's answers, from the keymap as the footer prints them, so that the two always agree
/// (issue 23: the footer said `n close` while the dialog said `n/Esc leave it running`).
pub fn answers(view: &View) -> Line<'static> {
    let mut spans = Vec::new();
    for (keys, hint, _) in footer_entries(view) {
        spans.push(Span::styled(keys, view.theme.key));
        spans.push(Span::raw(format!(" {hint}   ")));
    }
    Line::from(spans)
}

/// Rows `line` takes wrapped at word boundaries into `width` columns, as [`Wrap`] breaks it: a word
/// that does not fit moves to the next row whole (a word wider than a row is cut across rows).
pub(super) fn wrapped_rows(line: &Line<'_>, width: u16) -> usize {
    let width = usize::from(width.max(1));
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let mut rows = 1;
    let mut used = 0;
    for word in text.split(' ') {
        let len = Line::from(word).width();
        let need = if used == 0 { len } else { used + 1 + len };
        if need <= width {
            used = need;
        } else {
            // A word first on its row does not open another before it.
            if used > 0 {
                rows += 1;
            }
            used = len;
            while used > width {
                rows += 1;
                used -= width;
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_words_moved_whole_and_words_cut_across_rows() {
        assert_eq!(wrapped_rows(&Line::from("short"), 10), 1);
        assert_eq!(wrapped_rows(&Line::from("aaaa bbbb cccc"), 10), 2);
        // A wrap at the character would fit 20 columns in 2 rows; at words it takes 3.
        assert_eq!(wrapped_rows(&Line::from("aaaaaaa bbbbbbb ccc"), 10), 3);
        assert_eq!(wrapped_rows(&Line::from("x".repeat(25)), 10), 3);
        assert_eq!(wrapped_rows(&Line::default(), 10), 1);
    }
}
