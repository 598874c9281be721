//! The agent registry: one record per agent ([`AGENTS`]) saying where its sessions live (from the
//! environment), how its files are laid out and listed, how its processes are recognised and
//! what they say they run, how a session of it is followed, how it could be controlled, and how
//! its spend is reported. Discovery, `ps`, the machine view, following, export's provider names
//! and the history store read these records; none of them names an agent. Adding an agent is one
//! record here (with its module beside this one) plus its lowering in `wire/`.
//!
//! Start-up cost must not grow with the history: a place's scan decides by directory layout and
//! file metadata which files are in the [`Window`], and opens only those (a bounded first-line
//! read to learn a session's id and project), through [`super::regular`], which never blocks on
//! a FIFO or a device.

/// The run store's rows written before its schema 4 (which added each item's own id, turn, tool
/// and op), filled where they tell it exactly: SQL the store's migration 5 runs, here because what
/// each agent's calls were is agent knowledge. Such rows have no `item_id` (schema 4 writes one
/// for every item). Claude Code's and OpenCode's agent calls are all spawns (their lowerings know
/// no other), OpenCode's all `task` (Claude's are `Agent` or, before 2.1.63, `Task`: left
/// unknown); a run of one turn holds its items in that turn; a spawn's own id is the card of the
/// one child whose brief is the call's text. Nothing else is filled: a Codex call's tool, a
/// command's exit code stay unknown. Frozen: a migration that ran must never change.
pub const FILLED_BEFORE_SCHEMA_4: &str = "UPDATE items SET op = 'spawn'
        WHERE item_id IS NULL AND op IS NULL AND kind = 'collabAgentToolCall'
        AND run_id IN (SELECT r.id FROM runs r JOIN sources s ON s.id = r.source_id
                       WHERE s.agent IN ('claude', 'opencode'));
    UPDATE items SET tool = 'task'
        WHERE item_id IS NULL AND tool IS NULL AND kind = 'collabAgentToolCall'
        AND run_id IN (SELECT r.id FROM runs r JOIN sources s ON s.id = r.source_id WHERE s.agent = 'opencode');
    UPDATE items SET turn = 0
        WHERE item_id IS NULL AND turn IS NULL AND run_id IN (SELECT id FROM runs WHERE turns = 1);
    UPDATE items SET item_id = (SELECT c.card FROM runs c JOIN texts t ON t.id = items.text_id
                                WHERE c.parent_id = items.run_id AND c.brief = t.body AND c.card IS NOT NULL)
        WHERE item_id IS NULL AND op = 'spawn'
        AND (SELECT count(*) FROM runs c JOIN texts t ON t.id = items.text_id
             WHERE c.parent_id = items.run_id AND c.brief = t.body AND c.card IS NOT NULL) = 1;";

pub mod claude;
pub mod codex;
pub mod codex_processes;
pub mod control;
pub mod opencode;
pub mod tee;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use self::control::{ServerApi, TeeControl};
use super::live;
use super::proc::{Proc, Walk};
use super::recording;
use super::seen::Trouble;
use crate::wire::fact::{Format, Via};

/// Bytes read from the start of a session file to find its first line (a Codex `session_meta`
/// carries the model's whole instructions, tens of kilobytes).
pub const FIRST_LINE_MAX: u64 = 4 << 20;

/// One agent, as everything outside its own module and its lowering knows it.
pub struct Agent {
    /// The name every output uses: `ps`'s AGENT column, the machine view's group, JSON `tool`.
    pub name: &'static str,
    /// Where its sessions live and how they are listed (`None`: it keeps none of its own).
    pub place: Option<Place>,
    /// How its running processes are recognised and what they say they run.
    pub runner: Option<Runner>,
    /// Its sessions live in one store of many (`None`: each session is files of its own, followed
    /// by their lines).
    pub store: Option<Store>,
    /// An input named on the command line that is read live rather than replayed (a server's
    /// address, a store followed).
    pub live: Option<LiveOpen>,
    /// How it is acted on: a running turn stopped, a session aborted, a spawn refused.
    pub control: Control,
    /// How its spend is reported.
    pub spend: Spend,
    /// The formats its lowerings in `wire/` give a line (what one line of a stream says it is;
    /// their `input.format` names are wire's).
    pub lowers: &'static [Format],
    /// How a sub-agent is registered that only this agent's sub-agents are (a thread registered
    /// so is this agent's, and calls its provider, whatever its model's name).
    pub spawned_via: &'static [Via],
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Agent {}

/// Every agent swarmtop knows, in the order places are looked at and listed.
pub static AGENTS: [&Agent; 4] = [&claude::AGENT, &codex::AGENT, &opencode::AGENT, &tee::AGENT];

/// The agent of this name.
pub fn by_name(name: &str) -> Option<&'static Agent> {
    AGENTS.iter().copied().find(|a| a.name == name)
}

/// The agent whose lowering gives streams of this `input.format` (`None` for `mixed` and for
/// formats no agent writes, such as OTLP).
pub fn of_format(format: &str) -> Option<&'static Agent> {
    AGENTS.iter().copied().find(|a| a.lowers.iter().any(|f| f.name() == Some(format)))
}

/// The agent whose sub-agents alone are registered so.
pub fn of_via(via: Via) -> Option<&'static Agent> {
    AGENTS.iter().copied().find(|a| a.spawned_via.contains(&via))
}

/// The agent that calls this provider's models by default.
pub fn of_provider(provider: &Provider) -> Option<&'static Agent> {
    AGENTS.iter().copied().find(|a| a.spend.provider.is_some_and(|p| p == provider))
}

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

    /// The variable `key` as text (`None` when unset or not UTF-8).
    pub fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(|v| v.to_str()).map(str::to_owned)
    }

    /// The user's home (`None` when unset, relative, or `/`: nothing to shorten paths by).
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

/// One agent's session as found on disk, not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub agent: &'static Agent,
    /// The root session's id.
    pub id: String,
    /// The working directory the session ran in, as its files say (unsanitised).
    pub project: Option<String>,
    /// `project` is not from the files yet (they named no cwd so far): the best name known, to be
    /// replaced by the cwd the first line that carries one says.
    pub project_guessed: bool,
    /// Where the session is, to show (a file or a folder).
    pub location: PathBuf,
    /// Every file of the session, in the order `stats` reads them (regular files only).
    pub files: Vec<PathBuf>,
    /// Newest modification time among `files` (for a session within a store: of its rows).
    pub modified: SystemTime,
    /// Set when `files` is a store holding many sessions: the root session of it this candidate
    /// is. Only its subtree is read ([`Store::read`]), and who serves it is the store's processes'
    /// to say ([`Store::processes`]), not who holds the file open.
    pub within: Option<String>,
}

impl Candidate {
    /// A session within a store: its subtree's records as the store holds them now (`None`: a
    /// session of files of its own).
    pub fn read_within(&self) -> Option<io::Result<Vec<u8>>> {
        let (store, root) = (self.agent.store.as_ref()?, self.within.as_ref()?);
        Some((store.read)(&self.location, root).map(|(records, _)| records))
    }
}

/// Where an agent keeps its sessions and how to list them.
pub struct Place {
    /// The folder its sessions are under, from the environment (`None`: no home to look in).
    pub root: fn(&Env) -> Option<PathBuf>,
    /// The sessions under the root active within the window, with what could not be used.
    pub scan: fn(&Path, &Window, &mut Trouble) -> Vec<Candidate>,
    /// What the screen says about this place when it finds nothing.
    pub hint: &'static str,
    /// The working directory the first lines of a session's files name, for a session whose
    /// project is a guess until then (its files start without one).
    pub cwd_in: Option<CwdIn>,
}

/// What a running agent process says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// It runs this session (the root session's id).
    Session(String),
    /// It runs some session of the project in this folder (its working directory).
    Project(PathBuf),
    /// It ran this session and is gone without the leave it takes on a clean exit (Claude Code's
    /// `sessions/<pid>.json` left behind by a SIGKILL): unless another process runs the session
    /// now, it has ended, however recently its files changed. `pid` is the dead one.
    Gone(String),
}

/// One running process of an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub agent: &'static str,
    pub pid: u32,
    pub claim: Claim,
    /// When it started (a session last written before that is not its own).
    pub started: Option<SystemTime>,
}

/// What one look at `/proc` found, as an agent's hooks read it.
pub struct Sight<'a> {
    pub proc: &'a Proc,
    pub walk: &'a Walk,
    /// Every agent's running processes.
    pub running: &'a [Running],
    /// The walk's held files that a holder runs (one that is no [`Host`], or a host at work on it).
    pub run_files: &'a HashSet<PathBuf>,
}

/// How to find an agent's running processes, and the sessions they run.
pub struct Runner {
    /// Its processes that say what they run (agents whose open files say it all find none),
    /// among those of the tick's walk.
    pub find: fn(&Env, &Proc, &Walk) -> Vec<Running>,
    /// The sessions its running processes run, outside any window.
    pub sessions: fn(&Env, &Sight<'_>, &mut Trouble) -> Vec<Candidate>,
    /// The folder whose files its processes hold open while they run a session (for a walk to want).
    pub held_below: fn(&Env) -> Option<PathBuf>,
    /// Its processes that keep sessions loaded for clients that come and go.
    pub host: Option<Host>,
    /// The working directory a running process of it registered (before its files name one).
    pub registered_cwd: Option<fn(&Env, u32) -> Option<String>>,
}

/// A process that keeps sessions loaded for clients that come and go (Codex's app-server
/// daemon): that it holds a session's files says the session is loaded, not that it runs.
pub struct Host {
    /// Whether a command line is such a host.
    pub is: fn(&[String]) -> bool,
    /// Whether a file it holds shows work under way that no client needs to watch.
    pub at_work: fn(&Path) -> bool,
}

/// An agent whose sessions live in one store of many: how its sessions are read and followed,
/// and which of its processes serve them.
pub struct Store {
    /// One root session's subtree as the store holds it now, as records, and where the store's
    /// log ends (the follower starts there).
    pub read: ReadStore,
    /// A follower of the store's log from a position.
    pub follow: fn(&Path, i64) -> io::Result<Box<dyn Poll + Send>>,
    /// Its processes holding one of the stores (canonical) open, by store, among the walk's
    /// holders, each with the servers it answers on (each asked once).
    pub processes: fn(&Proc, &Walk, &HashSet<PathBuf>) -> Served,
    /// Streams what a server of it says that the store never holds (text as it streams), as
    /// whole records under the server's address; an empty batch says the stream is over.
    pub stream: StreamServer,
    /// The files beside a store its writer commits into (SQLite's `-wal`), or that its readers
    /// touch (`-shm`): watched with it, so that a change to them is the store's (one unknown
    /// to the machine view asked for a rescan of every place).
    pub companions: &'static [&'static str],
}

/// The working directory the first line of a chunk of a session's lines that names one says.
pub type CwdIn = fn(&[u8]) -> Option<String>;

/// One root session's subtree of a store, as records, and where the store's log ends.
pub type ReadStore = fn(&Path, &str) -> io::Result<(Vec<u8>, i64)>;

/// Streams a server's records, under its address, into a channel (on a thread of its own).
pub type StreamServer = fn(&Server, Proc, tokio::sync::mpsc::Sender<(String, Vec<u8>)>) -> io::Result<()>;

/// A follower of a store: what was written since the last call, as records.
pub trait Poll {
    fn poll(&mut self) -> io::Result<Vec<u8>>;
}

/// A process of an agent that holds a store open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreProcess {
    pub pid: u32,
    pub cwd: Option<PathBuf>,
    /// When it started, unix ms.
    pub started_ms: i64,
    /// Its servers that answered (`HOST:PORT`).
    pub servers: Vec<String>,
    /// The sessions its servers list as busy.
    pub busy: HashSet<String>,
}

/// The processes one walk found holding stores open, by the store (canonical).
#[derive(Debug, Default)]
pub struct Served {
    pub by_store: HashMap<PathBuf, Vec<StoreProcess>>,
}

/// A server found running beside a store, for the machine view to stream from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub pid: u32,
    pub authority: String,
    pub store: PathBuf,
}

/// Opens an input named on the command line as a live one, if it is one of the agent's (`follow`:
/// `--follow` was given); notices about the connection go to the sender.
pub type LiveOpen = fn(&Path, bool, &tokio::sync::mpsc::Sender<live::Event>) -> Option<io::Result<LiveInput>>;

/// An input read live: its bytes, its name on screen, and what a recording of it says it was.
pub struct LiveInput {
    pub reader: Box<dyn Read + Send>,
    /// The input as the header names it.
    pub name: crate::wire::Clean,
    pub source: recording::Source,
}

/// How an agent can be acted on (each `None`: not that way). A whole session's process can be
/// signalled whatever its agent (`act::signal`).
pub struct Control {
    /// Through a tee that carries its traffic.
    pub tee: Option<TeeControl>,
    /// Through the server that serves its sessions.
    pub server: Option<ServerApi>,
    /// A hook it runs before a tool call, which may refuse a spawn (`swarmtop guard`).
    pub hook: Option<SpawnHook>,
}

impl Control {
    pub const NONE: Self = Self { tee: None, server: None, hook: None };
}

/// A hook the agent runs before each tool call, given the call as JSON on stdin.
pub struct SpawnHook {
    /// Its settings file: the project's in `project` (a folder), else the user's.
    pub settings: fn(&Env, Option<&Path>) -> Option<PathBuf>,
    /// The tools by which it spawns a sub-agent: the hook's matcher, and the calls it judges.
    pub spawn_tools: &'static [&'static str],
}

/// Who makes an agent's model calls, by the names its models go by.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// As OpenTelemetry's `gen_ai.provider.name` names it.
    pub name: &'static str,
    /// Model name prefixes (lowercase) of this provider.
    pub models: &'static [&'static str],
}

pub static OPENAI: Provider = Provider { name: "openai", models: &["gpt", "codex", "o"] };
pub static ANTHROPIC: Provider = Provider { name: "anthropic", models: &["claude"] };

/// The provider a model name says (`None` for a name no provider here claims).
pub fn provider_of_model(model: &str) -> Option<&'static Provider> {
    let model = model.to_ascii_lowercase();
    [&ANTHROPIC, &OPENAI].into_iter().find(|p| p.models.iter().any(|m| model.starts_with(m)))
}

/// Where an agent's own figure of what it spent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// It states tokens only: swarmtop's price table prices them.
    Tokens,
    /// Its files state a running cost too (Claude Code's `cost-state`, stream-json's `result`).
    CostLines,
    /// Its store states each message's cost (OpenCode's own price table).
    StoreRows,
}

/// How an agent's spend is reported, and how its tool calls are named in traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spend {
    /// Whose models it calls when a thread's model does not say.
    pub provider: Option<&'static Provider>,
    pub reported: Reported,
    /// Its own names of the tools every agent has, for the spans of its calls.
    pub tools: Tools,
}

/// An agent's own names of the tools every agent has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tools {
    /// Its calls that manage agents keep the name it gave them (`Agent`); `false`: they are
    /// written in snake case (`spawnAgent` as `spawn_agent`).
    pub calls_as_written: bool,
    /// A spawn that no call of its own names (a multi-agent v2 activity, an item with lanes).
    pub spawn: &'static str,
    /// The tool that runs a shell command.
    pub shell: &'static str,
    /// Its other tools are named by their title's first word (`Read src/x.rs`).
    pub named_by_title: bool,
}

impl Tools {
    /// The names of an agent that names its calls itself.
    pub const DEFAULT: Self =
        Self { calls_as_written: false, spawn: "spawn_agent", shell: "shell", named_by_title: false };
}

/// The first line of a file, if it ends within [`FIRST_LINE_MAX`] bytes (a regular file only).
pub fn first_line(path: &Path) -> Option<Vec<u8>> {
    let file = super::regular::open(path).ok()?;
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

/// The regular files of `files`; the rest are counted and sampled in `trouble`.
pub fn regular_only(files: Vec<PathBuf>, trouble: &mut Trouble) -> Vec<PathBuf> {
    files
        .into_iter()
        .filter(|f| match super::regular::refusal(f) {
            Some(why) => {
                trouble.not_regular(&why);
                false
            }
            None => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_is_found_by_its_name_and_its_formats() {
        for agent in AGENTS {
            assert_eq!(by_name(agent.name), Some(agent));
            for f in agent.lowers.iter().filter_map(|f| f.name()) {
                assert_eq!(of_format(f), Some(agent), "{f}");
            }
        }
        assert_eq!(of_format("mixed"), None);
        assert_eq!(provider_of_model("Claude-Haiku-4-5"), Some(&ANTHROPIC));
        assert_eq!(provider_of_model("gpt-5.5"), Some(&OPENAI));
        assert_eq!(provider_of_model("qwen3"), None);
        assert_eq!(of_provider(&ANTHROPIC).map(|a| a.name), by_name("claude").map(|a| a.name));
    }
}
