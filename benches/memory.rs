//! Memory against input size (issue 22): peak RSS of `swarmtop stats --json` and of the monitor
//! replaying at `--speed max`, on one long Codex session (`support/long_session.rs`) of 20 MB,
//! 200 MB and 2 GB. Target: the 2 GB peak within 1.5× of the 20 MB one, for each.
//!
//! The corpora are written to a temp dir as they are generated (the 2 GB one never sits in
//! memory, and is deleted at the end). Each figure is measured in a process of its own, so one
//! run's peak does not hide the next: `stats` is the real binary, its peak read from
//! `getrusage(RUSAGE_CHILDREN)` by a helper (this bench re-run) that waits for it alone; the
//! monitor is the real runtime (`ui::runtime::Runtime`, the same records, pacing, slices and
//! frames as `swarmtop FILE --speed max`) drawing 200×60 frames into a `TestBackend`, its peak
//! its own `VmHWM`.
//!
//! `cargo bench --bench memory` (SWARMTOP_BENCH_SIZES=20,200 sets the sizes in MB;
//! SWARMTOP_BENCH_WRITE=DIR only writes the corpora into DIR). SWARMTOP_BENCH_BASELINE=DIR measures
//! another build side by side on the same corpora: DIR holds that build's `memory` bench and
//! `swarmtop` binary (copied from its `target/release`, the bench built from this same source).

#[path = "support/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "support/long_session.rs"]
mod long_session;

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::pipeline::Config;
use swarmtop::source::files;
use swarmtop::source::recorded::Recorded;
use swarmtop::source::replay::Pace;
use swarmtop::ui::View;
use swarmtop::ui::runtime::{Runtime, Settings, time_of};

// The allocator of the binary, so the monitor's figure is the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Run as a helper: `stats FILE` (the binary, its peak) or `monitor FILE` (this process's peak).
const CHILD: &str = "SWARMTOP_MEMORY_CHILD";
/// The `swarmtop` binary a `stats` helper runs, when not the one built with this bench.
const BIN: &str = "SWARMTOP_BENCH_BIN";

/// A build to measure: its bench (run as the helper) and its binary.
struct Build {
    name: &'static str,
    bench: PathBuf,
    bin: PathBuf,
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Ok(what) = std::env::var(CHILD) {
        let (mode, file) = what.split_once(':').expect("MODE:FILE");
        let kib = match mode {
            "stats" => stats_peak(Path::new(file)),
            "monitor" => monitor_peak(Path::new(file)),
            _ => panic!("unknown mode {mode}"),
        };
        println!("{kib}");
        return;
    }
    let sizes: Vec<u64> = std::env::var("SWARMTOP_BENCH_SIZES")
        .ok()
        .map_or_else(|| vec![20, 200, 2000], |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect());
    let kept = std::env::var_os("SWARMTOP_BENCH_WRITE").map(PathBuf::from);
    let mut builds = Vec::new();
    if let Some(dir) = std::env::var_os("SWARMTOP_BENCH_BASELINE").map(PathBuf::from) {
        builds.push(Build { name: "baseline", bench: dir.join("memory"), bin: dir.join("swarmtop") });
    }
    let this = Build {
        name: "this build",
        bench: std::env::current_exe().expect("own path"),
        bin: PathBuf::from(env!("CARGO_BIN_EXE_swarmtop")),
    };
    builds.push(this);
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = kept.clone().unwrap_or_else(|| temp.path().to_owned());
    std::fs::create_dir_all(&dir).expect("corpus dir");
    let mut rows = Vec::new();
    for mb in sizes {
        let path = dir.join(format!("codex-{mb}mb.ndjson"));
        let start = Instant::now();
        let file = std::fs::File::create(&path).expect("corpus file");
        let bytes = long_session::write(&mut BufWriter::new(file), mb * 1_000_000).expect("writing the corpus");
        println!("corpus {mb} MB: {bytes} bytes written in {:.1}s", start.elapsed().as_secs_f64());
        if kept.is_some() {
            continue;
        }
        for (b, build) in builds.iter().enumerate() {
            let (stats, stats_took) = timed(|| helper(build, "stats", &path));
            let (monitor, monitor_took) = timed(|| helper(build, "monitor", &path));
            println!(
                "  {:<10} peak RSS: stats --json {:.1} MiB in {:.1}s · monitor (--speed max, 200×60) {:.1} MiB in {:.1}s",
                build.name,
                mib(stats),
                stats_took.as_secs_f64(),
                mib(monitor),
                monitor_took.as_secs_f64()
            );
            rows.push((b, mb, stats, monitor));
        }
        std::fs::remove_file(&path).expect("removing the corpus");
    }
    for (b, build) in builds.iter().enumerate() {
        let mine: Vec<_> = rows.iter().filter(|r| r.0 == b).collect();
        if let (Some(first), Some(last)) = (mine.first(), mine.last()) {
            println!(
                "{}: {} MB vs {} MB: stats {:.2}× · monitor {:.2}× (target ≤ 1.5×)",
                build.name,
                last.1,
                first.1,
                last.2 as f64 / first.2 as f64,
                last.3 as f64 / first.3 as f64
            );
        }
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Runs a build's bench as a helper measuring one thing; its answer, in KiB.
fn helper(build: &Build, mode: &str, file: &Path) -> u64 {
    let out = Command::new(&build.bench)
        .env(CHILD, format!("{mode}:{}", file.display()))
        .env(BIN, &build.bin)
        .stderr(Stdio::inherit())
        .output()
        .expect("running the helper");
    assert!(out.status.success(), "{mode} helper failed");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a figure in KiB")
}

/// The peak of `swarmtop stats --json FILE`: the only child this process waits for.
fn stats_peak(file: &Path) -> u64 {
    let bin = std::env::var_os(BIN).map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_swarmtop")), PathBuf::from);
    let status = Command::new(bin)
        .args(["stats", "--json"])
        .arg(file)
        .stdout(Stdio::null())
        .status()
        .expect("running swarmtop stats");
    assert!(status.success(), "swarmtop stats failed");
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    u64::try_from(usage.max_rss()).unwrap_or(0)
}

/// Replays `file` through the monitor's runtime at `--speed max` to its end, drawing frames.
fn monitor_peak(file: &Path) -> u64 {
    let paths = [file.to_owned()];
    let inputs = files::expand(&paths).expect("listing the input");
    let recorded = Recorded::from_inputs(&paths, &inputs, false, &time_of).expect("reading the input");
    let settings = Settings { fps: 60, stall_ms: 60_000, max_gap_ms: 2_000, pace: Pace::Max, clock: Instant::now };
    let mut rt = Runtime::replay(
        recorded,
        View::with_theme(swarmtop::ui::Theme::dark()),
        &settings,
        Config::default(),
        Instant::now(),
    );
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("test terminal");
    loop {
        let now = Instant::now();
        rt.advance(now, None);
        if rt.frame_due(now) {
            terminal.draw(|f| rt.draw(f, now)).expect("drawing");
        }
        if rt.feed.ended.is_some() {
            break;
        }
        // The runtime says when it wants to run again; at max speed that is at once.
        std::thread::sleep(rt.wake(now).saturating_duration_since(Instant::now()).min(Duration::from_millis(5)));
    }
    let now = Instant::now();
    terminal.draw(|f| rt.draw(f, now)).expect("drawing");
    proc_status_kib("VmHWM:")
}

fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0)
}
