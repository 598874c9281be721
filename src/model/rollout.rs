//! What a Codex rollout line does to the model: `response_item`s are the transcript (messages,
//! reasoning, function calls and their outputs), `event_msg` `token_count` the usage (cumulative,
//! merged with `max` as for the app-server), `task_started` / `task_complete` the turns.

use serde::Deserialize;

use super::Model;
use super::item::{Item, ItemKind, ItemStatus};
use super::thread::{ContextFill, Status, TurnStatus};
use crate::router::ThreadIdx;
use crate::wire::rollout::RolloutLine;
use crate::wire::{Breakdown, Str, sanitize};

#[derive(Deserialize, Default)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    summary: Option<Vec<Part<'a>>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    output: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    turn_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(borrow, default)]
    thread_settings: Option<Settings<'a>>,
    #[serde(default)]
    info: Option<Info>,
    #[serde(borrow, default)]
    agent_nickname: Option<Str<'a>>,
    #[serde(borrow, default)]
    agent_role: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct Settings<'a> {
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Info {
    #[serde(default)]
    total_token_usage: Option<Usage>,
    #[serde(default)]
    last_token_usage: Option<Usage>,
    #[serde(default)]
    model_context_window: Option<u64>,
}

/// The app-server's breakdown in snake_case (the field names are the format's).
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default, Clone, Copy)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    cache_write_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    reasoning_output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl Usage {
    fn breakdown(self) -> Breakdown {
        Breakdown {
            total_tokens: self.total_tokens,
            input_tokens: self.input_tokens,
            cached_input_tokens: self.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens,
            output_tokens: self.output_tokens,
            reasoning_output_tokens: self.reasoning_output_tokens,
        }
    }
}

fn joined(parts: Option<&Vec<Part<'_>>>) -> String {
    parts.map(|p| p.iter().filter_map(|p| p.text.as_deref()).collect::<Vec<_>>().join("\n\n")).unwrap_or_default()
}

/// A function call's arguments, for its title.
#[derive(Deserialize, Default)]
struct Arguments<'a> {
    #[serde(borrow, default)]
    cmd: Option<Str<'a>>,
    #[serde(default)]
    command: Option<serde_json::Value>,
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
    #[serde(borrow, default)]
    target: Option<Str<'a>>,
}

impl Model {
    pub(super) fn apply_rollout(&mut self, idx: ThreadIdx, line: &RolloutLine<'_>, time: Option<i64>) {
        let Some(p) = line.payload::<Payload<'_>>() else { return };
        let kind = p.kind.as_deref().unwrap_or_default();
        match (&*line.kind, kind) {
            ("session_meta", _) => {
                let t = &mut self.threads[idx.index()];
                if t.nickname.is_none() {
                    t.nickname = p.agent_nickname.as_deref().filter(|n| !n.is_empty()).map(sanitize);
                }
                if t.agent_role.is_none() {
                    t.agent_role = p.agent_role.as_deref().filter(|n| !n.is_empty()).map(sanitize);
                }
            }
            ("turn_context", _) => {
                if let Some(model) = p.model.as_deref() {
                    self.set_model(idx, model);
                }
            }
            ("event_msg", "thread_settings_applied") => {
                if let Some(model) = p.thread_settings.as_ref().and_then(|s| s.model.as_deref()) {
                    self.set_model(idx, model);
                }
            }
            ("event_msg", "task_started") => {
                self.turn_or_new(idx, p.turn_id.as_deref().unwrap_or("turn"), time);
                self.threads[idx.index()].status = Status::Running;
            }
            ("event_msg", "task_complete" | "turn_aborted") => {
                let aborted = kind == "turn_aborted";
                let t = &self.threads[idx.index()];
                let turn =
                    p.turn_id.as_deref().and_then(|id| t.turn_index.get(id).copied()).or(t.turns.len().checked_sub(1));
                if let Some(turn) = turn {
                    self.end_turn(
                        idx,
                        turn,
                        if aborted { TurnStatus::Interrupted } else { TurnStatus::Completed },
                        time,
                    );
                }
                self.threads[idx.index()].status = if aborted { Status::Interrupted } else { Status::Idle };
            }
            ("event_msg", "token_count") => {
                let Some(info) = p.info else { return };
                let t = &mut self.threads[idx.index()];
                let old = t.tokens;
                if let Some(total) = info.total_token_usage {
                    t.tokens.merge_max(&total.breakdown());
                }
                if let (Some(last), Some(window)) =
                    (info.last_token_usage.and_then(|l| l.total_tokens), info.model_context_window)
                {
                    t.context = Some(ContextFill { used: last, window });
                }
                if t.tokens != old {
                    self.reprice(idx, old);
                }
            }
            ("response_item", "message") => {
                // The instructions Codex sends as developer messages are not the conversation.
                let item_kind = match p.role.as_deref() {
                    Some("assistant") => ItemKind::AgentMessage,
                    Some("user") => ItemKind::UserMessage,
                    _ => return,
                };
                let text = joined(p.content.as_ref());
                self.rollout_item(idx, p.id.as_deref(), item_kind, time, |item| {
                    item.text = sanitize(&text);
                    item.status = ItemStatus::Completed;
                });
            }
            ("response_item", "reasoning") => {
                let text = joined(p.summary.as_ref());
                self.rollout_item(idx, p.id.as_deref(), ItemKind::Reasoning, time, |item| {
                    item.text = sanitize(&text);
                    item.status = ItemStatus::Completed;
                });
            }
            ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
                let name = p.name.as_deref().unwrap_or("tool");
                let args: Arguments<'_> =
                    p.arguments.as_deref().and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
                let command = args.cmd.as_deref().map(str::to_owned).or_else(|| match &args.command {
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(serde_json::Value::Array(a)) => {
                        Some(a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(" "))
                    }
                    _ => None,
                });
                let (item_kind, tool, title) = match name {
                    "spawn_agent" => {
                        (ItemKind::Collab, Some("spawnAgent"), args.message.as_deref().unwrap_or_default().to_owned())
                    }
                    "wait_agent" | "wait" => (ItemKind::Collab, Some("wait"), String::new()),
                    "send_input" | "send_message" => {
                        (ItemKind::Collab, Some("sendInput"), args.message.as_deref().unwrap_or_default().to_owned())
                    }
                    "close_agent" => {
                        (ItemKind::Collab, Some("closeAgent"), args.target.as_deref().unwrap_or_default().to_owned())
                    }
                    _ if command.is_some() => (ItemKind::Command, None, command.unwrap_or_default()),
                    _ => (ItemKind::DynamicTool, None, name.to_owned()),
                };
                self.rollout_item(idx, p.call_id.as_deref().or(p.id.as_deref()), item_kind, time, |item| {
                    item.title = sanitize(&title);
                    item.tool = tool.map(Into::into);
                    item.status = ItemStatus::InProgress;
                });
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let Some(call) = p.call_id.as_deref() else { return };
                let output = p
                    .output
                    .map(|raw| serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned()));
                if let Some(&slot) = self.threads[idx.index()].item_index.get(call) {
                    self.edit_item(idx, slot, |item| {
                        if let (Some(out), false) = (output, item.kind == ItemKind::Collab) {
                            item.text = sanitize(&out);
                        }
                        item.status = ItemStatus::Completed;
                        item.completed_ms = time;
                    });
                }
            }
            _ => {}
        }
    }

    fn rollout_item(
        &mut self,
        idx: ThreadIdx,
        id: Option<&str>,
        kind: ItemKind,
        time: Option<i64>,
        fill: impl FnOnce(&mut Item),
    ) {
        let t = &self.threads[idx.index()];
        // Items without an id of their own are told apart by the line that brought them.
        let id = id.map_or_else(|| format!("line-{}", t.lines), str::to_owned);
        let turn = t.turns.len().checked_sub(1);
        let slot = self.item_or_new(idx, &id, kind, turn, time);
        self.edit_item(idx, slot, fill);
    }
}
