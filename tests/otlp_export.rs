//! `swarmtop export` end to end against a real third-party OTLP receiver, `oteltap` (PyPI, pinned
//! in `scripts/setup-oteltap.sh`, which installs it into the git-ignored `.cache/`). oteltap prints
//! every span it receives as one OTLP/JSON line; the tests read those lines back and check them
//! against `stats --json` of the same input: one `invoke_agent` span per thread, parentage equal
//! to the tree, token attributes equal to each agent's totals, the same ids on re-export, and
//! nothing lost when the collector comes up late.
//!
//! `SWARMTOP_OTELTAP_BIN` overrides the receiver. Without python3 the tests skip loudly; with `CI`
//! set they fail instead.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn swarmtop() -> Command {
    Command::new(env!("CARGO_BIN_EXE_swarmtop"))
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// The oteltap CLI, or why there is none (a skip outside CI).
fn oteltap_bin() -> Option<PathBuf> {
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running oteltap; its stdout (one span per line) goes to a file the test reads.
struct Tap {
    child: Child,
    out: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Tap {
    fn start(bin: &Path, port: u16) -> Self {
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

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received so far.
    fn spans(&self) -> Vec<Value> {
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
    fn wait_for(&self, n: usize) -> Vec<Value> {
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

fn stats(inputs: &[PathBuf]) -> Value {
    let out = swarmtop().arg("stats").arg("--json").args(inputs).output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `swarmtop export`, returning its exit status and stderr.
fn export(args: &[&str], inputs: &[PathBuf]) -> (bool, String) {
    let out = swarmtop().arg("export").args(args).args(inputs).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key).map(|a| &a["value"])
}

fn attr_str<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    attr(span, key)?.get("stringValue")?.as_str()
}

/// OTLP/JSON carries 64-bit integers as strings.
fn attr_int(span: &Value, key: &str) -> Option<u64> {
    let v = attr(span, key)?.get("intValue")?;
    v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64())
}

/// Checks received spans against `stats --json` of the same input.
fn check_tree(spans: &[Value], stats: &Value) {
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

fn ids_of(spans: &[Value]) -> HashSet<(String, String)> {
    spans
        .iter()
        .map(|s| (s["traceId"].as_str().unwrap().to_owned(), s["spanId"].as_str().unwrap().to_owned()))
        .collect()
}

fn inputs_of(case: &str) -> Vec<PathBuf> {
    match case {
        "claude" => vec![fixture("claude-2.1.39")],
        "collab_v1_rollouts" => vec![fixture("codex-0.171.0/rollouts/collab_v1")],
        name => vec![fixture(&format!("codex-0.171.0/{name}.server.ndjson"))],
    }
}

/// Exports one input twice to a fresh receiver: the tree is right and the second export repeats
/// the first one's ids exactly.
fn export_twice(case: &str) {
    let Some(bin) = oteltap_bin() else { return };
    let inputs = inputs_of(case);
    let stats = stats(&inputs);
    let tap = Tap::start(&bin, free_port());
    let (ok, err) = export(&["--otlp", &tap.url()], &inputs);
    assert!(ok, "{err}");
    let n: usize = err.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{err}"));
    assert!(err.contains(&format!("{n} sent, 0 retried, 0 dropped, 0 rejected")), "{err}");
    let first = tap.wait_for(n);
    assert_eq!(first.len(), n);
    check_tree(&first, &stats);
    let (ok, err) = export(&["--otlp", &tap.url()], &inputs);
    assert!(ok, "{err}");
    let both = tap.wait_for(2 * n);
    assert_eq!(both.len(), 2 * n);
    assert_eq!(ids_of(&both[n..]), ids_of(&first), "re-export gives the same ids");
}

#[test]
fn probe() {
    export_twice("probe");
}

#[test]
fn retry() {
    export_twice("retry");
}

#[test]
fn fail() {
    export_twice("fail");
}

#[test]
fn collab_v1() {
    export_twice("collab_v1");
}

#[test]
fn collab_v2() {
    export_twice("collab_v2");
}

#[test]
fn collab_v1_rollouts() {
    export_twice("collab_v1_rollouts");
}

#[test]
fn claude_code_transcript() {
    export_twice("claude");
}

/// A failed turn's agent span carries the error status.
#[test]
fn failures_set_the_span_status() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fail.jsonl");
    let (ok, err) = export(&["--otlp-file", file.to_str().unwrap()], &inputs_of("fail"));
    assert!(ok, "{err}");
    let spans = file_spans(&file);
    let agent = spans.iter().find(|s| attr_str(s, "gen_ai.operation.name") == Some("invoke_agent")).unwrap();
    assert_eq!(agent["status"]["code"], 2, "STATUS_CODE_ERROR");
    assert_eq!(attr_str(agent, "error.type"), Some("agent_failed"));
}

fn file_spans(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut spans = Vec::new();
    for line in text.lines() {
        let request: Value = serde_json::from_str(line).expect("each line is one OTLP/JSON request");
        for rs in request["resourceSpans"].as_array().unwrap() {
            assert!(rs["resource"]["attributes"].as_array().unwrap().iter().any(|a| a["key"] == "service.name"));
            for ss in rs["scopeSpans"].as_array().unwrap() {
                spans.extend(ss["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    spans
}

/// `--otlp-file` writes the same spans, with the same ids, as the collector receives.
#[test]
fn otlp_file_matches_what_the_collector_gets() {
    let Some(bin) = oteltap_bin() else { return };
    let inputs = inputs_of("collab_v2");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v2.jsonl");
    let (ok, err) = export(&["--otlp-file", file.to_str().unwrap()], &inputs);
    assert!(ok, "{err}");
    let from_file = file_spans(&file);
    check_tree(&from_file, &stats(&inputs));
    let tap = Tap::start(&bin, free_port());
    let (ok, err) = export(&["--otlp", &tap.url()], &inputs);
    assert!(ok, "{err}");
    let received = tap.wait_for(from_file.len());
    assert_eq!(ids_of(&received), ids_of(&from_file));
}

/// The collector is down when the export starts and comes up a little later: the export retries
/// with backoff and nothing within the queue bound is lost.
#[test]
fn a_collector_that_comes_up_late_loses_nothing() {
    let Some(bin) = oteltap_bin() else { return };
    let inputs = inputs_of("collab_v1");
    let port = free_port();
    let mut run = swarmtop()
        .args(["export", "--wait", "60s", "--otlp", &format!("http://127.0.0.1:{port}")])
        .args(&inputs)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let tap = Tap::start(&bin, port);
    let status = run.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(!err.contains(" 0 retried"), "the collector was down, so spans were retried: {err}");
    assert!(err.contains(" 0 dropped, 0 rejected"), "{err}");
    let n: usize = err.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap();
    let spans = tap.wait_for(n);
    assert_eq!(spans.len(), n);
    check_tree(&spans, &stats(&inputs));
}

/// A collector that never answers: the export gives up after `--wait` and says so with its status.
#[test]
fn spans_not_accepted_fail_the_export() {
    let port = free_port();
    let started = Instant::now();
    let (ok, err) = export(&["--wait", "1s", "--otlp", &format!("http://127.0.0.1:{port}")], &inputs_of("probe"));
    assert!(!ok, "{err}");
    assert!(err.contains(" 0 sent") && !err.contains(" 0 dropped"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn unsupported_endpoints_are_usage_errors_with_a_reason() {
    let (ok, err) = export(&["--otlp", "https://collector.example:4318"], &inputs_of("probe"));
    assert!(!ok);
    assert!(err.contains("plain http"), "{err}");
    let out = swarmtop()
        .args(["export", "--otlp", "http://127.0.0.1:9"])
        .args(inputs_of("probe"))
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gRPC"));
}
