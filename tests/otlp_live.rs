//! `--otlp` on the live paths, end to end against the pinned receiver `oteltap`: a `tee` session
//! exports its spawn tree as it runs (through its own socket, never in the pumps' way), equal to
//! `stats --json` of what it forwarded; a collector that comes up while the session runs loses
//! nothing; `attach --headless --otlp` exports what it watched.

mod otlp;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use otlp::{Tap, check_tree, fixture, free_port, oteltap_bin, stats, swarmtop};

/// `swarmtop tee --otlp URL -- sh -c SCRIPT`, the tee's stdout and stderr returned.
fn tee(dir: &Path, url: &str, script: &str) -> (bool, Vec<u8>, String) {
    let socket = dir.join("tee.sock");
    let out = swarmtop()
        .args(["tee", "--no-record", "--socket", socket.to_str().unwrap(), "--otlp", url, "--", "sh", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.success(), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn spans_in(err: &str) -> usize {
    let at = err.find("OTLP export: ").unwrap_or_else(|| panic!("no export summary: {err}"));
    err[at + 13..].split_whitespace().next().and_then(|n| n.parse().ok()).unwrap()
}

#[test]
fn a_tee_session_exports_its_tree_while_forwarding_byte_for_byte() {
    let Some(bin) = oteltap_bin() else { return };
    for name in ["collab_v1", "collab_v2", "fail"] {
        let capture = fixture(&format!("codex-0.171.0/{name}.server.ndjson"));
        let tap = Tap::start(&bin, free_port());
        let dir = tempfile::tempdir().unwrap();
        let (ok, out, err) = tee(dir.path(), &tap.url(), &format!("cat '{}'", capture.display()));
        assert!(ok, "{err}");
        assert_eq!(out, std::fs::read(&capture).unwrap(), "forwarded byte for byte");
        assert!(err.contains(" 0 retried, 0 dropped, 0 rejected"), "{err}");
        let spans = tap.wait_for(spans_in(&err));
        check_tree(&spans, &stats(&[capture]));
    }
}

/// The collector starts a second into the session: spans that ended before are retried with
/// backoff and arrive; none is dropped.
#[test]
fn a_collector_that_comes_up_during_a_session_loses_nothing() {
    let Some(bin) = oteltap_bin() else { return };
    let capture = fixture("codex-0.171.0/collab_v1.server.ndjson");
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let script = format!("cat '{}'; sleep 4", capture.display());
    let session = std::thread::spawn({
        let dir = dir.path().to_owned();
        move || tee(&dir, &url, &script)
    });
    std::thread::sleep(Duration::from_millis(1200));
    let tap = Tap::start(&bin, port);
    let (ok, _, err) = session.join().unwrap();
    assert!(ok, "{err}");
    assert!(err.contains(" 0 dropped, 0 rejected"), "{err}");
    let spans = tap.wait_for(spans_in(&err));
    check_tree(&spans, &stats(&[capture]));
}

/// `attach --headless --otlp` exports what it watched, and prints `stats --json` as before.
#[test]
fn attach_exports_what_it_watches() {
    let Some(bin) = oteltap_bin() else { return };
    let capture = fixture("codex-0.171.0/collab_v2.server.ndjson");
    let tap = Tap::start(&bin, free_port());
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("tee.sock");
    let mut session = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .args(["tee", "--no-record", "--socket", socket.to_str().unwrap(), "--", "sh", "-c"])
        .arg(format!("sleep 1; cat '{}'; sleep 1", capture.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    while !socket.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = swarmtop().args(["attach", "--headless", "--otlp", &tap.url()]).arg(&socket).output().unwrap();
    assert!(session.wait().unwrap().success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = stats(&[capture]);
    assert_eq!(printed["threads"], expected["threads"]);
    let spans = tap.wait_for(spans_in(&err));
    check_tree(&spans, &expected);
}
