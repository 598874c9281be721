//! OpenCode's SQLite store as an input (wire.md §9): rows and events handed on as records, one
//! JSON line each, for `wire::opencode` to lower.
//!
//! The store is read through SQLite itself, read-only, in one read transaction per pass: in WAL
//! mode a reader sees a consistent snapshot (the `-wal` file included) and never blocks the writer.
//! Only the `session`, `message`, `part` and `event` tables are read; the store's other tables
//! (accounts, credentials) are never touched.
//!
//! A snapshot gives the current rows, each in the shape of the event that would have written it;
//! following goes on from the `event` log's last row, polled through `PRAGMA data_version` so an
//! unchanged store costs one pragma, never a re-read.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::proc::{self, Proc};
use serde_json::{Map, Value, json};

/// A part row: id, message id, session id, data.
type PartRow = (String, String, String, Option<String>);

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
/// The store's name in OpenCode's data directory.
pub const STORE_NAME: &str = "opencode.db";
/// How often a followed store is asked whether it changed.
pub const POLL: Duration = Duration::from_millis(200);
/// How long `opencode serve` may take to answer a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Silence on an event stream after which its connection counts as dropped (three heartbeats).
const SSE_SILENCE: Duration = Duration::from_secs(35);
/// How long a read waits for a lock SQLite needs briefly (a checkpoint), before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// The store a path names: an SQLite file, or a data directory holding `opencode.db`.
pub fn store_at(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let db = path.join(STORE_NAME);
        return is_sqlite(&db).then_some(db);
    }
    is_sqlite(path).then(|| path.to_path_buf())
}

/// Whether a file starts like an SQLite database.
pub fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == SQLITE_MAGIC
}

fn sql_error(db: &Path, e: &rusqlite::Error) -> io::Error {
    io::Error::other(format!("{}: {e}", db.display()))
}

/// Opens the store read-only: never created, never written, never locking OpenCode out.
pub fn open(db: &Path) -> io::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags).map_err(|e| sql_error(db, &e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_error(db, &e))?;
    Ok(conn)
}

/// The store as it is now, as records, and where its event log ends.
pub struct Snapshot {
    pub records: Vec<u8>,
    /// The `event` table's last rowid: following starts after it.
    pub cursor: i64,
}

fn push_record(out: &mut Vec<u8>, value: &Value) {
    // serde_json writes no raw newline: one value is one line.
    out.extend_from_slice(value.to_string().as_bytes());
    out.push(b'\n');
}

fn row_event(kind: &str, session: &str, key: &str, body: &Value) -> Value {
    json!({"opencode": "row", "event": {"type": kind, "properties": {"sessionID": session, key: body}}})
}

/// A column of JSON text as a value; text that is not JSON is kept as a string, for the lowering
/// to find nothing in rather than for the row to vanish.
fn json_column(text: Option<String>) -> Value {
    text.map_or(Value::Null, |t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

fn with_ids(data: Value, ids: &[(&str, &str)]) -> Value {
    let mut map = match data {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("data".to_owned(), other);
            m
        }
    };
    for (k, v) in ids {
        map.insert((*k).to_owned(), Value::String((*v).to_owned()));
    }
    Value::Object(map)
}

/// Reads the whole store in one read transaction: sessions (parents first), then each message
/// followed by its parts, oldest first (message and part ids sort oldest first, wire.md §9); then,
/// if no process holds the store any more, a `dead` record for every root session.
pub fn snapshot(db: &Path) -> io::Result<Snapshot> {
    snapshot_scoped(db, None)
}

/// [`snapshot`] of some root sessions and everything under them, nothing else: one session of a
/// store holding many, read without touching the others' rows.
pub fn snapshot_of(db: &Path, roots: &[String]) -> io::Result<Snapshot> {
    snapshot_scoped(db, Some(roots))
}

/// The sessions a scoped read covers: the roots named in `?1` (a JSON array) and their
/// descendants, by `session_parent_idx`.
const SUBTREE: &str = "WITH RECURSIVE tree(id) AS (SELECT value FROM json_each(?1) \
     UNION SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id) ";

fn snapshot_scoped(db: &Path, roots_wanted: Option<&[String]>) -> io::Result<Snapshot> {
    let mut conn = open(db)?;
    let err = |e: rusqlite::Error| sql_error(db, &e);
    let tx = conn.transaction().map_err(err)?;
    let scope = roots_wanted.map(|r| serde_json::to_string(r).expect("strings serialise"));
    let (with, only) = match scope {
        Some(_) => (SUBTREE, "WHERE session_id IN tree "),
        None => ("", ""),
    };
    let params: Vec<&dyn rusqlite::ToSql> = scope.as_ref().map(|s| vec![s as &dyn rusqlite::ToSql]).unwrap_or_default();
    let mut out = Vec::new();
    let mut roots = Vec::new();
    {
        let mut st = tx
            .prepare(&format!(
                "{with}SELECT id, parent_id, title, agent, model, cost, tokens_input, tokens_output, tokens_reasoning, \
                 tokens_cache_read, tokens_cache_write, time_created, time_updated, directory \
                 FROM session {} ORDER BY time_created, id",
                if scope.is_some() { "WHERE id IN tree" } else { "" }
            ))
            .map_err(err)?;
        let mut rows = st.query(params.as_slice()).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let id: String = r.get(0).map_err(err)?;
            let parent: Option<String> = r.get(1).map_err(err)?;
            if parent.is_none() {
                roots.push(id.clone());
            }
            let info = json!({
                "id": id,
                "parentID": parent,
                "title": r.get::<_, Option<String>>(2).map_err(err)?,
                "agent": r.get::<_, Option<String>>(3).map_err(err)?,
                "model": json_column(r.get(4).map_err(err)?),
                "cost": r.get::<_, Option<f64>>(5).map_err(err)?,
                "tokens": {
                    "input": r.get::<_, Option<i64>>(6).map_err(err)?,
                    "output": r.get::<_, Option<i64>>(7).map_err(err)?,
                    "reasoning": r.get::<_, Option<i64>>(8).map_err(err)?,
                    "cache": {"read": r.get::<_, Option<i64>>(9).map_err(err)?, "write": r.get::<_, Option<i64>>(10).map_err(err)?},
                },
                "time": {"created": r.get::<_, Option<i64>>(11).map_err(err)?, "updated": r.get::<_, Option<i64>>(12).map_err(err)?},
                "directory": r.get::<_, Option<String>>(13).map_err(err)?,
            });
            push_record(&mut out, &row_event("session.updated", &id, "info", &info));
        }
    }
    {
        let mut messages =
            tx.prepare(&format!("{with}SELECT id, session_id, data FROM message {only}ORDER BY id")).map_err(err)?;
        let mut parts = tx
            .prepare(&format!("{with}SELECT id, message_id, session_id, data FROM part {only}ORDER BY message_id, id"))
            .map_err(err)?;
        let mut parts = parts.query(params.as_slice()).map_err(err)?;
        let fetch = |rows: &mut rusqlite::Rows<'_>| -> io::Result<Option<PartRow>> {
            rows.next()
                .map_err(err)?
                .map(|r| {
                    Ok((r.get(0).map_err(err)?, r.get(1).map_err(err)?, r.get(2).map_err(err)?, r.get(3).map_err(err)?))
                })
                .transpose()
        };
        let mut next_part = fetch(&mut parts)?;
        let mut rows = messages.query(params.as_slice()).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let id: String = r.get(0).map_err(err)?;
            let session: String = r.get(1).map_err(err)?;
            let info = with_ids(json_column(r.get(2).map_err(err)?), &[("id", &id), ("sessionID", &session)]);
            push_record(&mut out, &row_event("message.updated", &session, "info", &info));
            // Parts of messages that sort before this one have no message row: still handed on.
            while let Some((pid, mid, psession, data)) = next_part.take() {
                if mid > id {
                    next_part = Some((pid, mid, psession, data));
                    break;
                }
                let part = with_ids(json_column(data), &[("id", &pid), ("messageID", &mid), ("sessionID", &psession)]);
                push_record(&mut out, &row_event("message.part.updated", &psession, "part", &part));
                next_part = fetch(&mut parts)?;
            }
        }
        while let Some((pid, mid, psession, data)) = next_part.take() {
            let part = with_ids(json_column(data), &[("id", &pid), ("messageID", &mid), ("sessionID", &psession)]);
            push_record(&mut out, &row_event("message.part.updated", &psession, "part", &part));
            next_part = fetch(&mut parts)?;
        }
    }
    let cursor: i64 = tx
        .query_row("SELECT COALESCE(MAX(rowid), 0) FROM event", [], |r| r.get(0))
        .optional()
        .map_err(err)?
        .unwrap_or(0);
    tx.commit().map_err(err)?;
    if writer(db) == Writer::Dead {
        for root in roots {
            push_record(&mut out, &json!({"opencode": "dead", "sessionID": root}));
        }
    }
    Ok(Snapshot { records: out, cursor })
}

/// A root session as discovery lists it: where it ran and when its subtree last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub id: String,
    pub directory: Option<String>,
    pub created_ms: i64,
    /// The newest `time_updated` in its subtree.
    pub updated_ms: i64,
    /// Its last assistant message has finished (or failed): nothing of the root's own runs.
    pub settled: bool,
}

/// The root sessions with anything in their subtree updated at or after `since_ms` (`None`: all),
/// found from the sessions updated in the window and their ancestors only.
pub fn roots(db: &Path, since_ms: Option<i64>) -> io::Result<Vec<Root>> {
    let conn = open(db)?;
    let err = |e: rusqlite::Error| sql_error(db, &e);
    let mut st = conn
        .prepare_cached(
            "WITH RECURSIVE up(id, parent_id, updated) AS ( \
               SELECT id, parent_id, time_updated FROM session WHERE time_updated >= ?1 \
               UNION SELECT s.id, s.parent_id, u.updated FROM session s JOIN up u ON s.id = u.parent_id) \
             SELECT u.id, s.directory, s.time_created, MAX(u.updated), \
               (SELECT json_extract(m.data, '$.time.completed') IS NOT NULL \
                       OR json_extract(m.data, '$.error') IS NOT NULL \
                  FROM message m WHERE m.session_id = u.id ORDER BY m.id DESC LIMIT 1) \
             FROM up u JOIN session s ON s.id = u.id WHERE u.parent_id IS NULL GROUP BY u.id",
        )
        .map_err(err)?;
    let rows = st
        .query_map([since_ms.unwrap_or(i64::MIN)], |r| {
            Ok(Root {
                id: r.get(0)?,
                directory: r.get(1)?,
                created_ms: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                updated_ms: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                settled: r.get::<_, Option<bool>>(4)?.unwrap_or(false),
            })
        })
        .map_err(err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err)
}

/// Whether an OpenCode process still writes the store.
///
/// Its locks (`locks/<sha>.lock/meta.json`) do not say: they are the lock OpenCode takes to
/// install its plugins (discover::opencode), written late in a run (real 1.18.33: about 4.5 s into
/// a 6.5 s `opencode run`) and left naming the previous, dead process until then. Read as the
/// writer, they ended every session of a second run as interrupted while it ran. A running
/// `opencode` holds the store open (`opencode.db`, `-wal`, `-shm`) from before its first session
/// until it exits, so its open files say it; a lock of another host still says nothing can be
/// known (a store shared over the network).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// An `opencode` process of this user holds the store open.
    Alive,
    /// None does.
    Dead,
    /// No `/proc` to look in, or the store is written from another host too.
    Unknown,
}

/// The state directories whose `locks/` may belong to the store at `db`.
fn lock_dirs(db: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // `<home>/.local/share/opencode/opencode.db` ↔ `<home>/.local/state/opencode/locks`.
    if let Some(share) = db.parent().and_then(Path::parent) {
        if let Some(base) = share.parent() {
            dirs.push(base.join("state").join("opencode").join("locks"));
        }
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        let d = PathBuf::from(state).join("opencode").join("locks");
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

#[derive(serde::Deserialize)]
struct LockMeta {
    hostname: Option<String>,
}

/// Whether a lock of the store names another host.
fn locked_elsewhere(db: &Path) -> bool {
    let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    lock_dirs(db).iter().filter_map(|dir| std::fs::read_dir(dir).ok()).flatten().flatten().any(|entry| {
        std::fs::read_to_string(entry.path().join("meta.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<LockMeta>(&text).ok())
            .and_then(|meta| meta.hostname)
            .is_some_and(|h| h != host)
    })
}

/// Whether a process is OpenCode's (its name or its executable's), not a reader such as swarmtop.
pub fn is_opencode(proc: &Proc, pid: u32) -> bool {
    let comm = std::fs::read_to_string(proc.dir(pid).join("comm")).unwrap_or_default();
    let exe = std::fs::read_link(proc.dir(pid).join("exe")).ok();
    let exe_name = exe.as_ref().and_then(|e| e.file_name()).and_then(|n| n.to_str()).unwrap_or("");
    comm.trim_end().starts_with("opencode") || exe_name.starts_with("opencode")
}

pub fn writer(db: &Path) -> Writer {
    writer_in(&Proc::default(), db)
}

fn writer_in(proc: &Proc, db: &Path) -> Writer {
    if locked_elsewhere(db) {
        return Writer::Unknown;
    }
    let store = proc::canonical(db);
    let mut wanted: HashSet<PathBuf> = HashSet::new();
    for suffix in ["", "-wal"] {
        let mut name = store.clone().into_os_string();
        name.push(suffix);
        wanted.insert(PathBuf::from(name));
    }
    let walk = proc.walk(&wanted);
    // The walk always finds this process: none at all means there is no `/proc` to read.
    if walk.processes.is_empty() {
        return Writer::Unknown;
    }
    if walk.holders.values().flatten().any(|&pid| is_opencode(proc, pid)) { Writer::Alive } else { Writer::Dead }
}

/// Follows a store from an event-log position: each call of [`Follower::poll`] hands on the
/// events written since, as records.
pub struct Follower {
    db: PathBuf,
    conn: Connection,
    cursor: i64,
    version: Option<i64>,
}

impl Follower {
    pub fn new(db: &Path, cursor: i64) -> io::Result<Self> {
        Ok(Self { db: db.to_path_buf(), conn: open(db)?, cursor, version: None })
    }

    /// The root sessions updated at or after `since_ms`.
    fn recent_roots(&self, since_ms: i64) -> io::Result<Vec<String>> {
        let db = &self.db;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        let mut st = self
            .conn
            .prepare_cached("SELECT id FROM session WHERE parent_id IS NULL AND time_updated >= ?1")
            .map_err(err)?;
        let rows = st.query_map([since_ms], |r| r.get::<_, String>(0)).map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// New events since the last call, as records (empty when the store has not changed).
    pub fn poll(&mut self) -> io::Result<Vec<u8>> {
        let db = &self.db;
        let err = |e: rusqlite::Error| sql_error(db, &e);
        // Changes only when another connection commits: an idle store costs this one pragma.
        let version: i64 = self.conn.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(err)?;
        if self.version == Some(version) {
            return Ok(Vec::new());
        }
        self.version = Some(version);
        let mut st = self
            .conn
            .prepare_cached("SELECT rowid, seq, type, data FROM event WHERE rowid > ?1 ORDER BY rowid")
            .map_err(err)?;
        let mut rows = st.query([self.cursor]).map_err(err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            let rowid: i64 = r.get(0).map_err(err)?;
            let seq: Option<i64> = r.get(1).map_err(err)?;
            let kind: Option<String> = r.get(2).map_err(err)?;
            let data: Option<String> = r.get(3).map_err(err)?;
            self.cursor = rowid;
            push_record(
                &mut out,
                &json!({"opencode": "event", "seq": seq, "event": {"type": kind, "properties": json_column(data)}}),
            );
        }
        Ok(out)
    }
}

/// How often a follower looks whether the store's writer still runs (a walk of `/proc`).
const WRITER_LOOK: Duration = Duration::from_secs(1);
/// Roots quiet for longer than this when their writer goes are left alone: they ended long ago.
const DEAD_RECENT_MS: i64 = 10 * 60 * 1000;

/// The store, then its events as they are written, into `each` until it returns `false` or the
/// store cannot be read. When the writer seen running is gone (a SIGKILL of `opencode run`
/// writes nothing, wire.md §9), a `dead` record for every root lately at work: what it left
/// running was killed with it (it stayed running for good in `swarmtop opencode.db`).
pub fn follow(db: &Path, mut each: impl FnMut(Vec<u8>) -> bool) -> io::Result<()> {
    // Looked for before the store is read and handed on: a writer killed while the snapshot is
    // on its way (its reader saw it running and stopped it) must have been seen alive.
    let mut alive = writer(db) == Writer::Alive;
    let snap = snapshot(db)?;
    if !each(snap.records) {
        return Ok(());
    }
    let mut follower = Follower::new(db, snap.cursor)?;
    let mut looked = std::time::Instant::now();
    loop {
        let records = follower.poll()?;
        if !records.is_empty() && !each(records) {
            return Ok(());
        }
        if looked.elapsed() >= WRITER_LOOK {
            looked = std::time::Instant::now();
            match writer(db) {
                Writer::Alive => alive = true,
                Writer::Dead if alive => {
                    alive = false;
                    let mut out = Vec::new();
                    for root in follower.recent_roots(crate::source::recording::unix_ms() - DEAD_RECENT_MS)? {
                        push_record(&mut out, &json!({"opencode": "dead", "sessionID": root}));
                    }
                    if !out.is_empty() && !each(out) {
                        return Ok(());
                    }
                }
                Writer::Dead | Writer::Unknown => {}
            }
        }
        std::thread::sleep(POLL);
    }
}

/// A reader over records sent from another thread: the followed store as a byte stream, for the
/// live sources that read one.
pub struct ChannelReader {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl io::Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.rx.recv() {
                Ok(b) => {
                    self.buf = b;
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Follows the store on a thread of its own; the reader ends when following fails (its error is
/// the last line, as a record the pipeline counts) or the reader is dropped.
pub fn follow_reader(db: &Path) -> io::Result<ChannelReader> {
    // Fail now, not on the thread, when the store cannot be opened at all.
    drop(open(db)?);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(64);
    let db = db.to_path_buf();
    std::thread::Builder::new().name("source-opencode".into()).spawn(move || {
        if let Err(e) = follow(&db, |records| tx.send(records).is_ok()) {
            let line = json!({"opencode": "error", "error": e.to_string()});
            let mut out = Vec::new();
            push_record(&mut out, &line);
            let _ = tx.send(out);
        }
    })?;
    Ok(ChannelReader { rx, buf: Vec::new(), pos: 0 })
}

/// `opencode serve`'s address as the command line names it: `http://HOST:PORT` (loopback, plain
/// HTTP: the server has no TLS).
pub fn server_of(input: &str) -> Option<String> {
    let rest = input.strip_prefix("http://")?;
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    Some(authority.to_owned())
}

/// A body in HTTP/1.1 chunked transfer coding, as the plain bytes it carries.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: io::BufRead> io::Read for Chunked<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            // The CRLF that ends the previous chunk, then the size line.
            while line.trim().is_empty() {
                line.clear();
                if self.inner.read_line(&mut line)? == 0 {
                    return Ok(0);
                }
            }
            let size = line.trim().split(';').next().unwrap_or("0");
            self.left = usize::from_str_radix(size, 16).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let n = out.len().min(self.left);
        let n = self.inner.read(&mut out[..n])?;
        self.left -= n;
        Ok(n)
    }
}

/// Sends a GET and reads the response head; the body follows in the returned reader.
fn get(authority: &str, path: &str, accept: &str) -> io::Result<Box<dyn io::BufRead + Send>> {
    use std::io::{BufRead, Write};
    let stream = std::net::TcpStream::connect(authority)?;
    // A server still starting may accept and not answer: the head must come in time.
    stream.set_read_timeout(Some(HEAD_TIMEOUT))?;
    let mut w = stream.try_clone()?;
    write!(w, "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n")?;
    w.flush()?;
    let mut r = io::BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line)?;
    if line.split_whitespace().nth(1) != Some("200") {
        return Err(io::Error::other(format!("GET http://{authority}{path}: {}", line.trim())));
    }
    let (mut chunked, mut len) = (false, None);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            chunked |= k.trim().eq_ignore_ascii_case("transfer-encoding") && v.trim().eq_ignore_ascii_case("chunked");
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse::<u64>().ok();
            }
        }
    }
    if accept == "text/event-stream" {
        // Events come when they come, but a heartbeat every 10 s: silence this long is a dead link.
        w.set_read_timeout(Some(SSE_SILENCE))?;
    }
    // The server may keep the connection open whatever we ask: a body ends by its length.
    Ok(match (chunked, len) {
        (true, _) => Box::new(io::BufReader::new(Chunked { inner: r, left: 0, done: false })),
        (false, Some(n)) => Box::new(io::BufReader::new(io::Read::take(r, n))),
        (false, None) => Box::new(r),
    })
}

fn sse_record(event: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    push_record(&mut out, &json!({"opencode": "sse", "event": event}));
    out
}

/// Sessions whose messages a resync fetches at most (the newest first); the rest keep what the
/// stream gave them and are counted in [`Link::Restored`].
pub const MAX_RESYNC_SESSIONS: usize = 256;
/// First wait before reconnecting to a server; doubled after each failure up to [`BACKOFF_MAX`].
pub const BACKOFF_FIRST: Duration = Duration::from_millis(250);
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long a probe of a listening socket may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// A JSON body from the server, or `None`.
fn get_json(authority: &str, path: &str) -> Option<Value> {
    serde_json::from_reader(get(authority, path, "application/json").ok()?).ok()
}

/// Whether an OpenCode server answers at `authority`: `GET /session/status` gives an object.
pub fn probe(authority: &str) -> bool {
    use std::io::{BufRead, Write};
    let Ok(addr) = authority.parse::<std::net::SocketAddr>() else { return false };
    let Ok(stream) = std::net::TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) else { return false };
    if stream.set_read_timeout(Some(PROBE_TIMEOUT)).is_err() {
        return false;
    }
    let Ok(mut w) = stream.try_clone() else { return false };
    if write!(
        w,
        "GET /session/status HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut r = io::BufReader::new(stream);
    let mut line = String::new();
    if r.read_line(&mut line).is_err() || line.split_whitespace().nth(1) != Some("200") {
        return false;
    }
    let mut json = false;
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            json |= k.trim().eq_ignore_ascii_case("content-type") && v.contains("application/json");
        }
    }
    json
}

/// The sessions a server lists as busy (`GET /session/status`); `None` when no OpenCode server
/// answers there (its answer is an object), so one request both probes a listener and reads it.
pub fn session_status(authority: &str) -> Option<Vec<String>> {
    match get_json(authority, "/session/status")? {
        Value::Object(statuses) => Some(
            statuses
                .into_iter()
                .filter(|(_, s)| s.get("type").and_then(Value::as_str).is_some_and(|t| t != "idle"))
                .map(|(id, _)| id)
                .collect(),
        ),
        _ => None,
    }
}

/// What the server holds (its sessions, their messages and parts, who is busy), in the stream's
/// own event shapes, so the tree is whole before the first live event and whole again after a
/// reconnect. Replaying what was seen already adds nothing: usage is keyed by message, cost is
/// the session's running total, items are keyed by part. Returns the records and how many
/// sessions' messages were left out by [`MAX_RESYNC_SESSIONS`].
fn server_state(authority: &str) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut skipped = 0;
    if let Some(Value::Array(mut sessions)) = get_json(authority, "/session") {
        // Parents before children: by creation time.
        sessions.sort_by_key(|s| s.pointer("/time/created").and_then(Value::as_i64).unwrap_or(0));
        let mut newest: Vec<(i64, String)> = sessions
            .iter()
            .filter_map(|s| {
                let updated = s.pointer("/time/updated").and_then(Value::as_i64).unwrap_or(0);
                Some((updated, s.get("id")?.as_str()?.to_owned()))
            })
            .collect();
        newest.sort_by(|a, b| b.cmp(a));
        skipped = newest.len().saturating_sub(MAX_RESYNC_SESSIONS);
        newest.truncate(MAX_RESYNC_SESSIONS);
        let fetch: HashSet<String> = newest.into_iter().map(|(_, id)| id).collect();
        for info in sessions {
            let id = info.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
            out.extend(sse_record(&json!({"type": "session.updated", "properties": {"info": info}})));
            if !fetch.contains(&id) {
                continue;
            }
            let path = format!("/session/{}/message", percent_encoding::utf8_percent_encode(&id, PATH_SEGMENT));
            let Some(Value::Array(messages)) = get_json(authority, &path) else { continue };
            for m in messages {
                if let Some(info) = m.get("info") {
                    out.extend(sse_record(
                        &json!({"type": "message.updated", "properties": {"sessionID": id, "info": info}}),
                    ));
                }
                for part in m.get("parts").and_then(Value::as_array).into_iter().flatten() {
                    out.extend(sse_record(
                        &json!({"type": "message.part.updated", "properties": {"sessionID": id, "part": part}}),
                    ));
                }
            }
        }
    }
    if let Some(Value::Object(statuses)) = get_json(authority, "/session/status") {
        for (session, status) in statuses {
            out.extend(sse_record(
                &json!({"type": "session.status", "properties": {"sessionID": session, "status": status}}),
            ));
        }
    }
    (out, skipped)
}

/// Characters escaped in one path segment.
const PATH_SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-').remove(b'.').remove(b'~');

/// Reads server-sent events: each event's `data:` lines, joined, as a JSON value (text that is
/// not JSON as a string, for the pipeline to count rather than to lose). `Ok(true)`: the stream
/// ended; `Ok(false)`: `each` wanted no more.
fn read_sse(body: &mut dyn io::BufRead, mut each: impl FnMut(Value) -> bool) -> io::Result<bool> {
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if body.read_line(&mut line)? == 0 {
            return Ok(true);
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if let Some(d) = l.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        } else if l.is_empty() && !data.is_empty() {
            let event = serde_json::from_str(&data).unwrap_or(Value::String(std::mem::take(&mut data)));
            data.clear();
            if !each(event) {
                return Ok(false);
            }
        }
    }
}

/// How a server stream's connection goes, told beside its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// The stream broke; the next attempt is in `retry_in`.
    Lost { retry_in: Duration, reason: String },
    /// Connected again after `down`, and resynced from the server's API; `skipped` sessions kept
    /// only what the stream gave them ([`MAX_RESYNC_SESSIONS`]).
    Restored { down: Duration, skipped: usize },
}

/// A server stream's connection as the live events a screen shows: the status while it is down,
/// a notice when it is back. `false` once the consumer has gone.
pub fn link_events(tx: tokio::sync::mpsc::Sender<super::live::Event>) -> impl FnMut(Link) -> bool + Send + 'static {
    use super::live::Event;
    move |link| {
        let event = match link {
            Link::Lost { retry_in, reason } => Event::Disconnected { retry_in, reason },
            Link::Restored { down, skipped } => {
                let text = format!("reconnected after {:.1}s; resynced from the server", down.as_secs_f64());
                Event::Notice(crate::wire::sanitize_line(&match skipped {
                    0 => text,
                    n => format!("{text} ({n} older sessions not refetched)"),
                }))
            }
        };
        tx.blocking_send(event).is_ok()
    }
}

/// What a server stream hands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    /// Everything: what the server holds, then every event (the server is the only source).
    All,
    /// Only what the store does not have: text as it streams and the sessions' busy, retry and
    /// idle statuses (the store, followed too, gives the rows and their figures).
    Deltas,
}

/// Whether a stream event is one [`Serve::Deltas`] hands on.
fn is_delta(event: &Value) -> bool {
    matches!(event.get("type").and_then(Value::as_str), Some("message.part.delta" | "session.status" | "session.idle"))
}

/// `opencode serve`'s `/event` stream on a thread of its own, as records: first what the server
/// holds (with [`Serve::All`]), then every event as it comes. When the stream breaks (the server
/// restarts, the connection drops), `link` hears of it and the thread reconnects with backoff,
/// resyncing from the server's API; it stops when `link` returns `false` or the reader is dropped.
/// The first connection is made before this returns: an address that does not answer is an error.
pub fn server_reader(
    authority: &str,
    serve: Serve,
    mut link: impl FnMut(Link) -> bool + Send + 'static,
) -> io::Result<ChannelReader> {
    let mut body = get(authority, "/event", "text/event-stream")?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(256);
    let authority = authority.to_owned();
    std::thread::Builder::new().name("source-opencode-serve".into()).spawn(move || {
        let each = |records: Vec<u8>| tx.send(records).is_ok();
        let mut restored: Option<std::time::Instant> = None;
        loop {
            let mut skipped = 0;
            if serve == Serve::All {
                let (state, left_out) = server_state(&authority);
                skipped = left_out;
                if !each(state) {
                    return;
                }
            }
            if let Some(lost) = restored.take() {
                if !link(Link::Restored { down: lost.elapsed(), skipped }) {
                    return;
                }
            }
            let ended = read_sse(&mut body, |event| match serve {
                Serve::Deltas if !is_delta(&event) => true,
                _ => each(sse_record(&event)),
            });
            let reason = match ended {
                Ok(false) => return,
                Ok(true) => "the server closed the stream".to_owned(),
                Err(e) => e.to_string(),
            };
            let lost = std::time::Instant::now();
            let mut wait = BACKOFF_FIRST;
            body = loop {
                if !link(Link::Lost { retry_in: wait, reason: reason.clone() }) {
                    return;
                }
                std::thread::sleep(wait);
                match get(&authority, "/event", "text/event-stream") {
                    Ok(b) => break b,
                    Err(_) => wait = (wait * 2).min(BACKOFF_MAX),
                }
            };
            restored = Some(lost);
        }
    })?;
    Ok(ChannelReader { rx, buf: Vec::new(), pos: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store with the columns the reader uses: root A (old) with child A1 (recent), root B
    /// (recent), root C (old, nothing recent).
    fn store(dir: &Path) -> PathBuf {
        let db = dir.join(STORE_NAME);
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT, agent TEXT, model TEXT, \
               cost REAL, tokens_input INT, tokens_output INT, tokens_reasoning INT, tokens_cache_read INT, \
               tokens_cache_write INT, time_created INT, time_updated INT, directory TEXT);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT);
             CREATE TABLE event (id TEXT, aggregate_id TEXT, seq INT, type TEXT, data TEXT);
             INSERT INTO session VALUES ('ses_a', NULL, 'A', 'build', NULL, 0, 0, 0, 0, 0, 0, 100, 100, '/w/a');
             INSERT INTO session VALUES ('ses_a1', 'ses_a', 'A1', 'general', NULL, 0, 0, 0, 0, 0, 0, 150, 5000, '/w/a');
             INSERT INTO session VALUES ('ses_b', NULL, 'B', 'build', NULL, 0, 0, 0, 0, 0, 0, 4000, 4500, '/w/b');
             INSERT INTO session VALUES ('ses_c', NULL, 'C', 'build', NULL, 0, 0, 0, 0, 0, 0, 10, 20, '/w/c');
             INSERT INTO message VALUES ('msg_1', 'ses_a1', '{\"role\":\"assistant\",\"time\":{\"completed\":5000}}');
             INSERT INTO message VALUES ('msg_2', 'ses_c', '{\"role\":\"assistant\"}');
             INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_a1', '{\"type\":\"text\",\"text\":\"hi\"}');
             INSERT INTO part VALUES ('prt_2', 'msg_2', 'ses_c', '{\"type\":\"text\",\"text\":\"other\"}');",
        )
        .unwrap();
        db
    }

    #[test]
    fn a_window_finds_roots_by_their_subtree_and_reads_nothing_older() {
        let dir = tempfile::tempdir().unwrap();
        let db = store(dir.path());
        let mut found = roots(&db, Some(1000)).unwrap();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        let ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["ses_a", "ses_b"], "A by its recent child, B itself; C is outside");
        assert_eq!(found[0].updated_ms, 5000, "a root's activity is its subtree's newest");
        assert_eq!(found[0].directory.as_deref(), Some("/w/a"));
        assert_eq!(roots(&db, None).unwrap().len(), 3);
    }

    #[test]
    fn one_session_of_a_store_is_its_subtree_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = store(dir.path());
        let snap = snapshot_of(&db, &["ses_a".to_owned()]).unwrap();
        let text = String::from_utf8(snap.records).unwrap();
        assert!(text.contains("\"ses_a1\"") && text.contains("\"hi\""), "{text}");
        assert!(!text.contains("ses_b") && !text.contains("ses_c") && !text.contains("other"), "{text}");
        let whole = String::from_utf8(snapshot(&db).unwrap().records).unwrap();
        assert!(whole.contains("ses_b") && whole.contains("other"));
    }
}
