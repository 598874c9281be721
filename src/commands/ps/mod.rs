//! `swarmtop ps [--json] [--since D] [--all] [--sort KEYS] [-o COLS]`: the sessions the machine
//! view shows, one row per root session, like `ps`. The figures are those `stats` gives for the
//! session's own inputs.
//!
//! - [`columns`]: each column's name, header and how it gives way.
//! - [`order`]: how rows compare in each column (`--sort`).

pub mod columns;
mod order;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use color_eyre::eyre::Result;
use serde::Serialize;
use serde_json::value::RawValue;

use self::columns::Column;
use super::cli::PsArgs;
use super::sessions::{self, Row};
use super::stats::money;
use super::table::{self, NAME_WIDTH, terminal_width};
use crate::model::format_usd;
use crate::pipeline::Config;
use crate::source::census::{self, Options};
use crate::source::recording::civil_from_days;
use crate::ui::text::grouped;
use crate::wire::sanitize_line;

/// What the text table shows: its columns, and the window (to say what it left out).
struct Shape<'a> {
    columns: &'a [Column],
    since_ms: u64,
}

pub fn run(args: &PsArgs, config: &Config) -> Result<ExitCode> {
    // Each session's figures and name only: no item text is printed.
    let config = config.clone().figures();
    let opts = Options::machine(census::window(args.window.since, args.window.all));
    let home = opts.env.home();
    let mut report = sessions::collect(&opts, &config, args.until.until);
    if let Some(keys) = &args.sort {
        order::sort(&mut report.rows, &keys.0);
    }
    let now_ms = crate::source::recording::unix_ms();
    let shape =
        Shape { columns: args.columns.as_ref().map_or(&columns::DEFAULT[..], |c| &c.0), since_ms: args.window.since };
    let out = if args.json {
        render_json(&report.rows)
    } else {
        render_text(&report, &shape, now_ms, terminal_width(), home.as_deref())
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        // `swarmtop ps | head -1`: a reader that has seen enough is a normal end.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    // What discovery met and could not use, and what the window left out, go after the table,
    // never into it (a pipe reads rows only).
    for note in report.trouble.notes() {
        eprintln!("swarmtop: {note}");
    }
    if !report.rows.is_empty() {
        if let Some(note) = older_note(report.older, args.window.since) {
            eprintln!("swarmtop: {note}");
        }
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
    /// Files of the session that could not be read, each with why (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreadable: Vec<&'a str>,
}

/// One JSON array, one object per root session, and a newline. Paths and working directories
/// are the real ones; no control character is written raw, in them or anywhere.
pub fn render_json(rows: &[Row]) -> String {
    let rows: Vec<RowJson<'_>> = rows
        .iter()
        .map(|r| RowJson {
            tool: r.tool.as_str(),
            id: r.id.as_str(),
            name: r.name.as_str(),
            project: r.project.as_deref(),
            source: &r.source,
            state: r.state.as_str(),
            last_activity: r.last_activity_ms.map(iso_utc),
            last_activity_ms: r.last_activity_ms,
            pid: r.pid,
            cpu_percent: r.usage.map(|u| (u.cpu_percent * 10.0).round() / 10.0),
            memory_bytes: r.usage.map(|u| u.rss_bytes),
            agents: r.agents,
            tokens: r.tokens,
            cost_usd: money(r.cost),
            unreadable: r.unreadable.iter().map(crate::wire::Clean::as_str).collect(),
        })
        .collect();
    let mut out = escape_controls(&serde_json::to_string(&rows).expect("rows serialise"));
    out.push('\n');
    out
}

/// JSON text with every control and invisible format character written as a `\u` escape: JSON
/// escapes only C0 controls, so DEL, C1 controls (`U+009B` is a CSI to many terminals) and bidi
/// overrides would reach whoever prints the output. Such characters can only be inside strings.
fn escape_controls(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        let mut buf = [0u8; 4];
        let text = &*c.encode_utf8(&mut buf);
        // The sanitiser is the one judge of what a terminal must not be sent.
        if c.is_control() || (!c.is_ascii() && crate::wire::sanitize(text).as_str() != text) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
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

/// `~/…` for paths under the user's home folder (as the environment says it), on one line and
/// clean.
pub(super) fn short_path(path: &str) -> String {
    short_path_in(path, crate::source::agents::Env::from_process().home().as_deref())
}

/// `~/…` for paths under `home`, on one line and clean.
fn short_path_in(path: &str, home: Option<&std::path::Path>) -> String {
    let home = home.and_then(|h| h.to_str()).filter(|h| !h.is_empty() && *h != "/");
    let short = match home.and_then(|h| path.strip_prefix(h)) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => path.to_owned(),
    };
    sanitize_line(&short).to_string()
}

/// What one cell of `row` reads in column `c`, on one line and clean.
fn cell(c: Column, r: &Row, now_ms: i64, home: Option<&Path>) -> String {
    match c {
        Column::Agent => r.tool.to_string(),
        Column::Id => r.id.to_string(),
        Column::Project => r.project.as_deref().map_or_else(|| "?".to_owned(), |p| short_path_in(p, home)),
        Column::Source => short_path_in(&r.source, home),
        Column::State => r.state.as_str().to_owned(),
        Column::Last => r.last_activity_ms.map_or_else(|| "?".to_owned(), |t| age(now_ms, t)),
        Column::Pid => r.pid.map_or_else(|| "-".to_owned(), |p| p.to_string()),
        Column::Cpu => r.usage.map_or_else(|| "-".to_owned(), |u| format!("{:.1}", u.cpu_percent)),
        Column::Mem => r.usage.map_or_else(|| "-".to_owned(), |u| memory(u.rss_bytes)),
        Column::Agents => r.agents.to_string(),
        Column::Tokens => grouped(r.tokens),
        Column::Cost => format_usd(r.cost),
        Column::Name => crate::ui::text::truncate(sanitize_line(r.name.as_str()).as_str(), NAME_WIDTH),
    }
}

/// `30m`, `2h`, `1d`: a window as it was given.
fn window_name(ms: u64) -> String {
    match ms {
        0 => "0s".to_owned(),
        ms if ms % 86_400_000 == 0 => format!("{}d", ms / 86_400_000),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms => format!("{}s", ms / 1000),
    }
}

/// What the window left out, for a person: `3 older sessions (active before the last 30m): swarmtop ps --all`.
pub(super) fn older_note(older: usize, since_ms: u64) -> Option<String> {
    (older > 0).then(|| {
        let s = if older == 1 { "" } else { "s" };
        format!("{older} older session{s} (active before the last {}): swarmtop ps --all", window_name(since_ms))
    })
}

/// The table, or where it looked when there is none. `width` the terminal's (`None`: unbounded).
fn render_text(
    report: &sessions::Report,
    shape: &Shape<'_>,
    now_ms: i64,
    width: Option<usize>,
    home: Option<&Path>,
) -> String {
    let mut out = String::new();
    let short = |p: &Path| short_path_in(&p.to_string_lossy(), home);
    if report.rows.is_empty() {
        match older_note(report.older, shape.since_ms) {
            Some(note) => {
                let _ = writeln!(out, "no agent sessions active in the last {}; {note}", window_name(shape.since_ms));
                let _ = writeln!(out, "looked in:");
            }
            None => {
                let _ = writeln!(out, "no agent sessions found; looked in:");
            }
        }
        for (tool, dir) in &report.looked_in {
            let _ = writeln!(out, "  {tool:<8} {}", short(dir));
        }
        let _ = writeln!(out, "  tees     {}", short(&report.tee_dir));
        return out;
    }
    let rows: Vec<Vec<String>> =
        report.rows.iter().map(|r| shape.columns.iter().map(|&c| cell(c, r, now_ms, home)).collect()).collect();
    let specs: Vec<_> = shape.columns.iter().map(|c| c.spec()).collect();
    table::render(&specs, &rows, width)
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
