//! What the raw server traffic says about the tree: an independent, deliberately simple reading of the
//! wire (wire.md §2–§4), used to check the run before `swarmtop stats` exists and, once it does, to check
//! `stats` against something that is not swarmtop itself.

use serde_json::Value;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    pub reasoning_output: u64,
    pub total: u64,
}

impl Tokens {
    /// Field-wise max: `total` is cumulative, so late or repeated frames never lower it (wire.md §4).
    fn merge_max(&mut self, b: &Value) {
        let f = |k: &str| b.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.input = self.input.max(f("inputTokens"));
        self.cached_input = self.cached_input.max(f("cachedInputTokens"));
        self.output = self.output.max(f("outputTokens"));
        self.reasoning_output = self.reasoning_output.max(f("reasoningOutputTokens"));
        self.total = self.total.max(f("totalTokens"));
    }
}

#[derive(Clone, Debug, Default)]
pub struct ThreadObs {
    pub id: String,
    pub parent: Option<String>,
    /// Resolved model from the spawn's `item/completed`, the `thread/start` response or `thread/read`.
    pub model: Option<String>,
    pub nickname: Option<String>,
    /// `thread/read` said: `source.subAgent.thread_spawn.depth`.
    pub read_depth: Option<u64>,
    /// Statuses of `turn/completed`, in order.
    pub turn_statuses: Vec<String>,
    pub tokens: Tokens,
    pub agent_message_deltas: usize,
    pub reasoning_deltas: usize,
    /// `(command, exitCode)` of completed command executions.
    pub commands: Vec<(String, Option<i64>)>,
    pub command_output_deltas: usize,
    /// `(message, willRetry)` of `error` notifications.
    pub errors: Vec<(String, bool)>,
    /// Text of the last completed `agentMessage` item.
    pub last_message: Option<String>,
}

#[derive(Debug, Default)]
pub struct Observed {
    pub root: Option<String>,
    /// In first-seen order.
    pub threads: Vec<ThreadObs>,
    /// Server lines that are not JSON objects with a `method` or an `id`.
    pub malformed: Vec<String>,
    /// Spawn items that completed `failed` (over the thread or depth limit).
    pub failed_spawns: usize,
}

impl Observed {
    pub fn thread(&self, id: &str) -> Option<&ThreadObs> {
        self.threads.iter().find(|t| t.id == id)
    }

    fn entry(&mut self, id: &str) -> &mut ThreadObs {
        if let Some(i) = self.threads.iter().position(|t| t.id == id) {
            &mut self.threads[i]
        } else {
            self.threads.push(ThreadObs { id: id.to_owned(), ..ThreadObs::default() });
            self.threads.last_mut().expect("just pushed")
        }
    }

    pub fn depth(&self, id: &str) -> usize {
        let mut d = 0;
        let mut cur = self.thread(id).and_then(|t| t.parent.clone());
        while let Some(p) = cur {
            d += 1;
            assert!(d < 64, "cycle in the observed parents");
            cur = self.thread(&p).and_then(|t| t.parent.clone());
        }
        d
    }

    /// Reads the server's lines (without their newlines).
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut o = Observed::default();
        for line in lines {
            let Ok(msg) = serde_json::from_slice::<Value>(line) else {
                o.malformed.push(String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned());
                continue;
            };
            if !msg.is_object() || (msg.get("method").is_none() && msg.get("id").is_none()) {
                o.malformed.push(msg.to_string().chars().take(200).collect());
                continue;
            }
            o.apply(&msg);
        }
        o
    }

    fn apply(&mut self, msg: &Value) {
        if let Some(result) = msg.get("result") {
            if let Some(thread) = result.get("thread") {
                let id = thread.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                // A `thread/start` response also has a top-level `model` (routing.md §8); `thread/read` not.
                if result.get("model").is_some() && result.get("modelProvider").is_some() {
                    self.root = Some(id.clone());
                }
                let t = self.entry(&id);
                if let Some(m) = result.get("model").or_else(|| thread.get("model")).and_then(Value::as_str) {
                    t.model = Some(m.to_owned());
                }
                if let Some(p) = thread.get("parentThreadId").and_then(Value::as_str) {
                    t.parent.get_or_insert_with(|| p.to_owned());
                }
                if let Some(n) = thread.get("agentNickname").and_then(Value::as_str) {
                    t.nickname = Some(n.to_owned());
                }
                t.read_depth = thread.pointer("/source/subAgent/thread_spawn/depth").and_then(Value::as_u64);
            }
            return;
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return;
        };
        let Some(params) = msg.get("params") else {
            return;
        };
        let Some(thread_id) = params.get("threadId").and_then(Value::as_str) else {
            return;
        };
        match method {
            "thread/tokenUsage/updated" => {
                if let Some(total) = params.pointer("/tokenUsage/total") {
                    self.entry(thread_id).tokens.merge_max(total);
                }
            }
            "turn/completed" => {
                let status = params.pointer("/turn/status").and_then(Value::as_str).unwrap_or("?").to_owned();
                self.entry(thread_id).turn_statuses.push(status);
            }
            "item/agentMessage/delta" => self.entry(thread_id).agent_message_deltas += 1,
            "item/reasoning/summaryTextDelta" => self.entry(thread_id).reasoning_deltas += 1,
            "item/commandExecution/outputDelta" => self.entry(thread_id).command_output_deltas += 1,
            "error" => {
                let message = params.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
                let retry = params.get("willRetry").and_then(Value::as_bool).unwrap_or(false);
                self.entry(thread_id).errors.push((message.to_owned(), retry));
            }
            "item/completed" => {
                self.item_completed(thread_id, params.get("item").unwrap_or(&Value::Null));
            }
            _ => {
                self.entry(thread_id);
            }
        }
    }

    fn item_completed(&mut self, thread_id: &str, item: &Value) {
        let s = |k: &str| item.get(k).and_then(Value::as_str);
        match s("type") {
            Some("collabAgentToolCall") if s("tool") == Some("spawnAgent") => {
                if s("status") == Some("failed") {
                    self.failed_spawns += 1;
                    return;
                }
                self.entry(thread_id);
                let model = s("model").filter(|m| !m.is_empty()).map(str::to_owned);
                for child in item.get("receiverThreadIds").and_then(Value::as_array).into_iter().flatten() {
                    let Some(child) = child.as_str() else {
                        continue;
                    };
                    let t = self.entry(child);
                    t.parent.get_or_insert_with(|| thread_id.to_owned());
                    if model.is_some() {
                        t.model.clone_from(&model);
                    }
                }
            }
            Some("commandExecution") => {
                let command = s("command").unwrap_or_default().to_owned();
                let exit = item.get("exitCode").and_then(Value::as_i64);
                self.entry(thread_id).commands.push((command, exit));
            }
            Some("agentMessage") => {
                self.entry(thread_id).last_message = s("text").map(str::to_owned);
            }
            _ => {
                self.entry(thread_id);
            }
        }
    }
}
