//! The two header lines: what is being watched and how fast; then the replay position (or the
//! live connection) and the routing counters, problems highlighted.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Feed;
use super::text::{clock, grouped, width};
use super::theme::Theme;
use crate::model::{Model, Rollup, format_usd};
use crate::router::Counters;
use crate::wire::sanitize_line;

pub fn draw(
    frame: &mut Frame,
    area: Rect,
    model: &Model,
    totals: &Rollup,
    counters: &Counters,
    feed: &Feed,
    theme: &Theme,
) {
    let w = area.width as usize;
    let sep = || Span::styled(" │ ", theme.dim);
    let state = if feed.paused {
        Span::styled("‖ paused", theme.warn)
    } else if feed.live {
        Span::styled("● live", theme.running)
    } else {
        Span::styled(format!("▶ {}", feed.speed), theme.running)
    };
    let agents = model.threads.len();
    let sessions = model.sessions.len();
    // (part, priority): when the line is too narrow the highest number goes first.
    let mut parts: Vec<(Span<'static>, u8)> = vec![
        // Names of files and sockets come from the file system: the one sanitiser, on one line.
        (Span::styled(sanitize_line(&feed.source).to_string(), theme.bold), 1),
        (state, 1),
        (
            Span::raw(format!(
                "{sessions} session{} · {agents} agent{}",
                if sessions == 1 { "" } else { "s" },
                if agents == 1 { "" } else { "s" }
            )),
            2,
        ),
        (Span::styled(format_usd(totals.cost_usd()), theme.cost), 3),
        (Span::raw(format!("{} ev/s", grouped(feed.events_per_sec.max(0.0).round() as u64))), 4),
    ];
    let clock_text = feed.now_ms.map(|ms| format!("{} UTC ", clock(ms))).unwrap_or_default();
    let brand = Span::styled(" swarmtop", theme.brand);
    let used = |parts: &[(Span<'_>, u8)]| {
        width(&brand.content) + parts.iter().map(|(s, _)| width(&s.content) + 3).sum::<usize>()
    };
    parts.retain(|(span, _)| !span.content.is_empty());
    while parts.len() > 1 && used(&parts) + width(&clock_text) + 1 > w {
        let Some(worst) = parts.iter().map(|p| p.1).max() else {
            break;
        };
        let Some(at) = parts.iter().rposition(|p| p.1 == worst) else {
            break;
        };
        parts.remove(at);
    }
    let mut left = vec![brand.clone()];
    for (part, _) in parts {
        left.push(sep());
        left.push(part);
    }
    let pad = w.saturating_sub(line_width(&left) + width(&clock_text));
    left.push(Span::raw(" ".repeat(pad)));
    left.push(Span::styled(clock_text, theme.dim));
    frame.render_widget(Paragraph::new(Line::from(left)).style(theme.header), Rect { height: 1, ..area });

    if area.height < 2 {
        return;
    }
    let mut second: Vec<Span<'static>> = vec![Span::raw(" ")];
    let counter_spans = counter_spans(counters, theme);
    let counters_w = line_width(&counter_spans);
    if let Some((done, total)) = feed.position {
        let room = w.saturating_sub(counters_w + 4);
        let figures = format!(" {} / {} lines", grouped(done), grouped(total));
        let bar_w = room.saturating_sub(width(&figures)).min(60);
        if bar_w >= 8 {
            let filled =
                if total == 0 { 0 } else { ((done.min(total) as f64 / total as f64) * bar_w as f64).round() as usize };
            second.push(Span::styled("━".repeat(filled), theme.gauge));
            second.push(Span::styled("─".repeat(bar_w - filled), theme.dim));
        }
        second.push(Span::styled(figures, theme.dim));
    } else if let Some(conn) = &feed.connection {
        let style = if conn.starts_with("connected") { theme.running } else { theme.warn };
        second.push(Span::styled(sanitize_line(conn).to_string(), style));
    }
    let pad = w.saturating_sub(line_width(&second) + counters_w + 1);
    second.push(Span::raw(" ".repeat(pad)));
    second.extend(counter_spans);
    let rest = Rect { y: area.y + 1, height: 1, ..area };
    frame.render_widget(Paragraph::new(Line::from(second)), rest);
}

fn line_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// `early 2 · orphans 0 · evicted 0 · malformed 0`: the problems in the warning style when non-zero
/// (early lines are normal traffic, held until their parent registers).
fn counter_spans(c: &Counters, theme: &Theme) -> Vec<Span<'static>> {
    let items = [
        ("early", c.early, false),
        ("orphans", c.orphan_threads, true),
        ("evicted", c.evicted, true),
        ("malformed", c.malformed, true),
    ];
    let mut out = Vec::new();
    for (i, (name, n, problem)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(Span::styled(" · ", theme.dim));
        }
        let style = if problem && n > 0 { theme.warn } else { theme.dim };
        out.push(Span::styled(format!("{name} {}", grouped(n)), style));
    }
    out.push(Span::raw(" "));
    out
}
