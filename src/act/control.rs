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

/// The running turn to stop: whose, which, and whether that agent is the session itself.
#[derive(Debug, Clone, Copy)]
pub struct Running<'a> {
    pub thread: &'a str,
    pub turn: &'a str,
    pub root: bool,
}

/// One agent's ways of being stopped.
pub struct AgentControl {
    /// The `input.format` its traffic has through a tee (`Pipeline::format`).
    pub format: &'static str,
    /// The request that stops one running turn, through the tee.
    pub interrupt: fn(Running<'_>) -> TeeRequest,
}

/// Codex app-server 0.171.0: `turn/interrupt {threadId, turnId}` (both required), answered by a
/// JSON-RPC response with the request's id; the turn then ends with `turn/completed`
/// `status: interrupted` (`docs/acting.md` §2).
fn codex_interrupt(r: Running<'_>) -> TeeRequest {
    TeeRequest {
        send: json!({"method": "turn/interrupt", "params": {"threadId": r.thread, "turnId": r.turn}}),
        id_at: &["id"],
        answer_at: &["id"],
    }
}

/// Claude Code 2.1.332 hosted in stream-json input mode: a `control_request` on its stdin, answered
/// by a `control_response` naming its `request_id`. A sub-agent is stopped alone with `stop_task`
/// (its agent id is the task's id; the parent goes on), the session's turn with `interrupt`
/// (`docs/acting.md` §4).
fn claude_stream_interrupt(r: Running<'_>) -> TeeRequest {
    let request =
        if r.root { json!({"subtype": "interrupt"}) } else { json!({"subtype": "stop_task", "task_id": r.thread}) };
    TeeRequest {
        send: json!({"type": "control_request", "request": request}),
        id_at: &["request_id"],
        answer_at: &["response", "request_id"],
    }
}

pub const AGENTS: &[AgentControl] = &[
    AgentControl { format: "codex-app-server", interrupt: codex_interrupt },
    AgentControl { format: "claude-stream-json", interrupt: claude_stream_interrupt },
];

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
