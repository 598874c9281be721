//! Notifications from the real binary in a real terminal: tmux runs `swarmtop demo --notify
//! --notify-cmd CMD`, `pipe-pane` keeps every byte the monitor writes to its terminal, and CMD
//! appends what it reads on stdin to a file. The demo's failing child must make exactly one
//! desktop notification and one run of the command, as must the swarm finishing; nothing else in
//! the demo is worth telling. Needs tmux (installed by `scripts/test`); without it the test says
//! so and passes, except in CI.

use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/tmux.rs"]
mod tmux;

use tmux::Tmux;

/// The demo's failed child and its root, as `stats` names them (read, not hard-coded: the demo
/// can be re-recorded).
fn demo_threads() -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .args(["stats", "--json", concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")])
        .output()
        .expect("stats runs");
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats --json");
    let threads = stats["threads"].as_array().expect("threads");
    let id = |t: &serde_json::Value| t["id"].as_str().unwrap_or_default().to_owned();
    let failed = threads.iter().find(|t| t["status"] == "failed").map(id).expect("the demo has a failed child");
    let root = threads.iter().find(|t| t["depth"] == 0).map(id).expect("the demo has a root");
    (failed, root)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn a_failing_child_makes_one_desktop_notification_and_one_command_run() {
    let (failed, root) = demo_threads();
    let dir = tempfile::tempdir().unwrap();
    let (raw, calls) = (dir.path().join("terminal.raw"), dir.path().join("calls.ndjson"));
    let bin = env!("CARGO_BIN_EXE_swarmtop");
    // The shell waits for pipe-pane to be in place before swarmtop writes anything.
    let script = format!("sleep 1; {bin} demo --speed 10 --notify --notify-cmd 'cat >> {}'; sleep 60", calls.display());
    let Some(tmux) = Tmux::start("notify", 120, 40, &format!("sh -c \"{script}\"")) else {
        return;
    };
    let piped = tmux.run(&["pipe-pane", "-t", "t", "-o", &format!("cat >> '{}'", raw.display())]);
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));

    tmux.wait_for("the whole demo", |s| s.contains("1,249 / 1,249 lines"));
    // The command runs off the screen's thread: give it time to have run for both events.
    let deadline = Instant::now() + Duration::from_secs(60);
    let lines = loop {
        let text = std::fs::read_to_string(&calls).unwrap_or_default();
        let lines: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).expect("one JSON event per run")).collect();
        if lines.len() >= 2 || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Nothing more comes late.
    std::thread::sleep(Duration::from_secs(2));
    let again = std::fs::read_to_string(&calls).unwrap_or_default();
    assert_eq!(again.lines().count(), lines.len(), "{again}");

    let events: Vec<(&str, &str)> =
        lines.iter().map(|l| (l["event"].as_str().unwrap(), l["thread"].as_str().unwrap())).collect();
    assert_eq!(events, [("failed", failed.as_str()), ("finished", root.as_str())], "{lines:#?}");
    let fail = &lines[0];
    assert_eq!(fail["session"], root.as_str());
    assert_eq!(fail["source"], "demo");
    assert!(fail["message"].as_str().unwrap().contains("high demand"), "the child's own error: {fail}");
    assert!(fail["title"].as_str().unwrap().ends_with(" failed"), "{fail}");
    let spent = lines[1]["message"].as_str().unwrap();
    assert!(spent.starts_with("7 agents · $"), "how many agents, what they spent: {spent}");

    let bytes = std::fs::read(&raw).expect("pipe-pane kept the terminal's bytes");
    // Inside tmux the sequence goes through its passthrough, its ESC doubled.
    let failed_title = format!("]9;swarmtop: {} failed: ", fail["agent"].as_str().unwrap());
    assert_eq!(count(&bytes, b"]9;"), 2, "one desktop notification per event");
    assert_eq!(count(&bytes, failed_title.as_bytes()), 1, "the failure's: {failed_title}");
    assert_eq!(count(&bytes, b"\x1bPtmux;\x1b\x1b]9;"), 2, "wrapped for tmux's passthrough");
}
