//! Following a store: its `event` log from a position on, polled through `PRAGMA data_version` so
//! an unchanged store costs one pragma, never a re-read; and `follow`, the store then its log,
//! telling when the writer seen running is gone.
//!
//! A row that cannot be read is counted and skipped ([`super::cells`]): one `event` row with a
//! TEXT `seq` ended following for good, with no reason shown, and every later event was lost
//! (issue 22 item 8). A read that fails is told (a notice) and tried again.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::json;

use super::cells::Tally;
use super::channel::{ChannelReader, channel};
use super::pages::{PAGE_ROWS, PageBounds};
use super::records;
use super::snapshot::Pages;
use super::store::{open, sql_error};
use super::writer::{Writer, writer};
use crate::source::acts::{self, Tail};

/// How often a followed store is asked whether it changed.
pub const POLL: Duration = Duration::from_millis(200);
/// How often a follower looks whether the store's writer still runs (a walk of `/proc`).
const WRITER_LOOK: Duration = Duration::from_secs(1);
/// Roots quiet for longer than this when their writer goes are left alone: they ended long ago.
const DEAD_RECENT_MS: i64 = 10 * 60 * 1000;
/// How long a follower waits after a failed read before it opens the store again.
const RETRY: Duration = Duration::from_secs(2);
/// Bytes of records one poll hands on at most; the rest comes with the next ([`Follower::caught_up`]).
pub const MAX_POLL_BYTES: usize = 16 << 20;

/// Follows a store from an event-log position: each call of [`Follower::poll`] hands on the
/// events written since, as records, a page at a time.
pub struct Follower {
    db: PathBuf,
    conn: Connection,
    cursor: i64,
    version: Option<i64>,
    /// The last poll read everything there was.
    caught_up: bool,
    tally: Tally,
    /// swarmtop's stops logged from now on (`source::acts`): handed on for the store's sessions.
    acts: Tail,
}

impl Follower {
    pub fn new(db: &Path, cursor: i64) -> io::Result<Self> {
        Ok(Self {
            db: db.to_path_buf(),
            conn: open(db)?,
            cursor,
            version: None,
            caught_up: true,
            tally: Tally::default(),
            acts: Tail::from_end(),
        })
    }

    /// [`Follower::new`] that reads the stops logged at `acts` instead (from its end).
    #[cfg(test)]
    pub(super) fn with_acts(db: &Path, cursor: i64, acts: &Path) -> io::Result<Self> {
        Ok(Self { acts: Tail::from_end_of(acts), ..Self::new(db, cursor)? })
    }

    /// Whether the last [`Follower::poll`] read all there was; if not, the next poll reads on at
    /// once, store changed or not.
    pub fn caught_up(&self) -> bool {
        self.caught_up
    }

    /// The root sessions updated at or after `since_ms`.
    fn recent_roots(&mut self, since_ms: i64) -> io::Result<Vec<String>> {
        let db = &self.db;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        let mut st = self
            .conn
            .prepare_cached("SELECT id FROM session WHERE parent_id IS NULL AND time_updated >= ?1")
            .map_err(err)?;
        let mut rows = st.query([since_ms]).map_err(err)?;
        let mut roots = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            roots.extend(self.tally.text(r, 0, "session.id"));
        }
        Ok(roots)
    }

    /// New events since the last call, as records, [`MAX_POLL_BYTES`] of them at most (see
    /// [`Follower::caught_up`]); nothing when the store has not changed.
    pub fn poll(&mut self) -> io::Result<Vec<u8>> {
        let db = &self.db;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        // Changes only when another connection commits: an idle store costs this one pragma.
        let version: i64 = self.conn.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(err)?;
        // A stop is logged after the abort the store shows: looked for on every poll.
        let acts = self.acts.poll();
        if self.caught_up && self.version == Some(version) && acts.is_empty() {
            return Ok(Vec::new());
        }
        self.version = Some(version);
        let mut out = Vec::new();
        loop {
            let rows = self.page(&mut out).map_err(|e| sql_error(&self.db, &e))?;
            self.caught_up = rows < PAGE_ROWS;
            if self.caught_up || out.len() >= MAX_POLL_BYTES {
                break;
            }
        }
        if !acts.is_empty() {
            let known = super::snapshot::stored(&self.conn, &acts, None).map_err(|e| sql_error(&self.db, &e))?;
            out.extend_from_slice(&acts::records(&acts, |a| known.contains(&a.target)));
        }
        if let Some(message) = self.tally.take_notice() {
            records::notice(&mut out, "store", &message);
        }
        Ok(out)
    }

    /// One page of the log after the cursor, as records; how many rows it read.
    fn page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<usize> {
        let limit = i64::try_from(PAGE_ROWS).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare_cached("SELECT rowid, seq, type, data FROM event WHERE rowid > ?1 ORDER BY rowid LIMIT ?2")?;
        let mut rows = st.query([self.cursor, limit])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            n += 1;
            // A rowid is always an integer.
            self.cursor = r.get(0)?;
            let seq = self.tally.int(r, 1, "event.seq");
            let kind = self.tally.text(r, 2, "event.type");
            match self.tally.json(r, 3, "event.data") {
                Some(data) => records::push(
                    out,
                    &json!({"opencode": "event", "seq": seq, "event": {"type": kind, "properties": data}}),
                ),
                None => self.tally.skip_row("event", "without data"),
            }
        }
        Ok(n)
    }
}

/// What `follow` hands on, and whether its consumer still wants it.
struct Sink<F> {
    each: F,
    /// The last failure told, so that one that lasts is told once.
    told: Option<String>,
}

impl<F: FnMut(Vec<u8>) -> bool> Sink<F> {
    fn send(&mut self, records: Vec<u8>) -> bool {
        records.is_empty() || (self.each)(records)
    }

    fn failed(&mut self, e: &io::Error) -> bool {
        let reason = e.to_string();
        if self.told.as_ref() == Some(&reason) {
            return true;
        }
        let mut out = Vec::new();
        records::notice(&mut out, "follow", &format!("reading the store failed, trying again: {reason}"));
        self.told = Some(reason);
        self.send(out)
    }
}

/// The store, then its events as they are written, into `each` until it returns `false`. When the
/// writer seen running is gone (a SIGKILL of `opencode run` writes nothing, wire.md §9), a `dead`
/// record for every root lately at work: what it left running was killed with it (it stayed
/// running for good in `swarmtop opencode.db`). Fails only when the store cannot be read at first.
pub fn follow(db: &Path, each: impl FnMut(Vec<u8>) -> bool) -> io::Result<()> {
    // Looked for before the store is read and handed on: a writer killed while the snapshot is
    // on its way (its reader saw it running and stopped it) must have been seen alive.
    let mut alive = writer(db) == Writer::Alive;
    let mut sink = Sink { each, told: None };
    let mut pages = Pages::new(db, None, PageBounds::default())?;
    loop {
        let mut page = Vec::new();
        let more = pages.next_page(&mut page)?;
        if !sink.send(page) {
            return Ok(());
        }
        if !more {
            break;
        }
    }
    let mut follower = Follower::new(db, pages.cursor)?;
    drop(pages);
    let mut looked = Instant::now();
    loop {
        match follower.poll() {
            Ok(records) => {
                if !sink.send(records) {
                    return Ok(());
                }
                sink.told = None;
            }
            Err(e) => {
                if !sink.failed(&e) {
                    return Ok(());
                }
                std::thread::sleep(RETRY);
                if let Ok(f) = Follower::new(db, follower.cursor) {
                    follower = f;
                }
                continue;
            }
        }
        if looked.elapsed() >= WRITER_LOOK {
            looked = Instant::now();
            match writer(db) {
                Writer::Alive => alive = true,
                Writer::Dead if alive => {
                    alive = false;
                    let mut out = Vec::new();
                    let since = crate::source::recording::unix_ms().saturating_sub(DEAD_RECENT_MS);
                    match follower.recent_roots(since) {
                        Ok(roots) => roots.iter().for_each(|root| records::dead(&mut out, root)),
                        Err(e) if !sink.failed(&e) => return Ok(()),
                        Err(_) => {}
                    }
                    if !sink.send(out) {
                        return Ok(());
                    }
                }
                Writer::Dead | Writer::Unknown => {}
            }
        }
        if follower.caught_up() {
            std::thread::sleep(POLL);
        }
    }
}

/// Follows the store on a thread of its own; the reader ends when following cannot start (its
/// error is the last line, a notice the pipeline shows) or the reader is dropped.
pub fn follow_reader(db: &Path) -> io::Result<ChannelReader> {
    // Fail now, not on the thread, when the store cannot be opened at all.
    drop(open(db)?);
    let (tx, rx) = channel();
    let db = db.to_path_buf();
    std::thread::Builder::new().name("source-opencode".into()).spawn(move || {
        if let Err(e) = follow(&db, |records| tx.send(records)) {
            let mut out = Vec::new();
            records::notice(&mut out, "follow", &format!("following the store stopped: {e}"));
            tx.send(out);
        }
    })?;
    Ok(rx)
}
