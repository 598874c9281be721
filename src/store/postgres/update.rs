//! A stored source read again, written as what changed (issue 21: `serve` syncs a busy session
//! every few seconds, and replacing it whole made each sync cost the session's size, over the
//! network): its source, files and sessions rows updated, only the runs whose row or usage differ
//! from what is stored rewritten, and of each run's items only those new or changed (a tool call
//! that completed) written and those its thread dropped deleted (items are keyed by their ordinal
//! in the thread, which stays as older ones are dropped: `RunRow::item_ordinals`). The file
//! store's `sqlite/update.rs`, in this store's batched shape: what is stored is read in a query
//! per table, and each kind of change is one statement for the whole source (arrays unnested).
//!
//! Compared value for value with what the server holds, each column cast to text on both sides
//! (`write::run_values` and the like: NUMERIC money, BIGINT from `u64` bit for bit, text as
//! [`super::text::Text`] sends it, NULLs), so the rows are exactly those a replace would leave:
//! `dump` of a store written this way equals a fresh store's (`commands::sync`'s tests). What
//! cannot be written so, a source whose stored runs are not the first of its new ones (a file
//! rewritten, a run whose thread moved, a session gone or now another source's), is replaced
//! whole: [`update`] says `None` before it writes anything.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use color_eyre::eyre::Result;
use postgres::Transaction;

use super::text::Text;
use super::write::{self, RunColumns, RunItems};
use crate::store::backend::Written;
use crate::store::rows::{RunRow, SessionRow, SourceRows, UsageRow};

/// Columns as the server gives them back cast to text (`None`: NULL).
type Values = Vec<Option<String>>;

/// A run as stored: its row id, its session's, its parent's ordinal, and its columns.
struct StoredRun {
    id: i64,
    session: Option<i64>,
    parent: Option<usize>,
    values: Values,
}

/// What the store holds of one source's runs: the runs by ordinal; each run's usage (sorted: its
/// rows have no order of their own) and its items by ordinal, with their text's digest.
#[derive(Default)]
struct Stored {
    runs: HashMap<usize, StoredRun>,
    usage: HashMap<i64, Vec<Values>>,
    items: HashMap<i64, StoredItems>,
}

/// A stored run's items by ordinal: their columns and their text's digest.
type StoredItems = BTreeMap<i64, (Values, Option<Vec<u8>>)>;

/// A session of the source as the store holds it.
enum Slot {
    /// Stored under this source: its row id and columns.
    Stored(i64, Values),
    /// Not stored yet.
    New,
    /// Another source of this machine holds it (a recording of a session its rollouts hold).
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

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Writes `rows` over the stored source `old` (this machine's, not pruned) as what changed, or
/// `None` (nothing written) when it must be replaced whole.
pub(super) fn update(tx: &mut Transaction<'_>, machine: &str, rows: &SourceRows, old: i64) -> Result<Option<Written>> {
    let Some(mut sessions) = sessions_of(tx, machine, old, rows)? else { return Ok(None) };
    let stored = stored(tx, old)?;
    // The stored runs must be the new ones' first (the same thread at each ordinal, still written
    // under this source): the rest is new.
    let thread = |run: &RunRow| Some(write::text(&run.thread));
    let same = stored.runs.iter().all(|(&k, run)| {
        rows.runs.get(k).is_some_and(|new| {
            run.values.first() == Some(&thread(new))
                && new.session.is_none_or(|s| !matches!(sessions.get(s), Some(Slot::Others) | None))
        })
    });
    if !same {
        return Ok(None);
    }
    let mut written = Written::default();
    write::update_source(tx, old, rows)?;
    for (s, slot) in rows.sessions.iter().zip(&mut sessions) {
        written.rows += session_row(tx, old, machine, rows, s, slot)?;
    }
    let ids: Vec<Option<i64>> = sessions.iter().map(Slot::id).collect();
    let plan = runs(tx, old, rows, &ids, &stored, &mut written)?;
    written.rows += parents(tx, rows, &plan.run_ids, &stored)?;
    written.rows += items(tx, rows, &plan)?;
    written.sessions = ids.iter().filter(|s| s.is_some()).count();
    written.duplicates = sessions.len() - written.sessions;
    Ok(Some(written))
}

/// The source's sessions, in the new ones' order, as the store holds them; `None` when a stored
/// session is not among the new ones (its runs would go with it: the source is replaced whole).
fn sessions_of(tx: &mut Transaction<'_>, machine: &str, old: i64, rows: &SourceRows) -> Result<Option<Vec<Slot>>> {
    let agent = write::text(&rows.source.agent);
    let mut by_thread: HashMap<String, (i64, Values)> = HashMap::new();
    let sql = format!("SELECT id, agent, thread, {} FROM sessions WHERE source_id = $1", cast(write::SESSION_COLUMNS));
    for r in tx.query(&sql, &[&old])? {
        if r.get::<_, String>(1) != agent {
            return Ok(None);
        }
        by_thread.insert(r.get(2), (r.get(0), r.get(3)));
    }
    let threads: Vec<Text<'_>> = rows.sessions.iter().map(|s| Text(&s.thread)).collect();
    let unheld: Vec<&Text<'_>> = threads.iter().filter(|t| !by_thread.contains_key(t.get().as_ref())).collect();
    let mut held = HashSet::new();
    if !unheld.is_empty() {
        let sql = "SELECT thread FROM sessions WHERE machine = $1 AND agent = $2 AND thread = ANY($3)";
        for r in tx.query(sql, &[&machine, &Text(&rows.source.agent), &unheld])? {
            held.insert(r.get::<_, String>(0));
        }
    }
    let mut out = Vec::with_capacity(rows.sessions.len());
    for thread in &threads {
        let thread = thread.get();
        out.push(match by_thread.remove(thread.as_ref()) {
            Some((id, cols)) => Slot::Stored(id, cols),
            None if held.contains(thread.as_ref()) => Slot::Others,
            None => Slot::New,
        });
    }
    Ok(by_thread.is_empty().then_some(out))
}

/// `ARRAY[…]` of `columns` (a comma-separated list) cast to text, prefixed by `p.` when given.
fn cast_in(p: &str, columns: &str) -> String {
    let cast: Vec<String> = columns.split(", ").map(|c| format!("{p}{}::text", c.trim())).collect();
    format!("ARRAY[{}]", cast.join(", "))
}

fn cast(columns: &str) -> String {
    cast_in("", columns)
}

/// What the store holds of the source's runs, their usage and their items: three queries.
fn stored(tx: &mut Transaction<'_>, old: i64) -> Result<Stored> {
    let mut out = Stored::default();
    let columns: Vec<&str> = write::run_compared().collect();
    let sql = format!(
        "SELECT r.id, r.ordinal, r.session_id, p.ordinal, {} FROM runs r LEFT JOIN runs p ON p.id = r.parent_id
         WHERE r.source_id = $1",
        cast_in("r.", &columns.join(", "))
    );
    for r in tx.query(&sql, &[&old])? {
        let parent: Option<i64> = r.get(3);
        let run = StoredRun {
            id: r.get(0),
            session: r.get(2),
            parent: parent.and_then(|p| usize::try_from(p).ok()),
            values: r.get(4),
        };
        out.runs.insert(usize::try_from(r.get::<_, i64>(1)).unwrap_or(usize::MAX), run);
    }
    let sql = format!(
        "SELECT u.run_id, {} FROM usage u JOIN runs r ON r.id = u.run_id WHERE r.source_id = $1",
        cast_in("u.", &format!("at_ms, model, {}, cost_pico", write::TOKENS))
    );
    for r in tx.query(&sql, &[&old])? {
        out.usage.entry(r.get(0)).or_default().push(r.get(1));
    }
    for usage in out.usage.values_mut() {
        usage.sort_unstable();
    }
    let sql = format!(
        "SELECT i.run_id, i.ordinal, {}, t.digest FROM items i JOIN runs r ON r.id = i.run_id
         LEFT JOIN texts t ON t.id = i.text_id WHERE r.source_id = $1",
        cast_in("i.", "kind, status, title, at_ms, item_id, turn, tool, op, exit_code, receivers, why")
    );
    for r in tx.query(&sql, &[&old])? {
        out.items.entry(r.get(0)).or_default().insert(r.get(1), (r.get(2), r.get(3)));
    }
    Ok(out)
}

/// One session's row, updated where it changed or inserted where it is new; the rows written.
fn session_row(
    tx: &mut Transaction<'_>,
    source: i64,
    machine: &str,
    rows: &SourceRows,
    s: &SessionRow,
    slot: &mut Slot,
) -> Result<u64> {
    let project = rows.source.project.as_deref();
    let (id, was) = match slot {
        Slot::Others => return Ok(0),
        Slot::New => {
            *slot = match write::insert_session(tx, source, machine, rows, s)? {
                Some(id) => Slot::Stored(id, Vec::new()),
                None => Slot::Others,
            };
            return Ok(u64::from(slot.id().is_some()));
        }
        Slot::Stored(id, was) => (*id, was),
    };
    if *was == write::session_values(s, project) {
        return Ok(0);
    }
    write::update_session(tx, id, s, project)?;
    Ok(1)
}

/// What is written of the runs besides their rows: their ids by ordinal, and each run's items.
struct Plan {
    run_ids: Vec<Option<i64>>,
    items: Vec<(usize, Items)>,
}

/// Of one run: the indexes of its entries written, and the ordinals of its stored items deleted.
#[derive(Default)]
struct Items {
    picked: Vec<usize>,
    gone: Vec<i64>,
}

/// The runs' rows, new ones inserted and changed ones rewritten, a statement each, and the usage
/// of those whose usage differs (deleted and inserted again, a statement each); what their items
/// need.
fn runs(
    tx: &mut Transaction<'_>,
    source: i64,
    rows: &SourceRows,
    ids: &[Option<i64>],
    stored: &Stored,
    written: &mut Written,
) -> Result<Plan> {
    let mut plan = Plan { run_ids: vec![None; rows.runs.len()], items: Vec::new() };
    let (mut new, mut changed) = (RunColumns::default(), RunColumns::default());
    let (mut usage_gone, mut usage_of) = (Vec::new(), Vec::new());
    for (ordinal, run) in rows.runs.iter().enumerate() {
        let Some(session) = run.session_id(ids) else { continue };
        written.runs += 1;
        let Some(was) = stored.runs.get(&ordinal) else {
            new.push(session, ordinal, run);
            written.rows += 1;
            usage_of.push(ordinal);
            plan.items.push((ordinal, Items { picked: (0..run.entries.len()).collect(), gone: Vec::new() }));
            continue;
        };
        plan.run_ids[ordinal] = Some(was.id);
        if was.values != write::run_values(run) || was.session != session {
            changed.push(session, ordinal, run);
            written.rows += 1;
        }
        let mut usage: Vec<Values> = run.usage.iter().map(write::usage_values).collect();
        usage.sort_unstable();
        let held = stored.usage.get(&was.id).map_or(&[][..], Vec::as_slice);
        if held != usage.as_slice() {
            usage_gone.push(was.id);
            written.rows += count(held.len());
            usage_of.push(ordinal);
        }
        let items = item_changes(stored.items.get(&was.id), run);
        if !items.picked.is_empty() || !items.gone.is_empty() {
            plan.items.push((ordinal, items));
        }
    }
    for (ordinal, id) in new.insert(tx, source)? {
        if let Some(slot) = plan.run_ids.get_mut(ordinal) {
            *slot = Some(id);
        }
    }
    changed.update(tx, source)?;
    if !usage_gone.is_empty() {
        tx.execute("DELETE FROM usage WHERE run_id = ANY($1)", &[&usage_gone])?;
    }
    let usage: Vec<(i64, &UsageRow)> = usage_of
        .iter()
        .filter_map(|&k| Some((plan.run_ids[k]?, &rows.runs[k])))
        .flat_map(|(id, run)| run.usage.iter().map(move |u| (id, u)))
        .collect();
    written.rows += count(usage.len());
    write::insert_usage(tx, &usage)?;
    Ok(plan)
}

/// A stored run's items to write: those not stored as they are now (their indexes among its
/// entries), and the stored ones to delete first (dropped by its thread, or changed), by ordinal.
fn item_changes(held: Option<&StoredItems>, run: &RunRow) -> Items {
    let mut out = Items::default();
    let mut now = BTreeSet::new();
    for (k, (item, &n)) in run.entries.iter().zip(&run.item_ordinals).enumerate() {
        let n = write::ordinal(n);
        now.insert(n);
        match held.and_then(|h| h.get(&n)) {
            Some((values, digest))
                if digest.as_deref() == write::digest(run, k).as_ref().map(<[u8; 32]>::as_slice)
                    && *values == write::item_values(item) => {}
            Some(_) => {
                out.picked.push(k);
                out.gone.push(n);
            }
            None => out.picked.push(k),
        }
    }
    out.gone.extend(held.into_iter().flat_map(BTreeMap::keys).filter(|n| !now.contains(n)));
    out
}

/// The parent of each run whose parent is new or changed, in one statement; the rows written.
fn parents(tx: &mut Transaction<'_>, rows: &SourceRows, run_ids: &[Option<i64>], stored: &Stored) -> Result<u64> {
    let (mut children, mut parents) = (Vec::new(), Vec::new());
    for (ordinal, run) in rows.runs.iter().enumerate() {
        let Some(id) = run_ids[ordinal] else { continue };
        let parent = run.parent.filter(|&p| run_ids.get(p).copied().flatten().is_some());
        if stored.runs.get(&ordinal).map_or(parent.is_some(), |was| was.parent != parent) {
            children.push(id);
            parents.push(parent.and_then(|p| run_ids[p]));
        }
    }
    write::set_parents(tx, &children, &parents)?;
    Ok(count(children.len()))
}

/// The items of `plan` written: the new and changed ones' texts counted before those the deleted
/// ones held are given back (a text both hold is never deleted and written again), the texts no
/// item holds any more deleted, then the new and changed ones inserted; the rows written.
fn items(tx: &mut Transaction<'_>, rows: &SourceRows, plan: &Plan) -> Result<u64> {
    let mut batch = Vec::with_capacity(plan.items.len());
    let (mut gone_runs, mut gone_ordinals) = (Vec::new(), Vec::new());
    for (k, change) in &plan.items {
        let Some(run) = plan.run_ids[*k] else { continue };
        batch.push(RunItems { run, row: &rows.runs[*k], picked: change.picked.clone() });
        gone_runs.extend(change.gone.iter().map(|_| run));
        gone_ordinals.extend_from_slice(&change.gone);
    }
    let texts = write::add_texts(tx, &batch)?;
    if !gone_runs.is_empty() {
        let released: Vec<i64> = tx
            .query(
                "WITH gone AS (
                     DELETE FROM items i USING unnest($1::bigint[], $2::bigint[]) AS g(run, ordinal)
                     WHERE i.run_id = g.run AND i.ordinal = g.ordinal RETURNING i.text_id),
                 held AS (SELECT text_id, count(*) AS n FROM gone WHERE text_id IS NOT NULL GROUP BY text_id)
                 UPDATE texts SET refs = texts.refs - held.n FROM held WHERE texts.id = held.text_id
                 RETURNING texts.id",
                &[&gone_runs, &gone_ordinals],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        write::collect(tx, &released)?;
    }
    write::insert_items(tx, &batch, &texts)?;
    Ok(count(gone_runs.len() + batch.iter().map(|i| i.picked.len()).sum::<usize>()))
}
