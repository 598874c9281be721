//! Reading an OpenCode store: memory must be flat in the store's size (issue 22: a 300 MB store of
//! 1M sessions, read whole, took 1.51 GB and 13.6 s).
//!
//! What is built (in a temp dir, with the real 1.18.33 schema, `tests/support/opencode_schema.sql`):
//! root sessions each with the rows a short `opencode run` writes, in the shapes the real CLI
//! writes them (taken from a real store): a session row, a user and an assistant message, and four
//! parts (the prompt, a step start, the answer, a step finish). Every row has the times the real
//! CLI gives it (milliseconds; a session a minute after the one before, each ~23 s long): with 1
//! in every message and part row, the reader, which orders rows by time, gave every message of
//! the store before its first session. No event log: reading a store does not read it. The same
//! is built at ~30 MB and ~300 MB.
//!
//! Measured on each, every figure in a process of its own (its peak RSS, `VmHWM`, and wall time):
//! - `pages`: the source alone, the records drained from `snapshot_reader` (what `stats` reads);
//! - `whole`: the same records from `snapshot`, held at once (what `stats` read before);
//! - `stats`: `swarmtop stats --json` on the data directory, the whole pipeline. It reads the store a
//!   batch of root sessions at a time, each batch through a pipeline of its own: read whole, its
//!   model held a thread per session, which grew with the store whatever the source did.
//!
//! Run: `cargo bench --bench opencode_store`. Prints each figure and the ratio large / small.
//! SWARMTOP_BENCH_BASELINE=BIN also measures `stats` with another `swarmtop` binary on the same
//! stores, one after the other (read ratios, not absolutes, on a shared machine).
//! `cargo bench --bench opencode_store -- --build DIR` only builds the two stores into `DIR` (to
//! measure another build of `swarmtop` on the same stores).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SCHEMA: &str = include_str!("../tests/support/opencode_schema.sql");
/// Root sessions in the small store (~30 MB) and the large one (~300 MB).
const SIZES: [usize; 2] = [10_000, 100_000];

/// A store of `sessions` root sessions; its data directory.
fn build(dir: &Path, sessions: usize) -> PathBuf {
    let data = dir.join(format!("s{sessions}/opencode"));
    std::fs::create_dir_all(&data).unwrap();
    let conn = rusqlite::Connection::open(data.join("opencode.db")).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL;").unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let permission = r#"[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*","action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]"#;
    conn.execute_batch(&format!(
        "BEGIN;
         CREATE TEMP TABLE n(i INTEGER PRIMARY KEY);
         WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {sessions}) INSERT INTO n SELECT i FROM c;
         INSERT INTO session (id, project_id, slug, directory, path, title, version, summary_additions, summary_deletions,
             summary_files, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write,
             permission, agent, model, time_created, time_updated)
           SELECT printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), 'global', 'silent-squid', '/home/dev/work',
             'home/dev/work', printf('Session number %d', i), '1.18.33', 0, 0, 0, 0.003204, 997, 12, 0, 110, 0,
             '{permission}', 'build', '{{\"id\":\"mock-large\",\"providerID\":\"mock\",\"variant\":\"default\"}}',
             1796187329965 + i * 60000, 1796187352796 + i * 60000
           FROM n;
         INSERT INTO message (id, session_id, time_created, time_updated, data)
           SELECT printf('msg_%012x1QIhz06CMGK33Ef', 2 * i), printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i),
             1796187330566 + i * 60000, 1796187330566 + i * 60000,
             printf('{{\"role\":\"user\",\"time\":{{\"created\":%d}},\"agent\":\"build\",\"model\":{{\"providerID\":\"mock\",\"modelID\":\"mock-large\"}},\"summary\":{{\"diffs\":[]}}}}', 1796187330566 + i * 60000)
           FROM n;
         INSERT INTO message (id, session_id, time_created, time_updated, data)
           SELECT printf('msg_%012x1kLq7FYA39x6Qp', 2 * i + 1), printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i),
             1796187338280 + i * 60000, 1796187351944 + i * 60000,
             printf('{{\"parentID\":\"msg_%012x1QIhz06CMGK33Ef\",\"role\":\"assistant\",\"mode\":\"build\",\"agent\":\"build\",\"path\":{{\"cwd\":\"/home/dev/work\",\"root\":\"/\"}},\"cost\":0.003204,\"tokens\":{{\"total\":1119,\"input\":997,\"output\":12,\"reasoning\":0,\"cache\":{{\"write\":0,\"read\":110}}}},\"modelID\":\"mock-large\",\"providerID\":\"mock\",\"time\":{{\"created\":%d,\"completed\":%d}},\"finish\":\"stop\"}}', 2 * i, 1796187338280 + i * 60000, 1796187351944 + i * 60000)
           FROM n;
         INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
           SELECT printf('prt_%012x1W01uId31hfO6FW', 4 * i), printf('msg_%012x1QIhz06CMGK33Ef', 2 * i),
             printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), 1796187330570 + i * 60000, 1796187330570 + i * 60000,
             '{{\"type\":\"text\",\"text\":\"Delegate the listing of the files in this directory, then report.\"}}'
           FROM n;
         INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
           SELECT printf('prt_%012x%s', 4 * i + k, suffix), printf('msg_%012x1kLq7FYA39x6Qp', 2 * i + 1),
             printf('ses_%012xffeJkdkVwEPC5XYKY', 1000000000 - i), at + i * 60000, at + i * 60000, data
           FROM n, (SELECT 1 AS k, 'l0Ox9n6FbHIxxF' AS suffix, 1796187338290 AS at, '{{\"type\":\"step-start\"}}' AS data
                    UNION ALL SELECT 2, 'Ymaw8f5ra0qdRz', 1796187340641, '{{\"type\":\"text\",\"text\":\"All sub-agents reported. The files are listed above.\",\"time\":{{\"start\":1796187340641,\"end\":1796187341317}}}}'
                    UNION ALL SELECT 3, 'gChkt4PKyqZ5tE', 1796187351944, '{{\"reason\":\"stop\",\"type\":\"step-finish\",\"tokens\":{{\"total\":1119,\"input\":997,\"output\":12,\"reasoning\":0,\"cache\":{{\"write\":0,\"read\":110}}}},\"cost\":0.003204}}');
         COMMIT;
         PRAGMA wal_checkpoint(TRUNCATE);"
    ))
    .unwrap();
    data
}

/// This process's peak resident memory, MiB.
fn own_peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    kb as f64 / 1024.0
}

/// In a child: reads the store's records one way, prints `records peak-MiB seconds`.
fn child(how: &str, db: &Path) {
    let started = Instant::now();
    let records = if how == "pages" {
        let mut reader = swarmtop::source::opencode::snapshot_reader(db).unwrap();
        let (mut n, mut buf) = (0usize, vec![0u8; 1 << 16]);
        loop {
            let got = reader.read(&mut buf).unwrap();
            if got == 0 {
                break n;
            }
            n += buf[..got].iter().filter(|&&b| b == b'\n').count();
        }
    } else {
        let snap = swarmtop::source::opencode::snapshot(db).unwrap();
        snap.records.iter().filter(|&&b| b == b'\n').count()
    };
    println!("{records} {:.1} {:.3}", own_peak_mib(), started.elapsed().as_secs_f64());
}

struct Figure {
    peak_mib: f64,
    seconds: f64,
}

fn measure_child(how: &str, db: &Path) -> (usize, Figure) {
    let out = Command::new(std::env::current_exe().unwrap()).args(["--child", how]).arg(db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut f = text.split_whitespace();
    let records = f.next().unwrap().parse().unwrap();
    let peak_mib = f.next().unwrap().parse().unwrap();
    let seconds = f.next().unwrap().parse().unwrap();
    (records, Figure { peak_mib, seconds })
}

/// `bin stats --json` on the data directory: its peak RSS, polled from `/proc` until it exits.
fn measure_stats(bin: &Path, data: &Path) -> Figure {
    let started = Instant::now();
    let mut child =
        Command::new(bin).args(["stats", "--json"]).arg(data).stdout(std::process::Stdio::null()).spawn().unwrap();
    let mut peak_kb = 0u64;
    loop {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        if let Some(kb) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Figure { peak_mib: peak_kb as f64 / 1024.0, seconds: started.elapsed().as_secs_f64() }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    if let Some(how) = flag("--child") {
        child(how, Path::new(args.last().unwrap()));
        return;
    }
    if let Some(dir) = flag("--build") {
        for sessions in SIZES {
            println!("{}", build(Path::new(dir), sessions).display());
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let baseline = std::env::var_os("SWARMTOP_BENCH_BASELINE").map(PathBuf::from);
    let this = PathBuf::from(env!("CARGO_BIN_EXE_swarmtop"));
    let mut rows = Vec::new();
    let mut base_rows = Vec::new();
    for sessions in SIZES {
        let data = build(dir.path(), sessions);
        let db = data.join("opencode.db");
        let mb = std::fs::metadata(&db).unwrap().len() as f64 / 1e6;
        let (records, pages) = measure_child("pages", &db);
        let (whole_records, whole) = measure_child("whole", &db);
        assert_eq!(records, whole_records);
        let stats = measure_stats(&this, &data);
        if let Some(bin) = &baseline {
            let base = measure_stats(bin, &data);
            println!("  baseline stats {:>7.1} MiB ({:.2} s)", base.peak_mib, base.seconds);
            base_rows.push(base);
        }
        println!(
            "store {mb:>6.1} MB, {sessions:>7} sessions, {records:>8} records: peak RSS pages {:>7.1} MiB ({:.2} s) \
             · whole {:>7.1} MiB ({:.2} s) · stats {:>7.1} MiB ({:.2} s)",
            pages.peak_mib, pages.seconds, whole.peak_mib, whole.seconds, stats.peak_mib, stats.seconds
        );
        rows.push((mb, pages, whole, stats));
        std::fs::remove_dir_all(&data).unwrap();
    }
    let (small, large) = (&rows[0], &rows[1]);
    println!(
        "large / small: store {:.1}× · peak RSS pages {:.2}× · whole {:.2}× · stats {:.2}× · time pages {:.1}× · stats {:.1}×",
        large.0 / small.0,
        large.1.peak_mib / small.1.peak_mib,
        large.2.peak_mib / small.2.peak_mib,
        large.3.peak_mib / small.3.peak_mib,
        large.1.seconds / small.1.seconds,
        large.3.seconds / small.3.seconds,
    );
    if let [small_base, large_base] = &base_rows[..] {
        println!(
            "baseline: stats peak large / small {:.2}× · this build / baseline: small {:.2}× · large {:.2}× · time large {:.2}×",
            large_base.peak_mib / small_base.peak_mib,
            small.3.peak_mib / small_base.peak_mib,
            large.3.peak_mib / large_base.peak_mib,
            large.3.seconds / large_base.seconds,
        );
    }
}
