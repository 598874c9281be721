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
    lines.push(Line::default());
    lines.push(answers(view));
    let w = area.width.min(76);
    // Wrapped lines take more rows than there are lines: a generous guess, cut to the area.
    let inner = usize::from(w.saturating_sub(4)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let h = u16::try_from(rows + 2).unwrap_or(u16::MAX).min(area.height);
    let rect = centred(area, w, h);
    let block = Block::bordered()
        .border_style(theme.warn)
        .title(Span::styled(" interrupt? ", theme.title))
        .padding(Padding::horizontal(1));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), rect);
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
