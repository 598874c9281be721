//! The footer: the keys valid right now, from the keymap table, the least important dropped first
//! when the terminal is narrow.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::keymap::footer_entries;
use super::text::width;
use super::view::View;

pub fn draw(frame: &mut Frame, area: Rect, view: &View) {
    let theme = &view.theme;
    let mut entries = footer_entries(view);
    let w = area.width as usize;
    let cost =
        |e: &[(String, &str, u8)]| -> usize { e.iter().map(|(k, h, _)| width(k) + width(h) + 3).sum::<usize>() + 1 };
    let notice_w = view.panes.notice.as_deref().map_or(0, |n| width(n) + 2);
    while cost(&entries) + notice_w > w {
        let Some(worst) = entries.iter().map(|e| e.2).max() else {
            break;
        };
        let Some(at) = entries.iter().rposition(|e| e.2 == worst) else {
            break;
        };
        entries.remove(at);
    }
    let mut spans = vec![Span::raw(" ")];
    if let Some(notice) = &view.panes.notice {
        spans.push(Span::styled(format!("{notice}  "), theme.running));
    }
    let (main, past) = (&view.panes.filter, &view.history.filter);
    let typed = if main.typing { Some(&main.query) } else { past.typing.then_some(&past.query) };
    if let Some(query) = typed {
        spans.push(Span::styled("filter: ", theme.dim));
        spans.push(Span::styled(format!("{query}▏ "), theme.warn));
    }
    for (keys, hint, _) in entries {
        spans.push(Span::styled(keys, theme.key));
        spans.push(Span::styled(format!(" {hint}  "), theme.dim));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
