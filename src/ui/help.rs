//! The `?` overlay: every binding of the keymap table, by section, in two columns when there is
//! room, then the legend of every glyph and mark. Keys that do not apply to this feed (replay
//! keys on a live one) are dimmed.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::keymap::{BINDINGS, Section, key_name};
use super::layout::Layout;
use super::legend;
use super::paint::{centred, overlay};
use super::text::{fit, width};
use super::view::View;

fn section_lines(section: Section, view: &View, col_w: usize) -> Vec<Line<'static>> {
    let theme = &view.theme;
    let mut lines = vec![Line::from(Span::styled(section.title(), theme.title))];
    let mut seen: Vec<&str> = Vec::new();
    for b in BINDINGS.iter().filter(|b| b.section == section && b.on_screen()) {
        // One entry per help text (Esc and q close overlays alike).
        if seen.contains(&b.help) {
            continue;
        }
        seen.push(b.help);
        let keys: Vec<String> = b.keys.iter().map(key_name).collect();
        let style = if b.replay && !view.derived.replay { theme.dim } else { theme.key };
        lines.push(Line::from(vec![
            Span::styled(format!("  {}", fit(&keys.join(" "), 10)), style),
            Span::raw(fit(b.help, col_w.saturating_sub(12))),
        ]));
    }
    lines.push(Line::default());
    lines
}

/// Two columns side by side when `two`, else one after the other.
fn columns(left: Vec<Line<'static>>, right: Vec<Line<'static>>, two: bool, col_w: usize) -> Vec<Line<'static>> {
    if !two {
        return left.into_iter().chain(right).collect();
    }
    let n = left.len().max(right.len());
    (0..n)
        .map(|i| {
            let mut spans: Vec<Span<'static>> = left.get(i).map(|l| l.spans.clone()).unwrap_or_default();
            let used: usize = spans.iter().map(|s| width(&s.content)).sum();
            spans.push(Span::raw(" ".repeat(col_w.saturating_sub(used))));
            spans.extend(right.get(i).map(|l| l.spans.clone()).unwrap_or_default());
            Line::from(spans)
        })
        .collect()
}

/// How the machine view groups its sessions and when an ended one leaves.
fn machine_lines(view: &View) -> Vec<Line<'static>> {
    // Short lines: the overlay is one 58-column column on a small terminal.
    let keep = view.derived.tops.keep_ms.map_or_else(
        || "stay (--keep D ages them out)".to_owned(),
        |ms| format!("leave {} after their last activity (--keep)", super::text::quiet(ms)),
    );
    [
        "machine view: agent ▸ project ▸ session rows fold with ←→".to_owned(),
        "  / also matches an agent or a project's folder".to_owned(),
        "  a session row: live/idle/ended, pid, CPU %, mem, last seen".to_owned(),
        format!("  ended sessions are dimmed and {keep}; d counts them"),
    ]
    .into_iter()
    .map(|text| Line::from(Span::styled(text, view.theme.dim)))
    .collect()
}

/// A legend group: its title, then each mark in its own style and what it means.
fn legend_lines(group: &legend::Group, view: &View, col_w: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(group.title, view.theme.title))];
    for m in &group.marks {
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(fit(m.glyph, 10), m.style),
            Span::raw(fit(m.meaning, col_w.saturating_sub(12))),
        ]));
    }
    lines.push(Line::default());
    lines
}

pub fn draw(frame: &mut Frame, area: Rect, view: &View, layout: &mut Layout) {
    let two = area.width >= 106;
    // Wide enough, the columns grow so that no help text is cut.
    let col_w: usize = if two { (usize::from(area.width).saturating_sub(6) / 2).clamp(50, 64) } else { 58 };
    let left_sections = [Section::Move, Section::Panes, Section::History];
    let right_sections = [Section::Filter, Section::Timeline, Section::Replay, Section::Act, Section::App];
    let left: Vec<Line<'static>> = left_sections.iter().flat_map(|&s| section_lines(s, view, col_w)).collect();
    let right: Vec<Line<'static>> = right_sections.iter().flat_map(|&s| section_lines(s, view, col_w)).collect();
    let mut lines = columns(left, right, two, col_w);
    lines.push(Line::from(Span::styled(
        "mouse: click selects, click again folds; the wheel scrolls the pane under it",
        view.theme.dim,
    )));
    if view.derived.machine {
        lines.extend(machine_lines(view));
    }
    lines.push(Line::default());
    let legend = legend::groups(&view.theme);
    let (left, right) = legend.split_at(3);
    let flow = |groups: &[legend::Group]| groups.iter().flat_map(|g| legend_lines(g, view, col_w)).collect();
    lines.extend(columns(flow(left), flow(right), two, col_w));
    let w = (if two { col_w * 2 + 4 } else { col_w + 4 }) as u16;
    let w = w.min(area.width.saturating_sub(2));
    let h = (lines.len() as u16 + 2).min(area.height);
    let rect = centred(area, w, h);
    let scroll = overlay(frame, rect, ("keys and marks", 1), lines, view.panes.overlay_scroll, &view.theme);
    layout.overlay = rect;
    layout.overlay_scroll = Some(scroll);
}
