//! Building Responses API stream events, and reading back what an agent already did from its request.
//!
//! Event shapes follow what codex 0.171.0 consumes (checked against a real run): output items are announced
//! with `response.output_item.added`, streamed with `*.delta` events and closed with
//! `response.output_item.done`; function calls only need the `done` event. Sub-agent tools must carry
//! `"namespace": "multi_agent_v1"` or codex rejects the call (wire.md §7); the shell tool has none.

use serde_json::{Value, json};

use super::mock_model::message_text;

/// Namespace of the legacy multi-agent tools (`spawn_agent`, `wait_agent`, ...).
pub const MULTI_AGENT_NS: &str = "multi_agent_v1";

/// Collects the output items of one model response.
pub struct ResponseBuilder {
    agent: String,
    step: usize,
    events: Vec<Value>,
    calls: usize,
    /// Characters of visible text and of reasoning, to derive plausible output token counts.
    pub text_chars: usize,
    pub reasoning_chars: usize,
}

impl ResponseBuilder {
    pub fn new(agent: &str, step: usize) -> Self {
        Self { agent: agent.to_owned(), step, events: Vec::new(), calls: 0, text_chars: 0, reasoning_chars: 0 }
    }

    fn next_index(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("response.output_item.done"))
            .count()
    }

    /// A reasoning item whose summary parts stream in small deltas.
    pub fn reasoning(&mut self, parts: &[&str]) -> &mut Self {
        let oi = self.next_index();
        let id = format!("rs_{}_{}", self.agent, self.step);
        self.events.push(json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"type": "reasoning", "id": id, "summary": []}}));
        for (k, text) in parts.iter().enumerate() {
            self.reasoning_chars += text.chars().count();
            self.events.push(json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                "output_index": oi, "summary_index": k, "part": {"type": "summary_text", "text": ""}}));
            for delta in chunks(text, self.seed(k as u64 + 100)) {
                self.events.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                    "output_index": oi, "summary_index": k, "delta": delta}));
            }
            self.events.push(json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                "output_index": oi, "summary_index": k, "text": text}));
        }
        let summary: Vec<Value> = parts.iter().map(|t| json!({"type": "summary_text", "text": t})).collect();
        self.events.push(json!({"type": "response.output_item.done", "output_index": oi,
            "item": {"type": "reasoning", "id": id, "summary": summary}}));
        self
    }

    /// An assistant message streamed in many small deltas (3 to 9 characters, like a real model's tokens).
    pub fn message(&mut self, text: &str) -> &mut Self {
        let oi = self.next_index();
        let id = format!("msg_{}_{}", self.agent, self.step);
        self.text_chars += text.chars().count();
        self.events.push(json!({"type": "response.output_item.added", "output_index": oi,
            "item": {"type": "message", "role": "assistant", "id": id, "content": []}}));
        for delta in chunks(text, self.seed(0)) {
            self.events.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": oi,
                "content_index": 0, "delta": delta}));
        }
        self.events.push(json!({"type": "response.output_item.done", "output_index": oi,
            "item": {"type": "message", "role": "assistant", "id": id,
                     "content": [{"type": "output_text", "text": text}]}}));
        self
    }

    /// A function call. Its id (`call_<agent>_<step>_<k>`) is how later requests tell which step the agent
    /// has reached (see [`History`]).
    pub fn call(&mut self, name: &str, namespace: Option<&str>, args: &Value) -> &mut Self {
        let oi = self.next_index();
        let call_id = format!("call_{}_{}_{}", self.agent, self.step, self.calls);
        self.calls += 1;
        let mut item = json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
            "name": name, "arguments": args.to_string()});
        if let Some(ns) = namespace {
            item["namespace"] = json!(ns);
        }
        self.events.push(json!({"type": "response.output_item.done", "output_index": oi, "item": item}));
        self
    }

    pub fn spawn(&mut self, args: &Value) -> &mut Self {
        self.call("spawn_agent", Some(MULTI_AGENT_NS), args)
    }

    pub fn wait(&mut self, targets: &[String]) -> &mut Self {
        self.call("wait_agent", Some(MULTI_AGENT_NS), &json!({"targets": targets, "timeout_ms": 60_000}))
    }

    /// Codex's unified exec tool. `login: false` keeps the shell from sourcing profile files that would
    /// reset `PATH` (the workspace's stand-in tools are found through it).
    pub fn shell(&mut self, cmd: &str) -> &mut Self {
        self.call("exec_command", None, &json!({"cmd": cmd, "login": false, "yield_time_ms": 30_000}))
    }

    pub fn into_events(self) -> Vec<Value> {
        self.events
    }

    fn seed(&self, salt: u64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.agent.bytes().chain((self.step as u64).to_le_bytes()).chain(salt.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
}

/// Splits text into 3–9 character pieces (on char boundaries), deterministically from `seed`, so a rerun
/// streams the same deltas.
fn chunks(text: &str, mut seed: u64) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = 3 + (seed % 7) as usize;
        let end = (i + n).min(chars.len());
        out.push(chars[i..end].iter().collect());
        i = end;
    }
    out
}

/// What an agent already did, read from the history codex sends with every request. This is what makes
/// the mock stateless: the request itself says which step comes next.
#[derive(Debug, Default)]
pub struct History {
    /// Index of the response to produce (number of own earlier responses that issued calls).
    pub step: usize,
    /// Children spawned by this agent, as thread ids, in call order.
    pub spawned: Vec<String>,
    /// Children known to have reached a final state (`completed`, `errored`, ...), with that state.
    pub finished: Vec<(String, String)>,
    pub waits: usize,
}

/// Final states in `wait_agent` results and `<subagent_notification>` messages of codex 0.171.0.
const FINAL_STATES: &[&str] = &["completed", "errored", "shutdown", "not_found", "notFound", "interrupted"];

impl History {
    pub fn read(agent: &str, body: &Value) -> Self {
        let mut h = History::default();
        let input = body.get("input").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let prefix = format!("call_{agent}_");
        let output_of = |call_id: &str| -> Option<Value> {
            input
                .iter()
                .find(|i| {
                    i.get("type").and_then(Value::as_str) == Some("function_call_output")
                        && i.get("call_id").and_then(Value::as_str) == Some(call_id)
                })
                .and_then(|o| match o.get("output") {
                    Some(Value::String(s)) => serde_json::from_str(s).ok(),
                    Some(Value::Array(parts)) => {
                        let text: String = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
                        serde_json::from_str(&text).ok()
                    }
                    _ => None,
                })
        };
        for item in input {
            match item.get("type").and_then(Value::as_str) {
                Some("function_call") => {
                    let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or_default();
                    let Some(rest) = call_id.strip_prefix(&prefix) else {
                        continue;
                    };
                    let step: usize = rest.split('_').next().and_then(|s| s.parse().ok()).unwrap_or(0);
                    h.step = h.step.max(step + 1);
                    let output = output_of(call_id);
                    match item.get("name").and_then(Value::as_str) {
                        Some("spawn_agent") => {
                            if let Some(id) = output.as_ref().and_then(|o| o.get("agent_id")).and_then(Value::as_str) {
                                h.spawned.push(id.to_owned());
                            }
                        }
                        Some("wait_agent") => {
                            h.waits += 1;
                            if let Some(Value::Object(status)) = output.as_ref().and_then(|o| o.get("status")) {
                                for (id, state) in status {
                                    h.mark(id, state);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Some("message") if item.get("role").and_then(Value::as_str) == Some("user") => {
                    // Codex also tells a parent about a finished child with a user message.
                    let text = message_text(item);
                    if let Some(rest) = text.split("<subagent_notification>").nth(1) {
                        let body = rest.split("</subagent_notification>").next().unwrap_or_default();
                        if let Ok(note) = serde_json::from_str::<Value>(body.trim()) {
                            if let (Some(id), Some(state)) =
                                (note.get("agent_path").and_then(Value::as_str), note.get("status"))
                            {
                                h.mark(id, state);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        h
    }

    fn mark(&mut self, id: &str, state: &Value) {
        let final_state = match state {
            Value::Object(map) => FINAL_STATES.iter().find(|s| map.contains_key(**s)).copied(),
            Value::String(s) => FINAL_STATES.iter().find(|f| **f == s.as_str()).copied(),
            _ => None,
        };
        if let Some(state) = final_state {
            if !self.finished.iter().any(|(f, _)| f == id) {
                self.finished.push((id.to_owned(), state.to_owned()));
            }
        }
    }

    /// Spawned children not known to be final yet.
    pub fn pending(&self) -> Vec<String> {
        self.spawned.iter().filter(|id| !self.finished.iter().any(|(f, _)| f == *id)).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_text_in_small_pieces() {
        let text = "Refactoring — über 9000 characters? No, just these.";
        let parts = chunks(text, 42);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| (1..=9).contains(&p.chars().count())));
    }

    #[test]
    fn history_reads_the_step_the_children_and_who_finished() {
        let body = serde_json::json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[task:lead] go"}]},
            {"type": "function_call", "name": "spawn_agent", "call_id": "call_lead_0_0", "arguments": "{}"},
            {"type": "function_call", "name": "spawn_agent", "call_id": "call_lead_0_1", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_lead_0_0", "output": "{\"agent_id\":\"A\",\"nickname\":\"Kant\"}"},
            {"type": "function_call_output", "call_id": "call_lead_0_1", "output": "{\"agent_id\":\"B\",\"nickname\":\"Hume\"}"},
            {"type": "function_call", "name": "wait_agent", "call_id": "call_lead_1_0", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_lead_1_0",
             "output": "{\"status\":{\"A\":{\"completed\":\"done\"}},\"timed_out\":false}"},
            // A call of another agent whose tag shares a prefix must not count.
            {"type": "function_call", "name": "wait_agent", "call_id": "call_leader_7_0", "arguments": "{}"},
        ]});
        let h = History::read("lead", &body);
        assert_eq!(h.step, 2);
        assert_eq!(h.spawned, ["A", "B"]);
        assert_eq!(h.pending(), ["B"]);
        let note = serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text",
            "text": "<subagent_notification>\n{\"agent_path\":\"B\",\"status\":{\"errored\":\"boom\"}}\n</subagent_notification>"}]});
        let mut body = body;
        body["input"].as_array_mut().expect("array").push(note);
        let h = History::read("lead", &body);
        assert!(h.pending().is_empty());
        assert_eq!(h.finished[1], ("B".to_owned(), "errored".to_owned()));
    }
}
