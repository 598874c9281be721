//! Writing the team store: a source replaced whole (what `update` cannot write as changes), the
//! rows and columns both ways write, and a prune; the sessions of every source stamped with the
//! machine that read them. A batch of sources is one transaction (`Postgres::write`).
//!
//! Item text is kept once for the fleet (by its SHA-256) and counted by reference. What the store
//! held for a source is released, and the texts no item holds any more are deleted only once the
//! new items' references are counted, so that a text both hold is never deleted and inserted
//! again. Rows go in a statement per table and source (arrays unnested), not a statement per row:
//! a server across a network pays for each.

use std::collections::BTreeMap;
use std::path::PathBuf;

use color_eyre::eyre::Result;
use postgres::types::ToSql;
use postgres::{Client, Transaction};
use sha2::{Digest, Sha256};

use super::text::{Text, opt};
use crate::model::prices::Pico;
use crate::model::{AgentOp, Tokens};
use crate::store::backend::{Pruned, Written};
use crate::store::rows::{FileState, ItemRow, RunRow, SessionRow, SourceRows, UsageRow};

/// Writers take turns on this transaction-level lock (any fixed number: "swarmwri" in ASCII).
pub(super) const WRITE_LOCK: i64 = 0x7377_6172_6d77_7269;

/// An unsigned figure in a signed BIGINT, bit for bit (as in SQLite: sums are made in Rust).
pub(super) fn int(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

pub(super) fn uint(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// Money as the exact decimal count of pico-dollars, cast to NUMERIC by the statement.
fn pico(p: Pico) -> String {
    p.0.to_string()
}

fn tokens(t: &Tokens) -> [i64; 7] {
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

/// Columns of tokens by kind, in `tokens` order.
pub(super) const TOKENS: &str = "t_input, t_cached, t_cache_write, t_cache_write_1h, t_output, t_reasoning, t_total";

/// The stored source of this machine with `key`: its id, and whether it was pruned.
pub(super) fn stored(tx: &mut Transaction<'_>, machine: &str, key: &str) -> Result<Option<(i64, bool)>> {
    let row =
        tx.query_opt("SELECT id, pruned FROM sources WHERE machine = $1 AND key = $2", &[&machine, &Text(key)])?;
    Ok(row.map(|r| (r.get(0), r.get(1))))
}

/// One source's rows in place of what the store held for it on this machine (`old`), whole.
pub(super) fn replace(tx: &mut Transaction<'_>, machine: &str, rows: &SourceRows, old: Option<i64>) -> Result<Written> {
    let (mut gone, mut released) = (0, Vec::new());
    if let Some(old) = old {
        // The rows it held, for what this write cost (as the file store counts it).
        gone = tx
            .query_one(
                "SELECT (SELECT count(*) FROM sessions WHERE source_id = $1) + (SELECT count(*) FROM runs WHERE source_id = $1)
                      + (SELECT count(*) FROM usage u JOIN runs r ON r.id = u.run_id WHERE r.source_id = $1)
                      + (SELECT count(*) FROM items i JOIN runs r ON r.id = i.run_id WHERE r.source_id = $1)",
                &[&old],
            )?
            .get::<_, i64>(0);
        released = release(tx, "r.source_id = $1", &[&old])?;
        tx.execute("DELETE FROM sources WHERE id = $1", &[&old])?;
    }
    let source = insert_source(tx, machine, rows)?;
    let mut sessions = Vec::with_capacity(rows.sessions.len());
    for s in &rows.sessions {
        sessions.push(insert_session(tx, source, machine, rows, s)?);
    }
    let ids = insert_runs(tx, source, rows, &sessions)?;
    // Only the items of the runs written hold a reference (a run whose session is another
    // source's is that source's).
    let items: Vec<RunItems<'_>> = rows
        .runs
        .iter()
        .zip(&ids)
        .filter_map(|(row, id)| Some(RunItems { run: (*id)?, row, picked: (0..row.entries.len()).collect() }))
        .collect();
    let texts = add_texts(tx, &items)?;
    insert_items(tx, &items, &texts)?;
    // Collected once the new references are in: a text both hold is never deleted and inserted again.
    collect(tx, &released)?;
    let stored = sessions.iter().filter(|s| s.is_some()).count();
    let added: usize = items.iter().map(|i| 1 + i.row.usage.len() + i.row.entries.len()).sum();
    Ok(Written {
        sessions: stored,
        duplicates: sessions.len() - stored,
        runs: items.len(),
        rows: uint(gone) + u64::try_from(stored + added).unwrap_or(u64::MAX),
    })
}

/// A run's items written by one batch: the indexes of its entries written (all of a new run's;
/// of a stored run's, those not stored as they are now).
pub(super) struct RunItems<'r> {
    pub run: i64,
    pub row: &'r RunRow,
    pub picked: Vec<usize>,
}

/// The digest that keys an entry's text as this store keeps it (`None`: no text): the one its
/// reader figured, unless the text holds a NUL, which the server never sees ([`Text`]).
pub(super) fn digest(run: &RunRow, k: usize) -> Option<[u8; 32]> {
    let text = &run.entries[k].text;
    if text.is_empty() {
        return None;
    }
    match run.digests.get(k).copied().flatten() {
        Some(d) if !text.contains('\0') => Some(d),
        _ => Some(Sha256::digest(Text(text).get().as_bytes()).into()),
    }
}

/// The texts of the items to be written, each distinct one added once with the references they
/// make; their ids by digest.
pub(super) fn add_texts(tx: &mut Transaction<'_>, items: &[RunItems<'_>]) -> Result<BTreeMap<[u8; 32], i64>> {
    let mut counted: BTreeMap<[u8; 32], (&str, i64)> = BTreeMap::new();
    for i in items {
        for &k in &i.picked {
            if let Some(d) = digest(i.row, k) {
                counted.entry(d).or_insert((&i.row.entries[k].text, 0)).1 += 1;
            }
        }
    }
    let mut ids = BTreeMap::new();
    if counted.is_empty() {
        return Ok(ids);
    }
    let digests: Vec<&[u8]> = counted.keys().map(<[u8; 32]>::as_slice).collect();
    let bodies: Vec<Text<'_>> = counted.values().map(|(body, _)| Text(body)).collect();
    let refs: Vec<i64> = counted.values().map(|(_, n)| *n).collect();
    // In digest order: the same order whoever writes (the write lock is the guarantee, this the habit).
    for row in tx.query(
        "INSERT INTO texts (digest, body, refs) SELECT * FROM unnest($1::bytea[], $2::text[], $3::bigint[])
         ON CONFLICT (digest) DO UPDATE SET refs = texts.refs + excluded.refs RETURNING digest, id",
        &[&digests, &bodies, &refs],
    )? {
        let digest: &[u8] = row.get(0);
        if let Ok(digest) = <[u8; 32]>::try_from(digest) {
            ids.insert(digest, row.get(1));
        }
    }
    Ok(ids)
}

/// Gives back the references the items of the runs matched by `runs_where` (over `runs r`) hold;
/// the texts they held, for [`collect`] once those items are gone.
fn release(tx: &mut Transaction<'_>, runs_where: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<i64>> {
    let rows = tx.query(
        &format!(
            "UPDATE texts SET refs = texts.refs - held.n
             FROM (SELECT i.text_id, count(*) AS n FROM items i JOIN runs r ON r.id = i.run_id
                   WHERE {runs_where} AND i.text_id IS NOT NULL GROUP BY i.text_id) AS held
             WHERE texts.id = held.text_id RETURNING texts.id"
        ),
        params,
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Deletes the released texts no item holds any more.
pub(super) fn collect(tx: &mut Transaction<'_>, released: &[i64]) -> Result<()> {
    if !released.is_empty() {
        tx.execute("DELETE FROM texts WHERE id = ANY($1) AND refs <= 0", &[&released])?;
    }
    Ok(())
}

fn insert_source(tx: &mut Transaction<'_>, machine: &str, rows: &SourceRows) -> Result<i64> {
    let s = &rows.source;
    let id: i64 = tx
        .query_one(
            "INSERT INTO sources (machine, key, place, agent, project, fingerprint, synced_ms, lines, bytes, format,
                                  error, stats_json, tree_text)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
            &[
                &machine,
                &Text(&s.key),
                &Text(&s.place),
                &Text(&s.agent),
                &opt(s.project.as_deref()),
                &Text(&s.fingerprint),
                &rows.synced_ms,
                &int(rows.lines),
                &int(rows.bytes),
                &Text(&rows.format),
                &opt(rows.error.as_deref()),
                &Text(&rows.stats_json),
                &Text(&rows.tree_text),
            ],
        )?
        .get(0);
    insert_files(tx, id, &s.files)?;
    Ok(id)
}

/// The stored source `id`'s row and files made what `rows` says (its key and machine stay).
pub(super) fn update_source(tx: &mut Transaction<'_>, id: i64, rows: &SourceRows) -> Result<()> {
    let s = &rows.source;
    tx.execute(
        "UPDATE sources SET place = $2, agent = $3, project = $4, fingerprint = $5, synced_ms = $6, lines = $7,
                            bytes = $8, format = $9, error = $10, stats_json = $11, tree_text = $12
         WHERE id = $1",
        &[
            &id,
            &Text(&s.place),
            &Text(&s.agent),
            &opt(s.project.as_deref()),
            &Text(&s.fingerprint),
            &rows.synced_ms,
            &int(rows.lines),
            &int(rows.bytes),
            &Text(&rows.format),
            &opt(rows.error.as_deref()),
            &Text(&rows.stats_json),
            &Text(&rows.tree_text),
        ],
    )?;
    // Written again, as a replace does: `present` is true again for a file read.
    tx.execute("DELETE FROM files WHERE source_id = $1", &[&id])?;
    insert_files(tx, id, &s.files)
}

fn insert_files(tx: &mut Transaction<'_>, id: i64, files: &[FileState]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let paths: Vec<String> = files.iter().map(|f| f.path.to_string_lossy().into_owned()).collect();
    let paths: Vec<Text<'_>> = paths.iter().map(|p| Text(p)).collect();
    let dev: Vec<i64> = files.iter().map(|f| int(f.dev)).collect();
    let ino: Vec<i64> = files.iter().map(|f| int(f.ino)).collect();
    let size: Vec<i64> = files.iter().map(|f| int(f.size)).collect();
    let mtime: Vec<i64> = files.iter().map(|f| f.mtime_ns).collect();
    let head: Vec<&[u8]> = files.iter().map(|f| f.head.as_slice()).collect();
    tx.execute(
        "INSERT INTO files (source_id, path, dev, ino, size, mtime_ns, head)
         SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[])",
        &[&id, &paths, &dev, &ino, &size, &mtime, &head],
    )?;
    Ok(())
}

/// A session's columns after its source, machine, agent and thread, in [`session_params`] and
/// [`session_values`] order.
pub(super) const SESSION_COLUMNS: &str = "name, project, started_ms, ended_ms, status, agents, depth, t_input, \
     t_cached, t_cache_write, t_cache_write_1h, t_output, t_reasoning, t_total, cost_pico, priced";

/// [`SESSION_COLUMNS`] as the insert and an update in place bind them (cost is cast to NUMERIC by
/// the statement).
fn session_params<'a>(s: &'a SessionRow, project: Option<&'a str>) -> Vec<Box<dyn ToSql + Sync + 'a>> {
    let mut out: Vec<Box<dyn ToSql + Sync + 'a>> = vec![
        Box::new(Text(&s.name)),
        Box::new(opt(project)),
        Box::new(s.started_ms),
        Box::new(s.ended_ms),
        Box::new(Text(&s.status)),
        Box::new(i64::from(s.agents)),
        Box::new(i64::from(s.depth)),
    ];
    out.extend(tokens(&s.figures.tokens).map(|t| Box::new(t) as Box<dyn ToSql + Sync>));
    out.push(Box::new(pico(s.figures.cost)));
    out.push(Box::new(s.figures.priced));
    out
}

/// [`SESSION_COLUMNS`] as the server gives them back cast to text: what a stored session is
/// compared by.
pub(super) fn session_values(s: &SessionRow, project: Option<&str>) -> Vec<Option<String>> {
    let mut out = vec![
        Some(text(&s.name)),
        project.map(text),
        s.started_ms.map(|v| v.to_string()),
        s.ended_ms.map(|v| v.to_string()),
        Some(text(&s.status)),
        Some(s.agents.to_string()),
        Some(s.depth.to_string()),
    ];
    out.extend(tokens(&s.figures.tokens).map(|t| Some(t.to_string())));
    out.push(Some(pico(s.figures.cost)));
    out.push(Some(boolean(s.figures.priced)));
    out
}

/// Text as the server keeps it (and gives it back cast to text).
pub(super) fn text(s: &str) -> String {
    Text(s).get().into_owned()
}

/// A boolean cast to text, as the server writes it.
pub(super) fn boolean(b: bool) -> String {
    (if b { "true" } else { "false" }).to_owned()
}

/// The session's row id; `None` when another source of this machine already holds a session of
/// that agent and id (a tee's recording of a session whose rollouts were indexed first).
pub(super) fn insert_session(
    tx: &mut Transaction<'_>,
    source: i64,
    machine: &str,
    rows: &SourceRows,
    s: &SessionRow,
) -> Result<Option<i64>> {
    let agent = Text(&rows.source.agent);
    let held = tx.query_opt(
        "SELECT 1 FROM sessions WHERE machine = $1 AND agent = $2 AND thread = $3",
        &[&machine, &agent, &Text(&s.thread)],
    )?;
    if held.is_some() {
        return Ok(None);
    }
    let columns = session_params(s, rows.source.project.as_deref());
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&source, &machine, &agent];
    let thread = Text(&s.thread);
    params.push(&thread);
    params.extend(columns.iter().map(|c| &**c as &(dyn ToSql + Sync)));
    let id: i64 = tx
        .query_one(
            &format!(
                "INSERT INTO sessions (source_id, machine, agent, thread, {SESSION_COLUMNS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                         $19::text::numeric, $20)
                 RETURNING id"
            ),
            &params,
        )?
        .get(0);
    Ok(Some(id))
}

/// The stored session `id`'s columns made what `s` says (its source, machine, agent and thread stay).
pub(super) fn update_session(tx: &mut Transaction<'_>, id: i64, s: &SessionRow, project: Option<&str>) -> Result<()> {
    let columns = session_params(s, project);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id];
    params.extend(columns.iter().map(|c| &**c as &(dyn ToSql + Sync)));
    tx.execute(
        &format!(
            "UPDATE sessions SET ({SESSION_COLUMNS}) =
                 ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::text::numeric, $17)
             WHERE id = $1"
        ),
        &params,
    )?;
    Ok(())
}

/// The source's runs (one statement), then their usage (one), then who is whose parent (one);
/// each run's id, by ordinal (`None`: another source's, with its session).
fn insert_runs(
    tx: &mut Transaction<'_>,
    source: i64,
    rows: &SourceRows,
    sessions: &[Option<i64>],
) -> Result<Vec<Option<i64>>> {
    let mut c = RunColumns::default();
    for (ordinal, run) in rows.runs.iter().enumerate() {
        // A run whose session is another source's is that source's.
        let Some(session) = run.session_id(sessions) else { continue };
        c.push(session, ordinal, run);
    }
    let mut ids: Vec<Option<i64>> = vec![None; rows.runs.len()];
    for (ordinal, id) in c.insert(tx, source)? {
        ids[ordinal] = Some(id);
    }
    let usage: Vec<(i64, &UsageRow)> = rows
        .runs
        .iter()
        .zip(&ids)
        .filter_map(|(run, id)| Some(((*id)?, run)))
        .flat_map(|(id, run)| run.usage.iter().map(move |u| (id, u)))
        .collect();
    insert_usage(tx, &usage)?;
    // Parents after every run is in: a child can be seen before its parent.
    let (children, parents): (Vec<i64>, Vec<Option<i64>>) = rows
        .runs
        .iter()
        .zip(&ids)
        .filter_map(|(run, id)| Some(((*id)?, Some(run.parent.and_then(|p| ids.get(p).copied().flatten())?))))
        .unzip();
    set_parents(tx, &children, &parents)?;
    Ok(ids)
}

/// Sets each run of `children` the parent at the same place in `parents` (`None`: none).
pub(super) fn set_parents(tx: &mut Transaction<'_>, children: &[i64], parents: &[Option<i64>]) -> Result<()> {
    if !children.is_empty() {
        tx.execute(
            "UPDATE runs SET parent_id = p.parent FROM unnest($1::bigint[], $2::bigint[]) AS p(id, parent)
             WHERE runs.id = p.id",
            &[&children, &parents],
        )?;
    }
    Ok(())
}

/// Each usage row with its run's id, in one statement.
pub(super) fn insert_usage(tx: &mut Transaction<'_>, usage: &[(i64, &UsageRow)]) -> Result<()> {
    if usage.is_empty() {
        return Ok(());
    }
    let run: Vec<i64> = usage.iter().map(|(id, _)| *id).collect();
    let at: Vec<Option<i64>> = usage.iter().map(|(_, u)| u.at_ms).collect();
    let model: Vec<Option<Text<'_>>> = usage.iter().map(|(_, u)| opt(u.model.as_deref())).collect();
    let t: Vec<[i64; 7]> = usage.iter().map(|(_, u)| tokens(&u.tokens)).collect();
    let column = |k: usize| t.iter().map(|v| v[k]).collect::<Vec<i64>>();
    let columns: Vec<Vec<i64>> = (0..7).map(column).collect();
    let cost: Vec<String> = usage.iter().map(|(_, u)| pico(u.cost)).collect();
    tx.execute(
        &format!(
            "INSERT INTO usage (run_id, at_ms, model, {TOKENS}, cost_pico)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[],
                                  $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[]::numeric[])"
        ),
        &[
            &run,
            &at,
            &model,
            &columns[0],
            &columns[1],
            &columns[2],
            &columns[3],
            &columns[4],
            &columns[5],
            &columns[6],
            &cost,
        ],
    )?;
    Ok(())
}

/// A usage row's columns after its run (`at_ms, model`, tokens, `cost_pico`) as the server gives
/// them back cast to text.
pub(super) fn usage_values(u: &UsageRow) -> Vec<Option<String>> {
    let mut out = vec![u.at_ms.map(|v| v.to_string()), u.model.as_deref().map(text)];
    out.extend(tokens(&u.tokens).map(|t| Some(t.to_string())));
    out.push(Some(pico(u.cost)));
    out
}

/// The picked items of each run, in one statement, their texts' ids from `texts`.
pub(super) fn insert_items(
    tx: &mut Transaction<'_>,
    items: &[RunItems<'_>],
    texts: &BTreeMap<[u8; 32], i64>,
) -> Result<()> {
    let mut c = ItemColumns::default();
    for i in items {
        for &k in &i.picked {
            let item = &i.row.entries[k];
            c.run.push(i.run);
            c.ordinal.push(ordinal(i.row.item_ordinals.get(k).copied().unwrap_or(u64::MAX)));
            c.kind.push(Text(&item.kind));
            c.status.push(item.status);
            c.title.push(Text(&item.title));
            c.text.push(digest(i.row, k).and_then(|d| texts.get(&d).copied()));
            c.at.push(item.at_ms);
            c.item_id.push((!item.id.is_empty()).then(|| Text(&item.id)));
            c.turn.push(item.turn.map(i64::from));
            c.tool.push(item.tool.as_deref().map(Text));
            c.op.push(item.op.map(AgentOp::word));
            c.exit_code.push(item.exit_code);
            c.receivers.push((!item.receivers.is_empty()).then(|| item.receivers.join("\n")));
            c.why.push(item.why.as_deref().map(Text));
        }
    }
    if c.run.is_empty() {
        return Ok(());
    }
    let receivers: Vec<Option<Text<'_>>> = c.receivers.iter().map(|r| r.as_deref().map(Text)).collect();
    tx.execute(
        "INSERT INTO items (run_id, ordinal, kind, status, title, text_id, at_ms, item_id, turn, tool, op, exit_code,
                            receivers, why)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[],
                              $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::bigint[],
                              $13::text[], $14::text[])",
        &[
            &c.run,
            &c.ordinal,
            &c.kind,
            &c.status,
            &c.title,
            &c.text,
            &c.at,
            &c.item_id,
            &c.turn,
            &c.tool,
            &c.op,
            &c.exit_code,
            &receivers,
            &c.why,
        ],
    )?;
    Ok(())
}

/// An item's ordinal in its thread, as its row keys it.
pub(super) fn ordinal(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An item's columns after its run, ordinal and text (`kind, status, title, at_ms, item_id, turn,
/// tool, op, exit_code, receivers, why`), as the server gives them back cast to text.
pub(super) fn item_values(i: &ItemRow) -> Vec<Option<String>> {
    vec![
        Some(text(&i.kind)),
        Some(i.status.to_owned()),
        Some(text(&i.title)),
        i.at_ms.map(|v| v.to_string()),
        (!i.id.is_empty()).then(|| Text(&i.id).get().into_owned()),
        i.turn.map(|v| v.to_string()),
        i.tool.as_deref().map(text),
        i.op.map(|o| AgentOp::word(o).to_owned()),
        i.exit_code.map(|v| v.to_string()),
        (!i.receivers.is_empty()).then(|| Text(&i.receivers.join("\n")).get().into_owned()),
        i.why.as_deref().map(text),
    ]
}

/// A source's items, column by column, as `unnest` takes them.
#[derive(Default)]
struct ItemColumns<'a> {
    run: Vec<i64>,
    ordinal: Vec<i64>,
    kind: Vec<Text<'a>>,
    status: Vec<&'static str>,
    title: Vec<Text<'a>>,
    text: Vec<Option<i64>>,
    at: Vec<Option<i64>>,
    item_id: Vec<Option<Text<'a>>>,
    turn: Vec<Option<i64>>,
    tool: Vec<Option<Text<'a>>>,
    op: Vec<Option<&'static str>>,
    exit_code: Vec<Option<i64>>,
    receivers: Vec<Option<String>>,
    why: Vec<Option<Text<'a>>>,
}

/// A run's columns after its source, as `unnest` takes them (name and element type), in
/// [`RunColumns::params`] order; from `thread` on, in [`run_values`] order.
const RUN_ARRAYS: [(&str, &str); 33] = [
    ("session_id", "bigint"),
    ("ordinal", "bigint"),
    ("thread", "text"),
    ("depth", "bigint"),
    ("role", "text"),
    ("via", "text"),
    ("card", "text"),
    ("agent_type", "text"),
    ("name", "text"),
    ("nickname", "text"),
    ("brief", "text"),
    ("model", "text"),
    ("models", "text"),
    ("status", "text"),
    ("started_ms", "bigint"),
    ("ended_ms", "bigint"),
    ("turns", "bigint"),
    ("items", "bigint"),
    ("tool_calls", "bigint"),
    ("t_input", "bigint"),
    ("t_cached", "bigint"),
    ("t_cache_write", "bigint"),
    ("t_cache_write_1h", "bigint"),
    ("t_output", "bigint"),
    ("t_reasoning", "bigint"),
    ("t_total", "bigint"),
    ("cost_pico", "numeric"),
    ("priced", "boolean"),
    ("cost_source", "text"),
    ("reported_cost_pico", "numeric"),
    ("answer", "text"),
    ("files_changed", "text"),
    ("file", "text"),
];

/// The columns a stored run is compared by ([`run_values`]'s), after its session and ordinal.
pub(super) fn run_compared() -> impl Iterator<Item = &'static str> {
    RUN_ARRAYS[2..].iter().map(|(c, _)| *c)
}

/// `unnest` of [`RUN_ARRAYS`], bound from `$2` on (money sent as text, cast to NUMERIC here).
fn run_unnest() -> String {
    let arrays: Vec<String> = RUN_ARRAYS
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| match *ty {
            "numeric" => format!("${}::text[]::numeric[]", i + 2),
            ty => format!("${}::{ty}[]", i + 2),
        })
        .collect();
    format!("unnest({})", arrays.join(", "))
}

/// A run's columns from `thread` on ([`RUN_ARRAYS`]) as the server gives them back cast to text:
/// what a stored run is compared by.
pub(super) fn run_values(run: &RunRow) -> Vec<Option<String>> {
    let owned = |s: Option<&str>| s.map(text);
    let mut out = vec![
        Some(text(&run.thread)),
        Some(run.depth.to_string()),
        Some(run.role.to_owned()),
        run.via.map(str::to_owned),
        owned(run.card.as_deref()),
        owned(run.agent_type.as_deref()),
        Some(text(&run.name)),
        owned(run.nickname.as_deref()),
        owned(run.brief.as_deref()),
        owned(run.model.as_deref()),
        Some(text(&run.models.join("\n"))),
        Some(text(&run.status)),
        run.started_ms.map(|v| v.to_string()),
        run.ended_ms.map(|v| v.to_string()),
        Some(run.turns.to_string()),
        Some(run.items.to_string()),
        Some(run.tool_calls.to_string()),
    ];
    out.extend(tokens(&run.figures.tokens).map(|t| Some(t.to_string())));
    out.extend([
        Some(pico(run.figures.cost)),
        Some(boolean(run.figures.priced)),
        run.cost_source.map(str::to_owned),
        run.reported_cost.map(pico),
        owned(run.answer.as_deref()),
        Some(text(&run.files_changed.join("\n"))),
        owned(run.file.as_deref()),
    ]);
    out
}

/// Runs, column by column, as `unnest` takes them ([`RUN_ARRAYS`]).
#[derive(Default)]
pub(super) struct RunColumns<'a> {
    session: Vec<Option<i64>>,
    ordinal: Vec<i64>,
    thread: Vec<Text<'a>>,
    depth: Vec<i64>,
    role: Vec<&'static str>,
    via: Vec<Option<&'static str>>,
    card: Vec<Option<Text<'a>>>,
    agent_type: Vec<Option<Text<'a>>>,
    name: Vec<Text<'a>>,
    nickname: Vec<Option<Text<'a>>>,
    brief: Vec<Option<Text<'a>>>,
    model: Vec<Option<Text<'a>>>,
    /// Joined and made text the server takes, as they are pushed.
    models: Vec<String>,
    status: Vec<Text<'a>>,
    started: Vec<Option<i64>>,
    ended: Vec<Option<i64>>,
    turns: Vec<i64>,
    items: Vec<i64>,
    tool_calls: Vec<i64>,
    tokens: [Vec<i64>; 7],
    cost: Vec<String>,
    priced: Vec<bool>,
    cost_source: Vec<Option<&'static str>>,
    reported: Vec<Option<String>>,
    answer: Vec<Option<Text<'a>>>,
    files_changed: Vec<String>,
    file: Vec<Option<Text<'a>>>,
}

impl<'a> RunColumns<'a> {
    pub(super) fn push(&mut self, session: Option<i64>, ordinal: usize, run: &'a RunRow) {
        self.session.push(session);
        self.ordinal.push(i64::try_from(ordinal).unwrap_or(i64::MAX));
        self.thread.push(Text(&run.thread));
        self.depth.push(i64::from(run.depth));
        self.role.push(run.role);
        self.via.push(run.via);
        self.card.push(opt(run.card.as_deref()));
        self.agent_type.push(opt(run.agent_type.as_deref()));
        self.name.push(Text(&run.name));
        self.nickname.push(opt(run.nickname.as_deref()));
        self.brief.push(opt(run.brief.as_deref()));
        self.model.push(opt(run.model.as_deref()));
        self.models.push(Text(&run.models.join("\n")).get().into_owned());
        self.status.push(Text(&run.status));
        self.started.push(run.started_ms);
        self.ended.push(run.ended_ms);
        self.turns.push(i64::from(run.turns));
        self.items.push(i64::from(run.items));
        self.tool_calls.push(i64::from(run.tool_calls));
        for (column, t) in self.tokens.iter_mut().zip(tokens(&run.figures.tokens)) {
            column.push(t);
        }
        self.cost.push(pico(run.figures.cost));
        self.priced.push(run.figures.priced);
        self.cost_source.push(run.cost_source);
        self.reported.push(run.reported_cost.map(pico));
        self.answer.push(opt(run.answer.as_deref()));
        self.files_changed.push(Text(&run.files_changed.join("\n")).get().into_owned());
        self.file.push(opt(run.file.as_deref()));
    }

    fn is_empty(&self) -> bool {
        self.ordinal.is_empty()
    }

    /// The arrays in [`RUN_ARRAYS`] order, after the source's id.
    fn params<'p>(&'p self, source: &'p i64) -> Vec<&'p (dyn ToSql + Sync)> {
        let mut out: Vec<&(dyn ToSql + Sync)> = vec![
            source,
            &self.session,
            &self.ordinal,
            &self.thread,
            &self.depth,
            &self.role,
            &self.via,
            &self.card,
            &self.agent_type,
            &self.name,
            &self.nickname,
            &self.brief,
            &self.model,
            &self.models,
            &self.status,
            &self.started,
            &self.ended,
            &self.turns,
            &self.items,
            &self.tool_calls,
        ];
        out.extend(self.tokens.iter().map(|t| t as &(dyn ToSql + Sync)));
        out.extend([
            &self.cost as &(dyn ToSql + Sync),
            &self.priced,
            &self.cost_source,
            &self.reported,
            &self.answer,
            &self.files_changed,
            &self.file,
        ]);
        out
    }

    /// Inserts the runs under `source`, in one statement; each one's ordinal and new id.
    pub(super) fn insert(&self, tx: &mut Transaction<'_>, source: i64) -> Result<Vec<(usize, i64)>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let columns: Vec<&str> = RUN_ARRAYS.iter().map(|(c, _)| *c).collect();
        let sql = format!(
            "INSERT INTO runs (source_id, {}) SELECT $1, * FROM {} RETURNING ordinal, id",
            columns.join(", "),
            run_unnest()
        );
        let rows = tx.query(&sql, &self.params(&source))?;
        Ok(rows.iter().map(|r| (usize::try_from(r.get::<_, i64>(0)).unwrap_or(usize::MAX), r.get(1))).collect())
    }

    /// Rewrites the stored runs of `source` at these ordinals, in one statement.
    pub(super) fn update(&self, tx: &mut Transaction<'_>, source: i64) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let columns: Vec<&str> = RUN_ARRAYS.iter().map(|(c, _)| *c).collect();
        let set: Vec<String> = columns.iter().filter(|c| **c != "ordinal").map(|c| format!("{c} = n.{c}")).collect();
        let sql = format!(
            "UPDATE runs SET {} FROM {} AS n({}) WHERE runs.source_id = $1 AND runs.ordinal = n.ordinal",
            set.join(", "),
            run_unnest(),
            columns.join(", ")
        );
        tx.execute(&sql, &self.params(&source))?;
        Ok(())
    }
}

pub(super) fn mark_missing(client: &mut Client, machine: &str, key: &str, missing: &[PathBuf]) -> Result<()> {
    let paths: Vec<String> = missing.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let paths: Vec<Text<'_>> = paths.iter().map(|p| Text(p)).collect();
    client.execute(
        "UPDATE files SET present = FALSE WHERE path = ANY($3)
           AND source_id = (SELECT id FROM sources WHERE machine = $1 AND key = $2)",
        &[&machine, &Text(key), &paths],
    )?;
    Ok(())
}

/// Removes this machine's sessions that ended before `before_ms` (others' are theirs to prune).
pub(super) fn prune(client: &mut Client, machine: &str, before_ms: i64) -> Result<Pruned> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])?;
    let old = "SELECT id FROM sessions WHERE machine = $1 AND coalesce(ended_ms, started_ms) < $2";
    let runs: i64 = tx
        .query_one(&format!("SELECT count(*) FROM runs WHERE session_id IN ({old})"), &[&machine, &before_ms])?
        .get(0);
    let released = release(&mut tx, &format!("r.session_id IN ({old})"), &[&machine, &before_ms])?;
    let sources: Vec<i64> = tx
        .query(
            "SELECT DISTINCT source_id FROM sessions WHERE machine = $1 AND coalesce(ended_ms, started_ms) < $2",
            &[&machine, &before_ms],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Before the sessions go, while the acts on them can be told from acts on kept ones; this
    // machine's acts, on its sessions.
    let acts = tx.execute(
        "DELETE FROM acts WHERE machine = $1
           AND (at_ms < $2 OR session IN
                (SELECT thread FROM sessions WHERE machine = $1 AND coalesce(ended_ms, started_ms) < $2))
           AND (session IS NULL OR session NOT IN
                (SELECT thread FROM sessions WHERE machine = $1 AND coalesce(ended_ms, started_ms, $2) >= $2))",
        &[&machine, &before_ms],
    )?;
    let sessions = tx.execute(
        "DELETE FROM sessions WHERE machine = $1 AND coalesce(ended_ms, started_ms) < $2",
        &[&machine, &before_ms],
    )?;
    collect(&mut tx, &released)?;
    // A source with no session left keeps only what tells it was read (its files), so that its
    // unchanged files are not read back in.
    for source in sources {
        let left: i64 = tx.query_one("SELECT count(*) FROM sessions WHERE source_id = $1", &[&source])?.get(0);
        if left == 0 {
            let released = release(&mut tx, "r.source_id = $1", &[&source])?;
            tx.execute("DELETE FROM runs WHERE source_id = $1", &[&source])?;
            collect(&mut tx, &released)?;
            tx.execute("UPDATE sources SET pruned = TRUE, stats_json = '', tree_text = '' WHERE id = $1", &[&source])?;
        }
    }
    tx.commit()?;
    Ok(Pruned {
        sessions: usize::try_from(sessions).unwrap_or(usize::MAX),
        runs: usize::try_from(runs).unwrap_or(usize::MAX),
        acts: usize::try_from(acts).unwrap_or(usize::MAX),
    })
}
