//! The run store for the monitor's history view (`H`): its sessions read after a quiet sync, one
//! session opened, the store's size. Each read runs on a thread of its own, so the screen never
//! waits on the store (a first sync of a large machine takes a while); what it read goes back to
//! the monitor's loop through a channel, tagged with the screen that asked.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr, eyre};
use jiff::tz::TimeZone;
use tokio::sync::mpsc;

use super::cli::{GlobalOpts, StoreOpts};
use crate::model::ItemStatus;
use crate::pipeline::Config;
use crate::source::acts::Logged;
use crate::source::agents::Env;
use crate::source::files::{self, Input};
use crate::source::recorded::Recorded;
use crate::store::rows::{ActRow, RunInfo, SessionInfo};
use crate::store::{Filter, Location, Lookup, Store, location};
use crate::ui::history::{Loaded, Past, PastAct, PastItem, PastRun, StoreFacts, Stored};
use crate::ui::runtime::time_of;
use crate::wire::{Clean, sanitize, sanitize_line};

/// What the history view needs to reach the run store.
#[derive(Debug, Clone)]
pub struct Access {
    pub store: StoreOpts,
    pub config: Config,
    pub global: GlobalOpts,
}

/// What a read brought, for the screen at `depth` (0: the first; 1: one opened from its history…).
pub struct Reply {
    pub depth: usize,
    pub what: Brought,
}

pub enum Brought {
    /// For the history view itself.
    Loaded(Loaded),
    /// A session whose files are all there: replayed from them, on a screen of its own.
    Replay(Box<Recorded>),
}

/// The store's size and what it holds, when a store is there (a monitor never creates one).
pub fn facts(access: &Access, depth: usize, tx: mpsc::Sender<Reply>) {
    let access = access.clone();
    spawn(
        move || {
            let at = location::resolve(access.store.store.as_deref(), &Env::from_process()).ok()?;
            if matches!(&at, Location::File(path) if !path.is_file()) {
                return None;
            }
            let store = super::sync::open(&access.store).ok()?;
            let facts = store_facts(&store).ok()?;
            Some(Reply { depth, what: Brought::Loaded(Loaded::Store(facts)) })
        },
        tx,
    );
}

/// The sessions, after a quiet sync, newest first, with the store's size.
pub fn list(access: &Access, depth: usize, tx: mpsc::Sender<Reply>) {
    let access = access.clone();
    spawn(
        move || {
            let read = || -> Result<(Arc<[Past]>, StoreFacts)> {
                let mut store = super::sync::open(&access.store)?;
                super::sync::quiet_sync(&mut store, access.config.clone(), &access.global, false)?;
                let tz = TimeZone::system();
                let sessions = store.backend().sessions(&Filter::default())?;
                Ok((sessions.iter().map(|s| past(s, &tz)).collect(), store_facts(&store)?))
            };
            let loaded = match read() {
                Ok((sessions, facts)) => Loaded::Listing(Ok(sessions), Some(facts)),
                Err(e) => Loaded::Listing(Err(message(&e)), None),
            };
            Some(Reply { depth, what: Brought::Loaded(loaded) })
        },
        tx,
    );
}

/// One session: a replay of its files when every one is still there, else the store's copy.
pub fn open(access: &Access, id: String, depth: usize, tx: mpsc::Sender<Reply>) {
    let access = access.clone();
    spawn(
        move || {
            let what = match opened(&access, &id) {
                Ok(what) => what,
                Err(e) => Brought::Loaded(Loaded::Stored(Err(message(&e)))),
            };
            Some(Reply { depth, what })
        },
        tx,
    );
}

fn spawn(read: impl FnOnce() -> Option<Reply> + Send + 'static, tx: mpsc::Sender<Reply>) {
    let started = std::thread::Builder::new().name("run store".to_owned()).spawn(move || {
        if let Some(reply) = read() {
            // The screen may be gone (quit meanwhile): nobody to tell.
            let _ = tx.blocking_send(reply);
        }
    });
    if let Err(e) = started {
        tracing::warn!(error = %e, "starting the run store's reader");
    }
}

/// An error on one line, for the screen.
fn message(e: &color_eyre::Report) -> String {
    sanitize_line(&format!("{e:#}")).to_string()
}

fn store_facts(store: &Store) -> Result<StoreFacts> {
    let totals = store.backend().totals()?;
    Ok(StoreFacts {
        path: sanitize_line(&store.location().shown()),
        bytes: store.backend().size()?,
        indexed: totals.indexed,
        sessions: totals.sessions,
        runs: totals.runs,
    })
}

fn past(s: &SessionInfo, tz: &TimeZone) -> Past {
    Past {
        id: s.id.clone(),
        agent: s.agent.clone(),
        name: s.name.clone(),
        project: s.project.clone(),
        start: s.started_ms.map(|t| super::report::minute(t, tz)),
        elapsed_ms: s.started_ms.zip(s.ended_ms).map(|(a, b)| b.saturating_sub(a)),
        status: s.status.clone(),
        agents: s.agents,
        depth: s.depth,
        tokens: s.figures.tokens,
        cost: s.figures.cost_usd(),
        files_present: s.files_present,
    }
}

fn opened(access: &Access, id: &str) -> Result<Brought> {
    let store = super::sync::open(&access.store)?;
    let files = store.backend().files(id)?;
    // A session within another agent's store is a row of it, not a file: it opens from ours.
    let all_there = !files.is_empty() && files.iter().all(|(path, present)| *present && path.is_file());
    if all_there {
        let paths: Vec<PathBuf> = files.into_iter().map(|(path, _)| path).collect();
        let inputs = files::expand(&paths).wrap_err("listing the session's files")?;
        // What was done to it is in the store, not always in its files (a signal, a server's abort).
        let acts = act_records(&store, &[id.to_owned()])?;
        let recorded = Recorded::from_inputs_with(&paths, &inputs, false, &time_of, acts)
            .wrap_err("reading the session's files")?;
        return Ok(Brought::Replay(Box::new(recorded)));
    }
    Ok(Brought::Loaded(Loaded::Stored(stored(&store, id).map(Box::new).map_err(|e| message(&e)))))
}

/// A session as the store keeps it, for the history view to draw: its runs, each with its items
/// (the agents they name called by their runs' names), and the acts on it.
pub fn stored(store: &Store, id: &str) -> Result<Stored> {
    let view = match store.backend().session(id)? {
        Lookup::Found(view) => view,
        Lookup::Missing => return Err(eyre!("the session is no longer in the run store")),
        Lookup::Ambiguous(_) => return Err(eyre!("more than one session has this id")),
    };
    let tz = TimeZone::system();
    // An item names agents by their thread ids: on screen, by their runs' names.
    let names: HashMap<&str, &Clean> = view.runs.iter().map(|r| (r.thread.as_str(), &r.name)).collect();
    let runs =
        view.runs.iter().map(|r| run(store, view.session.id.as_str(), r, &names)).collect::<Result<Vec<PastRun>>>()?;
    let acts = store.backend().acts(view.session.id.as_str())?.iter().map(|a| act(a, &tz)).collect();
    Ok(Stored { session: past(&view.session, &tz), runs, acts })
}

/// The stops and refusals the run store keeps on `sessions`, as act records for their replay
/// (issue 20: a stored session replayed from its files showed none): the tree and the lanes then
/// say who stopped each agent, as they do live, and a lane shows each call a guard refused under
/// that call. A failed stop stopped nothing and is left out (the store's view of the session lists
/// every act).
fn act_records(store: &Store, sessions: &[String]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for session in sessions {
        for a in store.backend().acts(session)?.iter().filter(|a| a.stopped() || a.refused()) {
            let (reason, call) = if a.refused() {
                // `Agent toolu_…`: the tool and the call's id (`swarmtop guard`).
                let call = a.detail.rsplit_once(' ').map(|(_, id)| id.to_owned());
                (a.outcome.strip_prefix("denied: ").unwrap_or(&a.outcome).to_owned(), call)
            } else if a.detail.is_empty() {
                (a.outcome.clone(), None)
            } else {
                (format!("{} ({})", a.outcome, a.detail), None)
            };
            let logged = Logged {
                ts: Some(a.at_ms),
                kind: Some(a.kind.clone()),
                by: Some(a.by.clone()),
                via: Some(a.via.clone()),
                server: None,
                target: a.target.clone(),
                reason: Some(reason),
                outcome: None,
                call,
            };
            logged.record(&mut out);
        }
    }
    Ok(out)
}

/// The act records of the stops the run store keeps on the sessions read from `inputs` (a
/// replay of files the store indexed): none when there is no store (a replay never creates
/// one), or it cannot be read (the replay goes on without them; the log says why).
pub fn acts_on_files(opts: &StoreOpts, inputs: &[Input]) -> Vec<u8> {
    let read = || -> Result<Vec<u8>> {
        let at = location::resolve(opts.store.as_deref(), &Env::from_process())?;
        if matches!(&at, Location::File(path) if !path.is_file()) {
            return Ok(Vec::new());
        }
        let store = super::sync::open(opts)?;
        // The store keeps the paths that discovery found; the user may name them otherwise.
        let mut paths = Vec::new();
        for input in inputs {
            if let Input::File(p) = input {
                paths.extend(std::path::absolute(p).ok());
                paths.extend(std::fs::canonicalize(p).ok());
            }
        }
        act_records(&store, &store.backend().sessions_of(&paths)?)
    };
    read().unwrap_or_else(|e| {
        tracing::warn!(error = %message(&e), "reading the run store's acts for the replay");
        Vec::new()
    })
}

/// What gives, at each call, the act records the run store keeps on the sessions of `inputs` that
/// are not in `given` nor given before: the acts done since a followed replay began (issue 23).
pub fn acts_since(opts: &StoreOpts, inputs: &[Input], given: &[u8]) -> Box<dyn FnMut() -> Vec<u8> + Send> {
    let (opts, inputs) = (opts.clone(), inputs.to_vec());
    let mut seen: HashSet<Vec<u8>> =
        given.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect();
    Box::new(move || {
        let mut out = Vec::new();
        for line in acts_on_files(&opts, &inputs).split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if seen.insert(line.to_vec()) {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        out
    })
}

/// How often a followed replay looks in the run store for acts done since.
const ACTS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Looks for acts done since with `since` every [`ACTS_EVERY`], on a thread of its own, and sends
/// them on as followed changes until the replay is gone.
pub fn follow_acts(
    mut since: Box<dyn FnMut() -> Vec<u8> + Send>,
    tx: mpsc::Sender<crate::source::live::Event>,
) -> std::io::Result<()> {
    use crate::source::live::{Change, Event};
    std::thread::Builder::new().name("acts".to_owned()).spawn(move || {
        loop {
            std::thread::sleep(ACTS_EVERY);
            if tx.is_closed() {
                return;
            }
            let records = since();
            if !records.is_empty() && tx.blocking_send(Event::Followed(Change::Acts { records })).is_err() {
                return;
            }
        }
    })?;
    Ok(())
}

fn act(a: &ActRow, tz: &TimeZone) -> PastAct {
    PastAct {
        at: super::report::minute(a.at_ms, tz),
        kind: sanitize_line(&a.kind),
        target: sanitize_line(&a.target),
        by: sanitize_line(&a.by),
        via: sanitize_line(&a.via),
        detail: sanitize_line(&a.detail),
        outcome: sanitize_line(&a.outcome),
    }
}

fn run(store: &Store, session: &str, r: &RunInfo, names: &HashMap<&str, &Clean>) -> Result<PastRun> {
    let entries = store
        .backend()
        .items(session, r.thread.as_str())?
        .into_iter()
        .map(|i| PastItem {
            id: sanitize_line(&i.id),
            kind: sanitize_line(&i.kind),
            status: ItemStatus::of(i.status).unwrap_or(ItemStatus::Completed),
            title: sanitize_line(&i.title),
            text: sanitize(&i.text),
            turn: i.turn,
            tool: i.tool.as_deref().map(sanitize_line),
            op: i.op,
            exit_code: i.exit_code,
            // Only the session's runs: the live lane names only threads it knows.
            receivers: i.receivers.iter().filter_map(|t| names.get(t.as_str()).map(|&n| n.clone())).collect(),
            why: i.why.as_deref().map(sanitize),
        })
        .collect();
    Ok(PastRun {
        thread: r.thread.clone(),
        depth: r.depth,
        name: r.name.clone(),
        agent_type: r.agent_type.clone(),
        brief: r.brief.clone(),
        model: r.model.clone(),
        status: r.status.clone(),
        child: r.role.as_str() != "root",
        elapsed_ms: r.started_ms.zip(r.ended_ms).map(|(a, b)| b.saturating_sub(a)),
        turns: r.turns,
        tool_calls: r.tool_calls,
        tokens: r.figures.tokens,
        cost: r.figures.cost_usd(),
        answer: r.answer.clone(),
        files_changed: r.files_changed.clone(),
        entries,
    })
}
