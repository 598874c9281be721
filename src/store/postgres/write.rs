//! Writing the team store: a batch of sources, each replaced whole, in one transaction; the
//! sessions of every source stamped with the machine that read them.
//!
//! Item text is kept once for the fleet (by its SHA-256) and counted by reference. A source's
//! texts are added (their references counted) before what the store held for it is released, so
//! that a text both hold is never deleted and inserted again. Rows go in a statement per table and
//! source (arrays unnested), not a statement per row: a server across a network pays for each.

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
use crate::store::rows::{SessionRow, SourceRows};

/// Writers take turns on this transaction-level lock (any fixed number: "swarmwri" in ASCII).
const WRITE_LOCK: i64 = 0x7377_6172_6d77_7269;

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

pub(super) fn write(client: &mut Client, machine: &str, batch: &[SourceRows]) -> Result<Written> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])?;
    let mut written = Written::default();
    for rows in batch {
        let w = replace(&mut tx, machine, rows)?;
        written.sessions += w.sessions;
        written.duplicates += w.duplicates;
        written.runs += w.runs;
    }
    tx.commit()?;
    Ok(written)
}

/// One source's rows in place of what the store held for it on this machine.
fn replace(tx: &mut Transaction<'_>, machine: &str, rows: &SourceRows) -> Result<Written> {
    let texts = add_texts(tx, rows)?;
    let old =
        tx.query_opt("SELECT id FROM sources WHERE machine = $1 AND key = $2", &[&machine, &Text(&rows.source.key)])?;
    if let Some(old) = old {
        let old: i64 = old.get(0);
        let released = release(tx, "r.source_id = $1", &[&old])?;
        tx.execute("DELETE FROM sources WHERE id = $1", &[&old])?;
        collect(tx, &released)?;
    }
    let source = insert_source(tx, machine, rows)?;
    let mut sessions = Vec::with_capacity(rows.sessions.len());
    for s in &rows.sessions {
        sessions.push(insert_session(tx, source, machine, rows, s)?);
    }
    let runs = insert_runs(tx, source, rows, &sessions, &texts)?;
    let stored = sessions.iter().filter(|s| s.is_some()).count();
    Ok(Written { sessions: stored, duplicates: sessions.len() - stored, runs, rows: 0 })
}

/// The source's item texts, each distinct one added once with the references its items make;
/// their ids by digest.
fn add_texts(tx: &mut Transaction<'_>, rows: &SourceRows) -> Result<BTreeMap<[u8; 32], i64>> {
    let mut counted: BTreeMap<[u8; 32], (&str, i64)> = BTreeMap::new();
    for run in &rows.runs {
        for item in run.entries.iter().filter(|i| !i.text.is_empty()) {
            let digest: [u8; 32] = Sha256::digest(Text(&item.text).get().as_bytes()).into();
            counted.entry(digest).or_insert((&item.text, 0)).1 += 1;
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
fn collect(tx: &mut Transaction<'_>, released: &[i64]) -> Result<()> {
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
    if s.files.is_empty() {
        return Ok(id);
    }
    let paths: Vec<String> = s.files.iter().map(|f| f.path.to_string_lossy().into_owned()).collect();
    let paths: Vec<Text<'_>> = paths.iter().map(|p| Text(p)).collect();
    let dev: Vec<i64> = s.files.iter().map(|f| int(f.dev)).collect();
    let ino: Vec<i64> = s.files.iter().map(|f| int(f.ino)).collect();
    let size: Vec<i64> = s.files.iter().map(|f| int(f.size)).collect();
    let mtime: Vec<i64> = s.files.iter().map(|f| f.mtime_ns).collect();
    let head: Vec<&[u8]> = s.files.iter().map(|f| f.head.as_slice()).collect();
    tx.execute(
        "INSERT INTO files (source_id, path, dev, ino, size, mtime_ns, head)
         SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[])",
        &[&id, &paths, &dev, &ino, &size, &mtime, &head],
    )?;
    Ok(id)
}

/// The session's row id; `None` when another source of this machine already holds a session of
/// that agent and id (a tee's recording of a session whose rollouts were indexed first).
fn insert_session(
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
    let t = tokens(&s.figures.tokens);
    let id: i64 = tx
        .query_one(
            &format!(
                "INSERT INTO sessions (source_id, machine, agent, thread, name, project, started_ms, ended_ms, status,
                                       agents, depth, {TOKENS}, cost_pico, priced)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                         $19::text::numeric, $20)
                 RETURNING id"
            ),
            &[
                &source,
                &machine,
                &agent,
                &Text(&s.thread),
                &Text(&s.name),
                &opt(rows.source.project.as_deref()),
                &s.started_ms,
                &s.ended_ms,
                &Text(&s.status),
                &i64::from(s.agents),
                &i64::from(s.depth),
                &t[0],
                &t[1],
                &t[2],
                &t[3],
                &t[4],
                &t[5],
                &t[6],
                &pico(s.figures.cost),
                &s.figures.priced,
            ],
        )?
        .get(0);
    Ok(Some(id))
}

/// The source's runs (a statement each: their ids are needed), then their usage and items (a
/// statement each for the whole source), then who is whose parent.
fn insert_runs(
    tx: &mut Transaction<'_>,
    source: i64,
    rows: &SourceRows,
    sessions: &[Option<i64>],
    texts: &BTreeMap<[u8; 32], i64>,
) -> Result<usize> {
    let st = tx.prepare(&format!(
        "INSERT INTO runs (source_id, session_id, ordinal, thread, depth, role, via, card, agent_type, name,
                           nickname, brief, model, models, status, started_ms, ended_ms, turns, items, tool_calls,
                           {TOKENS}, cost_pico, priced, cost_source, reported_cost_pico, answer, files_changed, file)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                 $21, $22, $23, $24, $25, $26, $27, $28::text::numeric, $29, $30, $31::text::numeric, $32, $33, $34)
         RETURNING id"
    ))?;
    let mut ids: Vec<Option<i64>> = vec![None; rows.runs.len()];
    for (ordinal, run) in rows.runs.iter().enumerate() {
        // A run whose session is another source's is that source's.
        let Some(session) = run.session_id(sessions) else { continue };
        let t = tokens(&run.figures.tokens);
        let models = run.models.join("\n");
        let files_changed = run.files_changed.join("\n");
        let params: [&(dyn ToSql + Sync); 34] = [
            &source,
            &session,
            &i64::try_from(ordinal).unwrap_or(i64::MAX),
            &Text(&run.thread),
            &i64::from(run.depth),
            &run.role,
            &run.via,
            &opt(run.card.as_deref()),
            &opt(run.agent_type.as_deref()),
            &Text(&run.name),
            &opt(run.nickname.as_deref()),
            &opt(run.brief.as_deref()),
            &opt(run.model.as_deref()),
            &Text(&models),
            &Text(&run.status),
            &run.started_ms,
            &run.ended_ms,
            &i64::from(run.turns),
            &i64::from(run.items),
            &i64::from(run.tool_calls),
            &t[0],
            &t[1],
            &t[2],
            &t[3],
            &t[4],
            &t[5],
            &t[6],
            &pico(run.figures.cost),
            &run.figures.priced,
            &run.cost_source,
            &run.reported_cost.map(pico),
            &opt(run.answer.as_deref()),
            &Text(&files_changed),
            &opt(run.file.as_deref()),
        ];
        ids[ordinal] = Some(tx.query_one(&st, &params)?.get(0));
    }
    insert_usage(tx, rows, &ids)?;
    insert_items(tx, rows, &ids, texts)?;
    // Parents after every run is in: a child can be seen before its parent.
    let (children, parents): (Vec<i64>, Vec<i64>) = rows
        .runs
        .iter()
        .zip(&ids)
        .filter_map(|(run, id)| Some(((*id)?, run.parent.and_then(|p| ids.get(p).copied().flatten())?)))
        .unzip();
    if !children.is_empty() {
        tx.execute(
            "UPDATE runs SET parent_id = p.parent FROM unnest($1::bigint[], $2::bigint[]) AS p(id, parent)
             WHERE runs.id = p.id",
            &[&children, &parents],
        )?;
    }
    Ok(ids.iter().flatten().count())
}

fn insert_usage(tx: &mut Transaction<'_>, rows: &SourceRows, ids: &[Option<i64>]) -> Result<()> {
    let usage: Vec<(i64, &crate::store::rows::UsageRow)> = rows
        .runs
        .iter()
        .zip(ids)
        .filter_map(|(run, id)| Some((id.as_ref().copied()?, run)))
        .flat_map(|(id, run)| run.usage.iter().map(move |u| (id, u)))
        .collect();
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

fn insert_items(
    tx: &mut Transaction<'_>,
    rows: &SourceRows,
    ids: &[Option<i64>],
    texts: &BTreeMap<[u8; 32], i64>,
) -> Result<()> {
    let mut c = ItemColumns::default();
    for (r, id) in rows.runs.iter().zip(ids) {
        let Some(id) = *id else { continue };
        for (&n, item) in r.item_ordinals.iter().zip(&r.entries) {
            c.run.push(id);
            c.ordinal.push(i64::try_from(n).unwrap_or(i64::MAX));
            c.kind.push(Text(&item.kind));
            c.status.push(item.status);
            c.title.push(Text(&item.title));
            let digest: Option<[u8; 32]> =
                (!item.text.is_empty()).then(|| Sha256::digest(Text(&item.text).get().as_bytes()).into());
            c.text.push(digest.and_then(|d| texts.get(&d).copied()));
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
