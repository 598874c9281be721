//! The team store's schema: the SQLite store's in PostgreSQL's types, with a `machine` on every
//! source and session, so that many machines sync into one database.
//!
//! Versions are kept in `swarmtop_schema(version)`, version N being the state after the N-th step of
//! [`STEPS`], the same numbering as SQLite's `user_version`. Every step runs in one transaction that
//! first takes a transaction-level advisory lock, so two machines opening an empty database at once
//! apply each step once, and the second finds it done.

use color_eyre::eyre::{Result, WrapErr, eyre};
use postgres::Client;

/// Tokens by kind, as every table with figures holds them (unsigned 64-bit figures bit for bit in
/// a signed BIGINT, as in SQLite).
macro_rules! tokens {
    () => {
        "t_input BIGINT NOT NULL, t_cached BIGINT NOT NULL, t_cache_write BIGINT NOT NULL, \
         t_cache_write_1h BIGINT NOT NULL, t_output BIGINT NOT NULL, t_reasoning BIGINT NOT NULL, \
         t_total BIGINT NOT NULL"
    };
}

/// Version 1: SQLite's version 1 (docs/store.md), plus `machine`; the full-text index is a
/// generated `tsvector` with a GIN index instead of FTS5, over the text with its punctuation made
/// spaces ([`WORDS`]): words are what FTS5 takes as words (PostgreSQL's parser would keep a path
/// or a host name whole, and `spotter` would not find `/src/spotter-dov`).
const V1: &str = concat!(
    "CREATE TABLE meta (machine TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (machine, key));
    CREATE TABLE sources (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        machine TEXT NOT NULL,
        key TEXT NOT NULL,
        place TEXT NOT NULL,
        agent TEXT NOT NULL,
        project TEXT,
        fingerprint TEXT NOT NULL,
        synced_ms BIGINT NOT NULL,
        pruned BOOLEAN NOT NULL DEFAULT FALSE,
        lines BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        format TEXT NOT NULL,
        error TEXT,
        stats_json TEXT NOT NULL,
        tree_text TEXT NOT NULL,
        UNIQUE (machine, key)
    );
    CREATE TABLE files (
        source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        dev BIGINT NOT NULL,
        ino BIGINT NOT NULL,
        size BIGINT NOT NULL,
        mtime_ns BIGINT NOT NULL,
        head BYTEA NOT NULL,
        present BOOLEAN NOT NULL DEFAULT TRUE,
        PRIMARY KEY (source_id, path)
    );
    CREATE TABLE sessions (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        machine TEXT NOT NULL,
        agent TEXT NOT NULL,
        thread TEXT NOT NULL,
        name TEXT NOT NULL,
        project TEXT,
        started_ms BIGINT,
        ended_ms BIGINT,
        status TEXT NOT NULL,
        agents BIGINT NOT NULL,
        depth BIGINT NOT NULL, ",
    tokens!(),
    ",
        cost_pico NUMERIC NOT NULL,
        priced BOOLEAN NOT NULL,
        UNIQUE (machine, agent, thread)
    );
    CREATE INDEX sessions_source ON sessions(source_id);
    CREATE INDEX sessions_started ON sessions(started_ms);
    CREATE TABLE texts (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        digest BYTEA NOT NULL UNIQUE,
        body TEXT NOT NULL,
        refs BIGINT NOT NULL,
        search TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(body, '[[:punct:][:space:][:cntrl:]]+', ' ', 'g'))) STORED
    );
    CREATE INDEX texts_search ON texts USING GIN (search);
    CREATE TABLE runs (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        session_id BIGINT REFERENCES sessions(id) ON DELETE CASCADE,
        ordinal BIGINT NOT NULL,
        thread TEXT NOT NULL,
        parent_id BIGINT REFERENCES runs(id) ON DELETE CASCADE,
        depth BIGINT NOT NULL,
        role TEXT NOT NULL,
        via TEXT,
        card TEXT,
        agent_type TEXT,
        name TEXT NOT NULL,
        nickname TEXT,
        brief TEXT,
        model TEXT,
        models TEXT NOT NULL,
        status TEXT NOT NULL,
        started_ms BIGINT,
        ended_ms BIGINT,
        turns BIGINT NOT NULL,
        items BIGINT NOT NULL,
        tool_calls BIGINT NOT NULL, ",
    tokens!(),
    ",
        cost_pico NUMERIC NOT NULL,
        priced BOOLEAN NOT NULL,
        cost_source TEXT,
        reported_cost_pico NUMERIC,
        answer TEXT,
        files_changed TEXT NOT NULL,
        file TEXT,
        UNIQUE (source_id, ordinal)
    );
    CREATE INDEX runs_session ON runs(session_id);
    CREATE INDEX runs_parent ON runs(parent_id);
    CREATE TABLE usage (
        run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        at_ms BIGINT,
        model TEXT, ",
    tokens!(),
    ",
        cost_pico NUMERIC NOT NULL
    );
    CREATE INDEX usage_run ON usage(run_id);
    CREATE INDEX usage_at ON usage(at_ms);
    CREATE TABLE items (
        run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        ordinal BIGINT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        title TEXT NOT NULL,
        text_id BIGINT REFERENCES texts(id),
        at_ms BIGINT,
        PRIMARY KEY (run_id, ordinal)
    );
    CREATE INDEX items_text ON items(text_id);"
);

/// What the index and the queries make of text before PostgreSQL's parser sees it (the pattern of
/// `regexp_replace(…, WORDS, ' ', 'g')`, the same in [`V1`]).
pub const WORDS: &str = "[[:punct:][:space:][:cntrl:]]+";

/// Version 2, as SQLite's: what each run was asked and answered is searchable too, each column
/// indexed on its own so that a hit says which of the two holds the words.
const V2: &str = "ALTER TABLE runs
        ADD COLUMN brief_search TSVECTOR GENERATED ALWAYS AS
            (to_tsvector('simple', regexp_replace(coalesce(brief, ''), '[[:punct:][:space:][:cntrl:]]+', ' ', 'g'))) STORED,
        ADD COLUMN answer_search TSVECTOR GENERATED ALWAYS AS
            (to_tsvector('simple', regexp_replace(coalesce(answer, ''), '[[:punct:][:space:][:cntrl:]]+', ' ', 'g'))) STORED;
    CREATE INDEX runs_brief_search ON runs USING GIN (brief_search);
    CREATE INDEX runs_answer_search ON runs USING GIN (answer_search);";

/// Version 3, as SQLite's: every act on a swarm, with the machine that did it.
const V3: &str = "CREATE TABLE acts (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        machine TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        by TEXT NOT NULL,
        via TEXT NOT NULL,
        session TEXT,
        target TEXT NOT NULL,
        detail TEXT NOT NULL,
        outcome TEXT NOT NULL
    );
    CREATE INDEX acts_session ON acts(session, at_ms);";

/// Version 4, as SQLite's: each item's own id, its turn, the agent's own name for the call, what
/// the call does to agents, a command's exit code and the threads it names (what a stored lane
/// needs to draw as the live one did).
const V4: &str = "ALTER TABLE items
        ADD COLUMN item_id TEXT,
        ADD COLUMN turn BIGINT,
        ADD COLUMN tool TEXT,
        ADD COLUMN op TEXT,
        ADD COLUMN exit_code BIGINT,
        ADD COLUMN receivers TEXT;";

/// Version 5, as SQLite's (the same statements): what rows stored before version 4 tell of its
/// columns, where they tell it exactly.
const V5: &str = crate::store::schema::V5;

/// Version 6, as SQLite's (the same statement): why a call failed, in the agent's own words.
const V6: &str = crate::store::schema::V6;

/// Every version, in order; the same numbering as the SQLite store's.
pub const STEPS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The version this swarmtop writes.
pub const LATEST: usize = STEPS.len();

/// The advisory lock every migration takes (any fixed number: "swarmtop" in ASCII).
const MIGRATION_LOCK: i64 = 0x7377_6172_6d74_6f70;

/// A database a newer swarmtop wrote.
#[derive(Debug)]
pub struct FutureSchema {
    pub found: usize,
}

impl std::fmt::Display for FutureSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the team store was written by a newer swarmtop (schema version {}; this one knows up to {LATEST}): \
             upgrade swarmtop on this machine",
            self.found
        )
    }
}

impl std::error::Error for FutureSchema {}

/// The schema version of the database (0: none yet).
pub fn version(client: &mut Client) -> Result<usize> {
    let exists: bool = client.query_one("SELECT to_regclass('swarmtop_schema') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = client.query_opt("SELECT version FROM swarmtop_schema", &[])?;
    let v: i32 = row.map_or(0, |r| r.get(0));
    usize::try_from(v).map_err(|_| eyre!("the team store's schema version is {v}"))
}

/// Brings the schema up to date; a database a newer swarmtop wrote is refused untouched.
pub(super) fn migrate(client: &mut Client) -> Result<()> {
    loop {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS swarmtop_schema (version INTEGER NOT NULL)")?;
        let row = tx.query_opt("SELECT version FROM swarmtop_schema", &[])?;
        let found = row.map_or(Ok(0), |r| usize::try_from(r.get::<_, i32>(0)))?;
        if found > LATEST {
            tx.rollback()?;
            return Err(FutureSchema { found }.into());
        }
        let Some(step) = STEPS.get(found) else {
            tx.commit()?;
            return Ok(());
        };
        tx.batch_execute(step).wrap_err_with(|| format!("migrating the team store to version {}", found + 1))?;
        let next = i32::try_from(found + 1)?;
        if found == 0 {
            tx.execute("INSERT INTO swarmtop_schema (version) VALUES ($1)", &[&next])?;
        } else {
            tx.execute("UPDATE swarmtop_schema SET version = $1", &[&next])?;
        }
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_index_and_the_queries_split_words_alike() {
        assert!(super::V1.contains(&format!("regexp_replace(body, '{}', ' ', 'g')", super::WORDS)));
        for column in ["brief", "answer"] {
            assert!(
                super::V2.contains(&format!("regexp_replace(coalesce({column}, ''), '{}', ' ', 'g')", super::WORDS))
            );
        }
    }
}
