//! `swarmtop report daily|weekly|monthly|session|project|model|agent-type`: spend from the run
//! store, every row with the sub-agents' part; and what the store's commands share: their
//! filters (`--since`, `--until`, `--tz`, `--agent`, `--project`) and their tables.

use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde_json::value::RawValue;

use super::cli::{FilterOpts, GlobalOpts, ReportArgs};
use super::stats::{TokensJson, money};
use super::table::{self, Cut, Spec, terminal_width};
use crate::model::format_usd;
use crate::pipeline::Config;
use crate::store::query::{self, Filter};
use crate::store::report::{self, Kind, Report, Row};
use crate::store::rows::Figures;
use crate::ui::text::grouped;

pub fn run(args: &ReportArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let (filter, tz) = filter(&args.filter)?;
    let store = super::sync::synced(&args.filter.store, args.filter.no_sync, config, global)?;
    let report = report::report(&store, args.kind, &filter, &tz)?;
    let out = if args.json {
        render_json(&report, args.kind, &tz)
    } else {
        render_text(&report, args.kind, &tz, terminal_width())
    };
    super::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The filters as the store takes them, and the time zone dates are read in.
pub(super) fn filter(opts: &FilterOpts) -> Result<(Filter, TimeZone)> {
    let tz = query::zone(opts.tz.as_deref()).map_err(|e| eyre!(e))?;
    let now = Timestamp::now().as_millisecond();
    let when = |text: &Option<String>, end: End| -> Result<Option<i64>> {
        text.as_deref().map(|t| parse_when(t, end, &tz, now).map_err(|e| eyre!(e))).transpose()
    };
    let filter = Filter {
        since_ms: when(&opts.since, End::Since)?,
        until_ms: when(&opts.until, End::Until)?,
        agent: opts.agent.clone(),
        project: opts.project.clone(),
        machine: opts.machine.clone(),
    };
    Ok((filter, tz))
}

/// Which end of a range a time stands for: a date `--since` means its first moment, a date
/// `--until` takes the whole day in (ccusage's `--until` is inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Since,
    Until,
}

/// A time as the command line gives it, as unix ms: a date (`2026-02-12`, or `20260212` as
/// ccusage takes it) in `tz`, an RFC 3339 time, or a duration before `now_ms` (`30m`, `7d`, `2w`).
pub(super) fn parse_when(text: &str, end: End, tz: &TimeZone, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Some(date) = date_of(text) {
        let day = match end {
            End::Since => Some(date),
            End::Until => date.tomorrow().ok(),
        };
        return day
            .and_then(|d| query::day_start(d, tz))
            .ok_or_else(|| format!("{text:?} has no start in {}", query::zone_name(tz)));
    }
    if let Ok(t) = text.parse::<Timestamp>() {
        return Ok(t.as_millisecond());
    }
    let ago = match text.strip_suffix('w').map(str::parse::<u64>) {
        Some(Ok(weeks)) => Ok(weeks.saturating_mul(7 * 86_400_000)),
        _ => super::cli::parse_duration_ms(text),
    }
    .map_err(|_| format!("not a date, a time or a duration: {text:?} (try 2026-02-12, 20260212, 7d, 12h)"))?;
    Ok(now_ms.saturating_sub(i64::try_from(ago).unwrap_or(i64::MAX)))
}

fn date_of(text: &str) -> Option<Date> {
    if let Ok(d) = text.parse::<Date>() {
        return Some(d);
    }
    if text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit()) {
        let n = |r: std::ops::Range<usize>| text[r].parse::<i16>().ok();
        return Date::new(n(0..4)?, i8::try_from(n(4..6)?).ok()?, i8::try_from(n(6..8)?).ok()?).ok();
    }
    None
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportJson<'a> {
    report: &'static str,
    timezone: String,
    rows: Vec<RowJson<'a>>,
    totals: RowJson<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RowJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    sessions: usize,
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
    subagents: PartJson,
    /// A `session` row's: which session it is.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    session: Option<SessionJson<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionJson<'a> {
    agent: &'a str,
    name: &'a str,
    project: Option<&'a str>,
    last_activity: Option<String>,
    models: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartJson {
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
}

impl<'a> RowJson<'a> {
    fn of(row: &'a Row, key: bool, tz: &TimeZone) -> Self {
        Self {
            session: row.session.as_ref().map(|s| SessionJson {
                agent: &s.agent,
                name: &s.name,
                project: s.project.as_deref(),
                last_activity: s.last_ms.and_then(|t| query::rfc3339(t, tz)),
                models: &s.models,
            }),
            key: key.then_some(row.key.as_str()),
            sessions: row.sessions,
            tokens: (&row.all.tokens).into(),
            cost_usd: money(row.all.cost_usd()),
            subagents: PartJson { tokens: (&row.subagents.tokens).into(), cost_usd: money(row.subagents.cost_usd()) },
        }
    }
}

pub(super) fn render_json(report: &Report, kind: Kind, tz: &TimeZone) -> String {
    let json = ReportJson {
        report: kind.name(),
        timezone: query::zone_name(tz),
        rows: report.rows.iter().map(|r| RowJson::of(r, true, tz)).collect(),
        totals: RowJson::of(&report.totals, false, tz),
    };
    let mut out = serde_json::to_string(&json).expect("reports serialise");
    out.push('\n');
    out
}

fn render_text(report: &Report, kind: Kind, tz: &TimeZone, limit: Option<usize>) -> String {
    if report.rows.is_empty() {
        return "no spend in the run store for these filters\n".to_owned();
    }
    if kind == Kind::Session {
        return sessions_text(report, tz, limit);
    }
    let key = match kind {
        Kind::Daily => "DATE",
        Kind::Weekly => "WEEK",
        Kind::Monthly => "MONTH",
        Kind::Session => "SESSION",
        Kind::Project => "PROJECT",
        Kind::Model => "MODEL",
        Kind::AgentType => "AGENT TYPE",
        Kind::Machine => "MACHINE",
    };
    // What goes first when the terminal is narrow: the breakdown of tokens, then the counts.
    let mut specs = vec![Spec::word(key, 9).cut(Cut::Tail, 12), Spec::figure("SESSIONS", 3)];
    specs.extend(FIGURES);
    let mut rows: Vec<Vec<String>> = report.rows.iter().map(|row| cells(&row.key, row)).collect();
    rows.push(cells("total", &report.totals));
    table::render(&specs, &rows, limit)
}

/// The session report: each row says which session it is (when it was last active, its agent,
/// id, project and models, its name as `history` gives it) rather than a count of one session.
fn sessions_text(report: &Report, tz: &TimeZone, limit: Option<usize>) -> String {
    // Narrow: the breakdown of tokens, then the models, the project, the sub-agents' tokens, the
    // agent, the sub-agents' cost; the name gives way. The session's id is the row's key: whole.
    let mut specs = vec![
        Spec::word("LAST ACTIVITY", 20),
        Spec::word("AGENT", 6),
        Spec::word("SESSION", 15),
        Spec::word("PROJECT", 4).cut(Cut::Head, 10),
        Spec::word("MODELS", 3).cut(Cut::Tail, 12),
    ];
    specs.extend(FIGURES);
    specs.push(Spec::word("NAME", 12).cut(Cut::Tail, 12));
    let mut rows = Vec::with_capacity(report.rows.len() + 1);
    for row in &report.rows {
        let s = row.session.clone().unwrap_or_default();
        let mut line = vec![
            s.last_ms.map_or_else(|| "?".to_owned(), |t| minute(t, tz)),
            s.agent,
            row.key.clone(),
            s.project.as_deref().map_or_else(|| "?".to_owned(), super::ps::short_path),
            s.models.join(", "),
        ];
        line.extend(cells(&row.key, row).into_iter().skip(2));
        line.push(s.name);
        rows.push(line);
    }
    let mut total = vec!["total".to_owned(), String::new(), String::new(), String::new(), String::new()];
    total.extend(cells("total", &report.totals).into_iter().skip(2));
    total.push(String::new());
    rows.push(total);
    table::render(&specs, &rows, limit)
}

/// The figures of every report's row, as [`cells`] gives them after the key and the count.
const FIGURES: [Spec; 7] = [
    Spec::figure("INPUT", 0),
    Spec::figure("CACHED", 1),
    Spec::figure("OUTPUT", 2),
    Spec::figure("TOKENS", 16),
    Spec::figure("COST", 18),
    Spec::figure("SUB-AGENT TOKENS", 5),
    Spec::figure("SUB-AGENT COST", 7),
];

/// The columns a stored row starts with: when, which agent, and on a team store which machine.
pub(super) fn leading(when: &'static str, fleet: bool) -> Vec<Spec> {
    let mut specs = vec![Spec::word(when, 20), Spec::word("AGENT", 14)];
    if fleet {
        specs.push(Spec::word("MACHINE", 5).cut(Cut::Tail, 8));
    }
    specs
}

fn cells(key: &str, row: &Row) -> Vec<String> {
    let t = &row.all.tokens;
    vec![
        key.to_owned(),
        grouped(row.sessions as u64),
        grouped(t.input),
        grouped(t.cached_input),
        grouped(t.output),
        grouped(t.total),
        usd(&row.all),
        grouped(row.subagents.tokens.total),
        usd(&row.subagents),
    ]
}

fn usd(f: &Figures) -> String {
    format_usd(f.cost_usd())
}

/// `2026-02-12 17:02` in `tz`.
pub(super) fn minute(ms: i64, tz: &TimeZone) -> String {
    Timestamp::from_millisecond(ms)
        .map_or_else(|_| "?".to_owned(), |t| t.to_zoned_datetime(tz.clone()).strftime("%Y-%m-%d %H:%M").to_string())
}

/// `2026-02-12 17:02:09` in `tz`.
pub(super) fn second(ms: i64, tz: &TimeZone) -> String {
    Timestamp::from_millisecond(ms)
        .map_or_else(|_| "?".to_owned(), |t| t.to_zoned_datetime(tz.clone()).strftime("%Y-%m-%d %H:%M:%S").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::text::width;

    #[test]
    fn dates_durations_and_times() {
        let utc = TimeZone::UTC;
        let day = 1_770_854_400_000; // 2026-02-12T00:00:00Z
        assert_eq!(parse_when("2026-02-12", End::Since, &utc, 0), Ok(day));
        assert_eq!(parse_when("20260212", End::Since, &utc, 0), Ok(day));
        assert_eq!(parse_when("2026-02-12", End::Until, &utc, 0), Ok(day + 86_400_000), "the whole day");
        assert_eq!(parse_when("2026-02-12T01:00:00Z", End::Since, &utc, 0), Ok(day + 3_600_000));
        assert_eq!(parse_when("7d", End::Since, &utc, day), Ok(day - 7 * 86_400_000));
        assert_eq!(parse_when("2w", End::Since, &utc, day), Ok(day - 14 * 86_400_000));
        assert!(parse_when("yesterday-ish", End::Since, &utc, 0).is_err());
        let tokyo = query::zone(Some("Asia/Tokyo")).unwrap();
        assert_eq!(parse_when("2026-02-12", End::Since, &tokyo, 0), Ok(day - 9 * 3_600_000));
        assert!(query::zone(Some("Mars/Olympus")).is_err());
    }

    #[test]
    fn a_session_report_fits_a_narrow_terminal_and_keeps_the_id() {
        let session = crate::store::report::Session {
            agent: "claude".to_owned(),
            name: "review the parser and write the tests for every case it misses".to_owned(),
            project: Some("/work/a-long-project-name".to_owned()),
            last_ms: Some(1_770_854_400_000),
            models: vec!["claude-opus-4-6".to_owned(), "claude-haiku-4-5".to_owned()],
        };
        let id = "136d4454-0b5e-43dd-b409-4f16ef4e3616";
        let row = Row { key: id.to_owned(), sessions: 1, session: Some(session), ..Row::default() };
        let report = Report { rows: vec![row], totals: Row { key: "total".to_owned(), ..Row::default() } };
        for limit in [80, 100, 140] {
            let text = render_text(&report, Kind::Session, &TimeZone::UTC, Some(limit));
            assert!(text.lines().all(|l| width(l) <= limit), "{limit}: {text}");
            assert!(text.lines().nth(1).unwrap().starts_with("2026-02-12 00:00  "), "{text}");
            assert!(text.contains(id) && text.contains("TOKENS") && text.contains("COST"), "{limit}: {text}");
        }
        let whole = render_text(&report, Kind::Session, &TimeZone::UTC, None);
        assert!(whole.contains("claude-opus-4-6, claude-haiku-4-5") && whole.contains("misses"), "{whole}");
    }
}
