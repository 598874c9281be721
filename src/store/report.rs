//! Reports: spend grouped by day, week or month (in a time zone), by session, project, model or
//! kind of agent, each row with the part the sub-agents spent. Summed here, exactly (pico-dollars
//! in 128 bits), from the quarter hours the store keeps; a day in any zone is a whole number of
//! them, so a daily report in any zone adds up to the same totals.

use std::collections::{BTreeSet, HashMap, HashSet};

use color_eyre::eyre::Result;
use jiff::tz::TimeZone;

use super::Store;
use super::query::{Filter, date_in, week_of};
use super::rows::{Figures, UsageFact};

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Daily,
    Weekly,
    Monthly,
    Session,
    Project,
    Model,
    /// Sub-agents by their kind (Claude `agentType`, Codex role, OpenCode agent); the sessions'
    /// own threads as one row, [`MAIN`].
    AgentType,
    /// The machine that ran it (a team store's; a file store's are all [`THIS_MACHINE`]).
    Machine,
}

impl Kind {
    pub const ALL: [Self; 8] = [
        Self::Daily,
        Self::Weekly,
        Self::Monthly,
        Self::Session,
        Self::Project,
        Self::Model,
        Self::AgentType,
        Self::Machine,
    ];

    /// As the command line and `--json` name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Daily => "daily",
            Self::Weekly => "weekly",
            Self::Monthly => "monthly",
            Self::Session => "session",
            Self::Project => "project",
            Self::Model => "model",
            Self::AgentType => "agent-type",
            Self::Machine => "machine",
        }
    }

    pub fn of(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Rows in time order (a session report's by last activity, the others by spend).
    fn is_time(self) -> bool {
        matches!(self, Self::Daily | Self::Weekly | Self::Monthly)
    }
}

/// The key of what no time, project or model was known for.
pub const UNKNOWN: &str = "(unknown)";
/// The `agent-type` row of the sessions' own threads (not sub-agents).
pub const MAIN: &str = "(main)";
/// The `machine` row of a file store (its sessions are this machine's).
pub const THIS_MACHINE: &str = "(this machine)";

/// One row of a report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    /// Distinct sessions with spend in the row.
    pub sessions: usize,
    pub all: Figures,
    /// The sub-agents' part of `all`.
    pub subagents: Figures,
    /// A `session` row's: which session it is (none on other reports and on totals).
    pub session: Option<Session>,
}

/// What says which session a `session` row is (ccusage's session report names its project,
/// models and last activity; `history` its agent and name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    pub agent: String,
    /// As `history` names it (empty for a run of no session).
    pub name: String,
    pub project: Option<String>,
    /// Its last line (unix ms); else the start of its last quarter hour of spend.
    pub last_ms: Option<i64>,
    /// The models it spent on in the report's range, by name.
    pub models: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub rows: Vec<Row>,
    pub totals: Row,
}

#[derive(Default)]
struct Group {
    sessions: HashSet<String>,
    all: Figures,
    subagents: Figures,
    /// Whether any sub-agent spent anything here: if none did, their part is $0, not unpriced.
    any_subagent: bool,
    /// A session row's agent, project, models and last quarter hour, as its facts say.
    agent: Option<String>,
    project: Option<String>,
    models: BTreeSet<String>,
    last_ms: Option<i64>,
}

impl Group {
    fn add(&mut self, fact: &UsageFact) {
        if !self.sessions.contains(fact.session.as_str()) {
            self.sessions.insert(fact.session.to_string());
        }
        let f = Figures { tokens: fact.tokens, cost: fact.cost, priced: fact.priced };
        self.all.add(&f);
        if fact.subagent {
            self.subagents.add(&f);
            self.any_subagent = true;
        }
    }

    /// What a session row says of its session besides its figures.
    fn note(&mut self, fact: &UsageFact) {
        if self.agent.is_none() {
            self.agent = Some(fact.agent.to_string());
            self.project = fact.project.as_ref().map(ToString::to_string);
        }
        if let Some(m) = fact.model.as_ref().filter(|m| !self.models.contains(m.as_str())) {
            self.models.insert(m.to_string());
        }
        self.last_ms = self.last_ms.max(fact.at_ms);
    }

    fn row(self, key: String) -> Row {
        let mut subagents = self.subagents;
        subagents.priced |= !self.any_subagent;
        let session = self.agent.map(|agent| Session {
            agent,
            name: String::new(),
            project: self.project,
            last_ms: self.last_ms,
            models: self.models.into_iter().collect(),
        });
        Row { key, sessions: self.sessions.len(), all: self.all, subagents, session }
    }
}

/// The report of `kind` over what `filter` selects, days in `tz`.
pub fn report(store: &Store, kind: Kind, filter: &Filter, tz: &TimeZone) -> Result<Report> {
    let mut groups: HashMap<String, Group> = HashMap::new();
    let mut totals = Group::default();
    // Quarter hours repeat across runs: each is placed in the calendar once.
    let mut days: HashMap<i64, String> = HashMap::new();
    store.backend().usage(filter, &mut |fact| {
        let key = match kind {
            Kind::Daily | Kind::Weekly | Kind::Monthly => match fact.at_ms {
                Some(at) => days.entry(at).or_insert_with(|| period(kind, at, tz)).clone(),
                None => UNKNOWN.to_owned(),
            },
            Kind::Session => fact.session.to_string(),
            Kind::Project => fact.project.as_ref().map_or_else(|| UNKNOWN.to_owned(), ToString::to_string),
            Kind::Model => fact.model.as_ref().map_or_else(|| UNKNOWN.to_owned(), ToString::to_string),
            Kind::AgentType if !fact.subagent => MAIN.to_owned(),
            Kind::AgentType => fact.agent_type.as_ref().map_or_else(|| UNKNOWN.to_owned(), ToString::to_string),
            Kind::Machine => fact.machine.as_ref().map_or_else(|| THIS_MACHINE.to_owned(), ToString::to_string),
        };
        let group = groups.entry(key).or_default();
        group.add(&fact);
        if kind == Kind::Session {
            group.note(&fact);
        }
        totals.add(&fact);
    })?;
    let mut rows: Vec<Row> = groups.into_iter().map(|(key, g)| g.row(key)).collect();
    if kind == Kind::Session {
        named(store, filter, &mut rows)?;
    }
    if kind.is_time() {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
    } else if kind == Kind::Session {
        // As ccusage's session report: by last activity, the most recent last (a session with
        // none known first), the id breaking ties so the order never depends on the store's.
        let last = |r: &Row| r.session.as_ref().and_then(|s| s.last_ms);
        rows.sort_by(|a, b| last(a).cmp(&last(b)).then(a.key.cmp(&b.key)));
    } else {
        rows.sort_by(|a, b| {
            b.all
                .cost_usd()
                .cmp(&a.all.cost_usd())
                .then(b.all.tokens.total.cmp(&a.all.tokens.total))
                .then(a.key.cmp(&b.key))
        });
    }
    Ok(Report { rows, totals: totals.row("total".to_owned()) })
}

/// Each session row's name and last line as the store's session says them (`history`'s), over
/// whatever range the report is of: a session's last activity is its own, not the range's.
fn named(store: &Store, filter: &Filter, rows: &mut [Row]) -> Result<()> {
    let all = Filter { since_ms: None, until_ms: None, ..filter.clone() };
    let mut by_id: HashMap<String, super::rows::SessionInfo> = HashMap::new();
    for s in store.backend().sessions(&all)? {
        by_id.entry(s.id.to_string()).or_insert(s);
    }
    for row in rows {
        let (Some(detail), Some(s)) = (row.session.as_mut(), by_id.get(&row.key)) else { continue };
        detail.name = crate::wire::sanitize_line(s.name.as_str()).to_string();
        detail.last_ms = s.ended_ms.or(s.started_ms).or(detail.last_ms);
        if detail.project.is_none() {
            detail.project = s.project.as_ref().map(ToString::to_string);
        }
    }
    Ok(())
}

/// `2026-02-12` (day), `2026-02-09` (the week's Monday), `2026-02` (month) of `at_ms` in `tz`.
fn period(kind: Kind, at_ms: i64, tz: &TimeZone) -> String {
    let Some(date) = date_in(at_ms, tz) else { return UNKNOWN.to_owned() };
    match kind {
        Kind::Weekly => week_of(date).to_string(),
        Kind::Monthly => format!("{:04}-{:02}", date.year(), date.month()),
        _ => date.to_string(),
    }
}
