//! Claude Code: `~/.claude/projects/<project>/<sessionId>.jsonl`, its sub-agents (at any depth)
//! in `<sessionId>/subagents/` (wire.md §6); `CLAUDE_CONFIG_DIR` moves `~/.claude`.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Candidate, Env, Place, Window, modified};
use crate::source::files::{self, Input};

pub const PLACE: Place =
    Place { tool: "claude", root, scan, hint: "Claude Code sessions appear here as soon as `claude` runs" };

/// Bytes read from a transcript's start to find the working directory.
const CWD_SEARCH: u64 = 256 << 10;

fn root(env: &Env) -> Option<PathBuf> {
    env.path("CLAUDE_CONFIG_DIR").or_else(|| Some(env.home()?.join(".claude"))).map(|d| d.join("projects"))
}

fn scan(root: &Path, window: &Window) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Ok(projects) = fs::read_dir(root) else { return out };
    for project in projects.flatten() {
        let project_dir = project.path();
        let Ok(entries) = fs::read_dir(&project_dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = session_id(&path) else { continue };
            let session_dir = project_dir.join(id);
            let subagents = sub_agent_files(&session_dir);
            let newest = subagents.iter().map(|p| modified(p)).chain([modified(&path)]).max();
            let Some(newest) = newest.filter(|m| window.contains(*m)) else { continue };
            let mut files = vec![path.clone()];
            if session_dir.is_dir() {
                // What `stats` reads from the session's folder, in its order.
                let inputs = files::expand(std::slice::from_ref(&session_dir)).unwrap_or_default();
                files.extend(inputs.into_iter().filter_map(|i| match i {
                    Input::File(p) => Some(p),
                    Input::Stdin => None,
                }));
            }
            out.push(Candidate {
                tool: PLACE.tool,
                id: id.to_owned(),
                project: working_dir(&path),
                location: path,
                files,
                modified: newest,
                within: None,
            });
        }
    }
    out
}

/// `<sessionId>.jsonl` names a session; `agent-*.jsonl` beside it is an older layout's sub-agent.
fn session_id(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let id = name.strip_suffix(".jsonl")?;
    (!id.is_empty() && !id.starts_with("agent-") && path.is_file()).then_some(id)
}

/// Every file in the session's `subagents/` folder (sidecars included: they change as children run).
fn sub_agent_files(session_dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(session_dir.join("subagents"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect()
}

#[derive(Deserialize)]
struct WithCwd {
    cwd: Option<String>,
}

/// The session's working directory: the first `cwd` in its first lines.
fn working_dir(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let reader = BufReader::new(file.take(CWD_SEARCH));
    reader
        .split(b'\n')
        .map_while(Result::ok)
        .filter(|line| memchr::memmem::find(line, b"\"cwd\"").is_some())
        .find_map(|line| serde_json::from_slice::<WithCwd>(&line).ok()?.cwd.filter(|c| !c.is_empty()))
}
