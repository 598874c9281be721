//! The team store's schema on a real PostgreSQL server: brought up to date by many machines at
//! once, each step once; a database a newer swarmtop wrote is refused untouched.

mod postgres_support;

use postgres_support::Postgres;
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
    assert_eq!(tables, ["files", "items", "meta", "runs", "sessions", "sources", "swarmtop_schema", "texts", "usage"]);
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
