//! `swarmtop tee`, `attach` and `listen` as processes, with small fake servers (`cat`, `sh`)
//! instead of Codex. Every test has its own runtime and state directories, and every wait is
//! bounded.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const SERVER: &[u8] = include_bytes!("fixtures/tee/collab_v1.server.ndjson");
const CLIENT: &[u8] = include_bytes!("fixtures/tee/collab_v1.client.ndjson");
const LIVE: &[u8] = b"{\"swarmtop\":\"live\"}\n";

/// Private runtime and state directories, and the binary under test.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn sock_dir(&self) -> PathBuf {
        self.run_dir().join("swarmtop")
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn recordings_dir(&self) -> PathBuf {
        self.state_dir().join("swarmtop/recordings")
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
        c.env("XDG_RUNTIME_DIR", self.run_dir()).env("XDG_STATE_HOME", self.state_dir());
        c
    }

    /// `swarmtop tee [extra…] -- argv…` with piped stdio.
    fn tee(&self, extra: &[&str], argv: &[&str]) -> Tee {
        let mut child = self
            .cmd()
            .arg("tee")
            .args(extra)
            .arg("--")
            .args(argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tee");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        Tee { child, stdin, stdout }
    }

    /// The socket of the one tee running in this environment.
    fn wait_socket(&self) -> PathBuf {
        wait_for("the tee's socket", || {
            fs::read_dir(self.sock_dir())
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "sock"))
        })
    }

    /// The one recording in the default directory.
    fn recording(&self) -> PathBuf {
        wait_for("the recording", || fs::read_dir(self.recordings_dir()).ok()?.flatten().map(|e| e.path()).next())
    }
}

struct Tee {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
}

impl Tee {
    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).expect("pid"))
    }

    /// Writes `input` from a thread (closing stdin after it) while this thread reads all of
    /// stdout, as a client would: neither side can block the other.
    fn exchange(&mut self, input: Vec<u8>) -> Vec<u8> {
        let mut stdin = self.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let mut out = Vec::new();
        self.stdout.take().expect("stdout").read_to_end(&mut out).expect("read stdout");
        writer.join().expect("writer");
        out
    }

    fn wait(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "the tee did not exit in time");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Connects to a tee's socket. The file exists from `bind()` on, a moment before `listen()`: a
/// connection refused in that moment is retried.
fn connect(path: &Path) -> UnixStream {
    wait_for("the socket to accept", || match UnixStream::connect(path) {
        Ok(stream) => Some(stream),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => None,
        Err(e) => panic!("connect {}: {e}", path.display()),
    })
}

/// A monitor reading everything from a tee's socket, on its own thread.
fn monitor(path: &Path) -> JoinHandle<Vec<u8>> {
    let mut stream = connect(path);
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got);
        got
    })
}

/// Reads from `stream` until `marker` has been read (or EOF); returns what came before it.
fn read_until_line(stream: &mut BufReader<UnixStream>, marker: &[u8]) -> Vec<u8> {
    let mut before = Vec::new();
    loop {
        let mut line = Vec::new();
        if stream.read_until(b'\n', &mut line).expect("read monitor") == 0 || line == marker {
            return before;
        }
        before.extend_from_slice(&line);
    }
}

/// What the recording says each side wrote: the bytes rebuilt from `msg` (verbatim, sliced out
/// of the record) or `rawB64`, with a newline unless the record is `partial`.
#[derive(Debug, Default)]
struct Rebuilt {
    header: Option<serde_json::Value>,
    c2s: Vec<u8>,
    s2c: Vec<u8>,
    records: usize,
}

fn rebuild(recording: &[u8]) -> Rebuilt {
    let mut out = Rebuilt::default();
    for line in recording.split_inclusive(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\n").expect("every record ends in a newline");
        let value: serde_json::Value = serde_json::from_slice(line).expect("every record is JSON");
        if out.header.is_none() {
            assert_eq!(value["swarmtop"], "recording", "the first line is the header");
            out.header = Some(value);
            continue;
        }
        out.records += 1;
        let dir = value["dir"].as_str().expect("dir");
        let partial = value.get("partial").is_some();
        let prefix = format!("{{\"ts\":{},\"dir\":\"{dir}\",", value["ts"]);
        assert!(line.starts_with(prefix.as_bytes()), "record starts with ts and dir");
        let mut bytes = if let Some(raw) = value.get("rawB64") {
            base64::engine::general_purpose::STANDARD
                .decode(raw.as_str().expect("rawB64 is a string"))
                .expect("valid base64")
        } else {
            let body = &line[prefix.len()..];
            let body = body.strip_prefix(b"\"msg\":").expect("msg follows");
            let suffix: &[u8] = if partial { b",\"partial\":true}" } else { b"}" };
            body.strip_suffix(suffix).expect("record ends after msg").to_vec()
        };
        if !partial {
            bytes.push(b'\n');
        }
        match dir {
            "c2s" => out.c2s.extend_from_slice(&bytes),
            "s2c" => out.s2c.extend_from_slice(&bytes),
            other => panic!("unexpected dir {other}"),
        }
    }
    out
}

/// Fixture traffic plus every awkward line shape, ending in a line without newline.
fn awkward_input() -> Vec<u8> {
    let mut input = Vec::new();
    input.extend_from_slice(SERVER);
    input.extend_from_slice(b"not json at all\n");
    input.extend_from_slice(b"{\"bad utf8\":\"\xff\xfe\"}\n");
    input.extend_from_slice(b"\n");
    input.extend_from_slice(b"{\"crlf\":true}\r\n");
    input.extend_from_slice(b"  {\"spaced\" : [1, 2.50, 1e3]}  \n");
    input.extend_from_slice(b"{\"tab\":\"a\tb\"}\n");
    let long =
        format!("{{\"method\":\"item/agentMessage/delta\",\"params\":{{\"delta\":\"{}\"}}}}\n", "x".repeat(1 << 20));
    input.extend_from_slice(long.as_bytes());
    input.extend_from_slice(CLIENT);
    input.extend_from_slice(b"{\"final\":\"no newline\"}");
    input
}

#[test]
fn forwarding_is_byte_exact_both_ways_and_equals_the_recording() {
    let env = Env::new();
    let rec = env.dir.path().join("rec/session.ndjson");
    let mut tee = env.tee(&["--record", rec.to_str().expect("utf8 path")], &["cat"]);
    let input = awkward_input();
    let output = tee.exchange(input.clone());
    assert_eq!(tee.wait(), 0);
    assert!(output == input, "stdout differs from what the server wrote");
    let rebuilt = rebuild(&fs::read(&rec).expect("recording"));
    assert!(rebuilt.c2s == input, "the recording's c2s differs from what the client wrote");
    assert!(rebuilt.s2c == input, "the recording's s2c differs from what the server wrote");
    let header = rebuilt.header.expect("header");
    assert_eq!(header["source"], "tee");
    assert_eq!(header["version"], 1);
    assert_eq!(header["command"], serde_json::json!(["cat"]));
    assert!(!env.sock_dir().join(format!("tee-{}.sock", tee.child.id())).exists(), "socket removed at exit");
}

#[test]
fn exit_status_spawn_failures_and_signals_pass_through() {
    let env = Env::new();
    let mut t = env.tee(&["--no-record"], &["sh", "-c", "exit 3"]);
    drop(t.stdin.take());
    assert_eq!(t.wait(), 3);

    let mut t = env.tee(&["--no-record"], &["sh", "-c", "kill -TERM $$"]);
    assert_eq!(t.wait(), 128 + 15);

    let mut t = env.tee(&["--no-record"], &["/nonexistent/server"]);
    assert_eq!(t.wait(), 127);

    // The child is told of the tee's SIGTERM, and its own exit status is the tee's.
    let mut t =
        env.tee(&["--no-record"], &["sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.02; done"]);
    let mut line = String::new();
    BufReader::new(t.stdout.take().expect("stdout")).read_line(&mut line).expect("read");
    assert_eq!(line, "ready\n");
    kill(t.pid(), Signal::SIGTERM).expect("kill");
    assert_eq!(t.wait(), 7);

    // Closing the client's side closes the server's stdin.
    let mut t = env.tee(&["--no-record"], &["sh", "-c", "cat >/dev/null; exit 5"]);
    drop(t.stdin.take());
    assert_eq!(t.wait(), 5);
}

#[test]
fn socket_and_recording_are_private_and_cleaned_up() {
    let env = Env::new();
    let mut tee = env.tee(&[], &["cat"]);
    let sock = env.wait_socket();
    let rec = env.recording();
    let mode = |p: &Path| fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&sock), 0o600, "socket");
    assert_eq!(mode(&env.sock_dir()), 0o700, "socket directory");
    assert_eq!(mode(&rec), 0o600, "recording");
    assert_eq!(mode(&env.recordings_dir()), 0o700, "recordings directory");
    let name = rec.file_name().expect("name").to_string_lossy().into_owned();
    assert!(name.ends_with(&format!("Z-tee-{}.ndjson", tee.child.id())), "{name}");
    assert_eq!(name.len(), "YYYYMMDDTHHMMSSZ".len() + format!("-tee-{}.ndjson", tee.child.id()).len());
    tee.exchange(b"{}\n".to_vec());
    assert_eq!(tee.wait(), 0);
    assert!(!sock.exists(), "socket removed at exit");
}

#[test]
fn a_late_monitor_gets_history_then_live_then_the_end() {
    let env = Env::new();
    let mut tee = env.tee(&[], &["cat"]);
    let sock = env.wait_socket();
    let rec = env.recording();
    let mut stdin = tee.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(tee.stdout.take().expect("stdout"));
    let lines: Vec<&[u8]> = SERVER.split_inclusive(|&b| b == b'\n').collect();
    let (early, late) = lines.split_at(lines.len() / 2);
    let mut echo = |batch: &[&[u8]]| {
        for line in batch {
            stdin.write_all(line).expect("write");
            let mut back = Vec::new();
            stdout.read_until(b'\n', &mut back).expect("read");
            assert_eq!(&back, line);
        }
    };
    echo(early);

    let mut mon = BufReader::new(connect(&sock));
    mon.get_ref().set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let history = read_until_line(&mut mon, LIVE);
    // The tee records, forwards, then offers to monitors: the client may already hold a line whose
    // record is in the file but not yet offered, so history is a prefix of the file, not always all.
    let so_far = fs::read(&rec).expect("recording");
    assert!(so_far.starts_with(&history), "history is the recording so far, or a prefix of it");
    assert!(early.concat().starts_with(&rebuild(&history).s2c));

    echo(late);
    drop(stdin);
    let mut live = Vec::new();
    mon.read_to_end(&mut live).expect("read live");
    assert_eq!(tee.wait(), 0);
    let all = fs::read(&rec).expect("recording");
    let mut expected = all[history.len()..].to_vec();
    expected.extend_from_slice(b"{\"swarmtop\":\"end\",\"exitCode\":0}\n");
    assert!(live == expected, "live records are the rest of the recording, then the end marker");
}

#[test]
fn stuck_and_killed_monitors_do_not_slow_the_proxy() {
    let env = Env::new();
    let mut tee = env.tee(&[], &["cat"]);
    let sock = env.wait_socket();
    // One monitor never reads; another reads a little and dies.
    let stuck = connect(&sock);
    let mut killed = connect(&sock);
    let mut first = [0u8; 64];
    killed.read_exact(&mut first).expect("read a little");
    drop(killed);

    // 48 MiB is six times the per-monitor queue and far beyond any socket buffer: without the
    // bounded queue the stuck monitor would block the proxy for good.
    let line = format!("{{\"method\":\"item/agentMessage/delta\",\"params\":{{\"delta\":\"{}\"}}}}\n", "y".repeat(500));
    let input = line.repeat((48 << 20) / line.len()).into_bytes();
    let started = Instant::now();
    let output = tee.exchange(input.clone());
    let took = started.elapsed();
    assert_eq!(tee.wait(), 0);
    assert!(output == input, "every byte forwarded");
    assert!(took < Duration::from_secs(60), "48 MiB took {took:?}");
    // The stuck monitor was dropped: its stream ends (the tee closed it) instead of waiting.
    stuck.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut rest = Vec::new();
    (&stuck).read_to_end(&mut rest).expect("the stuck monitor's stream ends");
    assert!(!rest.ends_with(b"{\"swarmtop\":\"end\",\"exitCode\":0}\n"), "a dropped monitor gets no end");
    let rebuilt = rebuild(&fs::read(env.recording()).expect("recording"));
    assert!(rebuilt.s2c == input && rebuilt.c2s == input, "the recording is complete");
}

#[test]
fn sigkill_leaves_the_recording_complete_up_to_the_last_forwarded_line() {
    let env = Env::new();
    let mut tee = env.tee(&[], &["cat"]);
    let rec = env.recording();
    let mut stdin = tee.stdin.take().expect("stdin");
    let stdout = tee.stdout.take().expect("stdout");
    // The client writes as fast as it can; we read what the server sent back and kill the tee
    // in the middle of the stream.
    let writer = std::thread::spawn(move || {
        for i in 0u64.. {
            let line = format!(
                "{{\"id\":{i},\"method\":\"item/agentMessage/delta\",\"params\":{{\"delta\":\"{}\"}}}}\n",
                "z".repeat((i % 300) as usize)
            );
            if stdin.write_all(line.as_bytes()).is_err() {
                return;
            }
        }
    });
    let mut received = Vec::new();
    let mut out = stdout;
    let mut buf = [0u8; 8192];
    while received.len() < (4 << 20) {
        let n = out.read(&mut buf).expect("read");
        assert!(n > 0, "stream ended early");
        received.extend_from_slice(&buf[..n]);
    }
    kill(tee.pid(), Signal::SIGKILL).expect("kill");
    let _ = tee.child.wait();
    writer.join().expect("writer");
    let mut bytes = fs::read(&rec).expect("recording");
    // A record the kill cut short was never forwarded; every complete one must parse.
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(complete);
    let rebuilt = rebuild(&bytes);
    let forwarded_lines = received.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    assert!(forwarded_lines > 0);
    assert!(
        rebuilt.s2c.starts_with(&received[..forwarded_lines]),
        "the recording holds every line the client received ({} bytes; recorded {})",
        forwarded_lines,
        rebuilt.s2c.len()
    );
    assert!(rebuilt.c2s.starts_with(&rebuilt.s2c), "the server never sent what was not recorded as sent to it");
}

#[test]
fn a_burst_with_two_monitors_attached_loses_nothing() {
    let env = Env::new();
    let mut tee = env.tee(&[], &["cat"]);
    let sock = env.wait_socket();
    let monitors = [monitor(&sock), monitor(&sock)];
    let lines: Vec<&[u8]> = SERVER.split_inclusive(|&b| b == b'\n').collect();
    let mut input = Vec::new();
    while input.len() < (16 << 20) {
        for line in &lines {
            input.extend_from_slice(line);
        }
    }
    let output = tee.exchange(input.clone());
    assert_eq!(tee.wait(), 0);
    assert!(output == input);
    let recorded = fs::read(env.recording()).expect("recording");
    let rebuilt = rebuild(&recorded);
    assert!(rebuilt.s2c == input && rebuilt.c2s == input, "the recording lost nothing");
    for m in monitors {
        let got = m.join().expect("monitor");
        if got.windows(20).any(|w| w == b"{\"swarmtop\":\"lagged\"") {
            continue;
        }
        // History then live, split anywhere at a record boundary: the same bytes as the file.
        let pos = got.windows(LIVE.len()).position(|w| w == LIVE).expect("live marker");
        let mut seen = got[..pos].to_vec();
        seen.extend_from_slice(&got[pos + LIVE.len()..]);
        let mut expected = recorded.clone();
        expected.extend_from_slice(b"{\"swarmtop\":\"end\",\"exitCode\":0}\n");
        assert!(seen == expected, "a monitor that kept up saw exactly the recording");
    }
}

#[test]
fn a_lagging_monitor_is_told_and_resyncs_from_history() {
    let env = Env::new();
    let mut tee = env.tee(&["--monitor-queue-bytes", "1048576"], &["cat"]);
    let sock = env.wait_socket();
    let mut slow = BufReader::new(connect(&sock));
    slow.get_ref().set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    read_until_line(&mut slow, LIVE);
    // How far the proxy has moved the burst (its echo on stdout).
    let moved = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = moved.clone();
    // A monitor that keeps reading, far slower than the proxy moves lines: slower by the proxy's
    // own pace (4 KiB per 64 KiB moved), not by the clock, so it falls behind by more than the
    // bound however loaded the machine. Once the proxy has moved twice the bound (it has lagged
    // by then), it reads as fast as it can: what was queued and the marker must come within the
    // close grace, which began when it lagged.
    let slow = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let moved = seen.load(std::sync::atomic::Ordering::SeqCst);
            if moved < 2 << 20 && got.len() > moved / 16 {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            match slow.read(&mut buf) {
                Ok(0) | Err(_) => return got,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    });
    let mut stdin = tee.stdin.take().expect("stdin");
    let mut stdout = tee.stdout.take().expect("stdout");
    let line = format!("{{\"method\":\"item/agentMessage/delta\",\"params\":{{\"delta\":\"{}\"}}}}\n", "w".repeat(300));
    // Eight times the queue bound, far more than the monitor reads meanwhile.
    let burst = line.repeat((8 << 20) / line.len());
    let expect_back = burst.len();
    let writer = std::thread::spawn(move || {
        stdin.write_all(burst.as_bytes()).expect("write");
        stdin
    });
    let mut back = vec![0u8; expect_back];
    let mut at = 0;
    while at < expect_back {
        let n = stdout.read(&mut back[at..]).expect("read");
        assert!(n > 0, "the proxy's output ended after {at} bytes");
        at += n;
        moved.store(at, std::sync::atomic::Ordering::SeqCst);
    }
    let mut stdin = writer.join().expect("writer");

    let got = slow.join().expect("slow monitor");
    let last = got[..got.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let marker: serde_json::Value = serde_json::from_slice(&got[last..]).expect("the stream ends in a marker");
    assert_eq!(marker["swarmtop"], "lagged");
    assert!(marker["droppedFromMs"].as_i64().expect("droppedFromMs") > 0);
    assert!(memchr::memchr_iter(b'\n', &got[..last]).count() > 0, "whole records before the marker");

    // Reconnecting gives the whole history again, then live records.
    let mut again = BufReader::new(UnixStream::connect(&sock).expect("reconnect"));
    again.get_ref().set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let history = read_until_line(&mut again, LIVE);
    assert!(history == fs::read(env.recording()).expect("recording"), "history is the recording");
    stdin.write_all(b"{\"after\":1}\n").expect("write");
    let mut echo = String::new();
    BufReader::new(&mut stdout).read_line(&mut echo).expect("echo");
    let mut next = String::new();
    again.read_line(&mut next).expect("live record");
    assert!(next.contains("\"dir\":\"c2s\",\"msg\":{\"after\":1}"), "{next}");
    drop(stdin);
    assert_eq!(tee.wait(), 0);
}

#[test]
fn attach_headless_mid_run_prints_the_stats_of_the_recording() {
    let env = Env::new();
    // A server that answers slowly enough for a monitor to attach in the middle.
    let script = "head -n 40 \"$0\"; read x; tail -n +41 \"$0\"; read y; exit 0";
    let server = env.dir.path().join("server.ndjson");
    fs::write(&server, SERVER).expect("write fixture");
    let mut tee = env.tee(&[], &["sh", "-c", script, server.to_str().expect("utf8")]);
    env.wait_socket();
    let mut stdin = tee.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(tee.stdout.take().expect("stdout"));
    for _ in 0..40 {
        let mut l = Vec::new();
        stdout.read_until(b'\n', &mut l).expect("read");
    }
    let copy = env.dir.path().join("attach.ndjson");
    // No SOCKET: the only running tee is found.
    let attach =
        env.cmd().args(["attach", "--headless", "--record"]).arg(&copy).stdout(Stdio::piped()).spawn().expect("attach");
    wait_for("attach to connect", || (fs::metadata(&copy).ok()?.len() > 0).then_some(()));
    stdin.write_all(b"{\"id\":1,\"method\":\"go\"}\n").expect("write");
    drop(stdin);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).expect("read the rest");
    assert_eq!(tee.wait(), 0);
    let attach = wait_output(attach);
    assert!(
        attach.status.success(),
        "attach failed ({}): {}\n{}",
        attach.status,
        String::from_utf8_lossy(&attach.stderr),
        String::from_utf8_lossy(&attach.stdout)
    );
    let rec = env.recording();
    let stats = env.cmd().args(["stats", "--json"]).arg(&rec).output().expect("stats");
    assert!(stats.status.success());
    assert_eq!(String::from_utf8_lossy(&attach.stdout), String::from_utf8_lossy(&stats.stdout));
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("stats JSON");
    assert_eq!(v["routing"]["malformed"], 0);
    assert!(v["threads"].as_array().expect("threads").len() >= 4, "the fixture's spawn tree");
    // The attach's own recording: its header, then the tee's records, each once.
    let copied = fs::read(&copy).expect("attach recording");
    let first_newline = copied.iter().position(|&b| b == b'\n').expect("header");
    let header: serde_json::Value = serde_json::from_slice(&copied[..first_newline]).expect("header");
    assert_eq!(header["source"], "attach");
    assert!(copied[first_newline + 1..] == fs::read(&rec).expect("recording")[..]);
}

fn wait_output(child: Child) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(Duration::from_secs(30)).expect("exits in time").expect("output")
}

#[test]
fn attach_lists_running_tees_and_removes_stale_sockets() {
    let env = Env::new();
    let none = env.cmd().args(["attach", "--headless"]).stdin(Stdio::null()).output().expect("attach");
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no running"));

    let mut a = env.tee(&["--no-record"], &["cat"]);
    let first = env.wait_socket();
    fs::create_dir_all(env.sock_dir()).expect("dir");
    let stale = env.sock_dir().join("tee-1.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    std::thread::sleep(Duration::from_millis(20));
    let mut b = env.tee(&["--no-record"], &["cat"]);
    let second = wait_for("a second socket", || {
        let p = env.sock_dir().join(format!("tee-{}.sock", b.child.id()));
        p.exists().then_some(p)
    });
    let listed = env.cmd().args(["attach", "--headless"]).stdin(Stdio::null()).output().expect("attach");
    assert_eq!(listed.status.code(), Some(2));
    let text = String::from_utf8_lossy(&listed.stderr);
    let (pa, pb) = (text.find(&*first.to_string_lossy()), text.find(&*second.to_string_lossy()));
    assert!(pa.is_some() && pb.is_some(), "{text}");
    assert!(pb < pa, "newest first: {text}");
    assert!(!stale.exists(), "the stale socket was removed");
    a.exchange(Vec::new());
    b.exchange(Vec::new());
    assert_eq!((a.wait(), b.wait()), (0, 0));
}

#[test]
fn listen_records_each_producer_as_its_own_stream() {
    let env = Env::new();
    let sock = env.dir.path().join("in.sock");
    let rec = env.dir.path().join("listen.ndjson");
    let mut listen = env
        .cmd()
        .args(["listen", "--headless", "--socket"])
        .arg(&sock)
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("listen");
    // The socket file appears at bind(), a moment before listen(): wait until it takes a connection.
    let mut a = wait_for("the listen socket", || UnixStream::connect(&sock).ok());
    let mut b = UnixStream::connect(&sock).expect("b");
    let envelope = b"{\"ts\":5,\"dir\":\"s2c\",\"msg\":{\"method\":\"thread/started\",\"params\":{}}}\n";
    a.write_all(b"{\"method\":\"a\",").expect("a");
    a.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(50));
    b.write_all(b"{\"method\":\"b\"}\n").expect("b");
    std::thread::sleep(Duration::from_millis(50));
    a.write_all(b"\"params\":{}}\n").expect("a");
    a.write_all(envelope).expect("a");
    b.write_all(b"cut short").expect("b");
    drop(b);
    drop(a);
    let lines = wait_for("five records", || {
        let text = fs::read(&rec).ok()?;
        (memchr::memchr_iter(b'\n', &text).count() == 5).then_some(text)
    });
    kill(Pid::from_raw(i32::try_from(listen.id()).expect("pid")), Signal::SIGINT).expect("kill");
    let mut out = Vec::new();
    listen.stdout.take().expect("stdout").read_to_end(&mut out).expect("stats");
    assert!(listen.wait().expect("wait").success());
    let stats: serde_json::Value = serde_json::from_slice(&out).expect("stats JSON on SIGINT");
    assert_eq!(stats["input"]["lines"], 5);
    let records: Vec<&[u8]> = lines.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect();
    let header: serde_json::Value = serde_json::from_slice(records[0]).expect("header");
    assert_eq!(header["source"], "listen");
    let tail = |r: &[u8]| String::from_utf8_lossy(&r[r.iter().position(|&c| c == b',').expect("ts")..]).into_owned();
    assert_eq!(tail(records[1]), r#","dir":"in","msg":{"method":"b"}}"#);
    assert_eq!(tail(records[2]), r#","dir":"in","msg":{"method":"a","params":{}}}"#);
    assert_eq!(records[3], &envelope[..envelope.len() - 1], "a producer's envelope is kept as it is");
    assert_eq!(tail(records[4]), r#","dir":"in","rawB64":"Y3V0IHNob3J0","partial":true}"#);
}

#[test]
fn without_a_recording_a_late_monitor_gets_history_from_memory() {
    let env = Env::new();
    let mut tee = env.tee(&["--no-record"], &["cat"]);
    let sock = env.wait_socket();
    let mut stdin = tee.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(tee.stdout.take().expect("stdout"));
    for line in SERVER.split_inclusive(|&b| b == b'\n') {
        stdin.write_all(line).expect("write");
        let mut back = Vec::new();
        stdout.read_until(b'\n', &mut back).expect("read");
    }
    let mut mon = BufReader::new(connect(&sock));
    mon.get_ref().set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let history = read_until_line(&mut mon, LIVE);
    let rebuilt = rebuild(&history);
    assert!(rebuilt.s2c == SERVER && rebuilt.c2s == SERVER, "history holds the session so far");
    drop(stdin);
    let mut rest = Vec::new();
    mon.read_to_end(&mut rest).expect("read");
    assert_eq!(rest, b"{\"swarmtop\":\"end\",\"exitCode\":0}\n");
    assert_eq!(tee.wait(), 0);
    assert!(!env.recordings_dir().exists(), "nothing written to disk");
}
