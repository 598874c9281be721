//! Sync: bring the store up to date with every session the places hold.
//!
//! A source (one session's files) is read again only when its files changed: each file is known
//! by device, inode, size, modification time and a digest of its first bytes, so an unchanged
//! source costs a `stat` and one small read per file, and a grown, truncated, rotated or
//! rewritten file is noticed. A changed source is read **whole**, through the same pipeline as
//! `stats`, and replaces its rows in one transaction. Whole, not from its last offset: a
//! session's state (pending children, responses merged across lines, who registered whom) lives
//! in the router and the model, which are rebuilt from the start of the session's files far more
//! cheaply than they could be saved and restored; and a store equal to a clean sync follows by
//! construction. What is read again is bounded by the sessions that changed, not by the history.
//!
//! A source that lost files (an agent's clean-up deleted them) is not read again: what the store
//! holds of it is more than what is left. A source found nowhere any more keeps its rows.
//!
//! One sync at a time per store (a lock the kernel releases if the process dies); a sync killed
//! midway leaves every source it wrote whole and the one it was writing untouched, and the next
//! one picks up from there.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use color_eyre::eyre::Result;

use super::Store;
use super::capture::{self, Rendered};
use super::ledger::Ledger;
use super::places::{self, Found};
use super::rows::{FileState, Source};
use crate::model::Model;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Sink, ThreadIdx};
use crate::source::discover::{Env, Window};

/// What the store needs from the layers that read and show sessions: the pipeline as `stats`
/// runs it, and `stats --json`, `tree` and names as they print them. The commands provide it, so
/// that what the store keeps is what those commands say.
pub trait Reader {
    /// The configuration sessions are read with (prices, bounds).
    fn config(&self) -> &Config;
    /// `files`, in order, as one stream through a new pipeline, every event shown to `also`; the
    /// pipeline of what was read, and why it stopped early if it did.
    fn read(&self, files: &[PathBuf], also: &mut dyn Sink) -> Result<(Pipeline, Option<color_eyre::Report>)>;
    /// A thread's name as `tree` prints it.
    fn label(&self, model: &Model, idx: ThreadIdx) -> String;
    /// `stats --json` of a pipeline.
    fn stats_json(&self, pipeline: &Pipeline) -> String;
    /// `tree` of a model.
    fn tree(&self, model: &Model) -> String;
    /// Who reads: the swarmtop version and price table. A source read by another reader is read
    /// again (its figures may differ).
    fn fingerprint(&self) -> String;
}

/// How a sync looks.
pub struct Options<'a> {
    /// The environment that says where the places are.
    pub env: Env,
    /// Look at every session, not only those changed since the last sync looked.
    pub full: bool,
    /// Wait for another sync of the same store to end (else leave the store as it is).
    pub wait: bool,
    /// Told as sources are read.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
}

/// How far a sync is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub sources_done: usize,
    pub sources: usize,
    pub bytes_done: u64,
    pub bytes: u64,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    /// Another sync held the store; nothing was done.
    pub busy: bool,
    pub found: usize,
    pub unchanged: usize,
    pub read: usize,
    /// Sources that lost files, kept as they were stored.
    pub kept: usize,
    pub bytes_read: u64,
    pub sessions: usize,
    pub runs: usize,
    /// Sessions another source already held.
    pub duplicates: usize,
    /// Sources that could not be read, and why.
    pub failed: Vec<String>,
}

/// Meta key: wall clock (unix ms) when the last sync that finished began listing.
const SCANNED: &str = "scanned_ms";
/// Meta key: the reader of the last full look.
const READER: &str = "reader";
/// A file changed this long before the last look began is looked at again (coarse clocks).
const SLACK_MS: i64 = 60_000;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok()).unwrap_or(0)
}

/// Brings `store` up to date.
pub fn sync(store: &mut Store, reader: &dyn Reader, mut opts: Options<'_>) -> Result<Synced> {
    let Some(_lock) = store.backend().lock(opts.wait)? else {
        return Ok(Synced { busy: true, ..Synced::default() });
    };
    let began = now_ms();
    let fingerprint = reader.fingerprint();
    let backend = store.backend_mut();
    // Since the last look, unless this swarmtop or its prices differ from the last full look's.
    let last = backend.meta(SCANNED)?.and_then(|s| s.parse::<i64>().ok());
    let same_reader = backend.meta(READER)?.as_deref() == Some(fingerprint.as_str());
    let window = match last {
        Some(ms) if !opts.full && same_reader => Window { since: Some(at(ms.saturating_sub(SLACK_MS))) },
        _ => Window::all(),
    };
    let found = places::scan(&opts.env, &window);
    let mut synced = Synced { found: found.len(), ..Synced::default() };
    let mut todo: Vec<(Found, Vec<FileState>)> = Vec::new();
    for f in found {
        let Some(states) = f.states() else {
            synced.failed.push(format!("{}: a file could not be read", f.key));
            continue;
        };
        let Some(k) = backend.known(&f.key)? else {
            todo.push((f, states));
            continue;
        };
        let lost: Vec<PathBuf> = k
            .files
            .iter()
            .filter(|old| !states.iter().any(|s| s.path == old.path) && !old.path.exists())
            .map(|old| old.path.clone())
            .collect();
        if !lost.is_empty() {
            backend.mark_missing(&f.key, &lost)?;
            synced.kept += 1;
        } else if same_files(&k.files, &states) && (k.fingerprint == fingerprint || k.pruned) {
            synced.unchanged += 1;
        } else {
            todo.push((f, states));
        }
    }
    let bytes: u64 = todo.iter().flat_map(|(_, s)| s.iter().map(|f| f.size)).sum();
    let mut progress = Progress { sources_done: 0, sources: todo.len(), bytes_done: 0, bytes };
    for (f, states) in todo {
        let size: u64 = states.iter().map(|s| s.size).sum();
        match read(&f, states, reader, &fingerprint, began) {
            Ok(rows) => {
                let written = store.backend_mut().write(&rows)?;
                synced.read += 1;
                synced.bytes_read += size;
                synced.sessions += written.sessions;
                synced.runs += written.runs;
                synced.duplicates += written.duplicates;
            }
            Err(e) => synced.failed.push(format!("{}: {e:#}", f.key)),
        }
        progress.sources_done += 1;
        progress.bytes_done += size;
        if let Some(p) = opts.progress.as_mut() {
            p(progress);
        }
    }
    if synced.read > 0 {
        store.backend_mut().settle()?;
    }
    // The next look starts from this one's start, unless something could not be read (it is
    // looked for again next time, however old).
    if synced.failed.is_empty() {
        let backend = store.backend_mut();
        backend.set_meta(SCANNED, &began.to_string())?;
        if window.since.is_none() {
            backend.set_meta(READER, &fingerprint)?;
        }
    }
    Ok(synced)
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The same files in the same state (in any order).
fn same_files(a: &[FileState], b: &[FileState]) -> bool {
    fn sorted(v: &[FileState]) -> Vec<&FileState> {
        let mut v: Vec<&FileState> = v.iter().collect();
        v.sort_by(|x, y| x.path.cmp(&y.path));
        v
    }
    a.len() == b.len() && sorted(a) == sorted(b)
}

/// One source through the pipeline, as rows.
fn read(
    f: &Found,
    files: Vec<FileState>,
    reader: &dyn Reader,
    fingerprint: &str,
    synced_ms: i64,
) -> Result<super::rows::SourceRows> {
    let mut ledger = Ledger::default();
    let (pipeline, error) = match f.rows() {
        Some(snapshot) => (within(&snapshot?.records, reader.config(), &mut ledger), None),
        None => reader.read(&f.files, &mut ledger)?,
    };
    let source = Source {
        place: f.place.to_owned(),
        key: f.key.clone(),
        agent: f.agent.map_or_else(|| places::agent_of(pipeline.format()).to_owned(), str::to_owned),
        project: f.project.clone(),
        files,
        fingerprint: fingerprint.to_owned(),
    };
    let label = |m: &Model, i: ThreadIdx| reader.label(m, i);
    let rendered = Rendered {
        label: &label,
        stats_json: reader.stats_json(&pipeline),
        tree_text: reader.tree(&pipeline.model),
        error: error.map(|e| format!("{e:#}")),
    };
    Ok(capture::rows(source, synced_ms, &pipeline, &ledger, &reader.config().prices, rendered))
}

/// The records of a session within a store, as `stats` routes them.
fn within(records: &[u8], config: &Config, ledger: &mut Ledger) -> Pipeline {
    use crate::source::files::{MAX_LINE, read_records};
    let mut pipeline = Pipeline::new(config.clone());
    let origin = crate::wire::Origin::NONE;
    // Records in memory: reading them cannot fail.
    let _ = read_records(records, MAX_LINE, |r| pipeline.feed(r, &origin, ledger));
    pipeline.finish_with(ledger);
    pipeline
}
