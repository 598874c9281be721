//! Codex app-server traffic (wire.md §2–§5): JSON-RPC messages, bare or in recording envelopes.
//! `message` holds what a line decodes to (the fast `scan` path, serde behind it), `lower` what
//! it says in the vocabulary of [`crate::wire::fact`].

mod lower;
pub mod message;
pub mod methods;
mod scan;

pub use lower::lower;
pub(crate) use scan::parse_top;

use super::fact::AgentOp;
use super::{Clean, sanitize};

/// A Codex call that manages agents, by its name in either of Codex's spellings (the
/// app-server's `spawnAgent`, the model's `spawn_agent` in rollouts and `codex exec --json`): what
/// it does, if it is one, and its name as cards show it: the app-server's, where it has the call
/// (`wait_agent` is its `wait`), else the model's in camel case.
pub(crate) fn agent_call(tool: &str) -> (Option<AgentOp>, Clean) {
    let name = camel(tool);
    let (op, shown) = match name.as_str() {
        "spawnAgent" => (AgentOp::Spawn, "spawnAgent"),
        "sendInput" | "sendMessage" => (AgentOp::Send, "sendInput"),
        "followupTask" => (AgentOp::Send, "followupTask"),
        "wait" | "waitAgent" => (AgentOp::Wait, "wait"),
        "closeAgent" => (AgentOp::Close, "closeAgent"),
        "resumeAgent" => (AgentOp::Resume, "resumeAgent"),
        "interruptAgent" => (AgentOp::Interrupt, "interruptAgent"),
        "listAgents" => (AgentOp::List, "listAgents"),
        _ => return (None, sanitize(&name)),
    };
    (Some(op), sanitize(shown))
}

/// A name in camel case (`spawn_agent` → `spawnAgent`); one that is already is left as it is.
fn camel(tool: &str) -> String {
    let mut out = String::with_capacity(tool.len());
    let mut upper = false;
    for c in tool.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
