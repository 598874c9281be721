//! The two header lines. The first is what a person watches: the one state of the feed, agents,
//! cost and burn, who needs them, the clock. The second says where the data comes from (the
//! path shortened to fit) with the replay position or the connection, and a marker only when the
//! routing counters show a problem (the counters themselves live behind `d`).

use std::fmt::Write as _;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::feed::Feed;
use super::scene::Scene;
use super::text::{clock, grouped, width};
use super::theme::Theme;
use crate::model::format_usd;
use crate::router::Counters;
use crate::wire::Clean;

pub fn draw(frame: &mut Frame, area: Rect, s: &Scene<'_>) {
    let (feed, theme) = (s.feed, &s.view.theme);
    let w = area.width as usize;
    let sep = || Span::styled(" │ ", theme.dim);
    let agents = s.totals.threads;
    let activity = s.view.activity();
    let mut agents_text = format!("{agents} agent{}", if agents == 1 { "" } else { "s" });
    if activity.active > 0 && feed.ended.is_none() {
        let _ = write!(agents_text, " · {} active", activity.active);
    }
    // (part, priority): when the line is too narrow the highest number goes first.
    let mut parts: Vec<(Span<'static>, u8)> = vec![
        (state(feed, theme), 1),
        (Span::raw(agents_text), 2),
        (Span::styled(format_usd(s.totals.cost_usd()), theme.cost), 1),
    ];
    // An ended feed has no rates (the view's burn is `None` then): its last ones would read as now.
    let over = feed.ended.is_some();
    if let Some(burn) = s.view.burn_per_min().filter(|_| !over) {
        parts.push((Span::styled(format!("{}/min", format_usd(Some(burn))), theme.cost), 3));
    }
    // An export that fails says so where it is seen, with its cause (`d` has the counters).
    if let Some(x) = feed.export.as_ref().filter(|x| x.failing || x.dropped > 0 || x.rejected > 0) {
        let cause = x.cause.as_ref().map_or("collector unreachable", Clean::as_str);
        parts.push((Span::styled(format!("OTLP ✗ {cause}"), theme.warn), 2));
    }
    if activity.need_you > 0 {
        let n = activity.need_you;
        parts.push((Span::styled(format!("⚑ {n} need{} you", if n == 1 { "s" } else { "" }), theme.waiting), 1));
    }
    if feed.events_per_sec > 0.0 && !over {
        parts.push((Span::styled(format!("{} ev/s", grouped(feed.events_per_sec.round() as u64)), theme.dim), 5));
    }
    let clock_text = feed.now_ms.map(|ms| format!("{} UTC ", clock(ms))).unwrap_or_default();
    let brand = Span::styled(" swarmtop", theme.brand);
    let used = |parts: &[(Span<'_>, u8)], clock: &str| {
        width(&brand.content) + parts.iter().map(|(s, _)| width(&s.content) + 3).sum::<usize>() + width(clock) + 1
    };
    let mut clock_text = clock_text;
    while parts.len() > 1 && used(&parts, &clock_text) > w {
        // The clock goes before anything the user watches.
        if !clock_text.is_empty() {
            clock_text.clear();
            continue;
        }
        let Some(worst) = parts.iter().map(|p| p.1).max() else { break };
        let Some(at) = parts.iter().rposition(|p| p.1 == worst) else { break };
        parts.remove(at);
    }
    let mut left = vec![brand];
    for (part, _) in parts {
        left.push(sep());
        left.push(part);
    }
    let pad = w.saturating_sub(line_width(&left) + width(&clock_text));
    left.push(Span::raw(" ".repeat(pad)));
    left.push(Span::styled(clock_text, theme.dim));
    frame.render_widget(Paragraph::new(Line::from(left)).style(theme.header), Rect { height: 1, ..area });
    if area.height >= 2 {
        second_line(frame, Rect { y: area.y + 1, height: 1, ..area }, s.counters, feed, theme);
    }
}

/// The one state of the feed, in one place: a paused live view says how much is waiting.
fn state(feed: &Feed, theme: &Theme) -> Span<'static> {
    if let Some(end) = &feed.ended {
        let style = if end.as_str().starts_with("failed") {
            theme.error
        } else {
            theme.dim.add_modifier(ratatui::style::Modifier::BOLD)
        };
        // Connection and end texts carry socket names and peers' reasons: clean since they entered.
        return Span::styled(format!("■ {end}"), style);
    }
    if feed.paused {
        if feed.live && feed.arrived > 0 {
            return Span::styled(format!("‖ paused · {} new", grouped(feed.arrived)), theme.warn);
        }
        return Span::styled("‖ paused", theme.warn);
    }
    if let Some(c) = feed.connection.as_ref().map(Clean::as_str).filter(|_| feed.machine.is_some()) {
        // A server's machine view: its connection said whatever its sessions are.
        if c.starts_with("connecting") {
            return Span::styled("◌ connecting", theme.pending);
        }
        return Span::styled(format!("⚠ {c}"), theme.warn);
    }
    if feed.machine.is_some() && !feed.live {
        // The machine view keeps watching for sessions; it is live only while one of them is.
        return Span::styled("○ watching", theme.pending);
    }
    if feed.live {
        return match feed.connection.as_ref().map(Clean::as_str) {
            Some(c) if c.starts_with("connecting") => Span::styled("◌ connecting", theme.pending),
            Some(c) => Span::styled(format!("⚠ {c}"), theme.warn),
            None => Span::styled("● live", theme.running),
        };
    }
    Span::styled(format!("▶ {}", feed.speed), theme.running)
}

fn second_line(frame: &mut Frame, area: Rect, counters: &Counters, feed: &Feed, theme: &Theme) {
    let w = area.width as usize;
    let marker = problems(counters);
    let marker_w = if marker.is_empty() { 0 } else { width(&marker) + 2 };
    let mut line: Vec<Span<'static>> = vec![Span::raw(" ")];
    let figures = feed.position.map(|(done, total)| format!(" {} / {} lines", grouped(done), grouped(total)));
    // The path gets what the bar and the figures leave, but never less than its file name's worth.
    let rest = figures.as_ref().map_or(0, |f| width(f) + 9);
    let room = w.saturating_sub(marker_w + rest + 3).max(12.min(w));
    // Names of files and sockets come from the file system: made clean, on one line, where read.
    let source = short_path(feed.source.as_str(), room);
    line.push(Span::styled(source, theme.bold));
    line.push(Span::raw("  "));
    if let (Some((done, total)), Some(figures)) = (feed.position, figures) {
        let bar_w = w.saturating_sub(line_width(&line) + width(&figures) + marker_w + 1).min(60);
        if bar_w >= 8 {
            let filled =
                if total == 0 { 0 } else { ((done.min(total) as f64 / total as f64) * bar_w as f64).round() as usize };
            line.push(Span::styled("━".repeat(filled), theme.gauge));
            line.push(Span::styled("─".repeat(bar_w - filled), theme.dim));
        }
        line.push(Span::styled(figures, theme.dim));
    }
    if !marker.is_empty() {
        let pad = w.saturating_sub(line_width(&line) + width(&marker) + 1);
        line.push(Span::raw(" ".repeat(pad)));
        line.push(Span::styled(marker, theme.warn));
    }
    frame.render_widget(Paragraph::new(Line::from(line)), area);
}

fn line_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// `⚠ 3 malformed · 1 orphan · d`: only what is off (early lines are normal traffic, held until
/// their parent registers); empty when all is well.
fn problems(c: &Counters) -> String {
    let items = [
        (c.orphan_threads, "orphan", "orphans"),
        (c.evicted, "evicted", "evicted"),
        (c.malformed, "malformed", "malformed"),
    ];
    let found: Vec<String> = items
        .iter()
        .filter(|(n, ..)| *n > 0)
        .map(|&(n, one, many)| format!("{} {}", grouped(n), if n == 1 { one } else { many }))
        .collect();
    if found.is_empty() { String::new() } else { format!("⚠ {} · d ", found.join(" · ")) }
}

/// A path cut to `max` columns the way a person reads it: the file name whole, then as many
/// directories as fit next to it, `…/` for the rest.
pub fn short_path(path: &str, max: usize) -> String {
    if width(path) <= max {
        return path.to_owned();
    }
    let parts: Vec<&str> = path.split('/').collect();
    let Some((name, dirs)) = parts.split_last() else { return super::text::truncate(path, max) };
    let mut tail = (*name).to_owned();
    for dir in dirs.iter().rev() {
        let candidate = format!("{dir}/{tail}");
        if width(&candidate) + 2 > max {
            break;
        }
        tail = candidate;
    }
    let cut = if tail.len() == path.len() { tail } else { format!("…/{tail}") };
    super::text::truncate(&cut, max)
}

#[cfg(test)]
mod tests {
    use super::short_path;

    #[test]
    fn paths_keep_their_file_name() {
        assert_eq!(short_path("demo", 20), "demo");
        assert_eq!(short_path("~/.codex/sessions/2026/11/30/rollout-abc.jsonl", 28), "…/11/30/rollout-abc.jsonl");
        assert_eq!(short_path("/a/very-long-file-name.ndjson", 12), "…/very-long…");
    }
}
