//! Claude Code: `~/.claude/projects/<project>/<sessionId>.jsonl`, its sub-agents (at any depth)
//! in `<sessionId>/subagents/` (wire.md §6); `CLAUDE_CONFIG_DIR` moves `~/.claude`.
//!
//! Which process runs a session (the record's runner), from what the real CLI 2.1.332 shows (run
//! offline, `-p` and interactive in tmux, with `--resume`, `/clear`, a clean exit and a SIGKILL):
//! - It writes `<config>/sessions/<pid>.json` at start (`-p` too), holding `pid`, `sessionId`,
//!   `cwd` and `procStart` (field 22 of `/proc/<pid>/stat`, so a reused pid is told apart); it
//!   rewrites `sessionId` when `/clear` starts a new session, names the resumed id at once under
//!   `--resume`, and removes the file on a clean exit. After a SIGKILL the file stays, naming a pid
//!   that is gone or started at another time: when its `pidDomain` is this machine's, the session
//!   has ended (no process runs it and none will).
//! - It holds no transcript open (it appends and closes); sub-agents run inside the same process.
//! - Its working directory is the session's project, and `--resume <id>` / `--session-id <id>`
//!   name the session on its command line. Versions that keep no `sessions/` file are found that
//!   way: by the id on the command line, else as running the newest session of its project.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Value, json};

use super::SpawnHook;
use super::control::{TeeControl, TeeRequest, Turn};
use super::{
    ANTHROPIC, Agent, Candidate, Claim, Control, Env, Place, Reported, Runner, Running, Sight, Spend, Tools, Window,
    regular_only,
};
use crate::source::files::{self, Input};
use crate::source::proc::{Proc, Walk};
use crate::source::regular;
use crate::source::seen::Trouble;
use crate::wire::fact::{Format, Via};

pub static AGENT: Agent = Agent {
    name: "claude",
    place: Some(Place {
        root,
        scan,
        hint: "Claude Code sessions appear here as soon as `claude` runs",
        cwd_in: Some(cwd_in),
    }),
    runner: Some(Runner {
        find: running,
        sessions: running_sessions,
        held_below: |_| None,
        host: None,
        registered_cwd: Some(registered_cwd),
    }),
    store: None,
    live: None,
    // Ctrl-C: the CLI ends its turn and writes `[Request interrupted by user]` (wire.md §8).
    control: Control {
        tee: Some(TeeControl {
            how: "a control request: interrupt (the session), stop_task (a sub-agent, its parent goes on)",
            interrupt: stream_interrupt,
            refusal: control_refusal,
        }),
        server: None,
        hook: Some(SpawnHook { settings, spawn_tools: crate::wire::claude::SPAWN_TOOLS }),
    },
    spend: Spend {
        provider: Some(&ANTHROPIC),
        reported: Reported::CostLines,
        tools: Tools { calls_as_written: true, shell: "Bash", named_by_title: true, ..Tools::DEFAULT },
    },
    lowers: &[Format::ClaudeTranscript, Format::ClaudeStream],
    spawned_via: &[Via::TaskTool],
};

/// Hosted in stream-json input mode (2.1.332): a `control_request` on its stdin, answered by a
/// `control_response` naming its `request_id`. A sub-agent is stopped alone with `stop_task` (its
/// agent id is the task's id; the parent goes on), the session's turn with `interrupt`
/// (`docs/acting.md` §4).
fn stream_interrupt(t: Turn<'_>) -> TeeRequest {
    let request =
        if t.root { json!({"subtype": "interrupt"}) } else { json!({"subtype": "stop_task", "task_id": t.thread}) };
    TeeRequest {
        send: json!({"type": "control_request", "request": request}),
        id_at: &["request_id"],
        answer_at: &["response", "request_id"],
    }
}

/// A `control_response` whose subtype is `error`, and why.
fn control_refusal(answer: &Value) -> Option<String> {
    let r = answer.get("response")?;
    (r.get("subtype").and_then(Value::as_str) == Some("error"))
        .then(|| r.get("error").and_then(Value::as_str).unwrap_or("refused").to_owned())
}

/// Hooks are read from the project's `.claude/settings.json` (in `-p` mode without a trust
/// prompt), else from `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`
/// (`docs/acting.md` §1).
fn settings(env: &Env, project: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = project {
        return Some(dir.join(".claude/settings.json"));
    }
    config_dir(env).map(|d| d.join("settings.json"))
}

/// Bytes read from a transcript's start to find the working directory.
const CWD_SEARCH: u64 = 256 << 10;
/// Entries of `sessions/` looked at (one per running process; the rest are not read).
pub const MAX_SESSION_FILES: usize = 4_096;
/// Bytes read of one `sessions/<pid>.json` (a few hundred in 2.1.332).
const SESSION_FILE_MAX: u64 = 64 << 10;

/// `~/.claude`, or `CLAUDE_CONFIG_DIR`.
fn config_dir(env: &Env) -> Option<PathBuf> {
    env.path("CLAUDE_CONFIG_DIR").or_else(|| Some(env.home()?.join(".claude")))
}

fn root(env: &Env) -> Option<PathBuf> {
    config_dir(env).map(|d| d.join("projects"))
}

/// `sessions/<pid>.json` as 2.1.332 writes it (only what is used).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionFile {
    pid: u32,
    session_id: String,
    /// A string of digits in 2.1.332; a number is taken too.
    proc_start: Option<serde_json::Value>,
    /// `linux:<machine-id>:pid:[<pid namespace inode>]` (2.1.332): whose pids `pid` counts in.
    pid_domain: Option<String>,
}

/// The running Claude Code processes and, where they say it, their sessions.
fn running(env: &Env, proc: &Proc, walk: &Walk) -> Vec<Running> {
    let mut out = Vec::new();
    if let Some(dir) = config_dir(env).map(|d| d.join("sessions")) {
        let domain = pid_domain(proc);
        for entry in fs::read_dir(dir).into_iter().flatten().flatten().take(MAX_SESSION_FILES) {
            if let Some(r) = session_file(&entry.path(), proc, walk, domain.as_deref()) {
                out.push(r);
            }
        }
    }
    let claimed: HashSet<u32> = out.iter().filter(|r| !matches!(r.claim, Claim::Gone(_))).map(|r| r.pid).collect();
    // Versions without a `sessions/` file, and processes whose file is missing.
    let mut processes = Vec::new();
    for process in &walk.processes {
        let pid = process.pid;
        if claimed.contains(&pid) {
            processes.push((process, None));
            continue;
        }
        let Some(args) = walk.command_line(proc, pid) else { continue };
        if is_claude(&args, Some(process.name.as_str())) {
            processes.push((process, Some(args)));
        }
    }
    // A launcher (a node shim, a wrapper script) runs the real CLI as its child: only the child counts.
    let parents: HashSet<u32> = processes.iter().map(|(p, _)| p.ppid).collect();
    for (process, args) in processes {
        let Some(args) = args else { continue };
        if parents.contains(&process.pid) {
            continue;
        }
        let claim = match session_argument(&args) {
            Some(id) => Claim::Session(id),
            None => match proc.cwd(process.pid) {
                Some(cwd) => Claim::Project(cwd),
                None => continue,
            },
        };
        out.push(Running { agent: AGENT.name, pid: process.pid, claim, started: proc.started_at(process) });
    }
    out
}

/// The working directory `sessions/<pid>.json` gives the Claude Code process `pid` (what it
/// writes at start, before its transcript has a line with `cwd`).
pub fn registered_cwd(env: &Env, pid: u32) -> Option<String> {
    #[derive(Deserialize)]
    struct Registered {
        pid: u32,
        cwd: Option<String>,
    }
    let path = config_dir(env)?.join("sessions").join(format!("{pid}.json"));
    let mut bytes = Vec::new();
    regular::open(&path).ok()?.take(SESSION_FILE_MAX).read_to_end(&mut bytes).ok()?;
    let file: Registered = serde_json::from_slice(&bytes).ok()?;
    (file.pid == pid).then_some(file.cwd?).filter(|c| !c.is_empty())
}

/// This machine's pid domain as Claude Code writes it (`linux:<machine-id>:pid:[<inode>]`).
fn pid_domain(proc: &Proc) -> Option<String> {
    let machine = fs::read_to_string("/etc/machine-id").ok()?;
    Some(format!("linux:{}:{}", machine.trim(), proc.pid_namespace()?))
}

/// The session a `sessions/<pid>.json` names, if its process still runs (same pid, same start);
/// or that it is gone ([`Claim::Gone`]), when the file counts pids as this machine does (same
/// machine, same pid namespace: a process elsewhere is not ours to find) and no process has
/// that pid and start now. A file with no domain says nothing of a dead pid.
fn session_file(path: &Path, proc: &Proc, walk: &Walk, domain: Option<&str>) -> Option<Running> {
    let named: u32 = path.file_name()?.to_str()?.strip_suffix(".json")?.parse().ok()?;
    let mut bytes = Vec::new();
    regular::open(path).ok()?.take(SESSION_FILE_MAX).read_to_end(&mut bytes).ok()?;
    let file: SessionFile = serde_json::from_slice(&bytes).ok()?;
    if file.pid != named || file.session_id.is_empty() {
        return None;
    }
    let start = match file.proc_start {
        Some(serde_json::Value::String(s)) => s.parse::<u64>().ok(),
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    let Some(process) = walk.process(file.pid).filter(|p| start.is_none_or(|s| s == p.start_ticks)) else {
        // The walk lists only this user's processes, and only so many: ask `/proc` itself.
        let ours = domain.is_some() && file.pid_domain.as_deref() == domain;
        let alive = proc.process(file.pid).is_some_and(|p| start.is_none_or(|s| s == p.start_ticks));
        return (ours && start.is_some() && !alive).then_some(Running {
            agent: AGENT.name,
            pid: file.pid,
            claim: Claim::Gone(file.session_id),
            started: None,
        });
    };
    Some(Running {
        agent: AGENT.name,
        pid: file.pid,
        claim: Claim::Session(file.session_id),
        started: proc.started_at(process),
    })
}

/// Whether a command line runs Claude Code: the native `claude` (`claude.exe` as npm installs
/// it), or a JavaScript runtime running the package's `cli.js` or a `claude` launcher.
fn is_claude(args: &[String], name: Option<&str>) -> bool {
    let base = |a: &str| Path::new(a).file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned();
    let claude = |a: &str| matches!(base(a).as_str(), "claude" | "claude.exe");
    if name.is_some_and(|n| n == "claude" || n == "claude.exe") || args.first().is_some_and(|a| claude(a)) {
        return true;
    }
    let runtime = args.first().is_some_and(|a| matches!(base(a).as_str(), "node" | "bun" | "deno"));
    runtime
        && args.iter().skip(1).find(|a| !a.starts_with('-')).is_some_and(|script| {
            claude(script) || (script.contains("claude-code") && base(script).starts_with("cli."))
        })
}

/// The session id a command line names: `--resume <id>`, `-r <id>`, `--session-id <id>` (also
/// `--flag=<id>`), unless `--fork-session` makes the run a new session.
fn session_argument(args: &[String]) -> Option<String> {
    if args.iter().any(|a| a == "--fork-session") {
        return None;
    }
    let is_id = |s: &str| s.len() == 36 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        let value = match arg.split_once('=') {
            Some(("--resume" | "--session-id", value)) => Some(value.to_owned()),
            _ if matches!(arg.as_str(), "--resume" | "-r" | "--session-id") => it.next().cloned(),
            _ => None,
        };
        if let Some(v) = value.filter(|v| is_id(v)) {
            return Some(v);
        }
    }
    None
}

fn scan(root: &Path, window: &Window, trouble: &mut Trouble) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Ok(projects) = fs::read_dir(root) else { return out };
    for project in projects.flatten() {
        let project_dir = project.path();
        let Ok(entries) = fs::read_dir(&project_dir) else { continue };
        let entries: Vec<fs::DirEntry> = entries.flatten().collect();
        // A session's folder (its sub-agents) is looked into only when the listing has one: most
        // sessions have none, and two failed lookups for each held up the machine view's first
        // screen. A link may lead to a folder: looked into as before.
        let folders: HashSet<std::ffi::OsString> = entries
            .iter()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
            .map(fs::DirEntry::file_name)
            .collect();
        for entry in entries {
            let path = entry.path();
            let Some(stem) = session_stem(&path) else { continue };
            let has_folder = folders.contains(stem);
            let modified = match regular::stat(&path) {
                Ok(Some(meta)) => meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                Ok(None) => continue,
                Err(why) => {
                    trouble.not_regular(&why);
                    continue;
                }
            };
            if stem.to_str().is_none() {
                trouble.name_not_utf8();
            }
            if let Some(c) = candidate(&project_dir, &path, modified, has_folder, window, trouble) {
                out.push(c);
            }
        }
    }
    out
}

/// The session of `path` (`<project_dir>/<id>.jsonl`, last written at `written`), if it or a
/// sub-agent changed within the window. A name that is not UTF-8 is listed all the same, its id
/// written with U+FFFD. `has_folder`: the project's listing may hold the session's folder.
fn candidate(
    project_dir: &Path,
    path: &Path,
    written: SystemTime,
    has_folder: bool,
    window: &Window,
    trouble: &mut Trouble,
) -> Option<Candidate> {
    let stem = session_stem(path)?;
    let session_dir = project_dir.join(stem);
    let (sub_agents_written, refused) =
        if has_folder { sub_agent_files(&session_dir) } else { (SystemTime::UNIX_EPOCH, Vec::new()) };
    let newest = sub_agents_written.max(written);
    let newest = Some(newest).filter(|m| window.contains(*m))?;
    for why in &refused {
        trouble.not_regular(why);
    }
    let mut files = vec![path.to_owned()];
    if has_folder && session_dir.is_dir() {
        // What `stats` reads from the session's folder, in its order.
        let inputs = files::expand(std::slice::from_ref(&session_dir)).unwrap_or_default();
        let found: Vec<PathBuf> = inputs
            .into_iter()
            .filter_map(|i| match i {
                Input::File(p) => Some(p),
                Input::Stdin => None,
            })
            .collect();
        trouble.names_not_utf8 += found.iter().filter(|p| p.file_name().is_some_and(|n| n.to_str().is_none())).count();
        // What the listing left out for its type was counted above.
        files.extend(regular_only(found, &mut Trouble::default()));
    }
    let cwd = working_dir(path);
    let project_guessed = cwd.is_none();
    Some(Candidate {
        agent: &AGENT,
        id: stem.to_string_lossy().into_owned(),
        project: cwd.or_else(|| project_of_folder(project_dir)),
        project_guessed,
        location: path.to_owned(),
        files,
        modified: newest,
        within: None,
    })
}

/// The sessions running processes name, wherever their files are in time.
fn running_sessions(env: &Env, sight: &Sight<'_>, trouble: &mut Trouble) -> Vec<Candidate> {
    let Some(root) = root(env) else { return Vec::new() };
    let ids: HashSet<&str> = sight
        .running
        .iter()
        .filter(|r| r.agent == AGENT.name)
        .filter_map(|r| match &r.claim {
            Claim::Session(id) => Some(id.as_str()),
            Claim::Project(_) | Claim::Gone(_) => None,
        })
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for project in fs::read_dir(&root).into_iter().flatten().flatten() {
        let project_dir = project.path();
        for id in &ids {
            let path = project_dir.join(format!("{id}.jsonl"));
            if let (Some(_), Ok(Some(meta))) = (session_stem(&path), regular::stat(&path)) {
                let written = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.extend(candidate(&project_dir, &path, written, true, &Window::all(), trouble));
            }
        }
    }
    out
}

/// `<sessionId>.jsonl` names a session (its stem, which need not be UTF-8); `agent-*.jsonl`
/// beside it is an older layout's sub-agent.
fn session_stem(path: &Path) -> Option<&std::ffi::OsStr> {
    use std::os::unix::ffi::OsStrExt as _;
    let name = path.file_name()?.as_bytes();
    let stem = name.strip_suffix(b".jsonl")?;
    (!stem.is_empty() && !stem.starts_with(b"agent-")).then(|| std::ffi::OsStr::from_bytes(stem))
}

/// When a regular file in the session's `subagents/` folder last changed (sidecars included: they
/// change as children run; the epoch when there is none), and why the others are not regular.
fn sub_agent_files(session_dir: &Path) -> (SystemTime, Vec<std::io::Error>) {
    let (mut newest, mut refused) = (SystemTime::UNIX_EPOCH, Vec::new());
    for path in fs::read_dir(session_dir.join("subagents")).into_iter().flatten().flatten().map(|e| e.path()) {
        match regular::stat(&path) {
            Ok(Some(meta)) => newest = newest.max(meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)),
            Ok(None) => {}
            Err(why) => refused.push(why),
        }
    }
    (newest, refused)
}

#[derive(Deserialize)]
struct WithCwd {
    cwd: Option<String>,
}

/// The session's working directory: the first `cwd` in its first lines (its transcript, which
/// discovery found regular).
fn working_dir(path: &Path) -> Option<String> {
    let file = regular::open_listed(path).ok()?;
    let reader = BufReader::new(file.take(CWD_SEARCH));
    reader.split(b'\n').map_while(Result::ok).find_map(|line| cwd_of(&line))
}

/// The working directory the first line of `bytes` that names one says (a transcript's lines
/// carry `cwd`; the first lines of a 2.1.332 session, `mode` … `file-history-snapshot`, do not).
pub fn cwd_in(bytes: &[u8]) -> Option<String> {
    bytes.split(|&b| b == b'\n').find_map(cwd_of)
}

fn cwd_of(line: &[u8]) -> Option<String> {
    memchr::memmem::find(line, b"\"cwd\"")?;
    serde_json::from_slice::<WithCwd>(line).ok()?.cwd.filter(|c| !c.is_empty())
}

/// Directories read to find the folder a project's name stands for.
const FOLDER_SEARCH_DIRS: usize = 64;
/// Entries of one directory looked at on the way.
const FOLDER_SEARCH_ENTRIES: usize = 4_096;

/// A project known by its folder alone: Claude Code names it by the cwd with every character but
/// an ASCII letter or digit written `-` (`/home/dev/my_app` → `-home-dev-my-app`), so the name
/// cannot be read back, only matched: the directory on disk whose name is written so, else the
/// folder's name itself. Never nothing, so a session's group is named before its first `cwd`.
fn project_of_folder(project_dir: &Path) -> Option<String> {
    let name = project_dir.file_name()?.to_str()?;
    let mut budget = FOLDER_SEARCH_DIRS;
    let found = name.strip_prefix('-').and_then(|rest| folder_named(Path::new("/"), rest, &mut budget));
    Some(found.map_or_else(|| name.to_owned(), |p| p.display().to_string()))
}

/// How Claude Code writes a path into a project folder's name.
fn folder_name(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The directory below `dir` that `rest` (a folder name's remainder) stands for; longer names
/// are tried first (`my-app` before `my/app`), a bounded number of directories read.
fn folder_named(dir: &Path, rest: &str, budget: &mut usize) -> Option<PathBuf> {
    if rest.is_empty() {
        return Some(dir.to_owned());
    }
    *budget = budget.checked_sub(1)?;
    let mut matches: Vec<(usize, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir).ok()?.flatten().take(FOLDER_SEARCH_ENTRIES) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let written = folder_name(name);
        let Some(after) = rest.strip_prefix(written.as_str()) else { continue };
        if (after.is_empty() || after.starts_with('-')) && entry.path().is_dir() {
            matches.push((written.len(), entry.path()));
        }
    }
    matches.sort_by_key(|m| std::cmp::Reverse(m.0));
    matches.into_iter().find_map(|(len, path)| {
        let after = &rest[len..];
        folder_named(&path, after.strip_prefix('-').unwrap_or(after), budget)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn knows_a_claude_command_line_and_the_session_it_names() {
        assert!(is_claude(&args("/x/node_modules/@anthropic-ai/claude-code/bin/claude.exe -p hi"), None));
        assert!(is_claude(&args("claude --resume"), None));
        assert!(is_claude(&args("node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"), None));
        assert!(is_claude(&args("whatever"), Some("claude")));
        assert!(!is_claude(&args("tmux new -s claude"), Some("tmux")));
        assert!(!is_claude(&args("node server.js claude"), Some("node")));
        let id = "6c179e70-ddb5-41ca-8088-e50d5a44a1bd";
        assert_eq!(session_argument(&args(&format!("claude --resume {id}"))).as_deref(), Some(id));
        assert_eq!(session_argument(&args(&format!("claude -p hi --session-id={id}"))).as_deref(), Some(id));
        assert_eq!(session_argument(&args(&format!("claude -r {id} --fork-session"))), None);
        assert_eq!(session_argument(&args("claude --resume --model x")), None);
    }

    #[test]
    fn a_sessions_file_counts_only_while_its_process_runs() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        fs::create_dir_all(&sessions).unwrap();
        let proc = Proc::default();
        let me = proc.process(std::process::id()).unwrap();
        let write = |pid: u32, start: u64| {
            let text = format!(r#"{{"pid":{pid},"sessionId":"s-{pid}-{start}","cwd":"/p","procStart":"{start}"}}"#);
            fs::write(sessions.join(format!("{pid}.json")), text).unwrap();
        };
        write(me.pid, me.start_ticks);
        let env = Env::default().with("CLAUDE_CONFIG_DIR", dir.path());
        let named = |env: &Env| -> Vec<String> {
            running(env, &proc, &proc.walk(&HashSet::new()))
                .into_iter()
                .filter_map(|r| match r.claim {
                    // Only this test's files (Claude Code may be running on this machine).
                    Claim::Session(id) if id.starts_with("s-") => Some(id),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(named(&env), [format!("s-{}-{}", me.pid, me.start_ticks)]);
        // The same pid started at another time (reused), and a pid that is gone.
        write(me.pid, me.start_ticks + 1);
        write(u32::MAX - 1, 5);
        assert!(named(&env).is_empty());
        // As a SIGKILL leaves them (2.1.332): a dead pid of this machine's pid domain says its
        // session is gone; of another domain (a container, another host) or of none, nothing.
        let gone = |env: &Env| -> Vec<String> {
            let mut ids: Vec<String> = running(env, &proc, &proc.walk(&HashSet::new()))
                .into_iter()
                .filter_map(|r| match r.claim {
                    Claim::Gone(id) if id.starts_with("s-") => Some(id),
                    _ => None,
                })
                .collect();
            ids.sort();
            ids
        };
        let domain = pid_domain(&proc).expect("this machine's pid domain");
        for (pid, start, domain) in [
            (me.pid, me.start_ticks + 1, domain.as_str()),
            (u32::MAX - 2, 6, "linux:0000:pid:[1]"),
            (u32::MAX - 1, 5, &domain),
        ] {
            let text = format!(
                r#"{{"pid":{pid},"sessionId":"s-{pid}-{start}","cwd":"/p","procStart":"{start}","pidDomain":"{domain}"}}"#
            );
            fs::write(sessions.join(format!("{pid}.json")), text).unwrap();
        }
        let mut want = [format!("s-{}-{}", me.pid, me.start_ticks + 1), format!("s-{}-5", u32::MAX - 1)];
        want.sort();
        assert_eq!(gone(&env), want, "the reused pid and the dead one, not the other domain's");
        assert!(named(&env).is_empty());
    }

    /// The first lines of a 2.1.332 session name no cwd: the group is named by the project's
    /// folder (the directory it stands for when there is one), never `?`, until a line says it.
    #[test]
    fn a_session_before_its_first_cwd_is_named_by_its_project_folder() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("src/my_app.v2");
        fs::create_dir_all(&work).unwrap();
        let first = "{\"type\":\"permission-mode\",\"permissionMode\":\"default\",\"sessionId\":\"s1\"}\n{\"type\":\"file-history-snapshot\",\"messageId\":\"m\",\"snapshot\":{},\"isSnapshotUpdate\":false}\n";
        let with_cwd =
            |cwd: &str| format!("{{\"type\":\"user\",\"sessionId\":\"s1\",\"cwd\":\"{cwd}\",\"message\":{{}}}}\n");
        let found = |folder: &str, text: &str| {
            let project_dir = dir.path().join("projects").join(folder);
            fs::create_dir_all(&project_dir).unwrap();
            let path = project_dir.join("s1.jsonl");
            fs::write(&path, text).unwrap();
            let written = super::super::modified(&path);
            let c = candidate(&project_dir, &path, written, true, &Window::all(), &mut Trouble::default())
                .expect("a candidate");
            (c.project, c.project_guessed)
        };
        let on_disk = folder_name(&work.display().to_string());
        assert_eq!(found(&on_disk, first), (Some(work.display().to_string()), true), "the folder on disk");
        let gone = "-nowhere-at-all-swarmtop-test";
        assert_eq!(found(gone, first), (Some(gone.to_owned()), true), "the folder's own name");
        let text = format!("{first}{}", with_cwd("/srv/real"));
        assert_eq!(found(gone, &text), (Some("/srv/real".to_owned()), false), "the files' cwd wins");
        assert_eq!(cwd_in(first.as_bytes()), None);
        assert_eq!(cwd_in(text.as_bytes()).as_deref(), Some("/srv/real"));
    }
}
