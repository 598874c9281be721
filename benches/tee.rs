//! Throughput of `swarmtop tee -- cat` with two monitors attached, as a ratio of a plain `cat`
//! pipe moving the same lines in the same run (target: at least 0.8). Realistic lines: the
//! fixture capture of a multi-agent Codex session, repeated.
//!
//! Also measured: the server-to-client direction alone (a real session's shape), and the round trip
//! of one line at a real session's pace.
//!
//! `cargo bench --bench tee [-- MIB ROUNDS MONITORS]` (defaults: 64 MiB, 5 rounds, 2 monitors);
//! `TEE_BENCH_FLAGS="--no-record"` passes flags to the tee of the first measurement.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const LINES: &[u8] = include_bytes!("../tests/fixtures/tee/collab_v1.server.ndjson");

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let monitors: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let mut data = Vec::with_capacity((mib << 20) + LINES.len());
    while data.len() < mib << 20 {
        data.extend_from_slice(LINES);
    }
    let lines = memchr::memchr_iter(b'\n', &data).count();
    println!("tee throughput: {} MiB, {lines} lines per run, {rounds} rounds", data.len() >> 20);

    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let plain = run_plain(&data);
        let (teed, lagged) = run_tee(&data, monitors);
        let ratio = plain.as_secs_f64() / teed.as_secs_f64();
        println!(
            "  round {round}: cat {:>7.1} MiB/s   tee+{monitors} monitors {:>7.1} MiB/s   ratio {ratio:.2}{}",
            mib_per_s(data.len(), plain),
            mib_per_s(data.len(), teed),
            if lagged { "  (a monitor lagged)" } else { "" }
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!("median ratio tee/cat: {median:.2} (target >= 0.80)");

    // A real session's shape: the server talks, the client says little. The server writes a file
    // once told to start; the same server runs bare and behind the tee.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("server.ndjson");
    std::fs::write(&file, &data).expect("write the server's output");
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let plain = run_server(&file, data.len(), None);
        let teed = run_server(&file, data.len(), Some(monitors));
        let ratio = plain.as_secs_f64() / teed.as_secs_f64();
        println!(
            "  round {round}: server alone {:>7.1} MiB/s   behind tee+{monitors} monitors {:>7.1} MiB/s   ratio {ratio:.2}",
            mib_per_s(data.len(), plain),
            mib_per_s(data.len(), teed),
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    println!("median ratio, server to client only: {:.2}", ratios[ratios.len() / 2]);

    // What a client feels at a real session's pace: one line out, its echo back.
    // A line of a typical size (streamed deltas are a few hundred bytes).
    let line = LINES.split_inclusive(|&b| b == b'\n').min_by_key(|l| l.len().abs_diff(400)).unwrap_or(b"{}\n");
    let plain = round_trips(&mut Command::new("cat"), line, None);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tee = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
    tee.env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .args(["tee", "--", "cat"]);
    let teed = round_trips(&mut tee, line, Some(dir.path()));
    println!(
        "round trip of one {}-byte line: cat p50 {:?} p99 {:?}   tee+2 monitors p50 {:?} p99 {:?}",
        line.len(),
        plain.0,
        plain.1,
        teed.0,
        teed.1
    );
}

/// Median and 99th percentile of the time for one line to go through and come back.
fn round_trips(cmd: &mut Command, line: &[u8], tee_dir: Option<&Path>) -> (Duration, Duration) {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let monitors: Vec<_> = match tee_dir {
        Some(dir) => {
            let sock = dir.join(format!("run/swarmtop/tee-{}.sock", child.id()));
            wait_for(&sock);
            vec![monitor(&sock), monitor(&sock)]
        }
        None => Vec::new(),
    };
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut back = vec![0u8; line.len()];
    let mut times = Vec::new();
    for _ in 0..2000 {
        let started = Instant::now();
        stdin.write_all(line).expect("write");
        stdout.read_exact(&mut back).expect("read");
        times.push(started.elapsed());
    }
    drop(stdin);
    child.wait().expect("exits");
    for m in monitors {
        m.join().expect("monitor");
    }
    times.sort();
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn mib_per_s(bytes: usize, took: Duration) -> f64 {
    bytes as f64 / f64::from(1 << 20) / took.as_secs_f64()
}

/// Writes `data` into the child from a thread while reading everything back here; returns the
/// time from the first byte written to the last byte read.
fn pump(child: &mut Child, data: &[u8]) -> Duration {
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let input = data.to_vec();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        for chunk in input.chunks(64 << 10) {
            stdin.write_all(chunk).expect("write");
        }
    });
    let mut buf = vec![0u8; 128 << 10];
    let mut got = 0;
    while got < data.len() {
        let n = stdout.read(&mut buf).expect("read");
        assert!(n > 0, "stream ended early");
        got += n;
    }
    let took = started.elapsed();
    writer.join().expect("writer");
    took
}

fn run_plain(data: &[u8]) -> Duration {
    let mut cat = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("cat");
    let took = pump(&mut cat, data);
    cat.wait().expect("cat exits");
    took
}

fn run_tee(data: &[u8], monitors: usize) -> (Duration, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tee = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .arg("tee")
        .args(std::env::var("TEE_BENCH_FLAGS").ok().as_deref().map(str::split_whitespace).into_iter().flatten())
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("swarmtop tee");
    let sock = dir.path().join(format!("run/swarmtop/tee-{}.sock", tee.id()));
    wait_for(&sock);
    let monitors: Vec<_> = (0..monitors).map(|_| monitor(&sock)).collect();
    let took = pump(&mut tee, data);
    assert!(tee.wait().expect("tee exits").success());
    let lagged = monitors.into_iter().any(|m| m.join().expect("monitor"));
    (took, lagged)
}

/// `sh -c 'read go; cat FILE'`, bare or behind the tee: the time from "go" to the last byte read.
fn run_server(file: &Path, len: usize, tee_monitors: Option<usize>) -> Duration {
    let script = "read go; exec cat \"$0\"";
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = if tee_monitors.is_some() {
        let mut c = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
        c.env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .args(["tee", "--", "sh", "-c", script]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    };
    let mut child = cmd.arg(file).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("server");
    let monitors: Vec<_> = match tee_monitors {
        Some(n) => {
            let sock = dir.path().join(format!("run/swarmtop/tee-{}.sock", child.id()));
            wait_for(&sock);
            (0..n).map(|_| monitor(&sock)).collect()
        }
        None => Vec::new(),
    };
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let started = Instant::now();
    stdin.write_all(b"go\n").expect("go");
    let mut buf = vec![0u8; 128 << 10];
    let mut got = 0;
    while got < len {
        let n = stdout.read(&mut buf).expect("read");
        assert!(n > 0, "stream ended early");
        got += n;
    }
    let took = started.elapsed();
    drop(stdin);
    child.wait().expect("server exits");
    for m in monitors {
        m.join().expect("monitor");
    }
    took
}

fn wait_for(sock: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(sock).is_err() {
        assert!(Instant::now() < deadline, "no socket at {}", sock.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A monitor that reads as fast as it can; returns whether it was dropped as lagging.
fn monitor(sock: &Path) -> JoinHandle<bool> {
    let mut stream = UnixStream::connect(sock).expect("connect");
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 256 << 10];
        let mut tail = Vec::new();
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    tail.extend_from_slice(&buf[..n]);
                    let keep = tail.len().saturating_sub(128);
                    tail.drain(..keep);
                }
            }
        }
        tail.windows(20).any(|w| w == b"{\"swarmtop\":\"lagged\"")
    })
}
