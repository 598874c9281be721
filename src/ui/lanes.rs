//! The lanes pane: the lanes of the selected card stacked, each a header and the live tail of the
//! child's stream; or one thread's transcript with scrollback. Rendering starts from the newest
//! item and walks back only as far as the rows on screen need.

use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::label;
use super::layout::{Found, Layout};
use super::outline::{Group, NodeId};
use super::paint::put_lines;
use super::scene::Scene;
use super::status::Shown;
use super::text::{
    duration, elapsed, quiet, short_command, short_model, tokens, truncate, width, wrap_head, wrap_line, wrap_tail,
};
use super::theme::Theme;
use super::view::{Jump, Matches, Pane, View};
use crate::model::{AgentOp, Item, ItemKind, ItemStatus, Model, Status, Thread, format_shown};
use crate::router::ThreadIdx;
use crate::wire::Clean;

/// Tail lines sit under their lane's header, indented so the headers read as a column.
const INDENT: usize = 2;

/// Rows of a failed call's reason on a lane: the CLI's own text, which can run to hundreds of
/// columns and many lines, would push the cards under it off the lane. The lane opened alone
/// (Enter) shows all of it.
const WHY_ROWS: usize = 2;

/// The rows of a failure's reason in `lane`: all of them in the lane opened alone, else
/// [`WHY_ROWS`].
fn why_rows(view: &View, lane: ThreadIdx) -> Option<usize> {
    (view.selection.expanded != Some(lane)).then_some(WHY_ROWS)
}

/// Columns of an agent's name in the pane's title.
const TITLE_NAME: usize = 28;

/// How far back `n` looks for a match, in wrapped rows: a search costs at most this much
/// wrapping per key, however long the history.
pub const SEARCH_ROWS: usize = 5_000;

pub fn draw(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let view = s.view;
    let focused = view.panes.focus == Pane::Lanes && view.panes.overlay.is_none();
    let lanes = view.lanes(s.model);
    let inner = Block::bordered().inner(area);
    layout.lanes = area;
    let (mut note, mut count) = (None, None);
    if inner.height > 0 && inner.width >= 4 {
        if lanes.is_empty() {
            let msg = "select an agent or a card in the tree";
            frame.render_widget(Paragraph::new(Span::styled(msg, view.theme.dim)), inner);
        } else if lanes.len() == 1 {
            count = full(frame, inner, s, lanes[0], layout);
        } else {
            note = stacked(frame, inner, s, &lanes, layout);
        }
        if !view.panes.search.query.is_empty() {
            let shown = highlight(frame, inner, &view.panes.search.query, view.theme.search);
            // Stacked lanes are searched on screen only (`n` looks through one transcript).
            count = count.or_else(|| (!lanes.is_empty()).then(|| format!("{shown} on screen")));
        }
    }
    // The border and title last: the title shows the scroll as clamped by the content.
    let theme = &view.theme;
    let scroll = layout.scroll.unwrap_or(view.panes.scroll);
    let mut block = Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::from(title(s.model, view, &lanes, scroll)));
    let search = &view.panes.search;
    if search.typing || !search.query.is_empty() {
        let mut spans = vec![Span::styled(format!(" /{}", search.query), theme.warn)];
        if search.typing {
            spans.push(Span::styled("▏", theme.warn));
        }
        // Where the last jump went (`3/17`), else how many rows match.
        let found = layout.found.as_ref().map(|f| f.note.as_str());
        if let Some(note) = found.or(search.note.as_deref()).or(count.as_deref()) {
            spans.push(Span::styled(format!(" · {note}"), theme.dim));
        }
        spans.push(Span::raw(" "));
        block = block.title_bottom(Line::from(spans));
    }
    if let Some(note) = note {
        // Not every lane fits: which ones are on screen, on the bottom border.
        block = block.title_bottom(Line::from(Span::styled(note, theme.dim)).right_aligned());
    }
    frame.render_widget(block, area);
}

/// Marks every occurrence of `query` (case-insensitive) in the cells of `area`; returns how many.
fn highlight(frame: &mut Frame, area: Rect, query: &str, style: Style) -> usize {
    let q = query.to_lowercase();
    let mut count = 0;
    let buf = frame.buffer_mut();
    for y in area.top()..area.bottom() {
        // The row as text, and the cell where each byte of it starts.
        let mut row = String::new();
        let mut at: Vec<u16> = Vec::new();
        for x in area.left()..area.right() {
            let sym = buf[(x, y)].symbol().to_lowercase();
            at.extend(std::iter::repeat_n(x, sym.len()));
            row.push_str(&sym);
        }
        let mut from = 0;
        while let Some(i) = row[from..].find(&q) {
            let start = from + i;
            let end = start + q.len();
            let (x0, x1) = (at[start], at[end - 1]);
            buf.set_style(Rect { x: x0, y, width: x1 - x0 + 1, height: 1 }, style);
            count += 1;
            from = end;
        }
    }
    count
}

/// The rows of a transcript's last [`SEARCH_ROWS`] (wrapped at `tw`) that hold the search
/// query, remembered per model change: typing a query, `n` and the frames between them wrap the
/// rows once.
fn matches(s: &Scene<'_>, lane: ThreadIdx, tw: usize) -> Arc<Matches> {
    let (model, view) = (s.model, s.view);
    let query = &view.panes.search.query;
    let why = why_rows(view, lane);
    let key = (lane, tw, why, query.clone(), model.generation, model.threads.len());
    view.derived.matches.get(key, || {
        let (lines, _) = tail(model, model.thread(lane), tw, (SEARCH_ROWS, why), &view.theme);
        let q = query.to_lowercase();
        let n = lines.len();
        // Matches as distances from the newest row (0: the last row), newest first.
        let hits = lines
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, l)| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>().to_lowercase().contains(&q))
            .map(|(i, _)| n - 1 - i)
            .collect();
        Matches { hits, rows: n }
    })
}

/// `12 matches`, or that there is none in the rows searched.
fn count_note(m: &Matches) -> String {
    match m.hits.len() {
        0 => format!("no match in the last {} rows", super::text::grouped(m.rows as u64)),
        1 => "1 match".to_owned(),
        n => format!("{n} matches"),
    }
}

/// Resolves a pending `n`/`N`: the next match that way, and a scroll that puts it on screen.
fn jump(m: &Matches, rows: usize, view: &View, dir: Jump) -> Found {
    let search = &view.panes.search;
    let hits = &m.hits;
    let bottom = view.panes.scroll;
    let top = bottom + rows.saturating_sub(1);
    let next = match (dir, search.at) {
        (Jump::Older, Some(at)) => hits.iter().copied().find(|&d| d > at),
        (Jump::Older, None) => hits.iter().copied().find(|&d| d >= bottom),
        (Jump::Newer, Some(at)) => hits.iter().rev().copied().find(|&d| d < at),
        (Jump::Newer, None) => hits.iter().rev().copied().find(|&d| d < bottom),
    };
    match next {
        Some(d) => {
            // Put the match a third of the way down the pane.
            let scroll =
                if d < bottom || d > top { d.saturating_sub(rows.saturating_sub(rows / 3 + 1)) } else { bottom };
            let k = hits.iter().position(|&h| h == d).map_or(0, |k| k + 1);
            Found { scroll, at: Some(d), note: format!("{k}/{}", hits.len()) }
        }
        None if hits.is_empty() => Found { scroll: bottom, at: search.at, note: count_note(m) },
        None => Found { scroll: bottom, at: search.at, note: format!("{} matches, no more this way", hits.len()) },
    }
}

fn sessions(n: usize) -> String {
    format!("{n} session{}", if n == 1 { "" } else { "s" })
}

fn title(model: &Model, view: &View, lanes: &[ThreadIdx], scroll: usize) -> Vec<Span<'static>> {
    let theme = &view.theme;
    let tops = &view.derived.tops;
    // A name in a title leaves room for the rest of it (the scroll mark above all).
    let name = |t: ThreadIdx| truncate(&label::of(model, t).name, TITLE_NAME);
    let text = match (view.selection.expanded, view.selection.node) {
        (Some(t), _) => format!(" lane · {} ", name(t)),
        (None, Some(NodeId::Thread(t) | NodeId::Spent(t))) => format!(" transcript · {} ", name(t)),
        (None, Some(NodeId::Group(t, first))) => {
            let grouped = view.derived.groups.of(model, t);
            let g = grouped.0.iter().find(|g| g.first == first);
            let turn = g.and_then(|g| g.turn).map(|k| format!(" · turn {}", k + 1)).unwrap_or_default();
            let label = g.map_or("spawn", Group::shown);
            format!(" ⑂ {label} ×{}{turn} · {} ", lanes.len(), name(t))
        }
        (None, Some(NodeId::Turn(t, k))) => {
            format!(" turn {} · {} · {} lanes ", k + 1, name(t), lanes.len())
        }
        (None, Some(NodeId::Unattributed)) => format!(" unattributed · {} ", lanes.len()),
        (None, Some(NodeId::Pending)) => format!(" pending · {} ", lanes.len()),
        (None, Some(NodeId::Agent(a))) => format!(" {} · {} ", tops.agent(a), sessions(lanes.len())),
        (None, Some(NodeId::Project(p))) => {
            let project = tops.project(p).map_or("?", |p| p.name.as_str());
            format!(" {} · {} ", truncate(project, TITLE_NAME), sessions(lanes.len()))
        }
        (None, None) => " lanes ".to_owned(),
    };
    let mut spans = vec![Span::styled(text, theme.title)];
    if scroll > 0 && (view.selection.expanded.is_some() || lanes.len() == 1) {
        spans.push(Span::styled(format!("↑{scroll} "), theme.warn));
    }
    spans
}

/// One lane alone: header, then as much of the transcript as fits, scrolled back as far as the
/// view asks and the history goes. Returns how many rows match the search, if there is one.
fn full(frame: &mut Frame, area: Rect, s: &Scene<'_>, lane: ThreadIdx, layout: &mut Layout) -> Option<String> {
    let (model, view) = (s.model, s.view);
    let theme = &view.theme;
    let t = model.thread(lane);
    let header = lane_header(s, lane, area.width as usize, true);
    let rows = area.height.saturating_sub(1) as usize;
    let tw = (area.width as usize).saturating_sub(INDENT);
    let matches = (!view.panes.search.query.is_empty()).then(|| matches(s, lane, tw));
    let found = view.panes.search.jump.zip(matches.as_deref()).map(|(dir, m)| jump(m, rows, view, dir));
    let wanted = found.as_ref().map_or(view.panes.scroll, |f| f.scroll);
    let (mut lines, avail) = tail(model, t, tw, (rows + wanted, why_rows(view, lane)), theme);
    // Clamp the scroll to the history there is (Home asks for "as far as it goes").
    let scroll = wanted.min(avail.saturating_sub(rows));
    let keep = lines.len().saturating_sub(scroll);
    lines.truncate(keep);
    let start = lines.len().saturating_sub(rows);
    let mut out = Vec::with_capacity(rows + 1);
    out.push(header);
    out.extend(lines.drain(start..).map(indent));
    layout.lane_headers.push((Rect { height: 1, ..area }, 0));
    layout.lane_text = out[1..]
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>().trim().to_owned())
        .collect();
    layout.scroll = Some(scroll);
    layout.found = found.map(|f| Found { scroll, ..f });
    put_lines(frame, area, &out);
    matches.map(|m| count_note(&m))
}

fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = Vec::with_capacity(line.spans.len() + 1);
    spans.push(Span::raw("  "));
    spans.extend(line.spans);
    Line::from(spans)
}

/// Lanes stacked: every header, and the tails sharing the rows left, shortest need first.
/// Returns which lanes are on screen when not all of them fit (`lanes 292–300 of 300`).
fn stacked(frame: &mut Frame, area: Rect, s: &Scene<'_>, lanes: &[ThreadIdx], layout: &mut Layout) -> Option<String> {
    let (model, view) = (s.model, s.view);
    let h = area.height as usize;
    let w = area.width as usize;
    let collapsed = &view.panes.collapsed;
    // Synced views have it in range already; a view drawn unsynced must not index past the end.
    let sel = view.selection.lane.min(lanes.len() - 1);
    let shown = window_of_lanes(lanes, sel, h, |t| if collapsed.contains(t) { 1 } else { 2 });
    let theme = &view.theme;
    let tw = w.saturating_sub(INDENT);
    let note = (shown.len() < lanes.len()).then(|| {
        let (from, to) = (shown.first().map_or(0, |i| i + 1), shown.last().map_or(0, |i| i + 1));
        format!(" lanes {from}–{to} of {} ", lanes.len())
    });
    let rows_left = h.saturating_sub(shown.len());
    let open: Vec<usize> = (0..shown.len()).filter(|&k| !collapsed.contains(&lanes[shown[k]])).collect();
    let render =
        |k: usize, rows: usize| tail(model, model.thread(lanes[shown[k]]), tw, (rows, Some(WHY_ROWS)), theme).0;
    let tails = share_rows(&open, shown.len(), rows_left, render);
    let focused = view.panes.focus == Pane::Lanes && view.panes.overlay.is_none();
    let mut out: Vec<Line<'static>> = Vec::with_capacity(h);
    for (&i, lines) in shown.iter().zip(tails) {
        let mut header = lane_header(s, lanes[i], w, !collapsed.contains(&lanes[i]));
        if i == sel {
            header = header.patch_style(if focused { theme.selected } else { theme.selected_idle });
        }
        let y = area.y + out.len() as u16;
        layout.lane_headers.push((Rect { y, height: 1, ..area }, i));
        out.push(header);
        out.extend(lines.into_iter().map(indent));
    }
    put_lines(frame, area, &out);
    note
}

/// The window of lanes on screen: the selected one and as many before it as fit at their
/// minimum rows, then as many after it (linear in the lanes, however many a card has).
fn window_of_lanes(lanes: &[ThreadIdx], sel: usize, h: usize, min_rows: impl Fn(&ThreadIdx) -> usize) -> Vec<usize> {
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
    shown
}

/// The tails of the `open` lanes (of `n` shown) sharing `rows` fairly; what short lanes leave
/// goes to the lanes that had more to show. Two passes at most, so the work stays within twice
/// the rows on screen however many lanes.
fn share_rows(
    open: &[usize],
    n: usize,
    rows: usize,
    render: impl Fn(usize, usize) -> Vec<Line<'static>>,
) -> Vec<Vec<Line<'static>>> {
    let mut tails: Vec<Vec<Line<'static>>> = vec![Vec::new(); n];
    if open.is_empty() {
        return tails;
    }
    let share = rows / open.len();
    for &k in open {
        tails[k] = render(k, share);
    }
    let spare = rows - open.iter().map(|&k| tails[k].len()).sum::<usize>();
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
    tails
}

/// What a thread is doing right now, in a few words.
fn activity(t: &Thread) -> Option<(String, bool)> {
    // swarmtop stopped it (a guard past a limit, an interrupt): why says more than how it ended.
    if let Some(by) = t.stopped_by.as_ref().filter(|_| !t.status.is_active()) {
        return Some((format!("stopped by {}", by.as_str().lines().next().unwrap_or("")), true));
    }
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
fn lane_header(s: &Scene<'_>, lane: ThreadIdx, w: usize, open: bool) -> Line<'static> {
    let (model, feed, theme) = (s.model, s.feed, &s.view.theme);
    let shown = s.view.shown(model, lane);
    let t = model.thread(lane);
    let name = &label::of(model, lane).name;
    let status_style = theme.status(shown);
    let mut left: Vec<Span<'static>> = vec![
        Span::styled(if open { "" } else { "▸" }.to_owned(), theme.dim),
        Span::styled(format!("{} ", shown.glyph()), status_style),
        // A task used as a name can be a whole sentence: it leaves room for the status.
        Span::styled(truncate(name, (w / 4).max(12)), theme.bold),
    ];
    if let Some(m) = &t.model {
        left.push(Span::styled(format!("  {}", short_model(m.as_str())), theme.model));
    }
    let when = elapsed(t, feed.now_ms).map(|e| format!(" {}", duration(e))).unwrap_or_default();
    left.push(Span::styled(format!("  {}{when}", shown.word()), status_style));
    if t.last_error.is_some() && !matches!(t.status, Status::Failed | Status::Retrying) {
        // It got through, after an error: a retry leaves its mark on the lane (the error is in
        // the transcript's last lines while it retries).
        left.push(Span::styled("  ↻ retried", theme.retrying));
    }
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
    // The figure the tree and the sidebar show: the agent's own for a model the table lacks.
    let cost_style = if t.cost.is_some() { theme.cost } else { theme.dim };
    right.push((Span::styled(format!("  {} ", format_shown(model.shown_cost(lane))), cost_style), 0));
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

/// The last `rows` display rows of a thread's stream, and how many rows it has (up to `rows`);
/// a failed call's reason in `why_rows` rows at most (`None`: all of it). Items are walked from
/// the newest back; each renders only its own tail.
pub fn tail(
    model: &Model,
    t: &Thread,
    width: usize,
    (rows, why_rows): (usize, Option<usize>),
    theme: &Theme,
) -> (Vec<Line<'static>>, usize) {
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut have = 0;
    // A stop by swarmtop ends the stream with who stopped it and why (a guard's limit).
    if let Some(by) = t.stopped_by.as_ref().filter(|_| !t.status.is_active() && rows > 0) {
        // Its head: who stopped it comes first (a tail of a long reason showed only its end, as
        // `◼ SIGINT (pid …)`); what does not fit in two rows is cut.
        let w = width.saturating_sub(2).max(1);
        let mut wrapped = Vec::new();
        for line in format!("stopped by {}", by.as_str()).lines() {
            wrap_line(line, w, &mut wrapped);
        }
        if wrapped.len() > rows.min(2) {
            wrapped.truncate(rows.min(2));
            if let Some(last) = wrapped.last_mut() {
                *last = truncate(&format!("{last}…"), w);
            }
        }
        let lines: Vec<Line<'static>> = wrapped
            .into_iter()
            .enumerate()
            .map(|(k, row)| Line::from(Span::styled(format!("{}{row}", if k == 0 { "◼ " } else { "  " }), theme.warn)))
            .collect();
        have += lines.len();
        chunks.push(lines);
    }
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
    // A guard's refusal under the call it refused; one of no call shown ends the stream.
    let shown = |call: &Option<Box<str>>| call.as_deref().is_some_and(|c| t.items.iter().any(|i| *i.id == *c));
    for (_, why) in t.refusals.iter().rev().filter(|(c, _)| !shown(c)) {
        if have < rows {
            have += 1;
            chunks.push(vec![refusal(why, width, theme)]);
        }
    }
    for item in t.items.iter().rev() {
        if have >= rows {
            break;
        }
        for (_, why) in t.refusals.iter().rev().filter(|(c, _)| c.as_deref() == Some(&*item.id)) {
            if have < rows {
                have += 1;
                chunks.push(vec![refusal(why, width, theme)]);
            }
        }
        let lines = item_lines(&receiver_names(model, item), item, width, (rows - have, why_rows), theme);
        have += lines.len();
        chunks.push(lines);
    }
    let mut out = Vec::with_capacity(have);
    for chunk in chunks.into_iter().rev() {
        out.extend(chunk);
    }
    (out, have)
}

/// A guard's refusal of a call, on one row: `⊘ refused by guard: depth 2 > 1`.
fn refusal(why: &Clean, width: usize, theme: &Theme) -> Line<'static> {
    let text = format!("refused by {}", why.as_str().lines().next().unwrap_or(""));
    Line::from(Span::styled(format!("⊘ {}", truncate(&text, width.saturating_sub(2).max(1))), theme.warn))
}

/// A part of an item: a lead (`$ `, `› `…) on its first row, the text wrapped after it.
struct Part<'a> {
    lead: &'static str,
    lead_style: Style,
    text: std::borrow::Cow<'a, str>,
    style: Style,
    diff: bool,
    /// Agent prose: Markdown lists, emphasis and code are rendered, not shown raw.
    markdown: bool,
    /// Shown from its head, in this many rows at most, as one paragraph cut with `…` (a
    /// failure's reason), not from its tail.
    head: Option<usize>,
}

fn part<'a>(
    lead: &'static str,
    lead_style: Style,
    text: impl Into<std::borrow::Cow<'a, str>>,
    style: Style,
) -> Part<'a> {
    Part { lead, lead_style, text: text.into(), style, diff: false, markdown: false, head: None }
}

/// `names`: what the agents the item names are called on screen; `why_rows`: the rows of a
/// failed call's reason (`None`: all of it).
fn parts<'a>(names: &[String], item: &'a Item, why_rows: Option<usize>, theme: &Theme) -> Vec<Part<'a>> {
    let text = item.text.as_str();
    let title = item.title.as_str();
    let mut out = Vec::new();
    match &item.kind {
        ItemKind::UserMessage => out.push(part("› ", theme.user, text, theme.user)),
        ItemKind::AgentMessage => {
            let mut prose = part("", theme.base, text, theme.base);
            prose.markdown = true;
            out.push(prose);
        }
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
            let tool = item.tool.as_deref().unwrap_or("agent");
            let what = if names.is_empty() { tool.to_owned() } else { format!("{tool} → {}", names.join(", ")) };
            // A wait whose agent failed did its job: it is not the call that failed.
            if item.status == ItemStatus::Failed && item.op != Some(AgentOp::Wait) {
                // A spawn refused (the thread limit, say) registers no child: the card is all
                // that shows it happened.
                out.push(part("✗ ", theme.failed, format!("{what} failed"), theme.failed));
            } else {
                out.push(part("⑂ ", theme.tool, what, theme.tool));
            }
            out.push(part("", theme.dim, title, theme.dim));
            // Why, in the agent's own words (`Agent type '…' not found`), its start first.
            if let Some(why) = item.why.as_deref().filter(|_| item.status == ItemStatus::Failed) {
                let mut reason = part("", theme.error, why.as_str(), theme.error);
                reason.head = why_rows;
                out.push(reason);
            }
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
            // A child's report reaching its parent names the child.
            let what = if names.is_empty() { kind.to_string() } else { format!("{kind}: {}", names.join(", ")) };
            out.push(part("· ", theme.dim, what, theme.dim));
            out.push(part("", theme.dim, text, theme.dim));
        }
    }
    out.retain(|p| !p.text.trim().is_empty() || (!p.lead.is_empty() && p.lead != "· "));
    out
}

/// The agents an item names, as they are called on screen.
fn receiver_names(model: &Model, item: &Item) -> Vec<String> {
    item.receivers
        .iter()
        .filter(|r| r.index() < model.threads.len())
        .map(|&r| truncate(&label::of(model, r).name, 24))
        .collect()
}

/// Rows of one stored item at most (a run the store keeps: its text is capped already).
const STORED_ROWS: usize = 256;

/// A stored run's item as a lane draws it, from its top (the history's session opened from the
/// run store, `history::stored`): the same glyphs, styles and wrapping as a live lane's, the
/// agents it names called by `names` (the store's runs' names).
pub fn stored_item_lines(item: &Item, names: &[String], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    item_lines(names, item, width, (STORED_ROWS, None), theme)
}

/// The last `max` rows of one item, the agents it names called by `names`, a failed call's
/// reason in `why_rows` rows at most.
fn item_lines(
    names: &[String],
    item: &Item,
    width: usize,
    (max, why_rows): (usize, Option<usize>),
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut have = 0;
    for p in parts(names, item, why_rows, theme).iter().rev() {
        if have >= max {
            break;
        }
        let lead_w = super::text::width(p.lead);
        let wrap = if p.markdown { super::text::wrap_tail_markdown } else { wrap_tail };
        let w = width.saturating_sub(lead_w).max(1);
        let (rows, more) = match p.head {
            Some(n) => (wrap_head(&p.text, w, n.min(max - have)), false),
            None => wrap(&p.text, w, max - have),
        };
        let n = rows.len();
        let mut lines = Vec::with_capacity(n);
        let mut marks = Marks::default();
        for (k, row) in rows.into_iter().enumerate() {
            let first = k == 0 && !more;
            let lead = if first { p.lead.to_owned() } else { " ".repeat(lead_w) };
            let mut spans = vec![Span::styled(lead, p.lead_style)];
            if p.markdown {
                spans.extend(inline(&row, p.style, theme, &mut marks));
            } else {
                let style = if p.diff { diff_style(&row, theme, p.style) } else { p.style };
                spans.push(Span::styled(row, style));
            }
            lines.push(Line::from(spans));
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

/// Emphasis open at the end of a wrapped row, carried into the next.
#[derive(Default)]
struct Marks {
    bold: bool,
    code: bool,
}

/// One wrapped row of Markdown prose as styled spans, its marks removed: `**bold**`,
/// `` `code` `` (no marks inside code), `# heading`. Done on rows already wrapped, so the cost
/// stays that of the rows on screen; a row is as wide as with its marks, or narrower.
fn inline(row: &str, base: Style, theme: &Theme, marks: &mut Marks) -> Vec<Span<'static>> {
    let (row, heading) = match row.trim_start_matches('#') {
        rest if rest.len() < row.len() && rest.starts_with(' ') && row.len() - rest.len() <= 6 => (&rest[1..], true),
        _ => (row, false),
    };
    let style_of = |m: &Marks| {
        let mut s = if m.code { theme.command } else { base };
        if m.bold || heading {
            s = s.add_modifier(ratatui::style::Modifier::BOLD);
        }
        s
    };
    let mut spans = Vec::new();
    let mut text = String::new();
    let mut rest = row;
    while let Some(c) = rest.chars().next() {
        let mark = if !marks.code && rest.starts_with("**") {
            Some(2)
        } else if c == '`' {
            Some(1)
        } else {
            None
        };
        if let Some(n) = mark {
            if !text.is_empty() {
                spans.push(Span::styled(std::mem::take(&mut text), style_of(marks)));
            }
            if n == 2 {
                marks.bold = !marks.bold;
            } else {
                marks.code = !marks.code;
            }
            rest = &rest[n..];
        } else {
            text.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style_of(marks)));
    }
    spans
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

#[cfg(test)]
mod tests {
    use super::*;

    fn note(method: &str, params: &serde_json::Value) -> String {
        serde_json::json!({"method": method, "params": params, "emittedAtMs": 1000}).to_string()
    }

    /// A guard's refusal (an act record of kind `deny`) is drawn under the call it refused, once
    /// however often it is heard of; one naming no call of the thread's ends its stream.
    #[test]
    fn a_refusal_is_drawn_under_the_call_it_refused() {
        use serde_json::json;
        let spawn = json!({"threadId": "root", "turnId": "t1", "item": {"type": "collabAgentToolCall", "id": "c1",
            "tool": "spawnAgent", "status": "failed", "senderThreadId": "root", "receiverThreadIds": [],
            "prompt": "scout the repo", "agentsStates": {}}});
        let said = json!({"threadId": "root", "turnId": "t1", "item": {"type": "agentMessage", "id": "m1",
            "text": "I will do it myself."}});
        let refusal = |call: &str| {
            json!({"dir": "in", "ts": 1000, "msg": {"swarmtop": "act"}, "act": {"kind": "deny", "by": "guard",
                "target": "root", "reason": "depth 2 > 1", "call": call}})
            .to_string()
        };
        let mut p = crate::pipeline::Pipeline::default();
        for l in [
            note("thread/started", &json!({"thread": {"id": "root", "parentThreadId": null}})),
            note("turn/started", &json!({"threadId": "root", "turn": {"id": "t1", "status": "inProgress"}})),
            note("item/completed", &spawn),
            note("item/completed", &said),
            refusal("c1"),
            refusal("c1"),
            refusal("elsewhere"),
        ] {
            p.push(l.as_bytes());
        }
        let t = p.model.thread(p.find("root").expect("root"));
        assert!(t.stopped_by.is_none(), "a refusal stops nothing");
        let (lines, _) = tail(&p.model, t, 60, (40, None), &Theme::no_color());
        let rows: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let at = |text: &str| rows.iter().position(|r| r.contains(text)).unwrap_or_else(|| panic!("{text}: {rows:#?}"));
        let (card, refused, message) = (at("✗ spawnAgent failed"), at("⊘ refused by guard: depth 2 > 1"), at("myself"));
        assert!(card < refused && refused < message, "under its call: {rows:#?}");
        assert_eq!(rows.iter().filter(|r| r.contains("refused by")).count(), 2, "once per call: {rows:#?}");
        assert!(rows.last().is_some_and(|r| r.starts_with("⊘ refused by guard")), "no call of its: last: {rows:#?}");
    }
}
