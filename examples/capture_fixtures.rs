//! Makes the real-CLI captures of `tests/fixtures/` (its README says what each one holds): the real
//! Claude Code, OpenCode and `codex exec` run offline against the test harness's mocks
//! (`tests/support/`), and what they wrote is copied out with the scratch paths replaced by
//! `/home/dev/...`, so a new CLI version can be captured the same way.
//!
//! ```text
//! usage: capture_fixtures WHAT OUT
//!   WHAT  claude-parallel | claude-subfail | claude-badtype | claude-interrupt
//!         opencode-tree | opencode-subfail | opencode-badtype | codex-exec
//!   OUT   the folder the capture is written under (e.g. tests/fixtures/claude-2.1.332)
//! ```
//!
//! The CLIs are found as the tests find them (`SWARMTOP_CLAUDE_BIN`, `SWARMTOP_CODEX_BIN`,
//! `SWARMTOP_OPENCODE_BIN`, else `scripts/setup-*.sh`).

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{self, Block, MessagesRequest};
use support::chat_completions::{self, Call, MockChat};
use support::claude_driver::{self, ClaudeRun, Interrupt, RunOptions};
use support::claude_scenario::{self, Agent, HAIKU_MODEL, Pacing, ROOT_MODEL, Scenario, usage_of};
use support::harness::{self, env_remove};
use support::mock_model::MockModel;
use support::scenario::{self as codex_scenario, RefactorScenario};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [what, out] = args.as_slice() else {
        eprintln!("usage: capture_fixtures WHAT OUT (see the file's header)");
        return ExitCode::from(2);
    };
    let out = PathBuf::from(out);
    let done = match what.as_str() {
        "claude-parallel" => claude("parallel", &out).await,
        "claude-subfail" => claude("subfail", &out).await,
        "claude-badtype" => claude("badtype", &out).await,
        "claude-interrupt" => claude("interrupt", &out).await,
        "opencode-tree" => opencode("tree", &out),
        "opencode-subfail" => opencode("subfail", &out),
        "opencode-badtype" => opencode("badtype", &out),
        "codex-exec" => codex_exec(&out).await,
        other => Err(format!("unknown capture {other}")),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capture_fixtures {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scrubbing: scratch paths out, `/home/dev/...` in.

/// Text replacements, applied in order (longest paths first), to every byte copied out.
struct Scrub {
    pairs: Vec<(String, String)>,
    /// Transcripts and rollouts (`.jsonl`) are written gzipped (`.jsonl.gz`, which every reader
    /// takes): 2.1.332's transcripts carry the CLI's whole tool and skill listings, hundreds of KB.
    gzip_jsonl: bool,
}

impl Scrub {
    /// `root` is the scratch folder of the run; `under` maps its sub-folders to where a developer's
    /// would be. Claude Code also names folders after a path (every character that is not a letter
    /// or a digit turned into `-`): those are mapped too.
    fn new(root: &Path, under: &[(&str, &str)], gzip_jsonl: bool) -> Self {
        let root = root.to_string_lossy().into_owned();
        let mut pairs = Vec::new();
        for (from, to) in under {
            let from = format!("{root}/{from}");
            pairs.push((encoded(&from), encoded(to)));
            // OpenCode also writes a project's path relative to `/`.
            pairs.push((from[1..].to_owned(), to[1..].to_owned()));
            pairs.push((from, (*to).to_owned()));
        }
        pairs.push((root[1..].to_owned(), "home/dev/scratch".to_owned()));
        pairs.push((root, "/home/dev/scratch".to_owned()));
        pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        Self { pairs, gzip_jsonl }
    }

    fn text(&self, text: &str) -> String {
        self.pairs.iter().fold(text.to_owned(), |t, (from, to)| t.replace(from, to))
    }

    /// Copies a file, its text scrubbed; the scratch root left in it is an error.
    fn copy(&self, from: &Path, to: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(from).map_err(|e| format!("{}: {e}", from.display()))?;
        let text = self.text(&text);
        if let Some((root, _)) = self.pairs.iter().find(|(from, _)| text.contains(from.as_str())) {
            return Err(format!("{}: {root} is still in it", from.display()));
        }
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let written = if self.gzip_jsonl && to.extension().is_some_and(|e| e == "jsonl") {
            gzip(&to.with_extension("jsonl.gz"), text.as_bytes())
        } else {
            std::fs::write(to, text)
        };
        written.map_err(|e| format!("{}: {e}", to.display()))
    }

    /// Copies a folder, names and contents scrubbed.
    fn copy_tree(&self, from: &Path, to: &Path) -> Result<(), String> {
        for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
            let e = e.map_err(|e| e.to_string())?;
            let target = to.join(self.text(&e.file_name().to_string_lossy()));
            if e.path().is_dir() {
                self.copy_tree(&e.path(), &target)?;
            } else {
                self.copy(&e.path(), &target)?;
            }
        }
        Ok(())
    }
}

/// Deterministic (no name, no time in the header), so a capture made twice is the same bytes.
fn gzip(to: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut gz = flate2::GzBuilder::new().write(std::fs::File::create(to)?, flate2::Compression::best());
    gz.write_all(bytes)?;
    gz.finish()?.sync_all()
}

fn encoded(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Every file under `dir`, for the log: what else the CLI left that was not copied.
fn list(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(list(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Claude Code 2.1.332.

/// The session, on the model of `--model`.
const LEAD: Agent = Agent {
    tag: "lead",
    parent: None,
    card: None,
    description: "",
    model: ROOT_MODEL,
    background: false,
    fails: false,
};

/// A foreground helper on the session's model, spawned by `parent`'s Agent call `card`.
const fn helper(tag: &'static str, parent: &'static str, card: &'static str, description: &'static str) -> Agent {
    Agent {
        tag,
        parent: Some(parent),
        card: Some(card),
        description,
        model: ROOT_MODEL,
        background: false,
        fails: false,
    }
}

/// `parallel`: the lead starts two helpers in one message: `survey` in the foreground on the
/// session's model, which starts a grandchild (`grep`), and `docs` in the background on `haiku`,
/// which outlives the lead's first turn and reports through a task notification (the lead's second
/// turn). Everyone finishes.
const PARALLEL: &[Agent] = &[
    LEAD,
    helper("survey", "lead", "toolu_par_lead_survey", "Survey the project"),
    helper("grep", "survey", "toolu_par_survey_grep", "Grep the sources"),
    Agent { model: HAIKU_MODEL, background: true, ..helper("docs", "lead", "toolu_par_lead_docs", "Check the docs") },
];

/// `subfail`: the lead starts two foreground helpers in one message; `flaky` lists the files, then
/// every request of its gets HTTP 529 until the CLI gives up and the helper fails; the lead reads
/// both results and answers.
const SUBFAIL: &[Agent] = &[
    LEAD,
    helper("healthy", "lead", "toolu_sub_lead_healthy", "Healthy helper"),
    Agent { fails: true, ..helper("flaky", "lead", "toolu_sub_lead_flaky", "Flaky helper") },
];

/// `badtype`: the lead asks in one message for a helper of an agent type that does not exist
/// (`ghost`, `subagent_type: no-such-agent`: the spawn itself fails, no agent starts) and then for
/// a healthy one, which lists the files and reports; the lead answers and ends its turn.
const BADTYPE: &[Agent] = &[
    LEAD,
    helper("ghost", "lead", "toolu_bad_lead_ghost", "Ghost helper"),
    helper("healthy", "lead", "toolu_bad_lead_healthy", "Healthy helper"),
];

/// The agent type the `ghost` helpers ask for: none of the CLI's.
const NO_SUCH_AGENT: &str = "no-such-agent";

struct Claude(&'static [Agent]);

impl Claude {
    fn answer(&self, tag: &str, step: usize, blocks: Vec<Block>, stop: &'static str) -> anthropic::Reply {
        let a = claude_scenario::agent(self.0, tag);
        anthropic::Reply::Message {
            blocks,
            stop,
            usage: usage_of(self.0, tag, step),
            model: Some(a.model.to_owned()),
            pre_delay: Pacing::LIVE.think,
            delta_delay: Pacing::LIVE.delta,
            signal: false,
        }
    }

    fn call(&self, tag: &str) -> Block {
        let a = claude_scenario::agent(self.0, tag);
        let mut input = json!({
            "description": a.description,
            "prompt": format!("[[agent:{tag}]] List the files of the project directory with the Bash tool and report their names."),
            "subagent_type": if tag == "ghost" { NO_SUCH_AGENT } else { "general-purpose" },
            "run_in_background": a.background,
        });
        if a.model == HAIKU_MODEL {
            input["model"] = json!("haiku");
        }
        Block::ToolUse { id: a.card.unwrap_or_default().to_owned(), name: "Agent".to_owned(), input }
    }

    fn step(&self, tag: &str, step: usize) -> Option<(Vec<Block>, &'static str)> {
        let text = |t: &str| Block::Text(t.to_owned());
        let bash = |command: &str| Block::ToolUse {
            id: format!("toolu_{tag}_{step}_bash"),
            name: "Bash".to_owned(),
            input: json!({"command": command, "description": "List the project files"}),
        };
        Some(match (tag, step) {
            ("lead", 0) if self.0[1].tag == "survey" => (
                vec![
                    Block::Thinking("Two independent pieces of work: one helper each.".to_owned()),
                    text("I'll split this between two helpers."),
                    self.call("survey"),
                    self.call("docs"),
                ],
                "tool_use",
            ),
            ("lead", 0) if self.0[1].tag == "ghost" => {
                (vec![text("Two helpers."), self.call("ghost"), self.call("healthy")], "tool_use")
            }
            ("lead", 0) => (vec![text("Two helpers."), self.call("healthy"), self.call("flaky")], "tool_use"),
            ("lead", 1) if self.0[1].tag == "survey" => {
                (vec![text("Survey: README.md and main.py. The docs helper still runs in the background.")], "end_turn")
            }
            ("lead", 1) if self.0[1].tag == "ghost" => {
                (vec![text("One helper listed README.md and main.py; the other could not start.")], "end_turn")
            }
            ("lead", 1) => (vec![text("One helper listed README.md and main.py; the other failed.")], "end_turn"),
            // The background helper's task notification opens the lead's second turn.
            ("lead", _) => {
                (vec![text("The docs helper reported as well: README.md is the only document.")], "end_turn")
            }
            ("survey", 0) => (vec![text("Listing first."), bash("ls")], "tool_use"),
            ("survey", 1) => (vec![self.call("grep")], "tool_use"),
            ("survey", _) => (vec![text("survey: README.md and main.py (grep agrees).")], "end_turn"),
            ("grep", 0) => (vec![bash("ls -1")], "tool_use"),
            ("grep", _) => (vec![text("grep: README.md, main.py.")], "end_turn"),
            ("docs", 0) => (vec![bash("sleep 5; ls -la")], "tool_use"),
            ("docs", _) => (vec![text("docs: README.md is the only document.")], "end_turn"),
            ("healthy" | "flaky", 0) => (vec![bash("ls")], "tool_use"),
            ("healthy", _) => (vec![text("healthy: README.md, main.py.")], "end_turn"),
            _ => return None,
        })
    }
}

impl anthropic::Script for Claude {
    fn reply(&self, req: &MessagesRequest<'_>) -> anthropic::Reply {
        let tag = req.agent.as_deref().filter(|t| self.0.iter().any(|a| a.tag == *t));
        // A sub-agent's request says so in its system prompt and the lead's does not; anything else
        // is a side query of the CLI's (a title, a summary) that happens to quote a prompt.
        let scripted = tag.filter(|t| (*t == "lead") != req.is_subagent && !req.tools.is_empty());
        match scripted {
            Some(t) if claude_scenario::agent(self.0, t).fails && req.step > 0 => {
                anthropic::Reply::Error { status: 529, kind: "overloaded_error", message: "Overloaded" }
            }
            Some(t) => match self.step(t, req.step) {
                Some((blocks, stop)) => self.answer(t, req.step, blocks, stop),
                None => anthropic::Reply::answer(vec![Block::Text("Unscripted.".to_owned())], "end_turn"),
            },
            None => anthropic::Reply::answer(vec![Block::Text("Side answer.".to_owned())], "end_turn"),
        }
    }
}

/// Writes `OUT/<which>/` (the project folder: the session's transcript, `subagents/` and
/// sidecars) and, for `parallel` and `badtype`, `OUT/<which>.ndjson` (the stream-json stdout).
async fn claude(which: &str, out: &Path) -> Result<(), String> {
    let bin = claude_driver::claude_binary().found()?;
    let world = claude_driver::World::new().map_err(|e| e.to_string())?;
    let opts = RunOptions { timeout: Duration::from_secs(120), interrupt_after: None, telemetry: None };
    let run = match which {
        "parallel" => claude_driver::run_with(&bin, Claude(PARALLEL), opts, world, &[]).await?,
        "subfail" => claude_driver::run_with(&bin, Claude(SUBFAIL), opts, world, &[]).await?,
        "badtype" => claude_driver::run_with(&bin, Claude(BADTYPE), opts, world, &[]).await?,
        _ => {
            let interrupt = Some(Interrupt::sigint(Duration::from_millis(500)));
            let opts = RunOptions { interrupt_after: interrupt, ..opts };
            claude_driver::run(&bin, Scenario::interrupt(Pacing::LIVE), opts, world).await?
        }
    };
    eprintln!("claude {which}: {:?}, exit {:?}", run.elapsed, run.exit);
    if !run.exit.success() && !run.interrupted {
        return Err(std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    }
    keep_claude(&run, which, out)
}

fn keep_claude(run: &ClaudeRun, which: &str, out: &Path) -> Result<(), String> {
    let scrub = Scrub::new(
        run.world.root.path(),
        &[("home", "/home/dev"), ("demo-project", "/home/dev/demo-project"), ("tmp", "/tmp")],
        true,
    );
    let project = run.world.project_dir().ok_or("the CLI wrote no project folder")?;
    let dest = out.join(which);
    if dest.exists() {
        std::fs::remove_dir_all(&dest).map_err(|e| e.to_string())?;
    }
    scrub.copy_tree(&project, &dest)?;
    if which == "parallel" || which == "badtype" {
        scrub.copy(&run.world.stream, &out.join(format!("{which}.ndjson")))?;
    }
    eprintln!("left in HOME:\n{}", list(&run.world.home).join("\n"));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// OpenCode 1.18.33.

/// `tree`: the root starts `child_a` and `child_b` in parallel; `child_a` starts a grandchild
/// (`grand_a`, `subagent_depth: 2`); everyone finishes. `subfail`: the root starts `child_ok` and
/// `child_fail`, whose every request gets HTTP 500 until OpenCode gives up (APIError); the root
/// goes on. `badtype`: the root starts `child_ghost` with an agent type OpenCode does not have (the
/// `task` call itself fails, no session is made) and `child_ok`, which runs `ls` and reports.
struct OpenCode;

fn oc_usage(agent: &str, step: usize) -> chat_completions::Usage {
    let l = match agent {
        "root" => 1,
        "child_a" | "child_ok" => 2,
        "child_b" => 3,
        "grand_a" => 4,
        _ => 9,
    };
    let step = step as u64;
    let reasoning = if agent == "root" && step > 0 { 5 } else { 0 };
    chat_completions::Usage {
        prompt: l * 1000 + step * 100 + 7,
        cached: l * 100 + step * 10,
        completion: l * 10 + step + 1 + reasoning,
        reasoning,
    }
}

fn task(agent: &str, description: &str) -> Call {
    typed_task(agent, description, "general")
}

fn typed_task(agent: &str, description: &str, subagent_type: &str) -> Call {
    Call {
        id: format!("call_{agent}"),
        name: "task".to_owned(),
        arguments: json!({
            "description": description,
            "prompt": format!("[[AGENT:{agent}]] List the files here with the bash tool (run `ls`) and report them in one line."),
            "subagent_type": subagent_type,
        }),
    }
}

impl chat_completions::Script for OpenCode {
    fn reply(&self, req: &chat_completions::Request<'_>) -> chat_completions::Reply {
        let (agent, step) = (req.agent.as_str(), req.step);
        // Slow enough that every child is seen running for over a second.
        let delay = Duration::from_millis(if agent == "root" || agent == "title" { 50 } else { 250 });
        let stream = |text: &str, calls: Vec<Call>| chat_completions::Reply::Stream {
            text: text.to_owned(),
            calls,
            usage: oc_usage(agent, step),
            pieces: 3,
            delay,
        };
        let bash = Call {
            id: format!("call_{agent}_bash"),
            name: "bash".to_owned(),
            arguments: json!({"command": "ls", "description": "List files"}),
        };
        let body = req.body.to_string();
        let tree = body.contains("Delegate the listing to a tree");
        let badtype = body.contains("Delegate to a ghost");
        match (agent, step) {
            ("title", _) => stream("Mock session title", vec![]),
            ("root", 0) if tree => stream(
                "Delegating to two sub-agents in parallel.",
                vec![task("child_a", "List files A"), task("child_b", "List files B")],
            ),
            ("root", 0) if badtype => stream(
                "Delegating to two sub-agents, one of a type that does not exist.",
                vec![typed_task("child_ghost", "List files GHOST", NO_SUCH_AGENT), task("child_ok", "List files OK")],
            ),
            ("root", 0) => stream(
                "Delegating to two sub-agents, one of them flaky.",
                vec![task("child_ok", "List files OK"), task("child_fail", "List files FAIL")],
            ),
            ("root", _) => stream("All sub-agents reported. Done.", vec![]),
            ("child_fail", _) => chat_completions::Reply::Error { status: 500 },
            (_, 0) => stream("", vec![bash]),
            ("child_a", 1) if req.tools.iter().any(|t| t == "task") => {
                stream("Spawning a grandchild.", vec![task("grand_a", "List files G")])
            }
            (_, _) => stream(&format!("{agent}: files listed."), vec![]),
        }
    }
}

fn opencode_config(base_url: &str) -> Value {
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

fn opencode_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SWARMTOP_OPENCODE_BIN") {
        return Ok(PathBuf::from(p));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-opencode.sh");
    let out = std::process::Command::new("bash").arg(script).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("scripts/setup-opencode.sh: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Writes `OUT/<which>/opencode.db` (the store alone, checkpointed) and `OUT/<which>.ndjson`
/// (`opencode run --format json`'s stdout).
fn opencode(which: &str, out: &Path) -> Result<(), String> {
    let bin = opencode_binary()?;
    let mock = MockChat::start(OpenCode).map_err(|e| e.to_string())?;
    let scratch = tempfile::Builder::new().prefix("swarmtop-capture-").tempdir().map_err(|e| e.to_string())?;
    let (root, home) = (scratch.path(), scratch.path().join("home"));
    let work = root.join("demo-project");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(home.join(".config/opencode")).map_err(|e| e.to_string())?;
    let config = opencode_config(&mock.base_url()).to_string();
    std::fs::write(home.join(".config/opencode/opencode.json"), config).map_err(|e| e.to_string())?;
    let prompt = match which {
        "tree" => "[[AGENT:root]] Delegate the listing to a tree.",
        "badtype" => "[[AGENT:root]] Delegate to a ghost.",
        _ => "[[AGENT:root]] Delegate.",
    };
    let stdout = root.join("run.ndjson");
    let status = std::process::Command::new(&bin)
        .args(["run", "--format", "json", prompt])
        .current_dir(&work)
        // OpenCode takes a session's directory from `PWD`, as a shell sets it, not from its cwd.
        .env("PWD", &work)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .envs(
            ["AUTOUPDATE", "MODELS_FETCH", "SHARE", "LSP_DOWNLOAD", "CLAUDE_CODE", "EXTERNAL_SKILLS"]
                .map(|k| (format!("OPENCODE_DISABLE_{k}"), "1")),
        )
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).map_err(|e| e.to_string())?)
        .status()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    eprintln!(
        "opencode {which}: {status}; served {:?}",
        mock.served().iter().map(|s| (&s.agent, s.step, s.status)).collect::<Vec<_>>()
    );
    if !status.success() {
        return Err(format!("opencode run failed: {status}"));
    }
    let scrub = Scrub::new(root, &[("home", "/home/dev"), ("demo-project", "/home/dev/demo-project")], false);
    scrub.copy(&stdout, &out.join(format!("{which}.ndjson")))?;
    let data = home.join(".local/share/opencode");
    eprintln!("left in the data folder:\n{}", list(&data).join("\n"));
    keep_store(&data, &scrub, &out.join(which)).map_err(|e| format!("the store: {e}"))
}

/// The store alone: a copy of the database with its `-wal` folded in and the journal back to a
/// rollback one (so reading the fixture leaves no `-wal`/`-shm` beside it), paths scrubbed in every
/// text column, vacuumed.
fn keep_store(data: &Path, scrub: &Scrub, dest: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    for suffix in ["", "-wal", "-shm"] {
        let from = data.join(format!("opencode.db{suffix}"));
        if from.exists() {
            std::fs::copy(&from, tmp.path().join(format!("opencode.db{suffix}")))?;
        }
    }
    let db = tmp.path().join("opencode.db");
    let conn = rusqlite::Connection::open(&db)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for table in &tables {
        let columns: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for column in &columns {
            for (from, to) in &scrub.pairs {
                conn.execute(
                    &format!(r#"UPDATE "{table}" SET "{column}" = replace("{column}", ?1, ?2) WHERE typeof("{column}") = 'text'"#),
                    [from, to],
                )?;
            }
            let left: i64 = conn.query_row(
                &format!(r#"SELECT count(*) FROM "{table}" WHERE CAST("{column}" AS TEXT) LIKE '%swarmtop-capture-%'"#),
                [],
                |r| r.get(0),
            )?;
            if left > 0 {
                return Err(format!("{table}.{column}: the scratch path is still in {left} rows").into());
            }
        }
    }
    conn.execute_batch("VACUUM")?;
    drop(conn);
    std::fs::create_dir_all(dest)?;
    std::fs::copy(&db, dest.join("opencode.db"))?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Codex 0.171.0 `codex exec --json`.

/// Writes `OUT/exec.ndjson` (`codex exec --json`'s stdout of the refactoring scenario of
/// `tests/support/scenario.rs`) and `OUT/rollouts/exec/` (the rollouts the same run wrote).
async fn codex_exec(out: &Path) -> Result<(), String> {
    let codex = harness::codex_binary().found()?;
    // Ten times the tests' pace (the demo's is 2.8): about five seconds, every child running for a while.
    let pacing = codex_scenario::Pacing { scale: 0.1 };
    let mock = MockModel::start(RefactorScenario { pacing }).await.map_err(|e| format!("mock: {e}"))?;
    let world = harness::World::new(&mock.base_url()).map_err(|e| e.to_string())?;
    let stdout = world.root.path().join("exec.ndjson");
    let mut cmd = tokio::process::Command::new(&codex);
    cmd.args(["exec", "--json", "--skip-git-repo-check", codex_scenario::ROOT_PROMPT])
        .envs(world.env(pacing))
        .current_dir(&world.work)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).map_err(|e| e.to_string())?)
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    for k in env_remove() {
        cmd.env_remove(k);
    }
    let status = tokio::time::timeout(Duration::from_secs(120), cmd.status())
        .await
        .map_err(|_| "codex exec did not finish in 2 minutes".to_owned())?
        .map_err(|e| e.to_string())?;
    eprintln!("codex exec: {status}");
    if !status.success() {
        return Err(format!("codex exec failed: {status}"));
    }
    let scrub = Scrub::new(
        world.root.path(),
        &[("codex-home", "/home/dev/.codex"), ("acme-auth", "/home/dev/acme-auth"), ("tools", "/home/dev/bin")],
        true,
    );
    scrub.copy(&stdout, &out.join("exec.ndjson"))?;
    let dest = out.join("rollouts/exec");
    for file in list(&world.home.join("sessions")) {
        let file = PathBuf::from(file);
        scrub.copy(&file, &dest.join(file.file_name().ok_or("a rollout without a name")?))?;
    }
    eprintln!("left in CODEX_HOME:\n{}", list(&world.home).join("\n"));
    Ok(())
}
