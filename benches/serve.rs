//! `swarmtop serve` under load, as issue 21 asks: events reach SSE clients within a frame (20 ms
//! p99) of the line being written, at 10,000 lines/s with 10 clients; idle with 50 live sessions, it
//! uses under 1 % of a core. The release daemon runs on loopback in a home of its own; a writer
//! appends Claude Code transcript lines (each adds 2 tokens to its thread) in 1 ms batches, and each
//! client maps every `usage` event back to the line that made it by the thread's total.
//!
//! `cargo bench --bench serve` (SWARMTOP_BENCH_SECS: seconds of load, default 5; SWARMTOP_BENCH_RATE:
//! lines per second, default 10000).

#[path = "../tests/serve_support/mod.rs"]
mod serve_support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serve_support::{Events, PROJECT, line, opening, session_id, transcript};

const CLIENTS: usize = 10;
const IDLE_SESSIONS: usize = 50;

fn env_or(key: &str, default: u64) -> u64 {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Daemon {
    child: Child,
    addr: String,
}

impl Daemon {
    fn start(home: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
            .args(["serve", "--listen", "127.0.0.1:0", "--since", "1h"])
            .env_clear()
            .env("HOME", home)
            .env("TZ", "UTC")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("swarmtop serve starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let addr = first.trim().strip_prefix("swarmtop serve: http://").expect("its URL").to_owned();
        Self { child, addr }
    }

    fn status(&self) -> serde_json::Value {
        let (_, body) = serve_support::get(&self.addr, "/api/status", &[]);
        serde_json::from_str(&body).unwrap()
    }

    fn wait(&self, what: &str, ok: impl Fn(&serde_json::Value) -> bool) {
        let until = Instant::now() + Duration::from_secs(120);
        while !ok(&self.status()) {
            assert!(Instant::now() < until, "waited two minutes for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// CPU time (user + system) the daemon has used so far.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100);
        Duration::from_secs_f64(ticks as f64 / hz as f64)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client's events until the usage of the last line, each mapped back to its line.
fn read_busy(mut c: Events, written: &Mutex<Vec<Instant>>, busy_id: &str, total_lines: u64) -> Got {
    let mut got = Got { latencies: Vec::with_capacity(total_lines as usize), ..Got::default() };
    let mut seen = vec![false; total_lines as usize];
    loop {
        let e = c.next();
        let at = Instant::now();
        if e.kind == "resync" {
            got.resyncs += 1;
            got.missed += e.data["missed"].as_u64().unwrap_or(0);
        }
        if e.kind != "usage" || e.data["thread"] != busy_id {
            continue;
        }
        let i = e.data["tokens"]["total"].as_u64().unwrap() / 2;
        // The session's opening prompt is told with no tokens yet: no line made it.
        if i == 0 {
            continue;
        }
        if std::mem::replace(&mut seen[(i - 1) as usize], true) {
            got.twice += 1;
        }
        if let Some(t) = written.lock().unwrap().get((i - 1) as usize) {
            got.latencies.push(at.saturating_duration_since(*t));
        }
        if i == total_lines {
            return got;
        }
    }
}

/// What one client read of the loaded session.
#[derive(Default)]
struct Got {
    /// From each line written to its usage event read.
    latencies: Vec<Duration>,
    /// Lines whose usage event came more than once.
    twice: u64,
    /// Times it fell behind and was told to resync, and the events that cost it.
    resyncs: u64,
    missed: u64,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let secs = env_or("SWARMTOP_BENCH_SECS", 5);
    let rate = env_or("SWARMTOP_BENCH_RATE", 10_000);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_owned();
    std::fs::create_dir_all(home.join(".claude/projects").join(PROJECT)).unwrap();
    let now = jiff::Timestamp::now().to_string();
    let idle_lines = 20;
    for n in 0..IDLE_SESSIONS {
        let mut text = opening(n, &now);
        for i in 0..idle_lines {
            text.push_str(&line(n, i, &now));
        }
        std::fs::write(transcript(&home, n), text).unwrap();
    }
    let d = Daemon::start(&home);
    let records = (IDLE_SESSIONS as u64) * (idle_lines + 1);
    d.wait("the sessions read and stored", |s| {
        s["records"].as_u64() >= Some(records) && s["syncs"].as_u64() >= Some(1)
    });
    std::thread::sleep(Duration::from_secs(2));
    let (before, start) = (d.cpu(), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let idle = d.cpu().saturating_sub(before).as_secs_f64() / start.elapsed().as_secs_f64();
    println!("serve idle, {IDLE_SESSIONS} live sessions: {:.2} % of a core (10 s)", idle * 100.0);

    // The loaded session: a new one, so that its totals start at 0.
    let busy = IDLE_SESSIONS;
    let path = transcript(&home, busy);
    std::fs::write(&path, opening(busy, &now)).unwrap();
    let total_lines = secs * rate;
    let written: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(Vec::with_capacity(total_lines as usize)));
    let mut clients: Vec<Events> = (0..CLIENTS).map(|_| Events::open(&d.addr, None)).collect();
    d.wait("the clients", |s| s["clients"].as_u64() == Some(CLIENTS as u64));
    let busy_id = session_id(busy);
    let readers: Vec<_> = clients
        .drain(..)
        .map(|c| {
            let (written, busy_id) = (written.clone(), busy_id.clone());
            std::thread::spawn(move || read_busy(c, &written, &busy_id, total_lines))
        })
        .collect();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let batch = (rate / 1000).max(1);
    let began = Instant::now();
    let mut i = 0;
    while i < total_lines {
        let mut text = String::new();
        let n = batch.min(total_lines - i);
        for k in 1..=n {
            text.push_str(&line(busy, i + k, &now));
        }
        // The time each line is written, before it is: no event can precede it.
        let t = Instant::now();
        written.lock().unwrap().extend(std::iter::repeat_n(t, n as usize));
        file.write_all(text.as_bytes()).unwrap();
        i += n;
        let next = began + Duration::from_secs_f64(i as f64 / rate as f64);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let wrote = began.elapsed();
    let mut all = Vec::new();
    let (mut resyncs, mut missed, mut twice) = (0, 0, 0);
    for r in readers {
        let got = r.join().unwrap();
        all.extend(got.latencies);
        (resyncs, missed, twice) = (resyncs + got.resyncs, missed + got.missed, twice + got.twice);
    }
    all.sort();
    let expected = total_lines * CLIENTS as u64;
    println!(
        "SSE latency, {total_lines} lines at {:.0} lines/s, {CLIENTS} clients: {} of {expected} usage events (one a \
         line and client), {twice} twice; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {resyncs} resyncs ({missed} \
         events missed)",
        total_lines as f64 / wrote.as_secs_f64(),
        all.len(),
        percentile(&all, 0.5).as_secs_f64() * 1e3,
        percentile(&all, 0.99).as_secs_f64() * 1e3,
        all.last().unwrap().as_secs_f64() * 1e3,
    );
}
