//! The `?` overlay: every binding of the keymap table, those of every pane by what they are for,
//! the others under the panes they are pressed in (as the table says where each applies), in two
//! columns when there is room, then the legend of every glyph and mark. Keys that do not apply to
//! this feed (replay keys on a live one) are dimmed.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::keymap::{BINDINGS, Binding, Section, When, key_name};
use super::layout::Layout;
use super::legend;
use super::paint::{centred, overlay};
use super::text::{fit, width};
use super::view::View;

/// The panes, as help names where a key is pressed.
const PANES: [(When, &str); 4] =
    [(When::TREE, "Tree"), (When::LANES, "Lanes"), (When::COST, "Cost table"), (When::TIMELINE, "Timeline (t)")];

/// The panes `b` is pressed in, as a mask of [`PANES`].
fn panes_of(b: &Binding) -> u8 {
    PANES.iter().enumerate().filter(|(_, (w, _))| b.when.has(*w)).fold(0, |m, (i, _)| m | 1 << i)
}

const EVERY_PANE: u8 = 0b1111;

/// `Tree, cost table and timeline (t)`: where a group of keys is pressed.
fn where_title(mask: u8) -> String {
    let names: Vec<&str> = PANES.iter().enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, (_, n))| *n).collect();
    match names.as_slice() {
        [one] => (*one).to_owned(),
        [first, middle @ .., last] => {
            let rest: Vec<String> = middle.iter().chain([last]).map(|n| n.to_lowercase()).collect();
            let (init, last) = rest.split_at(rest.len() - 1);
            let init = std::iter::once((*first).to_owned()).chain(init.iter().cloned()).collect::<Vec<_>>().join(", ");
            format!("{init} and {}", last[0])
        }
        [] => String::new(),
    }
}

/// One line per binding (one per help text: Esc and q close overlays alike), under `title`.
fn lines_of<'a>(
    title: &str,
    bindings: impl Iterator<Item = &'a Binding>,
    view: &View,
    col_w: usize,
) -> Vec<Line<'static>> {
    let theme = &view.theme;
    let mut lines = vec![Line::from(Span::styled(title.to_owned(), theme.title))];
    let mut seen: Vec<&str> = Vec::new();
    for b in bindings {
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
    lines
}

/// Keys that work in every pane, by what they are for: one block of lines each.
fn everywhere(view: &View, col_w: usize) -> Vec<Vec<Line<'static>>> {
    [Section::Move, Section::Panes, Section::History, Section::Act, Section::Replay, Section::App]
        .into_iter()
        .map(|section| {
            let keys = BINDINGS.iter().filter(move |b| b.section == section && panes_of(b) == EVERY_PANE);
            lines_of(section.title(), keys, view, col_w)
        })
        .collect()
}

/// Keys of some panes only, under the panes they are pressed in (the components' own commands, as
/// the keymap says where each applies: `/` filters in the tree and searches in the lanes), then
/// the keys of the prompts: one block of lines each.
fn by_pane(view: &View, col_w: usize) -> Vec<Vec<Line<'static>>> {
    let mut masks: Vec<u8> = BINDINGS.iter().map(panes_of).filter(|&m| m != 0 && m != EVERY_PANE).collect();
    // Single panes first, in the screen's order; keys shared by several after them.
    masks.sort_by_key(|m| (m.count_ones(), *m));
    masks.dedup();
    let mut blocks: Vec<Vec<Line<'static>>> = masks
        .into_iter()
        .map(|m| lines_of(&where_title(m), BINDINGS.iter().filter(move |b| panes_of(b) == m), view, col_w))
        .collect();
    let prompts = [
        (When::TYPING, "Typing a filter"),
        (When::SEARCH, "Typing a search"),
        (When::HISTORY_VIEW, "In the history list"),
        (When::ACT, "In the interrupt dialog"),
    ];
    for (when, title) in prompts {
        let keys = BINDINGS.iter().filter(move |b| b.when.has(when) && panes_of(b) == 0);
        blocks.push(lines_of(title, keys, view, col_w));
    }
    blocks
}

/// Blocks in reading order, split where the two columns come out most even.
fn halves(blocks: Vec<Vec<Line<'static>>>) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let total: usize = blocks.iter().map(Vec::len).sum();
    let mut left_len = 0;
    let mut split = blocks.len();
    for (i, b) in blocks.iter().enumerate() {
        // Stop where adding the next block would overshoot the middle more than leaving it out.
        if left_len * 2 >= total || (left_len + b.len()) * 2 > total + b.len() {
            split = i;
            break;
        }
        left_len += b.len();
    }
    let mut blocks = blocks;
    let right = blocks.split_off(split);
    (blocks.into_iter().flatten().collect(), right.into_iter().flatten().collect())
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
    let mut blocks = everywhere(view, col_w);
    blocks.extend(by_pane(view, col_w));
    let (left, right) = halves(blocks);
    let mut lines = columns(left, right, two, col_w);
    lines.push(Line::default());
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
