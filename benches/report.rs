//! The run store against its peer, in one run: `swarmtop report daily` against `ccusage daily`
//! (20.0.24, its native build, installed by `scripts/setup-ccusage.sh`) on the generated Claude
//! folder of 60 re-stamped copies of the 2.1.39 session (about 200 MB), each tool as a process
//! on the same files. Every timed run's answer is checked, not only the first: ccusage's and
//! swarmtop's daily totals equal each other, day by day, and the fixture's known figures.
//!
//! - first run: `report daily` on an empty store (it syncs the whole folder, then reports);
//!   target ≥ 1.5× faster than ccusage;
//! - repeated run: the store already synced (the sync finds nothing changed); target ≥ 20× faster;
//! - sync throughput: `swarmtop sync` into an empty store against `swarmtop stats --json` on the
//!   same folder, each checked to have read every byte of it; target ≥ 0.5× `stats` ingest;
//! - memory flat in history size: the peak RSS of a sync into an empty store and of a repeated
//!   report, on a third of the folder and on the whole of it (each process's own peak, read by a
//!   helper, this bench run again, that waits for it alone: `getrusage(RUSAGE_CHILDREN)`).
//!
//! `cargo bench --bench report`. SWARMTOP_BENCH_COPIES sets the folder's sessions (default 60);
//! SWARMTOP_BENCH_ROUNDS the rounds (default 5; ratios are their medians, each round running every
//! tool back to back); SWARMTOP_BENCH_BASELINE=FILE another `swarmtop` binary (main's, say) timed
//! in the same rounds on the same folder, its answers checked too; SWARMTOP_BENCH_WRITE=DIR only
//! writes the folder as `DIR/claude/projects/…` (for a profiler; `CLAUDE_CONFIG_DIR=DIR/claude`);
//! SWARMTOP_BENCH_MEMORY=20,60,180 the sessions of the memory figures.

#[path = "support/claude_folder.rs"]
mod claude_folder;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run as a helper: the command in the arguments, its peak RSS (KiB) printed.
const PEAK: &str = "SWARMTOP_REPORT_PEAK";

fn ccusage_bin() -> Result<String, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup-ccusage.sh");
    let out = Command::new(script).output().map_err(|e| format!("{script}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{script} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A process's wall time and its stdout.
struct Ran {
    took: Duration,
    stdout: Vec<u8>,
}

fn run(cmd: &mut Command) -> Result<Ran, String> {
    let start = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let took = start.elapsed();
    if !out.status.success() {
        return Err(format!("{cmd:?} exited {}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(Ran { took, stdout: out.stdout })
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
    bytes: u64,
    copies: u32,
}

impl Folder {
    fn new(copies: u32) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let config = dir.path().join("claude");
        let projects = claude_folder::write(&config, copies).expect("the Claude folder");
        let store = dir.path().join("history.db");
        let bytes = claude_folder::bytes(&projects);
        Self { _dir: dir, home, config, projects, store, bytes, copies }
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("TZ", "UTC");
    }

    fn swarmtop(&self, bin: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin);
        self.env(&mut cmd);
        cmd.args(args);
        cmd
    }

    fn store(&self) -> &str {
        self.store.to_str().expect("a UTF-8 path")
    }

    fn report(&self, bin: &Path) -> Command {
        self.swarmtop(bin, &["report", "daily", "--json", "--tz", "UTC", "--store", self.store()])
    }

    fn sync(&self, bin: &Path) -> Command {
        self.swarmtop(bin, &["sync", "--json", "--store", self.store()])
    }

    fn stats(&self, bin: &Path) -> Command {
        self.swarmtop(bin, &["stats", "--json", self.projects.to_str().expect("a UTF-8 path")])
    }

    fn forget(&self) {
        for suffix in ["", "-wal", "-shm", ".sync-lock"] {
            let mut p = self.store.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }

    fn tokens(&self) -> f64 {
        (claude_folder::TOKENS_PER_SESSION * u64::from(self.copies)) as f64
    }
}

fn json(what: &str, out: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(out).map_err(|e| format!("{what} JSON: {e}"))
}

fn number(v: &serde_json::Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
}

/// Both tools' daily totals agree, day by day, and with the fixture's known figures.
fn check(ccusage: &[u8], swarmtop: &[u8], folder: &Folder) -> Result<(), String> {
    let (c, s) = (json("ccusage", ccusage)?, json("swarmtop", swarmtop)?);
    let tokens = folder.tokens();
    let cost = claude_folder::COST_PER_SESSION.parse::<f64>().unwrap() * f64::from(folder.copies);
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
    let days = |v: &serde_json::Value, rows: &str, key: &str| -> Vec<(String, u64, f64)> {
        v[rows]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r[key].as_str().unwrap_or("").to_owned(),
                    r["totalTokens"].as_u64().or(r["tokens"]["total"].as_u64()).unwrap_or(0),
                    r["totalCost"].as_f64().or(r["costUsd"].as_f64()).unwrap_or(f64::NAN),
                )
            })
            .collect()
    };
    let (theirs, ours) = (days(&c, "daily", "period"), days(&s, "rows", "key"));
    let same = theirs.len() == ours.len()
        && theirs.iter().zip(&ours).all(|(t, o)| t.0 == o.0 && t.1 == o.1 && (t.2 - o.2).abs() <= 1e-6 * t.2.max(1.0));
    if !same {
        return Err(format!("days differ: ccusage {theirs:?}, swarmtop {ours:?}"));
    }
    Ok(())
}

/// `sync --json` read every byte of the folder, every session, and nothing failed.
fn check_sync(out: &[u8], folder: &Folder) -> Result<(), String> {
    let v = json("sync", out)?;
    let (bytes, read) = (number(&v, &["bytesRead"]), number(&v, &["read"]));
    let failed = v["failed"].as_array().map_or(usize::MAX, Vec::len);
    if bytes != folder.bytes as f64 || read != f64::from(folder.copies) || failed != 0 {
        return Err(format!("sync read {bytes} bytes of {}, {read} sources, {failed} failed", folder.bytes));
    }
    Ok(())
}

/// `stats --json` read every byte of the folder and found its tokens.
fn check_stats(out: &[u8], folder: &Folder) -> Result<(), String> {
    let v = json("stats", out)?;
    let (bytes, tokens) = (number(&v, &["input", "bytes"]), number(&v, &["totals", "tokens", "total"]));
    if bytes != folder.bytes as f64 || (tokens - folder.tokens()).abs() > 0.5 {
        return Err(format!("stats read {bytes} bytes of {}, {tokens} tokens", folder.bytes));
    }
    Ok(())
}

/// One build's times in one round: `report daily` on an empty store, again, `sync`, `stats`.
#[derive(Default)]
struct Times {
    first: Vec<Duration>,
    again: Vec<Duration>,
    sync: Vec<Duration>,
    stats: Vec<Duration>,
}

impl Times {
    fn round(&mut self, folder: &Folder, bin: &Path, theirs: &[u8]) -> Result<(), String> {
        folder.forget();
        let first = run(&mut folder.report(bin))?;
        check(theirs, &first.stdout, folder)?;
        let again = run(&mut folder.report(bin))?;
        check(theirs, &again.stdout, folder)?;
        folder.forget();
        let sync = run(&mut folder.sync(bin))?;
        check_sync(&sync.stdout, folder)?;
        let stats = run(&mut folder.stats(bin))?;
        check_stats(&stats.stdout, folder)?;
        self.first.push(first.took);
        self.again.push(again.took);
        self.sync.push(sync.took);
        self.stats.push(stats.took);
        Ok(())
    }

    fn last(&self) -> String {
        let (first, again, sync, stats) =
            (secs(self.first.last()), secs(self.again.last()), secs(self.sync.last()), secs(self.stats.last()));
        format!("report daily on an empty store {first:.3} s, again {again:.3} s; sync {sync:.3} s, stats {stats:.3} s")
    }

    fn medians(&self) -> [f64; 4] {
        [&self.first, &self.again, &self.sync, &self.stats].map(|v| median(v.clone()).as_secs_f64())
    }
}

fn secs(d: Option<&Duration>) -> f64 {
    d.map_or(f64::NAN, Duration::as_secs_f64)
}

fn compare(folder: &Folder, builds: &[(&str, PathBuf)], rounds: usize) -> Result<(), String> {
    let ccusage = ccusage_bin()?;
    let mut peer = Command::new(&ccusage);
    folder.env(&mut peer);
    peer.args(["daily", "--json", "--offline", "--timezone", "UTC"]);
    // A first run of each warms the page cache.
    let warm = run(&mut peer)?;
    for (_, bin) in builds {
        folder.forget();
        check(&warm.stdout, &run(&mut folder.report(bin))?.stdout, folder)?;
    }
    println!("  daily totals agree, day by day: {} tokens", folder.tokens());
    let mut peer_t = Vec::new();
    let mut times: Vec<Times> = builds.iter().map(|_| Times::default()).collect();
    for round in 1..=rounds {
        let theirs = run(&mut peer)?;
        peer_t.push(theirs.took);
        println!("  round {round}: ccusage {:.3} s", theirs.took.as_secs_f64());
        for ((name, bin), t) in builds.iter().zip(&mut times) {
            t.round(folder, bin, &theirs.stdout)?;
            println!("    {name}: {}", t.last());
        }
    }
    let peer = median(peer_t).as_secs_f64();
    println!("medians of {rounds} rounds (every answer checked against ccusage's, sync and stats every byte read):");
    for ((name, _), t) in builds.iter().zip(&times) {
        let [first, again, sync, stats] = t.medians();
        println!("  {name}:");
        println!("    ccusage / report daily, first run on an empty store: {:.2}× (target ≥ 1.5×)", peer / first);
        println!("    ccusage / report daily, repeated run: {:.1}× (target ≥ 20×)", peer / again);
        println!("    stats ingest time / sync time, same bytes: {:.2}× (target ≥ 0.5×)", stats / sync);
    }
    if let ([.., (base, _), (this, _)], [.., b, t]) = (builds, times.as_slice()) {
        let ([b1, b2, b3, _], [t1, t2, t3, _]) = (b.medians(), t.medians());
        println!(
            "  {this} against {base}: first run {:.2}×, repeated run {:.2}×, sync {:.2}× as fast",
            b1 / t1,
            b2 / t2,
            b3 / t3
        );
    }
    Ok(())
}

/// Peak memory (KiB) of a sync into an empty store and of a repeated report, on `copies` sessions;
/// the store's size and the folder's.
fn memory(copies: u32, bin: &Path) -> Result<(u64, u64, u64, u64), String> {
    let folder = Folder::new(copies);
    let peak = |cmd: Command| -> Result<u64, String> {
        let mut helper = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
        helper.env_clear().envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?)))).env(PEAK, "1");
        helper.arg(cmd.get_program()).args(cmd.get_args());
        let out = run(&mut helper)?;
        String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|e| format!("helper: {e}"))
    };
    let sync = peak(folder.sync(bin))?;
    let report = peak(folder.report(bin))?;
    let size = std::fs::metadata(&folder.store).map_or(0, |m| m.len());
    Ok((sync, report, size, folder.bytes))
}

/// The helper: runs its arguments as its only child and prints the child's peak RSS in KiB.
fn peak_helper() {
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("a program");
    let status =
        Command::new(program).args(args).env_remove(PEAK).stdout(Stdio::null()).status().expect("running the command");
    assert!(status.success(), "the command failed: {status}");
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    println!("{}", usage.max_rss());
}

fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    if std::env::var_os(PEAK).is_some() {
        peak_helper();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let copies: u32 = var("SWARMTOP_BENCH_COPIES").unwrap_or(60);
    if let Some(dir) = std::env::var_os("SWARMTOP_BENCH_WRITE").map(PathBuf::from) {
        let projects = claude_folder::write(&dir.join("claude"), copies).expect("the Claude folder");
        println!("{}: {copies} sessions, {} bytes", projects.display(), claude_folder::bytes(&projects));
        return;
    }
    let rounds: usize = var("SWARMTOP_BENCH_ROUNDS").unwrap_or(5).max(1);
    let this = PathBuf::from(env!("CARGO_BIN_EXE_swarmtop"));
    let mut builds = Vec::new();
    if let Some(base) = std::env::var_os("SWARMTOP_BENCH_BASELINE") {
        builds.push(("baseline", PathBuf::from(base)));
    }
    builds.push(("this build", this.clone()));
    let folder = Folder::new(copies);
    println!("claude folder: {copies} sessions, {:.0} MB", folder.bytes as f64 / 1e6);
    if let Err(why) = compare(&folder, &builds, rounds) {
        println!("ccusage comparison not run: {why}");
    }
    drop(folder);
    // Sessions for the memory figures: a third of the folder and all of it, unless given.
    let sizes: Vec<u32> = std::env::var("SWARMTOP_BENCH_MEMORY").ok().map_or_else(
        || vec![(copies / 3).max(1), copies],
        |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    );
    let mut first: Option<(u32, u64, u64)> = None;
    for n in sizes {
        match memory(n, &this) {
            Ok((sync, report, size, bytes)) => {
                let (n0, sync0, report0) = *first.get_or_insert((n, sync, report));
                println!(
                    "peak RSS, {n} sessions: sync {} MiB, repeated report {} MiB ({:.2}× and {:.2}× those at {n0}; \
                     flat: ≈ 1×); store {:.1} MB ({:.1} % of the bytes indexed)",
                    sync / 1024,
                    report / 1024,
                    sync as f64 / sync0 as f64,
                    report as f64 / report0 as f64,
                    size as f64 / 1e6,
                    100.0 * size as f64 / bytes as f64
                );
            }
            Err(e) => println!("memory not measured at {n} sessions: {e}"),
        }
    }
}

// The allocator the binary uses (src/main.rs); the bench itself only waits on processes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
