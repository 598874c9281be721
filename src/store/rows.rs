//! What the store keeps, as plain values: what a sync writes for one source (its files, its
//! sessions, its runs with their usage over time and their items), and what queries read back.
//! The backend turns these into rows of its own (docs/store.md has the schema).

use std::path::PathBuf;

use crate::model::prices::Pico;
use crate::model::{AgentOp, Tokens};
use crate::wire::Clean;

/// One file of a source as it was when it was read: who it is (device and inode), how far it
/// went (its size), when it last changed, and a digest of its first bytes (a file rewritten in
/// place with the same size and time is still told apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub head: [u8; 32],
}

/// Spend: tokens by kind and what they cost. `cost` sums the priced part only; `priced` says
/// whether anything in it was priced (a sum of nothing known is not $0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub tokens: Tokens,
    pub cost: Pico,
    pub priced: bool,
}

impl Figures {
    /// The cost as `stats` shows it: `None` when nothing in it was priced.
    pub fn cost_usd(&self) -> Option<Pico> {
        self.priced.then_some(self.cost)
    }

    pub fn add(&mut self, o: &Self) {
        self.tokens.add(&o.tokens);
        if o.priced {
            self.cost += o.cost;
            self.priced = true;
        }
    }
}

/// What is read together: one session as its agent's place lists it (a Claude transcript and
/// its sub-agents' files, a Codex session's rollouts, one root of OpenCode's store, a recording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Which place found it (`claude`, `codex`, `opencode`, `recording`).
    pub place: String,
    /// Unique among sources: its main file, and the root within a store.
    pub key: String,
    /// The agent its sessions ran (`claude`, `codex`, …).
    pub agent: String,
    pub project: Option<String>,
    pub files: Vec<FileState>,
    /// The swarmtop and price table that read it: a source read by another is read again.
    pub fingerprint: String,
}

/// One source as a sync writes it, replacing whatever the store held for it.
#[derive(Debug, Clone)]
pub struct SourceRows {
    pub source: Source,
    /// Wall clock of the sync, unix ms.
    pub synced_ms: i64,
    pub lines: u64,
    pub bytes: u64,
    pub format: String,
    /// Why the read stopped early, when it did (what was read is kept).
    pub error: Option<String>,
    /// `stats --json` of the source's files, as `stats` printed it then.
    pub stats_json: String,
    /// `tree` of the source's files, as `tree` printed it then.
    pub tree_text: String,
    pub sessions: Vec<SessionRow>,
    /// In first-seen order; a run's parent comes before it.
    pub runs: Vec<RunRow>,
}

impl SourceRows {
    /// Roughly the bytes it holds (its text): what a batch of rows waiting to be written weighs.
    pub fn weight(&self) -> usize {
        let runs: usize = self
            .runs
            .iter()
            .map(|r| {
                r.entries.iter().map(|i| i.text.len() + i.title.len() + i.id.len() + 64).sum::<usize>()
                    + r.brief.as_ref().map_or(0, String::len)
                    + r.answer.as_ref().map_or(0, String::len)
                    + r.usage.len() * 96
                    + 512
            })
            .sum();
        runs + self.stats_json.len() + self.tree_text.len()
    }
}

/// A root session: its root thread and everything below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// The root thread's id: the session's id.
    pub thread: String,
    pub name: String,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    /// The root's status.
    pub status: String,
    /// Threads of the tree, the root included.
    pub agents: u32,
    /// Deepest level below the root.
    pub depth: u32,
    /// The whole tree's spend.
    pub figures: Figures,
}

/// One agent run: a thread of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    pub thread: String,
    /// Index of the parent run in [`SourceRows::runs`].
    pub parent: Option<usize>,
    /// Index of its session in [`SourceRows::sessions`] (`None`: an orphan, or pending).
    pub session: Option<usize>,
    pub depth: u32,
    /// `root`, `child`, `orphan` or `pending`.
    pub role: &'static str,
    pub via: Option<&'static str>,
    /// The parent's item that spawned it.
    pub card: Option<String>,
    /// What kind of agent it is (Claude `agentType`, Codex role, OpenCode agent).
    pub agent_type: Option<String>,
    /// As `tree` names it.
    pub name: String,
    pub nickname: Option<String>,
    /// What it was asked: the spawning card's prompt, a root's first prompt (capped).
    pub brief: Option<String>,
    pub model: Option<String>,
    /// Every model it used, the pricing one first.
    pub models: Vec<String>,
    pub status: String,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    pub turns: u32,
    pub items: u32,
    pub tool_calls: u32,
    /// Its own spend (not its children's).
    pub figures: Figures,
    /// Where its cost came from: `table` (the price table) or `agent` (the agent's own figure).
    pub cost_source: Option<&'static str>,
    /// The agent's figure for its model, shown where the table has none (never summed).
    pub reported_cost: Option<Pico>,
    /// Its final answer (capped).
    pub answer: Option<String>,
    pub files_changed: Vec<String>,
    /// The file its lines came from.
    pub file: Option<String>,
    /// Its spend over time.
    pub usage: Vec<UsageRow>,
    pub entries: Vec<ItemRow>,
    /// Each entry's text digest (SHA-256, what the store keys a text by; `None` for no text),
    /// figured where the source is read: on a reader's core, not on the one writer's, whose time is
    /// most of a first sync's (perf of `report daily` on an empty store: 3 % of the writer's).
    pub digests: Vec<Option<[u8; 32]>>,
    /// Each entry's ordinal in its thread: its place among every item the thread ever had, the
    /// ones its bound dropped counted (`model::Limits::items_per_thread`). Stored as the item's
    /// `ordinal`, so that an item keeps its row as older ones are dropped and a sync of a thread
    /// past its bound writes only its new items, not the whole window shifted by one.
    pub item_ordinals: Vec<u64>,
}

impl RunRow {
    /// The row id of its session, given the ids its source's sessions were written under:
    /// `Some(None)` for a run of no session; `None` when its session is another source's, and so
    /// is the run.
    pub fn session_id(&self, sessions: &[Option<i64>]) -> Option<Option<i64>> {
        match self.session {
            Some(i) => sessions.get(i).copied().flatten().map(Some),
            None => Some(None),
        }
    }
}

/// Spend of one run within one quarter hour, on one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    /// Start of the quarter hour (UTC, unix ms); `None` when the input told no time.
    pub at_ms: Option<i64>,
    pub model: Option<String>,
    pub tokens: Tokens,
    pub cost: Pico,
}

/// One item of a run, its text capped (what search finds, what a lane shows), with what its lane
/// draws it by: the agent's own name for a call (schema 4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ItemRow {
    /// The item's own id (a tool call's, a message's); empty in a store older than schema 4.
    pub id: String,
    pub kind: String,
    pub status: &'static str,
    pub title: String,
    pub text: String,
    pub at_ms: Option<i64>,
    /// The turn it belongs to: its index among the run's turns.
    pub turn: Option<u32>,
    /// The agent's own name for the call, for display only (`task`, `Agent`, `spawnAgent`), or a
    /// sub-agent activity's kind.
    pub tool: Option<String>,
    /// What a call that manages agents does.
    pub op: Option<AgentOp>,
    pub exit_code: Option<i64>,
    /// The threads it names (collab receivers), by id.
    pub receivers: Vec<String>,
    /// Why a call failed, in the agent's own words, capped (schema 6: `Agent type '…' not
    /// found`); none in a store older than that.
    pub why: Option<String>,
}

impl ItemRow {
    /// An item's status as the store wrote it (Codex's names); an unknown word (a store someone
    /// edited) is `completed`.
    pub fn status_of(word: &str) -> &'static str {
        ["inProgress", "completed", "failed", "interrupted", "declined"]
            .into_iter()
            .find(|s| *s == word)
            .unwrap_or("completed")
    }

    /// The threads an item names, as the store keeps them (ids one a line), each sanitised.
    pub fn receivers_of(stored: Option<&str>) -> Vec<String> {
        stored
            .unwrap_or_default()
            .split('\n')
            .filter(|r| !r.is_empty())
            .map(|r| crate::wire::sanitize_line(r).to_string())
            .collect()
    }
}

/// What the store knows of a source, to decide whether it must be read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub key: String,
    pub files: Vec<FileState>,
    pub fingerprint: String,
    /// Its sessions were pruned: not read again unless its files change.
    pub pruned: bool,
}

/// A root session as `history` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: Clean,
    pub agent: Clean,
    pub name: Clean,
    pub project: Option<Clean>,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    pub status: Clean,
    pub agents: u32,
    pub depth: u32,
    pub figures: Figures,
    /// Whether the files it was read from are all still there, as of the last sync.
    pub files_present: bool,
    /// The machine that ran it (a team store's; a file store holds this machine's only).
    pub machine: Option<Clean>,
}

/// One run as the store gives it back (a history view's tree row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub thread: Clean,
    /// The parent run's thread id.
    pub parent: Option<Clean>,
    pub depth: u32,
    pub role: Clean,
    pub agent_type: Option<Clean>,
    pub name: Clean,
    pub brief: Option<Clean>,
    pub model: Option<Clean>,
    pub status: Clean,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    pub turns: u32,
    pub items: u32,
    pub tool_calls: u32,
    pub figures: Figures,
    pub answer: Option<Clean>,
    pub files_changed: Vec<Clean>,
}

/// One session from the store: its row, its runs, and its source as `stats` and `tree` gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionView {
    pub session: SessionInfo,
    pub runs: Vec<RunInfo>,
    pub stats_json: String,
    pub tree_text: Clean,
}

/// One quarter hour of one run's spend, with what reports group it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageFact {
    pub at_ms: Option<i64>,
    pub model: Option<Clean>,
    pub tokens: Tokens,
    pub cost: Pico,
    pub priced: bool,
    /// A sub-agent's (any run but a session's root).
    pub subagent: bool,
    pub agent_type: Option<Clean>,
    /// The session's id; for a run of no session, its source's key.
    pub session: Clean,
    pub agent: Clean,
    pub project: Option<Clean>,
    /// The machine that ran it (a team store's).
    pub machine: Option<Clean>,
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub session: Option<Clean>,
    pub agent: Clean,
    /// The run's thread id.
    pub thread: Clean,
    /// The run's name.
    pub name: Clean,
    pub kind: Clean,
    /// The call's own tool name, as its agent calls it (`Bash`, `task`, `spawnAgent`), when the
    /// hit is a tool call's.
    pub tool: Option<Clean>,
    pub at_ms: Option<i64>,
    /// The text around the match, in pieces: `true` for the words that matched.
    pub snippet: Vec<(Clean, bool)>,
    /// The machine that ran it (a team store's).
    pub machine: Option<Clean>,
}

/// One act on a swarm (an interrupt, a guard's refusal or stop), as it is kept: when, what, who
/// did it and through what, the root session it was in and the agent it was on, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActRow {
    pub at_ms: i64,
    /// `interrupt`, `deny`.
    pub kind: String,
    /// `swarmtop interrupt`, `swarmtop monitor`, `guard`.
    pub by: String,
    /// `tee`, the server's kind, `signal`, `hook`.
    pub via: String,
    /// The root session's id, where it is known.
    pub session: Option<String>,
    /// The agent acted on (a thread's or session's id).
    pub target: String,
    /// What else says what it was: the turn, the reason, the pid and project.
    pub detail: String,
    /// `interrupted`, `denied`, or why it failed.
    pub outcome: String,
}

impl ActRow {
    /// Whether it stopped its target, as its outcome says: an interrupt the agent confirmed
    /// (`interrupted`; `aborted`, a guard's through a server) or a process gone (`exited on
    /// SIGINT`). A refusal stopped nothing, and neither did a failed stop. A tee's guard keeps its
    /// interrupt once the turn ended (`interrupted`, else how it ended before it could be).
    pub fn stopped(&self) -> bool {
        self.kind == "interrupt"
            && (matches!(self.outcome.as_str(), "interrupted" | "aborted") || self.outcome.starts_with("exited on "))
    }

    /// Whether a guard refused a call of its target (`swarmtop guard`'s `deny`), which went on.
    pub fn refused(&self) -> bool {
        self.kind == "deny" && self.outcome.starts_with("denied")
    }
}
