//! `swarmtop history [SESSION]`: past root sessions from the run store, newest first; one
//! session's tree (as `tree` printed it, `--json` as `stats --json` did), whether or not its
//! files are still there; `--prune --before WHEN` to forget old sessions.

use std::fmt::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde_json::value::RawValue;

use super::cli::{GlobalOpts, HistoryArgs, MachineOpts};
use super::report::{End, filter, minute, parse_when};
use super::stats::{TokensJson, money};
use super::table::{self, Cut, Spec, terminal_width};
use crate::model::format_usd;
use crate::pipeline::Config;
use crate::store::rows::{ActRow, SessionInfo};
use crate::store::{Lookup, Store, query};
use crate::ui::text::{duration, grouped};

pub fn run(args: &HistoryArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let (filter, tz) = filter(&args.filter)?;
    if args.prune {
        let before = args.before.as_deref().unwrap_or_default();
        let before = parse_when(before, End::Since, &tz, Timestamp::now().as_millisecond()).map_err(|e| eyre!(e))?;
        // A team store's sessions are pruned machine by machine: this one's, or --machine's.
        let whose = MachineOpts { name: args.filter.machine.clone() };
        let mut store = super::sync::open_as(&args.filter.store, &whose)?;
        if whose.name.is_some() && matches!(store.location(), crate::store::Location::File(_)) {
            return Err(eyre!("--machine names whose sessions to prune in a team store (--store postgres://…)"));
        }
        return prune(&mut store, before);
    }
    let store = super::sync::synced(&args.filter.store, args.filter.no_sync, config, global)?;
    if let Some(id) = &args.session {
        return one(&store, id, args.json, &tz);
    }
    let sessions = store.backend().sessions(&filter)?;
    let out = if args.json { render_json(&sessions, &tz) } else { render_text(&sessions, &tz, terminal_width()) };
    super::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn prune(store: &mut Store, before_ms: i64) -> Result<ExitCode> {
    let pruned = store.backend_mut().prune(before_ms)?;
    let size = store.backend().size()?;
    let out = format!(
        "pruned {} sessions ({} runs, {} acts); store {} bytes\n",
        pruned.sessions,
        pruned.runs,
        pruned.acts,
        grouped(size)
    );
    super::print(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// One session from the store, and the acts done in it.
fn one(store: &Store, id: &str, json: bool, tz: &TimeZone) -> Result<ExitCode> {
    match store.backend().session(id)? {
        Lookup::Found(view) => {
            let acts = store.backend().acts(view.session.id.as_str())?;
            let out = if json {
                with_acts_json(view.stats_json, &acts, tz)
            } else {
                with_acts_text(&view.tree_text, &acts, tz)
            };
            super::print(out.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Lookup::Missing => Err(eyre!("no session {} in the run store", crate::wire::sanitize_line(id))),
        Lookup::Ambiguous(ids) => Err(eyre!(
            "{} names more than one session: {}",
            crate::wire::sanitize_line(id),
            ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The session's tree, then what was done to it: one line per act, oldest first.
fn with_acts_text(tree: &crate::wire::Clean, acts: &[ActRow], tz: &TimeZone) -> String {
    let mut out = tree.to_string();
    if acts.is_empty() {
        return out;
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("\nacts:\n");
    for a in acts {
        let clean = |s: &str| crate::wire::sanitize_line(s).to_string();
        let detail = if a.detail.is_empty() { String::new() } else { format!(" ({})", clean(&a.detail)) };
        let _ = writeln!(
            out,
            "  {}  {} {} by {} via {}{detail}: {}",
            minute(a.at_ms, tz),
            clean(&a.kind),
            clean(&a.target),
            clean(&a.by),
            clean(&a.via),
            clean(&a.outcome),
        );
    }
    out
}

/// `stats --json`'s object with the acts under `acts` (left as it was when there are none).
fn with_acts_json(stats: String, acts: &[ActRow], tz: &TimeZone) -> String {
    let Ok(serde_json::Value::Object(mut object)) = serde_json::from_str::<serde_json::Value>(&stats) else {
        return stats;
    };
    if acts.is_empty() {
        return stats;
    }
    let list = acts
        .iter()
        .map(|a| {
            serde_json::json!({"at": query::rfc3339(a.at_ms, tz), "kind": a.kind, "by": a.by, "via": a.via,
                               "target": a.target, "detail": a.detail, "outcome": a.outcome})
        })
        .collect();
    object.insert("acts".into(), serde_json::Value::Array(list));
    let mut out = serde_json::Value::Object(object).to_string();
    out.push('\n');
    out
}

#[derive(Serialize)]
struct HistoryJson<'a> {
    sessions: Vec<SessionJson<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionJson<'a> {
    id: &'a str,
    agent: &'a str,
    name: &'a str,
    project: Option<&'a str>,
    start: Option<String>,
    end: Option<String>,
    status: &'a str,
    agents: u32,
    depth: u32,
    tokens: TokensJson,
    cost_usd: Option<Box<RawValue>>,
    /// Whether every file it was read from was still there at the last sync.
    files_present: bool,
    /// The machine that ran it (a team store's).
    #[serde(skip_serializing_if = "Option::is_none")]
    machine: Option<&'a str>,
}

pub(super) fn render_json(sessions: &[SessionInfo], tz: &TimeZone) -> String {
    let json = HistoryJson {
        sessions: sessions
            .iter()
            .map(|s| SessionJson {
                id: s.id.as_str(),
                agent: s.agent.as_str(),
                name: s.name.as_str(),
                project: s.project.as_ref().map(crate::wire::Clean::as_str),
                start: s.started_ms.and_then(|t| query::rfc3339(t, tz)),
                end: s.ended_ms.and_then(|t| query::rfc3339(t, tz)),
                status: s.status.as_str(),
                agents: s.agents,
                depth: s.depth,
                tokens: (&s.figures.tokens).into(),
                cost_usd: money(s.figures.cost_usd()),
                files_present: s.files_present,
                machine: s.machine.as_ref().map(crate::wire::Clean::as_str),
            })
            .collect(),
    };
    let mut out = serde_json::to_string(&json).expect("history serialises");
    out.push('\n');
    out
}

fn render_text(sessions: &[SessionInfo], tz: &TimeZone, limit: Option<usize>) -> String {
    if sessions.is_empty() {
        return "no sessions in the run store for these filters\n".to_owned();
    }
    // A team store's sessions say which machine ran them, after the agent.
    let fleet = sessions.iter().any(|s| s.machine.is_some());
    let mut specs = super::report::leading("START", fleet);
    specs.extend([
        // A prefix is what `history ID` takes.
        Spec::word("ID", 15).cut(Cut::Tail, 18),
        Spec::word("PROJECT", 3).cut(Cut::Head, 10),
        Spec::figure("TIME", 2),
        Spec::word("STATUS", 16),
        Spec::figure("AGENTS", 1),
        Spec::figure("DEPTH", 0),
        Spec::figure("TOKENS", 17),
        Spec::figure("COST", 18),
        Spec::word("NAME", 12).cut(Cut::Tail, 8),
    ]);
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let elapsed = s.started_ms.zip(s.ended_ms).map(|(a, b)| b.saturating_sub(a));
            let machine = fleet.then(|| s.machine.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string));
            [s.started_ms.map_or_else(|| "?".to_owned(), |t| minute(t, tz)), s.agent.to_string()]
                .into_iter()
                .chain(machine)
                .chain([s.id.to_string()])
                .chain(rest(s, elapsed))
                .collect()
        })
        .collect();
    table::render(&specs, &rows, limit)
}

/// A session's cells after its id.
fn rest(s: &SessionInfo, elapsed: Option<i64>) -> Vec<String> {
    vec![
        s.project.as_ref().map_or_else(|| "?".to_owned(), |p| super::ps::short_path(p.as_str())),
        elapsed.map_or_else(|| "?".to_owned(), duration),
        s.status.to_string(),
        s.agents.to_string(),
        s.depth.to_string(),
        grouped(s.figures.tokens.total),
        format_usd(s.figures.cost_usd()),
        crate::ui::text::truncate(crate::wire::sanitize_line(s.name.as_str()).as_str(), table::NAME_WIDTH),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::text::width;
    use crate::wire::sanitize_line;

    fn session(id: &str, agent: &str, name: &str) -> SessionInfo {
        let mut figures = crate::store::rows::Figures::default();
        figures.tokens.total = 260_577;
        figures.priced = true;
        SessionInfo {
            id: sanitize_line(id),
            agent: sanitize_line(agent),
            name: sanitize_line(name),
            project: Some(sanitize_line("/home/dev/clients/acme/platform/services/acme-auth")),
            started_ms: Some(1_770_854_400_000),
            ended_ms: Some(1_770_854_700_000),
            status: sanitize_line("interrupted"),
            agents: 7,
            depth: 2,
            figures,
            files_present: true,
            machine: None,
        }
    }

    /// At 80 columns the figures stay and the id keeps the prefix `history ID` takes; piped,
    /// every cell is whole.
    #[test]
    fn eighty_columns_keep_tokens_cost_and_an_id_prefix() {
        let id = "01a2352a-c891-7760-9bdf-d99f0f465515";
        let rows = [
            session(id, "codex", "Replace the hand-rolled verify_token with the jwt crate"),
            session("ses_dcad5a3d1ffe5I5uDEG5E01X9o", "opencode", "lead"),
        ];
        let text = render_text(&rows, &TimeZone::UTC, Some(80));
        assert!(text.lines().all(|l| width(l) <= 80), "{text}");
        let header = text.lines().next().unwrap();
        for col in ["START", "AGENT", "ID", "STATUS", "TOKENS", "COST", "NAME"] {
            assert!(header.contains(col), "{col}: {text}");
        }
        assert!(text.contains("260,577") && text.contains("01a2352a-c891-77"), "{text}");
        let piped = render_text(&rows, &TimeZone::UTC, None);
        assert!(piped.contains(id) && piped.contains("acme-auth") && piped.contains("verify_token"), "{piped}");
    }
}
