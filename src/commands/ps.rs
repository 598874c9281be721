//! `swarmtop ps [--json] [--since D] [--all]`: the sessions the machine view shows, one row per
//! root session, like `ps`. The figures are those `stats` gives for the session's own inputs.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::Result;
use serde::Serialize;
use serde_json::value::RawValue;

use super::cli::PsArgs;
use super::sessions::{self, Options, Row};
use super::stats::money;
use crate::model::format_usd;
use crate::pipeline::Config;
use crate::source::recording::civil_from_days;
use crate::ui::text::grouped;

pub fn run(args: &PsArgs, config: &Config) -> Result<ExitCode> {
    // Each session's figures and name only: no item text is printed.
    let config = config.clone().figures();
    let report = sessions::collect(&Options::machine(sessions::window(args.window.since, args.window.all)), &config);
    let now_ms = crate::source::recording::unix_ms();
    let out = if args.json { render_json(&report.rows) } else { render_text(&report, now_ms, terminal_width()) };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        // `swarmtop ps | head -1`: a reader that has seen enough is a normal end.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowJson<'a> {
    tool: &'a str,
    id: &'a str,
    name: &'a str,
    project: Option<&'a str>,
    source: &'a str,
    state: &'static str,
    /// ISO 8601, UTC.
    last_activity: Option<String>,
    last_activity_ms: Option<i64>,
    pid: Option<u32>,
    cpu_percent: Option<f64>,
    memory_bytes: Option<u64>,
    agents: u32,
    tokens: u64,
    cost_usd: Option<Box<RawValue>>,
}

/// One JSON array, one object per root session, and a newline.
pub fn render_json(rows: &[Row]) -> String {
    let rows: Vec<RowJson<'_>> = rows
        .iter()
        .map(|r| RowJson {
            tool: r.tool.as_str(),
            id: r.id.as_str(),
            name: r.name.as_str(),
            project: r.project.as_ref().map(crate::wire::Clean::as_str),
            source: r.source.as_str(),
            state: r.state.as_str(),
            last_activity: r.last_activity_ms.map(iso_utc),
            last_activity_ms: r.last_activity_ms,
            pid: r.pid,
            cpu_percent: r.usage.map(|u| (u.cpu_percent * 10.0).round() / 10.0),
            memory_bytes: r.usage.map(|u| u.rss_bytes),
            agents: r.agents,
            tokens: r.tokens,
            cost_usd: money(r.cost),
        })
        .collect();
    let mut out = serde_json::to_string(&rows).expect("rows serialise");
    out.push('\n');
    out
}

/// `2026-12-01T11:48:24.123Z`.
pub fn iso_utc(ms: i64) -> String {
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", s / 3600, s / 60 % 60, s % 60)
}

/// How long ago, as a person reads it: `42s`, `5m`, `3h`, `2d`.
pub fn age(now_ms: i64, then_ms: i64) -> String {
    let secs = now_ms.saturating_sub(then_ms).max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// Memory like htop: `812K`, `41.3M`, `1.2G`.
pub fn memory(bytes: u64) -> String {
    let kib = bytes as f64 / 1024.0;
    if kib < 1024.0 {
        format!("{kib:.0}K")
    } else if kib < 1024.0 * 1024.0 {
        format!("{:.1}M", kib / 1024.0)
    } else {
        format!("{:.1}G", kib / 1024.0 / 1024.0)
    }
}

/// `~/…` for paths under the home folder.
pub(super) fn short_path(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && home != "/" => match path.strip_prefix(&home) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
            _ => path.to_owned(),
        },
        _ => path.to_owned(),
    }
}

/// Widest session name printed.
const NAME_WIDTH: usize = 48;
/// Narrowest a name is cut to so that a row fits a terminal.
const NAME_MIN: usize = 16;

/// The width of the terminal stdout is (`COLUMNS` first, as `ps` reads it); `None` when stdout
/// is no terminal: a pipe or a file gets every column whole.
pub(super) fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c > 0);
    columns.or_else(|| crossterm::terminal::size().ok().map(|(w, _)| usize::from(w)).filter(|&w| w > 0))
}

const ID: usize = 1;
/// Characters of a session id kept when it is cut.
const ID_TAIL: usize = 8;
const SOURCE: usize = 3;
const PROCESS: [usize; 3] = [6, 7, 8];
const NAME: usize = 12;

/// `width` the terminal's (`None`: unbounded). A table wider than the terminal wrapped every row
/// over three lines of an 80-column terminal (a Codex rollout path alone is ~95 columns), so, as
/// `ps` fits its COMMAND to the terminal: the SOURCE column goes first (`--json` has it), then the
/// process columns when no session has a process, then ids are cut to their tails, then the name
/// is cut (to [`NAME_MIN`]), and a row still too wide is cut at the edge.
fn render_text(report: &sessions::Report, now_ms: i64, width: Option<usize>) -> String {
    let mut out = String::new();
    if report.rows.is_empty() {
        let _ = writeln!(out, "no agent sessions found; looked in:");
        for (tool, dir) in &report.looked_in {
            let _ = writeln!(out, "  {tool:<8} {}", crate::wire::sanitize(&short_path(&dir.display().to_string())));
        }
        let _ =
            writeln!(out, "  tees     {}", crate::wire::sanitize(&short_path(&report.tee_dir.display().to_string())));
        return out;
    }
    // The name goes last, as `ps` puts the command: it is as long as a first prompt is.
    let header =
        ["AGENT", "ID", "PROJECT", "SOURCE", "STATE", "LAST", "PID", "CPU%", "MEM", "AGENTS", "TOKENS", "COST", "NAME"];
    let mut rows: Vec<[String; 13]> = report
        .rows
        .iter()
        .map(|r| {
            [
                r.tool.to_string(),
                r.id.to_string(),
                r.project.as_ref().map_or_else(|| "?".to_owned(), |p| short_path(p.as_str())),
                short_path(r.source.as_str()),
                r.state.as_str().to_owned(),
                r.last_activity_ms.map_or_else(|| "?".to_owned(), |t| age(now_ms, t)),
                r.pid.map_or_else(|| "-".to_owned(), |p| p.to_string()),
                r.usage.map_or_else(|| "-".to_owned(), |u| format!("{:.1}", u.cpu_percent)),
                r.usage.map_or_else(|| "-".to_owned(), |u| memory(u.rss_bytes)),
                r.agents.to_string(),
                grouped(r.tokens),
                format_usd(r.cost),
                crate::ui::text::truncate(r.name.as_str(), NAME_WIDTH),
            ]
        })
        .collect();
    let cols = crate::ui::text::width;
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cols(cell));
        }
    }
    let mut shown = [true; 13];
    let total = |widths: &[usize; 13], shown: &[bool; 13]| -> usize {
        widths.iter().zip(shown).filter(|(_, s)| **s).map(|(w, _)| w + 2).sum::<usize>().saturating_sub(2)
    };
    if let Some(limit) = width {
        if total(&widths, &shown) > limit {
            shown[SOURCE] = false;
        }
        if total(&widths, &shown) > limit && rows.iter().all(|r| PROCESS.iter().all(|&c| r[c] == "-")) {
            for c in PROCESS {
                shown[c] = false;
            }
        }
        // A session id is as long as a UUID; its tail tells sessions apart (their heads are a
        // time), as the short ids of `stats` and `tree` do. Cut when a name cut short is not
        // enough.
        let at_least = |widths: &[usize; 13]| {
            total(widths, &shown).saturating_sub(widths[NAME].saturating_sub(NAME_MIN.min(widths[NAME])))
        };
        if at_least(&widths) > limit {
            for r in &mut rows {
                let n = r[ID].chars().count();
                if n > ID_TAIL + 1 {
                    r[ID] = format!("…{}", r[ID].chars().skip(n - ID_TAIL).collect::<String>());
                }
            }
            widths[ID] = rows.iter().map(|r| cols(&r[ID])).chain([header[ID].len()]).max().unwrap_or(0);
        }
        let over = total(&widths, &shown).saturating_sub(limit);
        widths[NAME] = widths[NAME].saturating_sub(over).max(NAME_MIN.min(widths[NAME]));
    }
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate().filter(|(i, _)| shown[*i]) {
            let cell = if i == NAME { crate::ui::text::truncate(cell, w) } else { (*cell).to_owned() };
            let pad = " ".repeat(w.saturating_sub(cols(&cell)));
            // Words align left, figures right.
            if i < 6 || i == NAME {
                let _ = write!(l, "{cell}{pad}  ");
            } else {
                let _ = write!(l, "{pad}{cell}  ");
            }
        }
        let l = l.trim_end();
        match width {
            Some(limit) if cols(l) > limit => crate::ui::text::truncate(l, limit),
            _ => l.to_owned(),
        }
    };
    let _ = writeln!(out, "{}", line(&header));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_like_ps() {
        assert_eq!(iso_utc(1_764_589_704_123), "2025-12-01T11:48:24.123Z");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(age(100_000, 58_000), "42s");
        assert_eq!(age(10_000_000, 0), "2h");
        assert_eq!(memory(812 * 1024), "812K");
        assert_eq!(memory(41_300_000), "39.4M");
    }
}
