//! The store as it is now: its sessions (parents first), then each message followed by its parts,
//! oldest first (message and part ids sort oldest first, wire.md §9), then, if no process holds
//! the store any more, a `dead` record for every root session. Read in one read transaction, so
//! the pages are one consistent snapshot (the `-wal` file included) that never blocks the writer,
//! and a page at a time ([`super::pages`]), so memory is flat in the store's size.
//!
//! Only the `session`, `message`, `part` and `event` tables are read; the store's other tables
//! (accounts, credentials) are never touched. Every value is read tolerantly ([`super::cells`]).

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, Row};
use serde_json::{Value, json};

use super::cells::{self, Tally};
use super::pages::{Key, PageBounds, PageSql, Query, with_scope};
use super::records;
use super::store::{open, sql_error};
use super::writer::{Writer, writer};

/// The store as it is now, as records, and where its event log ends.
pub struct Snapshot {
    pub records: Vec<u8>,
    /// The `event` table's last rowid: following starts after it.
    pub cursor: i64,
}

/// Reads the whole store (see the module's doc). Holds every record at once: for a store of any
/// size, [`snapshot_reader`] reads the same records a page at a time.
pub fn snapshot(db: &Path) -> io::Result<Snapshot> {
    collect(Pages::new(db, None, PageBounds::default())?)
}

/// [`snapshot`] of some root sessions and everything under them, nothing else: one session of a
/// store holding many, read without touching the others' rows.
pub fn snapshot_of(db: &Path, roots: &[String]) -> io::Result<Snapshot> {
    collect(Pages::new(db, Some(roots), PageBounds::default())?)
}

/// The records of [`snapshot`], read a page at a time as they are read from this reader.
pub fn snapshot_reader(db: &Path) -> io::Result<SnapshotReader> {
    snapshot_reader_with(db, PageBounds::default())
}

/// [`snapshot_reader`] with pages of another size: the same records.
pub fn snapshot_reader_with(db: &Path, bounds: PageBounds) -> io::Result<SnapshotReader> {
    Ok(SnapshotReader { pages: Pages::new(db, None, bounds)?, buf: Vec::new(), pos: 0, more: true })
}

fn collect(mut pages: Pages) -> io::Result<Snapshot> {
    let mut records = Vec::new();
    while pages.next_page(&mut records)? {}
    Ok(Snapshot { records, cursor: pages.cursor })
}

/// [`snapshot_reader`]'s reader.
pub struct SnapshotReader {
    pages: Pages,
    buf: Vec<u8>,
    pos: usize,
    more: bool,
}

impl io::Read for SnapshotReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            if !self.more {
                return Ok(0);
            }
            self.buf.clear();
            self.pos = 0;
            self.more = self.pages.next_page(&mut self.buf)?;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

const SESSIONS: Query<'_> = Query {
    select: "SELECT id, parent_id, title, agent, model, cost, tokens_input, tokens_output, tokens_reasoning, \
             tokens_cache_read, tokens_cache_write, time_created, time_updated, directory FROM session",
    keys: &["id"],
    // Session ids sort newest first: descending is oldest first, parents before their children.
    descending: true,
    filter: "",
    scope_column: "id",
};
const MESSAGES: Query<'_> = Query {
    select: "SELECT id, session_id, data FROM message",
    keys: &["id"],
    descending: false,
    filter: "",
    scope_column: "session_id",
};
const PARTS: Query<'_> = Query {
    select: "SELECT message_id, id, session_id, data FROM part",
    keys: &["message_id", "id"],
    descending: false,
    filter: "",
    scope_column: "session_id",
};
/// A parent of an odd type is read as none: that session is a root too.
const ROOTS: Query<'_> = Query {
    select: "SELECT id FROM session",
    keys: &["id"],
    descending: false,
    filter: "parent_id IS NULL OR typeof(parent_id) != 'text'",
    scope_column: "id",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Sessions,
    Rows,
    /// swarmtop's stops of its sessions (`source::acts`), after the rows that name them.
    Acts,
    Dead,
    Done,
}

/// Which parts come next: those of the message just handed on (parts of messages that sort
/// before it and have no message row of their own too), or, once the messages are done, all.
enum Drain {
    NextMessage,
    Upto(String),
    All,
}

struct MessageRow {
    id: String,
    session: String,
    data: Value,
}

struct PartRow {
    message: String,
    id: String,
    session: String,
    data: Value,
}

/// One table's rows in key order, a page buffered.
struct Table<T> {
    sql: PageSql,
    rows: VecDeque<T>,
    after: Option<Vec<Key>>,
    more: bool,
}

impl<T> Table<T> {
    fn new(q: &Query<'_>, scoped: bool) -> Self {
        Self { sql: PageSql::new(q, scoped), rows: VecDeque::new(), after: None, more: true }
    }
}

/// A read of the store in pages.
pub(super) struct Pages {
    db: PathBuf,
    conn: Connection,
    /// The roots a scoped read covers, as a JSON array.
    scope: Option<String>,
    bounds: PageBounds,
    stage: Stage,
    sessions: Table<()>,
    messages: Table<MessageRow>,
    parts: Table<PartRow>,
    roots: Table<()>,
    drain: Drain,
    tally: Tally,
    /// The `event` table's last rowid when the read began.
    pub cursor: i64,
}

impl Pages {
    pub fn new(db: &Path, roots: Option<&[String]>, bounds: PageBounds) -> io::Result<Self> {
        let conn = open(db)?;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        // One read transaction for every page: one snapshot of the store.
        conn.execute_batch("BEGIN").map_err(err)?;
        let scope = roots.map(|r| Value::from(r).to_string());
        let scoped = scope.is_some();
        // A store without an event log is still read; following it then says why it cannot.
        let cursor = conn.query_row("SELECT COALESCE(MAX(rowid), 0) FROM event", [], |r| r.get(0)).unwrap_or(0);
        let mut pages = Self {
            db: db.to_path_buf(),
            conn,
            scope,
            bounds,
            stage: Stage::Sessions,
            sessions: Table::new(&SESSIONS, scoped),
            messages: Table::new(&MESSAGES, scoped),
            parts: Table::new(&PARTS, scoped),
            roots: Table::new(&ROOTS, scoped),
            drain: Drain::NextMessage,
            tally: Tally::default(),
            cursor,
        };
        pages.count_unreachable().map_err(err)?;
        Ok(pages)
    }

    /// Rows whose key is NULL: no page reaches them.
    fn count_unreachable(&mut self) -> rusqlite::Result<()> {
        let Self { conn, scope, tally, .. } = self;
        let in_scope = if scope.is_some() { " AND session_id IN tree" } else { "" };
        let mut queries = vec![
            ("message", format!("SELECT COUNT(*) FROM message WHERE id IS NULL{in_scope}")),
            ("part", format!("SELECT COUNT(*) FROM part WHERE (message_id IS NULL OR id IS NULL){in_scope}")),
        ];
        if scope.is_none() {
            queries.push(("session", "SELECT COUNT(*) FROM session WHERE id IS NULL".to_owned()));
        }
        for (table, query) in queries {
            let n: i64 = match scope {
                Some(s) => conn.query_row(&with_scope(true, &query), [s.as_str()], |r| r.get(0))?,
                None => conn.query_row(&query, [], |r| r.get(0))?,
            };
            tally.skip_rows(n.unsigned_abs(), table, "without an id");
        }
        Ok(())
    }

    /// Appends the next page of records to `out`; whether more follow.
    pub fn next_page(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let start = out.len();
        let result = (|| -> rusqlite::Result<bool> {
            while out.len() - start < self.bounds.bytes {
                match self.stage {
                    Stage::Sessions => self.sessions_page(out)?,
                    Stage::Rows => self.rows_page(out, start)?,
                    Stage::Acts => self.acts_page(out)?,
                    Stage::Dead => self.dead_page(out)?,
                    Stage::Done => return Ok(false),
                }
            }
            Ok(true)
        })();
        result.map_err(|e| sql_error(&self.db, &e))
    }

    fn sessions_page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        let Self { conn, scope, bounds, sessions, tally, .. } = self;
        sessions.more = sessions.sql.page(conn, (scope.as_deref(), *bounds), &mut sessions.after, |r| {
            let before = out.len();
            session(r, tally, out);
            out.len() - before
        })?;
        if !sessions.more {
            self.stage = Stage::Rows;
        }
        Ok(())
    }

    /// Messages, each followed by its parts, until the page is full or both tables are done.
    fn rows_page(&mut self, out: &mut Vec<u8>, start: usize) -> rusqlite::Result<()> {
        while out.len() - start < self.bounds.bytes {
            if matches!(self.drain, Drain::NextMessage) {
                match self.next_message()? {
                    Some(m) => {
                        let info = records::with_ids(m.data, &[("id", &m.id), ("sessionID", &m.session)]);
                        records::push(out, &records::row_event("message.updated", &m.session, "info", &info));
                        self.drain = Drain::Upto(m.id);
                    }
                    None => self.drain = Drain::All,
                }
                continue;
            }
            match self.next_part()? {
                Some(p) => {
                    let ids = [("id", p.id.as_str()), ("messageID", &p.message), ("sessionID", &p.session)];
                    let part = records::with_ids(p.data, &ids);
                    records::push(out, &records::row_event("message.part.updated", &p.session, "part", &part));
                }
                None if matches!(self.drain, Drain::All) => {
                    self.stage = Stage::Acts;
                    return Ok(());
                }
                None => self.drain = Drain::NextMessage,
            }
        }
        Ok(())
    }

    fn next_message(&mut self) -> rusqlite::Result<Option<MessageRow>> {
        let Self { conn, scope, bounds, messages, tally, .. } = self;
        while messages.rows.is_empty() && messages.more {
            let rows = &mut messages.rows;
            messages.more = messages.sql.page(conn, (scope.as_deref(), *bounds), &mut messages.after, |r| {
                let id = tally.text(r, 0, "message.id");
                let session = tally.text(r, 1, "message.session_id");
                if let (Some(id), Some(session), Some(data)) = (id, session, tally.json(r, 2, "message.data")) {
                    rows.push_back(MessageRow { id, session, data });
                    cells::size(r, 2)
                } else {
                    tally.skip_row("message", "without an id, a session or data");
                    0
                }
            })?;
        }
        Ok(messages.rows.pop_front())
    }

    /// The next part the drain takes, if any.
    fn next_part(&mut self) -> rusqlite::Result<Option<PartRow>> {
        let Self { conn, scope, bounds, parts, tally, drain, .. } = self;
        while parts.rows.is_empty() && parts.more {
            let rows = &mut parts.rows;
            parts.more = parts.sql.page(conn, (scope.as_deref(), *bounds), &mut parts.after, |r| {
                let message = tally.text(r, 0, "part.message_id");
                let id = tally.text(r, 1, "part.id");
                let session = tally.text(r, 2, "part.session_id");
                if let (Some(message), Some(id), Some(session), Some(data)) =
                    (message, id, session, tally.json(r, 3, "part.data"))
                {
                    rows.push_back(PartRow { message, id, session, data });
                    cells::size(r, 3)
                } else {
                    tally.skip_row("part", "without an id, a message, a session or data");
                    0
                }
            })?;
        }
        let due = match (parts.rows.front(), &*drain) {
            (Some(p), Drain::Upto(message)) => p.message <= *message,
            (Some(_), _) => true,
            (None, _) => false,
        };
        Ok(if due { parts.rows.pop_front() } else { None })
    }

    /// The stops swarmtop logged of this read's sessions (an abort through their server), as
    /// records: the tree then says why they stopped, as it does for a tee's acts.
    fn acts_page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        self.stage = Stage::Dead;
        let acts = crate::source::acts::read();
        if !acts.is_empty() {
            let known = stored(&self.conn, &acts, self.scope.as_deref())?;
            out.extend_from_slice(&crate::source::acts::records(&acts, |a| known.contains(&a.target)));
        }
        Ok(())
    }

    /// The roots a dead writer left, then the end of the read.
    fn dead_page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        if self.roots.after.is_none() && writer(&self.db) != Writer::Dead {
            self.roots.more = false;
        }
        if self.roots.more {
            let Self { conn, scope, bounds, roots, .. } = self;
            // An odd id was counted when its session was read.
            let mut again = Tally::default();
            roots.more = roots.sql.page(conn, (scope.as_deref(), *bounds), &mut roots.after, |r| {
                again.text(r, 0, "session.id").map_or(0, |root| {
                    records::dead(out, &root);
                    root.len()
                })
            })?;
            if self.roots.more {
                return Ok(());
            }
        }
        if let Some(message) = self.tally.take_notice() {
            records::notice(out, "store", &message);
        }
        self.conn.execute_batch("COMMIT")?;
        self.stage = Stage::Done;
        Ok(())
    }
}

/// The targets of `acts` that are sessions of the store (within `scope`'s roots, a JSON array).
pub(super) fn stored(
    conn: &Connection,
    acts: &[crate::source::acts::Logged],
    scope: Option<&str>,
) -> rusqlite::Result<std::collections::HashSet<String>> {
    let targets = Value::from(acts.iter().map(|a| a.target.as_str()).collect::<Vec<_>>()).to_string();
    let query = with_scope(
        scope.is_some(),
        &format!(
            "SELECT id FROM session WHERE id IN (SELECT value FROM json_each(?{})){}",
            if scope.is_some() { 2 } else { 1 },
            if scope.is_some() { " AND id IN tree" } else { "" }
        ),
    );
    let mut stmt = conn.prepare(&query)?;
    let read = |r: &Row<'_>| r.get::<_, String>(0);
    let known = match scope {
        Some(scope) => stmt.query_map([scope, targets.as_str()], read)?.filter_map(Result::ok).collect(),
        None => stmt.query_map([targets.as_str()], read)?.filter_map(Result::ok).collect(),
    };
    Ok(known)
}

/// A session row as the `session.updated` event that would have written it.
fn session(r: &Row<'_>, tally: &mut Tally, out: &mut Vec<u8>) {
    let Some(id) = tally.text(r, 0, "session.id") else {
        tally.skip_row("session", "without an id");
        return;
    };
    let info = json!({
        "id": id,
        "parentID": tally.text(r, 1, "session.parent_id"),
        "title": tally.text(r, 2, "session.title"),
        "agent": tally.text(r, 3, "session.agent"),
        "model": tally.json(r, 4, "session.model"),
        "cost": tally.real(r, 5, "session.cost"),
        "tokens": {
            "input": tally.count(r, 6, "session.tokens_input"),
            "output": tally.count(r, 7, "session.tokens_output"),
            "reasoning": tally.count(r, 8, "session.tokens_reasoning"),
            "cache": {
                "read": tally.count(r, 9, "session.tokens_cache_read"),
                "write": tally.count(r, 10, "session.tokens_cache_write"),
            },
        },
        "time": {"created": tally.int(r, 11, "session.time_created"), "updated": tally.int(r, 12, "session.time_updated")},
        "directory": tally.text(r, 13, "session.directory"),
    });
    records::push(out, &records::row_event("session.updated", &id, "info", &info));
}
