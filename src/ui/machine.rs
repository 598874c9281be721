//! The machine view's own pieces (`swarmtop` with no arguments): the header's summary of every
//! session on the machine, and the screen that says where it looked when it found nothing.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::view::View;
use crate::source::seen::{Snapshot, State};
use crate::wire::{Clean, sanitize, sanitize_line};

/// `machine: 2 live · 5 sessions · 3 running · $0.12/min`: the sessions on screen (those aged out
/// are counted in diagnostics), the agents running in them, the burn over the last wall minute.
/// Sessions found and not read yet count, said as loading (`50000 sessions (49,200 loading)`).
/// `machine` names the machine: `machine` for this one, `HOST:PORT` for a server's.
pub fn summary(view: &View, machine: &Clean) -> Clean {
    let counts = view.derived.tops.counts;
    let live = counts.live;
    let sessions = counts.shown + counts.loading;
    let loading = if counts.loading > 0 { format!(" ({} loading)", counts.loading) } else { String::new() };
    let running = view.activity().active;
    // Written as the header's first line writes it (`$0.0042/min`, `$0/min`): one figure, one form.
    let burn = format!("{}/min", crate::model::format_usd(view.burn_per_min()));
    // The machine's name is clean; the rest is figures.
    sanitize_line(&format!(
        "{machine}: {live} live · {sessions} session{}{loading} · {running} running · {burn}",
        if sessions == 1 { "" } else { "s" }
    ))
}

/// Whether any session on the machine is live (the header's `● live`).
pub fn any_live(snapshot: &Snapshot) -> bool {
    snapshot.sessions.iter().any(|s| s.state == State::Live)
}

/// With no session found: where swarmtop looked and what to do next (with sessions found and none
/// read yet: that they are being read).
pub fn draw_empty(frame: &mut Frame, area: Rect, snapshot: &Snapshot, view: &View) {
    let theme = &view.theme;
    // The user's home, handed in by the command that reads the environment.
    let home = view.derived.tops.home.as_deref().filter(|h| !h.is_empty() && *h != "/");
    let show = |p: &std::path::Path| {
        let text = p.display().to_string();
        let short = match home {
            Some(h) if text.starts_with(h) => format!("~{}", &text[h.len()..]),
            _ => text,
        };
        sanitize(&short).to_string()
    };
    let loading = view.derived.tops.counts.loading;
    let waiting = if loading > 0 {
        // Sessions found, none read yet: they are on their way, not missing.
        Some(format!("Reading {loading} session{}, newest first…", if loading == 1 { "" } else { "s" }))
    } else if snapshot.looked_in.is_empty() && snapshot.tee_dir.as_os_str().is_empty() {
        // No look taken yet: a server's machine view before (or without) its first snapshot.
        Some("Nothing received from the server yet (its state is above).".to_owned())
    } else {
        None
    };
    if let Some(text) = waiting {
        let line = Line::from(Span::styled(text, theme.dim));
        let rect = Rect { y: area.y + area.height / 2, height: 1.min(area.height), x: area.x + 2, ..area };
        frame.render_widget(Paragraph::new(line), Rect { width: area.width.saturating_sub(4), ..rect });
        return;
    }
    // Within a window, nothing found is nothing recent: older sessions are there to be asked for
    // (`ps` says as much), not missing.
    let since = view.derived.tops.since_ms.map(|ms| super::text::quiet(i64::try_from(ms).unwrap_or(i64::MAX)));
    let headline = match &since {
        Some(window) => format!("No agent sessions active in the last {window}."),
        None => "No agent sessions found on this machine yet.".to_owned(),
    };
    let mut lines = vec![Line::from(Span::styled(headline, theme.bold)), Line::default(), Line::from("Looked in:")];
    // One column for every place, as wide as the longest agent's name (`opencode` took one more
    // than a fixed 7 and pushed its folder out of line).
    let name_w = snapshot.looked_in.iter().map(|(tool, _)| tool.len()).chain(["tees".len()]).max().unwrap_or(0);
    for (tool, dir) in &snapshot.looked_in {
        lines.push(Line::from(vec![Span::raw(format!("  {tool:<name_w$} ")), Span::styled(show(dir), theme.dim)]));
    }
    lines.push(Line::from(vec![
        Span::raw(format!("  {:<name_w$} ", "tees")),
        Span::styled(show(&snapshot.tee_dir), theme.dim),
    ]));
    lines.extend([Line::default(), Line::from("Sessions appear here as they start; this screen keeps watching.")]);
    if since.is_some() {
        lines.push(Line::from(vec![
            Span::raw("Older sessions:  "),
            Span::styled("swarmtop --all", theme.bold),
            Span::raw("  ·  stored runs:  "),
            Span::styled("H", theme.bold),
        ]));
    }
    let width = area.width.saturating_sub(4);
    for (what, command) in [
        ("Watch Codex live (deltas, every sub-agent):", "swarmtop tee -- codex app-server"),
        ("See swarmtop at work now:", "swarmtop demo"),
    ] {
        // A command is typed whole: one that would wrap mid-words goes on a line of its own.
        if what.len() + 2 + command.len() <= usize::from(width) {
            lines.push(Line::from(vec![Span::raw(format!("{what}  ")), Span::styled(command, theme.bold)]));
        } else {
            lines.push(Line::from(what));
            lines.push(Line::from(Span::styled(format!("  {command}"), theme.bold)));
        }
    }
    // Rows as the words wrap: counted as lines, a wrapped one pushed the last out of sight.
    let rows: usize = lines.iter().map(|l| super::dialog::wrapped_rows(l, width)).sum();
    let h = u16::try_from(rows).unwrap_or(u16::MAX).min(area.height);
    let rect = Rect { y: area.y + (area.height - h) / 2, height: h, x: area.x + 2, width };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), rect);
}
