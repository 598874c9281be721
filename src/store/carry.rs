//! What a long-lived syncer (`serve`) keeps of a growing session between its syncs, so that each
//! sync reads only the bytes written since the last one.
//!
//! A sync reads a changed source whole ([`super::sync`]): a session's state lives in the router
//! and the model, and rebuilding it from the start is what makes a store equal to a clean sync by
//! construction. A daemon syncing every few seconds re-read the session being written whole each
//! time: its work and its passing memory grew with the session, and the allocator kept what each
//! sync's peak took (`serve_soak`: the floor of its memory rose 10 to 19 MiB from the middle
//! third of 90 s to the last, one session written at 200 lines a second).
//!
//! Kept here is the pipeline and ledger of such a session *unfinished*, with the state of its
//! file as far as it was read. The next sync feeds them the bytes after that, through the same
//! [`Pipeline::feed`] a whole read routes every record with (the feed on every core gives the
//! router what feeding records one by one gives it, `crate::feed`), so the pipeline is the one a
//! read of the whole file would have built. Ending the input ([`Pipeline::finish_with`]) changes
//! nothing while no thread is pending ([`crate::router::Router::settled`]): the rows are then taken
//! from the unfinished pipeline. When a thread is pending, the pipeline is finished for its rows,
//! as a whole read would, and not kept.
//!
//! Only what goes on exactly where it stopped is continued: one plain file (no gzip, no store
//! within, no sidecar), the same device and inode, at least as long, the same first bytes, and
//! every read ending on a line's end (a line half written is read whole by the next sync). A
//! recording is never continued (recordings are read in order after the places, so that which
//! source keeps a session they share does not depend on timing). Anything else, and any error,
//! falls back to the whole read.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::Path;

use super::identity;
use super::ledger::Ledger;
use super::places::{self, Found, Stated};
use super::rows::FileState;
use crate::pipeline::Pipeline;
use crate::source::files::{self, BOM, Input, MAX_LINE};

/// Sessions kept at most: each holds its model (what the daemon's live view holds of it too).
/// Sessions written to at once on one machine are a handful; the rest are read whole.
pub const MOST: usize = 16;
/// Syncs a kept session may go unread before it is dropped: two, so that a daemon syncing this
/// machine's file and then the team's database keeps what both read.
const IDLE_SYNCS: u64 = 2;
/// A new source written to this recently (ms) is taken as growing: a minute, as a sync's look
/// back for files changed since the last one allows for coarse clocks.
const FRESH_MS: i64 = 60_000;
/// Read buffer of a continued read.
const BUFFER: usize = 64 << 10;

/// The growing sessions kept between syncs, by source key. Empty until a sync is given it.
#[derive(Default)]
pub struct Carry {
    sources: HashMap<String, Carried>,
    /// Syncs given it so far.
    turn: u64,
    /// Reads that went on from where the last one stopped, so far.
    continued: u64,
    /// Bytes its reads fed the pipelines, so far.
    fed: u64,
}

struct Carried {
    /// Who read it (a source read by another reader is read again).
    fingerprint: String,
    /// Its file as far as it was read: `size` is where the next read starts.
    file: FileState,
    pipeline: Pipeline,
    ledger: Ledger,
    /// The sync that last read it.
    turn: u64,
}

/// A source's pipeline and ledger as a read left them, to be made rows of.
pub struct Read<'a> {
    pub pipeline: &'a Pipeline,
    pub ledger: &'a Ledger,
}

impl Carry {
    /// Sessions kept now.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Reads that went on from where the last one stopped, so far.
    pub fn continued(&self) -> u64 {
        self.continued
    }

    /// Bytes its reads fed the pipelines, so far.
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// A new sync begins.
    pub(super) fn begin(&mut self) {
        self.turn += 1;
    }

    /// A sync is over: sessions it and the one before did not read are dropped.
    pub(super) fn end(&mut self) {
        let turn = self.turn;
        self.sources.retain(|_, c| turn - c.turn < IDLE_SYNCS);
    }

    /// Of `todo`, the sources read here: those kept, those stored before (they grow: they
    /// changed since they were stored), and new ones written to within [`FRESH_MS`] of `now_ms`,
    /// up to [`MOST`]; the rest are left in `todo`.
    ///
    /// A new session taken only once stored was read whole twice: by the sync that found it,
    /// and again by the next one, the first to keep it (a daemon started on a store without its
    /// busy session: 0.67 MB read again at the first sync after the start, measured with strace).
    /// Recently written is what tells a growing session from the thousands a first sync stores.
    pub(super) fn take(&self, todo: Stated, stored: &HashSet<String>, now_ms: i64) -> (Stated, Stated) {
        let mut room = MOST;
        let (mut own, mut rest) = (Vec::new(), Vec::new());
        let fresh =
            |states: &[FileState]| states.iter().all(|s| now_ms.saturating_sub(s.mtime_ns / 1_000_000) < FRESH_MS);
        // The kept ones first: they cost least.
        let (kept, others): (Stated, Stated) = todo.into_iter().partition(|(f, _)| self.sources.contains_key(&f.key));
        for (f, states) in kept.into_iter().chain(others) {
            let ours = self.sources.contains_key(&f.key) || stored.contains(&f.key) || fresh(&states);
            if room > 0 && ours && eligible(&f, &states) {
                room -= 1;
                own.push((f, states));
            } else {
                rest.push((f, states));
            }
        }
        (own, rest)
    }

    /// Reads `f` (whose one file is now as `now` says) from where it was left, or whole when it
    /// was not kept or does not go on where it stopped; hands the result to `rows` and keeps it
    /// for the next sync when it can be continued. `None` when it cannot be read so (the caller
    /// reads it whole, as any source).
    pub(super) fn read<R>(
        &mut self,
        f: &Found,
        now: &FileState,
        fingerprint: &str,
        config: &crate::pipeline::Config,
        rows: impl FnOnce(Read<'_>) -> R,
    ) -> Option<R> {
        let file = open(&now.path, now).ok()??;
        let old = self.sources.remove(&f.key).filter(|c| c.fingerprint == fingerprint && goes_on(&file, &c.file, now));
        let went_on = old.is_some();
        let mut c = old.unwrap_or_else(|| Carried {
            fingerprint: fingerprint.to_owned(),
            file: FileState { size: 0, ..now.clone() },
            pipeline: Pipeline::new(config.clone()),
            ledger: Ledger::default(),
            turn: self.turn,
        });
        feed(&file, &now.path, c.file.size, now.size, &mut c.pipeline, &mut c.ledger).ok()?;
        self.fed += now.size - c.file.size;
        c.file = now.clone();
        c.turn = self.turn;
        self.continued += u64::from(went_on);
        if !c.pipeline.router.settled() {
            // What a whole read does at the end; the pipeline is then finished and not kept.
            c.pipeline.finish_with(&mut c.ledger);
            return Some(rows(Read { pipeline: &c.pipeline, ledger: &c.ledger }));
        }
        let out = rows(Read { pipeline: &c.pipeline, ledger: &c.ledger });
        self.sources.insert(f.key.clone(), c);
        Some(out)
    }
}

/// Whether a source is one the carry may read: one plain file of an agent's place.
fn eligible(f: &Found, states: &[FileState]) -> bool {
    f.place != places::RECORDING
        && f.files.len() == 1
        && states.len() == 1
        && f.files[0] == states[0].path
        && !f.within_store()
        && !files::is_sidecar(&f.files[0])
        && f.files[0].is_file()
}

/// The file `now` names, opened, when it is what a continued read can read: the same file, a
/// plain one (neither gzip nor SQLite), its first `now.size` bytes ending on a line's end. `None`
/// when it is not.
fn open(path: &Path, now: &FileState) -> std::io::Result<Option<File>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.dev() != now.dev || meta.ino() != now.ino || meta.size() < now.size || now.size == 0 {
        return Ok(None);
    }
    let mut head = [0u8; 16];
    let n = file.read_at(&mut head, 0)?;
    if !files::is_plain(&head[..n]) {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, now.size - 1)?;
    Ok((last[0] == b'\n').then_some(file))
}

/// Whether `file`, as `now` finds it, goes on from where `was` was read to: the same file, no
/// shorter, its start unchanged, and no byte order mark where the new bytes begin (a reader
/// drops one only at a stream's very start).
fn goes_on(file: &File, was: &FileState, now: &FileState) -> bool {
    if (was.path.as_path(), was.dev, was.ino) != (now.path.as_path(), now.dev, now.ino) || now.size < was.size {
        return false;
    }
    // Both states hold the digest of the same first bytes once the file had them all when it was
    // read: the one of now, read by this sync's look at the file, answers without a read of its own
    // (which read the head of the busy session a second time at every sync).
    let same_start = if was.size >= identity::HEAD_BYTES {
        now.head == was.head
    } else {
        identity::starts_as(file, was.size, &was.head).unwrap_or(false)
    };
    if !same_start {
        return false;
    }
    let mut at = [0u8; 3];
    let n = file.read_at(&mut at, was.size).unwrap_or(0);
    !(n == BOM.len() && at == *BOM)
}

/// Feeds the records of `file`'s bytes `from..to` to `pipeline`, as a whole read routes them.
fn feed(
    mut file: &File,
    path: &Path,
    from: u64,
    to: u64,
    pipeline: &mut Pipeline,
    ledger: &mut Ledger,
) -> std::io::Result<()> {
    if to <= from {
        return Ok(());
    }
    let origin = files::origin(&Input::File(path.to_owned()));
    file.seek(SeekFrom::Start(from))?;
    let reader = BufReader::with_capacity(BUFFER, file.take(to - from));
    files::read_records(reader, MAX_LINE, |r| pipeline.feed(r, &origin, ledger))?;
    Ok(())
}
