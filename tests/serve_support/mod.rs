//! A real `swarmtop serve` on loopback for the tests, in a home of its own, and a small HTTP
//! client that reads its answers and its event streams as a browser would.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Daemon {
    pub child: Child,
    pub addr: String,
    _stdout: BufReader<ChildStdout>,
}

impl Daemon {
    /// `swarmtop serve` with `home` as its home and store, on a free loopback port.
    pub fn start(home: &Path, extra: &[&str]) -> Self {
        Self::start_on(home, "127.0.0.1:0", extra)
    }

    /// The same on `listen`.
    pub fn start_on(home: &Path, listen: &str, extra: &[&str]) -> Self {
        Self::start_with(home, listen, "300ms", extra)
    }

    /// The same, its store brought up to date every `sync_every`.
    pub fn start_with(home: &Path, listen: &str, sync_every: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
            .args(["serve", "--listen", listen, "--all", "--sync-every", sync_every])
            .args(extra)
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TZ", "UTC")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("swarmtop serve starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("swarmtop serve: http://").unwrap_or_else(|| panic!("{line}")).to_owned();
        Self { child, addr, _stdout: stdout }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        get(&self.addr, path, &[])
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }

    pub fn events(&self, last_id: Option<u64>) -> Events {
        Events::open(&self.addr, last_id)
    }

    /// Waits until `/api/status` says what `ok` wants.
    pub fn wait_status(&self, what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.json("/api/status");
            if ok(&status) {
                return status;
            }
            assert!(Instant::now() < until, "waited a minute for {what}: {status}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, and the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request on a connection of its own: the status and the body.
pub fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let extra = headers.iter().fold(String::new(), |mut out, (k, v)| {
        let _ = write!(out, "{k}: {v}\r\n");
        out
    });
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, body.to_owned())
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<u64>,
    pub kind: String,
    pub data: serde_json::Value,
}

/// An open `/api/events` stream (chunked), read event by event.
pub struct Events {
    reader: BufReader<TcpStream>,
    /// Decoded body bytes not yet split into lines, from `at` on.
    body: Vec<u8>,
    at: usize,
}

impl Events {
    pub fn open(addr: &str, last_id: Option<u64>) -> Self {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let last = last_id.map(|id| format!("Last-Event-ID: {id}\r\n")).unwrap_or_default();
        write!(s, "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{last}\r\n").unwrap();
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains(" 200 "), "{line}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        Self { reader, body: Vec::new(), at: 0 }
    }

    /// The socket, to read nothing from it for a while (a stalled client).
    pub fn socket(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    fn chunk(&mut self) {
        let mut size = String::new();
        self.reader.read_line(&mut size).unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or_else(|_| panic!("chunk size {size:?}"));
        assert!(n > 0, "the stream ended");
        let mut data = vec![0; n + 2];
        self.reader.read_exact(&mut data).unwrap();
        data.truncate(n);
        // What was read is dropped only now: dropping it event by event moved the rest of a
        // 64 KiB chunk for every event.
        self.body.drain(..self.at);
        self.at = 0;
        self.body.extend(data);
    }

    /// The next event (comments and `retry:` skipped).
    pub fn next(&mut self) -> Event {
        let raw = self.next_raw();
        Event {
            id: raw.id,
            kind: raw.kind.to_owned(),
            data: serde_json::from_str(raw.data).unwrap_or_else(|e| panic!("{e}: {}", raw.data)),
        }
    }

    /// The next event as it came, its data not parsed (a bench's ten clients parsing every
    /// event took as much of the machine as the daemon they measured).
    pub fn next_raw(&mut self) -> Raw<'_> {
        let (id, kind, data) = self.next_event();
        let text = |r: std::ops::Range<usize>| std::str::from_utf8(&self.body[r]).unwrap();
        Raw { id, kind: text(kind), data: text(data) }
    }

    /// The next event's number, and where its kind and data lie in `body` (comments and
    /// `retry:` skipped).
    fn next_event(&mut self) -> (Option<u64>, std::ops::Range<usize>, std::ops::Range<usize>) {
        loop {
            let Some(end) = memchr::memmem::find(&self.body[self.at..], b"\n\n") else {
                self.chunk();
                continue;
            };
            let mut at = self.at;
            self.at += end + 2;
            let (mut id, mut kind, mut data) = (None, None, None);
            for line in self.body[at..at + end].split(|&b| b == b'\n') {
                let value = |prefix: &[u8]| line.starts_with(prefix).then(|| at + prefix.len()..at + line.len());
                if let Some(v) = value(b"id: ") {
                    id = std::str::from_utf8(&self.body[v]).ok().and_then(|v| v.parse().ok());
                } else if let Some(v) = value(b"event: ") {
                    kind = Some(v);
                } else if let Some(v) = value(b"data: ") {
                    data = Some(v);
                }
                at += line.len() + 1;
            }
            if let (Some(kind), Some(data)) = (kind, data) {
                return (id, kind, data);
            }
        }
    }

    /// Events until one `until` accepts (it included).
    pub fn until(&mut self, until: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let e = self.next();
            let done = until(&e);
            out.push(e);
            if done {
                return out;
            }
        }
    }
}

/// One server-sent event as it came: its number, kind and data (JSON, not parsed).
#[derive(Debug, Clone, Copy)]
pub struct Raw<'a> {
    pub id: Option<u64>,
    pub kind: &'a str,
    pub data: &'a str,
}

/// The Claude Code project folder of a home.
pub fn claude_project(home: &Path) -> PathBuf {
    home.join(".claude/projects/-home-USER-projects-spotter-worktrees-spotter-dov")
}

// Claude Code transcript lines made to measure (the bench and the soak test): each assistant
// line adds 1 input and 1 output token to its session.

pub const PROJECT: &str = "-tmp-swarmtop-bench";

pub fn session_id(n: usize) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// A user prompt that opens session `n`.
pub fn opening(n: usize, at: &str) -> String {
    let id = session_id(n);
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/tmp/swarmtop-bench","sessionId":"{id}","version":"2.1.39","type":"user","message":{{"role":"user","content":"bench session {n}"}},"uuid":"{id}-u","timestamp":"{at}"}}
"#
    )
}

/// An assistant line of session `n`, the `i`-th: 1 input and 1 output token.
pub fn line(n: usize, i: u64, at: &str) -> String {
    let id = session_id(n);
    format!(
        r#"{{"parentUuid":"{id}-u","isSidechain":false,"userType":"external","cwd":"/tmp/swarmtop-bench","sessionId":"{id}","version":"2.1.39","message":{{"model":"claude-opus-4-6","id":"msg_bench_{n}_{i}","type":"message","role":"assistant","content":[{{"type":"text","text":"line {i}"}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}},"requestId":"req_bench_{n}_{i}","type":"assistant","uuid":"{id}-{i}","timestamp":"{at}"}}
"#
    )
}

pub fn transcript(home: &Path, n: usize) -> PathBuf {
    home.join(".claude/projects").join(PROJECT).join(format!("{}.jsonl", session_id(n)))
}

/// An address of this machine other than loopback, if it has one.
pub fn outside_address() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}
