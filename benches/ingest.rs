//! `stats` ingest throughput against a parse-only floor, and `stats` against ccusage, in one run.
//!
//! Floor: every line parsed by serde_json into `IgnoredAny` (the least any JSON consumer does).
//! Ingest: the whole headless pipeline (records → decode → lower → route → model), as `stats` runs
//! it: fed on every core (`swarmtop::feed`); the same on this thread alone is printed next to it.
//! Measured on two corpora: the synthetic one of `support/corpus.rs` and one made of the real
//! capture lines (`support/captures.rs`). Target: ingest ≥ 0.5 × the floor on both; memory bounded
//! by the caps, not the input.
//!
//! Then the peer on Claude Code transcripts: `ccusage session --json --offline` (its native build,
//! installed by `scripts/setup-ccusage.sh`) against `swarmtop stats --json`, both as processes on
//! the same folder of 60 re-stamped copies of the 2.1.39 session; their totals must agree.
//! Target: swarmtop ≥ 1.5× faster.
//!
//! `cargo bench --bench ingest` (SWARMTOP_BENCH_MIB sets each corpus's size, default 100;
//! SWARMTOP_BENCH_COPIES the Claude folder's sessions, default 60; SWARMTOP_BENCH_WRITE=DIR only
//! writes the corpora and the folder into DIR, to profile `swarmtop stats` on them;
//! SWARMTOP_BENCH_ONE=STAGE:FILE runs one stage on FILE and exits, so that an instruction counter
//! such as callgrind measures just that: `floor`, the one-core `ingest`, or the stages before the
//! model alone (`decode`, `lower`, `route`); SWARMTOP_BENCH_REPEAT=N prints the fastest of N runs).

#[path = "support/captures.rs"]
mod captures;
#[path = "support/claude_folder.rs"]
mod claude_folder;
#[path = "support/corpus.rs"]
mod corpus;

use std::time::{Duration, Instant};

use swarmtop::feed;
use swarmtop::pipeline::Pipeline;
use swarmtop::source::files::{MAX_LINE, Record, read_records};
use swarmtop::wire::Origin;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn floor(corpus: &[u8]) -> Duration {
    let start = Instant::now();
    let mut n = 0u64;
    read_records(corpus, MAX_LINE, |r| {
        if let Record::Line(l) = r {
            if serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok() {
                n += 1;
            }
        }
    })
    .unwrap();
    std::hint::black_box(n);
    start.elapsed()
}

/// The corpus as the one input of a stream.
struct Memory<'a>(&'a [u8]);

impl feed::Inputs for Memory<'_> {
    fn count(&self) -> usize {
        1
    }
    fn name(&self, _: usize) -> String {
        "corpus".to_owned()
    }
    fn origin(&self, _: usize) -> Origin {
        Origin::NONE
    }
    fn open(&self, _: usize) -> std::io::Result<Box<dyn std::io::Read + Send + '_>> {
        Ok(Box::new(self.0))
    }
}

/// `stats` ingest: on this thread only (`cores` = 1, as `stats` reads one input), or fed on every core.
fn ingest(corpus: &[u8], cores: usize) -> (Duration, Pipeline) {
    let start = Instant::now();
    // As `stats` reads: figures only (the Codex corpora have no output a figures reading skips).
    let mut p = Pipeline::new(swarmtop::pipeline::Config::default().figures());
    let mut nothing = |_: &swarmtop::router::Event<'_, '_>| {};
    if cores > 1 {
        feed::feed(
            &Memory(corpus),
            swarmtop::source::merge::Timing::default(),
            cores,
            feed::CHUNK_BYTES,
            &mut p,
            &mut nothing,
        )
        .unwrap();
    } else {
        read_records(corpus, MAX_LINE, |r| p.feed(r, &Origin::NONE, &mut nothing)).unwrap();
    }
    p.finish();
    (start.elapsed(), p)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// One run of one stage on `corpus`, for profiling: the floor, decode alone, decode and lower,
/// those and the router (no model), or the whole ingest.
fn stage(what: &str, corpus: &[u8]) -> Duration {
    let start = Instant::now();
    match what {
        "floor" => return floor(corpus),
        "ingest" => return ingest(corpus, 1).0,
        "decode" | "lower" => {
            let mut stream = swarmtop::wire::Stream::default();
            read_records(corpus, MAX_LINE, |r| {
                if let Record::Line(l) = r {
                    let line = swarmtop::wire::decode(l);
                    if let (Ok(line), "lower") = (&line, what) {
                        std::hint::black_box(swarmtop::wire::lower(line, &Origin::NONE, &mut stream).facts.len());
                    }
                    std::hint::black_box(&line);
                }
            })
            .unwrap();
        }
        "route" => {
            let mut router = swarmtop::router::Router::new(swarmtop::router::Limits::default());
            let mut nothing = |_: &swarmtop::router::Event<'_, '_>| {};
            read_records(corpus, MAX_LINE, |r| {
                if let Record::Line(l) = r {
                    router.push(l, &Origin::NONE, &mut nothing);
                }
            })
            .unwrap();
            router.finish(&mut nothing);
        }
        _ => panic!("SWARMTOP_BENCH_ONE: floor, decode, lower, route or ingest, not {what}"),
    }
    start.elapsed()
}

/// Both medians of one corpus: ingest/floor as `stats` runs it (fed on every core), and on one core.
struct Ratios {
    stats: f64,
    one_core: f64,
}

/// Three rounds of the floor, ingest as `stats` runs it (fed on every core) and ingest on this thread
/// alone, on one corpus.
fn ratio_on(corpus: &[u8]) -> Ratios {
    let size = corpus.len() as f64 / f64::from(1 << 20);
    let rss_before = rss_kib();
    let (mut stats, mut one_core) = (Vec::new(), Vec::new());
    for round in 1..=3 {
        let floor_time = floor(corpus);
        let (feed_time, p) = ingest(corpus, cores());
        let c = p.counters();
        assert!(c.conserved());
        let routed = format!(
            "  routed: {} threads, {} rehomed, {} malformed, {} pending at end; RSS grew by {} MiB",
            p.model.threads.len(),
            c.rehomed,
            c.malformed,
            c.pending_at_end,
            rss_kib().saturating_sub(rss_before) / 1024
        );
        // Freed before the next run, so that each starts from the same heap.
        drop(p);
        let (one_time, _) = ingest(corpus, 1);
        let (fed, one) =
            (floor_time.as_secs_f64() / feed_time.as_secs_f64(), floor_time.as_secs_f64() / one_time.as_secs_f64());
        println!(
            "  round {round}: floor {:.0} MiB/s; stats ingest on {} cores {:.0} MiB/s → {fed:.2}× the floor; on one core \
             {:.0} MiB/s → {one:.2}×",
            size / floor_time.as_secs_f64(),
            cores(),
            size / feed_time.as_secs_f64(),
            size / one_time.as_secs_f64(),
        );
        if round == 3 {
            println!("{routed}");
        }
        stats.push(fed);
        one_core.push(one);
    }
    stats.sort_by(f64::total_cmp);
    one_core.sort_by(f64::total_cmp);
    Ratios { stats: stats[1], one_core: one_core[1] }
}

fn main() {
    let mib: usize = std::env::var("SWARMTOP_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let copies: u32 = std::env::var("SWARMTOP_BENCH_COPIES").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    if let Ok(one) = std::env::var("SWARMTOP_BENCH_ONE") {
        let (what, file) = one.split_once(':').expect("SWARMTOP_BENCH_ONE=STAGE:FILE");
        let corpus = std::fs::read(file).unwrap();
        let repeat: u32 = std::env::var("SWARMTOP_BENCH_REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        // The fastest of the repeats: on a shared machine, the run least disturbed.
        let best = (0..repeat).map(|_| stage(what, &corpus)).min().unwrap_or_default();
        println!("{what}: {best:?} (fastest of {repeat})");
        return;
    }
    if let Some(dir) = std::env::var_os("SWARMTOP_BENCH_WRITE") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("synthetic.ndjson"), corpus::generate(mib << 20)).unwrap();
        std::fs::write(dir.join("captures.ndjson"), captures::generate(mib << 20)).unwrap();
        let projects = claude_folder::write(&dir.join("claude"), copies).unwrap();
        println!(
            "wrote {}, {} and {}",
            dir.join("synthetic.ndjson").display(),
            dir.join("captures.ndjson").display(),
            projects.display()
        );
        return;
    }

    let synthetic = corpus::generate(mib << 20);
    let lines = synthetic.iter().filter(|&&b| b == b'\n').count();
    println!(
        "synthetic corpus: {:.1} MiB, {lines} lines, {:.0} % deltas",
        synthetic.len() as f64 / f64::from(1 << 20),
        corpus::delta_share(&synthetic) * 100.0
    );
    let synthetic_ratio = ratio_on(&synthetic);
    drop(synthetic);

    let real = captures::generate(mib << 20);
    let shape = captures::shape(&real);
    let gib = real.len() as f64 / f64::from(1 << 30);
    println!(
        "capture corpus: {:.1} MiB, {} lines, line p50 {} B / p99 {} B, {:.0} % deltas, {} threads and {} root \
         sessions ({:.0} and {:.0} per GiB)",
        real.len() as f64 / f64::from(1 << 20),
        shape.lines,
        shape.p50,
        shape.p99,
        shape.delta_share * 100.0,
        shape.threads,
        shape.roots,
        shape.threads as f64 / gib,
        shape.roots as f64 / gib
    );
    let real_ratio = ratio_on(&real);
    drop(real);

    let peer = peer::compare(copies);

    for (corpus, r) in [("synthetic corpus", &synthetic_ratio), ("capture corpus  ", &real_ratio)] {
        println!(
            "stats ingest / parse-only floor, {corpus} (median of 3): {:.2}× on {} cores, as stats runs it (target ≥ \
             0.5×); {:.2}× on one core",
            r.stats,
            cores(),
            r.one_core
        );
    }
    match peer {
        Ok(speedup) => {
            println!("ccusage time / swarmtop time, Claude folder (median of 3): {speedup:.2}× (target ≥ 1.5×)");
        }
        Err(why) => println!("ccusage comparison not run: {why}"),
    }
}

/// `ccusage session --json --offline` against `swarmtop stats --json` on one Claude project folder.
mod peer {
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::claude_folder;

    fn ccusage_bin() -> Result<String, String> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup-ccusage.sh");
        let out = Command::new(script).output().map_err(|e| format!("{script}: {e}"))?;
        if !out.status.success() {
            return Err(format!("{script} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Runs one command to completion; its wall time and stdout.
    fn timed(cmd: &mut Command) -> Result<(Duration, Vec<u8>), String> {
        let start = Instant::now();
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        let elapsed = start.elapsed();
        if !out.status.success() {
            return Err(format!("{cmd:?} exited {}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        Ok((elapsed, out.stdout))
    }

    fn number(v: &serde_json::Value, path: &[&str]) -> f64 {
        path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
    }

    /// Both tools' totals and per-session figures, checked against the fixture's known ones.
    fn check(ccusage: &[u8], swarmtop: &[u8], copies: u32) -> Result<(), String> {
        let c: serde_json::Value = serde_json::from_slice(ccusage).map_err(|e| format!("ccusage JSON: {e}"))?;
        let s: serde_json::Value = serde_json::from_slice(swarmtop).map_err(|e| format!("swarmtop JSON: {e}"))?;
        let tokens = (claude_folder::TOKENS_PER_SESSION * u64::from(copies)) as f64;
        let cost: f64 = claude_folder::COST_PER_SESSION.parse::<f64>().unwrap() * f64::from(copies);
        let figures = [
            ("ccusage tokens", number(&c, &["totals", "totalTokens"]), tokens),
            ("ccusage cost", number(&c, &["totals", "totalCost"]), cost),
            ("swarmtop tokens", number(&s, &["totals", "tokens", "total"]), tokens),
            ("swarmtop cost", number(&s, &["totals", "costUsd"]), cost),
        ];
        for (what, got, want) in figures {
            if (got - want).abs() > 1e-6 * want {
                return Err(format!("{what}: {got}, expected {want}"));
            }
        }
        let sessions = c["session"].as_array().map_or(0, Vec::len);
        let roots: Vec<&serde_json::Value> =
            s["threads"].as_array().into_iter().flatten().filter(|t| t["parent"].is_null()).collect();
        let per_root_ok = roots
            .iter()
            .all(|t| number(t, &["subtree", "tokens", "total"]) == claude_folder::TOKENS_PER_SESSION as f64);
        if sessions != copies as usize || roots.len() != copies as usize || !per_root_ok {
            return Err(format!(
                "{sessions} ccusage sessions, {} swarmtop roots (per-root totals ok: {per_root_ok})",
                roots.len()
            ));
        }
        Ok(())
    }

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    pub fn compare(copies: u32) -> Result<f64, String> {
        let ccusage = ccusage_bin()?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let config = dir.path().join("claude");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        let projects = claude_folder::write(&config, copies).map_err(|e| e.to_string())?;
        let bytes = claude_folder::bytes(&projects);
        println!("claude folder: {copies} sessions, {:.0} MB", bytes as f64 / 1e6);
        // The peer sees only this folder: an empty HOME, so it finds no other agent's logs.
        let peer = |cmd: &mut Command| {
            cmd.env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", &home)
                .env("CLAUDE_CONFIG_DIR", &config)
                .args(["session", "--json", "--offline"]);
        };
        let ours = |cmd: &mut Command| {
            cmd.arg("stats").arg("--json").arg(&projects);
        };
        let mut peer_cmd = Command::new(&ccusage);
        peer(&mut peer_cmd);
        let mut our_cmd = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
        ours(&mut our_cmd);
        // A first run of each warms the page cache and checks the answers.
        let (_, peer_out) = timed(&mut peer_cmd)?;
        let (_, our_out) = timed(&mut our_cmd)?;
        check(&peer_out, &our_out, copies)?;
        println!(
            "  totals agree: {} tokens and ${} per session",
            claude_folder::TOKENS_PER_SESSION,
            claude_folder::COST_PER_SESSION
        );
        let (mut theirs, mut mine) = (Vec::new(), Vec::new());
        for round in 1..=3 {
            let (t, _) = timed(&mut peer_cmd)?;
            let (m, _) = timed(&mut our_cmd)?;
            println!(
                "  round {round}: ccusage {:.3} s, swarmtop {:.3} s → {:.2}×",
                t.as_secs_f64(),
                m.as_secs_f64(),
                t.as_secs_f64() / m.as_secs_f64()
            );
            theirs.push(t);
            mine.push(m);
        }
        Ok(median(theirs).as_secs_f64() / median(mine).as_secs_f64())
    }
}

// The allocator the binary uses (src/main.rs), so that what is measured is what `stats` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
