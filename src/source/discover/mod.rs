//! Finding every agent session on this machine without being told where to look.
//!
//! Each agent that writes its sessions to disk has an entry in [`PLACES`]: where its files live
//! (from the environment) and how to list the sessions there that were active within a
//! [`Window`]. A new agent format adds its entry here and its scanner beside it; nothing
//! downstream branches on the agent. Running `swarmtop tee`s are found by [`tee`].
//!
//! Start-up cost must not grow with the history: scanners decide by directory layout and file
//! metadata which files are in the window, and open only those (a bounded first-line read to
//! learn a session's id and project).

pub mod claude;
pub mod codex;
pub mod codex_processes;
pub mod liveness;
pub mod opencode;
pub mod tee;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Bytes read from the start of a session file to find its first line (a Codex `session_meta`
/// carries the model's whole instructions, tens of kilobytes).
pub const FIRST_LINE_MAX: u64 = 4 << 20;

/// The environment discovery reads (a snapshot, so tests can hand in their own).
#[derive(Debug, Clone, Default)]
pub struct Env(HashMap<String, OsString>);

impl Env {
    pub fn from_process() -> Self {
        Self(std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))).collect())
    }

    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<OsString>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// An absolute path from the variable `key` (relative or empty values are ignored).
    pub fn path(&self, key: &str) -> Option<PathBuf> {
        self.0.get(key).map(PathBuf::from).filter(|p| p.is_absolute())
    }

    pub fn home(&self) -> Option<PathBuf> {
        self.path("HOME")
    }
}

/// Which sessions count: those with activity at or after `since` (`None`: all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub since: Option<SystemTime>,
}

impl Window {
    pub fn all() -> Self {
        Self { since: None }
    }

    pub fn contains(&self, modified: SystemTime) -> bool {
        self.since.is_none_or(|since| modified >= since)
    }
}

/// One agent's session files as found on disk, not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The agent (`claude`, `codex`, …), as [`Place::tool`] names it.
    pub tool: &'static str,
    /// The root session's id.
    pub id: String,
    /// The working directory the session ran in, as its files say (unsanitised).
    pub project: Option<String>,
    /// `project` is not from the files yet (they named no cwd so far): the best name known, to be
    /// replaced by the cwd the first line that carries one says.
    pub project_guessed: bool,
    /// Where the session is, to show (a file or a folder).
    pub location: PathBuf,
    /// Every file of the session, in the order `stats` reads them.
    pub files: Vec<PathBuf>,
    /// Newest modification time among `files` (for a session within a store: of its rows).
    pub modified: SystemTime,
    /// Set when `files` is a store holding many sessions (OpenCode's database): the root session
    /// of it this candidate is. Only its subtree is read ([`read_within`]), and who serves it is
    /// the place's to say ([`serving`]), not who holds the file open.
    pub within: Option<String>,
}

/// Where an agent keeps its sessions and how to list them.
pub struct Place {
    pub tool: &'static str,
    /// The folder its sessions are under, from the environment (`None`: no home to look in).
    pub root: fn(&Env) -> Option<PathBuf>,
    /// The sessions under `root` active within the window.
    pub scan: fn(&Path, &Window) -> Vec<Candidate>,
    /// What the screen says about this place when it finds nothing.
    pub hint: &'static str,
}

/// Every agent whose sessions swarmtop finds by itself.
pub const PLACES: &[Place] = &[claude::PLACE, codex::PLACE, opencode::PLACE];

/// What one look at every place found.
#[derive(Debug, Default)]
pub struct Found {
    pub candidates: Vec<Candidate>,
    /// Each place's folder, whether or not it exists (for "looked in …").
    pub looked_in: Vec<(&'static str, PathBuf)>,
}

/// Lists the sessions of every place, newest first.
pub fn scan(env: &Env, window: &Window) -> Found {
    let mut found = Found::default();
    for place in PLACES {
        let Some(root) = (place.root)(env) else { continue };
        found.candidates.extend((place.scan)(&root, window));
        found.looked_in.push((place.tool, root));
    }
    found.candidates.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.id.cmp(&b.id)));
    found
}

/// The records of a session within a store, as `stats` on the store gives them for its subtree.
pub fn read_within(c: &Candidate) -> Option<std::io::Result<super::opencode::Snapshot>> {
    let root = c.within.as_ref()?;
    Some(super::opencode::snapshot_of(&c.location, std::slice::from_ref(root)))
}

/// Which process serves each session within a store, by root id (sessions of whole files are
/// told by who holds them open instead).
/// `found`: the tick's [`opencode::processes`].
pub fn serving(found: &opencode::Processes, candidates: &[&Candidate]) -> HashMap<String, u32> {
    let within: Vec<&Candidate> = candidates.iter().copied().filter(|c| c.within.is_some()).collect();
    if within.is_empty() {
        return HashMap::new();
    }
    opencode::serving(found, &within)
}

/// The stores (canonical) that sessions within a store are in: what a walk must want for
/// [`opencode::processes`] to find their processes.
pub fn stores_of<'a>(candidates: impl IntoIterator<Item = &'a Candidate>) -> HashSet<PathBuf> {
    candidates.into_iter().filter(|c| c.within.is_some()).map(|c| super::proc::canonical(&c.location)).collect()
}

/// Adds to `found` (a [`scan`]) the sessions running processes run that the window left out (a
/// running session is listed however long it has been quiet), from a walk that wanted
/// [`liveness::held_below`].
pub fn add_running(env: &Env, window: &Window, proc: &super::proc::Proc, walk: &super::proc::Walk, found: &mut Found) {
    if window.since.is_some() {
        let extra = liveness::running_outside(env, proc, walk, &found.candidates);
        if !extra.is_empty() {
            found.candidates.extend(extra);
            found.candidates.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.id.cmp(&b.id)));
        }
    }
}

/// Whether a session runs, as far as the machine can tell ([`liveness`] decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// A process runs it (see [`liveness`]), or its tee runs.
    Live,
    /// No process is seen, but its files changed recently (file age is the fallback).
    Idle,
    Ended,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Idle => "idle",
            Self::Ended => "ended",
        }
    }
}

/// A session as the machine view lists it (strings unsanitised: the screen cleans them).
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub tool: String,
    pub id: String,
    pub project: Option<String>,
    /// Its file or its tee's socket.
    pub source: PathBuf,
    pub state: State,
    pub pid: Option<u32>,
    pub usage: Option<super::proc::Usage>,
    /// When the session last showed activity (unix ms, wall clock): its newest file's
    /// modification, or the last record its tee sent. The screen ages ended sessions out by it.
    pub last_activity_ms: Option<i64>,
}

/// Every session the machine view follows, and where it looked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub sessions: Vec<Seen>,
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub tee_dir: PathBuf,
}

/// The first line of a file, if it ends within [`FIRST_LINE_MAX`] bytes.
pub fn first_line(path: &Path) -> Option<Vec<u8>> {
    let file = File::open(path).ok()?;
    let mut reader = BufReader::new(file.take(FIRST_LINE_MAX));
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).ok()?;
    line.ends_with(b"\n").then(|| {
        line.pop();
        line
    })
}

/// A file's modification time (the epoch when unknown, which puts it outside any window).
pub fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}
