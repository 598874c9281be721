//! What a Claude Code transcript line does to the model (wire.md §6).
//!
//! Usage is per API response, and one response is written as several lines (one per content
//! block) repeating it: figures are deduplicated by `(message.id, requestId)` keeping the largest
//! (`output_tokens` can stay at its stream-start value on early lines), then summed. Each response
//! is priced by its own model, so a session that switches models, or a local `<synthetic>` message,
//! is costed right.

use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::Model;
use super::item::{Item, ItemKind, ItemStatus};
use super::prices::{Pico, Price};
use super::thread::{Status, TurnStatus};
use super::tokens::Tokens;
use crate::router::ThreadIdx;
use crate::wire::claude::{AgentResult, Block, ClaudeLine, Usage, blocks_of};
use crate::wire::{Str, sanitize};

/// The responses of one thread, for deduplicating and pricing them.
#[derive(Debug, Clone, Default)]
pub struct Account {
    responses: FxHashMap<Box<str>, Response>,
    cost: Pico,
    unpriced: u32,
    /// The parent has its answer: the agent's own lines no longer change its status.
    answered: bool,
}

#[derive(Debug, Clone, Copy)]
struct Response {
    tokens: Tokens,
    price: Option<Price>,
}

impl Account {
    /// The thread's cost: `None` while any response has a model the table does not know.
    pub fn cost(&self) -> Option<Pico> {
        (self.unpriced == 0 && !self.responses.is_empty()).then_some(self.cost)
    }
}

/// Anthropic usage in the model's OpenAI vocabulary: input includes cache reads and writes.
fn tokens_of(u: &Usage) -> Tokens {
    let v = |x: Option<u64>| x.unwrap_or(0);
    let (fresh, written, read) = (v(u.input_tokens), v(u.cache_creation_input_tokens), v(u.cache_read_input_tokens));
    let input = fresh + written + read;
    let output = v(u.output_tokens);
    Tokens {
        input,
        cached_input: read,
        cache_write: written,
        cache_write_1h: u.cache_creation.and_then(|c| c.ephemeral_1h_input_tokens).unwrap_or(0).min(written),
        output,
        reasoning_output: 0,
        total: input + output,
    }
}

fn max_of(a: &Tokens, b: &Tokens) -> Tokens {
    Tokens {
        input: a.input.max(b.input),
        cached_input: a.cached_input.max(b.cached_input),
        cache_write: a.cache_write.max(b.cache_write),
        cache_write_1h: a.cache_write_1h.max(b.cache_write_1h),
        output: a.output.max(b.output),
        reasoning_output: a.reasoning_output.max(b.reasoning_output),
        total: a.total.max(b.total),
    }
}

/// A tool's input, for its one-line title.
#[derive(Deserialize, Default)]
struct ToolInput<'a> {
    #[serde(borrow, default)]
    command: Option<Str<'a>>,
    #[serde(borrow, default)]
    description: Option<Str<'a>>,
    #[serde(borrow, default)]
    prompt: Option<Str<'a>>,
    #[serde(borrow, default)]
    subagent_type: Option<Str<'a>>,
    #[serde(borrow, default)]
    file_path: Option<Str<'a>>,
    #[serde(borrow, default)]
    pattern: Option<Str<'a>>,
    #[serde(borrow, default)]
    url: Option<Str<'a>>,
    #[serde(borrow, default)]
    query: Option<Str<'a>>,
}

/// The text of a tool result's content (a string or text blocks).
fn result_text(content: Option<&serde_json::value::RawValue>) -> String {
    blocks_of(content).iter().filter_map(|b| b.text.as_deref()).collect::<Vec<_>>().join("\n")
}

impl Model {
    pub(super) fn apply_claude(&mut self, idx: ThreadIdx, line: &ClaudeLine<'_>, time: Option<i64>) {
        match line.kind.as_deref() {
            Some("assistant") => self.claude_assistant(idx, line, time),
            Some("user") => self.claude_user(idx, line, time),
            _ => {}
        }
    }

    fn claude_assistant(&mut self, idx: ThreadIdx, line: &ClaudeLine<'_>, time: Option<i64>) {
        let Some(message) = &line.message else { return };
        let model = message.model.as_deref().filter(|m| !m.is_empty());
        // `<synthetic>` messages are made locally: free, and no change of the thread's model.
        if let Some(m) = model.filter(|m| *m != "<synthetic>") {
            self.set_model(idx, m);
        }
        if let Some(usage) = &message.usage {
            let key = format!(
                "{}\u{1f}{}",
                message.id.as_deref().unwrap_or_default(),
                line.request_id.as_deref().unwrap_or_default()
            );
            let price = model.and_then(|m| self.prices.lookup(m));
            self.claude_usage(idx, key, &tokens_of(usage), price);
        }
        let turn = self.claude_turn(idx, None, time);
        for (i, block) in line.blocks().into_iter().enumerate() {
            let uuid = line.uuid.as_deref().unwrap_or_default();
            match block.kind.as_deref() {
                Some("text") => {
                    if let Some(text) = block.text.as_deref() {
                        self.claude_item(idx, &format!("{uuid}#{i}"), ItemKind::AgentMessage, turn, time, |item| {
                            item.text = sanitize(text);
                            item.status = ItemStatus::Completed;
                        });
                    }
                }
                Some("thinking") => {
                    if let Some(text) = block.thinking.as_deref() {
                        self.claude_item(idx, &format!("{uuid}#{i}"), ItemKind::Reasoning, turn, time, |item| {
                            item.text = sanitize(text);
                            item.status = ItemStatus::Completed;
                        });
                    }
                }
                Some("tool_use") => self.claude_tool_use(idx, &block, turn, time),
                _ => {}
            }
        }
        // Claude Code writes most lines with `stop_reason: null`; what a message holds tells more: a
        // tool call waits for its result, an answer without one ends the turn.
        let asks_tool = line.blocks().iter().any(|b| b.kind.as_deref() == Some("tool_use"));
        let ended = message.stop_reason.as_deref() == Some("end_turn") || !asks_tool;
        self.claude_status(idx, if ended { Status::Idle } else { Status::Running });
    }

    /// A sub-agent answered to its parent keeps that end, whatever order the files are read in.
    fn claude_status(&mut self, idx: ThreadIdx, status: Status) {
        let t = &mut self.threads[idx.index()];
        if !t.claude.as_ref().is_some_and(|a| a.answered) {
            t.status = status;
        }
    }

    fn claude_tool_use(&mut self, idx: ThreadIdx, block: &Block<'_>, turn: Option<usize>, time: Option<i64>) {
        let Some(id) = block.id.as_deref() else { return };
        let name = block.name.as_deref().unwrap_or("tool");
        let input: ToolInput<'_> = block.input.and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or_default();
        let (kind, title) = match name {
            "Bash" => (ItemKind::Command, input.command.as_deref().unwrap_or_default().to_owned()),
            "Task" | "Agent" => (ItemKind::Collab, input.description.as_deref().unwrap_or_default().to_owned()),
            _ => {
                let arg =
                    [&input.file_path, &input.pattern, &input.command, &input.url, &input.query, &input.description]
                        .into_iter()
                        .find_map(|a| a.as_deref());
                (ItemKind::DynamicTool, arg.map_or_else(|| name.to_owned(), |a| format!("{name} {a}")))
            }
        };
        let spawn = kind == ItemKind::Collab;
        self.claude_item(idx, id, kind, turn, time, |item| {
            item.title = sanitize(&title);
            item.status = ItemStatus::InProgress;
            if spawn {
                // Drawn like a Codex spawn card; the agent type names its lanes.
                item.tool = Some("spawnAgent".into());
                item.text = sanitize(input.prompt.as_deref().unwrap_or_default());
                if let Some(kind) = input.subagent_type.as_deref() {
                    item.agent_type = Some(sanitize(kind));
                }
            }
        });
    }

    fn claude_user(&mut self, idx: ThreadIdx, line: &ClaudeLine<'_>, time: Option<i64>) {
        let blocks = line.blocks();
        let results: Vec<&Block<'_>> = blocks.iter().filter(|b| b.kind.as_deref() == Some("tool_result")).collect();
        if results.is_empty() {
            // A prompt (not a tool's answer, not Claude Code's own meta text) opens a turn.
            if line.is_meta != Some(true) {
                let text: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
                let uuid = line.uuid.as_deref().unwrap_or_default();
                let turn = self.claude_turn(idx, Some(uuid), time);
                self.claude_item(idx, uuid, ItemKind::UserMessage, turn, time, |item| {
                    item.text = sanitize(&text.join("\n"));
                    item.status = ItemStatus::Completed;
                });
                self.claude_status(idx, Status::Running);
            }
            return;
        }
        for block in results {
            let Some(tool_use) = block.tool_use_id.as_deref() else { continue };
            let failed = block.is_error == Some(true);
            let output = result_text(block.content);
            if let Some(&slot) = self.threads[idx.index()].item_index.get(tool_use) {
                self.edit_item(idx, slot, |item| {
                    if item.kind != ItemKind::Collab {
                        item.text = sanitize(&output);
                    }
                    item.status = if failed { ItemStatus::Failed } else { ItemStatus::Completed };
                    item.completed_ms = time;
                });
            }
        }
        // A sub-agent's answer ends it.
        let result: Option<AgentResult<'_>> = line.tool_use_result.and_then(|raw| serde_json::from_str(raw.get()).ok());
        if let Some(agent) = result.as_ref().and_then(|r| r.agent_id.as_deref()).and_then(|a| self.find(a)) {
            // Background agents first answer with a launch acknowledgement, not their end.
            let end = match result.as_ref().and_then(|r| r.status.as_deref()) {
                Some("completed") => Some(Status::Idle),
                Some("failed" | "error") => Some(Status::Failed),
                _ => None,
            };
            if let Some(end) = end {
                let t = &mut self.threads[agent.index()];
                t.status = end;
                t.claude.get_or_insert_with(Default::default).answered = true;
            }
        }
        self.claude_status(idx, Status::Running);
    }

    /// Adds one line's usage of a response: the new largest figures less what was counted before.
    fn claude_usage(&mut self, idx: ThreadIdx, key: String, usage: &Tokens, price: Option<Price>) {
        let t = &mut self.threads[idx.index()];
        let old_thread = t.tokens;
        let account = t.claude.get_or_insert_with(Default::default);
        let before = account.responses.get(key.as_str()).copied();
        let merged = before.map_or(*usage, |b| max_of(&b.tokens, usage));
        let price = price.or(before.and_then(|b| b.price));
        if let Some(b) = before {
            match b.price {
                Some(p) => account.cost = account.cost - b.tokens.cost(&p),
                None => account.unpriced -= 1,
            }
        }
        match price {
            Some(p) => account.cost += merged.cost(&p),
            None => account.unpriced += 1,
        }
        account.responses.insert(key.into(), Response { tokens: merged, price });
        let gained = merged.minus(&before.map(|b| b.tokens).unwrap_or_default());
        t.tokens.add(&gained);
        self.reprice(idx, old_thread);
    }

    /// The turn a line belongs to: a new one for a prompt (`opens`), else the latest.
    fn claude_turn(&mut self, idx: ThreadIdx, opens: Option<&str>, time: Option<i64>) -> Option<usize> {
        if let Some(id) = opens {
            let t = &self.threads[idx.index()];
            if let Some(last) = t.turns.len().checked_sub(1).filter(|&l| t.turns[l].status == TurnStatus::InProgress) {
                self.end_turn(idx, last, TurnStatus::Completed, time);
            }
            self.turn_or_new(idx, id, time);
        }
        self.threads[idx.index()].turns.len().checked_sub(1)
    }

    fn claude_item(
        &mut self,
        idx: ThreadIdx,
        id: &str,
        kind: ItemKind,
        turn: Option<usize>,
        time: Option<i64>,
        fill: impl FnOnce(&mut Item),
    ) {
        let slot = self.item_or_new(idx, id, kind, turn, time);
        self.edit_item(idx, slot, fill);
    }
}
