//! The store as it is now, in the time it was written ([`Pages`]): each session, message and part
//! as it was made, at the time it was made, and as it stands, at the time it was last written;
//! then, if no process holds the store any more, a `dead` record for every root session. Read in one read transaction, so
//! the pages are one consistent snapshot (the `-wal` file included) that never blocks the writer,
//! and a page at a time ([`super::pages`]), so memory is flat in the store's size.
//!
//! Only the `session`, `message`, `part` and `event` tables are read; the store's other tables
//! (accounts, credentials) are never touched. Every value is read tolerantly ([`super::cells`]).

use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, Row};
use serde_json::{Value, json};

use super::cells::Tally;
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
    Ok(SnapshotReader::new(Pages::new(db, None, bounds)?))
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

impl SnapshotReader {
    fn new(pages: Pages) -> Self {
        Self { pages, buf: Vec::new(), pos: 0, more: true }
    }
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

/// What a read does once its rows are read, decided by the read itself unless a read in batches
/// ([`super::batches`]) decided it once for all of them.
#[derive(Clone, Default)]
pub(super) struct Ending {
    /// Whether no process writes the store any more (a `dead` record for each root).
    pub writer_dead: Option<bool>,
    /// swarmtop's log of acts (`source::acts`).
    pub acts: Option<Arc<[crate::source::acts::Logged]>>,
    /// A read in batches shares one read transaction: the batches end it, not each batch.
    pub shared_transaction: bool,
}

/// The session columns read, `time_created` and `time_updated` among them (columns 11 and 12).
const SESSION_COLUMNS: &str = "SELECT id, parent_id, title, agent, model, cost, tokens_input, tokens_output, \
     tokens_reasoning, tokens_cache_read, tokens_cache_write, time_created, time_updated, directory FROM session";
/// A parent of an odd type is read as none: that session is a root too.
pub(super) const ROOTS: Query<'_> = Query {
    select: "SELECT id FROM session",
    keys: &["id"],
    descending: false,
    filter: "parent_id IS NULL OR typeof(parent_id) != 'text'",
    scope_column: "id",
};

/// Bytes of rows' last states held until their time ([`Pages`]): rows made and not yet last
/// written at one moment of the store (a few per running session). Past it the one due first is
/// handed on at once, ahead of its time, and counted.
pub const HELD_BYTES: usize = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Rows,
    /// swarmtop's stops of its sessions (`source::acts`), after the rows that name them.
    Acts,
    Dead,
    Done,
}

/// One row as records: as it was when it was made (`at`, its creation) and, when it was written
/// again later, as it was then (`then`: a `task` part once its child is made, and every row as
/// it stands, at its last write).
struct Records {
    at: Option<i64>,
    first: Vec<u8>,
    then: Vec<(i64, Vec<u8>)>,
}

/// A row's last state, held until its time; ties go in the order the rows were made.
struct Held {
    at: i64,
    seq: u64,
    record: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    // Reversed: the heap's top is the one due first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
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

/// Which table a row comes from: how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Message,
    Part,
}

/// A read of the store in pages: the three tables each in the order of its ids (which sort by
/// creation, wire.md §9), merged by the time each row was made, every row's last state held
/// until the time it was last written. A store holds each row as it ended: read in table order
/// (every session first), a replay showed every child from the start and every agent done from
/// its first message (issue 19); read so, it shows each moment as the live stream did.
pub(super) struct Pages {
    db: PathBuf,
    pub(super) conn: Connection,
    /// The roots a scoped read covers, as a JSON array.
    scope: Option<String>,
    bounds: PageBounds,
    stage: Stage,
    /// Sessions, messages, parts.
    tables: [Table<Records>; 3],
    roots: Table<()>,
    held: BinaryHeap<Held>,
    held_bytes: usize,
    made: u64,
    /// Last states handed on ahead of their time ([`HELD_BYTES`]).
    early: u64,
    tally: Tally,
    ending: Ending,
    /// Rows handed to the read (odd ones and ones without an id too): a read in batches tells
    /// from them whether its roots reached every row.
    pub(super) rows_seen: u64,
    /// A notice of odd rows was handed on: a read in batches would give one per batch.
    pub(super) noticed: bool,
    /// The `event` table's last rowid when the read began.
    pub cursor: i64,
}

/// A column of `table` if the store has it, else NULL: stores before 1.18 may lack the times.
fn column_or_null(conn: &Connection, table: &str, column: &str) -> String {
    let has = conn.prepare(&format!("SELECT {column} FROM {table} LIMIT 0")).is_ok();
    if has { column.to_owned() } else { "NULL".to_owned() }
}

impl Pages {
    pub fn new(db: &Path, roots: Option<&[String]>, bounds: PageBounds) -> io::Result<Self> {
        let conn = open(db)?;
        // One read transaction for every page: one snapshot of the store.
        conn.execute_batch("BEGIN").map_err(|e| sql_error(db, &e))?;
        Self::on(conn, db, roots, bounds, Ending::default())
    }

    /// A read on `conn`, already in its read transaction.
    pub(super) fn on(
        conn: Connection,
        db: &Path,
        roots: Option<&[String]>,
        bounds: PageBounds,
        ending: Ending,
    ) -> io::Result<Self> {
        let err = |e: rusqlite::Error| sql_error(db, &e);
        let scope = roots.map(|r| Value::from(r).to_string());
        let scoped = scope.is_some();
        // A store without an event log is still read; following it then says why it cannot.
        let cursor = conn.query_row("SELECT COALESCE(MAX(rowid), 0) FROM event", [], |r| r.get(0)).unwrap_or(0);
        let times = |table| {
            format!(
                "{}, {}",
                column_or_null(&conn, table, "time_created"),
                column_or_null(&conn, table, "time_updated")
            )
        };
        let messages = format!("SELECT id, session_id, data, {} FROM message", times("message"));
        let parts = format!("SELECT id, message_id, session_id, data, {} FROM part", times("part"));
        let tables = [
            // Session ids sort newest first: descending is oldest first, parents before children.
            Table::new(
                &Query { select: SESSION_COLUMNS, keys: &["id"], descending: true, filter: "", scope_column: "id" },
                scoped,
            ),
            Table::new(
                &Query { select: &messages, keys: &["id"], descending: false, filter: "", scope_column: "session_id" },
                scoped,
            ),
            Table::new(
                &Query { select: &parts, keys: &["id"], descending: false, filter: "", scope_column: "session_id" },
                scoped,
            ),
        ];
        let mut pages = Self {
            db: db.to_path_buf(),
            conn,
            scope,
            bounds,
            stage: Stage::Rows,
            tables,
            roots: Table::new(&ROOTS, scoped),
            held: BinaryHeap::new(),
            held_bytes: 0,
            made: 0,
            early: 0,
            tally: Tally::default(),
            ending,
            rows_seen: 0,
            noticed: false,
            cursor,
        };
        pages.count_unreachable().map_err(err)?;
        Ok(pages)
    }

    /// Rows whose key is NULL: no page reaches them.
    fn count_unreachable(&mut self) -> rusqlite::Result<()> {
        let Self { conn, scope, tally, rows_seen, .. } = self;
        let in_scope = if scope.is_some() { " AND session_id IN tree" } else { "" };
        let mut queries = vec![
            ("message", format!("SELECT COUNT(*) FROM message WHERE id IS NULL{in_scope}")),
            ("part", format!("SELECT COUNT(*) FROM part WHERE id IS NULL{in_scope}")),
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
            *rows_seen = rows_seen.saturating_add(n.unsigned_abs());
        }
        Ok(())
    }

    /// Appends the next page of records to `out`; whether more follow.
    pub fn next_page(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let start = out.len();
        let result = (|| -> rusqlite::Result<bool> {
            while out.len() - start < self.bounds.bytes {
                match self.stage {
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

    /// Rows in the time they were made, and their last states in the time they were last
    /// written, until the page is full or every table is done.
    fn rows_page(&mut self, out: &mut Vec<u8>, start: usize) -> rusqlite::Result<()> {
        while out.len() - start < self.bounds.bytes {
            for kind in [Kind::Session, Kind::Message, Kind::Part] {
                self.fill(kind)?;
            }
            // The earliest made; on a tie, sessions, then messages, then parts.
            let made = self
                .tables
                .iter()
                .enumerate()
                .filter_map(|(t, table)| table.rows.front().map(|r| (r.at.unwrap_or(i64::MIN), t)))
                .min();
            // A last state due at a row's making goes first: it happened by then.
            match (made, self.held.peek().map(|h| h.at)) {
                (None, None) => {
                    self.stage = Stage::Acts;
                    return Ok(());
                }
                (Some((at, _)), Some(due)) if due <= at => self.hand_held(out),
                (None, Some(_)) => self.hand_held(out),
                (Some((_, t)), _) => {
                    let Some(row) = self.tables[t].rows.pop_front() else { continue };
                    out.extend_from_slice(&row.first);
                    for (at, record) in row.then {
                        self.hold(at, record, out);
                    }
                }
            }
        }
        Ok(())
    }

    fn hand_held(&mut self, out: &mut Vec<u8>) {
        if let Some(h) = self.held.pop() {
            self.held_bytes -= h.record.len();
            out.extend_from_slice(&h.record);
        }
    }

    /// Holds a row's last state until `at`; past [`HELD_BYTES`], the one due first goes now.
    fn hold(&mut self, at: i64, record: Vec<u8>, out: &mut Vec<u8>) {
        self.made += 1;
        self.held_bytes += record.len();
        self.held.push(Held { at, seq: self.made, record });
        while self.held_bytes > HELD_BYTES && self.held.len() > 1 {
            self.early += 1;
            self.hand_held(out);
        }
    }

    /// Reads the next page of `kind`'s table if none of its rows is left.
    fn fill(&mut self, kind: Kind) -> rusqlite::Result<()> {
        let Self { conn, scope, bounds, tables, tally, rows_seen, .. } = self;
        let table = &mut tables[kind as usize];
        if !table.rows.is_empty() || !table.more {
            return Ok(());
        }
        let rows = &mut table.rows;
        table.more = table.sql.page(conn, (scope.as_deref(), *bounds), &mut table.after, |r| {
            *rows_seen += 1;
            let row = match kind {
                Kind::Session => session(r, tally),
                Kind::Message => message(r, tally),
                Kind::Part => part(r, tally, &|child| made_at(conn, child)),
            };
            row.map_or(0, |row| {
                let size = row.first.len() + row.then.iter().map(|(_, t)| t.len()).sum::<usize>();
                rows.push_back(row);
                size
            })
        })?;
        Ok(())
    }

    /// The stops swarmtop logged of this read's sessions (an abort through their server), as
    /// records: the tree then says why they stopped, as it does for a tee's acts.
    fn acts_page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        self.stage = Stage::Dead;
        let acts = self.ending.acts.clone().unwrap_or_else(|| crate::source::acts::read().into());
        if !acts.is_empty() {
            let known = stored(&self.conn, &acts, self.scope.as_deref())?;
            out.extend_from_slice(&crate::source::acts::records(&acts, |a| known.contains(&a.target)));
        }
        Ok(())
    }

    /// The roots a dead writer left, then the end of the read.
    fn dead_page(&mut self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        if self.roots.after.is_none()
            && !*self.ending.writer_dead.get_or_insert_with(|| writer(&self.db) == Writer::Dead)
        {
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
            self.noticed = true;
        }
        if self.early > 0 {
            self.noticed = true;
            let message = format!(
                "{} row(s) handed on ahead of their last write: more than {} MiB of rows were open at once",
                self.early,
                HELD_BYTES >> 20
            );
            records::notice(out, "store", &message);
        }
        if !self.ending.shared_transaction {
            self.conn.execute_batch("COMMIT")?;
        }
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

/// The record of a row as the event that would have written it, at `at` when it has a time.
fn record(kind: &str, session: &str, key: &str, body: &Value, at: Option<i64>) -> Vec<u8> {
    let mut event = records::row_event(kind, session, key, body);
    if let (Some(at), Some(props)) = (at, event["event"]["properties"].as_object_mut()) {
        // The time a live event carries (`message.part.updated` has one, wire.md §9): the
        // record's own time, as the merge and `--until` read it.
        props.insert("time".to_owned(), Value::from(at));
    }
    let mut out = Vec::new();
    records::push(&mut out, &event);
    out
}

/// A row as records: as `opened` says it was made, at `created`, and as it stands at `updated`
/// when it was written again later and differs. A row with no creation time is one record,
/// where its table's order puts it.
fn records_of(
    kind: &str,
    session: &str,
    key: &str,
    (body, opened): (&Value, &Value),
    (created, updated): (Option<i64>, Option<i64>),
) -> Records {
    match (created, updated) {
        (Some(c), Some(u)) if u > c && opened != body => Records {
            at: created,
            first: record(kind, session, key, opened, created),
            then: vec![(u, record(kind, session, key, body, updated))],
        },
        _ => Records { at: created, first: record(kind, session, key, body, created), then: Vec::new() },
    }
}

/// A session row as the `session.created` event that made it and the last `session.updated`.
fn session(r: &Row<'_>, tally: &mut Tally) -> Option<Records> {
    let Some(id) = tally.text(r, 0, "session.id") else {
        tally.skip_row("session", "without an id");
        return None;
    };
    let (created, updated) = (tally.int(r, 11, "session.time_created"), tally.int(r, 12, "session.time_updated"));
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
        "time": {"created": created, "updated": updated},
        "directory": tally.text(r, 13, "session.directory"),
    });
    // Made with nothing spent: its cost is its messages', written as they end.
    let mut opened = info.clone();
    opened["cost"] = json!(0);
    opened["tokens"] = json!({"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}});
    opened["time"]["updated"] = json!(created);
    Some(records_of("session.updated", &id, "info", (&info, &opened), (created, updated)))
}

/// A time the row's JSON names at `path` (`time.created`): a store without the time columns.
fn time_at(data: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(data, |v, k| v.get(k)).and_then(Value::as_i64)
}

/// A message row as the `message.updated` event that made it (no usage, not finished) and the
/// last one.
fn message(r: &Row<'_>, tally: &mut Tally) -> Option<Records> {
    let id = tally.text(r, 0, "message.id");
    let session = tally.text(r, 1, "message.session_id");
    let (Some(id), Some(session), Some(data)) = (id, session, tally.json(r, 2, "message.data")) else {
        tally.skip_row("message", "without an id, a session or data");
        return None;
    };
    let created = tally.int(r, 3, "message.time_created").or_else(|| time_at(&data, &["time", "created"]));
    let updated = tally.int(r, 4, "message.time_updated").or_else(|| time_at(&data, &["time", "completed"]));
    let info = records::with_ids(data, &[("id", &id), ("sessionID", &session)]);
    let mut opened = info.clone();
    if let Some(m) = opened.as_object_mut() {
        // A user message's summary is written at its turn's first step (wire::opencode).
        for key in ["finish", "tokens", "cost", "error", "summary"] {
            m.remove(key);
        }
    }
    if let Some(t) = opened.get_mut("time").and_then(Value::as_object_mut) {
        t.remove("completed");
    }
    Some(records_of("message.updated", &session, "info", (&info, &opened), (created, updated)))
}

/// When session `id` was made, if the store says.
fn made_at(conn: &Connection, id: &str) -> Option<i64> {
    let mut st = conn.prepare_cached("SELECT time_created FROM session WHERE id = ?1").ok()?;
    st.query_row([id], |r| r.get::<_, Option<i64>>(0)).ok().flatten()
}

/// A part row as the `message.part.updated` event that made it (a tool running, text not yet
/// ended) and the last one. A `task` part names its child (`metadata.sessionId`) from the
/// moment OpenCode makes the child, while the call runs (wire.md §9): between the two, a third
/// record, at the child's making (`made_at`), so the child is never named before it exists.
fn part(r: &Row<'_>, tally: &mut Tally, made_at: &dyn Fn(&str) -> Option<i64>) -> Option<Records> {
    let id = tally.text(r, 0, "part.id");
    let message = tally.text(r, 1, "part.message_id");
    let session = tally.text(r, 2, "part.session_id");
    let (Some(id), Some(message), Some(session), Some(data)) = (id, message, session, tally.json(r, 3, "part.data"))
    else {
        tally.skip_row("part", "without an id, a message, a session or data");
        return None;
    };
    let created = tally
        .int(r, 4, "part.time_created")
        .or_else(|| time_at(&data, &["time", "start"]).or_else(|| time_at(&data, &["state", "time", "start"])));
    let updated = tally
        .int(r, 5, "part.time_updated")
        .or_else(|| time_at(&data, &["time", "end"]).or_else(|| time_at(&data, &["state", "time", "end"])));
    let body = records::with_ids(data, &[("id", &id), ("messageID", &message), ("sessionID", &session)]);
    let mut opened = body.clone();
    if let Some(state) = opened.get_mut("state").and_then(Value::as_object_mut) {
        if matches!(state.get("status").and_then(Value::as_str), Some("completed" | "error")) {
            state.insert("status".to_owned(), Value::from("running"));
        }
        state.remove("output");
        state.remove("error");
        if let Some(t) = state.get_mut("time").and_then(Value::as_object_mut) {
            t.remove("end");
        }
    }
    if let Some(t) = opened.get_mut("time").and_then(Value::as_object_mut) {
        t.remove("end");
    }
    let kind = "message.part.updated";
    let mut records = records_of(kind, &session, "part", (&body, &opened), (created, updated));
    let child = body.pointer("/state/metadata/sessionId").and_then(Value::as_str);
    let linked = child
        .and_then(made_at)
        .filter(|&at| created.is_some_and(|c| at > c) && records.then.first().is_some_and(|&(last, _)| at < last));
    if let Some(at) = linked {
        records.then.insert(0, (at, record(kind, &session, "part", &opened, Some(at))));
        if let Some(metadata) = opened.pointer_mut("/state/metadata").and_then(Value::as_object_mut) {
            metadata.remove("sessionId");
        }
        records.first = record(kind, &session, "part", &opened, created);
    }
    Some(records)
}
