//! Sync: bring the store up to date with every session the places hold.
//!
//! A source (one session's files) is read again only when its files changed: each file is known
//! by device, inode, size, modification time and a digest of its first bytes, so an unchanged
//! source costs a `stat` and one small read per file, and a grown, truncated, rotated or
//! rewritten file is noticed. A changed source is read **whole**, through the same pipeline as
//! `stats`, and its rows take the stored ones' place in one transaction (only those that changed
//! are written). Whole, not from its last offset: a
//! session's state (pending children, responses merged across lines, who registered whom) lives
//! in the router and the model, which are rebuilt from the start of the session's files far more
//! cheaply than they could be saved and restored; and a store equal to a clean sync follows by
//! construction. What is read again is bounded by the sessions that changed, not by the history.
//! A syncer that runs on (the daemon) keeps what it read of a growing session and reads only the
//! bytes after it ([`Carry`], [`Options::carry`]): the same state, not rebuilt each sync.
//!
//! A source that lost files (an agent's clean-up deleted them) is not read again: what the store
//! holds of it is more than what is left. A source found nowhere any more keeps its rows, and its
//! files are marked gone once they are ([`vanished`]: a folder or a whole place deleted).
//!
//! One sync at a time per store (a lock the kernel releases if the process dies); a sync killed
//! midway leaves every source it wrote whole and the one it was writing untouched, and the next
//! one picks up from there.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use color_eyre::eyre::Result;

use super::Store;
use super::capture::{self, Rendered};
use super::carry::{self, Carry};
use super::ledger::Ledger;
use super::places::{self, Found, Stated};
use super::rows::{FileState, Source, SourceRows};
use crate::model::Model;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Sink, ThreadIdx};
use crate::source::agents::{Env, Window};

/// What the store needs from the layers that read and show sessions: the pipeline as `stats`
/// runs it, and `stats --json`, `tree` and names as they print them. The commands provide it, so
/// that what the store keeps is what those commands say.
pub trait Reader: Sync {
    /// The configuration sessions are read with (prices, bounds).
    fn config(&self) -> &Config;
    /// `files`, in order, as one stream through a new pipeline, every event shown to `also`; the
    /// pipeline of what was read, and why it stopped early if it did. `every_core`: it may decode
    /// on every core (else on this thread only: other sources are read beside it).
    fn read(
        &self,
        files: &[PathBuf],
        also: &mut dyn Sink,
        every_core: bool,
    ) -> Result<(Pipeline, Option<color_eyre::Report>)>;
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
    /// What a syncer that runs on keeps of growing sessions between its syncs ([`Carry`]): given,
    /// such a session is read from where the last sync stopped.
    pub carry: Option<&'a mut Carry>,
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
    /// Sources read on from where the last sync stopped ([`Options::carry`]).
    pub continued: u64,
    /// Rows of sessions, runs, usage and items written ([`super::Written::rows`]).
    pub rows: u64,
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
    let since = match last {
        Some(ms) if !opts.full && same_reader => Some(ms.saturating_sub(SLACK_MS)),
        _ => None,
    };
    let window = Window { since: since.map(at) };
    let found = places::scan(&opts.env, &window);
    let mut synced = Synced { found: found.len(), ..Synced::default() };
    let listed: HashSet<String> = found.iter().map(|f| f.key.clone()).collect();
    let (todo, stored) = plan(backend, found, &fingerprint, &mut synced)?;
    vanished(backend, &listed, since, &mut synced)?;
    let bytes: u64 = todo.iter().flat_map(|(_, s)| s.iter().map(|f| f.size)).sum();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut writer = Writer {
        readers: cores,
        store,
        batch: Vec::new(),
        batch_bytes: 0,
        synced: &mut synced,
        progress: Progress { sources_done: 0, sources: todo.len(), bytes_done: 0, bytes },
        tell: opts.progress.take(),
    };
    // Sessions of the agents' own places are each their own (no root is in two of them): read on
    // every core, in any order. Recordings can hold a session a place also holds (a tee's of a
    // Codex session): read after them, in order, so that which source keeps it does not depend
    // on which read finished first.
    let (recordings, places): (Vec<_>, Vec<_>) = todo.into_iter().partition(|(f, _)| f.place == places::RECORDING);
    let places = match opts.carry.as_deref_mut() {
        Some(carry) => {
            carry.begin();
            let before = carry.continued();
            let (own, rest) = carry.take(places, &stored, began);
            for (f, states) in own {
                let size = states.iter().map(|s| s.size).sum();
                let (fed, went_on) = (carry.fed(), carry.continued());
                let rows = carried(carry, &f, &states, reader, &fingerprint, began);
                // A source the carry read counts the bytes it read, not its size: what a sync
                // costs (`serve`'s `lastSync`).
                let by_carry = carry.fed() > fed || carry.continued() > went_on;
                let read = if by_carry { carry.fed() - fed } else { size };
                let stored = rows.is_ok();
                writer.take(&f, size, rows)?;
                if stored {
                    writer.synced.bytes_read = writer.synced.bytes_read - size + read;
                }
            }
            writer.synced.continued = carry.continued() - before;
            rest
        }
        None => places,
    };
    read_all(&places, cores, reader, &fingerprint, began, &mut |f, size, rows| writer.take(f, size, rows))?;
    read_all(&recordings, 1, reader, &fingerprint, began, &mut |f, size, rows| writer.take(f, size, rows))?;
    writer.flush()?;
    if let Some(carry) = opts.carry {
        carry.end();
    }
    // The next look starts from this one's start, unless something could not be read (it is
    // looked for again next time, however old). Nothing read, nothing to write: the last look
    // still stands (and a query that changed nothing writes nothing).
    if synced.failed.is_empty() && (synced.read > 0 || window.since.is_none()) {
        let backend = store.backend_mut();
        backend.set_meta(SCANNED, &began.to_string())?;
        if window.since.is_none() && !same_reader {
            backend.set_meta(READER, &fingerprint)?;
        }
    }
    // After the last write: the log is folded in once. Written after it, the look's time stayed
    // in the log, and closing the store folded it in again (two more syncs of the log and the
    // store to disk at the end of a first `report`, strace: some 30 ms of its wall time).
    store.backend_mut().settle(synced.read > 0)?;
    Ok(synced)
}

/// The sources found whose files changed since they were stored (with their files' state now),
/// and which of them were stored before.
fn plan(
    backend: &mut dyn super::Backend,
    found: Vec<Found>,
    fingerprint: &str,
    synced: &mut Synced,
) -> Result<(Stated, HashSet<String>)> {
    let mut todo = Vec::new();
    let mut stored = HashSet::new();
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
            stored.insert(f.key.clone());
            todo.push((f, states));
        }
    }
    Ok((todo, stored))
}

/// Marks the files of the stored sources the places no longer list that are gone (a folder, a
/// place or a store deleted whole: nothing lists its sessions any more, so [`plan`] never meets
/// them). Their rows stay. Only folders changed since `since` (unix ms) are looked into: deleting a
/// file changes its folder's modification time, so an unchanged history costs one `stat` per
/// folder, not per file; `None` (a full look) looks at every file.
fn vanished(
    backend: &mut dyn super::Backend,
    listed: &HashSet<String>,
    since: Option<i64>,
    synced: &mut Synced,
) -> Result<()> {
    // Each folder once first: in an unchanged history that is all there is to look at.
    let mut changed: HashMap<PathBuf, bool> = HashMap::new();
    for folder in backend.folders()? {
        if folder.as_os_str().is_empty() {
            continue;
        }
        match std::fs::metadata(&folder) {
            Err(e) if gone(&e) => changed.insert(folder, true),
            Err(_) => None,
            // A session within a store file (`store/root`, OpenCode's database): it is there as
            // long as the store is (what the store holds is its listing's to say).
            Ok(meta) if meta.is_file() => None,
            Ok(meta) if since.is_some_and(|since| modified_ms(&meta) < since) => None,
            Ok(_) => changed.insert(folder, false),
        };
    }
    if changed.is_empty() {
        return Ok(());
    }
    let mut lost: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for (key, path) in backend.present()? {
        // `Path` equality is by components: `a/b/` (as the store names folders) is `a/b`.
        let Some(&folder_gone) = path.parent().and_then(|f| changed.get(f)) else { continue };
        if !listed.contains(&key) && (folder_gone || std::fs::metadata(&path).is_err_and(|e| gone(&e))) {
            lost.entry(key).or_default().push(path);
        }
    }
    for (key, paths) in lost {
        backend.mark_missing(&key, &paths)?;
        synced.kept += 1;
    }
    Ok(())
}

/// Whether an error looking at a path says it is not there (not that it could not be looked at).
fn gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

fn modified_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(i64::MAX, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Sources read whose rows wait for their transaction.
const BATCH_SOURCES: usize = 16;
/// Bytes of text in rows waiting for their transaction (a bound on what a sync holds).
const BATCH_BYTES: usize = 16 << 20;

/// Writes sources as they are read, several to a transaction: a transaction rewrites every page
/// of the text index it touches, and one per source rewrote most of it for each.
struct Writer<'a, 'p> {
    store: &'a mut Store,
    /// Sources read at once.
    readers: usize,
    batch: Vec<SourceRows>,
    batch_bytes: usize,
    synced: &'a mut Synced,
    progress: Progress,
    tell: Option<&'p mut dyn FnMut(Progress)>,
}

impl Writer<'_, '_> {
    fn take(&mut self, f: &Found, size: u64, rows: Result<SourceRows>) -> Result<()> {
        match rows {
            Ok(rows) => {
                self.batch_bytes += rows.weight();
                self.batch.push(rows);
                self.synced.bytes_read += size;
                // Once what is left is only what the readers hold, the batch waits for nothing
                // more that is coming soon: written while they finish their last, not after (a
                // first sync's last batch was written with the readers done and a core idle).
                let last = self.progress.sources - self.progress.sources_done == self.readers + 1;
                if self.batch.len() >= BATCH_SOURCES || self.batch_bytes >= BATCH_BYTES || last {
                    self.flush()?;
                }
            }
            Err(e) => self.synced.failed.push(format!("{}: {e:#}", f.key)),
        }
        self.progress.sources_done += 1;
        self.progress.bytes_done += size;
        if let Some(tell) = self.tell.as_mut() {
            tell(self.progress);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let written = self.store.backend_mut().write(&self.batch)?;
        self.synced.read += self.batch.len();
        self.synced.sessions += written.sessions;
        self.synced.runs += written.runs;
        self.synced.rows += written.rows;
        self.synced.duplicates += written.duplicates;
        self.batch.clear();
        self.batch_bytes = 0;
        Ok(())
    }
}

/// What is done with each source read: its rows (or why it could not be read), and its size.
type Take<'a> = dyn FnMut(&Found, u64, Result<SourceRows>) -> Result<()> + 'a;

/// Reads `todo` on `workers` threads, each source through a pipeline of its own on one core,
/// handing each one's rows to `take` on this thread as it is read.
fn read_all(
    todo: &[(Found, Vec<FileState>)],
    workers: usize,
    reader: &dyn Reader,
    fingerprint: &str,
    began: i64,
    take: &mut Take<'_>,
) -> Result<()> {
    if todo.is_empty() {
        // Nothing changed: no reader is started (under load, a thread started and waited for was
        // the longest wait of a repeated `report`).
        return Ok(());
    }
    let workers = workers.clamp(1, todo.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        // Bounded: a worker waits while its rows wait to be written (memory stays flat). Room for
        // a batch's sources: while this thread writes a batch, the workers go on reading the next
        // one (with room for one each, they stood idle through every write: a core of two idle for
        // a fifth of a first sync, in perf's timeline of `report daily` on an empty store).
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Result<SourceRows>)>(workers.max(BATCH_SOURCES));
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((f, states)) = todo.get(i) else { break };
                    let rows = read(f, states.clone(), reader, fingerprint, began, workers == 1);
                    if tx.send((i, rows)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, rows) in rx {
            let (f, states) = &todo[i];
            let size = states.iter().map(|s| s.size).sum();
            if let Err(e) = take(f, size, rows) {
                // Stops the workers at their next source.
                next.store(todo.len(), std::sync::atomic::Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
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

/// One source through the pipeline, as rows; `alone`: the only one being read (it may use every
/// core).
fn read(
    f: &Found,
    files: Vec<FileState>,
    reader: &dyn Reader,
    fingerprint: &str,
    synced_ms: i64,
    alone: bool,
) -> Result<SourceRows> {
    let mut ledger = Ledger::default();
    let (pipeline, error) = match f.rows() {
        Some(records) => (within(&records?, reader.config(), &mut ledger), None),
        None => reader.read(&f.files, &mut ledger, alone)?,
    };
    let at = At { reader, fingerprint, synced_ms };
    Ok(rows_of(f, files, &at, &pipeline, &ledger, error.map(|e| format!("{e:#}"))))
}

/// Who reads, and when.
struct At<'a> {
    reader: &'a dyn Reader,
    fingerprint: &'a str,
    synced_ms: i64,
}

/// A source kept by a syncer that runs on ([`Carry`]) read from where it was left; whole, as any
/// source, when it cannot be.
fn carried(
    carry: &mut Carry,
    f: &Found,
    states: &[FileState],
    reader: &dyn Reader,
    fingerprint: &str,
    synced_ms: i64,
) -> Result<SourceRows> {
    let at = At { reader, fingerprint, synced_ms };
    let rows = |r: carry::Read<'_>| rows_of(f, states.to_vec(), &at, r.pipeline, r.ledger, None);
    match states {
        [now] => carry.read(f, now, fingerprint, reader.config(), rows),
        _ => None,
    }
    .map_or_else(|| read(f, states.to_vec(), reader, fingerprint, synced_ms, true), Ok)
}

/// A source's rows, from the pipeline and ledger that read its `files`.
fn rows_of(
    f: &Found,
    files: Vec<FileState>,
    at: &At<'_>,
    pipeline: &Pipeline,
    ledger: &Ledger,
    error: Option<String>,
) -> SourceRows {
    let (reader, fingerprint, synced_ms) = (at.reader, at.fingerprint, at.synced_ms);
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
        stats_json: reader.stats_json(pipeline),
        tree_text: reader.tree(&pipeline.model),
        error,
    };
    capture::rows(source, synced_ms, pipeline, ledger, &reader.config().prices, rendered)
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
