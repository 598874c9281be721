//! `ps`'s rows: each session the census lists, read through its own pipeline exactly as `stats`
//! reads it, one row per root session.

use std::path::PathBuf;

use super::ingest::{ingest_until, nothing};
use crate::model::prices::Pico;
use crate::pipeline::{Config, Pipeline};
use crate::router::ThreadIdx;
use crate::source::agents;
use crate::source::census::Options;
use crate::source::census::list::{self, Listed, Read};
use crate::source::files;
use crate::source::merge::{Clock, Order};
use crate::source::proc::Usage;
use crate::source::regular;
use crate::source::seen::{State, Trouble};
use crate::wire::{self, Origin};
use crate::wire::{Clean, sanitize, sanitize_line};

/// One root session, with the figures `stats` gives for its subtree.
#[derive(Debug, Clone)]
pub struct Row {
    /// The agent's name (for a tee whose stream says nothing of it yet: the command it runs).
    pub tool: Clean,
    pub id: Clean,
    /// What the machine view calls the session: its first prompt, else its project's folder.
    pub name: Clean,
    /// The working directory, as it really is (text output shows it on one line).
    pub project: Option<String>,
    /// The session's file or the tee's socket, as it really is.
    pub source: String,
    pub state: State,
    pub last_activity_ms: Option<i64>,
    pub pid: Option<u32>,
    pub usage: Option<Usage>,
    /// Threads in the tree, the root included.
    pub agents: u32,
    pub tokens: u64,
    pub cost: Option<Pico>,
    /// Files of the session that could not be read, each with why (the figures are the rest's).
    pub unreadable: Vec<Clean>,
}

/// What was looked at, for the screen that found nothing.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub tee_dir: PathBuf,
    pub trouble: Trouble,
    /// Tees whose history could not be read whole (timeout, size, broken connection).
    pub partial_tees: usize,
    /// Sessions the window left out: what `--all` would add.
    pub older: usize,
}

/// Routes whole records (as a live source delivers them) the way `stats` splits a file.
pub fn feed(pipeline: &mut Pipeline, bytes: &[u8]) {
    feed_until(pipeline, bytes, None);
}

/// [`feed`] up to the first record after stream time `until`.
fn feed_until(pipeline: &mut Pipeline, bytes: &[u8], until: Option<i64>) {
    let nothing = &mut nothing();
    let mut clock = Clock::new(1, Order::Time);
    let mut past = false;
    let _ = files::read_records(bytes, files::MAX_LINE, |record| {
        if let (Some(until), files::Record::Line(line)) = (until, record) {
            past = past || clock.offer(0, wire::stream_time(line)) > until;
            clock.pop();
        }
        if !past {
            pipeline.feed(record, &Origin::NONE, nothing);
        }
    });
}

/// Every session the census lists, newest activity first; with `until`, each as of that stream
/// time (one that had not started then has no row).
pub fn collect(opts: &Options, config: &Config, until: Option<i64>) -> Report {
    let listing = list::list(opts);
    let mut report = Report {
        looked_in: listing.looked_in,
        tee_dir: listing.tee_dir,
        trouble: listing.trouble,
        partial_tees: listing.partial_tees,
        older: listing.older,
        rows: Vec::new(),
    };
    for listed in listing.sessions {
        let (pipeline, unreadable) = read(&listed.read, config, until, &mut report.trouble);
        report.rows.extend(rows(&listed, &pipeline, &unreadable, until.is_some()));
    }
    report
        .rows
        .sort_by(|a, b| b.last_activity_ms.cmp(&a.last_activity_ms).then_with(|| a.id.as_str().cmp(b.id.as_str())));
    report
}

/// A session through its own pipeline, ended as `stats` ends it, with the files it could not read.
fn read(what: &Read, config: &Config, until: Option<i64>, trouble: &mut Trouble) -> (Pipeline, Vec<Clean>) {
    match what {
        Read::Records(records) => {
            let mut pipeline = Pipeline::new(config.clone());
            feed_until(&mut pipeline, records, until);
            if until.is_none() {
                pipeline.finish();
            }
            (pipeline, Vec::new())
        }
        Read::Files(paths) => {
            // One file that cannot be read does not hide the session: the rest is read.
            let mut unreadable = Vec::new();
            let readable: Vec<PathBuf> = paths
                .iter()
                .filter(|p| match regular::open(p) {
                    Ok(_) => true,
                    Err(e) => {
                        let why = format!("{}: {e}", p.display());
                        trouble.unreadable(&why);
                        unreadable.push(sanitize_line(&why));
                        false
                    }
                })
                .cloned()
                .collect();
            let read = ingest_until(&readable, config.clone(), until, &mut nothing())
                .and_then(|(pipeline, error)| error.map_or(Ok(pipeline), Err));
            let pipeline = read.unwrap_or_else(|e| {
                let why = format!("{e:#}");
                trouble.unreadable(&why);
                unreadable.push(sanitize_line(&why));
                Pipeline::new(config.clone())
            });
            (pipeline, unreadable)
        }
    }
}

/// One row per root of the pipeline.
fn rows(listed: &Listed, pipeline: &Pipeline, unreadable: &[Clean], until: bool) -> Vec<Row> {
    // A tee's agent is what its stream speaks.
    let agent = listed.agent.or_else(|| agents::of_format(pipeline.format()));
    let tool = agent.map_or_else(|| listed.command.as_deref().unwrap_or(agents::tee::AGENT.name), |a| a.name);
    // As of a moment, the last activity is the last the stream showed by then.
    let last = if until { pipeline.model.stream_ms } else { listed.last_activity_ms.or(pipeline.model.stream_ms) };
    pipeline.model.sessions.iter().map(|&root| row(pipeline, root, tool, listed, last, unreadable)).collect()
}

fn row(
    pipeline: &Pipeline,
    root: ThreadIdx,
    tool: &str,
    listed: &Listed,
    last: Option<i64>,
    unreadable: &[Clean],
) -> Row {
    let t = pipeline.model.thread(root);
    let spent = pipeline.model.spent(root);
    let project = listed.project.as_deref();
    let folder = project.and_then(|p| p.trim_end_matches('/').rsplit('/').next()).filter(|f| !f.is_empty());
    Row {
        tool: sanitize_line(tool),
        id: sanitize_line(&t.id),
        name: sanitize(&crate::ui::label::session(&pipeline.model, root, folder)),
        project: listed.project.clone(),
        source: listed.source.to_string_lossy().into_owned(),
        state: listed.state,
        last_activity_ms: last.or(t.last_ms),
        pid: listed.pid,
        usage: listed.usage,
        agents: spent.threads,
        tokens: spent.tokens.total,
        cost: spent.cost_usd(),
        unreadable: unreadable.to_vec(),
    }
}
