//! What an attack on swarmtop found (issue 8), each kept from coming back: sockets of another user,
//! names that carry escape sequences, signals, closed pipes, damaged inputs, peers that are not a
//! tee, inputs without an end, and a recording that fails. Every input that ever crashed, hung or
//! broke a figure lives in `tests/fixtures/hostile/` and runs here through every consumer.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::commands::{ingest_partial, route::RouteWriter, stats, tree};
use swarmtop::pipeline::Config;
use swarmtop::ui::{self, Feed, Theme, View};

#[path = "support/tmux.rs"]
mod tmux;
use tmux::{Tmux, watched};

const BIN: &str = env!("CARGO_BIN_EXE_swarmtop");
const HEADER: &[u8] = b"{\"swarmtop\":\"recording\",\"version\":1,\"startedMs\":1,\"source\":\"tee\",\"host\":\"h\"}\n";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn swarmtop() -> Command {
    Command::new(BIN)
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child with a bound, killing it (by its own pid) if it overstays.
fn finish(mut child: Child, within: Duration) -> Output {
    let deadline = Instant::now() + within;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn no_control_bytes(text: &[u8]) -> bool {
    !text.iter().any(|&b| b == 0x1b || b == 0x07 || b == 0x9b || (b < 0x20 && b != b'\n'))
}

/// A private socket directory for one test: `$XDG_RUNTIME_DIR/swarmtop`, mode 0700.
fn runtime_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sockets = dir.path().join("swarmtop");
    fs::create_dir(&sockets).expect("mkdir");
    fs::set_permissions(&sockets, fs::Permissions::from_mode(0o700)).expect("chmod");
    (dir, sockets)
}

fn bind_private(path: &Path) -> UnixListener {
    let l = UnixListener::bind(path).expect("bind");
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod");
    l
}

// ---------------------------------------------------------------------------------------------
// Security

/// A second local user, made for the test and removed after it.
struct OtherUser {
    name: String,
    uid: u32,
}

impl OtherUser {
    fn create() -> Option<Self> {
        if !nix::unistd::getuid().is_root() {
            eprintln!("SKIPPED: the cross-user test needs root to create a second user (running as non-root)");
            return None;
        }
        let name = format!("swt{}", std::process::id());
        let made = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", &name])
            .output()
            .expect("useradd runs");
        assert!(made.status.success(), "useradd: {}", stderr(&made));
        let id = Command::new("id").args(["-u", &name]).output().expect("id");
        let uid = String::from_utf8_lossy(&id.stdout).trim().parse().expect("a uid");
        Some(Self { name, uid })
    }

    /// `swarmtop listen` on `socket`, run as this user (an attacker's fake session).
    fn serve(&self, bin: &Path, socket: &Path) -> Child {
        let child = Command::new("setpriv")
            .args(["--reuid", &self.uid.to_string(), "--regid", &self.uid.to_string(), "--clear-groups"])
            .arg(bin)
            .args(["listen", "--headless", "--socket"])
            .arg(socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("setpriv runs");
        wait_for("the other user's socket", || socket.exists().then_some(()));
        child
    }
}

impl Drop for OtherUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

fn attach_discovering(runtime: &Path) -> Output {
    let child = swarmtop()
        .arg("attach")
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    finish(child, Duration::from_secs(20))
}

#[test]
fn another_users_socket_directory_and_sockets_are_never_trusted() {
    let Some(other) = OtherUser::create() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    // The other user must be able to run the binary under test.
    let bin = tmp.path().join("swarmtop");
    fs::copy(BIN, &bin).expect("copy");
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod");
    let theirs = tmp.path().join("theirs");
    fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(other.uid), Some(other.uid)).expect("chown");

    // 1. The socket directory was made by them (XDG_RUNTIME_DIR unset, a shared /tmp).
    let runtime_a = tmp.path().join("a");
    let dir_a = runtime_a.join("swarmtop");
    fs::create_dir_all(&dir_a).expect("mkdir");
    fs::set_permissions(&dir_a, fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&dir_a, Some(other.uid), Some(other.uid)).expect("chown");
    let mut fake_a = other.serve(&bin, &dir_a.join("tee-1.sock"));
    let out = attach_discovering(&runtime_a);
    let _ = fake_a.kill();
    let _ = fake_a.wait();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("belongs to another user"), "{}", stderr(&out));

    // 2. Our directory, their socket (renamed in): owned by them.
    let (runtime_b, dir_b) = runtime_dir();
    let mut fake_b = other.serve(&bin, &theirs.join("tee-2.sock"));
    fs::rename(theirs.join("tee-2.sock"), dir_b.join("tee-2.sock")).expect("rename");
    let out = attach_discovering(runtime_b.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("ignoring") && stderr(&out).contains("belongs to another user"), "{}", stderr(&out));
    assert!(stderr(&out).contains("no running `swarmtop tee`"), "{}", stderr(&out));

    // 3. The same socket made to look like ours: only SO_PEERCRED tells.
    std::os::unix::fs::chown(dir_b.join("tee-2.sock"), Some(0), Some(0)).expect("chown");
    let out = attach_discovering(runtime_b.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("the peer runs as another user"), "{}", stderr(&out));
    // Named explicitly, it is refused just the same.
    let child = swarmtop()
        .args(["attach", "--headless"])
        .arg(dir_b.join("tee-2.sock"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = finish(child, Duration::from_secs(20));
    let _ = fake_b.kill();
    let _ = fake_b.wait();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("refusing") && stderr(&out).contains("another user"), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "no figures from a fake session");
}

#[test]
fn socket_names_and_paths_with_escape_sequences_never_reach_stderr_raw() {
    let (runtime, dir) = runtime_dir();
    let _a = bind_private(&dir.join("tee-\x1b]0;pwned\x07.sock"));
    let _b = bind_private(&dir.join("tee-\x1b]52;c;aGk=\x07\n2.sock"));
    let out = attach_discovering(runtime.path());
    assert_eq!(out.status.code(), Some(2), "several tees and nobody to ask: {}", stderr(&out));
    assert!(no_control_bytes(&out.stderr), "{:?}", stderr(&out));
    assert_eq!(stderr(&out).matches("tee-").count(), 2, "both are listed: {}", stderr(&out));

    let out = swarmtop().args(["stats", "/nonexistent/x\x1b[2J\x1b]0;t\x07.ndjson"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(no_control_bytes(&out.stderr), "{:?}", stderr(&out));
    // The path is named once, not once per layer of context.
    assert_eq!(stderr(&out).matches("nonexistent").count(), 1, "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// Command line, pipes, damaged inputs

#[test]
fn global_options_work_before_a_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("swarmtop.log");
    let out = swarmtop()
        .arg("--log")
        .arg(&log)
        .arg("tree")
        .arg(fixture("codex-0.171.0/probe.server.ndjson"))
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gpt-5.5"));
    assert!(log.exists(), "the log file was opened");
    let out = swarmtop()
        .args(["--pricing", "/nonexistent/prices.toml", "stats"])
        .arg(fixture("codex-0.171.0/probe.server.ndjson"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "the price table is read, not taken for a file to replay");
    assert!(stderr(&out).contains("price table"), "{}", stderr(&out));
}

#[test]
fn a_closed_stdout_is_a_normal_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.ndjson");
    let one = fs::read(fixture("codex-0.171.0/collab_v1.server.ndjson")).expect("fixture");
    fs::write(&big, one.repeat(40)).expect("write");
    for args in [&["route", "--all"][..], &["tree"], &["stats"]] {
        let mut child =
            swarmtop().args(args).arg(&big).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("read");
        // `| head -1`: the reader has its line and goes.
        let out = finish(child, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_truncated_gz_gives_the_figures_of_what_was_read_and_the_error() {
    let out = swarmtop().args(["stats", "--json"]).arg(fixture("hostile/truncated.ndjson.gz")).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("figures on stdout");
    assert!(stats["input"]["lines"].as_u64().is_some_and(|n| n > 10), "{stats}");
    assert!(stderr(&out).contains("truncated.ndjson.gz"), "{}", stderr(&out));
}

#[test]
fn a_byte_order_mark_does_not_make_the_first_line_malformed() {
    let out = swarmtop().args(["stats", "--json"]).arg(fixture("hostile/bom.jsonl")).output().expect("run");
    assert!(out.status.success());
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(stats["routing"]["malformed"], 0, "{stats}");
    assert_eq!(stats["threads"].as_array().map(Vec::len), Some(1), "{stats}");
}

#[test]
fn links_back_up_a_directory_are_walked_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::copy(fixture("codex-0.171.0/probe.server.ndjson"), dir.path().join("probe.ndjson")).expect("copy");
    std::os::unix::fs::symlink(".", dir.path().join("a")).expect("symlink");
    std::os::unix::fs::symlink(".", dir.path().join("b")).expect("symlink");
    let child = swarmtop()
        .args(["stats", "--json"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = finish(child, Duration::from_secs(20));
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let alone =
        swarmtop().args(["stats", "--json"]).arg(fixture("codex-0.171.0/probe.server.ndjson")).output().expect("run");
    let alone: serde_json::Value = serde_json::from_slice(&alone.stdout).expect("JSON");
    assert_eq!(stats["input"], alone["input"], "the file is read once");
}

// ---------------------------------------------------------------------------------------------
// Live sources: peers that are not a tee, partial sessions, bounds

/// A fake peer on a private socket, serving one connection with `serve`.
fn fake_peer(serve: impl FnOnce(UnixStream) + Send + 'static) -> (tempfile::TempDir, PathBuf) {
    let (runtime, dir) = runtime_dir();
    let path = dir.join("tee-1.sock");
    let listener = bind_private(&path);
    std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            serve(stream);
        }
    });
    (runtime, path)
}

fn attach_headless(path: &Path) -> Child {
    swarmtop()
        .args(["attach", "--headless"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

#[test]
fn attach_headless_says_when_its_figures_are_partial() {
    let record =
        b"{\"ts\":5,\"dir\":\"s2c\",\"msg\":{\"method\":\"thread/started\",\"params\":{\"thread\":{\"id\":\"t\"}}}}\n";
    let (_keep, path) = fake_peer(move |mut s| {
        let _ = s.write_all(HEADER);
        let _ = s.write_all(record);
        let _ = s.write_all(b"{\"swarmtop\":\"live\"}\n{\"ts\":6,\"dir\":\"s2c\",\"msg\":{\"meth");
        // Dropped mid-record, without a lagged or end marker.
    });
    let out = finish(attach_headless(&path), Duration::from_secs(20));
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("partial"), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the figures so far");
    assert_eq!(stats["input"]["lines"], 3, "header, record, and the torn record: {stats}");
    assert_eq!(stats["routing"]["malformed"], 1, "the torn record is counted: {stats}");

    let (_keep, path) = fake_peer(move |mut s| {
        let _ = s.write_all(HEADER);
        let _ = s.write_all(record);
        let _ = s.write_all(b"{\"swarmtop\":\"live\"}\n{\"swarmtop\":\"end\",\"exitCode\":0}\n");
    });
    let out = finish(attach_headless(&path), Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "a whole session: {}", stderr(&out));
}

#[test]
fn a_peer_that_is_not_a_tee_gets_a_clear_error_within_the_timeout() {
    type Serve = Box<dyn FnOnce(UnixStream) + Send>;
    let cases: Vec<(&str, Serve)> = vec![
        (
            "sends nothing",
            Box::new(|s| {
                std::thread::sleep(Duration::from_secs(30));
                drop(s);
            }),
        ),
        ("closes at once", Box::new(drop)),
        (
            "never a newline",
            Box::new(|mut s| {
                let chunk = vec![b'x'; 1 << 16];
                while s.write_all(&chunk).is_ok() {}
            }),
        ),
        (
            "speaks something else",
            Box::new(|mut s| {
                let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n");
                std::thread::sleep(Duration::from_secs(30));
            }),
        ),
    ];
    for (what, serve) in cases {
        let (_keep, path) = fake_peer(serve);
        let started = Instant::now();
        let out = finish(attach_headless(&path), Duration::from_secs(15));
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: took {:?}", started.elapsed());
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        assert!(stderr(&out).contains("not a swarmtop tee"), "{what}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{what}: no figures");
    }
}

/// Peak resident memory of a process, from `/proc` (`VmHWM`), in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Sends `total` bytes without a newline.
fn endless_line(stream: &mut UnixStream, total: usize) {
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    while sent < total {
        if stream.write_all(&chunk).is_err() {
            return;
        }
        sent += chunk.len();
    }
}

#[test]
fn attach_to_a_peer_that_never_ends_its_line_stays_within_its_bound() {
    const TOTAL: usize = 192 << 20;
    let (_keep, path) = fake_peer(|mut s| {
        let _ = s.write_all(HEADER);
        let _ = s.write_all(b"{\"swarmtop\":\"live\"}\n");
        endless_line(&mut s, TOTAL);
        let _ = s.write_all(b"\n{\"swarmtop\":\"end\",\"exitCode\":0}\n");
    });
    let child = attach_headless(&path);
    let pid = child.id();
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut child = child;
    while child.try_wait().expect("try_wait").is_none() {
        peak = peak.max(peak_rss_mib(pid));
        assert!(Instant::now() < deadline, "attach did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(stats["routing"]["malformed"], 1, "one over-long line, counted once: {stats}");
    eprintln!("attach: peak RSS {peak} MiB for a {} MiB line without a newline", TOTAL >> 20);
    assert!(peak < 100, "peak RSS {peak} MiB: the line was buffered");
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).expect("a pid"))
}

struct Listen {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

fn listen_headless() -> Listen {
    let (dir, sockets) = runtime_dir();
    let socket = sockets.join("listen-test.sock");
    let child = swarmtop()
        .args(["listen", "--headless", "--socket"])
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("the listen socket", || UnixStream::connect(&socket).ok().map(drop));
    Listen { child, socket, _dir: dir }
}

#[test]
fn listen_limits_its_producers_and_tells_the_one_refused() {
    let listen = listen_headless();
    let mut producers: Vec<UnixStream> = Vec::new();
    // The probe in `listen_headless` has come and gone; fill every slot.
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..swarmtop::source::inbound::MAX_PRODUCERS {
        producers.push(UnixStream::connect(&listen.socket).expect("connect"));
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = UnixStream::connect(&listen.socket).expect("connect");
    extra.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut told = String::new();
    let _ = extra.read_to_string(&mut told);
    assert!(told.contains("too many producers"), "{told:?}");
    for p in &mut producers {
        p.write_all(b"{\"method\":\"x\"}\n").expect("write");
    }
    drop(producers);
    std::thread::sleep(Duration::from_millis(300));
    kill(pid_of(&listen.child), Signal::SIGINT).expect("kill");
    let out = finish(listen.child, Duration::from_secs(20));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("refused 1 producer"), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(stats["input"]["lines"], 1 + swarmtop::source::inbound::MAX_PRODUCERS as u64, "{stats}");
    assert!(!listen.socket.exists(), "the socket file is removed");
}

#[test]
fn listen_signals_remove_the_socket_and_a_producer_without_newlines_stays_bounded() {
    const TOTAL: usize = 160 << 20;
    for signal in [Signal::SIGQUIT, Signal::SIGTERM, Signal::SIGHUP] {
        let listen = listen_headless();
        let pid = listen.child.id();
        let mut peak = 0;
        if signal == Signal::SIGQUIT {
            let mut p = UnixStream::connect(&listen.socket).expect("connect");
            endless_line(&mut p, TOTAL);
            std::thread::sleep(Duration::from_millis(300));
            peak = peak_rss_mib(pid);
        }
        kill(pid_of(&listen.child), signal).expect("kill");
        let out = finish(listen.child, Duration::from_secs(20));
        assert!(out.status.success(), "{signal:?}: {}", stderr(&out));
        assert!(!listen.socket.exists(), "{signal:?}: the socket file is removed");
        if signal == Signal::SIGQUIT {
            let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            // Recorded in bounded pieces, counted once.
            assert_eq!(stats["routing"]["malformed"], 1, "{stats}");
            eprintln!("listen: peak RSS {peak} MiB for a {} MiB line without a newline", TOTAL >> 20);
            assert!(peak < 160, "peak RSS {peak} MiB");
        }
    }
}

#[test]
fn a_100_mib_line_counts_as_one_malformed_line_live_in_its_recording_and_in_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = b"{\"id\":1,\"result\":{}}\n".to_vec();
    input.resize(input.len() + (100 << 20), b'x');
    input.extend_from_slice(b"\n{\"id\":2,\"result\":{}}\n");
    let file = dir.path().join("big.ndjson");
    fs::write(&file, &input).expect("write");
    let malformed = |out: &Output| -> serde_json::Value {
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        stats["routing"]["malformed"].clone()
    };
    let out = swarmtop().args(["stats", "--json"]).arg(&file).output().expect("run");
    assert_eq!(malformed(&out), 1, "stats on the input");

    let recording = dir.path().join("listen.ndjson");
    let (_runtime, sockets) = runtime_dir();
    let socket = sockets.join("listen-big.sock");
    let child = swarmtop()
        .args(["listen", "--headless", "--record"])
        .arg(&recording)
        .arg("--socket")
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("the listen socket", || socket.exists().then_some(()));
    let mut producer = UnixStream::connect(&socket).expect("connect");
    producer.write_all(&input).expect("write");
    drop(producer);
    wait_for("the recording", || (fs::metadata(&recording).ok()?.len() > 130 << 20).then_some(()));
    std::thread::sleep(Duration::from_millis(500));
    kill(pid_of(&child), Signal::SIGINT).expect("kill");
    let out = finish(child, Duration::from_secs(60));
    assert_eq!(malformed(&out), 1, "live: {}", stderr(&out));
    let out = swarmtop().args(["stats", "--json"]).arg(&recording).output().expect("run");
    assert_eq!(malformed(&out), 1, "stats on the recording");
}

/// A followed file gains a line longer than the bound on one line (`files::MAX_LINE`) and lines
/// after it: the long one is one malformed line, sampled for the diagnostics view, and reading
/// goes on after it. The follower read at most 8 MiB a look and waited for a newline in it: the
/// file stalled there for good, nothing after the long line ever shown.
#[test]
fn a_followed_line_over_the_bound_is_counted_and_reading_goes_on_after_it() {
    const STARTED: &str =
        r#"{"method":"thread/started","params":{"thread":{"id":"T","parentThreadId":null,"model":"gpt-5.5"}}}"#;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("growing.ndjson");
    fs::write(&file, format!("{}\n", STARTED.replace('T', "before"))).expect("write");
    let mut follow = swarmtop::commands::Follow::start(std::slice::from_ref(&file), Config::default()).expect("follow");
    assert_eq!(follow.poll(), 0, "nothing new yet");
    let mut long = br#"{"method":"item/agentMessage/delta","params":{"threadId":"before","delta":""#.to_vec();
    long.resize(long.len() + swarmtop::source::files::MAX_LINE + (1 << 20), b'x');
    long.extend_from_slice(b"\"}}\n");
    let after = format!("{}\n", STARTED.replace('T', "after"));
    fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(&long).and_then(|()| f.write_all(after.as_bytes())))
        .expect("append");
    // The follower reads a file in pieces, a look each: some looks to get past 17 MiB.
    for _ in 0..8 {
        follow.poll();
    }
    let p = &follow.pipeline;
    assert!(p.find("after").is_some(), "the line after the long one is read");
    assert_eq!(p.counters().malformed, 1, "the long line is one malformed line");
    let sample = p.model.diagnostics.malformed.back().expect("a sample for the diagnostics view");
    assert!(sample.head.as_str().starts_with(r#"{"method":"item/agentMessage/delta""#), "{sample:?}");
    assert!(sample.reason.contains(&(long.len() - 1).to_string()), "its length: {sample:?}");
}

// ---------------------------------------------------------------------------------------------
// The recording fails (disk full)

#[test]
fn after_the_recording_fails_a_late_monitor_still_gets_the_whole_session() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "prlimit (util-linux) is needed in CI");
        eprintln!("SKIPPED: prlimit is not installed");
        return;
    }
    let (runtime, sockets) = runtime_dir();
    let socket = sockets.join("tee-full.sock");
    let recording = runtime.path().join("r.ndjson");
    // A file size limit is a disk that fills up at 30 kB: writes past it fail (EFBIG), the one
    // crossing it lands part-way. SIGXFSZ is ignored so that the write fails instead of killing.
    let script = format!(
        "trap '' XFSZ; exec prlimit --fsize=30000 {BIN} tee --socket '{}' --record '{}' -- cat",
        socket.display(),
        recording.display()
    );
    let mut tee = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("the tee socket", || socket.exists().then_some(()));
    let mut input = tee.stdin.take().expect("stdin");
    const LINES: usize = 120;
    // In batches, so that the tee records some before the disk is full.
    for i in 0..LINES {
        writeln!(input, "{{\"method\":\"x/y\",\"params\":{{\"i\":{i},\"pad\":\"{}\"}}}}", "p".repeat(500))
            .expect("write");
        if i % 8 == 7 {
            input.flush().expect("flush");
            std::thread::sleep(Duration::from_millis(40));
        }
    }
    input.flush().expect("flush");
    wait_for("the recording to fill", || (fs::metadata(&recording).ok()?.len() >= 20_000).then_some(()));
    std::thread::sleep(Duration::from_millis(300));
    let monitor = attach_headless(&socket);
    std::thread::sleep(Duration::from_millis(500));
    drop(input);
    let out = finish(monitor, Duration::from_secs(30));
    let tee_out = finish(tee, Duration::from_secs(30));
    assert!(stderr(&tee_out).contains("cannot write the recording"), "{}", stderr(&tee_out));
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // `cat` echoes: every line is recorded going in (c2s) and coming back (s2c).
    assert_eq!(stats["input"]["lines"], 1 + 2 * LINES as u64, "header and every line, no gap: {stats}");
    assert_eq!(stats["routing"]["global"], LINES as u64, "{stats}");
    let file = fs::read(&recording).expect("recording");
    assert!(file.len() < 30_000 && file.ends_with(b"\n"), "the recording ends on a whole record");
    for line in file.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<serde_json::Value>(line).expect("every record is whole");
    }
}

// ---------------------------------------------------------------------------------------------
// Signals to the monitor, in a real terminal

#[test]
fn sigint_and_sigquit_to_the_monitor_restore_the_terminal() {
    // Taken as a request to quit, like `q` (and SIGTERM, tested in tests/terminal.rs): exit 0.
    for signal in [Signal::SIGINT, Signal::SIGQUIT] {
        let Some(t) = Tmux::start(&format!("{signal:?}"), 120, 40, &watched("demo")) else { return };
        let pid = wait_for("the monitor", || {
            let on = t.format("#{alternate_on}") == "1";
            on.then(|| t.child_pid()).flatten()
        });
        kill(Pid::from_raw(pid), signal).expect("kill");
        wait_for("the exit", || t.screen().contains("EXIT=").then_some(()));
        let screen = t.screen();
        assert!(screen.contains("TTY=restored"), "{signal:?}: {screen}");
        assert!(screen.contains("EXIT=0"), "{signal:?}: {screen}");
        assert_eq!(t.format("#{alternate_on}"), "0", "{signal:?}: left the alternate screen");
        assert_eq!(t.format("#{mouse_any_flag}#{mouse_button_flag}#{mouse_standard_flag}"), "000", "{signal:?}: mouse");
    }
}

#[test]
fn sigint_to_listen_on_a_screen_restores_the_terminal_and_removes_the_socket() {
    let (_dir, sockets) = runtime_dir();
    let socket = sockets.join("listen-screen.sock");
    let Some(t) = Tmux::start("listen", 120, 40, &watched(&format!("listen --socket {}", socket.display()))) else {
        return;
    };
    let pid = wait_for("the monitor", || {
        let on = t.format("#{alternate_on}") == "1" && socket.exists();
        on.then(|| t.child_pid()).flatten()
    });
    kill(Pid::from_raw(pid), Signal::SIGINT).expect("kill");
    wait_for("the exit", || t.screen().contains("EXIT=").then_some(()));
    assert!(t.screen().contains("TTY=restored"), "{}", t.screen());
    assert!(!socket.exists(), "the socket file is removed");
}

// ---------------------------------------------------------------------------------------------
// Every hostile input through every consumer

fn hostile_inputs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(fixture("hostile"))
        .expect("tests/fixtures/hostile")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_hostile_input_goes_through_stats_tree_route_and_the_screen_with_figures_conserved() {
    let inputs = hostile_inputs();
    assert!(inputs.len() >= 3, "{inputs:?}");
    for input in inputs {
        let name = input.display().to_string();
        let mut routed = Vec::new();
        let mut writer = RouteWriter::new(&mut routed, true);
        let (pipeline, _error) = ingest_partial(std::slice::from_ref(&input), Config::default(), &mut writer)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = pipeline.counters();
        assert!(c.conserved(), "{name}: {c:?}");
        assert_eq!(c.early, c.replayed + c.evicted + c.pending_at_end, "{name}: {c:?}");
        assert_eq!(
            routed.iter().filter(|&&b| b == b'\n').count() as u64,
            c.lines,
            "{name}: route --all prints every line"
        );
        let json: serde_json::Value = serde_json::from_str(&stats::render_json(&pipeline)).expect("JSON");
        assert_eq!(json["threads"].as_array().map(Vec::len), Some(pipeline.model.threads.len()), "{name}");
        let text = tree::render_tree(&pipeline.model);
        assert!(stats::render_text(&pipeline).ends_with(&text), "{name}");
        let counters = pipeline.counters();
        let feed =
            Feed { source: swarmtop::wire::sanitize_line(&name), now_ms: pipeline.model.stream_ms, ..Feed::default() };
        let mut view = View::with_theme(Theme::dark());
        let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
        term.draw(|f| ui::render(f, &pipeline.model, &counters, &feed, &mut view)).expect("draw");
        for cell in term.backend().buffer().content() {
            assert!(!cell.symbol().chars().any(char::is_control), "{name}: control character on screen");
        }
    }
}

#[test]
fn names_in_the_header_are_sanitised() {
    let (pipeline, _) = ingest_partial(
        &[fixture("codex-0.171.0/probe.server.ndjson")],
        Config::default(),
        &mut |_: &swarmtop::router::Event<'_, '_>| {},
    )
    .expect("ingest");
    let feed = Feed {
        source: swarmtop::wire::sanitize_line("attach: tee-\x1b]0;pwned\x07\u{2028}x.sock"),
        connection: Some(swarmtop::wire::sanitize_line("connected: /tmp/\x1b[2J\u{e0041}y.sock")),
        live: true,
        ..Feed::default()
    };
    let mut view = View::with_theme(Theme::dark());
    let mut term = Terminal::new(TestBackend::new(160, 40)).expect("terminal");
    let counters = pipeline.counters();
    term.draw(|f| ui::render(f, &pipeline.model, &counters, &feed, &mut view)).expect("draw");
    let screen = format!("{}", term.backend());
    for cell in term.backend().buffer().content() {
        let bad = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{e0000}'..='\u{e007f}');
        assert!(!cell.symbol().chars().any(bad), "{:?} on screen:\n{screen}", cell.symbol());
    }
    assert!(screen.contains("tee-"), "{screen}");
}
