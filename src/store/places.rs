//! Where the sessions to index are: the store's one adapter over the agent registry's places
//! (`source::census::scan`: Claude Code projects, Codex rollouts, OpenCode's store) plus
//! swarmtop's own recordings.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::source::agents::{self, AGENTS, Candidate, Env, Window};
use crate::source::census;

use super::identity;
use super::rows::FileState;

/// The place of swarmtop's own recordings (a tee's, a live source's `--record`).
pub const RECORDING: &str = "recording";

/// Sources found, each with the state of its files now.
pub type Stated = Vec<(Found, Vec<FileState>)>;

/// One source found: what is read together.
#[derive(Debug, Clone)]
pub struct Found {
    /// The place that found it (an agent's name, or [`RECORDING`]).
    pub place: &'static str,
    /// The agent, when the place knows it before reading (a recording says it by its format).
    pub agent: Option<&'static str>,
    pub key: String,
    pub project: Option<String>,
    pub files: Vec<PathBuf>,
    /// A session within a store of many: its candidate, read by its rows.
    within: Option<Candidate>,
}

impl Found {
    /// Each file's state now; `None` when one cannot be read.
    pub fn states(&self) -> Option<Vec<FileState>> {
        match &self.within {
            Some(c) => {
                let root = c.within.as_deref()?;
                Some(vec![identity::of_rows(&c.location, root, unix_ms(c.modified))?])
            }
            None => self.files.iter().map(|f| identity::of(f)).collect(),
        }
    }

    /// Whether it is a session within a store of many (read by its rows, not its files).
    pub fn within_store(&self) -> bool {
        self.within.is_some()
    }

    /// Its records, when it is a session within a store (read by rows, not files).
    pub fn rows(&self) -> Option<std::io::Result<Vec<u8>>> {
        self.within.as_ref()?.read_within()
    }
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok()).unwrap_or(0)
}

/// Every source of every place with activity in the window, place by place, each place's in the
/// order of their keys (so two syncs meet sources in the same order).
pub fn scan(env: &Env, window: &Window) -> Vec<Found> {
    let found = census::scan(env, window);
    let mut out: Vec<Found> = found
        .candidates
        .into_iter()
        .map(|c| Found {
            place: c.agent.name,
            agent: Some(c.agent.name),
            key: match &c.within {
                Some(root) => format!("{}#{root}", c.location.display()),
                None => c.location.display().to_string(),
            },
            project: c.project.clone(),
            files: c.files.clone(),
            within: c.within.is_some().then_some(c),
        })
        .collect();
    if let Some(dir) = recordings_dir(env) {
        out.extend(recordings(&dir, window));
    }
    let place_order = |p: &str| AGENTS.iter().position(|a| a.name == p).unwrap_or(usize::MAX);
    out.sort_by(|a, b| place_order(a.place).cmp(&place_order(b.place)).then_with(|| a.key.cmp(&b.key)));
    out
}

/// `$XDG_STATE_HOME/swarmtop/recordings` (else `~/.local/state/swarmtop/recordings`), where
/// recordings go by default (recording.md).
fn recordings_dir(env: &Env) -> Option<PathBuf> {
    let state = env.path("XDG_STATE_HOME").or_else(|| Some(env.home()?.join(".local/state")))?;
    Some(state.join("swarmtop").join("recordings"))
}

/// Each recording in the folder is a source of its own.
fn recordings(dir: &Path, window: &Window) -> Vec<Found> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        if ![".ndjson", ".jsonl"].iter().any(|ext| name.ends_with(ext)) || !path.is_file() {
            continue;
        }
        if !window.contains(agents::modified(&path)) {
            continue;
        }
        out.push(Found {
            place: RECORDING,
            agent: None,
            key: path.display().to_string(),
            project: None,
            files: vec![path],
            within: None,
        });
    }
    out
}

/// The agent a recording's format says it holds: the format's first word (`codex-app-server` is
/// Codex's, `claude-transcript` Claude Code's).
pub fn agent_of(format: &str) -> &str {
    format.split('-').next().unwrap_or(format)
}
