//! The lanes pane: the lanes of the selected card stacked, each a header and the live tail of the
//! child's stream; or one thread's transcript with scrollback. Rendering starts from the newest
//! item and walks back only as far as the rows on screen need.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::Feed;
use super::outline::{self, NodeId};
use super::text::{Shown, duration, elapsed, quiet, short_command, short_model, tokens, truncate, width, wrap_tail};
use super::theme::Theme;
use super::view::{Pane, View};
use crate::model::{Item, ItemKind, ItemStatus, Model, Status, Thread, format_usd};
use crate::router::ThreadIdx;

/// Tail lines sit under their lane's header, indented so the headers read as a column.
const INDENT: usize = 2;

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View) {
    let focused = view.focus == Pane::Lanes && view.overlay.is_none();
    let lanes: Vec<ThreadIdx> = match (view.expanded, view.selected) {
        (Some(t), _) => vec![t],
        (None, Some(sel)) => outline::lanes_of(model, sel),
        (None, None) => Vec::new(),
    };
    view.lane = view.lane.min(lanes.len().saturating_sub(1));
    let theme = &view.theme;
    let title = title(model, view, &lanes);
    let block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    view.layout.lanes = area;
    view.layout.lane_headers.clear();
    if inner.height == 0 || inner.width < 4 {
        return;
    }
    if lanes.is_empty() {
        let msg = "select an agent or a card in the tree";
        frame.render_widget(Paragraph::new(Span::styled(msg, view.theme.dim)), inner);
        return;
    }
    if lanes.len() == 1 {
        full(frame, inner, model, feed, view, lanes[0]);
    } else {
        stacked(frame, inner, model, feed, view, &lanes, focused);
    }
}

fn title(model: &Model, view: &View, lanes: &[ThreadIdx]) -> Vec<Span<'static>> {
    let theme = &view.theme;
    let text = match (view.expanded, view.selected) {
        (Some(t), _) => format!(" lane · {} ", model.thread(t).name()),
        (None, Some(NodeId::Thread(t))) => format!(" transcript · {} ", model.thread(t).name()),
        (None, Some(NodeId::Group(t, first))) => {
            let (gs, _) = outline::groups(model, model.thread(t));
            let g = gs.iter().find(|g| g.first == first);
            let turn = g.and_then(|g| g.turn).map(|k| format!(" · turn {}", k + 1)).unwrap_or_default();
            let label = g.map_or("spawn", |g| g.label);
            format!(" ⑂ {label} ×{}{turn} · {} ", lanes.len(), model.thread(t).name())
        }
        (None, Some(NodeId::Turn(t, k))) => {
            format!(" turn {} · {} · {} lanes ", k + 1, model.thread(t).name(), lanes.len())
        }
        (None, Some(NodeId::Unattributed)) => format!(" unattributed · {} ", lanes.len()),
        (None, Some(NodeId::Pending)) => format!(" pending · {} ", lanes.len()),
        (None, None) => " lanes ".to_owned(),
    };
    let mut spans = vec![Span::styled(text, theme.title)];
    if view.scroll > 0 && (view.expanded.is_some() || lanes.len() == 1) {
        spans.push(Span::styled(format!("↑{} ", view.scroll), theme.warn));
    }
    spans
}

/// One lane alone: header, then as much of the transcript as fits, `view.scroll` rows back.
fn full(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View, lane: ThreadIdx) {
    let theme = &view.theme;
    let t = model.thread(lane);
    let header = lane_header(t, feed, theme, area.width as usize, true);
    let rows = area.height.saturating_sub(1) as usize;
    let tw = (area.width as usize).saturating_sub(INDENT);
    let (mut lines, avail) = tail(model, t, tw, rows + view.scroll, theme);
    // Clamp the scroll to the history there is (Home asks for "as far as it goes").
    let max_scroll = avail.saturating_sub(rows);
    view.scroll = view.scroll.min(max_scroll);
    let keep = lines.len().saturating_sub(view.scroll);
    lines.truncate(keep);
    let start = lines.len().saturating_sub(rows);
    let mut out = Vec::with_capacity(rows + 1);
    out.push(header);
    out.extend(lines.drain(start..).map(indent));
    view.layout.lane_headers.push((Rect { height: 1, ..area }, 0));
    frame.render_widget(Paragraph::new(out), area);
}

fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = Vec::with_capacity(line.spans.len() + 1);
    spans.push(Span::raw("  "));
    spans.extend(line.spans);
    Line::from(spans)
}

/// Lanes stacked: every header, and the tails sharing the rows left, shortest need first.
fn stacked(
    frame: &mut Frame,
    area: Rect,
    model: &Model,
    feed: &Feed,
    view: &mut View,
    lanes: &[ThreadIdx],
    focused: bool,
) {
    let h = area.height as usize;
    let w = area.width as usize;
    let min_rows = |t: &ThreadIdx| if view.collapsed.contains(t) { 1 } else { 2 };
    // The window of lanes: the selected one and as many before it as fit at their minimum, then
    // as many after it (linear in the lanes, however many a card has).
    let sel = view.lane;
    let mut first = sel;
    let mut need = min_rows(&lanes[sel]);
    while first > 0 && need + min_rows(&lanes[first - 1]) <= h {
        first -= 1;
        need += min_rows(&lanes[first]);
    }
    let mut shown = Vec::new();
    let mut used = 0;
    for (i, t) in lanes.iter().enumerate().skip(first) {
        let need = min_rows(t);
        if used + need > h {
            break;
        }
        used += need;
        shown.push(i);
    }
    let theme = &view.theme;
    let tw = w.saturating_sub(INDENT);
    let rows_left = h.saturating_sub(shown.len());
    let open: Vec<usize> = (0..shown.len()).filter(|&k| !view.collapsed.contains(&lanes[shown[k]])).collect();
    let render = |k: usize, rows: usize| tail(model, model.thread(lanes[shown[k]]), tw, rows, theme).0;
    // Share the rows fairly; what short lanes leave goes to the lanes that had more to show. Two
    // passes at most, so the work stays within twice the rows on screen however many lanes.
    let mut tails: Vec<Vec<Line<'static>>> = vec![Vec::new(); shown.len()];
    if !open.is_empty() {
        let share = rows_left / open.len();
        for &k in &open {
            tails[k] = render(k, share);
        }
        let spare = rows_left - open.iter().map(|&k| tails[k].len()).sum::<usize>();
        let hungry: Vec<usize> = open.iter().copied().filter(|&k| tails[k].len() == share).collect();
        if spare > 0 && !hungry.is_empty() {
            let more = spare / hungry.len();
            let mut extra = spare % hungry.len();
            for &k in &hungry {
                let bonus = more + usize::from(extra > 0);
                extra = extra.saturating_sub(1);
                if bonus > 0 {
                    tails[k] = render(k, share + bonus);
                }
            }
        }
    }
    let mut out: Vec<Line<'static>> = Vec::with_capacity(h);
    for (&i, lines) in shown.iter().zip(tails) {
        let t = model.thread(lanes[i]);
        let mut header = lane_header(t, feed, theme, w, !view.collapsed.contains(&lanes[i]));
        if i == sel {
            header = header.patch_style(if focused { theme.selected } else { theme.selected_idle });
        }
        let y = area.y + out.len() as u16;
        view.layout.lane_headers.push((Rect { y, height: 1, ..area }, i));
        out.push(header);
        out.extend(lines.into_iter().map(indent));
    }
    frame.render_widget(Paragraph::new(out), area);
}

/// What a thread is doing right now, in a few words.
fn activity(t: &Thread) -> Option<(String, bool)> {
    if t.status == Status::Failed {
        let msg = t.last_error.as_ref().map_or("failed", |e| e.as_str());
        return Some((msg.lines().next().unwrap_or("").to_owned(), true));
    }
    if !t.status.is_active() {
        return None;
    }
    let item = t.current_item()?;
    let text = match &item.kind {
        ItemKind::Command => format!("$ {}", short_command(item.title.as_str())),
        ItemKind::FileChange => format!("✎ {}", item.title),
        ItemKind::McpTool | ItemKind::DynamicTool => format!("⚙ {}", item.title),
        ItemKind::WebSearch => format!("⌕ {}", item.title),
        ItemKind::Reasoning => "thinking…".to_owned(),
        ItemKind::AgentMessage => "writing…".to_owned(),
        ItemKind::Collab => format!("⑂ {}", item.tool.as_deref().unwrap_or("agent")),
        _ => return None,
    };
    Some((text.lines().next().unwrap_or("").to_owned(), false))
}

/// `● Kant  5.5  running 0:42  $ cargo test ─────── quiet 12s  1.8k  $0.0083`
fn lane_header(t: &Thread, feed: &Feed, theme: &Theme, w: usize, open: bool) -> Line<'static> {
    let shown = Shown::of(t, feed.now_ms, feed.stall_ms);
    let status_style = theme.status(shown);
    let mut left: Vec<Span<'static>> = vec![
        Span::styled(if open { "" } else { "▸" }.to_owned(), theme.dim),
        Span::styled(format!("{} ", shown.glyph()), status_style),
        Span::styled(t.name(), theme.bold),
    ];
    if let Some(m) = &t.model {
        left.push(Span::styled(format!("  {}", short_model(m.as_str())), theme.model));
    }
    let when = elapsed(t, feed.now_ms).map(|e| format!(" {}", duration(e))).unwrap_or_default();
    left.push(Span::styled(format!("  {}{when}", shown.word()), status_style));
    // (part, priority): when the row is short the highest number goes first, the cost last.
    let mut right: Vec<(Span<'static>, u8)> = Vec::new();
    if let (true, Some(now), Some(last)) = (t.status.is_active(), feed.now_ms, t.last_ms) {
        if now - last >= 1000 {
            // For a stalled lane the quiet time is the news; otherwise it goes first.
            let prio = if shown == Shown::Stalled { 1 } else { 3 };
            right.push((Span::styled(format!("  quiet {}", quiet(now - last)), theme.warn), prio));
        }
    }
    right.push((Span::raw(format!("  {}", tokens(t.tokens.total))), 2));
    let cost_style = if t.cost.is_some() { theme.cost } else { theme.dim };
    right.push((Span::styled(format!("  {} ", format_usd(t.cost)), cost_style), 1));
    let used = |s: &[Span<'_>]| s.iter().map(|x| width(&x.content)).sum::<usize>();
    let used_right = |r: &[(Span<'_>, u8)]| r.iter().map(|(x, _)| width(&x.content)).sum::<usize>();
    while !right.is_empty() && used(&left) + used_right(&right) > w {
        let Some(worst) = right.iter().map(|p| p.1).max() else {
            break;
        };
        right.retain(|p| p.1 != worst);
    }
    let right: Vec<Span<'static>> = right.into_iter().map(|(s, _)| s).collect();
    if let Some((what, bad)) = activity(t) {
        let room = w.saturating_sub(used(&left) + used(&right) + 4);
        if room >= 12 {
            left.push(Span::styled(format!("  {}", truncate(&what, room)), if bad { theme.error } else { theme.dim }));
        }
    }
    let fill = w.saturating_sub(used(&left) + used(&right) + 1);
    if fill > 0 {
        left.push(Span::styled(format!(" {}", "─".repeat(fill)), theme.border));
    }
    left.extend(right);
    Line::from(left)
}

/// The last `rows` display rows of a thread's stream, and how many rows it has (up to `rows`).
/// Items are walked from the newest back; each renders only its own tail.
pub fn tail(model: &Model, t: &Thread, width: usize, rows: usize, theme: &Theme) -> (Vec<Line<'static>>, usize) {
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut have = 0;
    // A failure ends the stream with its reason (the error line carries no item).
    if matches!(t.status, Status::Failed | Status::Retrying) && rows > 0 {
        if let Some(err) = &t.last_error {
            let lead = if t.status == Status::Failed { "✗ " } else { "↻ " };
            let (wrapped, more) = wrap_tail(err.as_str(), width.saturating_sub(2).max(1), rows);
            let lines: Vec<Line<'static>> = wrapped
                .into_iter()
                .enumerate()
                .map(|(k, row)| {
                    let lead = if k == 0 && !more { lead } else { "  " };
                    Line::from(Span::styled(format!("{lead}{row}"), theme.error))
                })
                .collect();
            have += lines.len();
            chunks.push(lines);
        }
    }
    for item in t.items.iter().rev() {
        if have >= rows {
            break;
        }
        let lines = item_lines(model, item, width, rows - have, theme);
        have += lines.len();
        chunks.push(lines);
    }
    let mut out = Vec::with_capacity(have);
    for chunk in chunks.into_iter().rev() {
        out.extend(chunk);
    }
    (out, have)
}

/// A part of an item: a lead (`$ `, `› `…) on its first row, the text wrapped after it.
struct Part<'a> {
    lead: &'static str,
    lead_style: Style,
    text: std::borrow::Cow<'a, str>,
    style: Style,
    diff: bool,
}

fn part<'a>(
    lead: &'static str,
    lead_style: Style,
    text: impl Into<std::borrow::Cow<'a, str>>,
    style: Style,
) -> Part<'a> {
    Part { lead, lead_style, text: text.into(), style, diff: false }
}

fn parts<'a>(model: &Model, item: &'a Item, theme: &Theme) -> Vec<Part<'a>> {
    let text = item.text.as_str();
    let title = item.title.as_str();
    let mut out = Vec::new();
    match &item.kind {
        ItemKind::UserMessage => out.push(part("› ", theme.user, text, theme.user)),
        ItemKind::AgentMessage => out.push(part("", theme.base, text, theme.base)),
        ItemKind::Reasoning => out.push(part("", theme.reasoning, text, theme.reasoning)),
        ItemKind::Command => {
            out.push(part("$ ", theme.command, short_command(title), theme.command));
            out.push(part("", theme.output, text, theme.output));
            match (item.exit_code, item.status) {
                (Some(code), _) if code != 0 => {
                    out.push(part("", theme.error, format!("exit {code}"), theme.error));
                }
                (_, ItemStatus::Failed | ItemStatus::Declined | ItemStatus::Interrupted) => {
                    out.push(part("", theme.error, format!("{:?}", item.status).to_lowercase(), theme.error));
                }
                _ => {}
            }
        }
        ItemKind::FileChange => {
            out.push(part("✎ ", theme.tool, title, theme.tool));
            let mut body = part("", theme.output, text, theme.output);
            body.diff = true;
            out.push(body);
        }
        ItemKind::McpTool | ItemKind::DynamicTool => {
            out.push(part("⚙ ", theme.tool, title, theme.tool));
            out.push(part("", theme.error, text, theme.error));
        }
        ItemKind::WebSearch => out.push(part("⌕ ", theme.tool, title, theme.tool)),
        ItemKind::Collab => {
            let names: Vec<String> = item
                .receivers
                .iter()
                .filter(|r| r.index() < model.threads.len())
                .map(|&r| model.thread(r).name())
                .collect();
            let tool = item.tool.as_deref().unwrap_or("agent");
            let what = if names.is_empty() { tool.to_owned() } else { format!("{tool} → {}", names.join(", ")) };
            out.push(part("⑂ ", theme.tool, what, theme.tool));
            out.push(part("", theme.dim, title, theme.dim));
        }
        ItemKind::SubAgentActivity => {
            let what = format!("agent {} {title}", item.tool.as_deref().unwrap_or(""));
            out.push(part("⑂ ", theme.tool, what, theme.tool));
        }
        ItemKind::Plan => {
            out.push(part("≡ ", theme.tool, "plan", theme.tool));
            out.push(part("", theme.base, text, theme.base));
        }
        ItemKind::ImageView => out.push(part("▣ ", theme.tool, title, theme.tool)),
        ItemKind::Compaction => out.push(part("· ", theme.dim, "context compacted", theme.dim)),
        ItemKind::Other(kind) => {
            out.push(part("· ", theme.dim, kind.as_ref(), theme.dim));
            out.push(part("", theme.dim, text, theme.dim));
        }
    }
    out.retain(|p| !p.text.trim().is_empty() || (!p.lead.is_empty() && p.lead != "· "));
    out
}

/// The last `max` rows of one item.
fn item_lines(model: &Model, item: &Item, width: usize, max: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut have = 0;
    for p in parts(model, item, theme).iter().rev() {
        if have >= max {
            break;
        }
        let lead_w = super::text::width(p.lead);
        let (rows, more) = wrap_tail(&p.text, width.saturating_sub(lead_w).max(1), max - have);
        let n = rows.len();
        let mut lines = Vec::with_capacity(n);
        for (k, row) in rows.into_iter().enumerate() {
            let first = k == 0 && !more;
            let lead = if first { p.lead.to_owned() } else { " ".repeat(lead_w) };
            let style = if p.diff { diff_style(&row, theme, p.style) } else { p.style };
            lines.push(Line::from(vec![Span::styled(lead, p.lead_style), Span::styled(row, style)]));
        }
        if n == 0 && !p.lead.is_empty() {
            lines.push(Line::from(Span::styled(p.lead.to_owned(), p.lead_style)));
        }
        have += lines.len();
        chunks.push(lines);
    }
    let mut out = Vec::with_capacity(have);
    for c in chunks.into_iter().rev() {
        out.extend(c);
    }
    let cut = out.len().saturating_sub(max);
    out.drain(..cut);
    out
}

fn diff_style(row: &str, theme: &Theme, base: Style) -> Style {
    if row.starts_with("+++") || row.starts_with("---") || row.starts_with("@@") {
        theme.dim
    } else if row.starts_with('+') {
        theme.diff_add
    } else if row.starts_with('-') {
        theme.diff_del
    } else {
        base
    }
}
