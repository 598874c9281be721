//! The `d` view: every routing counter, the malformed samples, the global log, dropped text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::help::centred;
use super::text::{grouped, truncate};
use super::view::View;
use super::{ExportFeed, Feed, ReceiveFeed};
use crate::model::Model;
use crate::router::Counters;

/// What the aged-out sessions spent: off the screen and out of the header's totals, not lost.
fn aged_line(model: &Model, view: &View, theme: &super::theme::Theme) -> Line<'static> {
    let aged = view.tops.aged(model);
    let n = view.tops.aged_roots.len();
    if n == 0 {
        return Line::from(Span::styled("  nothing aged out", theme.dim));
    }
    Line::from(vec![
        Span::styled(format!("  aged out: {n} session{} · ", if n == 1 { "" } else { "s" }), theme.dim),
        Span::raw(format!(
            "{} agent{} · {} tok · ",
            aged.threads,
            if aged.threads == 1 { "" } else { "s" },
            grouped(aged.tokens.total)
        )),
        Span::styled(crate::model::format_usd(aged.cost_usd()), theme.cost),
        Span::styled(", not in the header's totals", theme.dim),
    ])
}

pub fn draw(frame: &mut Frame, area: Rect, model: &Model, counters: &Counters, feed: &Feed, view: &mut View) {
    let theme = &view.theme;
    let w = area.width.saturating_sub(4).min(110);
    let h = area.height.saturating_sub(2);
    let rect = centred(area, w, h);
    let text_w = w.saturating_sub(4) as usize;
    let c = counters;
    let figure = |name: &'static str, n: u64, problem: bool| {
        let style = if problem && n > 0 { theme.warn } else { theme.base };
        // A cell without a name fills a row.
        let value = if name.is_empty() { String::new() } else { grouped(n) };
        vec![Span::styled(format!("{name:>15} "), theme.dim), Span::styled(format!("{value:<10}"), style)]
    };
    let row = |cells: [(&'static str, u64, bool); 3]| {
        Line::from(cells.into_iter().flat_map(|(n, v, p)| figure(n, v, p)).collect::<Vec<_>>())
    };
    let mut lines = vec![
        Line::from(Span::styled("Routing", theme.title)),
        row([("lines", c.lines, false), ("root", c.root, false), ("rehomed", c.rehomed, false)]),
        row([("suppressed", c.suppressed, false), ("global", c.global, false), ("control", c.control, false)]),
        row([("malformed", c.malformed, true), ("early", c.early, false), ("replayed", c.replayed, false)]),
        row([
            ("evicted", c.evicted, true),
            ("pending at end", c.pending_at_end, true),
            ("orphans", c.orphan_threads, true),
        ]),
        row([
            ("depth-limited", c.depth_limited, true),
            ("dropped text", model.diagnostics.dropped_text_bytes, true),
            ("global log", model.diagnostics.global_count, false),
        ]),
        Line::from(
            [
                ("thread limit", c.over_thread_limit),
                ("dropped items", model.diagnostics.dropped_items),
                ("dropped turns", model.diagnostics.dropped_turns),
            ]
            .into_iter()
            .flat_map(|(n, v)| figure(n, v, true))
            .collect::<Vec<_>>(),
        ),
        // Bounds of lowering and of the model's late names: each says what it forgot.
        row([
            ("open responses", c.forgotten.responses, true),
            ("spawning tasks", c.forgotten.tasks, true),
            ("unnamed agents", model.diagnostics.dropped_receivers, true),
        ]),
        Line::from(Span::styled(
            if c.conserved() { "  every line accounted for" } else { "  lines still in flight" },
            theme.dim,
        )),
        Line::default(),
    ];
    if let Some(snapshot) = &feed.machine {
        let k = view.tops.counts;
        let keep = view.tops.keep_ms.map_or_else(
            || "ended sessions stay on the screen (--keep D sets a bound)".to_owned(),
            |ms| {
                format!(
                    "an ended session leaves the screen {} after its last activity (--keep)",
                    super::text::quiet(ms)
                )
            },
        );
        lines.extend([
            Line::from(Span::styled("Machine", theme.title)),
            row([
                ("sessions shown", k.shown as u64, false),
                ("live", k.live as u64, false),
                ("idle", k.idle as u64, false),
            ]),
            Line::from(
                [("ended", k.ended as u64), ("aged out", k.aged_out as u64)]
                    .into_iter()
                    .flat_map(|(n, v)| figure(n, v, false))
                    .collect::<Vec<_>>(),
            ),
            Line::from(Span::styled(format!("  {keep}; {} found in all", snapshot.sessions.len()), theme.dim)),
            aged_line(model, view, theme),
            Line::default(),
        ]);
    }
    if let Some(x) = &feed.export {
        lines.extend(export_lines(x, &row, theme, text_w));
    }
    if let Some(r) = &feed.receive {
        lines.extend(receive_lines(r, &row, theme));
    }
    lines.extend([Line::from(Span::styled(
        format!("Malformed lines ({} kept)", model.diagnostics.malformed.len()),
        theme.title,
    ))]);
    if model.diagnostics.malformed.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme.dim)));
    }
    for m in model.diagnostics.malformed.iter().rev() {
        lines.push(Line::from(vec![
            Span::styled(format!("  #{:<7}", m.line_no), theme.dim),
            Span::styled(format!("{} ", m.reason), theme.warn),
        ]));
        let head = m.head.as_str().replace(['\n', '\t'], " ");
        lines.push(Line::from(Span::styled(
            format!("           {}", truncate(&head, text_w.saturating_sub(11))),
            theme.dim,
        )));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        format!("Global log ({} lines, newest first)", grouped(model.diagnostics.global_count)),
        theme.title,
    )));
    if model.diagnostics.globals.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme.dim)));
    }
    for g in model.diagnostics.globals.iter().rev() {
        let msg = g.message.as_str().replace(['\n', '\t'], " ");
        let lead = format!("  #{:<7}{} ", g.line_no, g.method);
        let room = text_w.saturating_sub(lead.chars().count());
        lines.push(Line::from(vec![Span::styled(lead, theme.dim), Span::raw(truncate(&msg, room))]));
    }
    let inner_h = h.saturating_sub(2) as usize;
    view.overlay_scroll = view.overlay_scroll.min(lines.len().saturating_sub(inner_h));
    let block = Block::bordered()
        .border_style(theme.border_focus)
        .title(Span::styled(" diagnostics ", theme.title))
        .title_bottom(Span::styled(" ↑↓ scroll · Esc close ", theme.dim));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block).scroll((view.overlay_scroll as u16, 0)), rect);
    view.layout.overlay = rect;
}

/// The OTLP receiver's counters: what came in, what was refused (not OTLP, too large, undecodable).
fn receive_lines(
    r: &ReceiveFeed,
    row: &dyn Fn([(&'static str, u64, bool); 3]) -> Line<'static>,
    theme: &super::Theme,
) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(Span::styled("OTLP receiver", theme.title)),
        row([("requests", r.requests, false), ("spans", r.spans, false), ("log records", r.logs, false)]),
        row([("refused", r.refused, true), ("unjoined", r.forgotten, true), ("", 0, false)]),
    ];
    for three in r.limits.chunks(3) {
        let cell = |i: usize| three.get(i).map_or(("", 0, false), |&(name, n)| (name, n, true));
        lines.push(row([cell(0), cell(1), cell(2)]));
    }
    lines.push(Line::default());
    lines
}

/// The OTLP export's counters: what left, what waits for a collector that is down, what was lost.
fn export_lines(
    x: &ExportFeed,
    row: &dyn Fn([(&'static str, u64, bool); 3]) -> Line<'static>,
    theme: &super::Theme,
    text_w: usize,
) -> Vec<Line<'static>> {
    let waiting = x.queued.saturating_sub(x.sent + x.dropped + x.rejected);
    let state = match (x.failing, &x.cause) {
        (true, Some(cause)) => format!("  retrying with backoff: {}", truncate(cause, text_w.saturating_sub(26))),
        (true, None) => "  collector unreachable: retrying with backoff".to_owned(),
        (false, Some(cause)) => {
            format!("  collector reachable; last failure: {}", truncate(cause, text_w.saturating_sub(36)))
        }
        (false, None) => "  collector reachable".to_owned(),
    };
    vec![
        Line::from(vec![
            Span::styled("OTLP export ", theme.title),
            Span::styled(truncate(&x.target, text_w.saturating_sub(12)), theme.dim),
        ]),
        row([("spans", x.queued, false), ("sent", x.sent, false), ("waiting", waiting, false)]),
        row([("retried", x.retried, false), ("dropped", x.dropped, true), ("rejected", x.rejected, true)]),
        Line::from(Span::styled(state, if x.failing { theme.warn } else { theme.dim })),
        Line::default(),
    ]
}
