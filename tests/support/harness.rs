//! Puts the pieces together: finds the real codex binary, prepares an isolated `CODEX_HOME` and workspace,
//! starts the mock model and drives one session of the scenario through a given command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;
use tokio::sync::oneshot;

use super::codex_driver::{DriveOptions, ServerCommand, Session, drive};
use super::mock_model::{MockModel, Served};
use super::scenario::{FAKE_CARGO, Pacing, ROOT_MODEL, ROOT_PROMPT, RefactorScenario, WORKSPACE_FILES};
use super::traffic::Observed;

/// The pinned server version (scripts/setup-codex.sh installs it).
pub const CODEX_VERSION: &str = "0.171.0";

pub enum CodexBinary {
    Found(PathBuf),
    /// It cannot be installed on this machine (no npm); the reason, for the skip message.
    Unavailable(String),
}

impl CodexBinary {
    /// The binary, or why there is none (the reason a test skips).
    pub fn found(self) -> Result<PathBuf, String> {
        match self {
            Self::Found(p) => Ok(p),
            Self::Unavailable(why) => Err(why),
        }
    }

    /// The binary for an end-to-end test, or `None` after saying why it is skipped. In CI a missing
    /// binary fails the test instead: the end-to-end tests must run there.
    pub fn or_skip(self, test: &str) -> Option<PathBuf> {
        match self {
            Self::Found(p) => Some(p),
            Self::Unavailable(why) if std::env::var_os("CI").is_none() => {
                eprintln!("SKIPPED {test}: {why}");
                None
            }
            Self::Unavailable(why) => panic!("the end-to-end test must run in CI: {why}"),
        }
    }
}

/// The real codex binary: `SWARMTOP_CODEX_BIN` if set, else whatever `scripts/setup-codex.sh` installs
/// (idempotent, so this is instant once the cache folder exists). An install that fails although npm is
/// there is an error, not a reason to skip.
pub fn codex_binary() -> CodexBinary {
    if let Some(bin) = std::env::var_os("SWARMTOP_CODEX_BIN") {
        return CodexBinary::Found(PathBuf::from(bin));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-codex.sh");
    let out = Command::new("bash").arg(&script).output().expect("running scripts/setup-codex.sh");
    if out.status.success() {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        return CodexBinary::Found(PathBuf::from(path));
    }
    let npm = Command::new("npm").arg("--version").output();
    if npm.is_err() || !npm.is_ok_and(|o| o.status.success()) {
        return CodexBinary::Unavailable(format!(
            "npm is not installed, so scripts/setup-codex.sh cannot install @openai/codex@{CODEX_VERSION}"
        ));
    }
    panic!("scripts/setup-codex.sh failed although npm is available:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// An isolated world for one server: its `CODEX_HOME`, the workspace the agents work in, and the
/// stand-in tools on their `PATH`. Everything is deleted with `root`.
pub struct World {
    pub root: TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
    pub tools: PathBuf,
}

impl World {
    pub fn new(base_url: &str) -> std::io::Result<Self> {
        let root = tempfile::Builder::new().prefix("swarmtop-e2e-").tempdir()?;
        let home = root.path().join("codex-home");
        let work = root.path().join("acme-auth");
        let tools = root.path().join("tools");
        for d in [&home, &work, &tools] {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(home.join("config.toml"), config_toml(base_url))?;
        for (path, text) in WORKSPACE_FILES {
            let p = work.join(path);
            std::fs::create_dir_all(p.parent().expect("workspace files are in folders"))?;
            std::fs::write(p, text)?;
        }
        let cargo = tools.join("cargo");
        std::fs::write(&cargo, FAKE_CARGO)?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(Self { root, home, work, tools })
    }

    /// The environment of the server process (and so of the commands the agents run).
    pub fn env(&self, pacing: Pacing) -> Vec<(OsString, OsString)> {
        let mut path = OsString::from(&self.tools);
        if let Some(p) = std::env::var_os("PATH") {
            path.push(":");
            path.push(p);
        }
        vec![
            ("CODEX_HOME".into(), self.home.clone().into()),
            // Keeps codex away from the developer's own ~/.codex, git config and shell profile.
            ("HOME".into(), self.home.clone().into()),
            ("MOCK_API_KEY".into(), "sk-mock-not-a-real-key".into()),
            ("PATH".into(), path),
            ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
            ("no_proxy".into(), "127.0.0.1,localhost".into()),
            ("RUST_LOG".into(), "warn".into()),
            ("SWARMTOP_DEMO_LINE_DELAY".into(), pacing.command_line_delay().into()),
        ]
    }
}

/// Proxies would route the loopback mock through somewhere else; the test only ever talks to 127.0.0.1.
pub fn env_remove() -> Vec<OsString> {
    ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_API_KEY"]
        .into_iter()
        .map(OsString::from)
        .collect()
}

/// wire.md §7: the mock provider, no retries (or the failing child would back off for minutes), and
/// `max_depth = 2` (or the planner's spawns are refused with nothing on the wire).
pub fn config_toml(base_url: &str) -> String {
    format!(
        r#"model = "{ROOT_MODEL}"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[agents]
max_depth = 2
max_threads = 8

# Hermetic: with these on, codex 0.171.0 tries github.com and chatgpt.com at startup (plugin sync);
# with them off, strace shows connections to the loopback mock only.
[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
"#
    )
}

/// One finished run: what the client saw, what the mock served, and the tree read off the wire.
pub struct Run {
    pub session: Session,
    pub served: Vec<Served>,
    pub observed: Observed,
    pub world: World,
}

/// The command line that serves the protocol, given the world it runs in. The test passes either
/// `codex app-server` or `swarmtop tee … -- codex app-server`.
pub type Launch<'a> = Box<dyn FnOnce(&World) -> (OsString, Vec<OsString>) + 'a>;

pub async fn run_scenario(
    launch: Launch<'_>,
    pacing: Pacing,
    timeout: Duration,
    on_first_child: Option<oneshot::Sender<()>>,
) -> Result<Run, String> {
    let mock = MockModel::start(RefactorScenario { pacing }).await.map_err(|e| format!("mock: {e}"))?;
    run_script(&mock, launch, pacing, ROOT_PROMPT, timeout, on_first_child).await
}

/// [`run_scenario`] with the script of a mock the caller started (and can watch while it serves), and
/// the root prompt that script expects.
pub async fn run_script(
    mock: &MockModel,
    launch: Launch<'_>,
    pacing: Pacing,
    prompt: &str,
    timeout: Duration,
    on_first_child: Option<oneshot::Sender<()>>,
) -> Result<Run, String> {
    let world = World::new(&mock.base_url()).map_err(|e| format!("preparing the world: {e}"))?;
    let (program, args) = launch(&world);
    let cmd = ServerCommand {
        program,
        args,
        env: world.env(pacing),
        env_remove: env_remove(),
        cwd: world.work.clone(),
        stderr: world.root.path().join("server.stderr"),
    };
    let opts = DriveOptions {
        prompt: prompt.to_owned(),
        thread_cwd: world.work.to_string_lossy().into_owned(),
        // Long enough for a child's trailing status lines after its `turn/completed`, short enough
        // to keep the test fast.
        quiet: Duration::from_millis(750),
        timeout,
        on_first_child,
    };
    let session = match drive(cmd, opts).await {
        Ok(s) => s,
        Err(e) => {
            let stderr = std::fs::read_to_string(world.root.path().join("server.stderr")).unwrap_or_default();
            let tail: String =
                stderr.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            return Err(format!("{e}\nmock served: {:#?}\nserver stderr (tail):\n{tail}", mock.served()));
        }
    };
    let observed = Observed::from_lines(
        session.transcript.iter().filter(|c| c.dir == super::codex_driver::Dir::S2c).map(|c| c.line.as_slice()),
    );
    Ok(Run { served: mock.served(), session, observed, world })
}
