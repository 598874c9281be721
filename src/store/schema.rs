//! The store's schema, version by version (docs/store.md explains every table). A version is a
//! migration appended here, never an edit of one already released: a store is brought up to
//! date by running the ones it lacks, and a store a newer swarmtop wrote (a version past the
//! last one here) is refused before anything in it is touched.
//!
//! The SQL keeps to what PostgreSQL also speaks where it can (issue 21), except the full-text
//! index, which is each backend's own (FTS5 here).

use rusqlite_migration::{M, Migrations};

/// Tokens by kind, as every table with figures holds them.
macro_rules! tokens {
    () => {
        "t_input INTEGER NOT NULL, t_cached INTEGER NOT NULL, t_cache_write INTEGER NOT NULL, \
         t_cache_write_1h INTEGER NOT NULL, t_output INTEGER NOT NULL, t_reasoning INTEGER NOT NULL, \
         t_total INTEGER NOT NULL"
    };
}

const V1: &str = concat!(
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        place TEXT NOT NULL,
        agent TEXT NOT NULL,
        project TEXT,
        fingerprint TEXT NOT NULL,
        synced_ms INTEGER NOT NULL,
        pruned INTEGER NOT NULL DEFAULT 0,
        lines INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        format TEXT NOT NULL,
        error TEXT,
        stats_json TEXT NOT NULL,
        tree_text TEXT NOT NULL
    );
    CREATE TABLE files (
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        dev INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        head BLOB NOT NULL,
        present INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (source_id, path)
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        agent TEXT NOT NULL,
        thread TEXT NOT NULL,
        name TEXT NOT NULL,
        project TEXT,
        started_ms INTEGER,
        ended_ms INTEGER,
        status TEXT NOT NULL,
        agents INTEGER NOT NULL,
        depth INTEGER NOT NULL, ",
    tokens!(),
    ",
        cost_pico TEXT NOT NULL,
        priced INTEGER NOT NULL,
        UNIQUE (agent, thread)
    );
    CREATE INDEX sessions_source ON sessions(source_id);
    CREATE INDEX sessions_started ON sessions(started_ms);
    CREATE TABLE texts (
        id INTEGER PRIMARY KEY,
        digest BLOB NOT NULL UNIQUE,
        body TEXT NOT NULL,
        refs INTEGER NOT NULL
    );
    CREATE VIRTUAL TABLE texts_fts USING fts5(body, content='texts', content_rowid='id');
    CREATE TRIGGER texts_insert AFTER INSERT ON texts BEGIN
        INSERT INTO texts_fts(rowid, body) VALUES (new.id, new.body);
    END;
    CREATE TRIGGER texts_delete AFTER DELETE ON texts BEGIN
        INSERT INTO texts_fts(texts_fts, rowid, body) VALUES ('delete', old.id, old.body);
    END;
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        session_id INTEGER REFERENCES sessions(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        thread TEXT NOT NULL,
        parent_id INTEGER REFERENCES runs(id) ON DELETE CASCADE,
        depth INTEGER NOT NULL,
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
        started_ms INTEGER,
        ended_ms INTEGER,
        turns INTEGER NOT NULL,
        items INTEGER NOT NULL,
        tool_calls INTEGER NOT NULL, ",
    tokens!(),
    ",
        cost_pico TEXT NOT NULL,
        priced INTEGER NOT NULL,
        cost_source TEXT,
        reported_cost_pico TEXT,
        answer TEXT,
        files_changed TEXT NOT NULL,
        file TEXT,
        UNIQUE (source_id, ordinal)
    );
    CREATE INDEX runs_session ON runs(session_id);
    CREATE INDEX runs_parent ON runs(parent_id);
    CREATE TABLE usage (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        at_ms INTEGER,
        model TEXT, ",
    tokens!(),
    ",
        cost_pico TEXT NOT NULL
    );
    CREATE INDEX usage_run ON usage(run_id);
    CREATE INDEX usage_at ON usage(at_ms);
    CREATE TABLE items (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        title TEXT NOT NULL,
        text_id INTEGER REFERENCES texts(id),
        at_ms INTEGER,
        PRIMARY KEY (run_id, ordinal)
    ) WITHOUT ROWID;
    CREATE INDEX items_text ON items(text_id);"
);

/// Version 2: what each run was asked and answered is searchable too (issue 20: a word only a
/// sub-agent's brief holds is found), in an index of its own over `runs` kept by triggers.
const V2: &str = "CREATE VIRTUAL TABLE runs_fts USING fts5(brief, answer, content='runs', content_rowid='id');
    CREATE TRIGGER runs_fts_insert AFTER INSERT ON runs BEGIN
        INSERT INTO runs_fts(rowid, brief, answer) VALUES (new.id, new.brief, new.answer);
    END;
    CREATE TRIGGER runs_fts_delete AFTER DELETE ON runs BEGIN
        INSERT INTO runs_fts(runs_fts, rowid, brief, answer) VALUES ('delete', old.id, old.brief, old.answer);
    END;
    INSERT INTO runs_fts(runs_fts) VALUES ('rebuild');";

/// Version 3: every act on a swarm (issue 23: an interrupt from the command or the monitor, a
/// guard's refusal or stop), with the root session it was in, for `history SESSION`.
const V3: &str = "CREATE TABLE acts (
        id INTEGER PRIMARY KEY,
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        by TEXT NOT NULL,
        via TEXT NOT NULL,
        session TEXT,
        target TEXT NOT NULL,
        detail TEXT NOT NULL,
        outcome TEXT NOT NULL
    );
    CREATE INDEX acts_session ON acts(session, at_ms);";

/// Version 4: what a stored lane needs to draw as the live one did (a session opened from the
/// history showed OpenCode's `task` and Claude's `Agent` as a generic `agent`): each item's own
/// id, its turn, the agent's own name for the call (display only), what the call does to agents,
/// a command's exit code, and the threads it names (their ids, one a line). Items stored before
/// keep nulls; their sources are read again by the next sync where their files are still there
/// (the reader's fingerprint names the schema).
const V4: &str = "ALTER TABLE items ADD COLUMN item_id TEXT;
    ALTER TABLE items ADD COLUMN turn INTEGER;
    ALTER TABLE items ADD COLUMN tool TEXT;
    ALTER TABLE items ADD COLUMN op TEXT;
    ALTER TABLE items ADD COLUMN exit_code INTEGER;
    ALTER TABLE items ADD COLUMN receivers TEXT;";

/// Version 5: what rows stored before version 4 tell of the columns it added, where they tell it
/// exactly (issue 20: a session whose files were gone before the upgrade could not be read again
/// and kept nulls, so its stored lane drew each spawn as a generic `⑂ agent`, with no turns).
/// What each agent's calls were is the agent registry's to say
/// ([`crate::source::agents::FILLED_BEFORE_SCHEMA_4`]).
pub(super) const V5: &str = crate::source::agents::FILLED_BEFORE_SCHEMA_4;

/// Version 6: why a call failed, in the agent's own words (issue 19: a session opened from the
/// store drew `✗ Agent failed` without the CLI's `Agent type '…' not found` its live lane showed).
/// Items stored before keep null; their sources are read again by the next sync where their files
/// are still there (the reader's fingerprint names the schema).
pub(super) const V6: &str = "ALTER TABLE items ADD COLUMN why TEXT;";

const STEPS: &[M<'static>] = &[M::up(V1), M::up(V2), M::up(V3), M::up(V4), M::up(V5), M::up(V6)];

/// Every version, in order: version N is after the N-th migration.
pub const MIGRATIONS: Migrations<'static> = Migrations::from_slice(STEPS);

/// The version this swarmtop writes.
pub const LATEST: usize = STEPS.len();

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::MIGRATIONS.validate().expect("every migration applies to an empty store");
    }
}
