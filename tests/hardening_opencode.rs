//! OpenCode's store and `opencode serve`'s event stream under attack (issue 22 items 3, 6, 7, 8 and
//! the OpenCode memory bound): each test is a bounded experiment on loopback or in a temp dir that
//! failed before its fix.
//!
//! The memory tests run their scenario again in a process of their own (this test binary, with
//! [`CHILD`] set), which prints its own peak RSS (`VmHWM`) at the end: other tests of this binary
//! running at the same time cannot move the figure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use swarmtop::source::opencode::{self, Link, Serve};

/// Set in a child run of one of these tests: run the scenario, print the peak RSS.
const CHILD: &str = "SWARMTOP_HARDENING_OPENCODE_CHILD";
/// The real tables (opencode-ai 1.18.33) the store reader reads.
const SCHEMA: &str = include_str!("support/opencode_schema.sql");

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// This process's peak resident memory, MiB.
fn own_peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Runs the test `name` in a process of its own; its stdout, its peak RSS in MiB (printed before
/// its own checks, so a failing child still tells it), and whether it passed.
fn in_child(name: &str) -> (String, u64, bool) {
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{name}: the child took over 180 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = reader.join().expect("stdout reader") + &errors.join().expect("stderr reader");
    let peak = out
        .lines()
        .find_map(|l| l.split("peak-rss-mib: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name}: no peak in\n{out}"));
    (out, peak, status.success())
}

/// Runs `name` in a child: its peak RSS must stay under `bound_mib`, its checks must pass.
fn bounded_child(name: &str, what: &str, bound_mib: u64) {
    let (out, peak, passed) = in_child(name);
    eprintln!("{name}: peak RSS {peak} MiB for {what}");
    assert!(peak < bound_mib, "{name}: peak RSS {peak} MiB for {what}, bound {bound_mib} MiB\n{out}");
    assert!(passed, "{name}: the child failed\n{out}");
}

/// Records as short text, for a failure message.
fn brief(seen: &[Value]) -> String {
    seen.iter()
        .map(|v| {
            let t = v.to_string();
            let head: String = t.chars().take(160).collect();
            if head.len() < t.len() { format!("{head}… ({} bytes)", t.len()) } else { t }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn report_peak() {
    println!("peak-rss-mib: {}", own_peak_mib());
}

// ---------------------------------------------------------------------------------------------
// A fake `opencode serve` on loopback.

type Handler = Arc<dyn Fn(&str, &mut TcpStream) + Send + Sync>;

struct Fake {
    authority: String,
    /// The path of every request, in order.
    hits: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    fn start(handler: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let authority = listener.local_addr().expect("addr").to_string();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let seen = hits.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let (handler, seen) = (handler.clone(), seen.clone());
                std::thread::spawn(move || {
                    let Some(path) = request_path(&mut s) else { return };
                    seen.lock().unwrap().push(path.clone());
                    handler(&path, &mut s);
                });
            }
        });
        Self { authority, hits }
    }

    fn hits_of(&self, path: &str) -> usize {
        self.hits.lock().unwrap().iter().filter(|p| *p == path).count()
    }
}

/// Reads a request's head; its path.
fn request_path(s: &mut TcpStream) -> Option<String> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).ok()? == 0 || l.trim().is_empty() {
            return Some(path);
        }
    }
}

fn sse_head(s: &mut TcpStream) {
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n");
}

fn json_reply(s: &mut TcpStream, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// What an empty server answers to the resync's requests.
fn empty_api(path: &str, s: &mut TcpStream) -> bool {
    match path {
        "/session/status" => json_reply(s, "{}"),
        p if p.starts_with("/session") => json_reply(s, "[]"),
        _ => return false,
    }
    true
}

fn event(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

const IDLE_AFTER: &str = r#"{"type":"session.idle","properties":{"sessionID":"ses_after"}}"#;

fn hold(s: &mut TcpStream) {
    let _ = s.flush();
    std::thread::sleep(Duration::from_secs(60));
}

/// `total` bytes of `fill` without a line break.
fn endless(s: &mut TcpStream, fill: &[u8], total: usize) {
    let chunk: Vec<u8> = fill.iter().copied().cycle().take(1 << 20).collect();
    let mut sent = 0;
    while sent < total {
        if s.write_all(&chunk).is_err() {
            return;
        }
        sent += chunk.len();
    }
}

/// The records a reader gives, each parsed (a line that is not JSON as a string), on a channel.
fn records(reader: impl Read + Send + 'static) -> mpsc::Receiver<Value> {
    // Bounded, so a test slow to take them (a busy machine) holds a few records, not every one:
    // the memory tests measure the reader's bounds, not this queue.
    let (tx, rx) = mpsc::sync_channel(256);
    std::thread::spawn(move || {
        let mut r = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let v = serde_json::from_slice(&line)
                        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&line).into_owned()));
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Waits for a record `want` accepts, keeping every record seen on the way.
fn wait_for(
    rx: &mpsc::Receiver<Value>,
    seen: &mut Vec<Value>,
    within: Duration,
    want: impl Fn(&Value) -> bool,
) -> bool {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(v) => {
                let hit = want(&v);
                seen.push(v);
                if hit {
                    return true;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
    false
}

fn session_of(v: &Value) -> Option<&str> {
    v.pointer("/event/properties/sessionID").and_then(Value::as_str)
}

fn is_notice(v: &Value) -> bool {
    v["opencode"] == "notice"
}

fn connect(fake: &Fake) -> mpsc::Receiver<Value> {
    records(opencode::server_reader(&fake.authority, Serve::All, |_| true).expect("connected"))
}

// ---------------------------------------------------------------------------------------------
// The SSE client (issue 22 items 3 and 7).

/// A server whose `/event` answer is `head` then `body`, then one more event (`ses_after`), then
/// nothing for a minute. Connects, and waits (up to `within`) for that last event: it must come,
/// on the one connection, after a notice of what was skipped. The records the client handed on,
/// the peak RSS reported first (for a child run).
fn skipped_and_the_stream_goes_on(
    head: fn(&mut TcpStream),
    body: impl Fn(&mut TcpStream) + Send + Sync + 'static,
    within: Duration,
) -> Vec<Value> {
    let fake = Fake::start(move |path, s| {
        if empty_api(path, s) {
            return;
        }
        head(s);
        body(s);
        let _ = s.write_all(&event(IDLE_AFTER));
        hold(s);
    });
    let rx = connect(&fake);
    let mut seen = Vec::new();
    let after = wait_for(&rx, &mut seen, within, |v| session_of(v) == Some("ses_after"));
    report_peak();
    assert!(after, "the event after what was skipped never came: {}", brief(&seen));
    assert!(seen.iter().any(is_notice), "what was skipped is told: {}", brief(&seen));
    // Time for a reconnect, if the stream had ended.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(fake.hits_of("/event"), 1, "one connection throughout");
    seen
}

#[test]
fn an_endless_sse_line_is_skipped_within_its_bound() {
    const NAME: &str = "an_endless_sse_line_is_skipped_within_its_bound";
    if !is_child() {
        bounded_child(NAME, "a 192 MiB line", 80);
        return;
    }
    let body = |s: &mut TcpStream| {
        let _ = s.write_all(b"data: ");
        endless(s, b"x", 192 << 20);
        let _ = s.write_all(b"\n\n");
    };
    skipped_and_the_stream_goes_on(sse_head, body, Duration::from_secs(90));
}

#[test]
fn endless_data_lines_of_one_event_are_skipped_within_the_event_bound() {
    const NAME: &str = "endless_data_lines_of_one_event_are_skipped_within_the_event_bound";
    if !is_child() {
        bounded_child(NAME, "a 128 MiB event", 80);
        return;
    }
    let body = |s: &mut TcpStream| {
        let line = format!("data: {}\n", "y".repeat(1000));
        endless(s, line.as_bytes(), 128 << 20);
        // The end of a line cut anywhere, then the blank line that ends the event.
        let _ = s.write_all(b"\n\n");
    };
    skipped_and_the_stream_goes_on(sse_head, body, Duration::from_secs(90));
}

#[test]
fn an_endless_response_head_is_refused_within_its_bound() {
    const NAME: &str = "an_endless_response_head_is_refused_within_its_bound";
    if !is_child() {
        bounded_child(NAME, "a 128 MiB header line", 64);
        return;
    }
    let fake = Fake::start(|_, s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Endless: ");
        endless(s, b"a", 128 << 20);
        let _ = s.write_all(b"\r\n\r\n");
        hold(s);
    });
    let started = Instant::now();
    let result = opencode::server_reader(&fake.authority, Serve::All, |_| true);
    report_peak();
    let err = result.err().expect("no stream behind that head");
    println!("refused after {:?}: {err}", started.elapsed());
    assert!(err.to_string().contains("head"), "the reason names the head: {err}");
}

#[test]
fn a_long_header_line_is_skipped_and_the_stream_goes_on() {
    let head = |s: &mut TcpStream| {
        let cookie = "c".repeat(100 << 10);
        let _ = write!(s, "HTTP/1.1 200 OK\r\nSet-Cookie: {cookie}\r\nContent-Type: text/event-stream\r\n\r\n");
    };
    skipped_and_the_stream_goes_on(head, |_| {}, Duration::from_secs(10));
}

#[test]
fn invalid_utf8_in_an_event_is_counted_and_the_stream_goes_on() {
    let body = |s: &mut TcpStream| {
        let _ =
            s.write_all(b"data: {\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"ses_\xff\xfebad\"}}\n\n");
    };
    let seen = skipped_and_the_stream_goes_on(sse_head, body, Duration::from_secs(10));
    let bad = seen.iter().find_map(session_of).filter(|s| s.ends_with("bad"));
    assert!(
        bad.is_some_and(|s| s.starts_with("ses_") && s.contains('\u{fffd}')),
        "the event itself, its bad bytes replaced: {}",
        brief(&seen)
    );
}

/// A server that answers `/event` with 200 and closes at once: each reconnect succeeds, so a
/// backoff reset on every connect reconnected (and resynced) every 250 ms for ever.
#[test]
fn backoff_grows_while_the_stream_keeps_failing_even_when_connecting_succeeds() {
    let fake = Fake::start(|path, s| {
        if !empty_api(path, s) {
            sse_head(s);
        }
    });
    let waits = Arc::new(Mutex::new(Vec::new()));
    let told = waits.clone();
    let reader = opencode::server_reader(&fake.authority, Serve::All, move |link| {
        if let Link::Lost { retry_in, reason } = link {
            told.lock().unwrap().push((retry_in, reason.as_str().to_owned()));
        }
        true
    })
    .expect("connected");
    let _records = records(reader);
    std::thread::sleep(Duration::from_secs(4));
    let waits = waits.lock().unwrap().clone();
    let connects = fake.hits_of("/event");
    eprintln!("{connects} connections in 4 s, waits {waits:?}");
    assert!(waits.len() >= 3, "{waits:?}");
    assert!(waits.windows(2).take(3).all(|w| w[1].0 > w[0].0), "the wait grows: {waits:?}");
    assert!(waits.iter().all(|(_, reason)| !reason.is_empty()), "each loss says why: {waits:?}");
    assert!(connects <= 6, "{connects} connections in 4 s");
}

/// What a server says in its status line reaches the screen (the header's "disconnected (…)"):
/// clean, and said at all when a reconnect is refused.
#[test]
fn a_refused_reconnect_says_why_in_clean_text() {
    let served = Arc::new(AtomicUsize::new(0));
    let n = served.clone();
    let fake = Fake::start(move |path, s| {
        if empty_api(path, s) {
            return;
        }
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            sse_head(s);
            let _ = s.write_all(&event(IDLE_AFTER));
            return;
        }
        let _ = s.write_all(b"HTTP/1.1 503 \x1b]0;pwned\x07\x1b[2JUnavailable\r\nContent-Length: 0\r\n\r\n");
    });
    let reasons = Arc::new(Mutex::new(Vec::<String>::new()));
    let told = reasons.clone();
    let reader = opencode::server_reader(&fake.authority, Serve::All, move |link| {
        if let Link::Lost { reason, .. } = link {
            told.lock().unwrap().push(reason.as_str().to_owned());
        }
        true
    })
    .expect("connected");
    let _records = records(reader);
    std::thread::sleep(Duration::from_millis(1500));
    let reasons = reasons.lock().unwrap().clone();
    assert!(reasons.iter().any(|r| r.contains("503")), "the refusal is told: {reasons:?}");
    assert!(
        reasons.iter().all(|r| !r.contains(['\x1b', '\x07'])),
        "no control character reaches the screen: {reasons:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Resync (issue 22 item 6).

#[test]
fn a_huge_resync_response_is_cut_at_its_bound() {
    const NAME: &str = "a_huge_resync_response_is_cut_at_its_bound";
    if !is_child() {
        // Under the answer's own size: reading it whole fails; read to its cut it holds ~45 MiB.
        bounded_child(NAME, "a 128 MiB /session response", 112);
        return;
    }
    let fake = Fake::start(|path, s| match path {
        "/session" => {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[");
            let pad = "p".repeat(900);
            let mut sent = 0usize;
            let mut i = 0u64;
            while sent < 128 << 20 {
                let one = format!(r#"{{"id":"ses_{i:012}","title":"{pad}","time":{{"created":{i},"updated":{i}}}}},"#);
                if s.write_all(one.as_bytes()).is_err() {
                    return;
                }
                sent += one.len();
                i += 1;
            }
            let _ = s.write_all(br#"{"id":"ses_last","time":{"created":0,"updated":0}}]"#);
        }
        p if empty_api(p, s) => {}
        _ => {
            sse_head(s);
            let _ = s.write_all(&event(IDLE_AFTER));
            hold(s);
        }
    });
    let rx = connect(&fake);
    // Counted as they come, not kept: the test's own memory is not what is measured.
    let (mut sessions, mut notices, mut streamed) = (0usize, 0usize, false);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !streamed && Instant::now() < deadline {
        let Ok(v) = rx.recv_timeout(Duration::from_millis(100)) else { continue };
        sessions += usize::from(v.pointer("/event/type") == Some(&Value::from("session.updated")));
        notices += usize::from(is_notice(&v));
        streamed = session_of(&v) == Some("ses_after");
    }
    report_peak();
    println!("{sessions} sessions resynced, {notices} notices");
    assert!(streamed, "the stream never came");
    assert!(sessions > 1000, "what came before the cut is kept: {sessions}");
    assert!(notices > 0, "the cut is told");
}

// ---------------------------------------------------------------------------------------------
// The store (issue 22 item 8, and rows read in pages).

/// A store with the real schema; `nullable_message_id` lets a part have no message (a hostile or
/// differently built store: 1.18.33 declares it NOT NULL).
fn store(dir: &Path, nullable_message_id: bool) -> (PathBuf, rusqlite::Connection) {
    let data = dir.join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    // The rows name a project and event sequences these tests leave out.
    conn.pragma_update(None, "foreign_keys", false).unwrap();
    let schema = if nullable_message_id {
        SCHEMA.replace("`message_id` text NOT NULL", "`message_id` text")
    } else {
        SCHEMA.to_owned()
    };
    conn.execute_batch(&schema).unwrap();
    (data, conn)
}

fn session_row(conn: &rusqlite::Connection, id: &str, parent: Option<&str>, title: &str) {
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, cost, tokens_input, \
           tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated) \
         VALUES (?1, 'global', ?2, 'slug', '/w', ?3, '1.18.33', 0.01, 100, 10, 0, 0, 0, 'build', \
           '{\"id\":\"mock-large\",\"providerID\":\"mock\"}', 1000, 2000)",
        rusqlite::params![id, parent, title],
    )
    .unwrap();
}

fn stats_json(path: &Path) -> (std::process::Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_swarmtop")).args(["stats", "--json"]).arg(path).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

fn thread<'a>(stats: &'a Value, id: &str) -> Option<&'a Value> {
    stats["threads"].as_array()?.iter().find(|t| t["id"] == id)
}

#[test]
fn oddly_typed_values_in_the_store_are_counted_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (data, conn) = store(dir.path(), true);
    session_row(&conn, "ses_c", None, "Odd tokens");
    session_row(&conn, "ses_b", Some("ses_c"), "Odd cost (@general subagent)");
    session_row(&conn, "ses_a", None, "Fine");
    // SQLite is dynamically typed: a column's declared type is an affinity, not a check.
    conn.execute_batch(
        "UPDATE session SET tokens_output = 2.5 WHERE id = 'ses_c';
         UPDATE session SET cost = 'a lot' WHERE id = 'ses_b';
         INSERT INTO message VALUES ('msg_1', 'ses_a', 1, 2, '{\"role\":\"assistant\",\"modelID\":\"mock-large\",\"tokens\":{\"input\":7,\"output\":3,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}},\"time\":{\"created\":1,\"completed\":2},\"finish\":\"stop\"}');
         INSERT INTO part VALUES ('prt_1', NULL, 'ses_a', 1, 2, '{\"type\":\"text\",\"text\":\"lost\"}');
         INSERT INTO part VALUES ('prt_2', 'msg_1', 'ses_a', 1, 2, '{\"type\":\"text\",\"text\":\"kept\",\"time\":{\"start\":1,\"end\":2}}');",
    )
    .unwrap();
    drop(conn);
    let (out, stats) = stats_json(&data);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for id in ["ses_a", "ses_b", "ses_c"] {
        assert!(thread(&stats, id).is_some(), "{id} read: {stats}");
    }
    // Its cost is OpenCode's (the model is not in the price table): read though its tokens are odd.
    assert_eq!(thread(&stats, "ses_c").unwrap()["costUsd"], 0.01, "the session's other values stay: {stats}");
    // A cost of text is no cost: the session used nothing, so it cost $0, by no one's figure.
    let odd = thread(&stats, "ses_b").unwrap();
    assert_eq!((odd["costUsd"].as_f64(), odd["costSource"].as_str()), (Some(0.0), Some("none")), "{stats}");
    assert_eq!(thread(&stats, "ses_a").unwrap()["tokens"]["input"], 7);
    assert_eq!(stats["routing"]["malformed"], 0, "{stats}");
    assert!(stats["routing"]["global"].as_u64().unwrap_or(0) >= 1, "the odd values are told: {stats}");
}

/// Found by the `opencode_store` fuzz target: a key column (`id`, `message_id`) holding TEXT that
/// is not UTF-8 panicked inside the paged read, where the page's last key was kept as a
/// `rusqlite` value (which insists on UTF-8). Keys are kept as SQLite's bytes now: the row is read,
/// its id with the bad bytes replaced, and the pages after it too.
#[test]
fn ids_that_are_not_utf8_are_read_and_the_pages_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (data, conn) = store(dir.path(), false);
    for n in 0..5 {
        session_row(&conn, &format!("ses_{n}"), None, &format!("Root {n}"));
    }
    conn.execute_batch(
        "UPDATE session SET id = CAST(X'7365735f32ff' AS TEXT) WHERE id = 'ses_2';
         INSERT INTO message VALUES (CAST(X'6d73675fff' AS TEXT), 'ses_1', 1, 2, '{\"role\":\"user\",\"time\":{\"created\":1}}');
         INSERT INTO message VALUES ('msg_2', 'ses_1', 1, 2, '{\"role\":\"user\",\"time\":{\"created\":1}}');
         INSERT INTO part VALUES ('prt_1', CAST(X'6d73675fff' AS TEXT), 'ses_1', 1, 2, '{\"type\":\"text\",\"text\":\"one\"}');
         INSERT INTO part VALUES (CAST(X'7072745fff' AS TEXT), 'msg_2', 'ses_1', 1, 2, '{\"type\":\"text\",\"text\":\"two\"}');
         INSERT INTO part VALUES ('prt_3', 'msg_2', 'ses_1', 1, 2, '{\"type\":\"text\",\"text\":\"three\"}');",
    )
    .unwrap();
    drop(conn);
    let db = data.join("opencode.db");
    let whole = opencode::snapshot(&db).expect("read whole");
    for rows in 1..4 {
        let mut paged = Vec::new();
        opencode::snapshot_reader_with(&db, opencode::PageBounds { rows, bytes: 1 << 20 })
            .unwrap()
            .read_to_end(&mut paged)
            .expect("read in pages");
        assert!(paged == whole.records, "pages of {rows} rows give what the whole read gives");
    }
    let (out, stats) = stats_json(&data);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for id in ["ses_0", "ses_1", "ses_2\u{fffd}", "ses_3", "ses_4"] {
        assert!(thread(&stats, id).is_some(), "{id} read: {stats}");
    }
}

fn event_row(conn: &rusqlite::Connection, n: i64, seq: &dyn rusqlite::ToSql, session: &str) {
    let data = format!(r#"{{"sessionID":"{session}","info":{{"id":"{session}","title":"T{n}"}}}}"#);
    conn.execute(
        "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, 'session.updated.1', ?4)",
        rusqlite::params![format!("evt_{n:06}"), session, seq, data],
    )
    .unwrap();
}

#[test]
fn following_goes_on_past_an_oddly_typed_event_row() {
    let dir = tempfile::tempdir().unwrap();
    let (data, conn) = store(dir.path(), false);
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    session_row(&conn, "ses_a", None, "A");
    event_row(&conn, 1, &0, "ses_a");
    let db = data.join("opencode.db");

    // Polled directly.
    let mut follower = opencode::Follower::new(&db, 0).unwrap();
    let first = String::from_utf8(follower.poll().unwrap()).unwrap();
    assert!(first.contains("T1"), "{first}");
    event_row(&conn, 2, &"not a number", "ses_a");
    event_row(&conn, 3, &2, "ses_a");
    let next = String::from_utf8(follower.poll().expect("a bad row is no reason to stop")).unwrap();
    assert!(next.contains("T3"), "the row after the bad one: {next}");
    assert!(next.contains("\"notice\""), "the bad row is told: {next}");

    // Followed on its own thread, as `swarmtop --follow opencode.db` does.
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let followed = db.clone();
    std::thread::spawn(move || opencode::follow(&followed, |records| tx.send(records).is_ok()));
    let mut got = String::new();
    let wait = |what: &str, got: &mut String| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !got.contains(what) {
            assert!(Instant::now() < deadline, "the follower never read {what}: {got}");
            if let Ok(r) = rx.recv_timeout(Duration::from_millis(100)) {
                got.push_str(&String::from_utf8_lossy(&r));
            }
        }
    };
    wait("\"A\"", &mut got);
    event_row(&conn, 4, &"x", "ses_a");
    for n in 5..10 {
        event_row(&conn, n, &n, "ses_a");
    }
    wait("T9", &mut got);
}

/// A store of `sessions` roots, each with a message and a part padded to `pad` bytes that lowers
/// to nothing (a step marker): what is read, not what is kept, is measured.
fn padded_store(dir: &Path, sessions: usize, pad: usize) -> PathBuf {
    let (data, conn) = store(dir, false);
    conn.execute_batch(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {sessions})
         INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
           SELECT printf('ses_%08d', i), 'global', 's', '/w', 'T', '1.18.33', i, i FROM n;
         INSERT INTO message SELECT printf('msg_%08d', rowid), id, 1, 2,
           '{{\"role\":\"assistant\",\"time\":{{\"created\":1,\"completed\":2}},\"finish\":\"stop\"}}' FROM session;
         INSERT INTO part SELECT printf('prt_%08d', rowid), printf('msg_%08d', rowid), id, 1, 2,
           '{{\"type\":\"step-finish\",\"pad\":\"' || replace(hex(zeroblob({half})), '0', 'x') || '\"}}' FROM session;",
        half = pad / 2
    ))
    .unwrap();
    data
}

#[test]
fn a_store_is_read_in_pages_not_whole() {
    const NAME: &str = "a_store_is_read_in_pages_not_whole";
    if !is_child() {
        bounded_child(NAME, "a store of 96 MiB of rows", 48);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = padded_store(dir.path(), 160, 600 << 10);
    let db = data.join("opencode.db");
    let mut reader: Box<dyn Read> =
        Box::new(swarmtop::source::files::open(&swarmtop::source::files::Input::File(db)).unwrap());
    let (mut lines, mut buf) = (0usize, vec![0u8; 1 << 16]);
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    report_peak();
    println!("{lines} records");
    // A store no process holds: its roots were killed with their writer, a `dead` record each.
    // The message is read as it was made and as it ended (issue 19).
    assert_eq!(lines, 5 * 160, "a session, a message twice, a part and a `dead` record each");
}

// `stats --json` of a store, a batch of root sessions at a time (issue 22: memory flat in the
// store's size).

/// A store of `roots` root sessions in the real CLI's shapes, one in every three handing a task
/// to a child session; a root begins every `step_ms` and runs ~30 s (less than `step_ms`: one
/// after another; more: side by side). Every id sorts by time, as OpenCode's do (wire.md §9).
fn tree_store(dir: &Path, roots: u64, step_ms: i64) -> PathBuf {
    let (data, conn) = store(dir, false);
    conn.execute_batch("BEGIN").unwrap();
    let session = |id: &str, parent: Option<&str>, title: &str, (made, updated): (i64, i64)| {
        conn.prepare_cached(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, cost, tokens_input, \
               tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, \
               time_updated) VALUES (?1, 'global', ?2, 's', '/w', ?3, '1.18.33', 0, 0, 0, 0, 0, 0, 'build', \
               '{\"id\":\"mock-large\",\"providerID\":\"mock\"}', ?4, ?5)",
        )
        .unwrap()
        .execute(rusqlite::params![id, parent, title, made, updated])
        .unwrap();
    };
    let message = |session: &str, at: i64, done: Option<i64>, data: String| {
        let id = format!("msg_{at:012x}{}", &session[4..12]);
        conn.prepare_cached(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .unwrap()
        .execute(rusqlite::params![id, session, at, done.unwrap_or(at), data])
        .unwrap();
        id
    };
    let part = |message: &str, session: &str, (at, done): (i64, i64), data: String| {
        conn.prepare_cached(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .unwrap()
        .execute(rusqlite::params![format!("prt_{at:012x}{}", &session[4..12]), message, session, at, done, data])
        .unwrap();
    };
    let answer = |session: &str, at: i64, done: i64, tokens: u64| {
        let data = format!(
            r#"{{"role":"assistant","mode":"build","agent":"build","cost":0.001,"tokens":{{"total":{},"input":{tokens},"output":7,"reasoning":0,"cache":{{"write":0,"read":3}}}},"modelID":"mock-large","providerID":"mock","time":{{"created":{at},"completed":{done}}},"finish":"stop"}}"#,
            tokens + 7
        );
        message(session, at, Some(done), data)
    };
    for i in 0..roots {
        let t = 1_796_000_000_000 + i64::try_from(i).unwrap() * step_ms;
        let root = format!("ses_{:012x}rootSessionAbc", 1_000_000_000 - 10 * i);
        let child = format!("ses_{:012x}childSessionA", 1_000_000_000 - 10 * i - 5);
        let spawns = i % 3 == 0;
        session(&root, None, &format!("Root number {i}"), (t, t + 30_000));
        let prompt = message(
            &root,
            t + 100,
            None,
            format!(r#"{{"role":"user","time":{{"created":{}}},"agent":"build"}}"#, t + 100),
        );
        part(&prompt, &root, (t + 101, t + 101), r#"{"type":"text","text":"Do the work."}"#.to_owned());
        let reply = answer(&root, t + 200, t + 30_000, 1000 + i);
        if spawns {
            let task = format!(
                r#"{{"type":"tool","tool":"task","callID":"call_{i}","state":{{"status":"completed","input":{{"description":"Help {i}","prompt":"Help with {i}.","subagent_type":"general"}},"output":"done","metadata":{{"sessionId":"{child}"}},"title":"Help {i}","time":{{"start":{},"end":{}}}}}}}"#,
                t + 300,
                t + 25_000
            );
            part(&reply, &root, (t + 300, t + 25_000), task);
            session(&child, Some(&root), &format!("Help {i} (@general subagent)"), (t + 5_000, t + 20_000));
            let asked = message(
                &child,
                t + 5_100,
                None,
                format!(r#"{{"role":"user","time":{{"created":{}}},"agent":"general"}}"#, t + 5_100),
            );
            part(&asked, &child, (t + 5_101, t + 5_101), format!(r#"{{"type":"text","text":"Help with {i}."}}"#));
            answer(&child, t + 5_200, t + 19_000, 500 + i);
        }
        part(&reply, &root, (t + 29_000, t + 29_500), r#"{"type":"text","text":"All done."}"#.to_owned());
    }
    conn.execute_batch("COMMIT").unwrap();
    data
}

/// `stats --json` of the store read whole, a record at a time, as every other input is.
fn whole_stats(data: &Path) -> String {
    let config = swarmtop::pipeline::Config::default().figures();
    let mut pipeline = swarmtop::pipeline::Pipeline::new(config);
    let inputs = [swarmtop::source::files::Input::File(data.join("opencode.db"))];
    let timing = swarmtop::source::merge::Timing::default();
    swarmtop::feed::feed(
        &inputs[..],
        timing,
        1,
        swarmtop::feed::CHUNK_BYTES,
        &mut pipeline,
        &mut |_: &swarmtop::router::Event<'_, '_>| {},
    )
    .unwrap();
    pipeline.finish();
    swarmtop::commands::stats::render_json(&pipeline)
}

fn batched_stats(data: &Path, per_batch: usize) -> Option<String> {
    let config = swarmtop::pipeline::Config::default().figures();
    swarmtop::commands::stats::batched::store_json(&data.join("opencode.db"), &config, per_batch).unwrap()
}

/// The object without its threads' order: sessions side by side come in another order.
fn unordered(json: &str) -> Value {
    let mut v: Value = serde_json::from_str(json).unwrap();
    v["threads"].as_array_mut().unwrap().sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    v
}

#[test]
fn a_store_read_in_batches_gives_the_figures_of_a_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = tree_store(dir.path(), 20, 60_000);
    let whole = whole_stats(&data);
    let v: Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(v["threads"].as_array().unwrap().len(), 27, "20 roots and 7 children: {whole}");
    assert!(v["threads"].as_array().unwrap().iter().any(|t| t["depth"] == 1 && t["via"].is_string()), "{whole}");
    // One session after another: the same text, every batch size (a batch of one root, of a
    // few, a last batch short, every root in one).
    for per_batch in [1, 3, 7, 20, 256] {
        assert_eq!(batched_stats(&data, per_batch).as_deref(), Some(whole.as_str()), "batches of {per_batch}");
    }
}

#[test]
fn sessions_side_by_side_read_in_batches_keep_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    // A root begins every 20 s and runs 30 s: each batch's last runs while the next's first begins.
    let data = tree_store(dir.path(), 20, 20_000);
    let whole = whole_stats(&data);
    for per_batch in [1, 4, 256] {
        let batched = batched_stats(&data, per_batch).expect("every row reached");
        assert_eq!(unordered(&batched), unordered(&whole), "batches of {per_batch}");
    }
}

#[test]
fn a_row_no_root_reaches_sends_the_store_to_a_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = tree_store(dir.path(), 6, 60_000);
    let conn = rusqlite::Connection::open(data.join("opencode.db")).unwrap();
    conn.pragma_update(None, "foreign_keys", false).unwrap();
    // A message of a session the store does not hold, and a session whose parent it does not.
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_zzz', 'ses_gone', 1, 2, \
         '{\"role\":\"assistant\",\"tokens\":{\"input\":5,\"output\":1},\"time\":{\"created\":1,\"completed\":2}}')",
        [],
    )
    .unwrap();
    session_row(&conn, "ses_000000000001lostParentAb", Some("ses_missing"), "Lost");
    drop(conn);
    assert_eq!(batched_stats(&data, 2), None, "batches would leave the two rows out");
    // `stats --json` then reads it whole: both are there.
    let (out, v) = stats_json(&data);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(unordered(&String::from_utf8(out.stdout).unwrap()), unordered(&whole_stats(&data)));
    assert!(thread(&v, "ses_000000000001lostParentAb").is_some(), "{v}");
}

/// `swarmtop stats --json` on `data`: its peak RSS in MiB (polled from `/proc` until it exits),
/// and the bytes it printed.
fn stats_peak_mib(data: &Path) -> (u64, usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .args(["stats", "--json"])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let printed = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()).unwrap());
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    let status = loop {
        let kb = std::fs::read_to_string(&status_file)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        peak_kb = peak_kb.max(kb.unwrap_or(0));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    (peak_kb / 1024, usize::try_from(printed.join().unwrap()).unwrap())
}

#[test]
fn stats_of_a_large_store_holds_a_batch_not_the_store() {
    let dir = tempfile::tempdir().unwrap();
    // 40,000 sessions. Read whole, the model took ~2.5 KB a session: 130 MiB here (and 295 MiB
    // for the 100,000 of `benches/opencode_store`).
    let data = tree_store(dir.path(), 30_000, 60_000);
    let (peak, printed) = stats_peak_mib(&data);
    eprintln!("stats --json of 40,000 sessions: peak RSS {peak} MiB, {printed} bytes printed");
    assert!(printed > 40_000 * 500, "every thread printed: {printed} bytes");
    assert!(peak < 64, "peak RSS {peak} MiB");
}
