//! `swarmtop serve` for real, on loopback: its answers are the commands' answers, its events tell
//! each change once and resume after the last one a client saw, a stalled client is told to
//! resync and holds back no one, a hundred clients each get every event, and a daemon killed
//! mid-sync and started again leaves the store a clean sync makes.

#[path = "../benches/support/claude_folder.rs"]
#[allow(dead_code)]
mod claude_folder;
mod serve_support;
#[path = "store_support/mod.rs"]
mod store_support;

use std::time::{Duration, Instant};

use serve_support::{Daemon, claude_project, line, opening, outside_address, session_id, transcript};
use store_support::{CLAUDE_SESSION, Machine};

/// Records in the Claude 2.1.39 fixture session (transcript and sub-agents).
const FIXTURE_RECORDS: u64 = 1661;

fn without_live(mut v: serde_json::Value) -> serde_json::Value {
    for s in v["sessions"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        s.remove("live");
        s.remove("stored");
    }
    v
}

fn parse(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn the_api_answers_as_the_commands_do() {
    let m = Machine::new();
    m.with_claude().with_codex("collab_v1");
    let d = Daemon::start(&m.home(), &[]);
    let status = d.wait_status("the first sync", |s| s["syncs"].as_u64() >= Some(1));
    // What the last sync took, read and wrote; the first one is the full look, which reads both.
    let last = &status["lastSync"];
    assert!(last["ms"].as_f64().is_some() && status["syncMs"].as_u64().is_some(), "{status}");
    if status["syncs"] == 1 {
        assert_eq!(
            (&last["full"], &last["read"], &last["continued"]),
            (&serde_json::json!(true), &serde_json::json!(2), &serde_json::json!(0)),
            "{status}"
        );
        assert!(last["rows"].as_u64() > Some(0) && last["bytesRead"].as_u64() > Some(0), "{status}");
    }
    // The store answers after the first sync; the live state once the follower has read the files
    // (its figures the store's), which may be a moment later on a loaded machine: a live state
    // read half-way through the transcript costs less.
    let until = Instant::now() + Duration::from_secs(60);
    let (sessions, claude) = loop {
        let sessions = d.json("/api/sessions?tz=UTC");
        let claude = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == CLAUDE_SESSION).cloned();
        if claude.as_ref().is_some_and(|c| c["live"]["costUsd"] == c["costUsd"]) || Instant::now() > until {
            break (sessions.clone(), claude.unwrap_or_else(|| panic!("no Claude session in {sessions}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 2, "{sessions}");
    assert_eq!(claude["live"]["costUsd"].to_string(), "10.11369555", "the live state: {claude}");
    assert_eq!(without_live(sessions), parse(&m.run(&["history", "--json", "--no-sync", "--tz", "UTC"])));
    assert_eq!(
        d.get(&format!("/api/sessions/{CLAUDE_SESSION}")).1,
        m.run(&["history", CLAUDE_SESSION, "--json", "--no-sync"])
    );
    assert_eq!(d.get("/api/report/daily?tz=UTC").1, m.run(&["report", "daily", "--json", "--tz", "UTC", "--no-sync"]));
    assert_eq!(
        d.get("/api/report/agent-type?tz=Asia%2FTokyo").1,
        m.run(&["report", "agent-type", "--json", "--tz", "Asia/Tokyo", "--no-sync"])
    );
    assert_eq!(
        d.get("/api/search?q=spotter&tz=UTC").1,
        m.run(&["search", "spotter", "--json", "--tz", "UTC", "--no-sync"])
    );
    assert_eq!(d.get("/api/report/yearly").0, 404);
    assert_eq!(d.get("/api/sessions/ffffffff-none").0, 404);
    assert_eq!(d.get("/api/report/daily?since=yesterday-ish").0, 400);
    assert!(d.stop().success(), "SIGTERM: exit 0");
}

/// Every event of one session arriving, numbered without gaps; a client that reconnects with
/// `Last-Event-ID` gets exactly the events after it.
#[test]
fn events_tell_each_change_and_resume_after_the_last_seen() {
    let m = Machine::new();
    std::fs::create_dir_all(claude_project(&m.home())).unwrap();
    let d = Daemon::start(&m.home(), &[]);
    d.wait_status("caught up", |s| s["lastEventId"].as_u64() >= Some(1));
    let mut first = d.events(None);
    m.with_claude();
    let last = d.wait_status("the session read", |s| s["records"].as_u64() == Some(FIXTURE_RECORDS))["lastEventId"]
        .as_u64()
        .unwrap();
    let seen = first.until(|e| e.id == Some(last));
    let ids: Vec<u64> = seen.iter().map(|e| e.id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "numbered without gaps: {ids:?}");
    for kind in ["agent", "status", "item", "usage"] {
        assert!(seen.iter().any(|e| e.kind == kind), "a {kind} event");
    }
    let agent = |thread: &str| seen.iter().find(|e| e.kind == "agent" && e.data["thread"] == thread).cloned();
    let root = agent(CLAUDE_SESSION).expect("the root is told");
    assert!(root.data["parent"].is_null());
    let child = agent("a2898e3").expect("the sub-agent is told");
    assert_eq!(child.data["parent"], CLAUDE_SESSION);
    assert!(seen.iter().all(|e| e.data["session"] == CLAUDE_SESSION), "each event names its session");
    // Each thread's last usage event is its spend now: together, the session's.
    let mut last_usage = std::collections::BTreeMap::new();
    for e in seen.iter().filter(|e| e.kind == "usage") {
        last_usage.insert(e.data["thread"].as_str().unwrap().to_owned(), e.data["tokens"]["total"].as_u64().unwrap());
    }
    assert_eq!(last_usage.values().sum::<u64>(), 12_976_160, "{last_usage:?}");

    let from = ids[ids.len() / 2];
    let mut again = d.events(Some(from));
    let resumed = again.until(|e| e.id == Some(last));
    let expected: Vec<(Option<u64>, String, serde_json::Value)> =
        seen.iter().filter(|e| e.id > Some(from)).map(|e| (e.id, e.kind.clone(), e.data.clone())).collect();
    let got: Vec<(Option<u64>, String, serde_json::Value)> =
        resumed.iter().map(|e| (e.id, e.kind.clone(), e.data.clone())).collect();
    assert_eq!(got, expected, "the events after the last seen, each once");
    // An id no longer kept (or never sent): told to resync, with the state now.
    let mut lost = d.events(Some(last + 1000));
    let told = lost.next();
    assert_eq!(told.kind, "resync");
    assert_eq!(told.id, Some(last));
    assert_eq!(told.data["sessions"][0]["id"], CLAUDE_SESSION);
}

/// A client that reads nothing while more events go out than the daemon keeps is told to resync
/// when it reads again; meanwhile a reading client gets every event, ingest goes on, and what the
/// daemon keeps stays within its bound. (The daemon keeps 1,024 events here rather than its
/// 32,768, so that a few thousand lines are enough.)
#[test]
fn a_stalled_client_is_told_to_resync_and_holds_back_no_one() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    const KEPT: u64 = 1024;
    let m = Machine::new();
    std::fs::create_dir_all(transcript(&m.home(), 0).parent().unwrap()).unwrap();
    let d = Daemon::start(&m.home(), &["--keep-events", &KEPT.to_string()]);
    let start = d.wait_status("caught up", |s| s["lastEventId"].as_u64() >= Some(1))["lastEventId"].as_u64().unwrap();
    let mut stalled = d.events(None);
    // Its kernel's share held to 128 KiB (left alone, it grows to megabytes: thousands of events).
    nix::sys::socket::setsockopt(stalled.socket(), nix::sys::socket::sockopt::RcvBuf, &(64 << 10)).unwrap();
    let mut reading = d.events(None);
    let target = Arc::new(AtomicU64::new(u64::MAX));
    let until = target.clone();
    let reader = std::thread::spawn(move || reading.until(|e| e.id >= Some(until.load(Ordering::Relaxed))));
    // Each line adds an item and spend to its session: two events. Written 64 at a time, each
    // batch once the daemon has read all but the last (a debug build reads slower than lines are
    // written, and what it finds waiting is one burst): the reading client never has more than
    // some 256 events to take at once, far fewer than are kept.
    let now = jiff::Timestamp::now().to_string();
    let lines = 3 * KEPT;
    std::fs::write(transcript(&m.home(), 0), opening(0, &now)).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(transcript(&m.home(), 0)).unwrap();
    for batch in (1..=lines).collect::<Vec<_>>().chunks(64) {
        let text: String = batch.iter().map(|&i| line(0, i, &now)).collect();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
        d.wait_status("the batch before read", |s| s["records"].as_u64() >= Some(batch[0]));
    }
    let status = d.wait_status("every line read", |s| s["records"].as_u64() == Some(lines + 1));
    let last = status["lastEventId"].as_u64().unwrap();
    assert_eq!(status["kept"]["events"].as_u64(), Some(KEPT), "memory bounded: {status}");
    target.store(last, Ordering::Relaxed);
    // One more session: events past the target, so that the reader stops wherever it is.
    std::fs::write(transcript(&m.home(), 1), opening(1, &now) + &line(1, 1, &now)).unwrap();
    let read = reader.join().unwrap();
    let ids: Vec<u64> = read.iter().map(|e| e.id.unwrap()).collect();
    assert!(
        read.iter().all(|e| e.kind != "resync"),
        "the reading client kept up: {:?}",
        read.iter().find(|e| e.kind == "resync").map(|e| (e.id, &e.data["missed"], &e.data["reason"]))
    );
    assert_eq!(ids.first(), Some(&(start + 1)));
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "every event, in order");
    // More than are kept and than the sockets' buffers hold on the way (some 1,500 events).
    assert!(last - start > 4 * KEPT, "more events than are kept: {}", last - start);
    let stalled_saw = stalled.until(|e| e.kind == "resync" || e.id == Some(last));
    let resync = stalled_saw.last().unwrap();
    assert_eq!(resync.kind, "resync", "the stalled client lost its place after {} events", stalled_saw.len());
    assert!(resync.data["missed"].as_u64() > Some(0));
    assert_eq!(resync.data["sessions"][0]["id"], session_id(0), "the state now: {}", resync.data);
    assert!(d.json("/api/status")["lagged"].as_u64() >= Some(1));
}

/// A hundred clients at once each get every event of a session.
#[test]
fn a_hundred_clients_each_get_every_event() {
    let m = Machine::new();
    std::fs::create_dir_all(claude_project(&m.home())).unwrap();
    let d = Daemon::start(&m.home(), &[]);
    let start = d.wait_status("caught up", |s| s["lastEventId"].as_u64() >= Some(1))["lastEventId"].as_u64().unwrap();
    let clients: Vec<_> = (0..100).map(|_| d.events(None)).collect();
    d.wait_status("a hundred clients", |s| s["clients"].as_u64() == Some(100));
    m.with_claude();
    let last = d.wait_status("the session read", |s| s["records"].as_u64() == Some(FIXTURE_RECORDS))["lastEventId"]
        .as_u64()
        .unwrap();
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                c.until(|e| e.id == Some(last)).iter().map(|e| e.id.unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    let every: Vec<u64> = (start + 1..=last).collect();
    for r in readers {
        assert_eq!(r.join().unwrap(), every);
    }
}

/// The daemon killed (SIGKILL) while it fills the store, then started again: the store holds what
/// one clean sync of the same files makes.
#[test]
fn killed_mid_sync_and_restarted_the_store_is_a_clean_sync_s() {
    let m = Machine::new();
    claude_folder::write(&m.home().join(".claude"), 6).unwrap();
    let d = Daemon::start(&m.home(), &[]);
    std::thread::sleep(std::time::Duration::from_millis(400));
    drop(d);
    let d = Daemon::start(&m.home(), &[]);
    d.wait_status("a sync", |s| s["syncs"].as_u64() >= Some(1) && s["syncFailures"] == 0);
    assert!(d.stop().success());
    let clean = m.dir.path().join("clean.db");
    m.run(&["sync", "--quiet", "--store", clean.to_str().unwrap()]);
    let dump = |p: &std::path::Path| swarmtop::store::Store::open(p).unwrap().backend().dump().unwrap();
    assert_eq!(dump(&m.store()), dump(&clean));
}

/// `/api/sessions/{id}` of a session that goes on: its tree as the lines written so far make it,
/// not as the last turn's sync found it (turns an hour apart here), in the `stats --json` shape.
#[test]
fn a_session_going_on_is_answered_as_it_is_now() {
    let m = Machine::new();
    let project = claude_project(&m.home());
    std::fs::create_dir_all(&project).unwrap();
    let d = Daemon::start_with(&m.home(), "127.0.0.1:0", "1h", &[]);
    d.wait_status("the first sync", |s| s["syncs"].as_u64() >= Some(1));
    let name = format!("{CLAUDE_SESSION}.jsonl");
    let fixture = store_support::fixtures().join("claude-2.1.39");
    let lines: Vec<String> = std::fs::read_to_string(fixture.join(&name)).unwrap().lines().map(str::to_owned).collect();
    let half = lines.len() / 2;
    std::fs::write(project.join(&name), lines[..half].join("\n") + "\n").unwrap();
    d.wait_status("half the transcript read", |s| s["records"].as_u64() == Some(half as u64));
    let now = parse(&d.get(&format!("/api/sessions/{CLAUDE_SESSION}")).1);
    let alone = m.dir.path().join("half.jsonl");
    std::fs::write(&alone, lines[..half].join("\n") + "\n").unwrap();
    let stats = parse(&m.run(&["stats", alone.to_str().unwrap(), "--json"]));
    assert_eq!(now["totals"], stats["totals"], "the session as its first half makes it");
    assert_eq!(now["threads"].as_array().unwrap().len(), stats["threads"].as_array().unwrap().len());

    // The rest and the sub-agents: the next answer has them, an hour before the next turn.
    claude_folder_rest(&fixture, &project, &lines[half..]);
    d.wait_status("the whole session read", |s| s["records"].as_u64() == Some(FIXTURE_RECORDS));
    let (status, whole) = d.get(&format!("/api/sessions/{CLAUDE_SESSION}"));
    assert_eq!(status, 200);
    assert_eq!(parse(&whole)["totals"]["costUsd"].to_string(), "10.11369555", "{whole}");
    assert!(d.stop().success());
    // What a clean sync then stores is what was answered.
    assert_eq!(whole, m.run(&["history", CLAUDE_SESSION, "--json"]));
}

/// Appends `rest` to the transcript and copies the sub-agents' folder in.
fn claude_folder_rest(fixture: &std::path::Path, project: &std::path::Path, rest: &[String]) {
    use std::io::Write as _;
    let subagents = project.join(CLAUDE_SESSION).join("subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    for f in std::fs::read_dir(fixture.join(CLAUDE_SESSION).join("subagents")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, subagents.join(f.file_name().unwrap())).unwrap();
    }
    let mut file =
        std::fs::OpenOptions::new().append(true).open(project.join(format!("{CLAUDE_SESSION}.jsonl"))).unwrap();
    file.write_all((rest.join("\n") + "\n").as_bytes()).unwrap();
}

#[test]
fn the_unit_runs_this_daemon() {
    let m = Machine::new();
    let unit = m.run(&["serve", "--print-unit", "--listen", "127.0.0.1:7078"]);
    assert!(unit.contains("ExecStart=") && unit.contains(" serve --listen 127.0.0.1:7078"), "{unit}");
    assert!(unit.contains("[Install]"));
}

/// Beyond loopback only with the token: made once, private, and asked of anyone who is not one of
/// our own processes on loopback.
#[test]
fn beyond_loopback_only_with_the_token() {
    use std::os::unix::fs::PermissionsExt as _;
    let m = Machine::new();
    m.with_claude();
    let d = Daemon::start_on(&m.home(), "0.0.0.0:0", &[]);
    let port = d.addr.rsplit(':').next().unwrap().to_owned();
    let token_file = m.home().join(".local/share/swarmtop/serve-token");
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    assert_eq!(serve_support::get(&format!("127.0.0.1:{port}"), "/api/status", &[]).0, 200, "ours, on loopback");
    let Some(ip) = outside_address() else { return };
    let outside = format!("{ip}:{port}");
    let (status, body) = serve_support::get(&outside, "/api/sessions", &[]);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Bearer"), "{body}");
    let bearer = format!("Bearer {token}");
    assert_eq!(serve_support::get(&outside, "/api/sessions", &[("Authorization", "Bearer 00")]).0, 401);
    assert_eq!(serve_support::get(&outside, "/api/sessions", &[("Authorization", &bearer)]).0, 200);
}
