//! OpenCode's store with any values in any column: the real 1.18.33 tables (their NOT NULLs
//! dropped, as a store built another way may have them), rows whose every value the input
//! chooses (NULL, integers, reals, text that is an id, JSON of the right shape or not, bytes that
//! are not UTF-8, blobs), read whole, in pages as small as the input says, and followed. Never a
//! panic or an error; every record is one line of JSON; the pages give the same bytes as the
//! whole read; every record goes through the pipeline as one line.
#![no_main]

use std::io::Read;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use rusqlite::types::Value;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::{MAX_LINE, read_records};
use swarmtop::source::opencode::{Follower, PageBounds, snapshot, snapshot_reader_with};
use swarmtop::wire::Origin;

const SCHEMA: &str = include_str!("../../tests/support/opencode_schema.sql");

const IDS: [&str; 8] = ["ses_a", "ses_b", "msg_1", "msg_2", "prt_1", "prt_2", "", "ses_\u{1b}[2J"];
const JSON: [&str; 8] = [
    r#"{"role":"user","time":{"created":1}}"#,
    r#"{"parentID":"msg_1","role":"assistant","modelID":"m","tokens":{"input":5,"output":2,"reasoning":1,"cache":{"read":1,"write":0}},"cost":0.5,"time":{"created":2,"completed":3},"finish":"stop"}"#,
    r#"{"type":"text","text":"hi","time":{"start":1,"end":2}}"#,
    r#"{"type":"tool","tool":"task","state":{"status":"completed","input":{"description":"d"},"metadata":{"sessionId":"ses_b"}}}"#,
    r#"{"sessionID":"ses_a","info":{"id":"ses_a","parentID":"ses_b"}}"#,
    r#"{"id":"mock","providerID":"p"}"#,
    r#"{"tokens":{"input":-1,"output":2.5}}"#,
    "[1,",
];

/// The values of one row, the input's bytes read as choices.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn value(&mut self) -> Option<(Value, bool)> {
        let tag = self.byte()?;
        let pick = usize::from(tag >> 3);
        Some(match tag & 7 {
            0 => (Value::Null, false),
            1 => (Value::Integer(i64::from(i8::from_le_bytes([self.byte()?])) * 1_000_000_007), false),
            2 => (Value::Real([2.5, -1.0, f64::INFINITY, 0.0, 1e300][pick % 5]), false),
            3 | 4 => (Value::Text(IDS[pick % IDS.len()].to_owned()), false),
            5 => (Value::Text(JSON[pick % JSON.len()].to_owned()), false),
            // Bytes that may not be UTF-8, stored as TEXT.
            6 => {
                let n = usize::from(self.byte()? % 16);
                let bytes = self.0.get(..n)?.to_vec();
                self.0 = &self.0[n..];
                (Value::Blob(bytes), true)
            }
            _ => (Value::Blob(vec![tag; pick % 4]), false),
        })
    }
}

const TABLES: [(&str, usize); 4] = [
    (
        "session (id, parent_id, title, agent, model, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, time_created, time_updated, directory)",
        14,
    ),
    ("message (id, session_id, data)", 3),
    ("part (id, message_id, session_id, data)", 4),
    ("event (id, aggregate_id, seq, type, data)", 5),
];

fn store(input: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("swarmtop-fuzz-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Rows without the project, message or event_sequence they name: SQLite enforces foreign keys
    // only when asked (the bundled build asks by default), and a store need not have.
    conn.pragma_update(None, "foreign_keys", false).unwrap();
    // A store a run: nothing need reach the disk.
    conn.pragma_update(None, "synchronous", "OFF").unwrap();
    conn.pragma_update(None, "journal_mode", "MEMORY").unwrap();
    conn.execute_batch(&SCHEMA.replace(" NOT NULL", "")).unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    let mut choices = Choices(input);
    'rows: while let Some(t) = choices.byte() {
        let (table, columns) = TABLES[usize::from(t) % TABLES.len()];
        let mut values = Vec::new();
        let mut placeholders = Vec::new();
        for i in 1..=columns {
            let Some((v, as_text)) = choices.value() else { break 'rows };
            placeholders.push(if as_text { format!("CAST(?{i} AS TEXT)") } else { format!("?{i}") });
            values.push(v);
        }
        let sql = format!("INSERT OR IGNORE INTO {table} VALUES ({})", placeholders.join(", "));
        tx.execute(&sql, rusqlite::params_from_iter(values)).unwrap();
    }
    tx.commit().unwrap();
    path
}

fn lines(records: &[u8], pipeline: &mut Pipeline) -> u64 {
    let mut n = 0;
    for line in records.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).expect("every record is JSON");
        n += 1;
    }
    let _ = read_records(records, MAX_LINE, |r| pipeline.feed(r, &Origin::NONE, &mut |_: &Event<'_, '_>| {}));
    n
}

fuzz_target!(|data: &[u8]| {
    let [rows, bytes, input @ ..] = data else { return };
    let bounds = PageBounds { rows: usize::from(*rows % 8) + 1, bytes: usize::from(*bytes) * 16 + 1 };
    let db = store(input);
    let whole = snapshot(&db).expect("a store is always read");
    let mut paged = Vec::new();
    snapshot_reader_with(&db, bounds).unwrap().read_to_end(&mut paged).expect("a store is always read in pages");
    assert!(paged == whole.records, "pages give what the whole read gives");
    let mut p = Pipeline::default();
    let mut n = lines(&whole.records, &mut p);
    let mut follower = Follower::new(&db, 0).unwrap();
    loop {
        let records = follower.poll().expect("following never fails on a row");
        n += lines(&records, &mut p);
        if follower.caught_up() {
            break;
        }
    }
    p.finish();
    let c = p.counters();
    assert_eq!(c.lines, n, "every record is one line");
    assert!(c.conserved(), "{c:?}");
    let _ = std::fs::remove_file(&db);
});
