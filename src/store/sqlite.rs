//! The embedded backend: one SQLite file (WAL), owned by the user and by no one else.
//!
//! Every write is one transaction: a source is written whole or not at all, so a sync killed at
//! any point leaves the store as it was before that source, and the next sync reads it again. A
//! source stored before is written as what changed (`update`): a busy session's sync costs its new
//! lines, not its size.
//! Item text is kept once per distinct text (by its SHA-256), counted by reference, behind an
//! FTS5 index kept by triggers.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr, eyre};
use nix::fcntl::{Flock, FlockArg};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params, params_from_iter};

use super::backend::{Backend, Lookup, Pruned, SyncLock, Totals, Written};
use super::query::Filter;
use super::rows::{
    ActRow, Figures, FileState, Hit, ItemRow, Known, RunInfo, RunRow, SessionInfo, SessionRow, SessionView, SourceRows,
    UsageFact, UsageRow,
};
use super::schema;

mod update;
use crate::model::prices::Pico;
use crate::model::{AgentOp, Tokens};
use crate::wire::{Clean, sanitize, sanitize_line};

/// How long a write waits for another process's write to end.
const BUSY: Duration = Duration::from_secs(30);

/// A store from a newer swarmtop: its schema is past what this one knows.
#[derive(Debug)]
pub struct FutureSchema {
    pub path: PathBuf,
    pub found: usize,
    pub known: usize,
}

impl std::fmt::Display for FutureSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the run store {} was written by a newer swarmtop (schema version {}; this one knows up to {}): \
             upgrade swarmtop, or use another store with --store",
            sanitize_line(&self.path.display().to_string()),
            self.found,
            self.known
        )
    }
}

impl std::error::Error for FutureSchema {}

pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
    /// Created by this process and not synced to disk yet (`synchronous=OFF`) until its first
    /// sync ends.
    fresh: bool,
}

impl Sqlite {
    /// Opens the store at `path`, creating it (and its folder, for the user alone) if it does
    /// not exist, and brings its schema up to date; refuses a store that is not the user's, or
    /// that a newer swarmtop wrote.
    pub fn open(path: &Path) -> Result<Self> {
        let shown = || sanitize_line(&path.display().to_string()).to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .wrap_err_with(|| format!("creating {}", sanitize_line(&dir.display().to_string())))?;
        }
        // Created for the user alone before SQLite opens it (its -wal and -shm take its mode).
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .wrap_err_with(|| format!("opening the run store {}", shown()))?;
        trust(path)?;
        let mut conn = Connection::open(path).wrap_err_with(|| format!("opening the run store {}", shown()))?;
        conn.busy_timeout(BUSY)?;
        // Read before anything is written: a newer schema is refused untouched.
        let version: usize = conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))?.try_into().unwrap_or(0);
        if version > schema::LATEST {
            return Err(FutureSchema { path: path.to_owned(), found: version, known: schema::LATEST }.into());
        }
        // A new store holds nothing to lose: it is not synced to disk until its first sync is over
        // (`settle`). A process killed midway leaves it as consistent as ever (what it wrote is the
        // kernel's); only a power cut in those seconds could spoil it, and everything in it is still
        // in the agents' files. The waits for the disk were a tenth of a first `report daily`'s wall
        // time (six syncs to disk creating the store, three folding the log in at the end: perf trace).
        let fresh = version == 0;
        conn.pragma_update(None, "synchronous", if fresh { "OFF" } else { "NORMAL" })?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        if fresh {
            // Lets a prune give pages back to the file system. Set on the empty store before the log:
            // each was a transaction of its own through a rollback journal (four syncs to disk, some
            // 15 to 25 ms of a first `report`'s wall time, strace); in the log, a vacuum of the empty
            // store sets it, and its syncs are the log's first ones, which the first write had anyway.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
            conn.execute_batch("VACUUM")?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // The text index's pages are touched all over by a sync: kept in memory (at most this much);
        // statement journals in memory too, and the log folded into the store once per sync
        // (`settle`), not every thousand pages.
        conn.pragma_update(None, "cache_size", -32_768)?;
        // Room for every statement a sync's writer uses, each length of a many-row insert included:
        // past rusqlite's 16, they pushed each other out and were prepared again (perf).
        conn.set_prepared_statement_cache_capacity(64);
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.pragma_update(None, "wal_autocheckpoint", 16_384)?;
        if version < schema::LATEST {
            // Two processes opening a new store at once would both create its tables: one updates
            // it, the other waits for it and finds it up to date (the version is read again inside).
            let file = lock_file(path, ".migrate-lock").wrap_err("opening the run store's update lock")?;
            let _updating = Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, e)| eyre!("locking the run store for an update: {e}"))?;
            schema::MIGRATIONS.to_latest(&mut conn).wrap_err_with(|| format!("updating the run store {}", shown()))?;
        }
        Ok(Self { conn, path: path.to_owned(), fresh })
    }
}

/// The file beside the store named by `suffix`, for the user alone: what a lock is taken on.
fn lock_file(store: &Path, suffix: &str) -> Result<File> {
    let mut path = store.to_path_buf().into_os_string();
    path.push(suffix);
    Ok(OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&path)?)
}

/// A store is trusted only when the user owns it and no one else may write it.
fn trust(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path)?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(eyre!(
            "the run store {} belongs to another user (uid {}): swarmtop uses only a store of its own user's",
            sanitize_line(&path.display().to_string()),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(eyre!(
            "the run store {} may be written by other users (mode {:o}): `chmod 600` it to use it",
            sanitize_line(&path.display().to_string()),
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// An unsigned figure in a signed INTEGER column, bit for bit: a hostile 2^64−1 tokens comes
/// back as it went in (the store never sums in SQL; sums are made exactly, in Rust).
fn int(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

fn uint(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// Money as the exact decimal count of pico-dollars (128 bits do not fit an INTEGER column).
fn pico(p: Pico) -> String {
    p.0.to_string()
}

/// A pico-dollar column; what is not a number (a store someone edited) is nothing.
fn pico_at(r: &Row<'_>, at: usize) -> rusqlite::Result<Pico> {
    let text: String = r.get(at)?;
    Ok(Pico(text.parse().unwrap_or(0)))
}

fn tokens_params(t: &Tokens) -> [i64; 7] {
    [
        int(t.input),
        int(t.cached_input),
        int(t.cache_write),
        int(t.cache_write_1h),
        int(t.output),
        int(t.reasoning_output),
        int(t.total),
    ]
}

/// Columns of tokens by kind, in `tokens_params` order.
const TOKENS: &str = "t_input, t_cached, t_cache_write, t_cache_write_1h, t_output, t_reasoning, t_total";

/// The seven token columns starting at `at`, as the model's figures.
fn tokens_at(r: &Row<'_>, at: usize) -> rusqlite::Result<Tokens> {
    let g = |i: usize| r.get::<_, i64>(at + i).map(uint);
    Ok(Tokens {
        input: g(0)?,
        cached_input: g(1)?,
        cache_write: g(2)?,
        cache_write_1h: g(3)?,
        output: g(4)?,
        reasoning_output: g(5)?,
        total: g(6)?,
    })
}

/// Text read back from the store: a file is input like any other, so it is sanitised as it
/// comes in.
fn clean(r: &Row<'_>, at: usize) -> rusqlite::Result<Clean> {
    Ok(sanitize(&r.get::<_, Option<String>>(at)?.unwrap_or_default()))
}

fn clean_opt(r: &Row<'_>, at: usize) -> rusqlite::Result<Option<Clean>> {
    Ok(r.get::<_, Option<String>>(at)?.map(|s| sanitize(&s)))
}

/// `?` placeholders for the filter's four parameters, from `?first` on: `since`, `until`,
/// `agent`, `project`, applied to the given time, agent and project expressions.
fn filter_sql(first: usize, time: &str, agent: &str, project: &str) -> String {
    let (a, b, c, d) = (first, first + 1, first + 2, first + 3);
    format!(
        "(?{a} IS NULL OR {time} >= ?{a}) AND (?{b} IS NULL OR {time} < ?{b}) AND (?{c} IS NULL OR {agent} = ?{c}) \
         AND (?{d} IS NULL OR instr(coalesce({project}, ''), ?{d}) > 0)"
    )
}

/// The filter's `since`, `until`, `agent` and `project`, as [`filter_sql`] takes them.
type FilterArgs<'a> = (Option<i64>, Option<i64>, Option<&'a str>, Option<&'a str>);

fn filter_params(f: &Filter) -> Result<FilterArgs<'_>> {
    if let Some(machine) = &f.machine {
        return Err(eyre!(
            "--machine {} filters a team store (--store postgres://…): a file store holds this machine's sessions only",
            sanitize_line(machine)
        ));
    }
    Ok((f.since_ms, f.until_ms, f.agent.as_deref(), f.project.as_deref()))
}

/// SQL: whether the run's `whole` (a brief or an answer) starts with the item text `part`. Both
/// are capped (an item's text shorter than a brief: `…` where it was cut), and a root's brief is
/// its first message trimmed.
fn holds(whole: &str, part: &str) -> String {
    format!("coalesce(instr({whole}, trim(rtrim({part}, '…'), ' ' || char(9) || char(10) || char(13))), 0) = 1")
}

/// The words as an FTS5 query that every one of them must match, each quoted: what a person types
/// (`cargo test`, `don't`, `a-b`, `NOT`) is words to find, never query syntax.
fn fts_query(words: &[String]) -> String {
    words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect::<Vec<_>>().join(" ")
}

impl Sqlite {
    /// Gives back the text the items of the runs matched by `runs_where` (over `runs r`) hold;
    /// [`Self::collect`] deletes what no item holds any more once those items are gone.
    fn release(tx: &Transaction<'_>, runs_where: &str, arg: i64) -> Result<()> {
        Self::released(tx)?;
        tx.execute(
            &format!(
                "INSERT INTO released SELECT i.text_id FROM items i JOIN runs r ON r.id = i.run_id \
                 WHERE {runs_where} AND i.text_id IS NOT NULL"
            ),
            [arg],
        )?;
        Ok(())
    }

    /// The table of text ids given back, until [`Self::collect`].
    fn released(tx: &Transaction<'_>) -> Result<()> {
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS released(id INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS temp.released_id ON released(id);",
        )?;
        Ok(())
    }

    /// Deletes the released text no item holds any more (after the items that held it went).
    fn collect(tx: &Transaction<'_>) -> Result<()> {
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS released(id INTEGER NOT NULL);
             UPDATE texts SET refs = refs - (SELECT count(*) FROM released WHERE released.id = texts.id)
               WHERE id IN (SELECT id FROM released);
             DELETE FROM texts WHERE id IN (SELECT id FROM released) AND refs <= 0;
             DELETE FROM released;",
        )?;
        Ok(())
    }

    fn insert_source(tx: &Transaction<'_>, rows: &SourceRows) -> Result<i64> {
        let s = &rows.source;
        let id = tx
            .prepare_cached(
                "INSERT INTO sources(key, place, agent, project, fingerprint, synced_ms, lines, bytes, format, error,
                                 stats_json, tree_text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id",
            )?
            .query_row(
                params![
                    s.key,
                    s.place,
                    s.agent,
                    s.project,
                    s.fingerprint,
                    rows.synced_ms,
                    int(rows.lines),
                    int(rows.bytes),
                    rows.format,
                    rows.error,
                    rows.stats_json,
                    rows.tree_text
                ],
                |r| r.get(0),
            )?;
        Self::insert_files(tx, id, &s.files)?;
        Ok(id)
    }

    fn insert_files(tx: &Transaction<'_>, id: i64, files: &[FileState]) -> Result<()> {
        let mut st = tx.prepare_cached(
            "INSERT INTO files(source_id, path, dev, ino, size, mtime_ns, head) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for f in files {
            st.execute(params![
                id,
                f.path.to_string_lossy(),
                int(f.dev),
                int(f.ino),
                int(f.size),
                f.mtime_ns,
                &f.head[..]
            ])?;
        }
        Ok(())
    }

    /// The session's row id; `None` when another source already holds a session of that agent
    /// and id (a tee's recording of a session whose rollouts were indexed first).
    fn insert_session(
        tx: &Transaction<'_>,
        source: i64,
        agent: &str,
        project: Option<&str>,
        s: &SessionRow,
    ) -> Result<Option<i64>> {
        let held: Option<i64> = tx
            .prepare_cached("SELECT source_id FROM sessions WHERE agent = ?1 AND thread = ?2")?
            .query_row(params![agent, s.thread], |r| r.get(0))
            .optional()?;
        if held.is_some() {
            return Ok(None);
        }
        let id = tx
            .prepare_cached(&format!(
                "INSERT INTO sessions(source_id, agent, thread, name, project, started_ms, ended_ms, status, agents,
                                      depth, {TOKENS}, cost_pico, priced)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)
                 RETURNING id"
            ))?
            .query_row(
                params_from_iter(
                    [Value::from(source), Value::from(agent.to_owned()), Value::from(s.thread.clone())]
                        .into_iter()
                        .chain(session_values(s, project)?),
                ),
                |r| r.get(0),
            )?;
        Ok(Some(id))
    }

    fn insert_runs<'r>(
        tx: &Transaction<'_>,
        source: i64,
        rows: &'r SourceRows,
        sessions: &[Option<i64>],
        texts: &mut Texts,
        items: &mut Vec<RunItems<'r>>,
    ) -> Result<usize> {
        let mut ids: Vec<Option<i64>> = vec![None; rows.runs.len()];
        // The texts this source's stored items hold, in the order they hold them (a run whose
        // session is another source's holds none here).
        let held =
            rows.runs.iter().filter(|run| run.session_id(sessions).is_some()).flat_map(|run| {
                run.entries.iter().zip(&run.digests).filter_map(|(i, d)| d.map(|d| (d, i.text.as_str())))
            });
        texts.add(tx, held)?;
        let mut written = 0;
        for (ordinal, run) in rows.runs.iter().enumerate() {
            // A run whose session is another source's is that source's.
            let Some(session) = run.session_id(sessions) else { continue };
            let id = Self::insert_run(tx, source, session, ordinal, run)?;
            ids[ordinal] = Some(id);
            written += 1;
            // Their text's ids now: a later source's replacement may forget the ids known.
            let text_ids = texts.ids(tx, &run.entries, &run.digests)?;
            items.push(RunItems::all(id, run, text_ids));
        }
        // Parents after every run is in: a child can be seen before its parent.
        let mut parent_st = tx.prepare_cached("UPDATE runs SET parent_id = ?2 WHERE id = ?1")?;
        for (run, id) in rows.runs.iter().zip(&ids) {
            if let (Some(id), Some(parent)) = (id, run.parent.and_then(|p| ids.get(p).copied().flatten())) {
                parent_st.execute(params![id, parent])?;
            }
        }
        Ok(written)
    }

    /// One run's row and its usage rows; its id.
    fn insert_run(
        tx: &Transaction<'_>,
        source: i64,
        session: Option<i64>,
        ordinal: usize,
        run: &RunRow,
    ) -> Result<i64> {
        let mut run_st = tx.prepare_cached(&format!(
            "INSERT INTO runs(source_id, session_id, ordinal, {RUN_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                     ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)
             RETURNING id"
        ))?;
        let mut values = vec![Value::Integer(source), session.into(), ordinal_value(ordinal)];
        values.extend(run_values(run)?);
        let id: i64 = run_st.query_row(rusqlite::params_from_iter(&values), |r| r.get(0))?;
        Self::insert_usage(tx, id, &run.usage)?;
        Ok(id)
    }

    fn insert_usage(tx: &Transaction<'_>, run: i64, usage: &[UsageRow]) -> Result<()> {
        let mut usage_st = tx.prepare_cached(&format!(
            "INSERT INTO usage(run_id, at_ms, model, {TOKENS}, cost_pico) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ))?;
        for u in usage {
            let mut values = vec![Value::Integer(run)];
            values.extend(usage_values(u));
            usage_st.execute(rusqlite::params_from_iter(&values))?;
        }
        Ok(())
    }

    /// A run's items, many rows to a statement (a session has hundreds).
    fn insert_items(tx: &Transaction<'_>, items: &RunItems<'_>) -> Result<()> {
        let (run, text_ids) = (items.run, &items.text_ids);
        let entries: Vec<&ItemRow> = items.picked.iter().map(|&k| &items.row.entries[k]).collect();
        let ordinals: Vec<i64> =
            items.picked.iter().map(|&k| int(items.row.item_ordinals.get(k).copied().unwrap_or(u64::MAX))).collect();
        let receivers: Vec<Option<String>> =
            entries.iter().map(|i| (!i.receivers.is_empty()).then(|| i.receivers.join("\n"))).collect();
        for rows in row_chunks(entries.len(), ITEM_ROWS) {
            let items = &entries[rows.clone()];
            let sql = format!(
                "INSERT INTO items(run_id, ordinal, kind, status, title, text_id, at_ms, item_id, turn, tool, op,
                                   exit_code, receivers, why) VALUES {}",
                vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; items.len()].join(", ")
            );
            let mut st = tx.prepare_cached(&sql)?;
            let extra: Vec<(Option<&str>, Option<&str>)> = items.iter().map(|i| item_extra(i)).collect();
            let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(items.len() * ITEM_VALUES);
            for (k, item) in items.iter().enumerate() {
                let n = rows.start + k;
                values.extend([
                    &run as &dyn rusqlite::ToSql,
                    &ordinals[n],
                    &item.kind,
                    &item.status,
                    &item.title,
                    &text_ids[n],
                    &item.at_ms,
                    &extra[k].0,
                    &item.turn,
                    &item.tool,
                    &extra[k].1,
                    &item.exit_code,
                    &receivers[n],
                    &item.why,
                ]);
            }
            st.execute(values.as_slice())?;
        }
        Ok(())
    }

    /// One source's rows in place of what the store held for it.
    fn replace<'r>(
        tx: &Transaction<'_>,
        rows: &'r SourceRows,
        texts: &mut Texts,
        items: &mut Vec<RunItems<'r>>,
    ) -> Result<Written> {
        let old: Option<i64> = tx
            .prepare_cached("SELECT id FROM sources WHERE key = ?1")?
            .query_row([&rows.source.key], |r| r.get(0))
            .optional()?;
        let mut gone = 0;
        if let Some(old) = old {
            // Read again as it grew (the daemon's busy session): only what changed is written.
            if let Some(written) = update::update(tx, rows, old, texts, items)? {
                return Ok(written);
            }
            // The rows it held, for what this write cost.
            gone = tx.query_row(
                "SELECT (SELECT count(*) FROM sessions WHERE source_id = ?1) + (SELECT count(*) FROM runs WHERE source_id = ?1)
                      + (SELECT count(*) FROM usage u JOIN runs r ON r.id = u.run_id WHERE r.source_id = ?1)
                      + (SELECT count(*) FROM items i JOIN runs r ON r.id = i.run_id WHERE r.source_id = ?1)",
                [old],
                |r| r.get::<_, i64>(0),
            )?;
            // The references counted so far go in first: no text this batch holds is freed.
            texts.settle(tx)?;
            Self::release(tx, "r.source_id = ?1", old)?;
            tx.execute("DELETE FROM sources WHERE id = ?1", [old])?;
            Self::collect(tx)?;
            texts.forget();
        }
        let source = Self::insert_source(tx, rows)?;
        let mut sessions = Vec::with_capacity(rows.sessions.len());
        for s in &rows.sessions {
            sessions.push(Self::insert_session(tx, source, &rows.source.agent, rows.source.project.as_deref(), s)?);
        }
        let runs = Self::insert_runs(tx, source, rows, &sessions, texts, items)?;
        let stored = sessions.iter().filter(|s| s.is_some()).count();
        let added: usize = rows
            .runs
            .iter()
            .filter(|run| run.session_id(&sessions).is_some())
            .map(|run| 1 + run.usage.len() + run.entries.len())
            .sum();
        let rows = uint(gone) + u64::try_from(stored + added).unwrap_or(u64::MAX);
        Ok(Written { sessions: stored, duplicates: sessions.len() - stored, runs, rows })
    }

    /// [`Self::SESSION_COLUMNS`] from column `at` on.
    fn session_info(r: &Row<'_>, at: usize) -> rusqlite::Result<SessionInfo> {
        Ok(SessionInfo {
            id: clean(r, at)?,
            agent: clean(r, at + 1)?,
            name: clean(r, at + 2)?,
            project: clean_opt(r, at + 3)?,
            started_ms: r.get(at + 4)?,
            ended_ms: r.get(at + 5)?,
            status: clean(r, at + 6)?,
            agents: r.get(at + 7)?,
            depth: r.get(at + 8)?,
            figures: Figures { tokens: tokens_at(r, at + 9)?, cost: pico_at(r, at + 16)?, priced: r.get(at + 17)? },
            files_present: r.get(at + 18)?,
            machine: None,
        })
    }

    const SESSION_COLUMNS: &'static str = "s.thread, s.agent, s.name, s.project, s.started_ms, s.ended_ms, s.status, \
         s.agents, s.depth, s.t_input, s.t_cached, s.t_cache_write, s.t_cache_write_1h, s.t_output, s.t_reasoning, \
         s.t_total, s.cost_pico, s.priced, \
         NOT EXISTS (SELECT 1 FROM files f WHERE f.source_id = s.source_id AND f.present = 0)";

    fn runs_of(&self, session: i64) -> Result<Vec<RunInfo>> {
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT r.thread, p.thread, r.depth, r.role, r.agent_type, r.name, r.brief, r.model, r.status,
                    r.started_ms, r.ended_ms, r.turns, r.items, r.tool_calls, r.{}, r.cost_pico, r.priced, r.answer,
                    r.files_changed
             FROM runs r LEFT JOIN runs p ON p.id = r.parent_id WHERE r.session_id = ?1 ORDER BY r.ordinal",
            TOKENS.replace(", ", ", r.")
        ))?;
        let rows = st.query_map([session], |r| {
            Ok(RunInfo {
                thread: clean(r, 0)?,
                parent: clean_opt(r, 1)?,
                depth: r.get(2)?,
                role: clean(r, 3)?,
                agent_type: clean_opt(r, 4)?,
                name: clean(r, 5)?,
                brief: clean_opt(r, 6)?,
                model: clean_opt(r, 7)?,
                status: clean(r, 8)?,
                started_ms: r.get(9)?,
                ended_ms: r.get(10)?,
                turns: r.get(11)?,
                items: r.get(12)?,
                tool_calls: r.get(13)?,
                figures: Figures { tokens: tokens_at(r, 14)?, cost: pico_at(r, 21)?, priced: r.get(22)? },
                answer: clean_opt(r, 23)?,
                files_changed: r
                    .get::<_, String>(24)?
                    .split('\n')
                    .filter(|p| !p.is_empty())
                    .map(sanitize_line)
                    .collect(),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Backend for Sqlite {
    fn known(&self, key: &str) -> Result<Option<Known>> {
        let source: Option<(i64, String, bool)> = self
            .conn
            .prepare_cached("SELECT id, fingerprint, pruned FROM sources WHERE key = ?1")?
            .query_row([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let Some((id, fingerprint, pruned)) = source else { return Ok(None) };
        let mut st =
            self.conn.prepare_cached("SELECT path, dev, ino, size, mtime_ns, head FROM files WHERE source_id = ?1")?;
        let files = st
            .query_map([id], |r| {
                let head: Vec<u8> = r.get(5)?;
                Ok(FileState {
                    path: PathBuf::from(r.get::<_, String>(0)?),
                    dev: uint(r.get(1)?),
                    ino: uint(r.get(2)?),
                    size: uint(r.get(3)?),
                    mtime_ns: r.get(4)?,
                    head: head.try_into().unwrap_or([0; 32]),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Some(Known { key: key.to_owned(), files, fingerprint, pruned }))
    }

    fn write(&mut self, batch: &[SourceRows]) -> Result<Written> {
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut written = Written::default();
        let mut texts = Texts::default();
        let mut items = Vec::new();
        for rows in batch {
            let w = Self::replace(&tx, rows, &mut texts, &mut items)?;
            written.sessions += w.sessions;
            written.duplicates += w.duplicates;
            written.runs += w.runs;
            written.rows += w.rows;
        }
        // The runs' briefs and answers to their index, then items, after every run and text of the
        // batch. Why: a statement that may write many rows (an items statement, an insert with
        // RETURNING) opens a savepoint, at which FTS5 writes what it holds pending to a segment of
        // its own. Indexed by a trigger as each run went in (schema 2), each run's text was a
        // segment, flushed by the next run's insert, and those flushes and merges were some 10 % of
        // the writer's CPU in a first `report` (perf); one-row inserts into the index open no
        // savepoint, so here the batch's text goes to the index in one flush (schema 7).
        let mut index = tx.prepare_cached("INSERT INTO runs_fts(rowid, brief, answer) VALUES (?1, ?2, ?3)")?;
        for run in &items {
            if let Some((brief, answer)) = run.index {
                index.execute(params![run.run, brief, answer])?;
            }
        }
        drop(index);
        for run in &items {
            Self::insert_items(&tx, run)?;
        }
        texts.settle(&tx)?;
        tx.commit()?;
        // The batch's pages, clean once committed, are given back: kept, they filled the page cache
        // with every page a sync wrote (a first sync's peak grew with the store it wrote, 27 to 46 MiB
        // from 20 to 180 sessions, report bench). The next batch reads what it needs again from the
        // log, which the file system holds in memory anyway.
        self.conn.execute_batch("PRAGMA shrink_memory")?;
        Ok(written)
    }

    fn mark_missing(&mut self, key: &str, missing: &[PathBuf]) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut st = tx.prepare_cached(
                "UPDATE files SET present = 0 WHERE path = ?2 AND source_id = (SELECT id FROM sources WHERE key = ?1)",
            )?;
            for path in missing {
                st.execute(params![key, path.to_string_lossy()])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn present(&self) -> Result<Vec<(String, PathBuf)>> {
        let mut st = self.conn.prepare_cached(
            "SELECT src.key, f.path FROM files f JOIN sources src ON src.id = f.source_id WHERE f.present = 1",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, PathBuf::from(r.get::<_, String>(1)?))))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn folders(&self) -> Result<Vec<PathBuf>> {
        // Cut here, not in SQL: SQLite has no "last `/`", and `rtrim` by the path's other
        // characters took 35 ms over 6,000 files (reading them takes 9).
        let mut st = self.conn.prepare_cached("SELECT path FROM files WHERE present = 1")?;
        let mut rows = st.query([])?;
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        while let Some(r) = rows.next()? {
            let path = r.get_ref(0)?.as_str()?;
            let folder = path.rfind('/').map_or("", |end| &path[..=end]);
            if !seen.contains(folder) {
                seen.insert(folder.to_owned());
            }
        }
        Ok(seen.into_iter().map(PathBuf::from).collect())
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [key, value],
        )?;
        Ok(())
    }

    fn sessions(&self, filter: &Filter) -> Result<Vec<SessionInfo>> {
        let sql = format!(
            "SELECT {} FROM sessions s WHERE {} ORDER BY s.started_ms DESC, s.thread",
            Self::SESSION_COLUMNS,
            filter_sql(1, "coalesce(s.ended_ms, s.started_ms)", "s.agent", "s.project")
        );
        let f = filter_params(filter)?;
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map(params![f.0, f.1, f.2, f.3], |r| Self::session_info(r, 0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn session(&self, id: &str) -> Result<Lookup> {
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT s.id, {}, src.stats_json, src.tree_text FROM sessions s JOIN sources src ON src.id = s.source_id
             WHERE s.thread = ?1 OR (length(?1) >= 4 AND substr(s.thread, 1, length(?1)) = ?1)
             ORDER BY s.thread = ?1 DESC, s.started_ms DESC LIMIT 8",
            Self::SESSION_COLUMNS
        ))?;
        let found: Vec<(i64, SessionInfo, String, String)> = st
            .query_map([id], |r| {
                let info = Self::session_info(r, 1)?;
                Ok((r.get(0)?, info, r.get(20)?, r.get(21)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let exact = found.first().is_some_and(|f| f.1.id.as_str() == id);
        match found.len() {
            0 => Ok(Lookup::Missing),
            n if n == 1 || exact => {
                let (row, session, stats_json, tree_text) = found.into_iter().next().expect("one");
                Ok(Lookup::Found(Box::new(SessionView {
                    runs: self.runs_of(row)?,
                    session,
                    stats_json,
                    tree_text: sanitize(&tree_text),
                })))
            }
            _ => Ok(Lookup::Ambiguous(found.into_iter().map(|f| f.1.id).collect())),
        }
    }

    fn items(&self, session: &str, thread: &str) -> Result<Vec<ItemRow>> {
        let mut st = self.conn.prepare_cached(
            "SELECT i.kind, i.status, i.title, t.body, i.at_ms, i.item_id, i.turn, i.tool, i.op, i.exit_code,
                    i.receivers, i.why
             FROM items i JOIN runs r ON r.id = i.run_id JOIN sessions s ON s.id = r.session_id
             LEFT JOIN texts t ON t.id = i.text_id
             WHERE s.thread = ?1 AND r.thread = ?2 ORDER BY i.ordinal",
        )?;
        let rows = st.query_map([session, thread], |r| {
            Ok(ItemRow {
                kind: clean(r, 0)?.to_string(),
                status: ItemRow::status_of(&r.get::<_, String>(1)?),
                title: clean(r, 2)?.to_string(),
                text: clean(r, 3)?.to_string(),
                at_ms: r.get(4)?,
                id: r.get::<_, Option<String>>(5)?.map(|id| sanitize_line(&id).to_string()).unwrap_or_default(),
                turn: r.get(6)?,
                tool: r.get::<_, Option<String>>(7)?.map(|t| sanitize_line(&t).to_string()),
                op: r.get::<_, Option<String>>(8)?.as_deref().and_then(AgentOp::of),
                exit_code: r.get(9)?,
                receivers: ItemRow::receivers_of(r.get::<_, Option<String>>(10)?.as_deref()),
                why: clean_opt(r, 11)?.map(|w| w.to_string()),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn usage(&self, filter: &Filter, each: &mut dyn FnMut(UsageFact)) -> Result<()> {
        let sql = format!(
            "SELECT u.at_ms, u.model, u.{}, u.cost_pico, r.priced, r.role <> 'root', r.agent_type,
                    coalesce(s.thread, src.key), coalesce(s.agent, src.agent), coalesce(s.project, src.project)
             FROM usage u JOIN runs r ON r.id = u.run_id JOIN sources src ON src.id = r.source_id
             LEFT JOIN sessions s ON s.id = r.session_id
             WHERE {}",
            TOKENS.replace(", ", ", u."),
            filter_sql(1, "u.at_ms", "coalesce(s.agent, src.agent)", "coalesce(s.project, src.project)")
        );
        let f = filter_params(filter)?;
        let mut st = self.conn.prepare_cached(&sql)?;
        let mut rows = st.query(params![f.0, f.1, f.2, f.3])?;
        while let Some(r) = rows.next()? {
            each(UsageFact {
                at_ms: r.get(0)?,
                model: clean_opt(r, 1)?,
                tokens: tokens_at(r, 2)?,
                cost: pico_at(r, 9)?,
                priced: r.get(10)?,
                subagent: r.get(11)?,
                agent_type: clean_opt(r, 12)?,
                session: clean(r, 13)?,
                agent: clean(r, 14)?,
                project: clean_opt(r, 15)?,
                machine: None,
            });
        }
        Ok(())
    }

    fn search(&self, words: &[String], filter: &Filter, limit: usize) -> Result<Vec<Hit>> {
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let query = fts_query(words);
        // A brief is often its run's first message, and an answer its last: the message is the
        // same place as the brief or answer that holds it, found once (as the brief or answer).
        let sql = format!(
            "WITH runs_hit AS MATERIALIZED (
               SELECT rowid AS id, rank,
                      instr(snippet(runs_fts, 0, char(2), char(3), '', 4), char(2)) > 0 AS in_brief,
                      instr(snippet(runs_fts, 1, char(2), char(3), '', 4), char(2)) > 0 AS in_answer,
                      snippet(runs_fts, -1, char(2), char(3), '…', 16) AS snip
               FROM runs_fts WHERE runs_fts MATCH ?5),
             texts_hit AS (
               SELECT rowid AS id, rank, snippet(texts_fts, 0, char(2), char(3), '…', 16) AS snip
               FROM texts_fts WHERE texts_fts MATCH ?5),
             hit AS (
               SELECT i.run_id AS run_id, i.kind AS kind, i.tool AS tool, i.at_ms AS at_ms, i.ordinal AS ordinal,
                      t.rank AS rank, t.snip AS snip
               FROM texts_hit t JOIN items i ON i.text_id = t.id
               WHERE NOT EXISTS (
                 SELECT 1 FROM runs_hit h JOIN runs r ON r.id = h.id JOIN texts x ON x.id = t.id
                 WHERE h.id = i.run_id AND ((h.in_brief AND {}) OR (h.in_answer AND {})))
               UNION ALL
               SELECT id, CASE WHEN in_brief THEN 'brief' ELSE 'answer' END, NULL, NULL, -1, rank, snip FROM runs_hit)
             SELECT s.thread, coalesce(s.agent, src.agent), r.thread, r.name, hit.kind,
                    coalesce(hit.at_ms, r.started_ms), hit.snip, hit.tool
             FROM hit JOIN runs r ON r.id = hit.run_id
             JOIN sources src ON src.id = r.source_id LEFT JOIN sessions s ON s.id = r.session_id
             WHERE {}
             ORDER BY hit.rank, coalesce(hit.at_ms, r.started_ms) DESC, r.thread, hit.ordinal LIMIT ?6",
            holds("r.brief", "x.body"),
            holds("r.answer", "x.body"),
            filter_sql(
                1,
                "coalesce(hit.at_ms, r.started_ms)",
                "coalesce(s.agent, src.agent)",
                "coalesce(s.project, src.project)"
            )
        );
        let f = filter_params(filter)?;
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map(params![f.0, f.1, f.2, f.3, query, int(limit as u64)], |r| {
            Ok(Hit {
                session: clean_opt(r, 0)?,
                agent: clean(r, 1)?,
                thread: clean(r, 2)?,
                name: clean(r, 3)?,
                kind: clean(r, 4)?,
                tool: clean_opt(r, 7)?,
                at_ms: r.get(5)?,
                snippet: snippet(&r.get::<_, String>(6)?),
                machine: None,
            })
        })?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(message)) if message.contains("fts5") => eyre!("search: {message}"),
            other => other.into(),
        })
    }

    fn prune(&mut self, before_ms: i64) -> Result<Pruned> {
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let where_old = "coalesce(ended_ms, started_ms) < ?1";
        let runs: usize = tx.query_row(
            &format!("SELECT count(*) FROM runs WHERE session_id IN (SELECT id FROM sessions WHERE {where_old})"),
            [before_ms],
            |r| r.get(0),
        )?;
        Self::release(&tx, &format!("r.session_id IN (SELECT id FROM sessions WHERE {where_old})"), before_ms)?;
        let sources: Vec<i64> = {
            let mut st = tx.prepare(&format!("SELECT DISTINCT source_id FROM sessions WHERE {where_old}"))?;
            st.query_map([before_ms], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
        };
        // Before the sessions go, while the acts on them can be told from acts on kept ones.
        let acts = tx.execute(
            &format!(
                "DELETE FROM acts
                 WHERE (at_ms < ?1 OR session IN (SELECT thread FROM sessions WHERE {where_old}))
                   AND (session IS NULL OR session NOT IN
                        (SELECT thread FROM sessions WHERE coalesce(ended_ms, started_ms, ?1) >= ?1))"
            ),
            [before_ms],
        )?;
        let sessions = tx.execute(&format!("DELETE FROM sessions WHERE {where_old}"), [before_ms])?;
        Self::collect(&tx)?;
        // A source with no session left keeps only what tells it was read (its files), so that
        // its unchanged files are not read back in.
        for source in sources {
            let left: i64 =
                tx.query_row("SELECT count(*) FROM sessions WHERE source_id = ?1", [source], |r| r.get(0))?;
            if left == 0 {
                Self::release(&tx, "r.source_id = ?1", source)?;
                tx.execute("DELETE FROM runs WHERE source_id = ?1", [source])?;
                Self::collect(&tx)?;
                tx.execute("UPDATE sources SET pruned = 1, stats_json = '', tree_text = '' WHERE id = ?1", [source])?;
            }
        }
        tx.commit()?;
        self.conn.execute_batch("PRAGMA incremental_vacuum;")?;
        Ok(Pruned { sessions, runs, acts })
    }

    fn settle(&mut self, wrote: bool) -> Result<()> {
        if wrote {
            // A reader still in the log makes this a partial checkpoint: harmless, the next one ends it.
            self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        if std::mem::take(&mut self.fresh) {
            self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        }
        Ok(())
    }

    fn size(&self) -> Result<u64> {
        let pages: i64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let page: i64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let wal = std::fs::metadata(wal).map_or(0, |m| m.len());
        Ok(uint(pages.saturating_mul(page)).saturating_add(wal))
    }

    fn totals(&self) -> Result<Totals> {
        let count = |sql: &str| -> Result<u64> { Ok(uint(self.conn.query_row(sql, [], |r| r.get(0))?)) };
        Ok(Totals {
            sessions: count("SELECT count(*) FROM sessions")?,
            runs: count("SELECT count(*) FROM runs")?,
            indexed: count("SELECT coalesce(sum(bytes), 0) FROM sources")?,
        })
    }

    fn files(&self, session: &str) -> Result<Vec<(PathBuf, bool)>> {
        let mut st = self.conn.prepare_cached(
            "SELECT f.path, f.present FROM files f JOIN sessions s ON s.source_id = f.source_id
             WHERE s.thread = ?1 ORDER BY f.path",
        )?;
        let rows = st.query_map([session], |r| Ok((PathBuf::from(r.get::<_, String>(0)?), r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn sessions_of(&self, paths: &[PathBuf]) -> Result<Vec<String>> {
        // One pass over the files (no index on their path: a replay asks once, at its start).
        let wanted: std::collections::HashSet<String> =
            paths.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let mut st = self
            .conn
            .prepare_cached("SELECT f.path, s.thread FROM sessions s JOIN files f ON f.source_id = s.source_id")?;
        let mut rows = st.query([])?;
        let mut out = std::collections::BTreeSet::new();
        while let Some(r) = rows.next()? {
            if wanted.contains(r.get_ref(0)?.as_str()?) {
                out.insert(r.get::<_, String>(1)?);
            }
        }
        Ok(out.into_iter().collect())
    }

    fn dump(&self) -> Result<String> {
        let mut out = String::new();
        let queries = [
            "SELECT key, place, agent, project, fingerprint, pruned, lines, bytes, format, error, stats_json, tree_text
             FROM sources ORDER BY key",
            "SELECT src.key, f.path, f.dev, f.ino, f.size, f.mtime_ns, hex(f.head), f.present
             FROM files f JOIN sources src ON src.id = f.source_id ORDER BY src.key, f.path",
            "SELECT src.key, s.* FROM sessions s JOIN sources src ON src.id = s.source_id ORDER BY s.agent, s.thread",
            "SELECT src.key, r.ordinal, p.ordinal, s.thread, r.* FROM runs r JOIN sources src ON src.id = r.source_id
             LEFT JOIN runs p ON p.id = r.parent_id LEFT JOIN sessions s ON s.id = r.session_id
             ORDER BY src.key, r.ordinal",
            "SELECT src.key, r.ordinal, u.* FROM usage u JOIN runs r ON r.id = u.run_id
             JOIN sources src ON src.id = r.source_id ORDER BY src.key, r.ordinal, u.at_ms, u.model",
            "SELECT src.key, r.ordinal, i.ordinal, i.kind, i.status, i.title, t.body, i.at_ms, i.item_id, i.turn,
                    i.tool, i.op, i.exit_code, i.receivers, i.why FROM items i
             JOIN runs r ON r.id = i.run_id JOIN sources src ON src.id = r.source_id LEFT JOIN texts t ON t.id = i.text_id
             ORDER BY src.key, r.ordinal, i.ordinal",
            "SELECT body, refs FROM texts ORDER BY digest",
        ];
        for sql in queries {
            let mut st = self.conn.prepare(sql)?;
            let names: Vec<String> = st.column_names().into_iter().map(str::to_owned).collect();
            let mut rows = st.query([])?;
            let _ = writeln!(out, "# {}", sql.split_whitespace().collect::<Vec<_>>().join(" "));
            while let Some(r) = rows.next()? {
                let mut line = String::new();
                for (i, name) in names.iter().enumerate() {
                    // Row ids and sync times differ between two syncs that stored the same thing.
                    if matches!(name.as_str(), "id" | "source_id" | "session_id" | "parent_id" | "run_id" | "synced_ms")
                    {
                        continue;
                    }
                    let v: rusqlite::types::Value = r.get(i)?;
                    let _ = write!(line, "{name}={v:?} ");
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        Ok(out)
    }

    fn record_act(&mut self, a: &ActRow) -> Result<()> {
        self.conn.execute(
            "INSERT INTO acts (at_ms, kind, by, via, session, target, detail, outcome)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![a.at_ms, a.kind, a.by, a.via, a.session, a.target, a.detail, a.outcome],
        )?;
        Ok(())
    }

    fn acts(&self, session: &str) -> Result<Vec<ActRow>> {
        let mut st = self.conn.prepare_cached(
            "SELECT at_ms, kind, by, via, session, target, detail, outcome FROM acts
             WHERE session = ?1 ORDER BY at_ms, id",
        )?;
        let rows = st.query_map([session], |r| {
            Ok(ActRow {
                at_ms: r.get(0)?,
                kind: r.get(1)?,
                by: r.get(2)?,
                via: r.get(3)?,
                session: r.get(4)?,
                target: r.get(5)?,
                detail: r.get(6)?,
                outcome: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn lock(&self, wait: bool) -> Result<Option<SyncLock>> {
        let file = lock_file(&self.path, ".sync-lock").wrap_err("opening the run store's sync lock")?;
        let how = if wait { FlockArg::LockExclusive } else { FlockArg::LockExclusiveNonblock };
        match Flock::lock(file, how) {
            Ok(lock) => Ok(Some(SyncLock::new(lock))),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) if !wait => Ok(None),
            Err((_, e)) => Err(eyre!("locking the run store for a sync: {e}")),
        }
    }
}

/// `n` rows as runs of `most`, then of the powers of two the rest is made of: a few statement
/// texts, each prepared once (one for every length of the rest came to more texts than the
/// statement cache holds, and each was prepared again: 1.5 % of a first sync's CPU, perf).
fn row_chunks(n: usize, most: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let left = n - at;
        if left == 0 {
            return None;
        }
        let len = if left >= most { most } else { 1 << left.ilog2() };
        at += len;
        Some(at - len..at)
    })
}

/// A run's columns after its source, session and ordinal, in [`run_values`] order.
const RUN_COLUMNS: &str = "thread, depth, role, via, card, agent_type, name, nickname, brief, model, models, status, \
     started_ms, ended_ms, turns, items, tool_calls, t_input, t_cached, t_cache_write, t_cache_write_1h, t_output, \
     t_reasoning, t_total, cost_pico, priced, cost_source, reported_cost_pico, answer, files_changed, file";

/// Where a run's brief and answer are among [`run_values`].
const RUN_BRIEF: usize = 8;
const RUN_ANSWER: usize = 28;

/// Values as SQLite keeps them: what is written is compared with what was stored, value for value.
fn values(params: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<Vec<Value>> {
    params
        .iter()
        .map(|p| {
            Ok(match p.to_sql()? {
                rusqlite::types::ToSqlOutput::Borrowed(v) => v.into(),
                rusqlite::types::ToSqlOutput::Owned(v) => v,
                #[allow(unreachable_patterns)]
                _ => Value::Null,
            })
        })
        .collect()
}

fn ordinal_value(n: usize) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A run's [`RUN_COLUMNS`].
/// A session's columns after its source, agent and thread, as the insert and an update in place
/// write them (`update::SESSION_COLUMNS`, in that order).
fn session_values(s: &SessionRow, project: Option<&str>) -> rusqlite::Result<Vec<Value>> {
    let t = tokens_params(&s.figures.tokens);
    values(params![
        s.name,
        project,
        s.started_ms,
        s.ended_ms,
        s.status,
        s.agents,
        s.depth,
        t[0],
        t[1],
        t[2],
        t[3],
        t[4],
        t[5],
        t[6],
        pico(s.figures.cost),
        s.figures.priced
    ])
}

fn run_values(run: &RunRow) -> rusqlite::Result<Vec<Value>> {
    let t = tokens_params(&run.figures.tokens);
    values(params![
        run.thread,
        run.depth,
        run.role,
        run.via,
        run.card,
        run.agent_type,
        run.name,
        run.nickname,
        run.brief,
        run.model,
        run.models.join("\n"),
        run.status,
        run.started_ms,
        run.ended_ms,
        run.turns,
        run.items,
        run.tool_calls,
        t[0],
        t[1],
        t[2],
        t[3],
        t[4],
        t[5],
        t[6],
        pico(run.figures.cost),
        run.figures.priced,
        run.cost_source,
        run.reported_cost.map(pico),
        run.answer,
        run.files_changed.join("\n"),
        run.file
    ])
}

/// A usage row's columns after its run: `at_ms, model`, tokens, `cost_pico`.
fn usage_values(u: &UsageRow) -> Vec<Value> {
    let mut v = vec![u.at_ms.into(), u.model.clone().into()];
    v.extend(tokens_params(&u.tokens).map(Value::Integer));
    v.push(Value::Text(pico(u.cost)));
    v
}

/// An item's own id and what it does to agents, as their columns hold them.
fn item_extra(i: &ItemRow) -> (Option<&str>, Option<&str>) {
    ((!i.id.is_empty()).then_some(i.id.as_str()), i.op.map(AgentOp::word))
}

/// Item rows inserted by one statement ([`ITEM_VALUES`] each, well under SQLite's bound on values).
const ITEM_ROWS: usize = 64;
/// Values of one item row.
const ITEM_VALUES: usize = 14;
/// Texts inserted by one statement (2 values each).
const TEXT_ROWS: usize = 256;

/// A run's items, waiting for their rows (their text's ids are known), and its brief and answer,
/// waiting for the text index.
struct RunItems<'r> {
    run: i64,
    row: &'r RunRow,
    /// Which of its entries are written (all of a new run's; of a stored run's, those not stored
    /// as they are now).
    picked: Vec<usize>,
    /// Their text's ids.
    text_ids: Vec<Option<i64>>,
    /// Its brief and answer, when they go to the text index (a new run, or one whose changed).
    index: Option<(Option<&'r str>, Option<&'r str>)>,
}

impl<'r> RunItems<'r> {
    /// A new run: all its items, its brief and answer indexed.
    fn all(run: i64, row: &'r RunRow, text_ids: Vec<Option<i64>>) -> Self {
        let index = Some((row.brief.as_deref(), row.answer.as_deref()));
        Self { run, row, picked: (0..row.entries.len()).collect(), text_ids, index }
    }
}

/// A text's SHA-256, which keys it.
type Digest32 = [u8; 32];

/// Item text as a batch writes it: each distinct text looked up or inserted once, and the
/// references it gains counted here and added to its row in one update.
#[derive(Default)]
struct Texts {
    ids: std::collections::HashMap<[u8; 32], i64>,
    gained: std::collections::HashMap<i64, i64>,
}

impl Texts {
    /// The id of the text with this digest (`None` for no text), one more reference to it counted.
    fn id(&mut self, tx: &Transaction<'_>, digest: Option<Digest32>, body: &str) -> Result<Option<i64>> {
        let Some(digest) = digest else { return Ok(None) };
        let id = if let Some(&id) = self.ids.get(&digest) {
            id
        } else {
            // A no-op update on a text already stored, for RETURNING to give its id.
            let mut st = tx.prepare_cached(
                "INSERT INTO texts(digest, body, refs) VALUES (?1, ?2, 0)
                 ON CONFLICT(digest) DO UPDATE SET refs = refs RETURNING id",
            )?;
            let id = st.query_row(params![&digest[..], body], |r| r.get(0))?;
            self.ids.insert(digest, id);
            id
        };
        *self.gained.entry(id).or_default() += 1;
        Ok(Some(id))
    }

    /// [`Self::id`] of each item's text.
    fn ids(
        &mut self,
        tx: &Transaction<'_>,
        items: &[ItemRow],
        digests: &[Option<Digest32>],
    ) -> Result<Vec<Option<i64>>> {
        items.iter().zip(digests).map(|(i, d)| self.id(tx, *d, &i.text)).collect()
    }

    /// Looks up or inserts every text of `bodies` not known yet, many to a statement, in the
    /// order given (the ids [`Self::id`] would have given them). Why many: each statement opens a
    /// savepoint, at which FTS5 writes what it holds pending to a segment of its own; a text at a
    /// time made a segment per text, and merging them was most of the index's cost.
    fn add<'b>(&mut self, tx: &Transaction<'_>, bodies: impl Iterator<Item = (Digest32, &'b str)>) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        let new: Vec<(Digest32, &str)> = bodies.filter(|(d, _)| !self.ids.contains_key(d) && seen.insert(*d)).collect();
        for rows in row_chunks(new.len(), TEXT_ROWS) {
            let chunk = &new[rows];
            let sql = format!(
                "INSERT INTO texts(digest, body, refs) VALUES {}
                 ON CONFLICT(digest) DO UPDATE SET refs = refs RETURNING digest, id",
                vec!["(?, ?, 0)"; chunk.len()].join(", ")
            );
            let mut st = tx.prepare_cached(&sql)?;
            let values: Vec<&dyn rusqlite::ToSql> =
                chunk.iter().flat_map(|(d, b)| [d as &dyn rusqlite::ToSql, b as &dyn rusqlite::ToSql]).collect();
            let mut rows = st.query(values.as_slice())?;
            while let Some(r) = rows.next()? {
                let digest: [u8; 32] = r.get(0)?;
                self.ids.insert(digest, r.get(1)?);
            }
        }
        Ok(())
    }

    /// Adds the references counted to the texts' rows.
    fn settle(&mut self, tx: &Transaction<'_>) -> Result<()> {
        let mut st = tx.prepare_cached("UPDATE texts SET refs = refs + ?2 WHERE id = ?1")?;
        for (id, n) in self.gained.drain() {
            st.execute(params![id, n])?;
        }
        Ok(())
    }

    /// Texts may have been deleted: ids known so far are looked up again.
    fn forget(&mut self) {
        self.ids.clear();
    }
}

/// A snippet with its match marks, as pieces: the marked ones are the words that matched.
pub(super) fn snippet(marked: &str) -> Vec<(Clean, bool)> {
    let mut out = Vec::new();
    for (i, part) in marked.split('\u{2}').enumerate() {
        let (hit, rest) = match part.split_once('\u{3}') {
            Some((hit, rest)) if i > 0 => (Some(hit), rest),
            _ => (None, part),
        };
        if let Some(hit) = hit.filter(|h| !h.is_empty()) {
            out.push((sanitize_line(hit), true));
        }
        if !rest.is_empty() {
            out.push((sanitize_line(rest), false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn rows_go_in_runs_of_the_most_then_powers_of_two() {
        let lens = |n| super::row_chunks(n, 64).map(|r| r.len()).collect::<Vec<_>>();
        assert_eq!(lens(0), Vec::<usize>::new());
        assert_eq!(lens(64), [64]);
        assert_eq!(lens(135), [64, 64, 4, 2, 1]);
        let all: Vec<usize> = super::row_chunks(135, 64).flatten().collect();
        assert_eq!(all, (0..135).collect::<Vec<_>>());
    }

    #[test]
    fn what_a_person_types_is_words_not_syntax() {
        let w = |s: &[&str]| s.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(fts_query(&w(&["cargo", "test"])), "\"cargo\" \"test\"");
        assert_eq!(fts_query(&w(&["say", "\"hi\""])), "\"say\" \"\"\"hi\"\"\"");
    }

    #[test]
    fn a_new_store_is_in_the_log_and_gives_pages_back() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = super::Sqlite::open(&dir.path().join("history.db")).expect("a new store");
        let pragma = |name: &str| -> String {
            store.conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, rusqlite::types::Value>(0)).map_or_else(
                |e| e.to_string(),
                |v| match v {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                },
            )
        };
        assert_eq!(pragma("journal_mode"), "wal");
        // 2: incremental.
        assert_eq!(pragma("auto_vacuum"), "2");
        assert_eq!(pragma("user_version"), super::schema::LATEST.to_string());
        drop(store);
        // Opened again, it is as it was.
        let again = super::Sqlite::open(&dir.path().join("history.db")).expect("the store again");
        let v: i64 = again.conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).expect("auto_vacuum");
        assert_eq!(v, 2);
    }
}
