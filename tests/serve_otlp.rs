//! `swarmtop serve --otlp`: the spawn trees the daemon follows leave as OTLP traces, checked by a
//! third-party receiver (oteltap) against `stats --json` of the same files: the same spans as
//! `swarmtop export` sends for them, each once, the last ones when the daemon stops.

mod otlp;
mod serve_support;
#[path = "store_support/mod.rs"]
mod store_support;

use otlp::{Tap, check_tree, free_port, ids_of, oteltap_bin};
use serve_support::{Daemon, claude_project};
use store_support::{Machine, fixtures};

/// Records in the Claude 2.1.39 fixture session (transcript and sub-agents).
const FIXTURE_RECORDS: u64 = 1661;

#[test]
fn the_daemon_exports_what_it_follows() {
    let Some(bin) = oteltap_bin() else { return };
    let files = fixtures().join("claude-2.1.39");
    let reference = Tap::start(&bin, free_port());
    let (ok, err) = otlp::export(&["--otlp", &reference.url()], std::slice::from_ref(&files));
    assert!(ok, "{err}");
    let expected = reference.wait_for(1).len();
    let tap = Tap::start(&bin, free_port());
    let m = Machine::new();
    std::fs::create_dir_all(claude_project(&m.home())).unwrap();
    let d = Daemon::start(&m.home(), &["--otlp", &tap.url()]);
    d.wait_status("caught up", |s| s["lastEventId"].as_u64() >= Some(1));
    m.with_claude();
    let status = d.wait_status("the session read", |s| s["records"].as_u64() == Some(FIXTURE_RECORDS));
    assert_eq!(status["export"]["target"].as_str().map(|t| t.starts_with(&tap.url())), Some(true), "{status}");
    assert!(d.stop().success());
    let spans = tap.wait_for(expected);
    assert_eq!(ids_of(&spans).len(), spans.len(), "each span once");
    assert_eq!(spans.len(), expected, "the spans export sends for the same files");
    check_tree(&spans, &otlp::stats(&[files]));
}
