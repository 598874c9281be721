//! The team store on a real PostgreSQL server: its schema brought up to date by many machines at
//! once, each step once, and a database a newer swarmtop wrote refused untouched; through the
//! binary, the same answers as the file store, and machines syncing into it at the same moment.

mod postgres_support;
mod store_support;

use std::process::Output;

use postgres_support::Postgres;
use store_support::{CLAUDE_SESSION, CODEX_RUNS, Machine};
use swarmtop::store::postgres::{self as team, LATEST};

#[test]
fn machines_opening_an_empty_database_at_once_migrate_it_once() {
    let pg = Postgres::start();
    let url = pg.database("fleet");
    let opened: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || team::open(&url).map(|_| ()).map_err(|e| format!("{e:#}")))
        })
        .collect();
    for o in opened {
        o.join().unwrap().unwrap();
    }
    let mut client = team::open(&url).unwrap();
    assert_eq!(team::version(&mut client).unwrap(), LATEST);
    let versions: i64 = client.query_one("SELECT count(*) FROM swarmtop_schema", &[]).unwrap().get(0);
    assert_eq!(versions, 1, "one version row");
    let tables: Vec<String> = client
        .query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        tables,
        ["acts", "files", "items", "meta", "runs", "sessions", "sources", "swarmtop_schema", "texts", "usage"]
    );
    // Each machine's sessions are its own: one thread id on two machines is two sessions.
    client
        .batch_execute(
            "INSERT INTO sources (machine, key, place, agent, fingerprint, synced_ms, lines, bytes, format, stats_json, tree_text)
               VALUES ('a', 'k', 'claude', 'claude', 'f', 0, 0, 0, 'x', '', ''), ('b', 'k', 'claude', 'claude', 'f', 0, 0, 0, 'x', '', '');",
        )
        .unwrap();
    // The full-text index is the database's own.
    client
        .batch_execute("INSERT INTO texts (digest, body, refs) VALUES ('\\x00', 'Fix the parser quickly', 1)")
        .unwrap();
    let found: i64 = client
        .query_one("SELECT count(*) FROM texts WHERE search @@ plainto_tsquery('simple', 'parser')", &[])
        .unwrap()
        .get(0);
    assert_eq!(found, 1);
}

#[test]
fn a_database_a_newer_swarmtop_wrote_is_refused_untouched() {
    let pg = Postgres::start();
    let url = pg.database("newer");
    let mut client = team::open(&url).unwrap();
    let future = i32::try_from(LATEST + 6).unwrap();
    client.execute("UPDATE swarmtop_schema SET version = $1", &[&future]).unwrap();
    let err = team::open(&url).err().expect("refused");
    let shown = format!("{err:#}");
    assert!(shown.contains("newer swarmtop") && shown.contains(&future.to_string()), "{shown}");
    assert_eq!(team::version(&mut client).unwrap(), LATEST + 6, "left as it was");
}

/// swarmtop on `m` as the machine `name`, with the team store at `url`.
fn on(m: &Machine, name: &str, url: &str, args: &[&str]) -> Output {
    m.swarmtop().env("SWARMTOP_MACHINE", name).env("SWARMTOP_STORE", url).args(args).output().expect("swarmtop runs")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(out: Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).expect("one JSON object")
}

/// The JSON without what only a team store says (which machine ran what).
fn local_view(mut v: serde_json::Value) -> serde_json::Value {
    for list in ["sessions", "hits"] {
        for s in v.get_mut(list).and_then(|l| l.as_array_mut()).into_iter().flatten() {
            s.as_object_mut().unwrap().remove("machine");
        }
    }
    v
}

fn full_machine() -> Machine {
    let m = Machine::new();
    m.with_claude();
    for run in CODEX_RUNS {
        m.with_codex(run);
    }
    m
}

/// The same sessions synced into a file and into the database answer every query alike.
#[test]
fn a_team_store_answers_as_the_file_store_does() {
    let pg = Postgres::start();
    let url = pg.database("alike");
    let m = full_machine();
    m.run(&["sync"]);
    let synced = json(on(&m, "laptop", &url, &["sync", "--json"]));
    assert_eq!(synced["sessions"], 1 + CODEX_RUNS.len(), "{synced}");
    assert!(!synced["store"].as_str().unwrap().is_empty());
    let file = |args: &[&str]| m.json(&[args, &["--no-sync"]].concat());
    let team = |args: &[&str]| json(on(&m, "laptop", &url, &[args, &["--no-sync"]].concat()));
    let listed = team(&["history", "--json"]);
    assert!(listed["sessions"].as_array().unwrap().iter().all(|s| s["machine"] == "laptop"), "{listed}");
    assert_eq!(local_view(listed), file(&["history", "--json"]));
    for kind in ["daily", "weekly", "monthly", "session", "project", "model", "agent-type"] {
        assert_eq!(
            team(&["report", kind, "--json", "--tz", "UTC"]),
            file(&["report", kind, "--json", "--tz", "UTC"]),
            "{kind}"
        );
    }
    let by_machine = team(&["report", "machine", "--json"]);
    assert_eq!(by_machine["rows"][0]["key"], "laptop", "{by_machine}");
    assert_eq!(by_machine["totals"], file(&["report", "machine", "--json"])["totals"]);
    let id = CLAUDE_SESSION;
    assert_eq!(
        ok(on(&m, "laptop", &url, &["history", id, "--json", "--no-sync"])),
        m.run(&["history", id, "--json", "--no-sync"])
    );
    assert_eq!(ok(on(&m, "laptop", &url, &["history", &id[..8], "--no-sync"])), m.run(&["history", id, "--no-sync"]));
    // Search ranks its own way; what is found is the same.
    let found = |v: serde_json::Value| {
        let mut hits: Vec<String> = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| format!("{} {} {} {} {}", h["session"], h["thread"], h["kind"], h["tool"], h["time"]))
            .collect();
        hits.sort();
        hits
    };
    // A brief that is also a message is one hit on both (PARENT-TASK, the sub-agent's task).
    for words in ["spotter", "cargo test", "README", "PARENT-TASK", "thorough exploration"] {
        let t = team(&["search", "--json", "--limit", "1000", words]);
        assert!(t["hits"].as_array().unwrap().iter().all(|h| h["machine"] == "laptop"));
        assert_eq!(found(t), found(file(&["search", "--json", "--limit", "1000", words])), "{words}");
    }
    // Tables name the machine after the agent.
    for args in [&["history", "--no-sync"][..], &["search", "--no-sync", "spotter"]] {
        let table = ok(on(&m, "laptop", &url, args));
        let head: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(head[1..3], ["AGENT", "MACHINE"], "{table}");
        assert!(table.lines().skip(1).all(|l| l.contains(" laptop ")), "{table}");
    }
    let marked = team(&["search", "--json", "spotter"]);
    assert!(marked["hits"][0]["snippet"].as_str().unwrap().to_lowercase().contains("spotter"), "{marked}");
    // The sessions of a replay's files (its acts are looked up by them) are found alike.
    let file_store = swarmtop::store::Store::open(&m.store()).unwrap();
    let team_store = swarmtop::store::Store::open_at(&swarmtop::store::Location::Team(url.clone()), "laptop").unwrap();
    let paths: Vec<std::path::PathBuf> = file_store.backend().present().unwrap().into_iter().map(|(_, p)| p).collect();
    let of_files = file_store.backend().sessions_of(&paths).unwrap();
    assert_eq!(of_files.len(), 1 + CODEX_RUNS.len(), "{of_files:?}");
    assert_eq!(team_store.backend().sessions_of(&paths).unwrap(), of_files);
    assert_eq!(team_store.backend().sessions_of(&paths[..0]).unwrap(), Vec::<String>::new());
    // Synced again: nothing read, nothing added.
    let again = json(on(&m, "laptop", &url, &["sync", "--json"]));
    assert_eq!((again["read"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(1 + CODEX_RUNS.len() as u64)));
}

/// Each session listed as (machine, id), with whether its files are still there.
fn present(listed: &serde_json::Value) -> Vec<(String, String, bool)> {
    let mut out: Vec<(String, String, bool)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap().to_owned();
            (text("machine"), text("id"), s["filesPresent"].as_bool().unwrap())
        })
        .collect();
    out.sort();
    out
}

/// A place deleted whole on one machine: its sessions' files are said gone (the quiet sync of a
/// query, then `sync`), that machine's only; every session stays.
#[test]
fn files_gone_with_their_place_are_said_gone_in_a_team_store_too() {
    let pg = Postgres::start();
    let url = pg.database("gone");
    let (a, b) = (full_machine(), full_machine());
    ok(on(&a, "a", &url, &["sync"]));
    ok(on(&b, "b", &url, &["sync"]));
    let all = present(&json(on(&a, "a", &url, &["history", "--json", "--no-sync"])));
    assert_eq!(all.len(), 2 * (1 + CODEX_RUNS.len()));
    assert!(all.iter().all(|s| s.2), "{all:?}");
    let expect = |gone: &dyn Fn(&str) -> bool| -> Vec<(String, String, bool)> {
        all.iter().map(|(m, id, _)| (m.clone(), id.clone(), !(m == "a" && gone(id)))).collect()
    };
    std::fs::remove_dir_all(a.home().join(".claude/projects")).unwrap();
    let listed = present(&json(on(&a, "a", &url, &["history", "--json"])));
    assert_eq!(listed, expect(&|id| id == CLAUDE_SESSION));
    std::fs::remove_dir_all(a.home().join(".codex/sessions")).unwrap();
    ok(on(&a, "a", &url, &["sync"]));
    let listed = present(&json(on(&b, "b", &url, &["history", "--json"])));
    assert_eq!(listed, expect(&|_| true));
}

/// Two machines sync into one database at the same moment, again and again: each session once,
/// under its machine's name; a session both ran (the same files) is each one's.
#[test]
fn two_machines_sync_into_one_database_at_once() {
    let pg = Postgres::start();
    let url = pg.database("fleet");
    let a = Machine::new();
    a.with_claude().with_codex("collab_v1").with_codex("agents_md");
    let b = Machine::new();
    b.with_codex("collab_v2").with_codex("interrupt").with_codex("agents_md");
    for round in 0..3 {
        let syncs: Vec<_> = [(&a, "alpha"), (&b, "beta")]
            .into_iter()
            .map(|(m, name)| {
                let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_swarmtop"));
                cmd.env_clear().env("HOME", m.home()).env("TZ", "UTC").env("SWARMTOP_STORE", &url).args([
                    "sync",
                    "--json",
                    "--machine",
                    name,
                ]);
                cmd.spawn().unwrap()
            })
            .collect();
        for s in syncs {
            let out = s.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}");
        }
        if round == 1 {
            // A file touched on one machine is read again there, and replaces only that machine's rows.
            let rollouts = std::fs::read_dir(a.codex_day()).unwrap().next().unwrap().unwrap().path();
            let text = std::fs::read(&rollouts).unwrap();
            std::fs::write(&rollouts, text).unwrap();
        }
    }
    let fleet = json(on(&a, "alpha", &url, &["history", "--json", "--no-sync"]));
    let mut seen: Vec<(String, String)> = fleet["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["machine"].as_str().unwrap().to_owned(), s["id"].as_str().unwrap().to_owned()))
        .collect();
    seen.sort();
    let n = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), n, "no session twice on one machine: {seen:?}");
    assert_eq!(seen.iter().filter(|(m, _)| m == "alpha").count(), 3, "{seen:?}");
    assert_eq!(seen.iter().filter(|(m, _)| m == "beta").count(), 3, "{seen:?}");
    let alpha = json(on(&b, "beta", &url, &["history", "--json", "--no-sync", "--machine", "alpha"]));
    assert_eq!(alpha["sessions"].as_array().unwrap().len(), 3);
    // Each machine's sessions as its own file store holds them.
    a.run(&["sync"]);
    assert_eq!(local_view(alpha), a.json(&["history", "--json", "--no-sync"]));
    let by_machine = json(on(&a, "alpha", &url, &["report", "machine", "--json", "--no-sync"]));
    let keys: Vec<&str> = by_machine["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 2, "{by_machine}");
    // A text both machines hold is kept once, counted twice.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let doubled: i64 = client
        .query_one("SELECT count(*) FROM (SELECT body FROM texts GROUP BY body HAVING count(*) > 1) d", &[])
        .unwrap()
        .get(0);
    assert_eq!(doubled, 0);
    let refs_ok: bool = client
        .query_one("SELECT bool_and(t.refs = (SELECT count(*) FROM items i WHERE i.text_id = t.id)) FROM texts t", &[])
        .unwrap()
        .get(0);
    assert!(refs_ok, "every text counts the items that hold it");
    // Pruning is one machine's: beta's sessions stay.
    let pruned = ok(on(&a, "alpha", &url, &["history", "--prune", "--before", "2030-01-01"]));
    assert!(pruned.starts_with("pruned 3 sessions"), "{pruned}");
    let left = json(on(&a, "alpha", &url, &["history", "--json", "--no-sync"]));
    assert!(left["sessions"].as_array().unwrap().iter().all(|s| s["machine"] == "beta"), "{left}");
    assert_eq!(left["sessions"].as_array().unwrap().len(), 3);
}

/// An act as a guard keeps it, on `session` at `at_ms`.
fn act(session: &str, at_ms: i64) -> swarmtop::store::rows::ActRow {
    swarmtop::store::rows::ActRow {
        at_ms,
        kind: "deny".to_owned(),
        by: "guard".to_owned(),
        via: "hook".to_owned(),
        session: Some(session.to_owned()),
        target: "a2898e3".to_owned(),
        detail: String::new(),
        outcome: "denied: depth 2 > 1".to_owned(),
    }
}

/// A prune on the team store takes this machine's acts on the sessions it removes, and its older
/// acts on no session it keeps; another machine's acts stay, even on a session of the same id.
#[test]
fn a_prune_removes_this_machines_acts_with_its_sessions() {
    const NEW_YEAR_MS: i64 = 1_767_225_600_000;
    let pg = Postgres::start();
    let url = pg.database("acts");
    let (a, b) = (full_machine(), full_machine());
    ok(on(&a, "alpha", &url, &["sync"]));
    ok(on(&b, "beta", &url, &["sync"]));
    let location = swarmtop::store::Location::Team(url.clone());
    for name in ["alpha", "beta"] {
        let mut store = swarmtop::store::Store::open_at(&location, name).unwrap();
        store.backend_mut().record_act(&act(CLAUDE_SESSION, NEW_YEAR_MS)).unwrap();
        store.backend_mut().record_act(&act("never-stored", NEW_YEAR_MS)).unwrap();
    }
    let pruned = ok(on(&a, "alpha", &url, &["history", "--prune", "--before", "2026-11-01"]));
    assert!(pruned.starts_with("pruned 1 sessions (") && pruned.contains(" runs, 2 acts)"), "{pruned}");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let left: Vec<(String, String)> = client
        .query("SELECT machine, session FROM acts ORDER BY machine, session", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want = |s: &str| ("beta".to_owned(), s.to_owned());
    assert_eq!(left, [want(CLAUDE_SESSION), want("never-stored")], "beta's acts stay");
}

#[test]
fn machine_filters_and_a_database_that_is_not_there_are_said_plainly() {
    let m = Machine::new();
    m.with_claude();
    let out = m.output(&["history", "--json", "--machine", "alpha"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("filters a team store"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://me:hunter2@127.0.0.1:{port}/fleet");
    let out = on(&m, "alpha", &url, &["history"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connecting to the team store") && err.contains("me:***@"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// Schema 4 on the team store: a database schema 3 wrote (this swarmtop's rows, the item columns
/// of schema 4 dropped, the version set back, the sources marked as read by the swarmtop before)
/// is upgraded in place when a machine opens it, every session as it was; the next sync reads
/// the sources again, and a session opened from the store draws what the file store's does: the
/// agent's own names for its calls (OpenCode `task`, Claude Code `Agent`), item ids and turns.
#[test]
fn a_schema_3_team_store_is_upgraded_in_place_and_keeps_each_agents_own_words() {
    let pg = Postgres::start();
    let url = pg.database("four");
    let m = Machine::new();
    m.with_opencode("tree").with_claude_2_1_332("parallel");
    ok(on(&m, "laptop", &url, &["sync"]));
    let listed = || ok(on(&m, "laptop", &url, &["history", "--json", "--no-sync"]));
    let before = listed();
    let mut client = team::open(&url).unwrap();
    client
        .batch_execute(
            "ALTER TABLE items DROP COLUMN item_id, DROP COLUMN turn, DROP COLUMN tool, DROP COLUMN op,
                               DROP COLUMN exit_code, DROP COLUMN receivers, DROP COLUMN why;
             UPDATE swarmtop_schema SET version = 3;
             UPDATE sources SET fingerprint = 'swarmtop 0.1.0; prices builtin';
             UPDATE meta SET value = 'swarmtop 0.1.0; prices builtin' WHERE key = 'reader';",
        )
        .unwrap();
    assert_eq!(team::version(&mut client).unwrap(), 3);
    assert_eq!(listed(), before, "opened and upgraded: every session as it was");
    assert_eq!(team::version(&mut client).unwrap(), LATEST);
    // Version 5 fills only what the rows tell, as in SQLite: OpenCode's three spawns are `task`.
    let tools: Vec<String> =
        client.query("SELECT tool FROM items WHERE tool IS NOT NULL", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(tools, ["task", "task", "task"], "what schema 3 did not keep is not made up");
    assert_eq!(json(on(&m, "laptop", &url, &["sync", "--json"]))["read"], 2);
    m.run(&["sync"]);
    let file = swarmtop::store::Store::open(&m.store()).unwrap();
    let team_store = swarmtop::store::Store::open_at(&swarmtop::store::Location::Team(url.clone()), "laptop").unwrap();
    let ids: Vec<String> = serde_json::from_str::<serde_json::Value>(&before).unwrap()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    let mut tools: Vec<String> = Vec::new();
    for id in &ids {
        let stored = swarmtop::commands::stored(&team_store, id).unwrap();
        assert_eq!(stored, swarmtop::commands::stored(&file, id).unwrap(), "{id}");
        let root = &stored.runs[0].entries;
        assert!(root.iter().all(|i| !i.id.is_empty()), "{id}: every item keeps its id");
        tools.extend(root.iter().filter_map(|i| i.tool.as_ref()).map(ToString::to_string));
    }
    assert!(tools.iter().any(|t| t == "task") && tools.iter().any(|t| t == "Agent"), "{tools:?}");
}

/// Schema 6 on the team store (issue 19): a failed call's reason is kept with its item, as in
/// SQLite. A database schema 5 wrote (the reasons dropped, the version set back, the sources
/// marked as read by that swarmtop) is upgraded in place when a machine opens it, every session as
/// it was and no reason made up; the next sync reads the sources again, and the real Claude Code
/// 2.1.332 and OpenCode 1.18.33 `badtype` sessions, opened from the store with their files gone,
/// say why their call failed as the file store does.
#[test]
fn a_schema_5_team_store_is_upgraded_to_keep_why_calls_failed() {
    let pg = Postgres::start();
    let url = pg.database("six");
    let m = Machine::new();
    m.with_opencode("badtype").with_claude_2_1_332("badtype");
    ok(on(&m, "laptop", &url, &["sync"]));
    let listed = || ok(on(&m, "laptop", &url, &["history", "--json", "--no-sync"]));
    let before = listed();
    let mut client = team::open(&url).unwrap();
    let whys = |client: &mut postgres::Client| -> Vec<String> {
        client
            .query("SELECT why FROM items WHERE why IS NOT NULL ORDER BY why", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    assert_eq!(whys(&mut client).len(), 2);
    client
        .batch_execute(
            "ALTER TABLE items DROP COLUMN why;
             UPDATE swarmtop_schema SET version = 5;
             UPDATE sources SET fingerprint = replace(fingerprint, 'schema 6;', 'schema 5;');
             UPDATE meta SET value = replace(value, 'schema 6;', 'schema 5;') WHERE key = 'reader';",
        )
        .unwrap();
    assert_eq!(team::version(&mut client).unwrap(), 5);
    assert_eq!(listed(), before, "opened and upgraded: every session as it was");
    assert_eq!(team::version(&mut client).unwrap(), LATEST);
    assert!(whys(&mut client).is_empty(), "what schema 5 did not keep is not made up");
    assert_eq!(json(on(&m, "laptop", &url, &["sync", "--json"]))["read"], 2);
    let kept = whys(&mut client);
    assert!(
        kept[0].starts_with("Agent type 'no-such-agent' not found.") && kept[1].starts_with("Unknown agent type"),
        "{kept:?}"
    );
    m.run(&["sync"]);
    std::fs::remove_dir_all(m.claude_fixture_project()).unwrap();
    std::fs::remove_dir_all(m.opencode_dir()).unwrap();
    ok(on(&m, "laptop", &url, &["sync"]));
    m.run(&["sync"]);
    let file = swarmtop::store::Store::open(&m.store()).unwrap();
    let team_store = swarmtop::store::Store::open_at(&swarmtop::store::Location::Team(url.clone()), "laptop").unwrap();
    for session in serde_json::from_str::<serde_json::Value>(&before).unwrap()["sessions"].as_array().unwrap() {
        let id = session["id"].as_str().unwrap();
        let stored = swarmtop::commands::stored(&team_store, id).unwrap();
        assert_eq!(stored, swarmtop::commands::stored(&file, id).unwrap(), "{id}");
        assert!(stored.runs[0].entries.iter().any(|i| i.why.is_some()), "{id}: its failed call says why");
    }
}

/// A recording of a session whose rollouts are stored first is a duplicate: its runs are the
/// rollouts' source's, and so are the references to their texts (main counted the recording's items
/// too: 13 of 16 texts over-counted, never collected). Rows written are counted as the file store
/// counts them.
#[test]
fn a_duplicate_session_holds_no_text_reference() {
    let pg = Postgres::start();
    let url = pg.database("dup");
    let m = Machine::new();
    m.with_codex("collab_v1").with_recording("codex-0.171.0/collab_v1.server.ndjson");
    let team = json(on(&m, "laptop", &url, &["sync", "--json"]));
    assert_eq!(team["duplicates"], 1, "{team}");
    assert_eq!(team["rows"], m.json(&["sync", "--json"])["rows"], "{team}");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let (wrong, texts): (i64, i64) = client
        .query_one(
            "SELECT count(*) FILTER (WHERE refs <> (SELECT count(*) FROM items i WHERE i.text_id = t.id)), count(*)
             FROM texts t",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert!(texts > 0);
    assert_eq!(wrong, 0, "every text counts the items that hold it");
}
