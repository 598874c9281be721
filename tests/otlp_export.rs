//! `swarmtop export` end to end against a real third-party OTLP receiver, `oteltap` (PyPI, pinned
//! in `scripts/setup-oteltap.sh`, which installs it into the git-ignored `.cache/`). oteltap prints
//! every span it receives as one OTLP/JSON line; the tests read those lines back and check them
//! against `stats --json` of the same input: one `invoke_agent` span per thread, parentage equal
//! to the tree, token attributes equal to each agent's totals, the same ids on re-export, and
//! nothing lost when the collector comes up late.
//!
//! `SWARMTOP_OTELTAP_BIN` overrides the receiver. Without python3 the tests skip loudly; with `CI`
//! set they fail instead.

mod otlp;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use otlp::{Tap, attr_str, check_tree, export, fixture, free_port, ids_of, oteltap_bin, stats, swarmtop};
use serde_json::Value;

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

/// Claude Code states usage per API response: those are `chat` spans under their agent.
#[test]
fn responses_are_chat_spans() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("claude.jsonl");
    let (ok, err) = export(&["--otlp-file", file.to_str().unwrap()], &inputs_of("claude"));
    assert!(ok, "{err}");
    let spans = file_spans(&file);
    let chats = spans.iter().filter(|s| attr_str(s, "gen_ai.operation.name") == Some("chat")).count();
    assert!(chats > 10, "{chats} chat spans");
    check_tree(&spans, &stats(&inputs_of("claude")));
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
    // While it retried it said so once, with the cause, before its summary.
    let (notice, summary) = err.trim_end().split_once('\n').unwrap_or_else(|| panic!("{err}"));
    assert!(notice.contains("connection refused; retrying for up to 60s (--wait)"), "{err}");
    let n: usize = summary.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap();
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
    assert_eq!(err.matches("retrying for up to 1s").count(), 1, "said once, while it waited: {err}");
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
