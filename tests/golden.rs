//! `stats --json` and `tree` of every input under `tests/fixtures`, byte for byte, through the
//! binary as a user runs it. A change of structure (how records are decoded, lowered, routed and
//! shown) must leave every figure as it was: a difference here is a change of behaviour, to be
//! reviewed and accepted on purpose (`cargo insta review`), never a side effect of a refactor.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every input a user could hand `stats`: each recording file, and each folder that is one
/// session (a Claude project, a Codex rollout folder, an OpenCode data folder).
fn inputs() -> Vec<PathBuf> {
    let root = fixtures();
    let mut inputs = Vec::new();
    let entries = |dir: &str, keep: fn(&Path) -> bool| {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("fixture folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| keep(p))
            .collect();
        paths.sort();
        paths
    };
    for dir in ["codex-0.171.0", "claude-2.1.332", "claude-2.1.332-otlp", "opencode-1.18.33", "hostile", "tee"] {
        inputs.extend(entries(dir, |p| p.is_file() && p.extension().is_some_and(|e| e != "md")));
    }
    for dir in ["codex-0.171.0/rollouts", "claude-2.1.332", "opencode-1.18.33"] {
        inputs.extend(entries(dir, Path::is_dir));
    }
    inputs.push(root.join("claude-2.1.39"));
    inputs
}

fn name_of(path: &Path) -> String {
    path.strip_prefix(fixtures()).expect("under fixtures").to_string_lossy().replace(['/', '.'], "_")
}

/// What a user sees: standard output, and the exit status with the error line when it fails (a
/// truncated `.gz` prints its figures and then says why it stopped).
fn run(args: &[&str], input: &Path) -> String {
    let out = Command::cargo_bin("swarmtop").expect("binary").args(args).arg(input).output().expect("runs");
    let mut seen = String::from_utf8(out.stdout).expect("utf-8");
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).replace(env!("CARGO_MANIFEST_DIR"), "<repo>");
        let _ = write!(seen, "\n[exit {:?}] {stderr}", out.status.code());
    }
    seen
}

#[test]
fn stats_json_of_every_fixture_is_unchanged() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/golden");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for input in inputs() {
            insta::assert_snapshot!(format!("stats_{}", name_of(&input)), run(&["stats", "--json"], &input));
        }
    });
}

#[test]
fn tree_of_every_fixture_is_unchanged() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/golden");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for input in inputs() {
            insta::assert_snapshot!(format!("tree_{}", name_of(&input)), run(&["tree"], &input));
        }
    });
}
