//! How an agent is acted on (design.md, "The audit trail and acting"; `docs/acting.md`): the part
//! of an agent's record that says how one of its running turns is stopped through a tee that carries
//! its traffic, how its server's API lists, aborts and reports its sessions, and where its hooks are
//! configured (its record's `Control`). `act` carries these out and names no agent.

use serde_json::Value;
use std::collections::HashSet;

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
pub struct Turn<'a> {
    pub thread: &'a str,
    pub turn: &'a str,
    pub root: bool,
}

/// Stopping a turn through the tee.
pub struct TeeControl {
    /// How a stop is done, in the agent's own terms, for the question that asks first (the
    /// session itself first, then a sub-agent, where they differ).
    pub how: &'static str,
    /// The request that stops one running turn.
    pub interrupt: fn(Turn<'_>) -> TeeRequest,
    /// Whether the session's answer to it says it failed, and why.
    pub refusal: fn(&Value) -> Option<String>,
}

/// A server's HTTP API as [`ServerApi`]'s functions use it: `GET` or `POST` a path, the answer's
/// JSON (an error for anything but a 2xx answer).
pub trait Http {
    fn get(&self, path: &str) -> Result<Value, String>;
    fn post(&self, path: &str) -> Result<Value, String>;
}

/// One session as a server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedSession {
    pub id: String,
    pub parent: Option<String>,
    /// What the user may call it (its title, a shorter form of it), the first what it is shown as.
    pub names: Vec<String>,
}

/// How a session's last step ended, as its server tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Running,
    /// It ended by an abort: the abort took.
    Aborted,
    /// It finished by itself (with this error's name, if it failed).
    Finished(Option<String>),
}

/// An agent's session server, as swarmtop acts through it.
pub struct ServerApi {
    /// How an act through it is named in the acts log.
    pub via: &'static str,
    /// How a stop is done, in the server's own terms, for the question that asks first.
    pub how: &'static str,
    /// Every session it serves.
    pub sessions: fn(&dyn Http) -> Result<Vec<ServedSession>, String>,
    /// The sessions at work now.
    pub busy: fn(&dyn Http) -> Result<HashSet<String>, String>,
    /// Aborts one session (the server's own abort).
    pub abort: fn(&dyn Http, &str) -> Result<(), String>,
    /// How a session that is no longer busy ended.
    pub ended: fn(&dyn Http, &str) -> Result<Outcome, String>,
}
