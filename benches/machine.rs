//! The machine view on a heavy user's HOME (issue 22): 50,000 sessions of Claude Code, Codex and
//! OpenCode (`support/machine_home.rs`: real captures copied with fresh ids, ~1.7 GB), shown with
//! `swarmtop --all`. Targets: the first screen in under 2 s, idle under 2 % of a core, memory flat
//! while files grow.
//!
//! The real binary runs in a tmux window (200×50) with the HOME as its only environment; the screen
//! is read every 50 ms. Measured, for each build:
//! - `first rows`: the header's summary first counts a session;
//! - `first screen`: it counts every session of the HOME (`machine: … 50000 sessions`);
//! - `settled`: the process's CPU falls under 10 % of a core over a second (what loads in the
//!   background is in);
//! - `idle`: CPU over the next `SWARMTOP_BENCH_IDLE` seconds (10), as % of one core;
//! - RSS then, and its peak (`VmHWM`);
//! - churn: for `SWARMTOP_BENCH_CHURN` seconds (60) a writer appends 20 lines a second, round
//!   robin, to the 50 newest Claude transcripts and the 50 newest Codex rollouts; RSS every 5 s
//!   (first, last, highest) and the CPU it took.
//!
//! `cargo bench --bench machine`. SWARMTOP_BENCH_SESSIONS sets the count (50000);
//! SWARMTOP_BENCH_HOME=DIR builds the HOME there once and reuses it (else a temp dir);
//! SWARMTOP_BENCH_BASELINE=BIN measures another `swarmtop` binary side by side on the same HOME
//! (one after the other, on a machine shared with others: read ratios, not absolutes);
//! SWARMTOP_BENCH_BIN=BIN measures that binary as "this build".

#[path = "support/machine_home.rs"]
mod machine_home;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use machine_home::{Built, Kind, Mix};

const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;
/// How long a build may take to show every session before the run gives up on it.
const LOAD_LIMIT: Duration = Duration::from_secs(300);
/// Lines a second the churn writer appends.
const CHURN_RATE: u64 = 20;

fn env_or(key: &str, default: u64) -> u64 {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A private tmux server running one command.
struct Tmux {
    server: String,
}

impl Tmux {
    fn start(name: &str, command: &str) -> Self {
        let t = Self { server: format!("swarmtop-bench-{name}-{}", std::process::id()) };
        let (w, h) = (WIDTH.to_string(), HEIGHT.to_string());
        let out = t.run(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, command]);
        assert!(out.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&out.stderr));
        t
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").args(["-L", &self.server, "-f", "/dev/null"]).args(args).output().expect("tmux runs")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-t", "t", "-p"]).stdout).into_owned()
    }

    fn pid(&self) -> Option<u32> {
        let out = self.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// CPU time (user + system, every thread) of `pid` so far.
fn cpu(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return Duration::ZERO };
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100);
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

/// A `/proc/PID/status` figure in MiB (`VmRSS:`, `VmHWM:`).
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: u64 =
        status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0);
    kib as f64 / 1024.0
}

/// The sessions the header's summary counts (`machine: 2 live · 5 sessions · …`).
fn sessions_on(screen: &str) -> Option<usize> {
    let line = screen.lines().find(|l| l.contains("machine: "))?;
    let before = line.split(" session").next()?;
    before.rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[derive(Debug, Default)]
struct Figures {
    first_rows: Option<Duration>,
    first_screen: Option<Duration>,
    shown: usize,
    settled: Option<Duration>,
    load_cpu: Duration,
    idle_pct: f64,
    rss: f64,
    peak: f64,
    churn_rss: Vec<f64>,
    churn_pct: f64,
    churn_peak: f64,
    lines_written: u64,
}

/// Runs `bin --all` on `home` and measures it.
fn measure(name: &str, bin: &Path, home: &Path, built: &Built, expected: usize) -> Figures {
    let idle_secs = env_or("SWARMTOP_BENCH_IDLE", 10);
    let churn_secs = env_or("SWARMTOP_BENCH_CHURN", 60);
    let command = format!(
        "exec env -i HOME='{}' PATH=/usr/bin:/bin TERM=xterm-256color LANG=C.UTF-8 TZ=UTC '{}' --all",
        home.display(),
        bin.display()
    );
    let mut f = Figures::default();
    let start = Instant::now();
    let tmux = Tmux::start(name, &command);
    let pid = tmux.pid().expect("the pane's pid");
    // First rows and first screen.
    while start.elapsed() < LOAD_LIMIT {
        let screen = tmux.screen();
        if let Some(n) = sessions_on(&screen) {
            f.shown = n;
            if n > 0 && f.first_rows.is_none() {
                f.first_rows = Some(start.elapsed());
            }
            if n >= expected {
                f.first_screen = Some(start.elapsed());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Settled: a second under 10 % of a core.
    let mut last = (cpu(pid), Instant::now());
    while start.elapsed() < LOAD_LIMIT {
        std::thread::sleep(Duration::from_secs(1));
        let now = (cpu(pid), Instant::now());
        let pct = now.0.saturating_sub(last.0).as_secs_f64() / now.1.duration_since(last.1).as_secs_f64();
        last = now;
        if pct < 0.10 {
            f.settled = Some(start.elapsed());
            break;
        }
    }
    f.load_cpu = cpu(pid);
    if f.first_screen.is_none() {
        f.shown = sessions_on(&tmux.screen()).unwrap_or(f.shown);
    }
    // Idle.
    let (c0, t0) = (cpu(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(idle_secs));
    f.idle_pct = cpu(pid).saturating_sub(c0).as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0;
    f.rss = status_mib(pid, "VmRSS:");
    f.peak = status_mib(pid, "VmHWM:");
    // Churn.
    if churn_secs > 0 {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let writer = {
            let (files, stop, written) = (built.newest.clone(), stop.clone(), written.clone());
            std::thread::spawn(move || churn(&files, &stop, &written))
        };
        let (c0, t0) = (cpu(pid), Instant::now());
        f.churn_rss.push(status_mib(pid, "VmRSS:"));
        while t0.elapsed() < Duration::from_secs(churn_secs) {
            std::thread::sleep(Duration::from_secs(5).min(Duration::from_secs(churn_secs)));
            f.churn_rss.push(status_mib(pid, "VmRSS:"));
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        f.churn_pct = cpu(pid).saturating_sub(c0).as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0;
        f.churn_peak = status_mib(pid, "VmHWM:");
        f.lines_written = written.load(Ordering::Relaxed);
    }
    drop(tmux);
    f
}

/// Appends real-shaped lines to the newest sessions' files, [`CHURN_RATE`] a second, until told to
/// stop.
fn churn(files: &[(PathBuf, Kind, String)], stop: &AtomicBool, written: &AtomicU64) {
    let began = Instant::now();
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let (path, kind, id) = &files[n as usize % files.len()];
        let at = jiff::Timestamp::now().to_string();
        let line = match kind {
            Kind::Claude => format!(
                r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/churn","sessionId":"{id}","version":"2.1.332","message":{{"model":"claude-sonnet-4-5","id":"msg_churn{n:012}","type":"message","role":"assistant","content":[{{"type":"text","text":"churn line {n}"}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":5}}}},"requestId":"req_churn{n:012}","type":"assistant","uuid":"00000000-0000-4000-9000-{n:012}","timestamp":"{at}"}}"#
            ),
            Kind::Codex => format!(
                r#"{{"timestamp":"{at}","type":"response_item","payload":{{"type":"message","id":"msg_churn{n}","role":"assistant","content":[{{"type":"output_text","text":"churn line {n}"}}]}}}}"#
            ),
        };
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(path) {
            let _ = f.write_all(format!("{line}\n").as_bytes());
            written.fetch_add(1, Ordering::Relaxed);
        }
        n += 1;
        let next = began + Duration::from_secs_f64(n as f64 / CHURN_RATE as f64);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(|| "  never".to_owned(), |d| format!("{:>6.2}s", d.as_secs_f64()))
}

fn report(name: &str, f: &Figures, expected: usize) {
    let churn = if f.churn_rss.is_empty() {
        String::new()
    } else {
        let first = f.churn_rss.first().copied().unwrap_or(0.0);
        let last = f.churn_rss.last().copied().unwrap_or(0.0);
        let high = f.churn_rss.iter().copied().fold(0.0, f64::max);
        format!(
            " · churn ({} lines): RSS {first:.0} → {last:.0} MiB (high {high:.0}, peak {:.0}), CPU {:.1} %",
            f.lines_written, f.churn_peak, f.churn_pct
        )
    };
    println!(
        "{name:<10} first rows {} · first screen {} ({} of {expected} shown) · settled {} (CPU {:.1}s) · idle {:.1} % of a core · RSS {:.0} MiB (peak {:.0}){churn}",
        secs(f.first_rows),
        secs(f.first_screen),
        f.shown,
        secs(f.settled),
        f.load_cpu.as_secs_f64(),
        f.idle_pct,
        f.rss,
        f.peak,
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let total = env_or("SWARMTOP_BENCH_SESSIONS", 50_000) as usize;
    let mix = Mix::of(total);
    let temp = tempfile::tempdir().expect("temp dir");
    let home = std::env::var_os("SWARMTOP_BENCH_HOME").map_or_else(|| temp.path().to_owned(), PathBuf::from);
    let started = Instant::now();
    let marker = home.join(format!(".bench-{total}"));
    // A kept HOME is used again when it was built whole at this size; else built afresh.
    let kept = std::fs::read_to_string(&marker).ok().and_then(|m| Built::parse(&m));
    let built = kept.unwrap_or_else(|| {
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).expect("the HOME");
        let built = machine_home::build(&home, mix);
        std::fs::write(&marker, built.to_text()).expect("marker");
        built
    });
    println!(
        "HOME: {total} sessions ({} Claude Code, {} Codex, {} OpenCode), {} files, {:.2} GB, ready in {:.1}s",
        mix.claude,
        mix.codex,
        mix.opencode,
        built.files,
        built.bytes as f64 / 1e9,
        started.elapsed().as_secs_f64()
    );
    let mut builds: Vec<(&str, PathBuf)> = Vec::new();
    if let Some(bin) = std::env::var_os("SWARMTOP_BENCH_BASELINE") {
        builds.push(("baseline", PathBuf::from(bin)));
    }
    let this = std::env::var_os("SWARMTOP_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_swarmtop")), PathBuf::from);
    builds.push(("this build", this));
    for (name, bin) in &builds {
        let f = measure(name.split(' ').next().unwrap_or("build"), bin, &home, &built, total);
        report(name, &f, total);
    }
}
