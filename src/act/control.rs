//! How an agent's work is stopped, one record per agent and way (what a registry of agents holds as
//! "how a session is controlled"). The tee writes what a record says into the session it carries;
//! it knows no agent itself.

use serde_json::{Value, json};

/// A request for the tee to write into the session: the message without its id, where the tee puts
/// its own id, and where the session's answer names that id again.
#[derive(Debug, Clone, PartialEq)]
pub struct TeeRequest {
    pub send: Value,
    pub id_at: &'static [&'static str],
    pub answer_at: &'static [&'static str],
}

/// One agent's ways of being stopped.
pub struct AgentControl {
    /// The `input.format` its traffic has through a tee (`Pipeline::format`).
    pub format: &'static str,
    /// The request that stops one running turn of a thread, through the tee.
    pub interrupt: fn(thread: &str, turn: &str) -> TeeRequest,
}

/// Codex app-server 0.171.0: `turn/interrupt {threadId, turnId}` (both required), answered by a
/// JSON-RPC response with the request's id; the turn then ends with `turn/completed`
/// `status: interrupted` (`docs/acting.md` §2).
fn codex_interrupt(thread: &str, turn: &str) -> TeeRequest {
    TeeRequest {
        send: json!({"method": "turn/interrupt", "params": {"threadId": thread, "turnId": turn}}),
        id_at: &["id"],
        answer_at: &["id"],
    }
}

pub const AGENTS: &[AgentControl] = &[AgentControl { format: "codex-app-server", interrupt: codex_interrupt }];

/// The record for a session whose traffic is in `format`.
pub fn for_format(format: &str) -> Option<&'static AgentControl> {
    AGENTS.iter().find(|a| a.format == format)
}

/// Whether an answer to a request of ours says it failed (a JSON-RPC `error`, or a control
/// response whose subtype is `error`), and why.
pub fn refusal(answer: &Value) -> Option<String> {
    if let Some(e) = answer.get("error") {
        let msg = e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned);
        return Some(msg);
    }
    let r = answer.get("response")?;
    (r.get("subtype").and_then(Value::as_str) == Some("error"))
        .then(|| r.get("error").and_then(Value::as_str).unwrap_or("refused").to_owned())
}
