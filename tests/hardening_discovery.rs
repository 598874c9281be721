//! Discovery under attack (issue 22, items 9 and 13): what a hostile or broken HOME holds where
//! an agent's files are expected. A FIFO or a device where a store, a rollout or a transcript
//! should be never blocks `ps`, `stats DIR` or the machine view; a file name that is not UTF-8 is
//! listed (shown sanitised) and counted; one unreadable sub-agent file is reported, not a reason
//! to hide its session; no raw control character reaches any output, and a newline in a file
//! name never splits a `ps` row (JSON keeps the real name, escaped).

#[path = "support/home.rs"]
mod home;
#[path = "support/tmux.rs"]
mod tmux;

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use home::{CLAUDE_NEW_SESSION, CODEX_V1_ROOT, Home};
use serde_json::Value;

/// Longer than any of these commands takes on a quiet HOME; a hang is a failure, not a stall.
const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `command` to its end, or kills it and fails when it takes longer than [`PATIENCE`].
fn finishes(mut command: Command, what: &str) -> Output {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > PATIENCE {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{what} hung for {PATIENCE:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `swarmtop ARGS` in `home`, to its end.
fn run(home: &Home, args: &[&str]) -> Output {
    let mut command = home.cmd();
    command.args(args);
    finishes(command, &args.join(" "))
}

fn ps_json(home: &Home) -> (Vec<Value>, String) {
    let out = run(home, &["ps", "--json"]);
    assert!(out.status.success(), "ps failed: {}", String::from_utf8_lossy(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("ps --json prints JSON");
    (rows.as_array().expect("an array").clone(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn ids(rows: &[Value]) -> Vec<&str> {
    let mut ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    ids.sort_unstable();
    ids
}

/// A character no output may carry raw: C0 controls but the line feed, DEL, C1 controls, and the
/// format characters that reorder or hide text.
fn is_forbidden(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[test]
fn ps_does_not_block_on_a_fifo_where_a_rollout_is_expected() {
    let home = Home::new();
    home.add_codex("collab_v1");
    let fifo = home.codex_day().join("rollout-2026-11-29T21-30-00-01a2292d-0000-7000-8000-00000000f1f0.jsonl");
    mkfifo(&fifo);
    let (rows, stderr) = ps_json(&home);
    assert_eq!(ids(&rows), [CODEX_V1_ROOT], "the real session is listed: {rows:?}");
    assert!(stderr.contains("not a regular file") && stderr.contains("f1f0.jsonl"), "the FIFO is reported: {stderr}");
}

#[test]
fn ps_does_not_block_on_a_fifo_where_the_opencode_store_is_expected() {
    let home = Home::new();
    home.add_codex("collab_v1");
    let store = home.path().join(".local/share/opencode/opencode.db");
    mkfifo(&store);
    let (rows, stderr) = ps_json(&home);
    assert_eq!(ids(&rows), [CODEX_V1_ROOT], "{rows:?}");
    assert!(stderr.contains("not a regular file") && stderr.contains("opencode.db"), "{stderr}");
}

#[test]
fn ps_does_not_block_on_fifos_where_transcripts_are_expected() {
    let home = Home::new();
    let session = home.add_claude_new();
    let subagents = session.with_extension("").join("subagents");
    mkfifo(&subagents.join("agent-fifo0000000000001.jsonl"));
    mkfifo(&session.parent().unwrap().join("9a9a9a9a-0000-4000-8000-00000000f1f0.jsonl"));
    let (rows, stderr) = ps_json(&home);
    assert_eq!(ids(&rows), [CLAUDE_NEW_SESSION], "{rows:?}");
    assert_eq!(rows[0]["agents"], 2, "the session's real sub-agent is read: {rows:?}");
    assert!(stderr.contains("agent-fifo0000000000001.jsonl"), "{stderr}");
}

#[test]
fn stats_of_a_folder_whose_store_is_a_fifo_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let rollouts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0/rollouts/collab_v1");
    for entry in fs::read_dir(&rollouts).unwrap() {
        let from = entry.unwrap().path();
        fs::copy(&from, dir.path().join(from.file_name().unwrap())).unwrap();
    }
    mkfifo(&dir.path().join("opencode.db"));
    let out = finishes(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
            c.arg("stats").arg("--json").arg(dir.path());
            c
        },
        "stats DIR",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["input"]["format"], "codex-rollout", "{stats}");
}

/// The machine view's screen keeps drawing and answers `q` while its HOME holds FIFOs where a
/// store and a rollout are expected: the main thread blocked in `open`, ignoring q, Ctrl-C and
/// SIGTERM, with the clock stopped.
#[test]
fn the_machine_view_shows_its_sessions_and_quits_on_q_beside_fifos() {
    let home = Home::new();
    home.add_codex("collab_v1");
    mkfifo(&home.codex_day().join("rollout-2026-11-29T21-30-00-01a2292d-0000-7000-8000-00000000f1f0.jsonl"));
    mkfifo(&home.path().join(".local/share/opencode/opencode.db"));
    let command = format!(
        "env -u CLAUDE_CONFIG_DIR -u CODEX_HOME HOME='{}' XDG_RUNTIME_DIR='{}' XDG_STATE_HOME='{}' '{}'; echo EXITED; sleep 60",
        home.path().display(),
        home.run_dir().display(),
        home.state_dir().display(),
        env!("CARGO_BIN_EXE_swarmtop"),
    );
    let Some(t) = tmux::Tmux::start("fifo-machine", 120, 30, &command) else { return };
    t.wait_for("the codex session on screen", |s| s.contains("machine:") && s.contains("Kant"));
    t.keys(&["q"]);
    t.wait_for("the monitor to quit", |s| s.contains("EXITED"));
}

/// A transcript whose name is not UTF-8 was never listed and never counted.
#[test]
fn a_transcript_named_in_bytes_that_are_not_utf8_is_listed_and_counted() {
    let home = Home::new();
    let session = home.add_claude_new();
    let mut name = OsString::from("7b1c2d3e-5f60-4a71-8b92-03a4b5c6d332").into_vec();
    name.extend_from_slice(b"\xff\xfe.jsonl");
    let odd = session.parent().unwrap().join(OsString::from_vec(name));
    fs::rename(&session, &odd).unwrap();
    let (rows, stderr) = ps_json(&home);
    assert_eq!(ids(&rows), [CLAUDE_NEW_SESSION], "{rows:?}");
    let source = rows[0]["source"].as_str().unwrap();
    assert!(source.ends_with("d332\u{fffd}\u{fffd}.jsonl"), "shown with replacement characters: {source}");
    assert!(stderr.contains("1 file name is not UTF-8"), "counted: {stderr}");
}

/// One sub-agent file that cannot be read (here a link to nothing) made the whole session vanish,
/// and `ps` said "no agent sessions found".
#[test]
fn one_unreadable_sub_agent_file_is_reported_and_its_session_listed() {
    let home = Home::new();
    let session = home.add_claude_new();
    let dead = session.with_extension("").join("subagents/agent-dead0000000000001.jsonl");
    std::os::unix::fs::symlink(home.path().join("nowhere/at/all.jsonl"), &dead).unwrap();
    let (rows, stderr) = ps_json(&home);
    assert_eq!(ids(&rows), [CLAUDE_NEW_SESSION], "{rows:?}");
    assert_eq!(rows[0]["agents"], 2, "what could be read is read: {rows:?}");
    let unreadable = rows[0]["unreadable"].as_array().expect("the row says what it could not read");
    assert!(unreadable[0].as_str().unwrap().contains("agent-dead0000000000001.jsonl"), "{rows:?}");
    assert!(stderr.contains("agent-dead0000000000001.jsonl"), "{stderr}");
    let text = run(&home, &["ps"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(!text.contains("no agent sessions found") && text.contains("Survey the code"), "{text}");
}

/// A project folder whose name carries a newline, escape sequences, a C1 control and a bidi
/// override, and a transcript whose `cwd` carries them too.
fn hostile_session(home: &Home) -> PathBuf {
    let folder = "-home-dev-\nFORGED  row\u{1b}]0;pwned\u{7}\u{1b}[31m\u{9b}2J\u{202e}x";
    let project = home.claude_projects().join(folder);
    fs::create_dir_all(&project).unwrap();
    let sid = "6c179e70-ddb5-41ca-8088-e50d5a44a1bd";
    let at = home::iso(home::now_ms() - 5_000);
    let line = format!(
        r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{sid}","cwd":"/srv/a\nb\u001b[2J\u009b\u202ec","timestamp":"{at}","message":{{"role":"user","content":"Tidy\u001b[31m up"}}}}"#
    );
    let file = project.join(format!("{sid}.jsonl"));
    fs::write(&file, line + "\n").unwrap();
    file
}

#[test]
fn no_raw_control_character_reaches_ps_text_and_a_newline_never_splits_a_row() {
    let home = Home::new();
    hostile_session(&home);
    home.add_codex("collab_v1");
    let out = run(&home, &["ps"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 3, "a header and one line a session:\n{text}");
    assert!(!text.lines().any(|l| l.starts_with("FORGED")), "{text}");
    let bad: Vec<char> = text.chars().filter(|&c| is_forbidden(c)).collect();
    assert!(bad.is_empty(), "raw controls {bad:?} in:\n{text}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.chars().any(is_forbidden), "{stderr:?}");
}

#[test]
fn ps_json_keeps_the_real_names_escaped_with_no_raw_control_character() {
    let home = Home::new();
    let file = hostile_session(&home);
    let out = run(&home, &["ps", "--json"]);
    let raw = String::from_utf8(out.stdout).unwrap();
    let bad: Vec<char> = raw.trim_end_matches('\n').chars().filter(|&c| is_forbidden(c) || c == '\n').collect();
    assert!(bad.is_empty(), "raw controls {bad:?} in: {raw:?}");
    let rows: Value = serde_json::from_str(&raw).unwrap();
    let row = &rows[0];
    assert_eq!(row["source"], file.display().to_string(), "the real name, escaped");
    assert_eq!(row["project"], "/srv/a\nb\u{1b}[2J\u{9b}\u{202e}c", "the real cwd, escaped");
}
