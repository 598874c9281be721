//! The team store on PostgreSQL (issue 21): the run store's schema and verbs on a database many
//! machines write into at once, each under its own name (`machine` on every source and session),
//! and read fleet-wide (a [`Filter`]'s `machine` narrows to one).
//!
//! The driver is `postgres` (the synchronous client over `tokio-postgres`, maintained with it): the
//! store's [`Backend`] is synchronous, and the sync writes from one thread; no macros, no database
//! needed to build. Connections are plain TCP or a Unix socket (no TLS: a remote server is reached
//! through an SSH tunnel or a private network).
//!
//! - [`schema`]: the tables and their versions, migrated by many machines at once;
//! - `write`: a source replaced whole, and the rows both ways write;
//! - `update`: a source stored before written as what changed (a busy session's sync costs its new
//!   lines, not its size);
//! - `read`: what `history`, `report` and `search` ask;
//! - `text`: text parameters as PostgreSQL takes them.
//!
//! Writers take one transaction-level advisory lock: item text is kept once for the whole fleet,
//! counted by reference, and two machines adding and releasing the same texts in other orders
//! would deadlock; a batch is short (16 sources), so machines read their files at once and take
//! turns only to write. One sync per machine at a time: a session-level advisory lock keyed by
//! the machine's name, held on a connection of its own (the server releases it when the process
//! dies).

mod read;
pub mod schema;
mod text;
mod update;
mod write;

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr, eyre};
use postgres::{Client, NoTls};
use sha2::{Digest, Sha256};

pub use self::schema::{FutureSchema, LATEST, STEPS, version};
use super::backend::{Backend, Lookup, Pruned, SyncLock, Totals, Written};
use super::query::Filter;
use super::rows::{ActRow, Hit, ItemRow, Known, SessionInfo, SourceRows, UsageFact};
use crate::wire::sanitize_line;

/// How long connecting may take before the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the database at `url` (its password never shown in an error).
pub fn connect(url: &str) -> Result<Client> {
    let shown = || sanitize_line(&super::location::redact(url)).to_string();
    let mut config: postgres::Config = url.parse().map_err(|e| eyre!("the team store's URL {}: {e}", shown()))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("swarmtop");
    }
    config.connect(NoTls).wrap_err_with(|| format!("connecting to the team store {}", shown()))
}

/// Connects to the database at `url` and brings its schema up to date; a database a newer
/// swarmtop wrote is refused untouched.
pub fn open(url: &str) -> Result<Client> {
    let mut client = connect(url)?;
    schema::migrate(&mut client)?;
    Ok(client)
}

/// The team store as this machine sees it.
pub struct Postgres {
    client: RefCell<Client>,
    url: String,
    machine: String,
}

impl Postgres {
    /// Opens the database at `url` for the machine `machine`.
    pub fn open(url: &str, machine: &str) -> Result<Self> {
        Ok(Self { client: RefCell::new(open(url)?), url: url.to_owned(), machine: machine.to_owned() })
    }

    pub fn machine(&self) -> &str {
        &self.machine
    }
}

/// The sync lock's key: the machine's name, digested to the 64 bits an advisory lock takes.
fn sync_key(machine: &str) -> i64 {
    let digest = Sha256::digest(format!("swarmtop sync\0{machine}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

impl Backend for Postgres {
    fn known(&self, key: &str) -> Result<Option<Known>> {
        read::known(&mut self.client.borrow_mut(), &self.machine, key)
    }

    fn write(&mut self, batch: &[SourceRows]) -> Result<Written> {
        let mut tx = self.client.get_mut().transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&write::WRITE_LOCK])?;
        let mut written = Written::default();
        for rows in batch {
            let old = write::stored(&mut tx, &self.machine, &rows.source.key)?;
            // Read again as it grew (the daemon's busy session): only what changed is written. A
            // pruned source kept its files only: it is written whole again, as is what `update`
            // cannot write as changes.
            let changed = match old {
                Some((id, false)) => update::update(&mut tx, &self.machine, rows, id)?,
                _ => None,
            };
            let w = match changed {
                Some(w) => w,
                None => write::replace(&mut tx, &self.machine, rows, old.map(|(id, _)| id))?,
            };
            written.sessions += w.sessions;
            written.duplicates += w.duplicates;
            written.runs += w.runs;
            written.rows += w.rows;
        }
        tx.commit()?;
        Ok(written)
    }

    fn mark_missing(&mut self, key: &str, missing: &[PathBuf]) -> Result<()> {
        write::mark_missing(self.client.get_mut(), &self.machine, key, missing)
    }

    fn present(&self) -> Result<Vec<(String, PathBuf)>> {
        let rows = self.client.borrow_mut().query(
            "SELECT src.key, f.path FROM files f JOIN sources src ON src.id = f.source_id
             WHERE src.machine = $1 AND f.present",
            &[&self.machine],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), PathBuf::from(r.get::<_, String>(1)))).collect())
    }

    fn folders(&self) -> Result<Vec<PathBuf>> {
        let rows = self.client.borrow_mut().query(
            "SELECT DISTINCT regexp_replace(f.path, '[^/]*$', '') FROM files f JOIN sources src ON src.id = f.source_id
             WHERE src.machine = $1 AND f.present",
            &[&self.machine],
        )?;
        Ok(rows.iter().map(|r| PathBuf::from(r.get::<_, String>(0))).collect())
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        let row = self
            .client
            .borrow_mut()
            .query_opt("SELECT value FROM meta WHERE machine = $1 AND key = $2", &[&self.machine, &key])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.client.get_mut().execute(
            "INSERT INTO meta (machine, key, value) VALUES ($1, $2, $3)
             ON CONFLICT (machine, key) DO UPDATE SET value = excluded.value",
            &[&self.machine, &key, &value],
        )?;
        Ok(())
    }

    fn sessions(&self, filter: &Filter) -> Result<Vec<SessionInfo>> {
        read::sessions(&mut self.client.borrow_mut(), filter)
    }

    fn record_act(&mut self, a: &ActRow) -> Result<()> {
        self.client.get_mut().execute(
            "INSERT INTO acts (machine, at_ms, kind, by, via, session, target, detail, outcome)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[&self.machine, &a.at_ms, &a.kind, &a.by, &a.via, &a.session, &a.target, &a.detail, &a.outcome],
        )?;
        Ok(())
    }

    fn acts(&self, session: &str) -> Result<Vec<ActRow>> {
        let rows = self.client.borrow_mut().query(
            "SELECT at_ms, kind, by, via, session, target, detail, outcome FROM acts
             WHERE session = $1 ORDER BY at_ms, id",
            &[&session],
        )?;
        Ok(rows
            .iter()
            .map(|r| ActRow {
                at_ms: r.get(0),
                kind: r.get(1),
                by: r.get(2),
                via: r.get(3),
                session: r.get(4),
                target: r.get(5),
                detail: r.get(6),
                outcome: r.get(7),
            })
            .collect())
    }

    fn session(&self, id: &str) -> Result<Lookup> {
        read::session(&mut self.client.borrow_mut(), id)
    }

    fn items(&self, session: &str, thread: &str) -> Result<Vec<ItemRow>> {
        read::items(&mut self.client.borrow_mut(), session, thread)
    }

    fn usage(&self, filter: &Filter, each: &mut dyn FnMut(UsageFact)) -> Result<()> {
        read::usage(&mut self.client.borrow_mut(), filter, each)
    }

    fn search(&self, words: &[String], filter: &Filter, limit: usize) -> Result<Vec<Hit>> {
        read::search(&mut self.client.borrow_mut(), words, filter, limit)
    }

    fn prune(&mut self, before_ms: i64) -> Result<Pruned> {
        write::prune(self.client.get_mut(), &self.machine, before_ms)
    }

    fn settle(&mut self, _wrote: bool) -> Result<()> {
        // The server folds its own log.
        Ok(())
    }

    fn size(&self) -> Result<u64> {
        let bytes: i64 = self.client.borrow_mut().query_one("SELECT pg_database_size(current_database())", &[])?.get(0);
        Ok(u64::try_from(bytes).unwrap_or(0))
    }

    fn totals(&self) -> Result<Totals> {
        let mut client = self.client.borrow_mut();
        let mut count = |sql: &str| -> Result<u64> {
            let n: i64 = client.query_one(sql, &[])?.get(0);
            Ok(u64::try_from(n).unwrap_or(0))
        };
        Ok(Totals {
            sessions: count("SELECT count(*) FROM sessions")?,
            runs: count("SELECT count(*) FROM runs")?,
            indexed: count("SELECT coalesce(sum(bytes), 0)::BIGINT FROM sources")?,
        })
    }

    fn files(&self, session: &str) -> Result<Vec<(PathBuf, bool)>> {
        // This machine's files only: another machine's paths name nothing here.
        let rows = self.client.borrow_mut().query(
            "SELECT f.path, f.present FROM files f JOIN sessions s ON s.source_id = f.source_id
             WHERE s.thread = $1 AND s.machine = $2 ORDER BY f.path",
            &[&session, &self.machine],
        )?;
        Ok(rows.iter().map(|r| (PathBuf::from(r.get::<_, String>(0)), r.get(1))).collect())
    }

    fn sessions_of(&self, paths: &[PathBuf]) -> Result<Vec<String>> {
        // This machine's files only, as `files`.
        let paths: Vec<String> = paths.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let rows = self.client.borrow_mut().query(
            "SELECT DISTINCT s.thread FROM sessions s JOIN files f ON f.source_id = s.source_id
             WHERE f.path = ANY($1) AND s.machine = $2 ORDER BY s.thread",
            &[&paths, &self.machine],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn dump(&self) -> Result<String> {
        read::dump(&mut self.client.borrow_mut())
    }

    fn lock(&self, wait: bool) -> Result<Option<SyncLock>> {
        // A connection of its own: the lock lives as long as it (and the process) does.
        let mut holder = connect(&self.url)?;
        let key = sync_key(&self.machine);
        if wait {
            holder.execute("SELECT pg_advisory_lock($1)", &[&key])?;
        } else {
            let got: bool = holder.query_one("SELECT pg_try_advisory_lock($1)", &[&key])?.get(0);
            if !got {
                return Ok(None);
            }
        }
        Ok(Some(SyncLock::new(holder)))
    }
}
