//! `/proc` liveness with the real agents (issue 9): the real Claude Code CLI 2.1.332 and the real
//! `codex exec` 0.171.0, offline against the project's mocks, in a fresh HOME. While a run waits
//! for its (slow) answer, `swarmtop ps --json` says `live` with that process's pid; once it has
//! exited, `idle` with no pid (its files were just written); resumed, the same row is live again.
//! A `codex exec` with sub-agents killed mid-turn leaves nothing running in the machine view.
//!
//! Needs the CLIs (`scripts/setup-claude.sh`, `scripts/setup-codex.sh` install them into `.cache/`);
//! without npm the tests say so and pass, except in CI, where they fail.

mod support;

#[path = "support/home.rs"]
mod home;
#[path = "support/tmux.rs"]
mod tmux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use home::Home;
use serde_json::Value;
use support::anthropic::{self, Block, MockAnthropic};
use support::claude_driver::claude_binary;
use support::harness::{codex_binary, config_toml};
use support::mock_model::{self, MockModel};
use support::responses::ResponseBuilder;
use support::scenario::{FAKE_CARGO, Pacing, ROOT_PROMPT, RefactorScenario, WORKSPACE_FILES};

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
    let bin = claude_binary().found();
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
    codex_exec_command(bin, home, project, args).spawn().unwrap()
}

/// `codex exec ARGS` in `project`, offline against the mock, the environment its own.
fn codex_exec_command(bin: &Path, home: &Home, project: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(["exec", "--skip-git-repo-check"])
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
        .stderr(Stdio::null());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_exec_holds_its_rollout_open_while_it_runs() {
    let bin = codex_binary().found();
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

/// A process that holds `file` open (appending, as Codex does) until killed.
fn holder(file: &Path) -> Child {
    Command::new("sh").arg("-c").arg("exec 3>>\"$0\"; exec sleep 600").arg(file).stdin(Stdio::null()).spawn().unwrap()
}

fn stop(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The machine view's first snapshot, from the last one received on, in which `want` holds for
/// session `id` (listed once), and when. A snapshot comes only when something changed, so the
/// last one received may say it already.
async fn next_state(
    events: &mut tokio::sync::mpsc::Receiver<swarmtop::source::live::Event>,
    last: &mut Option<Box<swarmtop::source::seen::Snapshot>>,
    id: &str,
    want: impl Fn(&swarmtop::source::seen::Seen) -> bool,
) -> (swarmtop::source::seen::Seen, Instant) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(snapshot) = last.as_deref() {
            let mine: Vec<_> = snapshot.sessions.iter().filter(|s| s.id == id).collect();
            assert!(mine.len() <= 1, "{id} listed once: {:#?}", snapshot.sessions);
            if let Some(seen) = mine.first().filter(|s| want(s)) {
                return ((*seen).clone(), Instant::now());
            }
        }
        let event = tokio::time::timeout_at(deadline, events.recv()).await;
        let Ok(Some(event)) = event else { panic!("no snapshot for {id} came") };
        if let swarmtop::source::live::Event::Sessions(snapshot) = event {
            *last = Some(snapshot);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_machine_view_sees_a_session_end_within_a_tick_and_come_back_when_resumed() {
    use swarmtop::source::agents::Env;
    use swarmtop::source::census::{self, machine};
    use swarmtop::source::seen::State;

    let home = Home::new();
    let quiet = home.add_codex("collab_v2");
    let recent = home.add_codex("collab_v1");
    // collab_v2 was last written ten minutes ago (past the idle age), collab_v1 just now.
    let ten_minutes_ago = std::time::SystemTime::now() - Duration::from_secs(600);
    for f in &quiet {
        std::fs::File::options().append(true).open(f).unwrap().set_modified(ten_minutes_ago).unwrap();
    }
    let root_of =
        |files: &[PathBuf], id: &str| files.iter().find(|f| f.to_string_lossy().contains(id)).unwrap().clone();
    let (quiet_id, recent_id) = (home::CODEX_V2_ROOT, home::CODEX_V1_ROOT);
    let quiet_holder = holder(&root_of(&quiet, quiet_id));
    let recent_holder = holder(&root_of(&recent, recent_id));
    let (quiet_pid, recent_pid) = (quiet_holder.id(), recent_holder.id());

    let opts = census::Options {
        window: census::window(30 * 60 * 1000, false),
        env: Env::default().with("HOME", home.path()),
        proc: swarmtop::source::proc::Proc::default(),
        tee_dir: home.run_dir().join("swarmtop"),
    };
    let mut events = machine::spawn(opts);
    let live = |pid: u32| move |s: &swarmtop::source::seen::Seen| s.state == State::Live && s.pid == Some(pid);
    let mut last = None;
    next_state(&mut events, &mut last, quiet_id, live(quiet_pid)).await;
    let (seen, _) = next_state(&mut events, &mut last, recent_id, live(recent_pid)).await;
    assert!(seen.usage.is_some_and(|u| u.rss_bytes > 0), "the row shows the process: {seen:?}");

    // The processes exit: within one tick (2 s) the sessions are no longer live. The one written
    // just now may still be running for all the machine knows (idle); the other has ended.
    let killed = Instant::now();
    stop(quiet_holder);
    stop(recent_holder);
    let (seen, at) = next_state(&mut events, &mut last, quiet_id, |s| s.state != State::Live).await;
    assert_eq!((seen.state, seen.pid), (State::Ended, None));
    assert!(at - killed <= Duration::from_millis(3500), "seen after {:?}", at - killed);
    let (seen, _) = next_state(&mut events, &mut last, recent_id, |s| s.state != State::Live).await;
    assert_eq!((seen.state, seen.pid), (State::Idle, None));

    // Resumed (a new process appends to the same rollout): live again, the same single row.
    let resumed = holder(&root_of(&quiet, quiet_id));
    let again = resumed.id();
    let (seen, _) = next_state(&mut events, &mut last, quiet_id, live(again)).await;
    assert_eq!(seen.pid, Some(again));
    stop(resumed);
}

/// The real `codex app-server` behind `swarmtop tee`, as a user runs it (the socket in the
/// default folder): mid-run, while the app-server also writes the session's rollouts, `ps` and
/// the machine view list the session once, as the tee's live row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_codex_session_through_a_tee_and_in_rollouts_is_one_row() {
    use std::sync::{Arc, Mutex};
    use support::harness::{World, run_scenario};
    use support::scenario::Pacing;
    use swarmtop::source::agents::Env;
    use swarmtop::source::census::{self, machine};
    use swarmtop::source::seen::State;

    let bin = codex_binary().found();
    let Some(codex) = skip_unless(bin, "codex through a tee") else { return };
    let world_root: Arc<Mutex<Option<PathBuf>>> = Arc::default();
    let launch = {
        let world_root = Arc::clone(&world_root);
        move |world: &World| {
            let root = world.root.path().to_owned();
            *world_root.lock().unwrap() = Some(root.clone());
            let args: Vec<OsString> = vec![
                format!("XDG_RUNTIME_DIR={}", root.join("run").display()).into(),
                format!("XDG_STATE_HOME={}", root.join("state").display()).into(),
                env!("CARGO_BIN_EXE_swarmtop").into(),
                "tee".into(),
                "--".into(),
                codex.into(),
                "app-server".into(),
            ];
            (OsString::from("env"), args)
        }
    };
    let (first_child_tx, first_child_rx) = tokio::sync::oneshot::channel();
    let mid_run = tokio::spawn({
        let world_root = Arc::clone(&world_root);
        async move {
            first_child_rx.await.ok()?;
            let root = world_root.lock().unwrap().clone()?;
            let ps = tokio::process::Command::new(env!("CARGO_BIN_EXE_swarmtop"))
                .args(["ps", "--json"])
                .env("HOME", root.join("home"))
                .env("CODEX_HOME", root.join("codex-home"))
                .env("XDG_RUNTIME_DIR", root.join("run"))
                .env_remove("CLAUDE_CONFIG_DIR")
                .output()
                .await
                .ok()?;
            let rows: Value = serde_json::from_slice(&ps.stdout).ok()?;
            let opts = census::Options {
                window: census::window(30 * 60 * 1000, false),
                env: Env::default().with("HOME", root.join("home")).with("CODEX_HOME", root.join("codex-home")),
                proc: swarmtop::source::proc::Proc::default(),
                tee_dir: root.join("run/swarmtop"),
            };
            let mut events = machine::spawn(opts);
            let mut snapshot = None;
            while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
                if let swarmtop::source::live::Event::Sessions(s) = event {
                    snapshot = Some(s);
                    break;
                }
            }
            let rollouts = walk(&root.join("codex-home/sessions"));
            Some((rows, snapshot?, rollouts))
        }
    });
    let run = run_scenario(Box::new(launch), Pacing::TEST, Duration::from_secs(60), Some(first_child_tx))
        .await
        .unwrap_or_else(|e| panic!("the scripted session did not complete: {e}"));
    let (rows, snapshot, rollouts) = mid_run.await.unwrap().expect("ps and the machine view ran mid-run");
    let root = run.session.root_thread.clone();
    assert!(!rollouts.is_empty(), "the app-server wrote rollouts beside the tee");

    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "one session, once: {rows:#?}");
    let row = &rows[0];
    assert_eq!(row["id"], root.as_str());
    assert_eq!(row["tool"], "codex");
    assert_eq!(row["state"], "live");
    assert!(is_socket(row["source"].as_str().unwrap()), "the tee's stream wins: {row}");
    assert!(row["pid"].as_u64().is_some(), "{row}");

    let seen: Vec<_> = snapshot.sessions.iter().collect();
    assert_eq!(seen.len(), 1, "the machine view too: {seen:#?}");
    assert_eq!((seen[0].id.as_str(), seen[0].state), (root.as_str(), State::Live));
    assert!(is_socket(seen[0].source.as_str()));
}

/// A tee's socket (`tee-<pid>.sock`), not a session file.
fn is_socket(path: &str) -> bool {
    Path::new(path).extension().is_some_and(|e| e == "sock")
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// A minimal stdio client of the app-server (requests by id, notifications by method).
struct AppServer {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    next_id: u64,
}

impl AppServer {
    fn start(program: &Path, args: &[OsString], home: &Home, project: &Path) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .env("CODEX_HOME", home.path().join(".codex"))
            .env("HOME", home.path())
            .env("MOCK_API_KEY", "sk-mock-not-a-real-key")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("RUST_LOG", "warn")
            .env("XDG_RUNTIME_DIR", home.run_dir())
            .env("XDG_STATE_HOME", home.state_dir())
            .env_remove("OPENAI_API_KEY")
            .current_dir(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let mut server = Self { stdin: child.stdin.take(), child, lines, next_id: 1 };
        server.request(
            "initialize",
            &serde_json::json!({"clientInfo": {"name": "liveness", "title": null, "version": "0"}}),
        );
        server.send(&serde_json::json!({"method": "initialized"}));
        server
    }

    fn send(&mut self, v: &Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&serde_json::json!({"id": id, "method": method, "params": params}));
        self.until(&format!("the answer to {method}"), |v| v["id"] == id && v.get("method").is_none())
    }

    fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("never got {what}"));
            if want(&v) {
                return v;
            }
        }
    }

    fn turn(&mut self, thread: &str, text: &str) {
        let input = serde_json::json!([{"type": "text", "text": text}]);
        self.request("turn/start", &serde_json::json!({"threadId": thread, "input": input}));
    }

    fn turn_completed(&mut self) {
        self.until("turn/completed", |v| v["method"] == "turn/completed");
    }

    fn close(mut self) {
        drop(self.stdin.take());
        wait_exit(&mut self.child);
    }
}

/// A session run by a plain `codex app-server`, then resumed by one behind `swarmtop tee`: the
/// tee starts mid-session. While it runs the session is one live row (the tee's), and its tokens
/// are the first turn's (only in the rollout, from before the tee) plus what the tee carries,
/// exactly what the mock served, nothing counted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tee_started_mid_session_adds_to_the_rollout_and_is_one_row() {
    let bin = codex_binary().found();
    let Some(codex) = skip_unless(bin, "a tee started mid-session") else { return };
    let mock = MockModel::start(SlowCodex).await.unwrap();
    let served_tokens = || mock.served().iter().filter_map(|s| s.usage).map(|u| u.total()).sum::<u64>();
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/config.toml"), config_toml(&mock.base_url())).unwrap();
    let project = home.path().join("shop");
    std::fs::create_dir_all(&project).unwrap();

    tokio::task::block_in_place(|| {
        let mut plain = AppServer::start(&codex, &["app-server".into()], &home, &project);
        let started = plain.request("thread/start", &serde_json::json!({"cwd": project.display().to_string()}));
        let thread = started["result"]["thread"]["id"].as_str().unwrap().to_owned();
        plain.turn(&thread, "first");
        plain.turn_completed();
        plain.close();
        let first = served_tokens();
        assert!(first > 0);

        let tee_args: Vec<OsString> =
            vec!["tee".into(), "--".into(), codex.clone().into_os_string(), "app-server".into()];
        let mut teed = AppServer::start(Path::new(env!("CARGO_BIN_EXE_swarmtop")), &tee_args, &home, &project);
        teed.request("thread/resume", &serde_json::json!({"threadId": thread}));
        teed.turn(&thread, "second");
        // The answer takes THINK: meanwhile the session is the tee's live row, with turn one's tokens.
        let rows = ps(&home);
        assert_eq!(rows.len(), 1, "one session, once: {rows:#?}");
        let row = &rows[0];
        assert_eq!(row["id"], thread.as_str());
        assert_eq!(row["state"], "live");
        assert!(is_socket(row["source"].as_str().unwrap()), "the tee's stream wins: {row}");
        assert_eq!(row["project"], project.display().to_string().as_str());
        assert_eq!(row["tokens"], first, "the rollout fills in what the tee missed: {row}");

        teed.turn_completed();
        let rows = ps(&home);
        assert_eq!(rows.len(), 1, "one session, once: {rows:#?}");
        assert_eq!(rows[0]["tokens"], served_tokens(), "both turns, each once: {:#?}", rows[0]);
        assert!(served_tokens() > first);
        teed.close();
    });
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot.
fn start_ticks(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(19).unwrap().to_owned()
}

#[test]
fn a_running_session_is_listed_however_long_it_has_been_quiet() {
    let home = Home::new();
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 86_400);
    // A Claude Code session last written two days ago, whose process still runs (an open
    // `claude` left waiting): its `sessions/<pid>.json`, as 2.1.332 writes it, names it.
    let claude_file = home.add_old_claude_session();
    let claude_id = claude_file.file_stem().unwrap().to_str().unwrap().to_owned();
    let waiting = Command::new("sleep").arg("600").spawn().unwrap();
    let sessions = home.path().join(".claude/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let session_file = sessions.join(format!("{}.json", waiting.id()));
    std::fs::write(
        &session_file,
        format!(
            r#"{{"pid":{},"sessionId":"{claude_id}","cwd":"/home/dev/old","procStart":"{}","kind":"interactive","status":"idle"}}"#,
            waiting.id(),
            start_ticks(waiting.id())
        ),
    )
    .unwrap();
    // A Codex thread last written two days ago that a process still holds (a loaded app-server thread).
    let codex_files = home.add_codex("collab_v2");
    for f in &codex_files {
        std::fs::File::options().append(true).open(f).unwrap().set_modified(two_days_ago).unwrap();
    }
    let loaded = holder(codex_files.iter().find(|f| f.to_string_lossy().contains(home::CODEX_V2_ROOT)).unwrap());

    let rows = home::wait_for("both running sessions", || {
        let rows = ps(&home);
        (rows.len() == 2 && rows.iter().all(|r| r["state"] == "live")).then_some(rows)
    });
    assert_eq!(only_row(&rows, &claude_id)["pid"], waiting.id());
    let codex = only_row(&rows, home::CODEX_V2_ROOT);
    assert_eq!(codex["pid"], loaded.id());
    assert_eq!(codex["agents"], 4, "the whole session, children too: {codex}");

    // Once they exit they are outside the window again (the stale `sessions/` file counts for nothing).
    stop(waiting);
    stop(loaded);
    assert_eq!(ps(&home), Vec::<Value>::new());
    assert!(session_file.exists());
}

/// The machine summary's `N running` (`machine: 1 live · 1 session · 5 running · $0.21/min`).
fn running_agents(screen: &str) -> Option<u32> {
    let line = screen.lines().find(|l| l.trim_start().starts_with("machine:"))?;
    line.split(" · ").find_map(|part| part.strip_suffix(" running")?.trim().parse().ok())
}

/// The agents pane: the left box of every body line.
fn agents_pane(screen: &str) -> String {
    screen.lines().skip(2).map(|l| l.split("││").next().unwrap_or(l).to_owned()).collect::<Vec<_>>().join("\n")
}

/// SIGKILL writes no end: the lead's rollout stays mid-turn, waiting on its children, and theirs
/// mid-turn too. The machine view showed all seven agents running for good (`7 running`, `●`, the
/// lead "waiting on 6", elapsed times growing) once the process was gone; the machine source now
/// tells the model the session stopped (`Event::Stopped`), so nothing of it goes on: `◼
/// interrupted`, none running, times stopped, in a view that watched the kill and in one opened
/// after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_exec_killed_mid_turn_leaves_no_agent_running_in_the_machine_view() {
    let bin = codex_binary().found();
    let Some(bin) = skip_unless(bin, "codex killed mid-turn") else { return };
    // About 45 s from first answer to summary: the children run for half a minute.
    let mock = MockModel::start(RefactorScenario { pacing: Pacing { scale: 1.0 } }).await.unwrap();
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/config.toml"), config_toml(&mock.base_url())).unwrap();
    let project = home.path().join("acme-auth");
    for (path, text) in WORKSPACE_FILES {
        let p = project.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let tools = home.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("cargo"), FAKE_CARGO).unwrap();
    std::fs::set_permissions(tools.join("cargo"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut path = OsString::from(&tools);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut run = codex_exec_command(&bin, &home, &project, &[ROOT_PROMPT])
        .env("SWARMTOP_DEMO_LINE_DELAY", "0.25")
        .env("PATH", path)
        .spawn()
        .unwrap();
    let Some(view) = tmux::Tmux::start("killed", 120, 32, &home.shell_command("")) else {
        let _ = run.kill();
        let _ = run.wait();
        return;
    };
    let before = tokio::task::block_in_place(|| {
        view.wait_for("the children running", |s| running_agents(s).is_some_and(|n| n >= 4))
    });
    eprintln!("before the kill:\n{before}");
    assert!(agents_pane(&before).contains("● "), "{before}");
    run.kill().unwrap();
    run.wait().unwrap();
    let after = tokio::task::block_in_place(|| {
        view.wait_for("nothing running", |s| running_agents(s) == Some(0) && agents_pane(s).contains("◼"))
    });
    eprintln!("after the kill:\n{after}");
    let pane = agents_pane(&after);
    assert!(!pane.contains("● ") && !pane.contains("◷"), "nothing runs or waits once the process is gone:\n{after}");
    assert!(!after.lines().next().unwrap_or("").contains("active"), "the header counts no agent active:\n{after}");
    // Their elapsed times stop with it: the children's rows (their models are the 5.6 family) read
    // the same a couple of seconds later.
    let children = |pane: &str| pane.lines().filter(|l| l.contains(" 5.6-")).map(str::to_owned).collect::<Vec<_>>();
    assert!(!children(&pane).is_empty(), "{after}");
    std::thread::sleep(Duration::from_millis(2200));
    let later = view.screen();
    assert_eq!(children(&agents_pane(&later)), children(&pane), "times stopped:\n{later}");
    let rows = ps(&home);
    let row = rows.iter().find(|r| r["tool"] == "codex").expect("the session's row");
    assert_eq!((&row["state"], &row["pid"]), (&Value::from("idle"), &Value::Null), "{row}");
    // A view opened after the kill never saw the session live: idle from its first look, it is
    // as stopped (it showed `5 running` until the session aged into `ended`, five minutes on).
    drop(view);
    let Some(later) = tmux::Tmux::start("killed-later", 120, 32, &home.shell_command("")) else { return };
    let screen = tokio::task::block_in_place(|| {
        later.wait_for("nothing running in a view opened later", |s| {
            running_agents(s) == Some(0) && agents_pane(s).contains("◼")
        })
    });
    assert!(!agents_pane(&screen).contains("● "), "{screen}");
}
