//! The `d` view: every routing counter, the malformed samples, the global log, dropped text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::feed::{ExportFeed, NotifyFeed, ReceiveFeed};
use super::history::StoreFacts;
use super::layout::Layout;
use super::paint::{centred, overlay};
use super::scene::Scene;
use super::text::{grouped, truncate};
use super::theme::Theme;
use super::view::View;
use crate::model::Model;
use crate::router::Counters;

/// What the aged-out sessions spent: off the screen and out of the header's totals, not lost.
fn aged_line(model: &Model, view: &View, theme: &Theme) -> Line<'static> {
    let tops = &view.derived.tops;
    let aged = tops.aged(model);
    let n = tops.aged_roots.len();
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

/// Counters in columns: a name right-aligned, its figure after it, warm when a problem is not 0.
struct Figures<'a> {
    theme: &'a Theme,
}

impl Figures<'_> {
    fn figure(&self, name: &str, n: u64, problem: bool) -> [Span<'static>; 2] {
        let style = if problem && n > 0 { self.theme.warn } else { self.theme.base };
        // A cell without a name fills a row.
        let value = if name.is_empty() { String::new() } else { grouped(n) };
        [Span::styled(format!("{name:>15} "), self.theme.dim), Span::styled(format!("{value:<10}"), style)]
    }

    /// One line of (name, figure, whether a figure above 0 is a problem).
    fn row(&self, cells: &[(&str, u64, bool)]) -> Line<'static> {
        Line::from(cells.iter().flat_map(|&(n, v, p)| self.figure(n, v, p)).collect::<Vec<_>>())
    }
}

pub fn draw(frame: &mut Frame, area: Rect, scene: &Scene<'_>, layout: &mut Layout) {
    let (model, feed, view) = (scene.model, scene.feed, scene.view);
    let theme = &view.theme;
    let w = area.width.saturating_sub(4).min(110);
    let h = area.height.saturating_sub(2);
    let rect = centred(area, w, h);
    let text_w = w.saturating_sub(4) as usize;
    let figures = Figures { theme };
    let mut lines = routing_lines(model, scene.counters, feed.reopened, &figures);
    if let Some(snapshot) = &feed.machine {
        lines.extend(machine_lines(model, view, snapshot.sessions.len(), &figures));
    }
    if let Some(x) = &feed.export {
        lines.extend(export_lines(x, &figures, text_w));
    }
    if let Some(r) = &feed.receive {
        lines.extend(receive_lines(r, &figures));
    }
    if let Some(n) = &feed.notify {
        lines.extend(notify_lines(n, &figures, text_w));
    }
    if let Some(store) = &view.history.store {
        lines.extend(store_lines(store, &figures, text_w));
    }
    lines.extend(log_lines(model, theme, text_w));
    let scroll = overlay(frame, rect, ("diagnostics", 0), lines, view.panes.overlay_scroll, theme);
    layout.overlay = rect;
    layout.overlay_scroll = Some(scroll);
}

/// Every routing counter, and the bounds of reading, of lowering and of the model.
fn routing_lines(model: &Model, c: &Counters, reopened: u64, f: &Figures<'_>) -> Vec<Line<'static>> {
    let d = &model.diagnostics;
    let theme = f.theme;
    vec![
        Line::from(Span::styled("Routing", theme.title)),
        f.row(&[("lines", c.lines, false), ("root", c.root, false), ("rehomed", c.rehomed, false)]),
        f.row(&[("suppressed", c.suppressed, false), ("global", c.global, false), ("control", c.control, false)]),
        f.row(&[("malformed", c.malformed, true), ("early", c.early, false), ("replayed", c.replayed, false)]),
        f.row(&[
            ("evicted", c.evicted, true),
            ("pending at end", c.pending_at_end, true),
            ("orphans", c.orphan_threads, true),
        ]),
        f.row(&[
            ("depth-limited", c.depth_limited, true),
            ("dropped text", d.dropped_text_bytes, true),
            ("global log", d.global_count, false),
        ]),
        f.row(&[
            ("thread limit", c.over_thread_limit, true),
            ("dropped items", d.dropped_items, true),
            ("dropped turns", d.dropped_turns, true),
        ]),
        // Bounds of lowering and of the model's late names: each says what it forgot.
        f.row(&[
            ("open responses", c.forgotten.responses, true),
            ("spawning tasks", c.forgotten.tasks, true),
            ("unnamed agents", d.dropped_receivers, true),
        ]),
        // The bound of files held open (merge::OPEN_MAX): past it a file is closed and opened
        // again to be read. Nothing is lost, so the figure is never warm; in the thousands, it
        // says why a replay of a folder of many files reads slowly.
        f.row(&[("files reopened", reopened, false)]),
        Line::from(Span::styled(
            if c.conserved() { "  every line accounted for" } else { "  lines still in flight" },
            theme.dim,
        )),
        Line::default(),
    ]
}

/// The machine view's sessions: how many of each state, and what aged out.
fn machine_lines(model: &Model, view: &View, found: usize, f: &Figures<'_>) -> Vec<Line<'static>> {
    let tops = &view.derived.tops;
    let k = tops.counts;
    let keep = tops.keep_ms.map_or_else(
        || "ended sessions stay on the screen (--keep D sets a bound)".to_owned(),
        |ms| format!("an ended session leaves the screen {} after its last activity (--keep)", super::text::quiet(ms)),
    );
    vec![
        Line::from(Span::styled("Machine", f.theme.title)),
        f.row(&[
            ("sessions shown", k.shown as u64, false),
            ("live", k.live as u64, false),
            ("idle", k.idle as u64, false),
        ]),
        f.row(&[("ended", k.ended as u64, false), ("aged out", k.aged_out as u64, false)]),
        Line::from(Span::styled(format!("  {keep}; {found} found in all"), f.theme.dim)),
        aged_line(model, view, f.theme),
        Line::default(),
    ]
}

/// The malformed lines kept and the global log, newest first.
fn log_lines(model: &Model, theme: &Theme, text_w: usize) -> Vec<Line<'static>> {
    let d = &model.diagnostics;
    let mut lines =
        vec![Line::from(Span::styled(format!("Malformed lines ({} kept)", d.malformed.len()), theme.title))];
    if d.malformed.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme.dim)));
    }
    for m in d.malformed.iter().rev() {
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
        format!("Global log ({} lines, newest first)", grouped(d.global_count)),
        theme.title,
    )));
    if d.globals.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme.dim)));
    }
    for g in d.globals.iter().rev() {
        let msg = g.message.as_str().replace(['\n', '\t'], " ");
        let lead = format!("  #{:<7}{} ", g.line_no, g.method);
        let room = text_w.saturating_sub(lead.chars().count());
        lines.push(Line::from(vec![Span::styled(lead, theme.dim), Span::raw(truncate(&msg, room))]));
    }
    lines
}

/// The run store: what it holds, its size, and that size against the bytes it indexed.
fn store_lines(s: &StoreFacts, f: &Figures<'_>, text_w: usize) -> Vec<Line<'static>> {
    let theme = f.theme;
    let ratio = if s.indexed == 0 {
        "  nothing indexed yet (swarmtop sync)".to_owned()
    } else {
        format!("  {:.1}% of the bytes it indexed", s.bytes as f64 * 100.0 / s.indexed as f64)
    };
    vec![
        Line::from(vec![
            Span::styled("Run store ", theme.title),
            Span::styled(truncate(s.path.as_str(), text_w.saturating_sub(10)), theme.dim),
        ]),
        f.row(&[("sessions", s.sessions, false), ("runs", s.runs, false), ("", 0, false)]),
        f.row(&[("store bytes", s.bytes, false), ("indexed bytes", s.indexed, false), ("", 0, false)]),
        Line::from(Span::styled(ratio, theme.dim)),
        Line::default(),
    ]
}

/// The OTLP receiver's counters: what came in, what was refused (not OTLP, too large, undecodable).
fn receive_lines(r: &ReceiveFeed, f: &Figures<'_>) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(Span::styled("OTLP receiver", f.theme.title)),
        f.row(&[("requests", r.requests, false), ("spans", r.spans, false), ("log records", r.logs, false)]),
        f.row(&[("refused", r.refused, true), ("unjoined", r.forgotten, true), ("", 0, false)]),
    ];
    for three in r.limits.chunks(3) {
        let cell = |i: usize| three.get(i).map_or(("", 0, false), |&(name, n)| (name, n, true));
        lines.push(f.row(&[cell(0), cell(1), cell(2)]));
    }
    lines.push(Line::default());
    lines
}

/// Notifying's counters: what was decided, what the rate limit held back, how the command fared.
fn notify_lines(n: &NotifyFeed, f: &Figures<'_>, text_w: usize) -> Vec<Line<'static>> {
    let theme = f.theme;
    let mut lines = vec![
        Line::from(vec![
            Span::styled("notifications ", theme.title),
            Span::styled(truncate(&n.to, text_w.saturating_sub(14)), theme.dim),
        ]),
        f.row(&[("notices", n.notices, false), ("rate-limited", n.limited, false), ("", 0, false)]),
        f.row(&[("command ran", n.ran, false), ("failed", n.failed, true), ("dropped", n.dropped, true)]),
    ];
    if let Some(cause) = &n.cause {
        let text = format!("  last failure: {}", truncate(cause.as_str(), text_w.saturating_sub(16)));
        lines.push(Line::from(Span::styled(text, theme.warn)));
    }
    lines.push(Line::default());
    lines
}

/// The OTLP export's counters: what left, what waits for a collector that is down, what was lost.
fn export_lines(x: &ExportFeed, f: &Figures<'_>, text_w: usize) -> Vec<Line<'static>> {
    let theme = f.theme;
    let waiting = x.queued.saturating_sub(x.sent + x.dropped + x.rejected);
    let state = match (x.failing, &x.cause) {
        (true, Some(cause)) => {
            format!("  retrying with backoff: {}", truncate(cause.as_str(), text_w.saturating_sub(26)))
        }
        (true, None) => "  collector unreachable: retrying with backoff".to_owned(),
        (false, Some(cause)) => {
            format!("  collector reachable; last failure: {}", truncate(cause.as_str(), text_w.saturating_sub(36)))
        }
        (false, None) => "  collector reachable".to_owned(),
    };
    vec![
        Line::from(vec![
            Span::styled("OTLP export ", theme.title),
            Span::styled(truncate(&x.target, text_w.saturating_sub(12)), theme.dim),
        ]),
        f.row(&[("spans", x.queued, false), ("sent", x.sent, false), ("waiting", waiting, false)]),
        f.row(&[("retried", x.retried, false), ("dropped", x.dropped, true), ("rejected", x.rejected, true)]),
        f.row(&[("ids forgotten", x.forgotten, true)]),
        Line::from(Span::styled(state, if x.failing { theme.warn } else { theme.dim })),
        Line::default(),
    ]
}
