//! Running the real OpenCode CLI (`opencode-ai` 1.18.33) offline: its binary, a home of its own whose
//! config points at the mock of `chat_completions.rs`, its command with everything that would go online
//! off, and `opencode serve` on a free loopback port. Shared by `tests/e2e_opencode.rs` and
//! `tests/e2e_interrupt.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::chat_completions::MockChat;

pub const VERSION: &str = "1.18.33";

/// How long a test waits for what it expects before it fails. Generous on purpose: each test
/// waits on the condition itself, never for a fixed time, so a quiet machine is as fast as
/// before, and a loaded one (load average 20 on two cores) is slow rather than failing.
pub const PATIENCE: Duration = Duration::from_secs(240);

/// `SWARMTOP_OPENCODE_BIN`, else what `scripts/setup-opencode.sh` installed (`None`: not installed).
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWARMTOP_OPENCODE_BIN") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!(".cache/opencode-{VERSION}/node_modules/opencode-linux-x64/bin/opencode"));
    p.exists().then_some(p)
}

/// The binary for an end-to-end test, or `None` after saying the test is skipped. In CI a missing
/// binary fails the test instead: the end-to-end tests must run there.
pub fn binary_or_skip() -> Option<PathBuf> {
    let found = binary();
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI: the OpenCode binary is missing (scripts/setup-opencode.sh)");
        eprintln!("SKIPPED: no OpenCode binary; run scripts/setup-opencode.sh");
    }
    found
}

pub fn config(base_url: &str) -> Value {
    let model = |name: &str, i: f64, o: f64| {
        json!({"name": name, "tool_call": true,
               "cost": {"input": i, "output": o, "cache_read": i / 10.0, "cache_write": i * 1.25},
               "limit": {"context": 200_000, "output": 8192}})
    };
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "model": "mock/mock-large",
        "small_model": "mock/mock-small",
        "enabled_providers": ["mock"],
        "subagent_depth": 2,
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock Provider",
            "options": {"baseURL": base_url, "apiKey": "mock-key-not-secret"},
            "models": {"mock-large": model("Mock Large", 3.0, 15.0), "mock-small": model("Mock Small", 1.0, 5.0)},
        }},
        "agent": {"general": {"permission": {"task": "allow"}}},
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny", "external_directory": "allow"},
    })
}

/// OpenCode's own environment, all of it under `root`, with everything that would go online off.
pub fn command(bin: &Path, root: &Path) -> Command {
    let home = root.join("home");
    let mut cmd = Command::new(bin);
    // OpenCode takes a session's directory from `PWD`, as a shell sets it, not from its cwd.
    cmd.current_dir(root.join("work"))
        .env("PWD", root.join("work"))
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_CLAUDE_CODE", "1")
        .env("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1")
        .stdin(Stdio::null());
    cmd
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}

/// Kills the server when the test ends, however it ends.
pub struct Server(pub std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh OpenCode home with the mock's config.
pub fn home(mock: &MockChat) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("work")).unwrap();
    std::fs::create_dir_all(root.join("home/.config/opencode")).unwrap();
    std::fs::create_dir_all(root.join("run")).unwrap();
    std::fs::write(root.join("home/.config/opencode/opencode.json"), config(&mock.base_url()).to_string()).unwrap();
    dir
}

/// `opencode serve` on loopback at `port`, its output dropped; killed when the test ends.
pub fn serve(bin: &Path, root: &Path, port: &str) -> Server {
    Server(
        command(bin, root)
            .args(["serve", "--port", port, "--hostname", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

pub fn wait_http(authority: &str) {
    let started = Instant::now();
    // A server still starting may accept and never answer: probed with timeouts.
    while !swarmtop::source::opencode::probe(authority) {
        assert!(started.elapsed() < PATIENCE, "opencode serve never answered within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET url`'s JSON answer.
pub fn get_json(agent: &ureq::Agent, url: &str) -> Value {
    let mut answer = agent.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    serde_json::from_slice(&answer.body_mut().read_to_vec().expect("a body")).expect("JSON")
}

/// `POST url` with a JSON `body`: its JSON answer (`Null` for none).
pub fn post_json(agent: &ureq::Agent, url: &str, body: &Value) -> Value {
    let mut answer = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    serde_json::from_slice(&answer.body_mut().read_to_vec().expect("a body")).unwrap_or(Value::Null)
}

/// OpenCode: the root hands a long task to a child, whose answer streams one word every 200 ms.
pub struct LongTask;

impl super::chat_completions::Script for LongTask {
    fn reply(&self, req: &super::chat_completions::Request<'_>) -> super::chat_completions::Reply {
        use super::chat_completions::{Call, Reply, Usage};
        let usage = Usage { prompt: 1000, cached: 0, completion: 20, reasoning: 0 };
        let fast = |text: &str, calls| Reply::Stream {
            text: text.to_owned(),
            calls,
            usage,
            pieces: 3,
            delay: Duration::from_millis(10),
        };
        match (req.agent.as_str(), req.step) {
            ("root", 0) => {
                let prompt = "[[AGENT:child_slow]] Write the long report.";
                let arguments = json!({"description": "Long task", "prompt": prompt, "subagent_type": "general"});
                fast("Delegating.", vec![Call { id: "call_slow".into(), name: "task".into(), arguments }])
            }
            ("root", _) => fast("Root finished.", vec![]),
            ("child_slow", _) => Reply::Stream {
                text: "word ".repeat(300),
                calls: vec![],
                usage,
                pieces: 300,
                delay: Duration::from_millis(200),
            },
            _ => fast("Side answer.", vec![]),
        }
    }
}
