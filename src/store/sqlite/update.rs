//! A stored source read again, written as what changed (issue 21: the daemon syncs a busy session
//! every few seconds, and replacing it whole made each sync cost the session's size): its source,
//! files and sessions rows updated, only the runs whose row or usage differ from what is stored
//! rewritten, and of each run's items only those new or changed (a tool call that completed)
//! written and those its thread dropped deleted (items are keyed by their ordinal in the thread,
//! which stays as older ones are dropped: `RunRow::item_ordinals`).
//!
//! Compared value for value with what the store holds (the values the insert would write, as
//! SQLite keeps them), so the rows are exactly those a replace would leave: `dump` of a store
//! written this way equals a fresh store's (tests/store.rs). What cannot be written so, a source
//! whose runs are not the stored ones plus new ones (a file rewritten, a run whose thread moved, a
//! session gone), is replaced whole as before: [`update`] says `None` before it writes anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use color_eyre::eyre::Result;
use rusqlite::types::Value;
use rusqlite::{Transaction, params, params_from_iter};

use super::{
    RUN_ANSWER, RUN_BRIEF, RUN_COLUMNS, RunItems, Sqlite, TOKENS, Texts, item_extra, run_values, usage_values, values,
};
use crate::store::backend::Written;
use crate::store::rows::{ItemRow, RunRow, SessionRow, SourceRows};

/// A session's columns compared and updated in place (its key is its agent and thread).
const SESSION_COLUMNS: &str = "name, project, started_ms, ended_ms, status, agents, depth, t_input, t_cached, \
     t_cache_write, t_cache_write_1h, t_output, t_reasoning, t_total, cost_pico, priced";

/// An item's columns compared (its text by digest) after its run and ordinal.
const ITEM_COLUMNS: &str = "i.kind, i.status, i.title, t.digest, i.at_ms, i.item_id, i.turn, i.tool, i.op, \
     i.exit_code, i.receivers, i.why";

/// A run as stored: its row id, its session's and parent's, and its columns.
struct StoredRun {
    id: i64,
    session: Option<i64>,
    parent: Option<usize>,
    values: Vec<Value>,
}

/// What the store holds of one source's runs, by ordinal.
#[derive(Default)]
struct Stored {
    runs: HashMap<usize, StoredRun>,
    usage: HashMap<i64, Vec<Vec<Value>>>,
    items: HashMap<i64, BTreeMap<i64, Vec<Value>>>,
}

/// Writes `rows` over the stored source `old` as what changed, or `None` (nothing written) when
/// it must be replaced whole.
pub(super) fn update<'r>(
    tx: &Transaction<'_>,
    rows: &'r SourceRows,
    old: i64,
    texts: &mut Texts,
    items: &mut Vec<RunItems<'r>>,
) -> Result<Option<Written>> {
    let pruned: bool = tx.query_row("SELECT pruned FROM sources WHERE id = ?1", [old], |r| r.get(0))?;
    if pruned {
        return Ok(None);
    }
    let Some(mut sessions) = sessions_of(tx, old, rows)? else { return Ok(None) };
    let stored = stored(tx, old)?;
    // The stored runs must be the new ones' first (the same thread at each ordinal, still written
    // under this source): the rest is new.
    let same = stored.runs.iter().all(|(&k, run)| {
        rows.runs.get(k).is_some_and(|new| {
            run.values.first() == Some(&Value::Text(new.thread.clone()))
                && new.session.is_none_or(|s| !matches!(sessions.get(s), Some(Slot::Others) | None))
        })
    });
    if !same {
        return Ok(None);
    }
    let mut written = Written::default();
    source_row(tx, old, rows)?;
    for (s, slot) in rows.sessions.iter().zip(&mut sessions) {
        written.rows += session_row(tx, old, rows, s, slot)?;
    }
    let ids: Vec<Option<i64>> = sessions.iter().map(Slot::id).collect();
    let mut run_ids: Vec<Option<i64>> = vec![None; rows.runs.len()];
    let mut plan = Plan::default();
    for (ordinal, run) in rows.runs.iter().enumerate() {
        let Some(session) = run.session_id(&ids) else { continue };
        written.runs += 1;
        let Some(was) = stored.runs.get(&ordinal) else {
            run_ids[ordinal] = Some(Sqlite::insert_run(tx, old, session, ordinal, run)?);
            written.rows += 1 + count(run.usage.len());
            plan.items.push((ordinal, Items { picked: (0..run.entries.len()).collect(), gone: Vec::new() }));
            plan.index.insert(ordinal);
            continue;
        };
        run_ids[ordinal] = Some(was.id);
        let new = run_values(run)?;
        if was.values != new || was.session != session {
            update_run(tx, was, session, &new)?;
            written.rows += 1;
            if indexed(&was.values) != indexed(&new) {
                plan.index.insert(ordinal);
            }
        }
        let usage: Vec<Vec<Value>> = run.usage.iter().map(usage_values).collect();
        if stored.usage.get(&was.id).map_or(&[][..], Vec::as_slice) != usage.as_slice() {
            written.rows += count(tx.execute("DELETE FROM usage WHERE run_id = ?1", [was.id])?);
            Sqlite::insert_usage(tx, was.id, &run.usage)?;
            written.rows += count(run.usage.len());
        }
        let items = item_changes(stored.items.get(&was.id), run)?;
        if !items.picked.is_empty() || !items.gone.is_empty() {
            plan.items.push((ordinal, items));
        }
    }
    // Parents once every run is in: a new child can be seen before its new parent.
    let mut parent_st = tx.prepare_cached("UPDATE runs SET parent_id = ?2 WHERE id = ?1")?;
    for (ordinal, run) in rows.runs.iter().enumerate() {
        let Some(id) = run_ids[ordinal] else { continue };
        let parent = run.parent.filter(|&p| run_ids.get(p).copied().flatten().is_some());
        if stored.runs.get(&ordinal).map_or(parent.is_some(), |was| was.parent != parent) {
            written.rows += count(parent_st.execute(params![id, parent.and_then(|p| run_ids[p])])?);
        }
    }
    written.rows += items_from(tx, rows, &run_ids, plan, texts, items)?;
    written.sessions = ids.iter().filter(|s| s.is_some()).count();
    written.duplicates = sessions.len() - written.sessions;
    Ok(Some(written))
}

/// What is written of the runs besides their rows: each run's items from an ordinal on, and the
/// runs whose brief and answer go to the text index.
#[derive(Default)]
struct Plan {
    items: Vec<(usize, Items)>,
    index: std::collections::BTreeSet<usize>,
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A session of the source as the store holds it.
enum Slot {
    /// Stored under this source: its row id and columns.
    Stored(i64, Vec<Value>),
    /// Not stored yet.
    New,
    /// Another source holds it (a recording of a session its rollouts hold), and its runs.
    Others,
}

impl Slot {
    fn id(&self) -> Option<i64> {
        match self {
            Self::Stored(id, _) => Some(*id),
            _ => None,
        }
    }
}

/// The source's sessions, in the new ones' order, as the store holds them; `None` when a stored
/// session is not among the new ones (its runs would go with it: the source is replaced whole).
fn sessions_of(tx: &Transaction<'_>, old: i64, rows: &SourceRows) -> Result<Option<Vec<Slot>>> {
    let mut st =
        tx.prepare_cached(&format!("SELECT id, agent, thread, {SESSION_COLUMNS} FROM sessions WHERE source_id = ?1"))?;
    let mut by_thread: HashMap<String, (i64, Vec<Value>)> = HashMap::new();
    let mut q = st.query([old])?;
    while let Some(r) = q.next()? {
        let (agent, thread): (String, String) = (r.get(1)?, r.get(2)?);
        if agent != rows.source.agent {
            return Ok(None);
        }
        let cols = (3..3 + 16).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<_>>()?;
        by_thread.insert(thread, (r.get(0)?, cols));
    }
    let mut held = tx.prepare_cached("SELECT 1 FROM sessions WHERE agent = ?1 AND thread = ?2")?;
    let mut out = Vec::with_capacity(rows.sessions.len());
    for s in &rows.sessions {
        out.push(match by_thread.remove(&s.thread) {
            Some((id, cols)) => Slot::Stored(id, cols),
            None if held.exists(params![rows.source.agent, s.thread])? => Slot::Others,
            None => Slot::New,
        });
    }
    Ok(by_thread.is_empty().then_some(out))
}

/// What the store holds of the source's runs, their usage and their items.
fn stored(tx: &Transaction<'_>, old: i64) -> Result<Stored> {
    let mut out = Stored::default();
    let mut st = tx.prepare_cached(&format!(
        "SELECT r.id, r.ordinal, r.session_id, p.ordinal, {} FROM runs r LEFT JOIN runs p ON p.id = r.parent_id
         WHERE r.source_id = ?1",
        RUN_COLUMNS.split(", ").map(|c| format!("r.{}", c.trim())).collect::<Vec<_>>().join(", ")
    ))?;
    let mut q = st.query([old])?;
    while let Some(r) = q.next()? {
        let ordinal: i64 = r.get(1)?;
        let parent: Option<i64> = r.get(3)?;
        let values = (4..4 + 31).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<_>>()?;
        let run = StoredRun {
            id: r.get(0)?,
            session: r.get(2)?,
            parent: parent.and_then(|p| usize::try_from(p).ok()),
            values,
        };
        out.runs.insert(usize::try_from(ordinal).unwrap_or(usize::MAX), run);
    }
    let mut st = tx.prepare_cached(&format!(
        "SELECT u.run_id, u.at_ms, u.model, {}, u.cost_pico FROM usage u JOIN runs r ON r.id = u.run_id
         WHERE r.source_id = ?1 ORDER BY u.run_id, u.rowid",
        TOKENS.split(", ").map(|c| format!("u.{c}")).collect::<Vec<_>>().join(", ")
    ))?;
    let mut q = st.query([old])?;
    while let Some(r) = q.next()? {
        let row = (1..11).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<_>>()?;
        out.usage.entry(r.get(0)?).or_default().push(row);
    }
    let mut st = tx.prepare_cached(&format!(
        "SELECT i.run_id, i.ordinal, {ITEM_COLUMNS} FROM items i JOIN runs r ON r.id = i.run_id
         LEFT JOIN texts t ON t.id = i.text_id WHERE r.source_id = ?1"
    ))?;
    let mut q = st.query([old])?;
    while let Some(r) = q.next()? {
        let row = (2..14).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<_>>()?;
        out.items.entry(r.get(0)?).or_default().insert(r.get(1)?, row);
    }
    Ok(out)
}

/// A stored run's items to write: those not stored as they are now (their indexes among its
/// entries), and the stored ones to delete first (dropped by its thread, or changed), by ordinal.
fn item_changes(held: Option<&BTreeMap<i64, Vec<Value>>>, run: &RunRow) -> Result<Items> {
    let mut out = Items::default();
    let mut now = BTreeSet::new();
    for (k, ((item, digest), &n)) in run.entries.iter().zip(&run.digests).zip(&run.item_ordinals).enumerate() {
        let n = super::int(n);
        now.insert(n);
        match held.and_then(|h| h.get(&n)) {
            Some(h) if *h == item_values(item, *digest)? => {}
            Some(_) => {
                out.picked.push(k);
                out.gone.push(n);
            }
            None => out.picked.push(k),
        }
    }
    out.gone.extend(held.into_iter().flat_map(BTreeMap::keys).filter(|n| !now.contains(n)));
    Ok(out)
}

/// Of one run: the indexes of its entries written, and the ordinals of its stored items deleted.
#[derive(Default)]
struct Items {
    picked: Vec<usize>,
    gone: Vec<i64>,
}

/// An item's [`ITEM_COLUMNS`], as its insert writes them.
fn item_values(i: &ItemRow, digest: Option<[u8; 32]>) -> rusqlite::Result<Vec<Value>> {
    let (id, op) = item_extra(i);
    let receivers = (!i.receivers.is_empty()).then(|| i.receivers.join("\n"));
    values(params![
        i.kind,
        i.status,
        i.title,
        digest.map(|d| d.to_vec()),
        i.at_ms,
        id,
        i.turn,
        i.tool,
        op,
        i.exit_code,
        receivers,
        i.why
    ])
}

fn source_row(tx: &Transaction<'_>, old: i64, rows: &SourceRows) -> Result<()> {
    let s = &rows.source;
    tx.prepare_cached(
        "UPDATE sources SET place = ?2, agent = ?3, project = ?4, fingerprint = ?5, synced_ms = ?6, lines = ?7,
                            bytes = ?8, format = ?9, error = ?10, stats_json = ?11, tree_text = ?12
         WHERE id = ?1",
    )?
    .execute(params![
        old,
        s.place,
        s.agent,
        s.project,
        s.fingerprint,
        rows.synced_ms,
        super::int(rows.lines),
        super::int(rows.bytes),
        rows.format,
        rows.error,
        rows.stats_json,
        rows.tree_text
    ])?;
    tx.execute("DELETE FROM files WHERE source_id = ?1", [old])?;
    Sqlite::insert_files(tx, old, &s.files)
}

/// One session's row, updated where it changed or inserted where it is new; the rows written.
fn session_row(tx: &Transaction<'_>, source: i64, rows: &SourceRows, s: &SessionRow, slot: &mut Slot) -> Result<u64> {
    let project = rows.source.project.as_deref();
    let was = match slot {
        Slot::Others => return Ok(0),
        Slot::New => {
            *slot = match Sqlite::insert_session(tx, source, &rows.source.agent, project, s)? {
                Some(id) => Slot::Stored(id, Vec::new()),
                None => Slot::Others,
            };
            return Ok(u64::from(slot.id().is_some()));
        }
        Slot::Stored(id, was) => (*id, was),
    };
    let new = super::session_values(s, project)?;
    if *was.1 == new {
        return Ok(0);
    }
    let set = SESSION_COLUMNS.split(", ").enumerate().map(|(i, c)| format!("{c} = ?{}", i + 2)).collect::<Vec<_>>();
    let mut args = vec![Value::Integer(was.0)];
    args.extend(new);
    tx.prepare_cached(&format!("UPDATE sessions SET {} WHERE id = ?1", set.join(", ")))?
        .execute(params_from_iter(&args))?;
    Ok(1)
}

/// A stored run's row rewritten; its brief and answer leave the text index (they go back in
/// with the batch's, [`RunItems::index`]).
fn update_run(tx: &Transaction<'_>, was: &StoredRun, session: Option<i64>, new: &[Value]) -> Result<()> {
    let set =
        RUN_COLUMNS.split(", ").enumerate().map(|(i, c)| format!("{} = ?{}", c.trim(), i + 3)).collect::<Vec<_>>();
    let mut args = vec![Value::Integer(was.id), session.into()];
    args.extend(new.iter().cloned());
    tx.prepare_cached(&format!("UPDATE runs SET session_id = ?2, {} WHERE id = ?1", set.join(", ")))?
        .execute(params_from_iter(&args))?;
    if indexed(&was.values) != indexed(new) {
        tx.prepare_cached("INSERT INTO runs_fts(runs_fts, rowid, brief, answer) VALUES ('delete', ?1, ?2, ?3)")?
            .execute(params![was.id, was.values[RUN_BRIEF], was.values[RUN_ANSWER]])?;
    }
    Ok(())
}

/// A run's brief and answer, as its row's values hold them.
fn indexed(v: &[Value]) -> (&Value, &Value) {
    (&v[RUN_BRIEF], &v[RUN_ANSWER])
}

/// The items of `plan` written: the new and changed ones' texts counted before those the
/// deleted ones held are given back (a text both hold is never deleted and written again); the
/// rows written. The new items wait in `items` for the batch's insert, with the brief and answer
/// of each run whose changed.
fn items_from<'r>(
    tx: &Transaction<'_>,
    rows: &'r SourceRows,
    run_ids: &[Option<i64>],
    mut plan: Plan,
    texts: &mut Texts,
    items: &mut Vec<RunItems<'r>>,
) -> Result<u64> {
    let mut written = 0;
    let bodies = plan.items.iter().flat_map(|(k, change)| {
        let run: &'r RunRow = &rows.runs[*k];
        change.picked.iter().filter_map(|&i| run.digests[i].map(|d| (d, run.entries[i].text.as_str())))
    });
    texts.add(tx, bodies)?;
    let mut pending = Vec::new();
    for (k, change) in std::mem::take(&mut plan.items) {
        let (run, Some(id)) = (&rows.runs[k], run_ids[k]) else { continue };
        let text_ids = change
            .picked
            .iter()
            .map(|&i| texts.id(tx, run.digests[i], &run.entries[i].text))
            .collect::<Result<Vec<_>>>()?;
        written += count(change.picked.len());
        pending.push((k, id, change, text_ids));
    }
    // The references gained go in before those released: no text still held is freed.
    texts.settle(tx)?;
    Sqlite::released(tx)?;
    let mut release = tx.prepare_cached(
        "INSERT INTO released SELECT text_id FROM items WHERE run_id = ?1 AND ordinal = ?2 AND text_id IS NOT NULL",
    )?;
    let mut delete = tx.prepare_cached("DELETE FROM items WHERE run_id = ?1 AND ordinal = ?2")?;
    for (_, id, change, _) in &pending {
        for n in &change.gone {
            release.execute(params![id, n])?;
            written += count(delete.execute(params![id, n])?);
        }
    }
    drop((release, delete));
    Sqlite::collect(tx)?;
    texts.forget();
    for (k, id, change, text_ids) in pending {
        let row = &rows.runs[k];
        let index = plan.index.remove(&k).then_some((row.brief.as_deref(), row.answer.as_deref()));
        items.push(RunItems { run: id, row, picked: change.picked, text_ids, index });
    }
    // Runs whose brief or answer changed and none of their items.
    for k in plan.index {
        let (row, Some(id)) = (&rows.runs[k], run_ids[k]) else { continue };
        let index = Some((row.brief.as_deref(), row.answer.as_deref()));
        items.push(RunItems { run: id, row, picked: Vec::new(), text_ids: Vec::new(), index });
    }
    Ok(written)
}
