//! `swarmtop serve` with a team store on a real PostgreSQL server: the server stopped while the
//! daemon runs (the daemon keeps its file and answers from it, and the database catches up once it
//! is back), and the daemon killed mid-sync and started again; either way the database holds what
//! one clean sync of the same files makes: nothing lost, nothing twice.

#[path = "../benches/support/claude_folder.rs"]
#[allow(dead_code)]
mod claude_folder;
mod postgres_support;
mod serve_support;
#[path = "store_support/mod.rs"]
mod store_support;

use postgres_support::Postgres;
use serve_support::Daemon;
use store_support::{CLAUDE_SESSION, Machine};

/// What a database holds, as two databases holding the same runs print it.
fn dump(url: &str) -> String {
    swarmtop::store::Store::open_at(&swarmtop::store::Location::Team(url.to_owned()), "any")
        .unwrap()
        .backend()
        .dump()
        .unwrap()
}

/// A database `m`'s files synced into once, as the machine `name`.
fn clean(pg: &Postgres, m: &Machine, name: &str) -> String {
    let url = pg.database("clean");
    m.run(&["sync", "--quiet", "--store", &url, "--machine", name]);
    url
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    let mut ids: Vec<String> =
        v["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    ids
}

#[test]
fn the_team_store_down_the_daemon_keeps_its_file_and_catches_up() {
    let pg = Postgres::start();
    let url = pg.database("fleet");
    let m = Machine::new();
    m.with_claude();
    let d = Daemon::start(&m.home(), &["--store", &url, "--machine", "alpha"]);
    d.wait_status("the first sync", |s| s["syncs"].as_u64() >= Some(1) && s["syncFailures"] == 0);
    let listed = d.json("/api/sessions");
    assert_eq!(listed["sessions"][0]["machine"], "alpha", "answered from the team store: {listed}");
    pg.stop();
    m.with_codex("collab_v1").with_codex("agents_md");
    let down = d.wait_status("a failed sync", |s| s["syncFailures"].as_u64() >= Some(1));
    assert!(down["lastSyncError"].as_str().unwrap().contains("team store"), "{down}");
    // Answered from this machine's file meanwhile, which kept up.
    let mut local = d.json("/api/sessions");
    for _ in 0..600 {
        if ids(&local).len() == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        local = d.json("/api/sessions");
    }
    assert_eq!(ids(&local).len(), 3, "{local}");
    assert!(local["sessions"][0].get("machine").is_none(), "from the file: {local}");
    pg.start_again();
    let failures = down["syncFailures"].as_u64().unwrap();
    d.wait_status("the team store back", |s| {
        s["lastSyncError"].is_null() && s["syncFailures"].as_u64() >= Some(failures)
    });
    let back = d.json("/api/sessions");
    assert_eq!(ids(&back), ids(&local));
    let stored = back["sessions"].as_array().unwrap().iter().filter(|s| s["stored"] == true);
    assert!(stored.clone().count() >= 1 && stored.into_iter().all(|s| s["machine"] == "alpha"), "{back}");
    assert!(d.stop().success());
    assert!(ids(&back).contains(&CLAUDE_SESSION.to_owned()));
    assert_eq!(dump(&url), dump(&clean(&pg, &m, "alpha")), "every run once, as one clean sync");
}

#[test]
fn killed_mid_sync_into_the_team_store_and_restarted_nothing_is_lost_or_doubled() {
    let pg = Postgres::start();
    let url = pg.database("fleet");
    let m = Machine::new();
    claude_folder::write(&m.home().join(".claude"), 6).unwrap();
    for wait in [300, 900] {
        let d = Daemon::start(&m.home(), &["--store", &url, "--machine", "alpha"]);
        std::thread::sleep(std::time::Duration::from_millis(wait));
        drop(d);
    }
    let d = Daemon::start(&m.home(), &["--store", &url, "--machine", "alpha"]);
    d.wait_status("a sync", |s| s["syncs"].as_u64() >= Some(1) && s["syncFailures"] == 0);
    assert!(d.stop().success());
    assert_eq!(dump(&url), dump(&clean(&pg, &m, "alpha")));
}
