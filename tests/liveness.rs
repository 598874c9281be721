//! `/proc` liveness with the real agents (issue 9): the real Claude Code CLI 2.1.332 and the real
//! `codex exec` 0.171.0, offline against the project's mocks, in a fresh HOME. While a run waits
//! for its (slow) answer, `swarmtop ps --json` says `live` with that process's pid; once it has
//! exited, `idle` with no pid (its files were just written); resumed, the same row is live again.
//!
//! Needs the CLIs (`scripts/setup-claude.sh`, `scripts/setup-codex.sh` install them into `.cache/`);
//! without npm the tests say so and pass, except in CI, where they fail.

mod support;

#[path = "support/home.rs"]
mod home;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use home::Home;
use serde_json::Value;
use support::anthropic::{self, Block, MockAnthropic};
use support::claude_driver::{ClaudeBinary, claude_binary};
use support::harness::{CodexBinary, codex_binary, config_toml};
use support::mock_model::{self, MockModel};
use support::responses::ResponseBuilder;

/// How long each answer takes: the window in which the process is seen running.
const THINK: Duration = Duration::from_secs(5);
/// The CLIs start slowly on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(90);

fn skip_unless(found: Result<PathBuf, String>, test: &str) -> Option<PathBuf> {
    match found {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
        Err(why) => panic!("{test} must run in CI: {why}"),
    }
}

fn ps(home: &Home) -> Vec<Value> {
    let out = home.cmd().args(["ps", "--json"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "ps failed: {}", String::from_utf8_lossy(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("ps --json prints JSON");
    rows.as_array().expect("an array").clone()
}

/// Polls `ps --json` until `want` picks a row (or the child exits first, or time runs out).
fn wait_row(home: &Home, child: &mut Child, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let rows = ps(home);
        if let Some(row) = rows.iter().find(|r| want(r)) {
            return row.clone();
        }
        let exited = child.try_wait().unwrap();
        assert!(exited.is_none() && Instant::now() < deadline, "never saw {what} (exit {exited:?}): {rows:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(child: &mut Child) {
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the CLI did not exit");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The one row of session `id`, asserting it is listed once.
fn only_row<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    let mine: Vec<&Value> = rows.iter().filter(|r| r["id"] == id).collect();
    assert_eq!(mine.len(), 1, "session {id} once: {rows:#?}");
    mine[0]
}

/// Answers every request with a short text, after [`THINK`].
struct SlowClaude;

impl anthropic::Script for SlowClaude {
    fn reply(&self, _: &anthropic::MessagesRequest<'_>) -> anthropic::Reply {
        anthropic::Reply::Message {
            blocks: vec![Block::Text("Hello.".to_owned())],
            stop: "end_turn",
            usage: anthropic::Usage { input: 40, output: 6, ..anthropic::Usage::default() },
            model: None,
            pre_delay: THINK,
            delta_delay: Duration::ZERO,
            signal: false,
        }
    }
}

fn claude(bin: &Path, home: &Home, project: &Path, base_url: &str, args: &[&str]) -> Child {
    // What `support/claude_driver.rs` gives the CLI, nothing of the developer's.
    let env: [(&str, OsString); 11] = [
        ("HOME", home.path().into()),
        ("TMPDIR", home.path().join("tmp").into()),
        ("ANTHROPIC_BASE_URL", base_url.into()),
        ("ANTHROPIC_API_KEY", "sk-test-not-a-real-key".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("IS_SANDBOX", "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES", "1".into()),
        ("NO_PROXY", "127.0.0.1,localhost".into()),
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
    ];
    std::fs::create_dir_all(home.path().join("tmp")).unwrap();
    Command::new(bin)
        .args(["-p"])
        .args(args)
        .args(["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"])
        .env_clear()
        .envs(env)
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_claude_session_is_live_with_its_pid_and_idle_once_it_exits() {
    let bin = match claude_binary() {
        ClaudeBinary::Found(p) => Ok(p),
        ClaudeBinary::Unavailable(why) => Err(why),
    };
    let Some(bin) = skip_unless(bin, "claude liveness") else { return };
    let mock = MockAnthropic::start(SlowClaude).await.unwrap();
    let home = Home::new();
    let project = home.path().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    let project_text = project.display().to_string();

    let mut run = claude(&bin, &home, &project, &mock.base_url(), &["say hello"]);
    let pid = run.id();
    let row = tokio::task::block_in_place(|| {
        wait_row(&home, &mut run, "the session live", |r| r["tool"] == "claude" && r["state"] == "live")
    });
    assert_eq!(row["pid"], pid, "the CLI's own process: {row}");
    assert_eq!(row["project"], project_text.as_str());
    assert!(row["memoryBytes"].as_u64().unwrap() > 0 && row["cpuPercent"].as_f64().is_some(), "{row}");
    let id = row["id"].as_str().unwrap().to_owned();
    tokio::task::block_in_place(|| wait_exit(&mut run));

    let rows = ps(&home);
    let row = only_row(&rows, &id);
    assert_eq!((&row["state"], &row["pid"]), (&Value::from("idle"), &Value::Null), "after the exit: {row}");
    assert!(row["tokens"].as_u64().unwrap() > 0);

    // Resumed, the same session is live again: one row, the new process.
    let mut resumed = claude(&bin, &home, &project, &mock.base_url(), &["--resume", &id, "and again"]);
    let again = resumed.id();
    let row = tokio::task::block_in_place(|| {
        wait_row(&home, &mut resumed, "the resumed session live", |r| r["id"] == id.as_str() && r["state"] == "live")
    });
    assert_eq!(row["pid"], again);
    assert_eq!(ps(&home).iter().filter(|r| r["tool"] == "claude").count(), 1, "one session, one row");
    tokio::task::block_in_place(|| wait_exit(&mut resumed));
    let rows = ps(&home);
    assert_eq!(only_row(&rows, &id)["state"], "idle");
}

/// Answers every request with a short message, after [`THINK`].
struct SlowCodex;

impl mock_model::Script for SlowCodex {
    fn reply(&self, _: &mock_model::ModelRequest<'_>) -> mock_model::Reply {
        let mut answer = ResponseBuilder::new("root", 0);
        answer.message("Hello.");
        mock_model::Reply::Stream {
            events: answer.into_events(),
            usage: mock_model::Usage { input: 40, cached_input: 0, output: 6, reasoning_output: 0 },
            pre_delay: THINK,
            delta_delay: Duration::ZERO,
        }
    }
}

fn codex_exec(bin: &Path, home: &Home, project: &Path, args: &[&str]) -> Child {
    Command::new(bin)
        .args(["exec", "--skip-git-repo-check"])
        .args(args)
        .env_clear()
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("HOME", home.path())
        .env("MOCK_API_KEY", "sk-mock-not-a-real-key")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("RUST_LOG", "warn")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_exec_holds_its_rollout_open_while_it_runs() {
    let bin = match codex_binary() {
        CodexBinary::Found(p) => Ok(p),
        CodexBinary::Unavailable(why) => Err(why),
    };
    let Some(bin) = skip_unless(bin, "codex liveness") else { return };
    let mock = MockModel::start(SlowCodex).await.unwrap();
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/config.toml"), config_toml(&mock.base_url())).unwrap();
    let project = home.path().join("shop");
    std::fs::create_dir_all(&project).unwrap();

    let mut run = codex_exec(&bin, &home, &project, &["say hello"]);
    let pid = run.id();
    let row = tokio::task::block_in_place(|| {
        wait_row(&home, &mut run, "the session live", |r| r["tool"] == "codex" && r["state"] == "live")
    });
    assert_eq!(row["pid"], pid, "{row}");
    assert_eq!(row["project"], project.display().to_string().as_str());
    let id = row["id"].as_str().unwrap().to_owned();
    tokio::task::block_in_place(|| wait_exit(&mut run));
    let rows = ps(&home);
    let row = only_row(&rows, &id);
    assert_eq!((&row["state"], &row["pid"]), (&Value::from("idle"), &Value::Null), "after the exit: {row}");

    // `codex exec resume` appends to the same rollout: the same row, live again.
    let mut resumed = codex_exec(&bin, &home, &project, &["resume", &id, "and again"]);
    let again = resumed.id();
    let row = tokio::task::block_in_place(|| {
        wait_row(&home, &mut resumed, "the resumed session live", |r| r["id"] == id.as_str() && r["state"] == "live")
    });
    assert_eq!(row["pid"], again);
    tokio::task::block_in_place(|| wait_exit(&mut resumed));
    let rows = ps(&home);
    assert_eq!(only_row(&rows, &id)["state"], "idle");
    assert_eq!(rows.len(), 1, "one session, one row: {rows:#?}");
}
