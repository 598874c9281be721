//! The history list: one row per past root session, newest first, in the columns of `swarmtop
//! history`; the least needed columns leave first on a narrow screen, the name takes what is left.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{HistoryView, Listing, Past, shown};
use crate::model::format_usd;
use crate::ui::layout::{Layout, scrolled};
use crate::ui::paint::{centred, put_lines};
use crate::ui::text::{duration, fit, right, tokens, truncate_middle};
use crate::ui::theme::Theme;
use crate::ui::view::View;

/// A column: its title, its width, and how long it stays as the screen narrows (1 stays longest).
struct Col {
    title: &'static str,
    width: usize,
    keep: u8,
    right: bool,
}

const fn col(title: &'static str, width: usize, keep: u8, right: bool) -> Col {
    Col { title, width, keep, right }
}

/// The columns before the name, in order.
const COLS: [Col; 10] = [
    col("START", 16, 1, false),
    col("AGENT", 8, 2, false),
    col("ID", 8, 6, false),
    col("PROJECT", 22, 4, false),
    col("TIME", 8, 3, true),
    col("STATUS", 13, 1, false),
    col("AGENTS", 6, 3, true),
    col("DEPTH", 5, 5, true),
    col("TOKENS", 7, 2, true),
    col("COST", 8, 1, true),
];

/// The name's column is never narrower than this while other columns can leave.
const NAME_MIN: usize = 16;

/// Which columns fit in `width`.
fn fitting(width: usize) -> [bool; COLS.len()] {
    let mut on = [true; COLS.len()];
    let used = |on: &[bool; COLS.len()]| -> usize {
        COLS.iter().zip(on).filter(|(_, on)| **on).map(|(c, _)| c.width + 1).sum::<usize>() + NAME_MIN
    };
    while used(&on) > width {
        let Some(worst) = (0..COLS.len()).filter(|&i| on[i]).max_by_key(|&i| (COLS[i].keep, i)) else { break };
        if COLS[worst].keep == 1 {
            break;
        }
        on[worst] = false;
    }
    on
}

fn cell(text: &str, c: &Col) -> String {
    if c.right { right(text, c.width) } else { fit(text, c.width) }
}

fn row(p: &Past, on: &[bool; COLS.len()], name_w: usize, theme: &Theme, base: Style) -> Line<'static> {
    let status = shown(p.status.as_str(), false);
    let texts = [
        p.start.clone().unwrap_or_else(|| "?".to_owned()),
        p.agent.to_string(),
        p.id.as_str().chars().take(8).collect(),
        p.project.as_ref().map_or_else(|| "?".to_owned(), |pr| truncate_middle(pr.as_str(), COLS[3].width)),
        p.elapsed_ms.map_or_else(|| "?".to_owned(), duration),
        format!("{} {}", status.glyph(), p.status),
        p.agents.to_string(),
        p.depth.to_string(),
        tokens(p.tokens.total),
        format_usd(p.cost),
    ];
    let mut spans = Vec::with_capacity(COLS.len() * 2 + 2);
    for (i, (c, text)) in COLS.iter().zip(texts).enumerate() {
        if !on[i] {
            continue;
        }
        let style = match c.title {
            "STATUS" => base.patch(theme.status(status)),
            "COST" => base.patch(theme.cost),
            "START" | "ID" | "PROJECT" => base.patch(theme.dim),
            _ => base,
        };
        spans.push(Span::styled(cell(&text, c), style));
        spans.push(Span::styled(" ", base));
    }
    // Files gone: Enter opens it from the store.
    let mark = if p.files_present { "" } else { "◇ " };
    spans.push(Span::styled(fit(&format!("{mark}{}", p.name), name_w), base));
    Line::from(spans)
}

fn header(on: &[bool; COLS.len()], name_w: usize, theme: &Theme) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = COLS
        .iter()
        .zip(on)
        .filter(|(_, on)| **on)
        .map(|(c, _)| Span::styled(format!("{} ", cell(c.title, c)), theme.title))
        .collect();
    spans.push(Span::styled(fit("NAME", name_w), theme.title));
    Line::from(spans)
}

/// Lines in the middle of `area`: reading, failed, empty, opening.
pub(super) fn message(frame: &mut Frame, area: Rect, lines: Vec<Line<'static>>) {
    let rect = centred(area, area.width, lines.len() as u16);
    frame.render_widget(Paragraph::new(lines).alignment(Alignment::Center), rect);
}

fn title(h: &HistoryView, total: usize, shown_n: usize) -> String {
    if !matches!(h.listing, Listing::Ready(_)) {
        return " history ".to_owned();
    }
    let sessions = if total == 1 { "session" } else { "sessions" };
    if h.filter.query.is_empty() {
        format!(" history · {total} past {sessions} ")
    } else {
        format!(" history · {shown_n} of {total} {sessions} match \"{}\" ", h.filter.query)
    }
}

pub fn draw(frame: &mut Frame, area: Rect, view: &View, layout: &mut Layout) {
    let (h, theme) = (&view.history, &view.theme);
    let shown_idx = h.shown();
    let total = match &h.listing {
        Listing::Ready(all) => all.len(),
        _ => 0,
    };
    let block = Block::bordered()
        .border_style(theme.border_focus)
        .title(Span::styled(title(h, total, shown_idx.len()), theme.title))
        .title_bottom(Span::styled(
            " ⏎ open (◇ files gone: from the store) · / filter · r sync · Esc back ",
            theme.dim,
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    layout.history = area;
    let all = match &h.listing {
        Listing::Unread | Listing::Reading => {
            let lines = vec![Line::from(Span::styled("syncing and reading the run store…", theme.dim))];
            return message(frame, inner, lines);
        }
        Listing::Failed(why) => {
            let lines = vec![
                Line::from(Span::styled("the run store could not be read", theme.error)),
                Line::from(Span::styled(why.clone(), theme.dim)),
            ];
            return message(frame, inner, lines);
        }
        Listing::Ready(all) => all,
    };
    if shown_idx.is_empty() {
        let text = if all.is_empty() {
            "no sessions in the run store yet: `swarmtop sync` indexes this machine's"
        } else {
            "no session matches the filter (Esc clears it)"
        };
        return message(frame, inner, vec![Line::from(Span::styled(text, theme.dim))]);
    }
    let width = inner.width as usize;
    let on = fitting(width);
    let used: usize = COLS.iter().zip(&on).filter(|(_, on)| **on).map(|(c, _)| c.width + 1).sum();
    let name_w = width.saturating_sub(used);
    let rows_h = (inner.height as usize).saturating_sub(1);
    let selected = h.selected.min(shown_idx.len() - 1);
    let offset = scrolled(layout.history_offset, selected, shown_idx.len(), rows_h);
    layout.history_offset = offset;
    let mut lines = vec![header(&on, name_w, theme)];
    for (k, &i) in shown_idx.iter().enumerate().skip(offset).take(rows_h) {
        let base = if k == selected { theme.selected } else { Style::default() };
        lines.push(row(&all[i], &on, name_w, theme, base));
        layout.history_rows.push((inner.y + 1 + (k - offset) as u16, k));
    }
    put_lines(frame, inner, &lines);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_screens_drop_the_least_needed_columns_first() {
        let wide = fitting(200);
        assert!(wide.iter().all(|&on| on));
        let narrow = fitting(78);
        let kept: Vec<&str> = COLS.iter().zip(narrow).filter(|(_, on)| *on).map(|(c, _)| c.title).collect();
        assert!(kept.contains(&"START") && kept.contains(&"STATUS") && kept.contains(&"COST"));
        assert!(!kept.contains(&"ID") && !kept.contains(&"DEPTH"));
        let used: usize = COLS.iter().zip(narrow).filter(|(_, on)| *on).map(|(c, _)| c.width + 1).sum();
        assert!(used + NAME_MIN <= 78);
    }
}
