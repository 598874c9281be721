//! The agents pane: the rows of [`super::outline`] with tree guides, status glyphs and figures in
//! right-aligned columns. Only the rows on screen are turned into text.

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::Feed;
use super::outline::{NodeId, Row, groups};
use super::text::{Shown, duration, elapsed, fit, right, short_model, tokens, truncate, width};
use super::theme::Theme;
use super::view::{Pane, View};
use crate::model::{ItemKind, Model, Status, Thread, TurnStatus, format_usd};
use crate::router::ThreadIdx;

/// Which figure columns fit, widest pane first.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Copy)]
struct Columns {
    model: bool,
    elapsed: bool,
    tokens: bool,
    cost: bool,
}

const MODEL_W: usize = 10;
const ELAPSED_W: usize = 7;
const TOKENS_W: usize = 7;
const COST_W: usize = 8;

impl Columns {
    fn for_width(w: usize) -> Self {
        Self { cost: w >= 24, elapsed: w >= 30, tokens: w >= 42, model: w >= 52 }
    }

    fn width(self) -> usize {
        usize::from(self.model) * MODEL_W
            + usize::from(self.elapsed) * ELAPSED_W
            + usize::from(self.tokens) * TOKENS_W
            + usize::from(self.cost) * COST_W
    }
}

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View) {
    let theme = &view.theme;
    let focused = view.focus == Pane::Tree && view.overlay.is_none();
    let mut title = vec![Span::styled(" agents ", theme.title)];
    if !view.filter.is_empty() || view.typing {
        title.push(Span::styled(format!("/{}", view.filter), theme.warn));
        if view.typing {
            title.push(Span::styled("▏", theme.warn));
        }
        title.push(Span::raw(" "));
    }
    if view.follow {
        title.push(Span::styled("follow ", theme.running));
    }
    let block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    view.layout.tree = area;
    let height = inner.height as usize;
    let rows = view.rows();
    if rows.is_empty() {
        let msg = if view.filter.is_empty() { "waiting for the first thread…" } else { "nothing matches the filter" };
        frame.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), inner);
        view.layout.tree_offset = 0;
        return;
    }
    // Keep the selection on screen, scrolling as little as possible.
    let sel = view.selected_row().unwrap_or(0);
    let mut offset = view.layout.tree_offset.min(rows.len().saturating_sub(height));
    if sel < offset {
        offset = sel;
    } else if height > 0 && sel >= offset + height {
        offset = sel + 1 - height;
    }
    let cols = Columns::for_width(inner.width as usize);
    let lines: Vec<Line<'static>> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, row)| {
            let mut line = row_line(model, feed, theme, row, inner.width as usize, cols);
            if i == sel {
                line = line.patch_style(if focused { theme.selected } else { theme.selected_idle });
            }
            line
        })
        .collect();
    view.layout.tree_offset = offset;
    frame.render_widget(Paragraph::new(lines), inner);
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
    let marker = match (row.has_children, row.open) {
        (true, true) => '▾',
        (true, false) => '▸',
        (false, _) if row.depth > 0 => '─',
        (false, _) => ' ',
    };
    if row.depth > 0 {
        s.push(if row.last { '└' } else { '├' });
    }
    s.push(marker);
    s.push(' ');
    s
}

fn row_line(model: &Model, feed: &Feed, theme: &Theme, row: &Row, w: usize, mut cols: Columns) -> Line<'static> {
    let mut spans = vec![Span::styled(guides(row), theme.dim)];
    let lead: usize = spans.iter().map(|s| width(&s.content)).sum();
    // A deep row on a narrow pane keeps room for an 8-digit id: its elapsed time goes first
    // (the cost column stays aligned with the other rows).
    if cols.elapsed && w.saturating_sub(lead + cols.width()) < 10 {
        cols.elapsed = false;
    }
    let label_w = w.saturating_sub(lead + cols.width());
    // Rows that are not threads have no figures: their label may use the whole row.
    let wide_w = w.saturating_sub(lead);
    match row.id {
        NodeId::Thread(t) => thread_cells(model, feed, theme, t, label_w, cols, &mut spans),
        NodeId::Turn(t, turn) => {
            let th = model.thread(t);
            let (glyph, style) = match th.turns.get(turn as usize).map(|x| x.status) {
                Some(TurnStatus::InProgress) => ("●", theme.running),
                Some(TurnStatus::Completed) => ("✓", theme.done),
                Some(TurnStatus::Failed) => ("✗", theme.failed),
                Some(TurnStatus::Interrupted) => ("◼", theme.interrupted),
                None => ("○", theme.pending),
            };
            spans.push(Span::styled(format!("{glyph} "), style));
            let label = format!("turn {}", turn + 1);
            let room = wide_w.saturating_sub(2);
            match prompt_of_turn(th, turn as usize) {
                Some(prompt) if room >= width(&label) + 10 => {
                    spans.push(Span::raw(label.clone()));
                    spans.push(Span::styled(format!(" {}", fit(prompt, room - width(&label) - 1)), theme.dim));
                }
                _ => spans.push(Span::raw(fit(&label, room))),
            }
        }
        NodeId::Group(t, first) => {
            let th = model.thread(t);
            let (gs, _) = groups(model, th);
            let g = gs.iter().find(|g| g.first == first);
            let (label, n, active) = g.map_or(("spawn", 0, 0), |g| {
                let active = g.lanes.iter().filter(|&&c| model.thread(c).status.is_active()).count();
                (g.label, g.lanes.len(), active)
            });
            spans.push(Span::styled("⑂ ", theme.tool));
            let mut text = format!("{label} ×{n}");
            if active > 0 {
                let _ = write!(text, " · {active} active");
            }
            spans.push(Span::raw(fit(&text, wide_w.saturating_sub(2))));
        }
        NodeId::Unattributed => {
            spans.push(Span::styled("? ", theme.warn));
            spans.push(Span::styled(
                fit(&format!("unattributed ×{}", model.unattributed.len()), wide_w.saturating_sub(2)),
                theme.warn,
            ));
        }
        NodeId::Pending => {
            spans.push(Span::styled("○ ", theme.pending));
            spans.push(Span::styled(fit("pending registration", wide_w.saturating_sub(2)), theme.dim));
        }
    }
    Line::from(spans)
}

fn thread_cells(
    model: &Model,
    feed: &Feed,
    theme: &Theme,
    idx: ThreadIdx,
    label_w: usize,
    cols: Columns,
    spans: &mut Vec<Span<'static>>,
) {
    let t = model.thread(idx);
    let shown = Shown::of(t, feed.now_ms, feed.stall_ms);
    spans.push(Span::styled(format!("{} ", shown.glyph()), theme.status(shown)));
    let name_style = match t.status {
        Status::Failed => theme.failed,
        _ if t.parent.is_none() => theme.bold,
        _ => Style::new(),
    };
    let room = label_w.saturating_sub(2);
    let name = t.name();
    // Until a child's nickname arrives (often only with `thread/read`), and for every root, the
    // name is a short id; the prompt that spawned the child, or the root's first prompt, says
    // which one it is.
    let hint = (t.nickname.is_none() && t.agent_path.is_none())
        .then(|| match t.parent {
            Some(p) => {
                let parent = model.threads.get(p.index())?;
                let prompt = parent.item(t.card.as_deref()?)?.title.as_str();
                prompt.lines().next().filter(|p| !p.is_empty())
            }
            None => prompt_of_turn(t, 0),
        })
        .flatten();
    match hint {
        Some(prompt) if room >= width(&name) + 10 => {
            spans.push(Span::styled(name.clone(), name_style));
            spans.push(Span::styled(format!(" {}", fit(prompt, room - width(&name) - 1)), theme.dim));
        }
        _ => spans.push(Span::styled(fit(&name, room), name_style)),
    }
    if cols.model {
        let m = t.model.as_ref().map_or("?", |m| short_model(m.as_str()));
        spans.push(Span::styled(format!(" {}", fit(m, MODEL_W - 1)), theme.model));
    }
    if cols.elapsed {
        let e = elapsed(t, feed.now_ms).map(duration).unwrap_or_default();
        spans.push(Span::styled(right(&e, ELAPSED_W), theme.dim));
    }
    if cols.tokens {
        spans.push(Span::raw(right(&tokens(t.tokens.total), TOKENS_W)));
    }
    if cols.cost {
        let cost = format_usd(t.cost);
        let style = if t.cost.is_none() { theme.dim } else { theme.cost };
        spans.push(Span::styled(right(&truncate(&cost, COST_W - 1), COST_W), style));
    }
}

/// The first line of the user message that opened a turn, if the turn starts with one.
fn prompt_of_turn(t: &Thread, turn: usize) -> Option<&str> {
    let &first = t.turns.get(turn)?.items.first()?;
    let item = t.items.get(first)?;
    (item.kind == ItemKind::UserMessage).then(|| item.text.as_str().lines().next()).flatten().filter(|l| !l.is_empty())
}
