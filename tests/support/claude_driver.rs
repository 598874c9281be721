//! Runs the real Claude Code CLI headless and offline (wire.md §8): a fresh HOME and project in a temp dir,
//! the mock of `anthropic.rs` as the API, `claude -p … --output-format stream-json --verbose`, stdout written
//! to a file as it comes (so a test can follow it while it grows), optionally a SIGINT mid-stream.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::anthropic::{MockAnthropic, Script, Served};
use super::claude_scenario::{PROJECT_FILES, ROOT_MODEL, ROOT_PROMPT, Scenario};

/// The pinned CLI version (scripts/setup-claude.sh installs it).
pub const CLAUDE_VERSION: &str = "2.1.332";

/// How often the CLI retries a failed request. 2.1.332 reads `CLAUDE_CODE_MAX_RETRIES` (clamped to 15;
/// default 10, about 3 minutes of back-off for a 529): with 1, a failing child gives up in about a second.
pub const MAX_RETRIES: u32 = 1;

pub enum ClaudeBinary {
    Found(PathBuf),
    /// It cannot be installed on this machine (no npm); the reason, for the skip message.
    Unavailable(String),
}

impl ClaudeBinary {
    /// The binary, or why there is none (the reason a test skips).
    pub fn found(self) -> Result<PathBuf, String> {
        match self {
            Self::Found(p) => Ok(p),
            Self::Unavailable(why) => Err(why),
        }
    }
}

/// The real CLI: `SWARMTOP_CLAUDE_BIN` if set, else whatever `scripts/setup-claude.sh` installs (idempotent,
/// instant once the cache folder exists). An install that fails although npm is there is an error.
pub fn claude_binary() -> ClaudeBinary {
    if let Some(bin) = std::env::var_os("SWARMTOP_CLAUDE_BIN") {
        return ClaudeBinary::Found(PathBuf::from(bin));
    }
    // Tests of one binary run in parallel: one install at a time, or npm rewrites the binary while
    // another test starts it ("Text file busy").
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-claude.sh");
    let out = Command::new("bash").arg(&script).output().expect("running scripts/setup-claude.sh");
    if out.status.success() {
        return ClaudeBinary::Found(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let npm = Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|o| o.status.success()) {
        return ClaudeBinary::Unavailable(format!(
            "npm is not installed, so scripts/setup-claude.sh cannot install @anthropic-ai/claude-code@{CLAUDE_VERSION}"
        ));
    }
    panic!("scripts/setup-claude.sh failed although npm is available:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// A fresh HOME and project for one run; deleted with `root`.
pub struct World {
    pub root: TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    /// The stream-json stdout, written as the CLI prints it.
    pub stream: PathBuf,
    pub stderr: PathBuf,
}

impl World {
    pub fn new() -> std::io::Result<Self> {
        let root = tempfile::Builder::new().prefix("swarmtop-e2e-claude-").tempdir()?;
        let home = root.path().join("home");
        let project = root.path().join("demo-project");
        // The projects folder exists before the CLI starts, so a follower can watch it from the start.
        for d in [&home, &home.join(".claude/projects"), &project, &root.path().join("tmp")] {
            std::fs::create_dir_all(d)?;
        }
        for (name, text) in PROJECT_FILES {
            std::fs::write(project.join(name), text)?;
        }
        let stream = root.path().join("stream.ndjson");
        let stderr = root.path().join("stderr.txt");
        Ok(Self { root, home, project, stream, stderr })
    }

    /// `~/.claude/projects`, where the CLI writes the session's transcripts.
    pub fn projects(&self) -> PathBuf {
        self.home.join(".claude/projects")
    }

    /// The one session folder's parent (`projects/<project>/`), once the CLI has created it.
    pub fn project_dir(&self) -> Option<PathBuf> {
        std::fs::read_dir(self.projects()).ok()?.filter_map(Result::ok).map(|e| e.path()).find(|p| p.is_dir())
    }
}

pub struct RunOptions {
    pub timeout: Duration,
    /// Signal the CLI this long after a signalled answer started streaming.
    pub interrupt_after: Option<Interrupt>,
    /// Turn the CLI's own OpenTelemetry on, traces and logs to this OTLP/HTTP endpoint.
    pub telemetry: Option<String>,
}

/// What [`RunOptions::interrupt_after`] sends, and when.
#[derive(Clone, Copy, Debug)]
pub struct Interrupt {
    pub after: Duration,
    /// SIGINT as Ctrl-C (the CLI writes its interrupt down); SIGKILL leaves its files as they were.
    pub signal: nix::sys::signal::Signal,
}

impl Interrupt {
    pub fn sigint(after: Duration) -> Self {
        Self { after, signal: nix::sys::signal::Signal::SIGINT }
    }

    pub fn sigkill(after: Duration) -> Self {
        Self { after, signal: nix::sys::signal::Signal::SIGKILL }
    }
}

pub struct ClaudeRun {
    pub world: World,
    pub served: Vec<Served>,
    pub exit: std::process::ExitStatus,
    pub elapsed: Duration,
    pub interrupted: bool,
}

impl ClaudeRun {
    pub fn stream(&self) -> Vec<u8> {
        std::fs::read(&self.world.stream).unwrap_or_default()
    }
}

/// The CLI's environment: only what it needs, so nothing of the developer's (keys, proxies, config) leaks in.
pub fn env(world: &World, base_url: &str, telemetry: Option<&str>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        ("HOME".into(), world.home.clone().into()),
        ("TMPDIR".into(), world.root.path().join("tmp").into()),
        ("ANTHROPIC_BASE_URL".into(), base_url.into()),
        ("ANTHROPIC_API_KEY".into(), "sk-test-not-a-real-key".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        // Only needed as root: the CLI refuses --dangerously-skip-permissions under root otherwise.
        ("IS_SANDBOX".into(), "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES".into(), MAX_RETRIES.to_string().into()),
        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    if let Some(p) = std::env::var_os("PATH") {
        env.push(("PATH".into(), p));
    }
    if let Some(endpoint) = telemetry {
        env.retain(|(k, _)| k != "DISABLE_TELEMETRY");
        for (k, v) in [
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
            // Traces are behind this flag in 2.1.332.
            ("CLAUDE_CODE_ENHANCED_TELEMETRY_BETA", "1"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_LOGS_EXPORTER", "otlp"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_TRACES_EXPORT_INTERVAL", "500"),
            ("OTEL_LOGS_EXPORT_INTERVAL", "500"),
        ] {
            env.push((k.into(), v.into()));
        }
    }
    env
}

/// Runs one session of `scenario` with the real CLI in `world` (fresh from [`World::new`]) and
/// returns once it has exited.
pub async fn run(bin: &Path, scenario: Scenario, opts: RunOptions, world: World) -> Result<ClaudeRun, String> {
    run_with(bin, scenario, opts, world, &[]).await
}

/// [`run`] with more CLI arguments (`--include-partial-messages`, ...).
pub async fn run_with(
    bin: &Path,
    scenario: impl Script,
    opts: RunOptions,
    world: World,
    extra_args: &[&str],
) -> Result<ClaudeRun, String> {
    let mock = MockAnthropic::start(scenario).await.map_err(|e| format!("mock: {e}"))?;
    let mut streaming = mock.streaming();
    let stdout = std::fs::File::create(&world.stream).map_err(|e| e.to_string())?;
    let stderr = std::fs::File::create(&world.stderr).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(bin)
        .args(["-p", ROOT_PROMPT, "--output-format", "stream-json", "--verbose", "--model", ROOT_MODEL])
        // A run that names its permission mode is checked by it; the rest never ask.
        .args((!extra_args.contains(&"--permission-mode")).then_some("--dangerously-skip-permissions"))
        .args(extra_args)
        .env_clear()
        .envs(env(&world, &mock.base_url(), opts.telemetry.as_deref()))
        .current_dir(&world.project)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawning {}: {e}", bin.display()))?;
    let mut interrupted = false;
    if let Some(Interrupt { after, signal }) = opts.interrupt_after {
        let signalled = tokio::time::timeout(opts.timeout, streaming.changed()).await;
        if !matches!(signalled, Ok(Ok(()))) {
            return Err(format!("the answer to interrupt never streamed; mock served: {:#?}", mock.served()));
        }
        tokio::time::sleep(after).await;
        let pid = child.id().ok_or("the CLI exited before the interrupt")?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).map_err(|e| e.to_string())?), signal)
            .map_err(|e| format!("{signal}: {e}"))?;
        interrupted = true;
    }
    let waited = tokio::time::timeout(opts.timeout.saturating_sub(started.elapsed()), child.wait()).await;
    let Ok(exit) = waited else {
        let _ = child.kill().await;
        let stderr = std::fs::read_to_string(&world.stderr).unwrap_or_default();
        return Err(format!(
            "the CLI did not finish in {:?}; stderr:\n{stderr}\nmock served: {:#?}",
            opts.timeout,
            mock.served()
        ));
    };
    let exit = exit.map_err(|e| e.to_string())?;
    Ok(ClaudeRun { served: mock.served(), world, exit, elapsed: started.elapsed(), interrupted })
}

/// Copies everything the run left (stream-json stdout, stderr, the transcripts and sidecars) to `dest`.
pub fn keep(run: &ClaudeRun, dest: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dest)?;
    std::fs::copy(&run.world.stream, dest.join("stream.ndjson"))?;
    std::fs::copy(&run.world.stderr, dest.join("stderr.txt"))?;
    copy_tree(&run.world.projects(), &dest.join("projects"))?;
    let served: Vec<String> = run.served.iter().map(|s| format!("{s:?}")).collect();
    std::fs::write(dest.join("served.txt"), served.join("\n") + "\n")
}

/// With `SWARMTOP_E2E_KEEP=DIR` set, keeps what the run left in `DIR/<scenario>/` (to read a real
/// run's files, or to make a capture of them).
pub fn keep_if_asked(run: &ClaudeRun, scenario: &str) {
    if let Some(dir) = std::env::var_os("SWARMTOP_E2E_KEEP") {
        keep(run, &PathBuf::from(dir).join(scenario)).expect("keeping the run");
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

/// The pinned CLI, or `None` (the test is skipped, saying why) outside CI; in CI a missing CLI
/// fails the test.
pub fn binary() -> Option<PathBuf> {
    match claude_binary() {
        ClaudeBinary::Found(p) => Some(p),
        ClaudeBinary::Unavailable(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED: {why}");
            None
        }
        ClaudeBinary::Unavailable(why) => panic!("the end-to-end test must run in CI: {why}"),
    }
}
