use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;

use super::*;

const SCHEMA: &str = "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT, agent TEXT, model TEXT, \
       cost REAL, tokens_input INT, tokens_output INT, tokens_reasoning INT, tokens_cache_read INT, \
       tokens_cache_write INT, time_created INT, time_updated INT, directory TEXT);
     CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT);
     CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT);
     CREATE INDEX part_message_id_id_idx ON part (message_id, id);
     CREATE TABLE event (id TEXT, aggregate_id TEXT, seq INT, type TEXT, data TEXT);";

/// A store with the columns the reader uses: root A (old) with child A1 (recent), root B
/// (recent), root C (old, nothing recent).
fn store(dir: &Path) -> PathBuf {
    let db = dir.join(STORE_NAME);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO session VALUES ('ses_a', NULL, 'A', 'build', NULL, 0, 0, 0, 0, 0, 0, 100, 100, '/w/a');
         INSERT INTO session VALUES ('ses_a1', 'ses_a', 'A1', 'general', NULL, 0, 0, 0, 0, 0, 0, 150, 5000, '/w/a');
         INSERT INTO session VALUES ('ses_b', NULL, 'B', 'build', NULL, 0, 0, 0, 0, 0, 0, 4000, 4500, '/w/b');
         INSERT INTO session VALUES ('ses_c', NULL, 'C', 'build', NULL, 0, 0, 0, 0, 0, 0, 10, 20, '/w/c');
         INSERT INTO message VALUES ('msg_1', 'ses_a1', '{\"role\":\"assistant\",\"time\":{\"completed\":5000}}');
         INSERT INTO message VALUES ('msg_2', 'ses_c', '{\"role\":\"assistant\"}');
         INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_a1', '{\"type\":\"text\",\"text\":\"hi\"}');
         INSERT INTO part VALUES ('prt_2', 'msg_2', 'ses_c', '{\"type\":\"text\",\"text\":\"other\"}');",
    )
    .unwrap();
    db
}

#[test]
fn a_window_finds_roots_by_their_subtree_and_reads_nothing_older() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    // Data that is not JSON is no reason to list nothing (json_extract fails on it).
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch("INSERT INTO message VALUES ('msg_3', 'ses_b', 'not json')").unwrap();
    drop(conn);
    let mut found = roots(&db, Some(1000)).unwrap();
    found.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["ses_a", "ses_b"], "A by its recent child, B itself; C is outside");
    assert_eq!(found[0].updated_ms, 5000, "a root's activity is its subtree's newest");
    assert_eq!(found[0].directory.as_deref(), Some("/w/a"));
    assert!(!found[1].settled, "its last message is not one");
    assert_eq!(roots(&db, None).unwrap().len(), 3);
}

#[test]
fn one_session_of_a_store_is_its_subtree_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let snap = snapshot_of(&db, &["ses_a".to_owned()]).unwrap();
    let text = String::from_utf8(snap.records).unwrap();
    assert!(text.contains("\"ses_a1\"") && text.contains("\"hi\""), "{text}");
    assert!(!text.contains("ses_b") && !text.contains("ses_c") && !text.contains("other"), "{text}");
    let whole = String::from_utf8(snapshot(&db).unwrap().records).unwrap();
    assert!(whole.contains("ses_b") && whole.contains("other"));
}

/// What a record is: its kind and the ids it names.
fn shape(line: &[u8]) -> (String, String) {
    let v: Value = serde_json::from_slice(line).unwrap();
    let kind = v["event"]["type"].as_str().map_or_else(|| v["opencode"].as_str().unwrap().to_owned(), str::to_owned);
    let p = &v["event"]["properties"];
    let id = p["info"]["id"].as_str().or(p["part"]["id"].as_str()).or(v["sessionID"].as_str()).unwrap_or("");
    (kind, id.to_owned())
}

/// Many pages of each table: every row read once, all of them in the time they were made (the
/// tables merged: a store holds no time columns here, the rows' JSON names the times), untimed
/// rows as soon as their table's order reaches them.
#[test]
fn pages_read_every_row_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(STORE_NAME);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let (sessions, messages) = (PAGE_ROWS + 7, 3 * PAGE_ROWS + 5);
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {sessions})
           INSERT INTO session (id, title, time_created, time_updated) SELECT printf('ses_%05d', 99999 - i), 'T', 7 * i, 7 * i FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {messages})
           INSERT INTO message SELECT printf('msg_%05d', 2 * i), printf('ses_%05d', 99999 - 1 - i % {sessions}),
             printf('{{\"role\":\"user\",\"time\":{{\"created\":%d}}}}', 10 * i) FROM n;
         INSERT INTO part SELECT printf('prt_%05d_a', substr(id, 5)), id, session_id,
           printf('{{\"type\":\"text\",\"text\":\"x\",\"time\":{{\"start\":%d}}}}', 5 * substr(id, 5) + 1) FROM message;
         INSERT INTO part SELECT printf('prt_%05d_b', substr(id, 5)), id, session_id,
           printf('{{\"type\":\"text\",\"text\":\"y\",\"time\":{{\"start\":%d}}}}', 5 * substr(id, 5) + 2) FROM message;
         INSERT INTO part VALUES ('prt_orphan_first', 'msg_00000', 'ses_99998', '{{}}');
         INSERT INTO part VALUES ('prt_orphan_mid', 'msg_00003', 'ses_99998', '{{}}');"
    ))
    .unwrap();
    drop(conn);
    let snap = snapshot(&db).unwrap();
    let lines: Vec<(String, String)> =
        snap.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(shape).collect();
    let of = |kind: &str| lines.iter().filter(|(k, _)| k == kind).map(|(_, id)| id.clone()).collect::<Vec<_>>();
    let session_ids = of("session.updated");
    assert_eq!(session_ids.len(), sessions);
    assert!(session_ids.windows(2).all(|w| w[0] > w[1]), "oldest first: ids sort newest first");
    let message_ids = of("message.updated");
    assert_eq!(message_ids.len(), messages);
    assert!(message_ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(of("message.part.updated").len(), 2 * messages + 2);
    assert_eq!(of("dead").len(), sessions, "nothing holds it: every root is dead");
    let times: Vec<i64> = snap
        .records
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter_map(|v| v["event"]["properties"]["time"].as_i64())
        .collect();
    assert_eq!(times.len(), sessions + 3 * messages, "every timed row carries its time");
    assert!(times.is_sorted(), "rows in the time they were made");
    assert!(lines.iter().any(|(_, id)| id == "prt_orphan_mid"), "an untimed part of no message is read too");
    // The reader gives the same bytes, a page at a time, whatever the pages' size.
    for bounds in [PageBounds::default(), PageBounds { rows: 3, bytes: 200 }, PageBounds { rows: 1, bytes: 1 }] {
        let mut paged = Vec::new();
        std::io::Read::read_to_end(&mut snapshot_reader_with(&db, bounds).unwrap(), &mut paged).unwrap();
        assert!(paged == snap.records, "{bounds:?}");
    }
}

#[test]
fn a_poll_reads_the_log_in_pages_until_it_has_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(STORE_NAME);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let events = 3 * PAGE_ROWS + 1;
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {events})
           INSERT INTO event SELECT printf('evt_%05d', i), 'ses_a', i, 'session.updated.1', '{{}}' FROM n;"
    ))
    .unwrap();
    let mut follower = Follower::new(&db, 0).unwrap();
    let records = follower.poll().unwrap();
    assert_eq!(records.iter().filter(|&&b| b == b'\n').count(), events);
    assert!(follower.caught_up());
    assert!(follower.poll().unwrap().is_empty(), "nothing new: one pragma");
    conn.execute_batch("INSERT INTO event VALUES ('evt_new', 'ses_a', 0, 'x', '{}')").unwrap();
    assert_eq!(follower.poll().unwrap().iter().filter(|&&b| b == b'\n').count(), 1);
}

#[test]
fn rows_whose_key_or_data_cannot_be_read_are_counted_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(STORE_NAME);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(
        "INSERT INTO session (id, title, cost, tokens_input, tokens_output, time_created) VALUES
           ('ses_a', 'A', 'a lot', -5, 2.5, 'yesterday'), (NULL, 'no id', 0, 0, 0, 1), (x'00ff', 'blob id', 0, 0, 0, 1);
         INSERT INTO message VALUES ('msg_1', 'ses_a', '{\"role\":\"user\"}'), ('msg_2', NULL, '{}'), (NULL, 'ses_a', '{}'), ('msg_3', 'ses_a', 42);
         INSERT INTO part VALUES ('prt_1', NULL, 'ses_a', '{}'), ('prt_2', 'msg_1', 'ses_a', 'not json'), ('prt_3', 'msg_1', 'ses_a', x'ff');",
    )
    .unwrap();
    drop(conn);
    let text = String::from_utf8(snapshot(&db).unwrap().records).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let a = &lines[0]["event"]["properties"]["info"];
    assert_eq!(a["id"], "ses_a");
    assert_eq!((&a["cost"], &a["tokens"]["input"], &a["tokens"]["output"]), (&Value::Null, &Value::Null, &Value::Null));
    assert_eq!(a["time"]["created"], Value::Null);
    let notice = lines.iter().find(|l| l["opencode"] == "notice").expect("a notice");
    let message = notice["message"].as_str().unwrap();
    // Values: ses_a's cost, input, output and time, the blob id, prt_2's data (not JSON), prt_3's
    // (a blob). Rows: both sessions without a text id, msg_2 (no session), the message without an
    // id, prt_1 (no message), prt_3 (no data). msg_3's 42 is text by its column's affinity.
    assert!(message.starts_with("7 odd value(s) read as absent, 6 row(s) skipped"), "{message}");
    assert!(text.contains("\"msg_1\"") && text.contains("prt_2"), "{text}");
}

#[test]
fn a_value_is_bounded_as_a_line_is() {
    assert_eq!(MAX_VALUE, crate::source::files::MAX_LINE);
}

#[test]
fn a_follower_hands_on_the_stops_logged_of_its_sessions_alone_even_when_the_store_is_still() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let log = dir.path().join("acts.ndjson");
    std::fs::write(&log, "{\"target\":\"ses_a1\",\"outcome\":\"aborted\",\"by\":\"guard\",\"reason\":\"old\"}\n")
        .unwrap();
    let mut follower = Follower::with_acts(&db, 0, &log).unwrap();
    assert!(follower.poll().unwrap().is_empty(), "a stop logged before the follower began is the snapshot's");
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for target in ["ses_a1", "ses_elsewhere"] {
        let act = format!(
            "{{\"target\":\"{target}\",\"outcome\":\"aborted\",\"by\":\"guard\",\"reason\":\"depth 2 > 1\",\"ts\":9}}"
        );
        writeln!(f, "{act}").unwrap();
    }
    let text = String::from_utf8(follower.poll().unwrap()).unwrap();
    let acts: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).filter(|l: &Value| l.get("act").is_some()).collect();
    assert_eq!(acts.len(), 1, "{text}");
    assert_eq!(
        (acts[0]["act"]["target"].as_str(), acts[0]["act"]["reason"].as_str()),
        (Some("ses_a1"), Some("depth 2 > 1"))
    );
    assert!(follower.poll().unwrap().is_empty());
}

/// Rows made and not yet last written at one moment are held until their time, at most
/// `HELD_BYTES` of them: past it the one due first goes at once, and the notice says how many.
#[test]
fn open_rows_held_past_their_bound_go_early_and_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(STORE_NAME);
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let rows = 20;
    let pad = "x".repeat(1 << 20);
    for i in 0..rows {
        // Each made at 10 + i, finished at 1000 + i: all twenty open at once, 20 MiB of them.
        let data = format!(
            r#"{{"role":"assistant","pad":"{pad}","time":{{"created":{},"completed":{}}},"finish":"stop"}}"#,
            10 + i,
            1000 + i
        );
        conn.execute("INSERT INTO message VALUES (?1, 'ses_a', ?2)", rusqlite::params![format!("msg_{i:02}"), data])
            .unwrap();
    }
    drop(conn);
    let text = String::from_utf8(snapshot(&db).unwrap().records).unwrap();
    let times: Vec<i64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["event"]["properties"]["time"].as_i64())
        .collect();
    assert_eq!(times.len(), 2 * rows);
    let early = times.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(early > 0, "some went ahead of their time: {times:?}");
    let notice = text.lines().find(|l| l.contains("ahead of their last write")).expect("told");
    assert!(notice.contains("than 16 MiB"), "{notice}");
}
