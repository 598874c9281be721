//! Reading the team store: what `history`, `report` and `search` ask, fleet-wide unless the
//! filter names a machine. Text read back is sanitised as it comes in (the database is input like
//! any file), and rows are ordered as the SQLite store orders them (times newest first with the
//! unknown last, ids byte-wise), so that both answer alike.

use std::path::PathBuf;

use color_eyre::eyre::Result;
use postgres::fallible_iterator::FallibleIterator as _;
use postgres::types::ToSql;
use postgres::{Client, Row};

use super::text::Text;
use super::write::{TOKENS, uint};
use crate::model::prices::Pico;
use crate::model::{AgentOp, Tokens};
use crate::store::backend::Lookup;
use crate::store::query::Filter;
use crate::store::rows::{Figures, FileState, Hit, ItemRow, Known, RunInfo, SessionInfo, SessionView, UsageFact};
use crate::wire::{Clean, sanitize, sanitize_line};

fn clean(r: &Row, at: usize) -> Clean {
    sanitize(&r.get::<_, Option<String>>(at).unwrap_or_default())
}

fn clean_opt(r: &Row, at: usize) -> Option<Clean> {
    r.get::<_, Option<String>>(at).map(|s| sanitize(&s))
}

/// A count kept as BIGINT, as the model's `u32` (what does not fit is the most it holds).
fn count(r: &Row, at: usize) -> u32 {
    u32::try_from(r.get::<_, i64>(at).max(0)).unwrap_or(u32::MAX)
}

/// A NUMERIC of pico-dollars read as text; what is not a number (a database someone edited) is
/// nothing.
fn pico_at(r: &Row, at: usize) -> Pico {
    Pico(r.get::<_, String>(at).parse().unwrap_or(0))
}

/// The seven token columns starting at `at`.
fn tokens_at(r: &Row, at: usize) -> Tokens {
    let g = |i: usize| uint(r.get::<_, i64>(at + i));
    Tokens {
        input: g(0),
        cached_input: g(1),
        cache_write: g(2),
        cache_write_1h: g(3),
        output: g(4),
        reasoning_output: g(5),
        total: g(6),
    }
}

/// The filter over the given time, agent, project and machine expressions, its parameters `$1`
/// to `$5` ([`filter_params`]).
fn filter_sql(time: &str, agent: &str, project: &str, machine: &str) -> String {
    format!(
        "($1::bigint IS NULL OR {time} >= $1) AND ($2::bigint IS NULL OR {time} < $2) \
         AND ($3::text IS NULL OR {agent} = $3) AND ($4::text IS NULL OR strpos(coalesce({project}, ''), $4) > 0) \
         AND ($5::text IS NULL OR {machine} = $5)"
    )
}

struct FilterParams<'a> {
    since: Option<i64>,
    until: Option<i64>,
    agent: Option<Text<'a>>,
    project: Option<Text<'a>>,
    machine: Option<Text<'a>>,
}

impl<'a> FilterParams<'a> {
    fn of(f: &'a Filter) -> Self {
        Self {
            since: f.since_ms,
            until: f.until_ms,
            agent: f.agent.as_deref().map(Text),
            project: f.project.as_deref().map(Text),
            machine: f.machine.as_deref().map(Text),
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 5] {
        [&self.since, &self.until, &self.agent, &self.project, &self.machine]
    }
}

pub(super) fn known(client: &mut Client, machine: &str, key: &str) -> Result<Option<Known>> {
    let Some(source) = client.query_opt(
        "SELECT id, fingerprint, pruned FROM sources WHERE machine = $1 AND key = $2",
        &[&machine, &Text(key)],
    )?
    else {
        return Ok(None);
    };
    let id: i64 = source.get(0);
    let files = client
        .query("SELECT path, dev, ino, size, mtime_ns, head FROM files WHERE source_id = $1", &[&id])?
        .iter()
        .map(|r| FileState {
            path: PathBuf::from(r.get::<_, String>(0)),
            dev: uint(r.get(1)),
            ino: uint(r.get(2)),
            size: uint(r.get(3)),
            mtime_ns: r.get(4),
            head: r.get::<_, &[u8]>(5).try_into().unwrap_or([0; 32]),
        })
        .collect();
    Ok(Some(Known { key: key.to_owned(), files, fingerprint: source.get(1), pruned: source.get(2) }))
}

/// A session's columns, [`session_info`] reads them from its `at` on.
const SESSION_COLUMNS: &str = "s.thread, s.agent, s.name, s.project, s.started_ms, s.ended_ms, s.status, \
     s.agents, s.depth, s.t_input, s.t_cached, s.t_cache_write, s.t_cache_write_1h, s.t_output, s.t_reasoning, \
     s.t_total, s.cost_pico::text, s.priced, \
     NOT EXISTS (SELECT 1 FROM files f WHERE f.source_id = s.source_id AND NOT f.present), s.machine";

fn session_info(r: &Row, at: usize) -> SessionInfo {
    SessionInfo {
        id: clean(r, at),
        agent: clean(r, at + 1),
        name: clean(r, at + 2),
        project: clean_opt(r, at + 3),
        started_ms: r.get(at + 4),
        ended_ms: r.get(at + 5),
        status: clean(r, at + 6),
        agents: count(r, at + 7),
        depth: count(r, at + 8),
        figures: Figures { tokens: tokens_at(r, at + 9), cost: pico_at(r, at + 16), priced: r.get(at + 17) },
        files_present: r.get(at + 18),
        machine: Some(sanitize_line(r.get::<_, &str>(at + 19))),
    }
}

pub(super) fn sessions(client: &mut Client, filter: &Filter) -> Result<Vec<SessionInfo>> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s WHERE {}
         ORDER BY s.started_ms DESC NULLS LAST, s.thread COLLATE \"C\", s.machine COLLATE \"C\"",
        filter_sql("coalesce(s.ended_ms, s.started_ms)", "s.agent", "s.project", "s.machine")
    );
    let f = FilterParams::of(filter);
    Ok(client.query(&sql, &f.params())?.iter().map(|r| session_info(r, 0)).collect())
}

/// One session by its id or a unique prefix (four characters at least), on any machine.
pub(super) fn session(client: &mut Client, id: &str) -> Result<Lookup> {
    let found = client.query(
        &format!(
            "SELECT s.id, {SESSION_COLUMNS}, src.stats_json, src.tree_text
             FROM sessions s JOIN sources src ON src.id = s.source_id
             WHERE s.thread = $1::text OR (length($1::text) >= 4 AND left(s.thread, length($1::text)) = $1::text)
             ORDER BY s.thread = $1::text DESC, s.started_ms DESC NULLS LAST, s.machine COLLATE \"C\" LIMIT 8"
        ),
        &[&Text(id)],
    )?;
    let exact = found.first().is_some_and(|r| r.get::<_, &str>(1) == id);
    match found.len() {
        0 => Ok(Lookup::Missing),
        n if n == 1 || exact => {
            let r = &found[0];
            let row: i64 = r.get(0);
            let session = session_info(r, 1);
            let stats_json: String = r.get(21);
            let tree_text = sanitize(r.get::<_, &str>(22));
            Ok(Lookup::Found(Box::new(SessionView { runs: runs_of(client, row)?, session, stats_json, tree_text })))
        }
        _ => Ok(Lookup::Ambiguous(found.iter().map(|r| clean(r, 1)).collect())),
    }
}

fn runs_of(client: &mut Client, session: i64) -> Result<Vec<RunInfo>> {
    let rows = client.query(
        &format!(
            "SELECT r.thread, p.thread, r.depth, r.role, r.agent_type, r.name, r.brief, r.model, r.status,
                    r.started_ms, r.ended_ms, r.turns, r.items, r.tool_calls, r.{}, r.cost_pico::text, r.priced,
                    r.answer, r.files_changed
             FROM runs r LEFT JOIN runs p ON p.id = r.parent_id WHERE r.session_id = $1 ORDER BY r.ordinal",
            TOKENS.replace(", ", ", r.")
        ),
        &[&session],
    )?;
    Ok(rows
        .iter()
        .map(|r| RunInfo {
            thread: clean(r, 0),
            parent: clean_opt(r, 1),
            depth: count(r, 2),
            role: clean(r, 3),
            agent_type: clean_opt(r, 4),
            name: clean(r, 5),
            brief: clean_opt(r, 6),
            model: clean_opt(r, 7),
            status: clean(r, 8),
            started_ms: r.get(9),
            ended_ms: r.get(10),
            turns: count(r, 11),
            items: count(r, 12),
            tool_calls: count(r, 13),
            figures: Figures { tokens: tokens_at(r, 14), cost: pico_at(r, 21), priced: r.get(22) },
            answer: clean_opt(r, 23),
            files_changed: r.get::<_, &str>(24).split('\n').filter(|p| !p.is_empty()).map(sanitize_line).collect(),
        })
        .collect())
}

/// One run's items, of the session [`session`] finds by that id.
pub(super) fn items(client: &mut Client, session: &str, thread: &str) -> Result<Vec<ItemRow>> {
    let rows = client.query(
        "SELECT i.kind, i.status, i.title, t.body, i.at_ms, i.item_id, i.turn, i.tool, i.op, i.exit_code, i.receivers,
                i.why
         FROM items i JOIN runs r ON r.id = i.run_id LEFT JOIN texts t ON t.id = i.text_id
         WHERE r.thread = $2 AND r.session_id = (SELECT id FROM sessions WHERE thread = $1
                                                 ORDER BY started_ms DESC NULLS LAST, machine COLLATE \"C\" LIMIT 1)
         ORDER BY i.ordinal",
        &[&Text(session), &Text(thread)],
    )?;
    Ok(rows
        .iter()
        .map(|r| ItemRow {
            kind: clean(r, 0).to_string(),
            status: ItemRow::status_of(r.get(1)),
            title: clean(r, 2).to_string(),
            text: clean(r, 3).to_string(),
            at_ms: r.get(4),
            id: r.get::<_, Option<&str>>(5).map(|id| sanitize_line(id).to_string()).unwrap_or_default(),
            turn: r.get::<_, Option<i64>>(6).and_then(|t| u32::try_from(t).ok()),
            tool: r.get::<_, Option<&str>>(7).map(|t| sanitize_line(t).to_string()),
            op: r.get::<_, Option<&str>>(8).and_then(AgentOp::of),
            exit_code: r.get(9),
            receivers: ItemRow::receivers_of(r.get(10)),
            why: clean_opt(r, 11).map(|w| w.to_string()),
        })
        .collect())
}

/// Every quarter hour of spend in the filter's range, streamed (a fleet's history is long).
pub(super) fn usage(client: &mut Client, filter: &Filter, each: &mut dyn FnMut(UsageFact)) -> Result<()> {
    let sql = format!(
        "SELECT u.at_ms, u.model, u.{}, u.cost_pico::text, r.priced, r.role <> 'root', r.agent_type,
                coalesce(s.thread, src.key), coalesce(s.agent, src.agent), coalesce(s.project, src.project), src.machine
         FROM usage u JOIN runs r ON r.id = u.run_id JOIN sources src ON src.id = r.source_id
         LEFT JOIN sessions s ON s.id = r.session_id
         WHERE {}",
        TOKENS.replace(", ", ", u."),
        filter_sql("u.at_ms", "coalesce(s.agent, src.agent)", "coalesce(s.project, src.project)", "src.machine")
    );
    let f = FilterParams::of(filter);
    let mut rows = client.query_raw(&sql, f.params())?;
    while let Some(r) = rows.next()? {
        each(UsageFact {
            at_ms: r.get(0),
            model: clean_opt(&r, 1),
            tokens: tokens_at(&r, 2),
            cost: pico_at(&r, 9),
            priced: r.get(10),
            subagent: r.get(11),
            agent_type: clean_opt(&r, 12),
            session: clean(&r, 13),
            agent: clean(&r, 14),
            project: clean_opt(&r, 15),
            machine: Some(sanitize_line(r.get::<_, &str>(16))),
        });
    }
    Ok(())
}

/// Marks around the words that matched, as the SQLite store's snippets mark them.
const HEADLINE: &str = "StartSel=\u{2}, StopSel=\u{3}, MaxWords=16, MinWords=6, ShortWord=0, MaxFragments=1, \
                        FragmentDelimiter=\u{2026}";

/// SQL: whether the run's `whole` (a brief or an answer) starts with the item text `part`, as the
/// SQLite store decides it: a brief or answer that is a message of its run is found once, as itself.
fn holds(whole: &str, part: &str) -> String {
    format!("coalesce(position(btrim(rtrim({part}, '…'), ' ' || chr(9) || chr(10) || chr(13)) in {whole}), 0) = 1")
}

/// Items whose text holds every one of `words` (each a phrase of its own tokens), best first.
pub(super) fn search(client: &mut Client, words: &[String], filter: &Filter, limit: usize) -> Result<Vec<Hit>> {
    let sql = format!(
        "WITH q AS (
           SELECT (SELECT string_agg('(' || phraseto_tsquery('simple', w)::text || ')', ' & ')
                   FROM unnest($6::text[]) AS given, regexp_replace(given, $9, ' ', 'g') AS w
                   WHERE numnode(phraseto_tsquery('simple', w)) > 0)::tsquery AS q),
         hit AS (
           SELECT i.run_id, i.kind, i.tool, i.at_ms, i.ordinal, ts_rank(t.search, q.q) AS rank, t.body
           FROM q, texts t JOIN items i ON i.text_id = t.id JOIN runs ir ON ir.id = i.run_id
           WHERE t.search @@ q.q
             AND NOT ((ir.brief_search @@ q.q AND {}) OR (ir.answer_search @@ q.q AND {}))
           UNION ALL
           SELECT r.id, CASE WHEN r.brief_search @@ q.q THEN 'brief' ELSE 'answer' END, NULL, NULL, -1,
                  ts_rank(CASE WHEN r.brief_search @@ q.q THEN r.brief_search ELSE r.answer_search END, q.q),
                  CASE WHEN r.brief_search @@ q.q THEN r.brief ELSE r.answer END
           FROM q, runs r WHERE r.brief_search @@ q.q OR r.answer_search @@ q.q),
         found AS (
           SELECT s.thread AS session, coalesce(s.agent, src.agent) AS agent, r.thread, r.name, hit.kind,
                  coalesce(hit.at_ms, r.started_ms) AS at, hit.body, hit.rank, hit.ordinal, src.machine, hit.tool
           FROM hit JOIN runs r ON r.id = hit.run_id
           JOIN sources src ON src.id = r.source_id LEFT JOIN sessions s ON s.id = r.session_id
           WHERE {}
           ORDER BY rank DESC, at DESC NULLS LAST, r.thread COLLATE \"C\", hit.ordinal LIMIT $7)
         SELECT f.session, f.agent, f.thread, f.name, f.kind, f.at, ts_headline('simple', f.body, q.q, $8), f.machine,
                f.tool
         FROM found f, q
         ORDER BY f.rank DESC, f.at DESC NULLS LAST, f.thread COLLATE \"C\", f.ordinal",
        holds("ir.brief", "t.body"),
        holds("ir.answer", "t.body"),
        filter_sql(
            "coalesce(hit.at_ms, r.started_ms)",
            "coalesce(s.agent, src.agent)",
            "coalesce(s.project, src.project)",
            "src.machine"
        )
    );
    let f = FilterParams::of(filter);
    let words: Vec<Text<'_>> = words.iter().map(|w| Text(w)).collect();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut params = f.params().to_vec();
    params.extend([&words as &(dyn ToSql + Sync), &limit, &HEADLINE, &super::schema::WORDS]);
    let rows = client.query(&sql, &params)?;
    Ok(rows
        .iter()
        .map(|r| Hit {
            session: clean_opt(r, 0),
            agent: clean(r, 1),
            thread: clean(r, 2),
            name: clean(r, 3),
            kind: clean(r, 4),
            tool: clean_opt(r, 8),
            at_ms: r.get(5),
            snippet: crate::store::sqlite::snippet(r.get::<_, &str>(6)),
            machine: Some(sanitize_line(r.get::<_, &str>(7))),
        })
        .collect())
}

/// Everything stored, as text that two databases holding the same runs print alike: each row as
/// JSON without its row ids and sync time.
pub(super) fn dump(client: &mut Client) -> Result<String> {
    let queries = [
        "SELECT machine, key, place, agent, project, fingerprint, pruned, lines, bytes, format, error, stats_json,
                tree_text FROM sources ORDER BY machine, key",
        "SELECT src.machine, src.key, f.path, f.dev, f.ino, f.size, f.mtime_ns, encode(f.head, 'hex') AS head,
                f.present
         FROM files f JOIN sources src ON src.id = f.source_id ORDER BY src.machine, src.key, f.path",
        "SELECT src.key, s.* FROM sessions s JOIN sources src ON src.id = s.source_id
         ORDER BY s.machine, s.agent, s.thread",
        "SELECT src.machine, src.key, r.ordinal, p.ordinal AS parent, s.thread AS session_thread, r.*
         FROM runs r JOIN sources src ON src.id = r.source_id
         LEFT JOIN runs p ON p.id = r.parent_id LEFT JOIN sessions s ON s.id = r.session_id
         ORDER BY src.machine, src.key, r.ordinal",
        "SELECT src.machine, src.key, r.ordinal AS run, u.* FROM usage u JOIN runs r ON r.id = u.run_id
         JOIN sources src ON src.id = r.source_id ORDER BY src.machine, src.key, r.ordinal, u.at_ms, u.model",
        "SELECT src.machine, src.key, r.ordinal AS run, i.ordinal, i.kind, i.status, i.title, t.body, i.at_ms,
                i.item_id, i.turn, i.tool, i.op, i.exit_code, i.receivers, i.why
         FROM items i JOIN runs r ON r.id = i.run_id JOIN sources src ON src.id = r.source_id
         LEFT JOIN texts t ON t.id = i.text_id ORDER BY src.machine, src.key, r.ordinal, i.ordinal",
        "SELECT body, refs FROM texts ORDER BY digest",
    ];
    let mut out = String::new();
    for sql in queries {
        out.push_str("# ");
        out.push_str(&sql.split_whitespace().collect::<Vec<_>>().join(" "));
        out.push('\n');
        // Row ids and sync times differ between two syncs that stored the same thing.
        let json = format!(
            "SELECT (to_jsonb(x) - ARRAY['id', 'source_id', 'session_id', 'parent_id', 'run_id', 'synced_ms',
                                         'search'])::text FROM ({sql}) AS x"
        );
        for row in client.query(&json, &[])? {
            out.push_str(row.get::<_, &str>(0));
            out.push('\n');
        }
    }
    Ok(out)
}
