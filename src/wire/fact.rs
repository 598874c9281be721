//! The one vocabulary every input format is lowered into. Router and model read only these facts:
//! a new agent format is a new lowering in `wire/` (and maybe a source), never a branch downstream.
//!
//! One record lowers to one [`Lowered`]: where the line goes ([`Subject`]), what it weighs when it
//! belongs to a child ([`Weight`]), its time, and the [`Fact`]s it states, in the order they apply.
//!
//! Strings are of three kinds, and the types keep them apart:
//! - [`Id`]: a thread, turn, item or card id. A key, compared byte for byte and never drawn as it is
//!   (names on screen come from [`Clean`] fields or go through `short_id`, which sanitises).
//! - [`CleanStr`] / [`Clean`]: text that may reach a terminal, already through the one sanitiser.
//!   A fact cannot carry unsanitised display text: there is no field of type `&str` for it.
//! - `raw` of [`Lowered`]: the record's own JSON text, for `swarmtop route` (written as JSON, escaped).

use std::borrow::Cow;

pub use super::sanitize::{Clean, CleanStr};

/// A thread, turn, item or card id: a key, never display text.
pub type Id<'a> = Cow<'a, str>;

/// Which format a record was in (for `input.format`; nothing downstream branches on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// A Codex app-server message (JSON-RPC), bare or in a recording envelope.
    #[default]
    CodexAppServer,
    /// A line of a Codex rollout file (`rollout-<time>-<threadId>.jsonl`).
    CodexRollout,
    /// A line of a Claude Code transcript (`<sessionId>.jsonl`, `subagents/agent-<id>.jsonl`).
    ClaudeTranscript,
    /// A line of `claude -p … --output-format stream-json`.
    ClaudeStream,
    /// A line of `codex exec --json`.
    CodexExec,
    /// A row or event of OpenCode's store, or of `opencode serve`'s event stream.
    OpenCode,
    /// A swarmtop recording header or socket marker (`{"swarmtop": …}`).
    Marker,
    /// An OpenTelemetry span, log record or span link, as `listen --otlp` receives them.
    Otlp,
}

impl Format {
    /// Its name in `input.format` (routing.md §7); a marker is no format of agent traffic.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::CodexAppServer => "codex-app-server",
            Self::CodexRollout => "codex-rollout",
            Self::ClaudeTranscript => "claude-transcript",
            Self::ClaudeStream => "claude-stream-json",
            Self::CodexExec => "codex-exec-json",
            Self::OpenCode => "opencode",
            Self::Otlp => "otlp",
            Self::Marker => return None,
        })
    }
}

/// The formats of agent traffic an input held, for `input.format`: one format's name, `mixed`
/// for more, and an app-server input when none was seen (an empty one, markers only).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    seen: Option<Format>,
    mixed: bool,
}

impl Formats {
    pub fn note(&mut self, format: Format) {
        if format.name().is_none() {
            return;
        }
        match self.seen {
            None => self.seen = Some(format),
            Some(seen) => self.mixed |= seen != format,
        }
    }

    pub fn name(self) -> &'static str {
        if self.mixed {
            return "mixed";
        }
        self.seen.and_then(Format::name).unwrap_or("codex-app-server")
    }
}

/// One record, lowered.
#[derive(Debug, Default)]
pub struct Lowered<'a> {
    pub format: Format,
    /// Where the line goes (routing.md §3).
    pub subject: Subject<'a>,
    /// What the line is to a child's lane (routing.md §3); read only when its thread is not a root.
    pub weight: Weight,
    /// The line's stream time, unix ms: the envelope's `ts`, else the line's own time
    /// (`emittedAtMs`, an ISO `timestamp`), else `None`.
    pub time: Option<i64>,
    /// The message's own JSON text (inside its envelope when there is one).
    pub raw: &'a str,
    pub facts: Facts<'a>,
    /// Applied ahead of where its record lies ([`super::OriginInfo::ahead`]: a recorded sidecar,
    /// as its agent starts): it counts in no figure here, its record is counted where it lies.
    pub ahead: bool,
}

/// Where a line goes before any thread state is consulted (routing.md §3).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Subject<'a> {
    /// Client traffic, responses, headers and markers: metadata at most (about the thread of a
    /// [`Fact::Thread`] it carries), never a stream line.
    #[default]
    Control,
    /// Agent traffic that names no thread (`account/*`, `configWarning`, …).
    Global,
    /// Agent traffic of one thread.
    Thread(Id<'a>),
}

/// How a child's line is routed (routing.md §3).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Substantive output: re-homed onto the root's session under its owner's id.
    #[default]
    Output,
    /// Lifecycle noise: drives the lane's state but never reaches the parent's stream.
    Noise,
    /// Noise that closes the lane's current turn (`turn/completed`, a final `error`, a rollout's
    /// `task_complete`): the line a pending buffer keeps above all others.
    Closing,
}

/// The facts of one record, in order. Most records state one fact: that one is held inline, so
/// lowering a stream delta allocates nothing.
#[derive(Debug, Default)]
pub struct Facts<'a> {
    first: Option<Fact<'a>>,
    rest: Vec<Fact<'a>>,
}

impl<'a> Facts<'a> {
    pub fn push(&mut self, fact: Fact<'a>) {
        if self.first.is_none() {
            self.first = Some(fact);
        } else {
            self.rest.push(fact);
        }
    }

    pub fn extend(&mut self, facts: impl IntoIterator<Item = Fact<'a>>) {
        for f in facts {
            self.push(f);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Fact<'a>> {
        self.first.iter().chain(&self.rest)
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
}

/// What a line says. Facts about "the thread" mean the line's [`Subject`] unless they name
/// another ([`Target`]).
#[derive(Debug)]
pub enum Fact<'a> {
    /// A thread introduces itself or is described: its place in the tree and its names.
    /// Codex `thread/started`, `thread/start`/`thread/read`-like responses, `turn/start` requests
    /// (a root), rollout `session_meta`, a Claude session's own lines (a root), Claude `meta.json`,
    /// stream-json `system/init` and `task_started`; `subAgentActivity` items describe a sub-agent.
    Thread(Box<ThreadFact<'a>>),
    /// A parent announces a child under a card (routing.md §2). Codex `collabAgentToolCall`
    /// (unless failed) and `subAgentActivity` `started` items; Claude `agent_progress` lines and
    /// `toolUseResult.agentId` (2.1.39), `meta.json`; stream-json `task_started`.
    Spawn(Spawn<'a>),
    /// A turn begins. Codex `turn/started`, rollout `task_started`, a Claude user prompt.
    TurnStarted(TurnStarted<'a>),
    /// A turn ends. Codex `turn/completed`, rollout `task_complete` / `turn_aborted`.
    TurnEnded(TurnEnded<'a>),
    /// An item is created or changed: a message, reasoning, a command, a tool call, a card.
    /// Codex `item/started` / `item/completed`, rollout `response_item`s, Claude content blocks
    /// and tool results.
    Item(Box<ItemFact<'a>>),
    /// Streamed text appended to an item. Codex `item/*/delta` (and any `item/…` line naming an
    /// item, which creates it).
    Delta(Delta<'a>),
    /// Token usage. Codex `thread/tokenUsage/updated` and rollout `token_count` are cumulative;
    /// Claude assistant lines are per API response, repeated per content block.
    Usage(Usage<'a>),
    /// The model a thread runs on. Codex `thread/settings/updated`, `model/rerouted`, a spawn's
    /// resolved model, `subAgentActivity`'s model; rollout `turn_context`; Claude `message.model`.
    Model(ModelChange<'a>),
    /// The thread's status changes. Codex `thread/status/changed`, `thread/closed`, `turn/started`,
    /// `closeAgent`; rollout task events; Claude lines (working / waiting for a tool / done).
    Status(StatusFact<'a>),
    /// An error. Codex `error` (`willRetry` says whether it is transient); Claude synthetic
    /// API-error lines.
    Error(ErrorFact),
    /// A parent received a child's final answer: the child's end, which its own later lines do not
    /// undo. Claude `toolUseResult` {`status`, `agentId`}; stream-json `task_updated`.
    Answered(Answered<'a>),
    /// What the agent itself says it cost: Claude `cost-state` lines and `result.modelUsage[m].costUSD`,
    /// OpenCode's per-message `cost`. Shown when the price table does not know the model.
    CostReported(CostReported<'a>),
    /// The agent's own running total of its whole session's tokens, by model: every response of
    /// every agent, also those whose lines never came (stream-json `result.modelUsage`; the stream
    /// omits responses by design). Replaces the previous figure for the model. What the session's
    /// threads do not account for is the session's unattributed remainder: shown as such, never
    /// added to an agent, never counted twice.
    ReportedUsage(ReportedUsage<'a>),
    /// The session ended (the process exited, or was interrupted): nothing of it is running any more.
    /// Claude `[Request interrupted by user]`, `isAbortedMidStream`, stream-json `result`.
    SessionEnded(SessionEnded),
    /// A line for the diagnostics log (global traffic: `configWarning`, `account/*`, …).
    Notice(Notice<'a>),
    /// The line is the thread's copy of another session's history: the thread is a fork of that
    /// session. Claude `--fork-session` (2.1.332) writes the original's lines again, assistant
    /// lines with `requestSessionId` naming the original; the fork's running cost starts from the
    /// original's.
    Copied,
    /// A spawning call the line's thread holds only as such a copy: the child its result
    /// announces is the original session's, never this thread's (design: a fork does not
    /// inherit the original's children).
    CopiedCall(Id<'a>),
    /// swarmtop acted on a thread through what carries its traffic: a tee's guard, or
    /// `swarmtop interrupt`, asked it to stop (a recording envelope's `act`).
    Acted(Acted<'a>),
}

/// Which thread a fact is about.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Target<'a> {
    /// The line's own thread (or, for control lines, the thread their [`Fact::Thread`] names).
    #[default]
    Subject,
    /// Another thread, by id; a thread not seen yet is left alone.
    Thread(Id<'a>),
}

/// How a child was registered (`via` in `stats`): which signal of routing.md §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    CollabAgentToolCall,
    SubAgentActivity,
    ThreadStarted,
    ThreadRead,
    /// A Claude Code sub-agent, announced by its parent's `Task` / `Agent` tool use.
    TaskTool,
    /// An agent whose spans hang under another agent's spawn call in an OpenTelemetry trace.
    OtlpTrace,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CollabAgentToolCall => "collabAgentToolCall",
            Self::SubAgentActivity => "subAgentActivity",
            Self::ThreadStarted => "threadStarted",
            Self::ThreadRead => "threadRead",
            Self::TaskTool => "taskTool",
            Self::OtlpTrace => "otlpTrace",
        }
    }
}

/// What a [`ThreadFact`] says about the thread's place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parentage<'a> {
    /// A child of `parent` (registers it, routing.md §2), announced by `via`, under `card` if known.
    Child { parent: Id<'a>, via: Via, card: Option<Id<'a>> },
    /// A root: a session of its own (registers it as one).
    Root,
    /// Said by another thread about one of its sub-agents: describes a child, so it never changes a
    /// root (routing.md §8: a child's `interacted` about `/root`).
    SubAgent,
    /// Nothing about the tree: names and model only.
    Unknown,
}

#[derive(Debug, Clone)]
pub struct ThreadFact<'a> {
    pub thread: Id<'a>,
    pub parentage: Parentage<'a>,
    /// The agent's nickname (Codex `agentNickname`, Claude `description`). Fills an unnamed thread.
    pub nickname: Option<Clean>,
    /// Its role or agent type (Codex `agentRole`, Claude `agentType`). Fills.
    pub role: Option<Clean>,
    /// Its path in the agent tree (Codex `agent_path`, `/root/a`). Fills.
    pub path: Option<Clean>,
    /// Its model. Replaces.
    pub model: Option<Clean>,
    /// The depth the format states (Claude `spawnDepth`); the router derives its own from the tree.
    pub depth: Option<u32>,
    /// When the agent's own work began, where a record says so apart from when it is heard of
    /// (an OTLP span's start: spans arrive when they end, a batch in the order they ended).
    pub began_ms: Option<i64>,
}

impl<'a> ThreadFact<'a> {
    pub fn new(thread: Id<'a>, parentage: Parentage<'a>) -> Self {
        Self { thread, parentage, nickname: None, role: None, path: None, model: None, depth: None, began_ms: None }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn<'a> {
    pub child: Id<'a>,
    /// The parent's item that announced it (its card, whose lanes the child joins).
    pub card: Option<Id<'a>>,
    pub via: Via,
}

#[derive(Debug, Clone, Default)]
pub struct TurnStarted<'a> {
    /// `None` when the line names no turn: the thread still starts working.
    pub turn: Option<Id<'a>>,
    /// The turn is the thread's own root turn (Codex `turn.id == turn.rootTurnId`): the mark of a
    /// root thread when no other signal settles it (routing.md §8).
    pub own_root_turn: bool,
    /// The agent runs one turn at a time and says nothing when one ends (Claude): a new turn ends
    /// the one still in progress.
    pub ends_previous: bool,
}

/// Which turn a line means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnRef<'a> {
    /// This turn; created if new.
    Id(Id<'a>),
    /// This turn if known, else the thread's latest.
    IdOrLatest(Option<Id<'a>>),
    /// The thread's latest turn.
    Latest,
    /// A known turn, or none: the line's item is filed under no turn if it is not known.
    Known(Option<Id<'a>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    Completed,
    Failed,
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct TurnEnded<'a> {
    pub turn: TurnRef<'a>,
    /// `None` when the format's status was not one swarmtop knows: the turn ends, the thread's
    /// status stays.
    pub outcome: Option<TurnOutcome>,
    pub error: Option<Clean>,
}

/// The kind of an item, in Codex's names (the other formats map onto them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    UserMessage,
    AgentMessage,
    Reasoning,
    Command,
    FileChange,
    McpTool,
    DynamicTool,
    WebSearch,
    Plan,
    ImageView,
    Compaction,
    /// A call that manages other agents ([`AgentOp`]): Codex `collabAgentToolCall`, Claude Code's
    /// `Agent`/`Task`, OpenCode's `task` (a card when it announces children).
    Collab,
    /// `subAgentActivity` (multi-agent v2).
    SubAgentActivity,
    /// An item type swarmtop does not know, by its name.
    Other(Clean),
}

impl ItemKind {
    /// By Codex's `type` names; anything else is [`ItemKind::Other`].
    pub fn of(kind: &str) -> Self {
        match kind {
            "userMessage" => Self::UserMessage,
            "agentMessage" => Self::AgentMessage,
            "reasoning" => Self::Reasoning,
            "commandExecution" => Self::Command,
            "fileChange" => Self::FileChange,
            "mcpToolCall" => Self::McpTool,
            "dynamicToolCall" => Self::DynamicTool,
            "webSearch" => Self::WebSearch,
            "plan" => Self::Plan,
            "imageView" => Self::ImageView,
            "contextCompaction" => Self::Compaction,
            "collabAgentToolCall" => Self::Collab,
            "subAgentActivity" => Self::SubAgentActivity,
            other => Self::Other(super::sanitize(other)),
        }
    }
    /// Its Codex `type` name: what [`Self::of`] reads, as the store and the daemon write it.
    pub fn name(&self) -> &str {
        match self {
            Self::UserMessage => "userMessage",
            Self::AgentMessage => "agentMessage",
            Self::Reasoning => "reasoning",
            Self::Command => "commandExecution",
            Self::FileChange => "fileChange",
            Self::McpTool => "mcpToolCall",
            Self::DynamicTool => "dynamicToolCall",
            Self::WebSearch => "webSearch",
            Self::Plan => "plan",
            Self::ImageView => "imageView",
            Self::Compaction => "contextCompaction",
            Self::Collab => "collabAgentToolCall",
            Self::SubAgentActivity => "subAgentActivity",
            Self::Other(name) => name.as_str(),
        }
    }

    /// Its kind in plain words, for a reader of any agent's sessions (never Codex's type name for
    /// a Claude or OpenCode item); a call's own tool name, when it has one, says more.
    pub fn word(&self) -> &str {
        match self {
            Self::UserMessage => "prompt",
            Self::AgentMessage => "message",
            Self::Reasoning => "reasoning",
            Self::Command => "command",
            Self::FileChange => "file change",
            Self::McpTool | Self::DynamicTool => "tool call",
            Self::WebSearch => "web search",
            Self::Plan => "plan",
            Self::ImageView => "image",
            Self::Compaction => "compaction",
            Self::Collab => "agent call",
            Self::SubAgentActivity => "sub-agent activity",
            Self::Other(name) => name.as_str(),
        }
    }
}

/// What a call that manages other agents does, whatever the agent calls it. The agent's own name
/// for the call travels beside it ([`ItemFact::tool`]), for display only: nothing downstream
/// compares a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentOp {
    /// Starts agents: Codex `spawnAgent` (and a `subAgentActivity` `started`), Claude Code `Agent`
    /// (`Task` before 2.1.63), OpenCode `task`.
    Spawn,
    /// Gives an agent more to do: Codex `sendInput`, `send_message`, `followup_task`.
    Send,
    /// Waits for agents: Codex `wait`, `wait_agent`. The wait's own status is its own: an agent it
    /// waited for that failed is that agent's failure, shown on its lane.
    Wait,
    /// Closes an agent: Codex `closeAgent`.
    Close,
    /// Resumes a closed agent: Codex `resumeAgent`.
    Resume,
    /// Interrupts an agent's turn: Codex `interrupt_agent`.
    Interrupt,
    /// Lists the agents: Codex `list_agents`.
    List,
}

impl AgentOp {
    /// The word for such calls on a tree row (`⑂ spawn ×3`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Send => "send",
            Self::Wait => "wait",
            Self::Close => "close",
            Self::Resume => "resume",
            Self::Interrupt => "interrupt",
            Self::List => "list",
        }
    }

    /// The call kind [`Self::word`] names (the run store keeps it by that word).
    pub fn of(word: &str) -> Option<Self> {
        Some(match word {
            "spawn" => Self::Spawn,
            "send" => Self::Send,
            "wait" => Self::Wait,
            "close" => Self::Close,
            "resume" => Self::Resume,
            "interrupt" => Self::Interrupt,
            "list" => Self::List,
            _ => return None,
        })
    }

    /// The status a call of this kind ends in, from what the agent says: a wait that returned
    /// has done its job even when the agent it waited for failed (Codex marks the wait `failed`
    /// then).
    pub fn own_status(self, said: ItemStatus) -> ItemStatus {
        match (self, said) {
            (Self::Wait, ItemStatus::Failed) => ItemStatus::Completed,
            _ => said,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    InProgress,
    Completed,
    Failed,
    Interrupted,
    Declined,
}

impl ItemStatus {
    /// By Codex's names.
    pub fn of(s: &str) -> Option<Self> {
        Some(match s {
            "inProgress" => Self::InProgress,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "interrupted" => Self::Interrupted,
            "declined" => Self::Declined,
            _ => return None,
        })
    }
}

/// How an item's carried text relates to what it holds already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextRule {
    /// Replaces it (Codex `item/completed` is authoritative over the deltas, routing.md §6).
    #[default]
    Authoritative,
    /// Fills it only while it has none (Codex `item/started`: the deltas that follow are newer).
    Provisional,
    /// A tool's output: replaces the text, except a card's, which stays its prompt.
    Output,
}

#[derive(Debug, Clone, Default)]
pub struct ItemFact<'a> {
    /// `None`: an item of its own with no id in the format, told apart by the line that brought it.
    pub id: Option<Id<'a>>,
    /// Only changes an item already known (a tool result naming its call); never creates one.
    pub update_only: bool,
    /// The turn a new item is filed under.
    pub turn: Option<TurnRef<'a>>,
    /// The kind of a new item; an item first named by a delta takes it when it is learnt.
    pub kind: Option<ItemKind>,
    pub status: Option<ItemStatus>,
    /// One line: the command, the tool, the files, the collab call. Replaces.
    pub title: Option<Clean>,
    pub text: Option<Clean>,
    pub text_rule: TextRule,
    pub exit_code: Option<i64>,
    /// What a call that manages agents does; `None` for any other item.
    pub op: Option<AgentOp>,
    /// The agent's own name for that call, for display (`spawnAgent`, `Agent`, `task`), or a
    /// `subAgentActivity`'s kind (`started`, …).
    pub tool: Option<Clean>,
    /// What the children this item spawns are called: a Claude `Task`'s `description` and
    /// `subagent_type` name its lanes' agents.
    pub lane_nickname: Option<Clean>,
    pub lane_role: Option<Clean>,
    /// Threads the item names (collab receivers, the activity's agent); unknown ones are skipped.
    pub receivers: Vec<Id<'a>>,
    /// A card: children registered with it as their card before it was applied still join its
    /// lanes (a spawn line replayed from a pending parent).
    pub card: bool,
    /// Times, each kept once set.
    pub started_ms: Option<i64>,
    pub completed_ms: Option<i64>,
    /// Why the call failed, in the agent's own words, where the line says it apart from the
    /// call's text: a spawn that started no agent (Claude Code's `Agent type '…' not found`,
    /// OpenCode's `Unknown agent type`) or whose agent failed keeps its prompt as its text.
    pub why: Option<Clean>,
    /// The call's end hands back the answers of the agents it started (a Claude Code `Agent`
    /// call in the foreground, told by its telemetry's span, which names no agent): they end
    /// with it, unless they began after it (launched in the background).
    pub answers: bool,
}

#[derive(Debug, Clone)]
pub struct Delta<'a> {
    pub item: Id<'a>,
    /// The turn the item is filed under if the delta creates it (a known turn only).
    pub turn: Option<Id<'a>>,
    /// `None`: the line names the item (creating it) but carries no text.
    pub text: Option<CleanStr<'a>>,
    /// Reasoning summary / content part: a new part starts a new paragraph.
    pub part: Option<i64>,
}

/// Token figures, OpenAI semantics: input includes cached and cache-written input, output includes
/// reasoning (wire.md §4). A missing figure counts as zero.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Breakdown {
    #[serde(default)]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cached_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_input_tokens: Option<u64>,
    /// The part of the cache writes kept for an hour (Anthropic), priced higher.
    #[serde(skip)]
    pub cache_write_1h_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning_output_tokens: Option<u64>,
}

/// How full the context window is, from the latest model response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextFill {
    pub used: u64,
    /// The model's window, where the agent says it (Codex `modelContextWindow`, Claude
    /// stream-json `result.modelUsage[m].contextWindow`); a Claude transcript never does.
    pub window: Option<u64>,
}

impl ContextFill {
    /// `used` of `window`, when the window is known (and not zero).
    pub fn ratio(self) -> Option<f64> {
        self.window.filter(|&w| w > 0).map(|w| (self.used as f64 / w as f64).min(1.0))
    }

    /// What one Anthropic response's prompt and answer hold (input, cache read and written,
    /// output: the next request sends them all again), when it used anything (an API error's
    /// synthetic line says nothing of the context).
    pub fn of_response(b: &Breakdown) -> Option<Self> {
        b.total_tokens.filter(|&used| used > 0).map(|used| Self { used, window: None })
    }
}

#[derive(Debug, Clone)]
pub enum Usage<'a> {
    /// The thread's totals so far: merged field-wise by max, so duplicated and late frames are
    /// harmless (wire.md §4); priced by the thread's model.
    Cumulative { total: Option<Breakdown>, context: Option<ContextFill> },
    /// One API response's usage. The same response may be stated again (Claude writes one line per
    /// content block, repeating it): figures are merged by max per `key`, then summed over keys.
    /// Priced by the response's own model.
    Response(Box<ResponseUsage<'a>>),
}

#[derive(Debug, Clone)]
pub struct ResponseUsage<'a> {
    /// Identifies the response: Claude `(message.id, requestId)`.
    pub key: (Id<'a>, Id<'a>),
    pub tokens: Breakdown,
    /// The response's model, for its price (`None`: the thread's).
    pub model: Option<CleanStr<'a>>,
    /// The thread's context after this response (the latest response's is the thread's).
    pub context: Option<ContextFill>,
}

#[derive(Debug, Clone)]
pub struct ModelChange<'a> {
    pub target: Target<'a>,
    /// Never empty.
    pub model: CleanStr<'a>,
}

/// Thread status, the last transition wins (routing.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Pending,
    Running,
    Waiting,
    Retrying,
    Idle,
    Failed,
    Interrupted,
    Closed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Retrying => "retrying",
            Self::Idle => "idle",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Closed => "closed",
        }
    }

    /// Still doing work (or about to).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Waiting | Self::Retrying)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Approval,
    UserInput,
}

/// A status as the agent reports it; some depend on the status before (routing.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusChange {
    /// Active with no flag: ends a wait or a retry, else changes nothing.
    Active,
    /// Active, waiting on approval or on the user's input.
    Waiting(Wait),
    /// Idle: ends work, a wait or a retry; a thread already ended stays ended.
    Idle,
    /// At work, said by a record of its work where no turn is told (a Claude Code sub-agent's
    /// telemetry: its prompt is not exported): an agent not started yet is running; any other
    /// status stays, since such records come late (a span is exported when it ends, after the
    /// agent may have ended).
    Began,
    /// This status, whatever came before; except that a child whose parent has its final answer
    /// ([`Fact::Answered`]) keeps that end.
    Set(Status),
}

#[derive(Debug, Clone)]
pub struct StatusFact<'a> {
    pub target: Target<'a>,
    pub change: StatusChange,
}

#[derive(Debug, Clone)]
pub struct ErrorFact {
    pub message: Option<Clean>,
    /// The agent retries (transient: the thread's next line puts back its status), else final.
    pub retrying: bool,
    /// Not final either: the turn goes on and something later tells how it ends (`codex exec
    /// --json`: an `error` line before `turn.failed`, a non-fatal `error` item). Its message is
    /// kept; the status is left as it is.
    pub goes_on: bool,
}

#[derive(Debug, Clone)]
pub struct Acted<'a> {
    /// The thread acted on.
    pub target: Id<'a>,
    /// Who asked, and why: `guard: depth 3 > 2`, `swarmtop interrupt`.
    pub why: Clean,
    /// Not a stop: a guard refused a call of the target's (a spawn past a limit), which went on.
    pub refused: bool,
    /// The call refused (its id), where the act names it.
    pub call: Option<Id<'a>>,
}

#[derive(Debug, Clone)]
pub struct Answered<'a> {
    /// The child whose answer it is.
    pub child: Id<'a>,
    /// `Idle` (completed), `Failed` or `Interrupted`.
    pub status: Status,
}

#[derive(Debug, Clone)]
pub struct CostReported<'a> {
    /// The model the figure is for, when the agent splits it by model.
    pub model: Option<CleanStr<'a>>,
    /// US dollars as the agent wrote the number (kept as text: it is summed exactly).
    pub usd: Cow<'a, str>,
    /// A running total that replaces the previous figure (Claude `cost-state`, `modelUsage`), or an
    /// amount to add.
    pub cumulative: bool,
    /// The figure is the thread's own (an OpenCode session's `cost`, over its own messages only),
    /// not its whole session's (Claude's, over every agent): it prices the thread itself where the
    /// price table does not know the model.
    pub own: bool,
}

#[derive(Debug, Clone)]
pub struct ReportedUsage<'a> {
    pub model: CleanStr<'a>,
    /// The session's totals for the model so far (cumulative: it replaces, never adds).
    pub tokens: Breakdown,
    /// The model's context window, when the agent says it: the window of every context fill
    /// of the session's threads on that model.
    pub context_window: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub struct SessionEnded {
    /// Interrupted (by the user, a signal) rather than finished.
    pub interrupted: bool,
}

#[derive(Debug, Clone)]
pub struct Notice<'a> {
    /// What kind of line it was (a Codex method name).
    pub method: CleanStr<'a>,
    pub message: Option<Clean>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_op_is_found_again_by_its_word() {
        use AgentOp::*;
        for op in [Spawn, Send, Wait, Close, Resume, Interrupt, List] {
            assert_eq!(AgentOp::of(op.word()), Some(op));
        }
        assert_eq!(AgentOp::of("task"), None);
    }

    #[test]
    fn an_input_is_named_by_its_one_format_or_mixed() {
        let named = |formats: &[Format]| {
            let mut seen = Formats::default();
            for &f in formats {
                seen.note(f);
            }
            seen.name()
        };
        assert_eq!(named(&[]), "codex-app-server");
        assert_eq!(named(&[Format::Marker, Format::ClaudeTranscript, Format::ClaudeTranscript]), "claude-transcript");
        assert_eq!(named(&[Format::CodexExec]), "codex-exec-json");
        assert_eq!(named(&[Format::ClaudeStream, Format::Marker]), "claude-stream-json");
        assert_eq!(named(&[Format::CodexRollout, Format::CodexAppServer]), "mixed");
        assert_eq!(named(&[Format::Otlp, Format::Otlp, Format::OpenCode]), "mixed");
    }
}
