//! `swarmtop interrupt SESSION` on any agent's whole session (issue 23): the process the census
//! found running it is signalled SIGINT, then SIGTERM after `--grace`, and the command exits 0 only
//! once it is gone; the pid and project are named, the act is in the acts log and the run store.
//!
//! The session's process is a child of this test (a shell that writes down each signal it gets),
//! named as Claude Code 2.1.332 names its running sessions (`~/.claude/sessions/<pid>.json`, as
//! tests/liveness.rs fakes one): no real CLI, and only this test's own processes are signalled.

#[path = "support/home.rs"]
mod home;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use home::Home;
use serde_json::Value;

/// The project the session file names (`add_old_claude_session`'s `cwd`).
const PROJECT: &str = "/home/dev/old";
/// `--grace`: short, so that the SIGTERM case stays quick; long enough to tell the two apart.
const GRACE: Duration = Duration::from_secs(1);

/// A session process: `sh` running `script` with the marker file as `$0`, after a moment to set
/// its traps; the process is killed when dropped, however the test ends.
struct Session {
    child: Child,
    marker: PathBuf,
}

impl Session {
    fn start(home: &Home, script: &str) -> Self {
        let marker = home.path().join("signals");
        let child = Command::new("sh").arg("-c").arg(script).arg(&marker).stdin(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        Self { child, marker }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The signals it got, in order, each with when (ns since the epoch).
    fn signals(&self) -> Vec<(String, u128)> {
        let text = std::fs::read_to_string(&self.marker).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(s, t)| (s.to_owned(), t.trim().parse().expect("a time")))
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes each signal down; `on_int` and `on_term` say what it then does (`exit N`, or nothing).
fn script(on_int: &str, on_term: &str) -> String {
    format!(
        r#"trap 'echo "INT $(date +%s%N)" >> "$0"; {on_int}' INT
trap 'echo "TERM $(date +%s%N)" >> "$0"; {on_term}' TERM
while :; do sleep 0.05; done"#
    )
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot.
fn start_ticks(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(19).unwrap().to_owned()
}

/// A Claude Code session whose process is `pid`, as 2.1.332 names a running one; its id.
fn claude_session_run_by(home: &Home, pid: u32) -> String {
    let file = home.add_old_claude_session();
    let id = file.file_stem().unwrap().to_str().unwrap().to_owned();
    let sessions = home.path().join(".claude/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let ticks = start_ticks(pid);
    std::fs::write(
        sessions.join(format!("{pid}.json")),
        format!(
            r#"{{"pid":{pid},"sessionId":"{id}","cwd":"{PROJECT}","procStart":"{ticks}","kind":"interactive","status":"busy"}}"#
        ),
    )
    .unwrap();
    id
}

fn swarmtop(home: &Home, args: &[&str]) -> Output {
    home.cmd()
        .env_remove("SWARMTOP_STORE")
        .env("XDG_DATA_HOME", home.path().join("data"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Waits until `ps` lists session `id` live with `pid`.
fn live(home: &Home, id: &str, pid: u32) {
    home::wait_for("the session live in ps", || {
        let out = swarmtop(home, &["ps", "--json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        rows.iter().any(|r| r["id"] == id && r["state"] == "live" && r["pid"] == pid).then_some(())
    });
}

fn interrupt(home: &Home, id: &str) -> (bool, String, String) {
    let grace = format!("{}s", GRACE.as_secs());
    let out = swarmtop(home, &["interrupt", "--grace", &grace, id]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The last act in the acts log, and the session's acts in the run store (by, via, detail, outcome).
fn acts(home: &Home, id: &str) -> (Value, Vec<(String, String, String, String)>) {
    let log = std::fs::read_to_string(home.state_dir().join("swarmtop/acts.ndjson")).expect("the acts log");
    let last = serde_json::from_str(log.lines().last().expect("an act")).expect("JSON");
    let store = swarmtop::store::Store::open(&home.path().join("data/swarmtop/history.db")).expect("the run store");
    let kept = store.backend().acts(id).expect("its acts");
    (last, kept.into_iter().map(|a| (a.by, a.via, a.detail, a.outcome)).collect())
}

fn stored(pid: u32, outcome: &str) -> Vec<(String, String, String, String)> {
    vec![("swarmtop interrupt".into(), "signal".into(), format!("pid {pid} in {PROJECT}"), outcome.into())]
}

fn signals_of(s: &Session) -> Vec<String> {
    s.signals().into_iter().map(|(s, _)| s).collect()
}

#[test]
fn a_session_that_heeds_sigint_gets_only_sigint_and_the_command_exits_0() {
    let home = Home::new();
    let session = Session::start(&home, &script("exit 130", "exit 143"));
    let pid = session.pid();
    let id = claude_session_run_by(&home, pid);
    live(&home, &id, pid);
    let (ok, out, err) = interrupt(&home, &id);
    assert!(ok, "interrupt: {out}{err}");
    assert_eq!(signals_of(&session), ["INT"], "SIGINT first, and nothing after it once it stopped");
    let (logged, kept) = acts(&home, &id);
    assert_eq!(
        (logged["via"].as_str(), logged["pid"].as_u64(), logged["outcome"].as_str()),
        (Some("signal"), Some(u64::from(pid)), Some("SIGINT"))
    );
    assert_eq!(kept, stored(pid, "exited on SIGINT"));
    assert!(out.ends_with(&format!(": pid {pid} in {PROJECT} exited on SIGINT\n")), "{out}");
    assert!(out.contains(&format!("[{id}]")), "names the session: {out}");
}

#[test]
fn a_session_deaf_to_sigint_gets_sigterm_after_the_grace() {
    let home = Home::new();
    let session = Session::start(&home, &script("", "exit 143"));
    let pid = session.pid();
    let id = claude_session_run_by(&home, pid);
    live(&home, &id, pid);
    let (ok, out, err) = interrupt(&home, &id);
    assert!(ok, "interrupt: {out}{err}");
    let got = session.signals();
    assert_eq!(signals_of(&session), ["INT", "TERM"], "SIGINT first, then SIGTERM");
    let apart = Duration::from_nanos(u64::try_from(got[1].1 - got[0].1).unwrap());
    // The shell notes a signal once its `sleep 0.05` ends: the gap is the grace, give or take that.
    assert!(apart + Duration::from_millis(100) >= GRACE, "SIGTERM only after the grace: {apart:?}");
    let (logged, kept) = acts(&home, &id);
    assert_eq!(logged["outcome"].as_str(), Some("SIGTERM"));
    assert_eq!(kept, stored(pid, "exited on SIGTERM"));
    assert!(out.ends_with(&format!(": pid {pid} in {PROJECT} exited on SIGTERM\n")), "{out}");
}

#[test]
fn a_session_that_outlives_both_signals_fails_the_command() {
    let home = Home::new();
    let session = Session::start(&home, &script("", ""));
    let pid = session.pid();
    let id = claude_session_run_by(&home, pid);
    live(&home, &id, pid);
    let (ok, out, err) = interrupt(&home, &id);
    assert!(!ok, "exit 0 only once it stopped: {out}{err}");
    assert_eq!(out, "", "nothing said stopped");
    let why = format!("process {pid} still runs after SIGINT and SIGTERM ({} s apart)", GRACE.as_secs());
    assert!(err.contains(&why), "{err}");
    assert_eq!(signals_of(&session), ["INT", "TERM"]);
    let (logged, kept) = acts(&home, &id);
    assert_eq!(logged["outcome"].as_str(), Some(why.as_str()));
    assert_eq!(kept, stored(pid, &why), "a failed stop is recorded too");
}
