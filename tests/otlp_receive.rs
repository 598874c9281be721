//! `swarmtop listen --otlp`: OTLP/HTTP in. swarmtop's own exports of every capture, received by
//! another swarmtop, rebuild the same tree (parents, names, tokens, statuses, costs) that `stats
//! --json` reads from the capture itself; over protobuf and JSON; what is not OTLP is refused with
//! the right status and counted; an address other machines can reach is announced loudly.

mod otlp;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use otlp::{Listener, fixture, stats, tree};

fn round_trip(inputs: &[PathBuf], protocol: &str) {
    let listener = Listener::start(&[]);
    let out = otlp::swarmtop()
        .args(["export", "--otlp", &listener.url()])
        .args(inputs)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Received requests are applied as they arrive; give the last one a moment.
    std::thread::sleep(Duration::from_millis(300));
    let (received, _) = listener.stop();
    assert_eq!(received["input"]["format"], "otlp");
    assert_eq!(received["routing"]["malformed"], 0);
    assert_eq!(received["routing"]["pendingAtEnd"], 0);
    assert_eq!(tree(&received), tree(&stats(inputs)), "the received tree is the exported one");
}

#[test]
fn every_capture_round_trips_over_protobuf() {
    for name in ["probe", "retry", "fail", "collab_v1", "collab_v2"] {
        round_trip(&[fixture(&format!("codex-0.171.0/{name}.server.ndjson"))], "http/protobuf");
    }
    round_trip(&[fixture("codex-0.171.0/rollouts/collab_v1")], "http/protobuf");
}

#[test]
fn a_claude_code_session_round_trips_over_json() {
    round_trip(&[fixture("claude-2.1.39")], "http/json");
}

fn post(url: &str, content_type: &str, body: &[u8]) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    agent.post(url).header("Content-Type", content_type).send(body).map_or(0, |r| r.status().as_u16())
}

#[test]
fn what_is_not_otlp_is_refused_and_counted_never_fatal() {
    let listener = Listener::start(&[]);
    let base = listener.url();
    assert_eq!(post(&format!("{base}/v1/traces"), "text/plain", b"hello"), 415);
    assert_eq!(post(&format!("{base}/v1/traces"), "application/x-protobuf", b"\xff\xff\xff"), 400);
    assert_eq!(post(&format!("{base}/v1/traces"), "application/json", b"{\"resourceSpans\":7}"), 400);
    assert_eq!(post(&format!("{base}/elsewhere"), "application/json", b"{}"), 404);
    assert_eq!(post(&format!("{base}/v1/traces"), "application/json", b"{}"), 200, "an empty export is fine");
    assert_eq!(post(&format!("{base}/v1/logs"), "application/json", b"{\"resourceLogs\":[]}"), 200);
    let (received, err) = listener.stop();
    assert_eq!(received["threads"].as_array().unwrap().len(), 0);
    assert!(err.contains("OTLP received: 6 requests, 0 spans, 0 log records, 4 refused"), "{err}");
}

#[test]
fn an_address_other_machines_reach_is_announced_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("l.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .args(["listen", "--headless", "--socket", socket.to_str().unwrap(), "--otlp", "0.0.0.0:0"])
        .env("XDG_DATA_HOME", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !Path::new(&socket).exists() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    child.wait().unwrap();
    assert!(err.contains("WARNING") && err.contains("other machines"), "{err}");
}

/// On every address, our own client on loopback is still ours: the owner is looked up by the
/// connection's own end, which the socket table lists, not by the listener's `0.0.0.0`.
#[test]
fn our_own_loopback_client_is_trusted_when_listening_on_every_address() {
    let listener = Listener::start_at("0.0.0.0", &[]);
    let base = listener.url();
    assert_eq!(post(&format!("{base}/v1/logs"), "application/json", b"{\"resourceLogs\":[]}"), 200);
    let (_, err) = listener.stop();
    assert!(err.contains("1 requests, 0 spans, 0 log records, 0 refused"), "{err}");
}

#[test]
fn a_bad_address_is_a_one_line_error() {
    let out = otlp::swarmtop().args(["listen", "--headless", "--otlp", "not-an-address"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an address"));
}

/// The real Claude Code 2.1.332's own telemetry (recorded by `listen --otlp`, see the fixtures'
/// README) gives the tree its transcripts of the same run give: the session, two children (one on
/// Haiku 5.5), a grandchild under the first child, each with the transcripts' tokens and costs, each
/// under its `Agent` tool call.
#[test]
fn claude_code_s_own_telemetry_gives_its_transcripts_tree() {
    let got = stats(&[fixture("claude-2.1.332-otlp/parallel.ndjson")]);
    assert_eq!(got["input"]["format"], "otlp");
    assert_eq!(got["routing"]["malformed"], 0);
    assert_eq!(got["routing"]["orphanThreads"], 0);
    let root = "186704b6-fe55-4bde-87c1-8707ee805505";
    // (id, parent, card, input, cached input, output, cost) as the run's transcripts say.
    type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, u64, u64, u64, Option<&'a str>);
    let expected: [Row<'_>; 4] = [
        (root, None, None, 12603, 10001, 201, Some("0.01427205")),
        ("afffc315eaa4bbe48", Some(root), Some("toolu_par_root_B"), 12645, 10015, 215, Some("0.000486025")),
        ("aaa661b9138568903", Some(root), Some("toolu_par_root_A"), 18927, 15009, 309, Some("0.02157345")),
        ("a8552f9dd7731f4fd", Some("aaa661b9138568903"), Some("toolu_par_A_A1"), 12633, 10011, 211, Some("0.01449255")),
    ];
    let threads = got["threads"].as_array().unwrap();
    assert_eq!(threads.len(), expected.len());
    for (id, parent, card, input, cached, output, cost) in expected {
        let t = threads.iter().find(|t| t["id"] == id).unwrap_or_else(|| panic!("no thread {id}"));
        assert_eq!(t["parent"].as_str(), parent, "{id}");
        assert_eq!(t["card"].as_str(), card, "{id}");
        assert_eq!(t["tokens"]["input"], input, "{id}");
        assert_eq!(t["tokens"]["cachedInput"], cached, "{id}");
        assert_eq!(t["tokens"]["output"], output, "{id}");
        assert_eq!(t["costUsd"].as_f64().map(|c| format!("{c}")), cost.map(str::to_owned), "{id}");
        // A session waits for its user; a sub-agent that answered is done (docs/status.md).
        assert_eq!(t["status"], if parent.is_some() { "done" } else { "idle" }, "{id}");
    }
}
