//! A machine for the run store's tests: a home folder with each agent's place (Claude Code
//! projects, Codex sessions, swarmtop's recordings) filled from the fixtures, and swarmtop run in
//! it as a user would, with nothing of the test process's own environment.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

pub const CLAUDE_SESSION: &str = "4d5611e5-241a-462a-8d15-5122611a9569";
/// The Codex 0.171.0 rollout fixtures: each folder is one session.
pub const CODEX_RUNS: [&str; 6] = ["agents_md", "collab_v1", "collab_v2", "interrupt", "tui_interrupt", "tui_shell"];

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub struct Machine {
    pub dir: tempfile::TempDir,
}

impl Machine {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("a temp dir") }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `~/.claude/projects/<project>` of the Claude 2.1.39 fixture's session.
    pub fn claude_project(&self) -> PathBuf {
        self.home().join(".claude/projects/-home-USER-projects-spotter-worktrees-spotter-dov")
    }

    pub fn codex_day(&self) -> PathBuf {
        self.home().join(".codex/sessions/2026/11/29")
    }

    pub fn recordings(&self) -> PathBuf {
        self.home().join(".local/state/swarmtop/recordings")
    }

    pub fn store(&self) -> PathBuf {
        self.home().join(".local/share/swarmtop/history.db")
    }

    /// The Claude 2.1.39 session, its transcript and its sub-agents' folder.
    pub fn with_claude(&self) -> &Self {
        copy_dir(&fixtures().join("claude-2.1.39"), &self.claude_project());
        self
    }

    /// Where OpenCode keeps its store.
    pub fn opencode_dir(&self) -> PathBuf {
        self.home().join(".local/share/opencode")
    }

    /// The store of an OpenCode 1.18.33 fixture (`tree`, `subfail`), where OpenCode keeps it.
    pub fn with_opencode(&self, case: &str) -> &Self {
        copy_plain(&fixtures().join("opencode-1.18.33").join(case), &self.opencode_dir());
        self
    }

    /// The project folder the Claude Code 2.1.332 fixtures go in.
    pub fn claude_fixture_project(&self) -> PathBuf {
        self.home().join(".claude/projects/-work-fixture")
    }

    /// A Claude Code 2.1.332 fixture session (`parallel`, `interrupt`, `subfail`), plain.
    pub fn with_claude_2_1_332(&self, case: &str) -> &Self {
        copy_plain(&fixtures().join("claude-2.1.332").join(case), &self.claude_fixture_project());
        self
    }

    /// The rollouts of a Codex fixture run (`collab_v1`, …), in a day's folder.
    pub fn with_codex(&self, run: &str) -> &Self {
        copy_dir(&fixtures().join("codex-0.171.0/rollouts").join(run), &self.codex_day());
        self
    }

    /// A recording (a file of the fixtures) in swarmtop's recordings folder.
    pub fn with_recording(&self, fixture: &str) -> &Self {
        let from = fixtures().join(fixture);
        std::fs::create_dir_all(self.recordings()).unwrap();
        std::fs::copy(&from, self.recordings().join(from.file_name().unwrap())).unwrap();
        self
    }

    /// swarmtop as this machine's user runs it: this home, UTC, nothing else of the test's
    /// environment (no other place to find sessions in).
    pub fn swarmtop(&self) -> Command {
        let mut cmd = Command::cargo_bin("swarmtop").expect("binary built");
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TZ", "UTC");
        cmd
    }

    pub fn output(&self, args: &[&str]) -> Output {
        self.swarmtop().args(args).output().expect("swarmtop runs")
    }

    /// Standard output of a run that must succeed.
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "swarmtop {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.run(args)).expect("one JSON object")
    }

    /// Everything the store holds, as two stores that hold the same runs print it.
    pub fn dump(&self) -> String {
        swarmtop::store::Store::open(&self.store()).expect("the store opens").backend().dump().expect("dumps")
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `gunzip -r`: the real-CLI fixtures are kept compressed; an agent's place holds them plain.
pub fn copy_plain(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_plain(&entry.path(), &to.join(&name));
        } else if let Some(plain) = name.strip_suffix(".gz") {
            let mut text = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::GzDecoder::new(std::fs::File::open(entry.path()).unwrap()),
                &mut text,
            )
            .unwrap();
            std::fs::write(to.join(plain), text).unwrap();
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}
