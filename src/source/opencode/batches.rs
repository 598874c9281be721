//! The store read a batch of root sessions at a time, each root with everything under it, all in
//! one read transaction: a command that needs each session's figures once and keeps nothing of
//! it after (`stats --json`) holds one batch at a time, not the whole store (issue 22: a model of
//! 100,000 sessions read at once took 302 MiB, one of 10,000 64 MiB).
//!
//! Within a batch the records are those of [`super::snapshot`], in the time they were made; the
//! batches follow one another, oldest root first. A row no root reaches (a session whose parent
//! is missing, a message of no session, a row without an id) is in no batch: [`Batches::read_all`]
//! says so at the end, and the caller then reads the store whole, where such rows are counted.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::cells::Tally;
use super::pages::{Key, PageBounds, PageSql, Query};
use super::snapshot::{Ending, Pages, ROOTS};
use super::store::{open, sql_error};
use super::writer::{Writer, writer};
use crate::source::files::{self, Input};
use crate::source::merge::Inputs;
use crate::wire::Origin;

/// Root sessions a batch holds at most: few enough that a batch's model is small, enough that
/// the queries each batch makes cost little against its rows.
pub const BATCH_ROOTS: usize = 256;
/// Rows a page of a batch holds at most (its bytes are bounded as any page's).
const BATCH_PAGE_ROWS: usize = 4096;

/// A read of the store in batches of root sessions.
pub struct Batches {
    db: PathBuf,
    /// `None` while a batch holds it.
    conn: Option<Connection>,
    roots: PageSql,
    after: Option<Vec<Key>>,
    more: bool,
    per_batch: usize,
    ending: Ending,
    /// Rows in the store when the read began (sessions, messages and parts).
    rows: u64,
    /// Rows the batches read so far.
    seen: u64,
    /// A batch handed on a notice of odd rows (a whole read says it once).
    noticed: bool,
}

/// Roots oldest first (session ids sort newest first, wire.md §9): the batches follow the store's
/// time.
const OLDEST_ROOTS_FIRST: Query<'_> = Query { descending: true, ..ROOTS };

impl Batches {
    /// Begins the read: one read transaction, the store's writer and swarmtop's acts looked at
    /// once for every batch.
    pub fn open(db: &Path, per_batch: usize) -> io::Result<Self> {
        let conn = open(db)?;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        conn.execute_batch("BEGIN").map_err(err)?;
        let rows: i64 = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM session) + (SELECT COUNT(*) FROM message) + (SELECT COUNT(*) FROM part)",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        let ending = Ending {
            writer_dead: Some(writer(db) == Writer::Dead),
            acts: Some(crate::source::acts::read().into()),
            shared_transaction: true,
        };
        Ok(Self {
            db: db.to_path_buf(),
            conn: Some(conn),
            roots: PageSql::new(&OLDEST_ROOTS_FIRST, false),
            after: None,
            more: true,
            per_batch: per_batch.max(1),
            ending,
            rows: rows.unsigned_abs(),
            seen: 0,
            noticed: false,
        })
    }

    /// The next batch's read; `None` once every root has been read.
    fn next_batch(&mut self) -> io::Result<Option<Pages>> {
        let err = |e: rusqlite::Error| sql_error(&self.db, &e);
        let Some(conn) = self.conn.take() else {
            return Err(io::Error::other("a batch of the store is still being read"));
        };
        let mut roots = Vec::new();
        if self.more {
            // An odd id is left out here and counted by the whole read `read_all` then asks for.
            let mut tally = Tally::default();
            let bounds = PageBounds { rows: self.per_batch, bytes: usize::MAX };
            let got = self.roots.page(&conn, (None, bounds), &mut self.after, |r| {
                tally.text(r, 0, "session.id").map_or(0, |id| {
                    roots.push(id);
                    1
                })
            });
            match got {
                Ok(more) => self.more = more,
                Err(e) => {
                    self.conn = Some(conn);
                    return Err(err(e));
                }
            }
        }
        if roots.is_empty() {
            self.more = false;
            self.conn = Some(conn);
            return Ok(None);
        }
        // Every page of a scoped read looks through all of its scope's rows: a batch's rows in as
        // few pages as their bytes allow.
        let bounds = PageBounds { rows: BATCH_PAGE_ROWS, ..PageBounds::default() };
        Pages::on(conn, &self.db, Some(&roots), bounds, self.ending.clone()).map(Some)
    }

    /// A batch read (or given up): its connection back for the next.
    fn done(&mut self, pages: Pages) {
        self.seen = self.seen.saturating_add(pages.rows_seen);
        self.noticed |= pages.noticed;
        self.conn = Some(pages.conn);
    }

    /// Whether the batches read the store as a whole read would: every row (a row no root
    /// reaches is read only by a read of the whole store), and no odd one (a whole read counts
    /// them in one notice, batches in one each).
    pub fn read_all(&self) -> bool {
        !self.more && self.seen == self.rows && !self.noticed
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        // A read-only transaction: ending it can fail only with the connection already gone.
        if let Some(conn) = &self.conn {
            let _ = conn.execute_batch("COMMIT");
        }
    }
}

/// What the reading thread hands on.
enum Piece {
    Records(Vec<u8>),
    /// The batch's records are over.
    End,
    Failed(io::Error),
}

/// Pages of records the reading thread may have read ahead of the stream: what bounds the memory
/// between the two.
const PAGES_AHEAD: usize = 4;

/// The batches read on a thread of their own, a few pages ahead, while the caller's thread
/// decodes and routes the batch before: reading the store (its queries, and its rows made
/// records) is about as much work as the rest. As the one input of a stream ([`Inputs`]), it is
/// the current batch's records.
pub struct ReadAhead {
    name: String,
    origin: Origin,
    pieces: Mutex<Receiver<Piece>>,
    /// A piece of the next batch, taken to learn whether there is one.
    first: Mutex<Option<Piece>>,
    /// The current batch's records are not yet all taken.
    in_batch: Mutex<bool>,
    /// Buffers taken and emptied, for the reading thread to fill again: a buffer freed by a
    /// thread that did not allocate it is the allocator's slow path, and its memory lingered
    /// (`stats` of a store peaked 33-40 MiB so, 21 MiB on one thread).
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    reader: Option<JoinHandle<bool>>,
}

impl ReadAhead {
    /// Begins the read of `db` in batches of `per_batch` root sessions.
    pub fn start(db: &Path, per_batch: usize) -> io::Result<Self> {
        let mut batches = Batches::open(db, per_batch)?;
        let (tx, rx) = sync_channel(PAGES_AHEAD);
        let spare = Arc::new(Mutex::new(Vec::new()));
        let spares = Arc::clone(&spare);
        let reader = std::thread::Builder::new().name("opencode-batches".to_owned()).spawn(move || {
            let read = read_batches(&mut batches, &tx, &spares);
            if let Err(e) = read {
                // The stream gone is no error of the store's.
                let _ = tx.send(Piece::Failed(e));
                return false;
            }
            batches.read_all()
        })?;
        let input = Input::File(db.to_path_buf());
        Ok(Self {
            name: input.name(),
            origin: files::origin(&input),
            pieces: Mutex::new(rx),
            first: Mutex::new(None),
            in_batch: Mutex::new(false),
            spare,
            reader: Some(reader),
        })
    }

    /// Moves on to the next batch (what is left of the one before is passed over); whether there
    /// is one.
    pub fn next_batch(&mut self) -> bool {
        let pieces = self.pieces.get_mut().unwrap_or_else(PoisonError::into_inner);
        let in_batch = self.in_batch.get_mut().unwrap_or_else(PoisonError::into_inner);
        while *in_batch {
            match pieces.recv() {
                Ok(Piece::Records(_)) => {}
                Ok(Piece::End | Piece::Failed(_)) | Err(_) => *in_batch = false,
            }
        }
        let first = self.first.get_mut().unwrap_or_else(PoisonError::into_inner);
        *first = pieces.recv().ok();
        *in_batch = first.is_some();
        *in_batch
    }

    /// Whether the batches read every row of the store ([`Batches::read_all`]); waits for the
    /// reading thread.
    pub fn read_all(mut self) -> bool {
        // The thread may be waiting to hand on a piece no one will take: let it see so.
        drop(std::mem::replace(self.pieces.get_mut().unwrap_or_else(PoisonError::into_inner), sync_channel(0).1));
        self.reader.take().is_some_and(|r| r.join().unwrap_or(false))
    }

    /// The current batch's next records into `out`; empty at the batch's end.
    fn take(&self, out: &mut Vec<u8>) -> io::Result<()> {
        let used = std::mem::take(out);
        if used.capacity() > 0 {
            let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
            if spare.len() <= PAGES_AHEAD {
                spare.push(used);
            }
        }
        let mut in_batch = self.in_batch.lock().unwrap_or_else(PoisonError::into_inner);
        if !*in_batch {
            return Ok(());
        }
        let first = self.first.lock().unwrap_or_else(PoisonError::into_inner).take();
        let piece = match first {
            Some(piece) => piece,
            None => self.pieces.lock().unwrap_or_else(PoisonError::into_inner).recv().unwrap_or(Piece::End),
        };
        match piece {
            Piece::Records(records) => *out = records,
            Piece::End => *in_batch = false,
            Piece::Failed(e) => {
                *in_batch = false;
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        if self.reader.is_some() {
            drop(std::mem::replace(self.pieces.get_mut().unwrap_or_else(PoisonError::into_inner), sync_channel(0).1));
            if let Some(r) = self.reader.take() {
                let _ = r.join();
            }
        }
    }
}

/// Every batch's records, a page at a time, each batch ended by [`Piece::End`].
fn read_batches(batches: &mut Batches, tx: &SyncSender<Piece>, spare: &Mutex<Vec<Vec<u8>>>) -> io::Result<()> {
    while let Some(mut pages) = batches.next_batch()? {
        loop {
            let mut records = spare.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default();
            records.clear();
            let more = pages.next_page(&mut records);
            let more = match more {
                Ok(more) => more,
                Err(e) => {
                    batches.done(pages);
                    return Err(e);
                }
            };
            if !records.is_empty() && tx.send(Piece::Records(records)).is_err() {
                return Ok(());
            }
            if !more {
                break;
            }
        }
        batches.done(pages);
        if tx.send(Piece::End).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// The current batch's records, taken a piece at a time.
struct BatchRecords<'a> {
    ahead: &'a ReadAhead,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for BatchRecords<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.buf.len() {
            self.pos = 0;
            self.ahead.take(&mut self.buf)?;
            if self.buf.is_empty() {
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Inputs for ReadAhead {
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        self.name.clone()
    }
    fn origin(&self, _: usize) -> Origin {
        self.origin.clone()
    }
    fn open(&self, _: usize) -> io::Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(BatchRecords { ahead: self, buf: Vec::new(), pos: 0 }))
    }
}
