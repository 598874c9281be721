//! A fresh HOME (temp dir) holding agent sessions as the agents write them, for the discovery
//! tests: Claude Code projects of both transcript layouts, Codex rollouts of several sessions,
//! and the private runtime folder where `swarmtop tee` publishes its socket.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const CLAUDE_OLD_SESSION: &str = "4d5611e5-241a-462a-8d15-5122611a9569";
/// The synthetic Claude Code 2.1.332 session (wire.md §6 layout: `subagents/agent-<17hex>.jsonl`
/// beside an `agent-<id>.meta.json` sidecar).
pub const CLAUDE_NEW_SESSION: &str = "7b1c2d3e-5f60-4a71-8b92-03a4b5c6d332";
pub const CLAUDE_NEW_AGENT: &str = "a1b2c3d4e5f607182";
pub const CODEX_V1_ROOT: &str = "01a2292d-f8ac-71e0-b822-647118037869";
pub const CODEX_V2_ROOT: &str = "01a2292e-150b-7bd3-ae6f-5cbd9a8eb718";

pub struct Home {
    pub dir: tempfile::TempDir,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// `2026-12-01T11:48:24.123Z`.
#[allow(clippy::many_single_char_names)]
pub fn iso(ms: i64) -> String {
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let s = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", s / 3600, s / 60 % 60, s % 60)
}

impl Home {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn claude_projects(&self) -> PathBuf {
        self.path().join(".claude/projects")
    }

    pub fn codex_day(&self) -> PathBuf {
        self.path().join(".codex/sessions/2026/11/29")
    }

    pub fn run_dir(&self) -> PathBuf {
        self.path().join("run")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.path().join("state")
    }

    /// The shell command of `swarmtop ARGS` as a user opens it in a terminal of this HOME (its
    /// screen stays a minute after it exits, for a last capture).
    pub fn shell_command(&self, args: &str) -> String {
        format!(
            "env -u CLAUDE_CONFIG_DIR -u CODEX_HOME HOME='{}' XDG_RUNTIME_DIR='{}' XDG_STATE_HOME='{}' '{}' {args}; sleep 60",
            self.path().display(),
            self.run_dir().display(),
            self.state_dir().display(),
            env!("CARGO_BIN_EXE_swarmtop"),
        )
    }

    /// `swarmtop` with this HOME and nothing of the caller's environment that moves its folders.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
        c.env("HOME", self.path())
            .env("XDG_RUNTIME_DIR", self.run_dir())
            .env("XDG_STATE_HOME", self.state_dir())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        c
    }

    /// The 2.1.39 fixture session, as Claude Code left it under a project folder.
    pub fn add_claude_old(&self) -> PathBuf {
        let project = self.claude_projects().join("-home-USER-projects-spotter");
        copy_tree(&fixtures().join("claude-2.1.39"), &project);
        touch_tree(&project);
        project.join(format!("{CLAUDE_OLD_SESSION}.jsonl"))
    }

    /// A 2.1.332 session with one foreground sub-agent, written the way wire.md §6 describes.
    pub fn add_claude_new(&self) -> PathBuf {
        let project = self.claude_projects().join("-home-dev-web");
        let sid = CLAUDE_NEW_SESSION;
        let aid = CLAUDE_NEW_AGENT;
        let t = now_ms() - 60_000;
        let at = |s: i64| iso(t + s * 1000);
        let session = [
            format!(
                r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{sid}","isSidechain":false,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","message":{{"role":"user","content":"Survey the code, then fix the bug"}}}}"#,
                at(0)
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"{sid}","isSidechain":false,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","requestId":"req_01","message":{{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"toolu_01","name":"Agent","input":{{"subagent_type":"Explore","description":"Survey the code","prompt":"Find the bug","run_in_background":false}}}}],"stop_reason":"tool_use","usage":{{"input_tokens":1200,"cache_creation_input_tokens":300,"cache_read_input_tokens":9000,"output_tokens":80}}}}}}"#,
                at(1)
            ),
            format!(
                r#"{{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"{sid}","isSidechain":false,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_01","content":[{{"type":"text","text":"The bug is in parse()."}}]}}]}},"toolUseResult":{{"status":"completed","agentId":"{aid}","resolvedModel":"claude-haiku-4-5","totalTokens":5000}}}}"#,
                at(20)
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"{sid}","isSidechain":false,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","requestId":"req_02","message":{{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"Fixed parse()."}}],"stop_reason":"end_turn","usage":{{"input_tokens":400,"cache_creation_input_tokens":0,"cache_read_input_tokens":10500,"output_tokens":25}}}}}}"#,
                at(25)
            ),
            format!(r#"{{"type":"cost-state","sessionId":"{sid}","timestamp":"{}"}}"#, at(26)),
        ];
        let agent = [
            format!(
                r#"{{"type":"user","uuid":"s1","parentUuid":null,"sessionId":"{sid}","agentId":"{aid}","isSidechain":true,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","message":{{"role":"user","content":"Find the bug"}}}}"#,
                at(2)
            ),
            format!(
                r#"{{"type":"assistant","uuid":"s2","parentUuid":"s1","sessionId":"{sid}","agentId":"{aid}","isSidechain":true,"cwd":"/home/dev/web","version":"2.1.332","timestamp":"{}","requestId":"req_11","message":{{"id":"msg_11","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{{"type":"text","text":"The bug is in parse()."}}],"stop_reason":"end_turn","usage":{{"input_tokens":3000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40}}}}}}"#,
                at(15)
            ),
        ];
        let meta = r#"{"toolUseId":"toolu_01","spawnDepth":1,"description":"Survey the code","agentType":"Explore","model":"haiku","requestShape":"foreground","finished":true}"#;
        let subagents = project.join(sid).join("subagents");
        fs::create_dir_all(&subagents).unwrap();
        let file = project.join(format!("{sid}.jsonl"));
        fs::write(&file, session.join("\n") + "\n").unwrap();
        fs::write(subagents.join(format!("agent-{aid}.jsonl")), agent.join("\n") + "\n").unwrap();
        fs::write(subagents.join(format!("agent-{aid}.meta.json")), meta).unwrap();
        file
    }

    /// The rollout files of a fixture run (`collab_v1`, `collab_v2`), as written now.
    pub fn add_codex(&self, run: &str) -> Vec<PathBuf> {
        let day = self.codex_day();
        fs::create_dir_all(&day).unwrap();
        let mut out = Vec::new();
        for entry in fs::read_dir(fixtures().join("codex-0.171.0/rollouts").join(run)).unwrap() {
            let from = entry.unwrap().path();
            let to = day.join(from.file_name().unwrap());
            fs::copy(&from, &to).unwrap();
            out.push(to);
        }
        out.sort();
        out
    }

    /// The same, with every line's `timestamp` moved to `from_ms` on (one millisecond apart).
    pub fn add_codex_at(&self, run: &str, from_ms: i64) -> Vec<PathBuf> {
        let files = self.add_codex(run);
        let mut ms = from_ms;
        for f in &files {
            let text = fs::read_to_string(f).unwrap();
            let mut out = String::new();
            for line in text.lines() {
                let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                v["timestamp"] = serde_json::Value::String(iso(ms));
                ms += 1;
                out.push_str(&serde_json::to_string(&v).unwrap());
                out.push('\n');
            }
            fs::write(f, out).unwrap();
        }
        files
    }

    /// A session last written two days ago: outside the default window.
    pub fn add_old_claude_session(&self) -> PathBuf {
        let project = self.claude_projects().join("-home-dev-old");
        fs::create_dir_all(&project).unwrap();
        let sid = "0ld00000-0000-4000-8000-000000000001";
        let file = project.join(format!("{sid}.jsonl"));
        fs::write(
            &file,
            format!(
                r#"{{"type":"user","uuid":"o1","parentUuid":null,"sessionId":"{sid}","cwd":"/home/dev/old","timestamp":"2026-11-20T10:00:00.000Z","message":{{"role":"user","content":"hi"}}}}"#
            ) + "\n",
        )
        .unwrap();
        let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 86_400);
        fs::File::options().write(true).open(&file).unwrap().set_modified(two_days_ago).unwrap();
        file
    }

    /// `swarmtop tee -- sh -c 'cat FILE; exec cat >/dev/null'`: a server that says FILE's lines and
    /// stays until its input closes, as it does when the tee goes (a `sleep` outlived the test,
    /// holding the harness's output open).
    pub fn tee_serving(&self, server_lines: &Path) -> Child {
        self.cmd()
            .arg("tee")
            .arg("--")
            .args(["sh", "-c", "cat \"$0\"; exec cat >/dev/null"])
            .arg(server_lines)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tee")
    }

    /// The socket of the only tee running, once it has recorded `lines` records after its header.
    pub fn wait_tee(&self, lines: usize) -> (PathBuf, PathBuf) {
        let socket = wait_for("the tee's socket", || {
            fs::read_dir(self.run_dir().join("swarmtop"))
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "sock"))
        });
        let recording = wait_for("the tee's recording", || {
            let rec = fs::read_dir(self.state_dir().join("swarmtop/recordings")).ok()?.flatten().next()?.path();
            let n = fs::read_to_string(&rec).ok()?.lines().count();
            (n > lines).then_some(rec)
        });
        (socket, recording)
    }
}

pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Copies keep their source's times on some systems: make them as fresh as a running session's.
fn touch_tree(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            touch_tree(&path);
        } else {
            fs::File::options().write(true).open(&path).unwrap().set_modified(SystemTime::now()).unwrap();
        }
    }
}
