//! Helpers of the OTLP end-to-end tests: the pinned third-party receiver `oteltap` (PyPI, installed
//! into `.cache/` by `scripts/setup-oteltap.sh`; `SWARMTOP_OTELTAP_BIN` overrides it), and the
//! checks of received spans against `stats --json` of the same input.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn swarmtop() -> Command {
    Command::new(env!("CARGO_BIN_EXE_swarmtop"))
}

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// The oteltap CLI, or why there is none (a skip outside CI).
pub fn oteltap_bin() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SWARMTOP_OTELTAP_BIN") {
        return Some(PathBuf::from(bin));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-oteltap.sh");
    let out = Command::new("bash").arg(&script).output().expect("running scripts/setup-oteltap.sh");
    if out.status.success() {
        return Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let python = Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(
        python && std::env::var_os("CI").is_none(),
        "scripts/setup-oteltap.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("SKIPPED: python3 is missing, so scripts/setup-oteltap.sh cannot install oteltap");
    None
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running oteltap; its stdout (one span per line) goes to a file the test reads.
pub struct Tap {
    pub child: Child,
    pub out: PathBuf,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Tap {
    pub fn start(bin: &Path, port: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("spans.ndjson");
        let child = Command::new(bin)
            .args(["--port", &port.to_string()])
            .env("PYTHONUNBUFFERED", "1")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting oteltap");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "oteltap did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, out, port, _dir: dir }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Value> {
        let file = std::fs::File::open(&self.out).unwrap();
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.starts_with('{'))
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .filter(|v| v.get("spanId").is_some())
            .collect()
    }

    /// Waits until at least `n` spans arrived (oteltap prints as it decodes), then returns them all.
    pub fn wait_for(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans();
            if spans.len() >= n {
                // Anything beyond `n` would be a duplicate the test must see too.
                std::thread::sleep(Duration::from_millis(300));
                return self.spans();
            }
            assert!(Instant::now() < deadline, "only {} of {n} spans arrived", spans.len());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn stats(inputs: &[PathBuf]) -> Value {
    let out = swarmtop().arg("stats").arg("--json").args(inputs).output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `swarmtop export`, returning its exit status and stderr.
pub fn export(args: &[&str], inputs: &[PathBuf]) -> (bool, String) {
    let out = swarmtop().arg("export").args(args).args(inputs).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key).map(|a| &a["value"])
}

pub fn attr_str<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    attr(span, key)?.get("stringValue")?.as_str()
}

/// OTLP/JSON carries 64-bit integers as strings.
pub fn attr_int(span: &Value, key: &str) -> Option<u64> {
    let v = attr(span, key)?.get("intValue")?;
    v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64())
}

/// Checks received spans against `stats --json` of the same input.
pub fn check_tree(spans: &[Value], stats: &Value) {
    let threads = stats["threads"].as_array().unwrap();
    let by_span: HashMap<&str, &Value> = spans.iter().map(|s| (s["spanId"].as_str().unwrap(), s)).collect();
    assert_eq!(by_span.len(), spans.len(), "span ids are unique");
    let agents: Vec<&Value> =
        spans.iter().filter(|s| attr_str(s, "gen_ai.operation.name") == Some("invoke_agent")).collect();
    assert_eq!(agents.len(), threads.len(), "one invoke_agent span per thread");
    let agent_of: HashMap<&str, &Value> =
        agents.iter().map(|s| (attr_str(s, "gen_ai.agent.id").expect("gen_ai.agent.id"), *s)).collect();
    assert_eq!(agent_of.len(), threads.len(), "distinct agents");
    for t in threads {
        let id = t["id"].as_str().unwrap();
        let span = agent_of.get(id).unwrap_or_else(|| panic!("no invoke_agent span for {id}"));
        assert_eq!(span["name"].as_str().unwrap(), format!("invoke_agent {}", t["name"].as_str().unwrap()));
        assert_eq!(attr_str(span, "gen_ai.conversation.id"), Some(id));
        let tokens = &t["tokens"];
        assert_eq!(attr_int(span, "gen_ai.usage.input_tokens"), tokens["input"].as_u64(), "{id} input");
        assert_eq!(attr_int(span, "gen_ai.usage.output_tokens"), tokens["output"].as_u64(), "{id} output");
        assert_eq!(attr_int(span, "gen_ai.usage.cache_read.input_tokens"), tokens["cachedInput"].as_u64());
        assert_eq!(attr_int(span, "gen_ai.usage.reasoning.output_tokens"), tokens["reasoningOutput"].as_u64());
        assert_eq!(attr_int(span, "swarmtop.subtree.threads"), t["subtree"]["threads"].as_u64());
        assert_eq!(attr(span, "swarmtop.cost_usd").is_none(), t["costUsd"].is_null(), "{id} priced");
        // Parentage: the parent's spawn tool call, whose own parent is the parent's agent span.
        let parent_span = span["parentSpanId"].as_str().unwrap_or("");
        match t["parent"].as_str() {
            None => assert!(parent_span.is_empty(), "{id} is a root"),
            Some(parent) => {
                let parent_agent = agent_of[parent]["spanId"].as_str().unwrap();
                let via = by_span.get(parent_span).unwrap_or_else(|| panic!("{id}'s parent span was not sent"));
                if parent_span != parent_agent {
                    assert_eq!(attr_str(via, "gen_ai.operation.name"), Some("execute_tool"));
                    assert!(matches!(attr_str(via, "gen_ai.tool.name"), Some("spawn_agent" | "Task" | "Agent")));
                    assert_eq!(via["parentSpanId"].as_str(), Some(parent_agent), "{id}'s spawn is its parent's");
                    assert_eq!(attr_str(via, "gen_ai.tool.call.id"), t["card"].as_str());
                }
            }
        }
        // One trace per session.
        if let Some(root) = t["root"].as_str() {
            assert_eq!(span["traceId"], agent_of[root]["traceId"], "{id} is in its root's trace");
        }
    }
    // Where an agent's usage is known response by response (Claude Code), its `chat` spans add up to it.
    for t in threads {
        let id = t["id"].as_str().unwrap();
        let chats: Vec<&Value> = spans
            .iter()
            .filter(|s| {
                attr_str(s, "gen_ai.operation.name") == Some("chat") && attr_str(s, "gen_ai.agent.id") == Some(id)
            })
            .collect();
        if chats.is_empty() {
            continue;
        }
        for (attr_key, key) in [("gen_ai.usage.input_tokens", "input"), ("gen_ai.usage.output_tokens", "output")] {
            let sum: u64 = chats.iter().filter_map(|s| attr_int(s, attr_key)).sum();
            assert_eq!(Some(sum), t["tokens"][key].as_u64(), "{id}: chat spans' {attr_key}");
        }
        assert_eq!(chats[0]["parentSpanId"], agent_of[id]["spanId"], "a chat span hangs from its agent");
        assert!(chats.iter().all(|s| s["name"].as_str().unwrap().starts_with("chat")));
    }
    // The agents' usage adds up to the totals.
    for (attr_key, total_key) in [("gen_ai.usage.input_tokens", "input"), ("gen_ai.usage.output_tokens", "output")] {
        let sum: u64 = agents.iter().filter_map(|s| attr_int(s, attr_key)).sum();
        assert_eq!(Some(sum), stats["totals"]["tokens"][total_key].as_u64(), "{attr_key} sums to the total");
    }
    // Every tool call hangs from an agent of the same trace.
    for s in spans {
        let parent = s["parentSpanId"].as_str().unwrap_or("");
        if !parent.is_empty() {
            let p = by_span.get(parent).unwrap_or_else(|| panic!("{} has an unsent parent", s["name"]));
            assert_eq!(p["traceId"], s["traceId"]);
        }
    }
}

pub fn ids_of(spans: &[Value]) -> HashSet<(String, String)> {
    spans
        .iter()
        .map(|s| (s["traceId"].as_str().unwrap().to_owned(), s["spanId"].as_str().unwrap().to_owned()))
        .collect()
}

/// A headless `swarmtop listen --otlp` on a free loopback port.
pub struct Listener {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Listener {
    pub fn start(extra: &[&str]) -> Self {
        Self::start_at("127.0.0.1", extra)
    }

    /// Listening on `host` (`0.0.0.0`: every address), reached on loopback.
    pub fn start_at(host: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let socket = dir.path().join("listen.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
            .args(["listen", "--headless", "--socket", socket.to_str().unwrap(), "--otlp", &format!("{host}:{port}")])
            .args(extra)
            // The token the receiver makes for other senders stays in the test's folder.
            .env("XDG_DATA_HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "listen --otlp never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port, dir }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The bearer token the receiver made for senders other than us.
    pub fn token(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("swarmtop/otlp-token")).unwrap().trim().to_owned()
    }

    /// Ctrl-C: the headless listener prints `stats --json` of what it received.
    pub fn stop(mut self) -> (Value, String) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let mut out = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(self.child.wait().unwrap().success(), "{err}");
        (serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")), err)
    }
}

/// A test that fails before `stop` leaves no listener behind.
impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What both views of one session must agree on, thread by thread.
pub fn tree(stats: &Value) -> Vec<(String, Value, Value, Value, Value, Value)> {
    let mut rows: Vec<_> = stats["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["parent"].clone(),
                t["name"].clone(),
                t["tokens"].clone(),
                t["status"].clone(),
                t["costUsd"].clone(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}
