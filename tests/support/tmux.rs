//! A real terminal for the tests that drive swarmtop as a person would: tmux runs a command in a
//! private server, send-keys types, capture-pane reads the screen. Without tmux a test says so and
//! passes, except in CI, where tmux is required (`scripts/test` installs it).

#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub struct Tmux {
    server: String,
}

impl Tmux {
    /// Runs `shell_command` in a `width`×`height` window of a server of its own.
    pub fn start(name: &str, width: u16, height: u16, shell_command: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "tmux is required in CI (scripts/test installs it)");
            eprintln!("SKIPPED: tmux is not installed");
            return None;
        }
        let t = Self { server: format!("swarmtop-test-{name}-{}", std::process::id()) };
        let (w, h) = (width.to_string(), height.to_string());
        let out = t.run(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, shell_command]);
        assert!(out.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&out.stderr));
        Some(t)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").args(["-L", &self.server, "-f", "/dev/null"]).args(args).output().expect("tmux runs")
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-t", "t", "-p"]).stdout).into_owned()
    }

    /// Sends keys one at a time: a lone Escape followed at once by a key would read as Alt-key.
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", "t", k]);
            std::thread::sleep(Duration::from_millis(120));
        }
    }

    /// A tmux format of the pane (`#{alternate_on}`, `#{pane_pid}`, …).
    pub fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.run(&["display-message", "-p", "-t", "t", f]).stdout).trim().to_owned()
    }

    /// The pid of the shell's child (swarmtop).
    pub fn child_pid(&self) -> Option<i32> {
        let shell = self.format("#{pane_pid}");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
        children.split_whitespace().next()?.parse().ok()
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        // Generous: only a failing test waits it out, and a loaded machine (load average 20 on two
        // cores) can take many seconds to draw what a quiet one draws at once.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The interrupt dialog's answer, drawn whole. A capture can land while a frame is half written
/// (rows go out top to bottom), so the answer line alone may sit above the previous stage's rows;
/// the answered dialog's last row, its `Esc close` key, comes only with the rest of the frame.
pub fn answered(screen: &str) -> bool {
    (screen.contains("✓ interrupted") || screen.contains("✗ ")) && screen.contains("Esc close")
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// A shell around `swarmtop ARGS` that reports whether the terminal's settings came back, and its
/// exit code.
pub fn watched(args: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_swarmtop");
    let script = format!(
        "before=$(stty -g); {bin} {args}; code=$?; after=$(stty -g); \
         [ \"$before\" = \"$after\" ] && echo TTY=restored || echo TTY=changed; echo EXIT=$code; sleep 60"
    );
    format!("sh -c '{}'", script.replace('\'', "'\\''"))
}
