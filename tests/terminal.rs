//! The monitor in a real terminal: tmux runs `swarmtop demo`, keys navigate (open a lane, filter,
//! help, quit), capture-pane reads what a person would see, and the terminal is back to normal
//! after quit. Needs tmux (installed by `scripts/test`); without it the test says so and passes,
//! except in CI, where it fails.

use std::process::Command;
use std::time::Duration;

#[path = "support/tmux.rs"]
mod tmux;

use tmux::{Tmux, watched};

/// The pid of the swarmtop running in the pane (the pane's shell's child).
fn swarmtop_pid(tmux: &Tmux) -> String {
    let out = tmux.run(&["list-panes", "-t", "t", "-F", "#{pane_pid}"]);
    let shell = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
    children.split_whitespace().next().expect("swarmtop runs under the pane's shell").to_owned()
}

/// The demo's agents as `stats` sees them: the root's children and the failed one. Read, not
/// hard-coded, because codex names agents at random and the demo can be re-recorded.
fn demo_agents() -> (Vec<String>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_swarmtop"))
        .args(["stats", "--json", concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")])
        .output()
        .expect("stats runs");
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats --json");
    let threads = stats["threads"].as_array().expect("threads");
    let name = |t: &serde_json::Value| t["name"].as_str().unwrap_or_default().to_owned();
    let children = threads.iter().filter(|t| t["depth"] == 1).map(name).collect();
    let failed = threads.iter().find(|t| t["status"] == "failed").map(name).expect("the demo has a failed child");
    (children, failed)
}

#[test]
fn demo_in_a_real_terminal() {
    let (children, failed) = demo_agents();
    let Some(tmux) = Tmux::start("demo", 120, 40, &watched("demo --speed max")) else {
        return;
    };

    let screen = tmux.wait_for("the whole demo", |s| s.contains("1,249 / 1,249 lines"));
    assert!(screen.contains("┌ agents"), "{screen}");
    assert!(screen.contains("⑂ spawnAgent ×4"), "the root's spawn card, in Codex's words: {screen}");
    assert!(screen.contains(&format!("✗ {failed}")), "the failed child, glyph and name: {screen}");
    assert!(screen.contains("1 unpriced"), "{screen}");
    assert!(screen.contains("? help") && screen.contains("q quit"), "the footer: {screen}");

    // Down to the spawn card, open it: one lane per child, stacked.
    tmux.keys(&["Down", "Down", "Enter"]);
    let screen = tmux.wait_for("the lanes of the spawn card", |s| s.contains("┌ ⑂ spawnAgent ×4 ·"));
    for child in &children {
        assert!(screen.matches(child.as_str()).count() >= 2, "{child} has a lane beside its tree row: {screen}");
    }
    assert!(screen.contains("temporary errors"), "the failed lane shows its error: {screen}");

    // Filter by name (`/` in the tree; in the lanes it searches their text): the tree keeps the
    // match and its ancestors.
    tmux.keys(&["BTab", "/"]);
    let letters: Vec<String> = failed.chars().map(String::from).collect();
    tmux.keys(&letters.iter().map(String::as_str).collect::<Vec<_>>());
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the filter", |s| s.contains(&format!("agents /{failed}")));
    let tree: String = screen.lines().map(|l| l.chars().take(36).collect::<String>() + "\n").collect();
    let others = children.iter().filter(|c| **c != failed);
    assert!(tree.contains(&failed) && tree.contains("spawnAgent ×4"), "{tree}");
    for other in others {
        assert!(!tree.contains(other.as_str()), "{other} is filtered out: {tree}");
    }

    // Help comes from the keymap; Esc closes it.
    tmux.keys(&["?"]);
    tmux.wait_for("the help overlay", |s| s.contains("┌ keys") && s.contains("seek back"));
    tmux.keys(&["Escape"]);
    tmux.wait_for("help to close", |s| !s.contains("┌ keys"));

    // Esc is "back", never quit: pressed far more often than there is anything to close.
    tmux.keys(&["Escape", "Escape", "Escape", "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    let screen = tmux.screen();
    assert!(screen.contains("┌ agents") && !screen.contains("EXIT="), "Esc never quits: {screen}");

    // The timeline: one row per agent, bars over time.
    tmux.keys(&["t"]);
    let screen = tmux.wait_for("the timeline", |s| s.contains("┌ timeline") && s.contains("━"));
    for child in &children {
        assert!(screen.matches(child.as_str()).count() >= 2, "{child} has a timeline row: {screen}");
    }
    tmux.keys(&["t"]);
    tmux.wait_for("the lanes again", |s| !s.contains("┌ timeline"));

    // Text search in the transcript: highlighted, counted, n moves on.
    tmux.keys(&["Home", "Tab", "/", "v", "e", "r", "i", "f", "y", "Enter"]);
    let screen = tmux.wait_for("the search", |s| s.contains("/verify ·"));
    assert!(screen.contains("transcript ·"), "{screen}");
    tmux.keys(&["n"]);
    tmux.wait_for("the next match", |s| s.contains("/verify · 2/"));
    tmux.keys(&["Escape"]);
    tmux.wait_for("the search cleared", |s| !s.contains("/verify"));

    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(screen.contains("TTY=restored"), "terminal settings are back: {screen}");
    assert!(!screen.contains("┌ agents"), "the alternate screen is gone: {screen}");
}

#[test]
fn a_too_small_terminal_gets_a_message_not_a_panic() {
    let bin = env!("CARGO_BIN_EXE_swarmtop");
    let Some(tmux) = Tmux::start("small", 40, 10, &format!("sh -c '{bin} demo --speed max; echo EXIT=$?; sleep 60'"))
    else {
        return;
    };
    let screen = tmux.wait_for("the message", |s| s.contains("enlarge the terminal") || s.contains("EXIT="));
    assert!(!screen.contains("EXIT="), "still running: {screen}");
    // Growing the window brings the screen back.
    tmux.run(&["resize-window", "-t", "t", "-x", "120", "-y", "40"]);
    tmux.wait_for("the full screen after a resize", |s| s.contains("┌ agents"));
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=0"), "{screen}");
}

#[test]
fn sigterm_restores_the_terminal() {
    let Some(tmux) = Tmux::start("term", 100, 30, &watched("demo")) else { return };
    tmux.wait_for("the screen", |s| s.contains("┌ agents"));
    let pid = swarmtop_pid(&tmux);
    let killed = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
    assert!(killed.success());
    let screen = tmux.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("TTY=restored"), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
}

/// A live pipe: space freezes the view while lines keep arriving (counted), q asks before the
/// stream is lost, Ctrl-Z gives the shell back and `fg` brings the screen back.
#[test]
fn live_pause_confirm_quit_and_ctrl_z() {
    let bin = env!("CARGO_BIN_EXE_swarmtop");
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson");
    let Some(tmux) = Tmux::start("live", 120, 40, "bash --norc --noprofile -i") else { return };
    tmux.wait_for("the shell", |s| s.contains('$') || s.contains('#'));
    let slow = format!(
        "stty -g > /tmp/swarmtop-live-$$.tty; (while IFS= read -r l; do printf '%s\\n' \"$l\"; sleep 0.02; done < {demo}; sleep 60) | {bin}; echo EXIT=$?; [ \"$(stty -g)\" = \"$(cat /tmp/swarmtop-live-$$.tty)\" ] && echo TTY=restored"
    );
    tmux.run(&["send-keys", "-t", "t", &slow, "Enter"]);
    tmux.wait_for("the live screen", |s| s.contains("● live") && s.contains("┌ agents"));

    tmux.keys(&["Space"]);
    let frozen = tmux.wait_for("the pause", |s| s.contains("‖ paused") && s.contains(" new"));
    let tree = |s: &str| s.lines().skip(2).map(|l| l.chars().take(36).collect::<String>()).collect::<Vec<_>>();
    std::thread::sleep(Duration::from_millis(1500));
    let later = tmux.screen();
    assert_eq!(tree(&frozen), tree(&later), "the view is frozen while paused");
    let count = |s: &str| -> u64 {
        let head = s.lines().next().unwrap_or_default();
        let Some(at) = head.find("paused · ") else { return 0 };
        head[at + "paused · ".len()..].split(' ').next().unwrap_or("0").replace(',', "").parse().unwrap_or(0)
    };
    assert!(count(&later) > count(&frozen), "what arrives is counted: {frozen}\n{later}");
    tmux.keys(&["Space"]);
    tmux.wait_for("the resume", |s| s.contains("● live"));

    tmux.keys(&["q"]);
    tmux.wait_for("the question", |s| s.contains("quit?") && s.contains("stdin is live"));
    tmux.keys(&["n"]);
    let screen = tmux.wait_for("the question closed", |s| !s.contains("quit?"));
    assert!(screen.contains("┌ agents") && !screen.contains("EXIT="), "{screen}");

    tmux.keys(&["C-z"]);
    let screen = tmux.wait_for("the shell after ^Z", |s| s.contains("Stopped"));
    assert!(!screen.contains("┌ agents"), "the alternate screen is left: {screen}");
    tmux.run(&["send-keys", "-t", "t", "fg", "Enter"]);
    tmux.wait_for("the screen after fg", |s| s.contains("┌ agents") && s.contains("● live"));

    tmux.keys(&["q", "y"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("TTY=restored"), "{screen}");
}

/// `--follow`: a recording still being written is replayed, then shown live as it grows (its
/// growth reported by the follower, off the monitor's thread).
#[test]
fn a_followed_file_goes_live_and_grows() {
    let bin = env!("CARGO_BIN_EXE_swarmtop");
    let demo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo.ndjson")).expect("demo");
    let lines: Vec<&str> = demo.lines().collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("growing.ndjson");
    std::fs::write(&path, lines[..40].join("\n") + "\n").expect("write");
    let cmd = format!("sh -c '{bin} --follow --speed max {}; sleep 60'", path.display());
    let Some(tmux) = Tmux::start("follow", 120, 40, &cmd) else { return };
    let screen = tmux.wait_for("the replay caught up", |s| s.contains("● live"));
    assert!(screen.contains("1 agent"), "only the root so far: {screen}");
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
    std::io::Write::write_all(&mut f, (lines[40..].join("\n") + "\n").as_bytes()).expect("append");
    let screen = tmux.wait_for("the growth", |s| s.contains("7 agents"));
    assert!(screen.contains("● live"), "{screen}");
    // Nothing is lost by quitting a file: q quits at once.
    tmux.keys(&["q"]);
    tmux.wait_for("the exit", |s| !s.contains("┌ agents"));
}
