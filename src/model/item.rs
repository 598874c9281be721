//! Items of a thread: what the lanes and transcripts show. Deltas accumulate; `item/completed` is
//! authoritative (routing.md §6). All text is sanitised here, where it enters the model.

use serde::Deserialize;

use crate::router::ThreadIdx;
use crate::wire::{self, Clean, Str, parse_raw};

/// First capacity of a streamed item's text, in bytes.
const STREAM_START: usize = 256;

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
    /// `collabAgentToolCall`: spawn, wait, send, close … (a card when it announces children).
    Collab,
    /// `subAgentActivity` (multi-agent v2).
    SubAgentActivity,
    Other(Box<str>),
}

impl ItemKind {
    pub(super) fn of(kind: &str) -> Self {
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
            other => Self::Other(other.into()),
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
    fn parse(s: &str) -> Option<Self> {
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

#[derive(Debug, Clone)]
pub struct Item {
    pub id: Box<str>,
    pub kind: ItemKind,
    /// Index into the thread's turns.
    pub turn: Option<usize>,
    pub status: ItemStatus,
    /// One line: the command, the tool, the files, the collab call.
    pub title: Clean,
    /// The body: message text, reasoning, command output, diff.
    pub text: Clean,
    pub exit_code: Option<i64>,
    /// Collab tool name (`spawnAgent`, `wait`, …) or subAgentActivity kind (`started`, …).
    pub tool: Option<Box<str>>,
    /// The kind of agent a Claude Code `Task` spawns (`Explore`, `general-purpose`, …).
    pub agent_type: Option<Clean>,
    /// Threads the item names (collab receivers, the activity's agent).
    pub receivers: Vec<ThreadIdx>,
    /// Children registered with this item as their card: its lanes, in registration order.
    pub lanes: Vec<ThreadIdx>,
    pub started_ms: Option<i64>,
    pub completed_ms: Option<i64>,
    /// Bytes of text dropped by the per-item and scrollback bounds.
    pub dropped_bytes: u64,
    last_summary_index: Option<i64>,
}

impl Item {
    pub fn new(id: &str, kind: &str) -> Self {
        Self {
            id: id.into(),
            kind: ItemKind::of(kind),
            turn: None,
            status: ItemStatus::InProgress,
            title: Clean::new(),
            text: Clean::new(),
            exit_code: None,
            tool: None,
            agent_type: None,
            receivers: Vec::new(),
            lanes: Vec::new(),
            started_ms: None,
            completed_ms: None,
            dropped_bytes: 0,
            last_summary_index: None,
        }
    }

    /// Fills what an `item/started` or `item/completed` carries. `completed` makes the carried
    /// text authoritative over accumulated deltas.
    pub(super) fn absorb(&mut self, item: &wire::Item<'_>, completed: bool) {
        if let Some(kind) = item.kind.as_deref() {
            // An item first named by a delta has no kind yet.
            if matches!(self.kind, ItemKind::Other(_)) {
                self.kind = ItemKind::of(kind);
            }
        }
        match item.status.as_deref().and_then(ItemStatus::parse) {
            Some(s) => self.status = s,
            None if completed => self.status = ItemStatus::Completed,
            None => {}
        }
        if let Some(code) = parse_raw::<i64>(item.exit_code) {
            self.exit_code = Some(code);
        }
        let title = self.title_of(item);
        if !title.is_empty() {
            self.title = title;
        }
        if let Some(text) = self.text_of(item) {
            if completed || self.text.is_empty() {
                self.text = text;
            }
        }
    }

    fn title_of(&mut self, item: &wire::Item<'_>) -> Clean {
        let mut title = Clean::new();
        match self.kind {
            ItemKind::Command => {
                if let Some(cmd) = parse_raw::<Str<'_>>(item.command) {
                    title.push(&cmd);
                } else if let Some(parts) = parse_raw::<Vec<Str<'_>>>(item.command) {
                    title.push(&parts.join(" "));
                }
            }
            ItemKind::FileChange => {
                #[derive(Deserialize)]
                struct Change<'a> {
                    #[serde(borrow)]
                    path: Option<Str<'a>>,
                }
                let changes: Vec<Change<'_>> = parse_raw(item.changes).unwrap_or_default();
                let paths: Vec<&str> = changes.iter().filter_map(|c| c.path.as_deref()).collect();
                title.push(&paths.join(", "));
            }
            ItemKind::McpTool | ItemKind::DynamicTool => {
                let server = parse_raw::<Str<'_>>(item.server);
                let tool = item.tool();
                let name = match (server, tool) {
                    (Some(s), Some(t)) => format!("{s}.{t}"),
                    (None, Some(t)) => t.into_owned(),
                    (Some(s), None) => s.into_owned(),
                    (None, None) => String::new(),
                };
                title.push(&name);
            }
            ItemKind::WebSearch => {
                if let Some(q) = parse_raw::<Str<'_>>(item.query) {
                    title.push(&q);
                }
            }
            ItemKind::Collab => {
                if let Some(tool) = item.tool() {
                    self.tool = Some(tool.as_ref().into());
                }
                if let Some(prompt) = parse_raw::<Str<'_>>(item.prompt) {
                    title.push(&prompt);
                }
            }
            ItemKind::SubAgentActivity => {
                if let Some(kind) = item.activity.as_deref() {
                    self.tool = Some(kind.into());
                }
                if let Some(path) = item.agent_path.as_deref() {
                    title.push(path);
                }
            }
            _ => {}
        }
        title
    }

    fn text_of(&self, item: &wire::Item<'_>) -> Option<Clean> {
        let mut text = Clean::new();
        match self.kind {
            ItemKind::AgentMessage | ItemKind::Plan => text.push(&parse_raw::<Str<'_>>(item.text)?),
            ItemKind::UserMessage => {
                #[derive(Deserialize)]
                struct Part<'a> {
                    #[serde(borrow)]
                    text: Option<Str<'a>>,
                }
                let parts: Vec<Part<'_>> = parse_raw(item.content)?;
                let joined: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
                text.push(&joined.join("\n"));
            }
            ItemKind::Reasoning => {
                let summary: Vec<Str<'_>> = parse_raw(item.summary).unwrap_or_default();
                let parts = if summary.is_empty() { parse_raw(item.content).unwrap_or_default() } else { summary };
                if parts.is_empty() {
                    return None;
                }
                text.push(&parts.join("\n\n"));
            }
            ItemKind::Command => text.push(&parse_raw::<Str<'_>>(item.aggregated_output)?),
            ItemKind::FileChange => {
                #[derive(Deserialize)]
                struct Change<'a> {
                    #[serde(borrow)]
                    diff: Option<Str<'a>>,
                }
                let changes: Vec<Change<'_>> = parse_raw(item.changes)?;
                let diffs: Vec<&str> = changes.iter().filter_map(|c| c.diff.as_deref()).collect();
                if diffs.is_empty() {
                    return None;
                }
                text.push(&diffs.join("\n"));
            }
            ItemKind::McpTool | ItemKind::DynamicTool => {
                #[derive(Deserialize)]
                struct Error<'a> {
                    #[serde(borrow)]
                    message: Option<Str<'a>>,
                }
                text.push(&parse_raw::<Error<'_>>(item.error)?.message?);
            }
            _ => return None,
        }
        Some(text)
    }

    /// Appends a streamed delta; a new reasoning summary part starts a new paragraph.
    pub(super) fn push_delta(&mut self, delta: &str, summary_index: Option<i64>) {
        if summary_index.is_some() && self.last_summary_index.is_some() && summary_index != self.last_summary_index {
            self.text.push("\n\n");
        }
        if summary_index.is_some() {
            self.last_summary_index = summary_index;
        }
        if self.text.is_empty() {
            // Deltas are a few words each: growing from nothing reallocated on every other one.
            self.text.reserve(STREAM_START);
        }
        self.text.push(delta);
    }

    /// Keeps at most `max` bytes of text (the newest); returns the bytes dropped.
    pub(super) fn bound_text(&mut self, max: usize) -> usize {
        let dropped = self.text.keep_tail(max);
        self.dropped_bytes += dropped as u64;
        dropped
    }
}
