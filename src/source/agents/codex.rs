//! Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<threadId>.jsonl`, one file per thread,
//! written by the command line and the app-server alike; `CODEX_HOME` moves `~/.codex`. A child
//! thread's first line (`session_meta`) names the root session (`session_id`) and its parent.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Value, json};

use super::control::{TeeControl, TeeRequest, Turn};
use super::{
    Agent, Candidate, Control, Env, Host, OPENAI, Place, Reported, Runner, Sight, Spend, Tools, Window,
    codex_processes, first_line, modified,
};
use crate::source::files::{self, Input};
use crate::source::proc;
use crate::source::regular;
use crate::source::seen::Trouble;
use crate::wire::fact::Format;

/// The real 0.171.0 keeps a thread's rollout open from its first turn until the process exits
/// (`codex exec`, `codex exec resume`, which appends to the same file, and the app-server, which
/// keeps it open while the thread is loaded), beside `thread-writer-locks/<threadId>.lock`. So
/// liveness is the held rollout (rule 2 of `census::liveness`), and a held rollout is listed
/// however old it is, except where the holder is the TUI's daemon, which keeps threads loaded
/// after their TUI has quit: there the TUI's process says it (see [`codex_processes`]).
pub static AGENT: Agent = Agent {
    name: "codex",
    place: Some(Place {
        root,
        scan,
        hint: "Codex sessions appear here as `codex` writes them; for the live stream, run `swarmtop tee -- codex app-server`",
        cwd_in: None,
    }),
    runner: Some(Runner {
        find: |_, proc, walk| codex_processes::running(AGENT.name, proc, walk),
        sessions: held_sessions,
        held_below: root,
        host: Some(Host { is: codex_processes::is_host, at_work: codex_processes::at_work }),
        registered_cwd: None,
    }),
    store: None,
    live: None,
    // Through its tee, the app-server's own request; else Ctrl-C to the process.
    control: Control {
        tee: Some(TeeControl {
            how: "turn/interrupt of its running turn (the client sees an interrupted turn)",
            interrupt: interrupt_turn,
            refusal: rpc_refusal,
        }),
        server: None,
        hook: None,
    },
    spend: Spend { provider: Some(&OPENAI), reported: Reported::Tokens, tools: Tools::DEFAULT },
    lowers: &[Format::CodexAppServer, Format::CodexRollout, Format::CodexExec],
    spawned_via: &[],
};

/// App-server 0.171.0: `turn/interrupt {threadId, turnId}` (both required), answered by a JSON-RPC
/// response with the request's id; the turn then ends with `turn/completed` `status: interrupted`
/// (`docs/acting.md` §2).
fn interrupt_turn(t: Turn<'_>) -> TeeRequest {
    TeeRequest {
        send: json!({"method": "turn/interrupt", "params": {"threadId": t.thread, "turnId": t.turn}}),
        id_at: &["id"],
        answer_at: &["id"],
    }
}

/// A JSON-RPC `error` answer, and its message.
fn rpc_refusal(answer: &Value) -> Option<String> {
    let e = answer.get("error")?;
    Some(e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned))
}

/// Folder levels below `sessions/` (year, month, day).
const MAX_DEPTH: usize = 4;

fn root(env: &Env) -> Option<PathBuf> {
    env.path("CODEX_HOME").or_else(|| Some(env.home()?.join(".codex"))).map(|d| d.join("sessions"))
}

/// A rollout file, known from its name and metadata alone.
struct Rollout {
    path: PathBuf,
    thread: String,
    /// `YYYY-MM-DDTHH-MM-SS` from the name: when the thread started.
    started: String,
    modified: SystemTime,
}

#[derive(Deserialize)]
struct MetaLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    id: Option<String>,
    session_id: Option<String>,
    parent_thread_id: Option<String>,
    cwd: Option<String>,
}

/// What a rollout's first line says about its thread.
struct Opened {
    root: String,
    cwd: Option<String>,
}

fn open_meta(rollout: &Rollout) -> Opened {
    let meta = first_line(&rollout.path)
        .and_then(|line| serde_json::from_slice::<MetaLine>(&line).ok())
        .filter(|l| l.kind.as_deref() == Some("session_meta"))
        .and_then(|l| l.payload);
    let Some(meta) = meta else { return Opened { root: rollout.thread.clone(), cwd: None } };
    let root = meta.session_id.or(meta.parent_thread_id).or(meta.id).unwrap_or_else(|| rollout.thread.clone());
    Opened { root, cwd: meta.cwd }
}

fn scan(root: &Path, window: &Window, trouble: &mut Trouble) -> Vec<Candidate> {
    let mut rollouts = Vec::new();
    list(root, 0, &mut rollouts, trouble);
    // Sessions with any thread written in the window: only those files are opened.
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    let mut cwd: HashMap<String, String> = HashMap::new();
    let mut opened: HashSet<usize> = HashSet::new();
    for (i, r) in rollouts.iter().enumerate() {
        if window.contains(r.modified) {
            let meta = open_meta(r);
            opened.insert(i);
            if meta.root == r.thread {
                if let Some(c) = meta.cwd.clone() {
                    cwd.insert(meta.root.clone(), c);
                }
            }
            groups.entry(meta.root).or_default().push(i);
        }
    }
    if groups.is_empty() {
        return Vec::new();
    }
    // Threads of those sessions that went quiet before the window: a root's file (named by its
    // id), and children, which start after their root (so only files named later are opened).
    let by_thread: HashMap<&str, usize> = rollouts.iter().enumerate().map(|(i, r)| (r.thread.as_str(), i)).collect();
    let mut earliest: Option<&str> = None;
    for (root_id, members) in &mut groups {
        if let Some(&i) = by_thread.get(root_id.as_str()) {
            if opened.insert(i) {
                let meta = open_meta(&rollouts[i]);
                if let Some(c) = meta.cwd {
                    cwd.insert(root_id.clone(), c);
                }
                members.push(i);
            }
        }
        let start = members.iter().map(|&i| rollouts[i].started.as_str()).min().unwrap_or("");
        earliest = Some(earliest.map_or(start, |e| e.min(start)));
    }
    let earliest = earliest.unwrap_or("").to_owned();
    for (i, r) in rollouts.iter().enumerate() {
        if r.started >= earliest && !opened.contains(&i) {
            let meta = open_meta(r);
            if let Some(members) = groups.get_mut(&meta.root) {
                members.push(i);
            }
        }
    }
    groups
        .into_iter()
        .map(|(id, members)| {
            let mut files: Vec<PathBuf> = members.iter().map(|&i| rollouts[i].path.clone()).collect();
            // The order `stats` reads a folder in: by path.
            files.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
            files.dedup();
            let newest = members.iter().map(|&i| rollouts[i].modified).max().unwrap_or(SystemTime::UNIX_EPOCH);
            let location = by_thread.get(id.as_str()).map_or_else(|| files[0].clone(), |&i| rollouts[i].path.clone());
            Candidate {
                agent: &AGENT,
                project: cwd.remove(&id),
                project_guessed: false,
                id,
                location,
                files,
                modified: newest,
                within: None,
            }
        })
        .collect()
}

/// Every rollout file below `dir`, by name and metadata only (a name that is not UTF-8 names no
/// thread, and one that is no regular file is never opened: both are counted).
fn list(dir: &Path, depth: usize, out: &mut Vec<Rollout>, trouble: &mut Trouble) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                list(&path, depth + 1, out, trouble);
            }
            continue;
        }
        let input = Input::File(path);
        let Some(thread) = files::rollout_thread(&input) else {
            let Input::File(path) = input else { continue };
            if path.file_name().is_some_and(|n| n.to_str().is_none()) {
                trouble.name_not_utf8();
            }
            continue;
        };
        let Input::File(path) = input else { continue };
        let modified = match regular::stat(&path) {
            Ok(Some(meta)) => meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            Ok(None) => SystemTime::UNIX_EPOCH,
            Err(why) => {
                trouble.not_regular(&why);
                continue;
            }
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let started = name.strip_prefix("rollout-").and_then(|s| s.get(..19)).unwrap_or("").to_owned();
        out.push(Rollout { path, thread, started, modified });
    }
}

/// The sessions whose rollouts some process runs, however long ago they were written.
fn held_sessions(env: &Env, sight: &Sight<'_>, trouble: &mut Trouble) -> Vec<Candidate> {
    let Some(root) = root(env) else { return Vec::new() };
    let root = proc::canonical(&root);
    let held: HashSet<&PathBuf> = sight.run_files.iter().filter(|p| p.starts_with(&root)).collect();
    let Some(oldest) = held.iter().map(|p| modified(p)).min() else { return Vec::new() };
    scan(&root, &Window { since: Some(oldest) }, trouble)
        .into_iter()
        .filter(|c| c.files.iter().any(|f| held.contains(&proc::canonical(f))))
        .collect()
}
