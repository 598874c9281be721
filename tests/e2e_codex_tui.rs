//! The real interactive Codex 0.171.0 in tmux, offline against the project's mock: its TUI is a
//! client of an app-server daemon that holds the session's rollout open and outlives it. While
//! the TUI runs, `swarmtop ps --json` says `live` with the TUI's pid; after `/quit` with the turn
//! still running (the daemon goes on with it: "Any running work continues"), `live` with the
//! daemon's pid; once that turn has ended, `idle` with no pid, though the daemon still holds
//! the rollout. Needs tmux and the CLI (`scripts/setup-codex.sh`); without them the test says so
//! and passes, except in CI.

mod support;

#[path = "support/home.rs"]
mod home;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use home::Home;
use serde_json::Value;
use support::harness::{codex_binary, config_toml};
use support::mock_model::{self, MockModel};
use support::responses::ResponseBuilder;
use tmux::Tmux;

/// How long the answer takes: long enough for the TUI to quit while the turn runs.
const THINK: Duration = Duration::from_secs(12);
/// The CLI starts slowly on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

struct Slow;

impl mock_model::Script for Slow {
    fn reply(&self, _: &mock_model::ModelRequest<'_>) -> mock_model::Reply {
        let mut answer = ResponseBuilder::new("root", 0);
        answer.message("Hello from the slow mock.");
        mock_model::Reply::Stream {
            events: answer.into_events(),
            usage: mock_model::Usage { input: 40, cached_input: 0, output: 6, reasoning_output: 0 },
            pre_delay: THINK,
            delta_delay: Duration::ZERO,
        }
    }
}

fn ps(home: &Home) -> Vec<Value> {
    let out = home.cmd().args(["ps", "--json"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "ps failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).expect("ps --json prints JSON").as_array().unwrap().clone()
}

fn wait_row(home: &Home, tui: &Tmux, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let rows = ps(home);
        if let Some(row) = rows.iter().find(|r| want(r)) {
            return row.clone();
        }
        assert!(Instant::now() < deadline, "never saw {what}: {rows:#?}\nthe screen:\n{}", tui.screen());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The pid a Codex pid file (`{"pid": …, …}`) names.
fn pid_file(path: &Path) -> Option<u32> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["pid"].as_u64().and_then(|p| u32::try_from(p).ok())
}

/// Stops the daemon and its updater the TUI started (they outlive it by design).
struct Daemons(PathBuf);

impl Drop for Daemons {
    fn drop(&mut self) {
        for name in ["daemon.pid", "daemon-updater.pid"] {
            if let Some(pid) = pid_file(&self.0.join(name)) {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}

fn holds(pid: u32, file: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    let file = std::fs::canonicalize(file).unwrap();
    fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == file))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quit_tui_session_is_not_live_though_its_daemon_holds_the_rollout() {
    let Some(bin) = codex_binary().or_skip("a_quit_tui_session_is_not_live_though_its_daemon_holds_the_rollout") else {
        return;
    };
    let mock = MockModel::start(Slow).await.unwrap();
    let home = Home::new();
    let codex_home = home.path().join(".codex");
    let project = home.path().join("shop");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let project = std::fs::canonicalize(&project).unwrap();
    // Past the first-run screens as the TUI itself records them (trust, the model-upgrade offer,
    // the screen-reader probe), and threads kept loaded after their last client for longer than
    // the test (the default unloads them about a minute later).
    let tui_state = format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n\n[tui]\nscreen_reader_detection_done = true\n\n[tui.model_availability_nux]\n\"gpt-6.1-sol\" = 4\n\n[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n",
        project.display()
    );
    let config = format!("thread_unload_delay_secs = 600\n{}{tui_state}", config_toml(&mock.base_url()));
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let _daemons = Daemons(codex_home.join("app-server-daemon"));

    let command = format!(
        "cd '{}' && env HOME='{}' CODEX_HOME='{}' MOCK_API_KEY=sk-mock-not-a-real-key NO_PROXY=127.0.0.1,localhost RUST_LOG=warn '{}'; echo codex exited $?; sleep 600",
        project.display(),
        home.path().display(),
        codex_home.display(),
        bin.display()
    );
    let Some(tui) = Tmux::start("codex-tui", 120, 40, &command) else { return };
    tokio::task::block_in_place(|| {
        // The composer shows before the session is set up, and an Enter typed then is lost.
        wait_screen(&tui, "the TUI ready", |s| s.contains("Ask Codex") && s.contains("permissions:"));
        let tui_pid = u32::try_from(tui.child_pid().expect("the TUI runs")).unwrap();
        tui.run(&["send-keys", "-t", "t", "-l", "say hello"]);
        wait_screen(&tui, "the prompt typed", |s| s.contains("› say hello"));
        tui.keys(&["Enter"]);

        let row = wait_row(&home, &tui, "the session live", |r| r["tool"] == "codex" && r["state"] == "live");
        assert_eq!(row["pid"], tui_pid, "the TUI runs it: {row}");
        assert_eq!(row["project"], project.display().to_string().as_str());
        let id = row["id"].as_str().unwrap().to_owned();

        tui.run(&["send-keys", "-t", "t", "-l", "/quit"]);
        wait_screen(&tui, "/quit typed", |s| s.contains("› /quit"));
        tui.keys(&["Enter"]);
        let daemon = pid_file(&codex_home.join("app-server-daemon/daemon.pid")).expect("the TUI started a daemon");
        let row =
            wait_row(&home, &tui, "the turn running in the daemon", |r| r["id"] == id.as_str() && r["pid"] == daemon);
        assert_eq!(row["state"], "live", "{row}");
        assert!(!Path::new(&format!("/proc/{tui_pid}")).exists(), "the TUI has quit");

        let row = wait_row(&home, &tui, "the session idle", |r| r["id"] == id.as_str() && r["state"] != "live");
        assert_eq!((&row["state"], &row["pid"]), (&Value::from("idle"), &Value::Null), "{row}");
        let rollout = walk(&codex_home.join("sessions")).into_iter().next().expect("a rollout");
        assert!(std::fs::read_to_string(&rollout).unwrap().contains("\"task_complete\""), "the turn ended");
        assert!(holds(daemon, &rollout), "the daemon still holds the rollout open");
    });
}

fn wait_screen(tui: &Tmux, what: &str, pred: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let screen = tui.screen();
        if pred(&screen) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen:\n{screen}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out
}
