//! The run store against its peer, in one run: `swarmtop report daily` against `ccusage daily`
//! (20.0.24, its native build, installed by `scripts/setup-ccusage.sh`) on the generated Claude
//! folder of 60 re-stamped copies of the 2.1.39 session (about 200 MB), each tool as a process
//! on the same files, their totals checked equal first.
//!
//! - first run: `report daily` on an empty store (it syncs the whole folder, then reports);
//!   target ≥ 1.5× faster than ccusage;
//! - repeated run: the store already synced (the sync finds nothing changed); target ≥ 20× faster;
//! - sync throughput: `swarmtop sync` into an empty store against `swarmtop stats --json` on the
//!   same folder; target ≥ 0.5× `stats` ingest;
//! - memory flat in history size: the peak RSS of a sync and of a repeated report on a third of the
//!   folder and on the whole of it.
//!
//! `cargo bench --bench report` (SWARMTOP_BENCH_COPIES sets the folder's sessions, default 60).
//! Ratios are medians of three rounds, each round running both tools back to back.

#[path = "support/claude_folder.rs"]
mod claude_folder;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn ccusage_bin() -> Result<String, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup-ccusage.sh");
    let out = Command::new(script).output().map_err(|e| format!("{script}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{script} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A process's wall time, its stdout and its peak resident memory (KiB, `VmHWM` read while it runs).
struct Ran {
    took: Duration,
    stdout: Vec<u8>,
    peak_kib: u64,
}

fn run(cmd: &mut Command) -> Result<Ran, String> {
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("{cmd:?}: {e}"))?;
    let status = format!("/proc/{}/status", child.id());
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
        out
    });
    let mut peak_kib = 0;
    let exit = loop {
        if let Some(exit) = child.try_wait().map_err(|e| e.to_string())? {
            break exit;
        }
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        });
        peak_kib = peak_kib.max(hwm.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = start.elapsed();
    let stdout = reader.join().expect("reader");
    if !exit.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        return Err(format!("{cmd:?} exited {exit}: {err}"));
    }
    Ok(Ran { took, stdout, peak_kib })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The folder's Claude config and an empty home for both tools: each sees only this folder.
struct Folder {
    _dir: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    projects: PathBuf,
    store: PathBuf,
}

impl Folder {
    fn new(copies: u32) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let config = dir.path().join("claude");
        let projects = claude_folder::write(&config, copies).expect("the Claude folder");
        let store = dir.path().join("history.db");
        Self { _dir: dir, home, config, projects, store }
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("TZ", "UTC");
    }

    fn swarmtop(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
        self.env(&mut cmd);
        cmd.args(args);
        cmd
    }

    fn report(&self) -> Command {
        let store = self.store.to_str().expect("a UTF-8 path");
        self.swarmtop(&["report", "daily", "--json", "--tz", "UTC", "--store", store])
    }

    fn forget(&self) {
        for suffix in ["", "-wal", "-shm", ".sync-lock"] {
            let mut p = self.store.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

fn number(v: &serde_json::Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
}

/// Both tools' daily totals agree, and with the fixture's known figures.
fn check(ccusage: &[u8], swarmtop: &[u8], copies: u32) -> Result<(), String> {
    let c: serde_json::Value = serde_json::from_slice(ccusage).map_err(|e| format!("ccusage JSON: {e}"))?;
    let s: serde_json::Value = serde_json::from_slice(swarmtop).map_err(|e| format!("swarmtop JSON: {e}"))?;
    let tokens = (claude_folder::TOKENS_PER_SESSION * u64::from(copies)) as f64;
    let cost = claude_folder::COST_PER_SESSION.parse::<f64>().unwrap() * f64::from(copies);
    for (what, got) in [
        ("ccusage tokens", number(&c, &["totals", "totalTokens"])),
        ("swarmtop tokens", number(&s, &["totals", "tokens", "total"])),
    ] {
        if (got - tokens).abs() > 0.5 {
            return Err(format!("{what}: {got}, expected {tokens}"));
        }
    }
    for (what, got) in
        [("ccusage cost", number(&c, &["totals", "totalCost"])), ("swarmtop cost", number(&s, &["totals", "costUsd"]))]
    {
        if (got - cost).abs() > 1e-6 * cost {
            return Err(format!("{what}: {got}, expected {cost}"));
        }
    }
    let days = |v: &serde_json::Value, rows: &str, key: &str| -> Vec<(String, u64)> {
        v[rows]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r[key].as_str().unwrap_or("").to_owned(),
                    r["totalTokens"].as_u64().or(r["tokens"]["total"].as_u64()).unwrap_or(0),
                )
            })
            .collect()
    };
    let (theirs, ours) = (days(&c, "daily", "period"), days(&s, "rows", "key"));
    if theirs != ours {
        return Err(format!("days differ: ccusage {theirs:?}, swarmtop {ours:?}"));
    }
    Ok(())
}

fn compare(folder: &Folder, copies: u32) -> Result<(), String> {
    let ccusage = ccusage_bin()?;
    let mut peer = Command::new(&ccusage);
    folder.env(&mut peer);
    peer.args(["daily", "--json", "--offline", "--timezone", "UTC"]);
    // A first run of each warms the page cache and checks the answers.
    let theirs = run(&mut peer)?;
    folder.forget();
    let ours = run(&mut folder.report())?;
    check(&theirs.stdout, &ours.stdout, copies)?;
    println!("  daily totals agree, day by day: {} tokens", claude_folder::TOKENS_PER_SESSION * u64::from(copies));
    let projects = folder.projects.to_str().expect("a UTF-8 path").to_owned();
    let (mut peer_t, mut first_t, mut again_t, mut stats_t, mut sync_t) = (vec![], vec![], vec![], vec![], vec![]);
    for round in 1..=3 {
        let t = run(&mut peer)?.took;
        folder.forget();
        let first = run(&mut folder.report())?.took;
        let again = run(&mut folder.report())?.took;
        folder.forget();
        let store = folder.store.to_str().expect("a UTF-8 path").to_owned();
        let sync = run(&mut folder.swarmtop(&["sync", "--quiet", "--store", &store]))?.took;
        let stats = run(&mut folder.swarmtop(&["stats", "--json", &projects]))?.took;
        println!(
            "  round {round}: ccusage {:.3} s; report daily on an empty store {:.3} s ({:.2}×), again {:.3} s ({:.1}×); \
             sync {:.3} s, stats {:.3} s ({:.2}×)",
            t.as_secs_f64(),
            first.as_secs_f64(),
            t.as_secs_f64() / first.as_secs_f64(),
            again.as_secs_f64(),
            t.as_secs_f64() / again.as_secs_f64(),
            sync.as_secs_f64(),
            stats.as_secs_f64(),
            stats.as_secs_f64() / sync.as_secs_f64()
        );
        peer_t.push(t);
        first_t.push(first);
        again_t.push(again);
        stats_t.push(stats);
        sync_t.push(sync);
    }
    let (peer, first, again) = (median(peer_t), median(first_t), median(again_t));
    let (stats, sync) = (median(stats_t), median(sync_t));
    println!(
        "ccusage / report daily, first run on an empty store (median of 3): {:.2}× (target ≥ 1.5×)",
        peer.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "ccusage / report daily, repeated run (median of 3): {:.1}× (target ≥ 20×)",
        peer.as_secs_f64() / again.as_secs_f64()
    );
    println!(
        "stats ingest time / sync time, same bytes (median of 3): {:.2}× (target ≥ 0.5×)",
        stats.as_secs_f64() / sync.as_secs_f64()
    );
    Ok(())
}

/// Peak memory of a sync into an empty store and of a repeated report, on `copies` sessions.
fn memory(copies: u32) -> Result<(u64, u64, u64), String> {
    let folder = Folder::new(copies);
    let store = folder.store.to_str().expect("a UTF-8 path").to_owned();
    let sync = run(&mut folder.swarmtop(&["sync", "--quiet", "--store", &store]))?.peak_kib;
    let report = run(&mut folder.report())?.peak_kib;
    let size = std::fs::metadata(&folder.store).map_or(0, |m| m.len());
    Ok((sync, report, size))
}

fn main() {
    let copies: u32 = std::env::var("SWARMTOP_BENCH_COPIES").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let folder = Folder::new(copies);
    let bytes = claude_folder::bytes(&folder.projects);
    println!("claude folder: {copies} sessions, {:.0} MB", bytes as f64 / 1e6);
    if let Err(why) = compare(&folder, copies) {
        println!("ccusage comparison not run: {why}");
    }
    drop(folder);
    let small = (copies / 3).max(1);
    match (memory(small), memory(copies)) {
        (Ok((sync_s, report_s, size_s)), Ok((sync_l, report_l, size_l))) => {
            println!(
                "peak RSS, {small} → {copies} sessions: sync {} → {} MiB ({:.2}×), repeated report {} → {} MiB ({:.2}×); \
                 store {:.1} → {:.1} MB ({:.1} % of the bytes indexed)",
                sync_s / 1024,
                sync_l / 1024,
                sync_l as f64 / sync_s as f64,
                report_s / 1024,
                report_l / 1024,
                report_l as f64 / report_s as f64,
                size_s as f64 / 1e6,
                size_l as f64 / 1e6,
                100.0 * size_l as f64 / bytes as f64
            );
        }
        (Err(e), _) | (_, Err(e)) => println!("memory not measured: {e}"),
    }
}

// The allocator the binary uses (src/main.rs); the bench itself only waits on processes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
