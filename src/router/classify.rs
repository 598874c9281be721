//! Which side sent a line and what a child's line becomes (routing.md §3).

use crate::wire::methods::{self, Method, Sender};
use crate::wire::{Dir, Line};

/// Where a decoded line goes before any thread state is consulted.
pub(super) enum Side<'l> {
    /// Client requests and notifications, every response, headers and socket markers.
    Control,
    /// Server traffic that names no thread (`account/*`, `configWarning`, …).
    Global,
    /// Server traffic of one thread.
    Thread(&'l str),
}

pub(super) fn side<'l>(line: &'l Line<'_>) -> Side<'l> {
    let msg = &line.msg;
    if msg.swarmtop.is_some() {
        return Side::Control;
    }
    let Some(method) = msg.method() else {
        return Side::Control;
    };
    let thread = msg.thread_id().filter(|t| !t.is_empty());
    let from_server = match line.dir {
        Dir::ClientToServer => false,
        Dir::ServerToClient => true,
        // A method in none of the lists counts as the server's: new server methods must surface,
        // not vanish (routing.md §3). With a thread it is that thread's, without one global.
        Dir::In | Dir::Bare => !matches!(
            msg.kind.sender().unwrap_or_else(|| methods::sender(method)),
            Sender::ClientRequest | Sender::ClientNotification
        ),
    };
    match (from_server, thread) {
        (false, _) => Side::Control,
        (true, None) => Side::Global,
        (true, Some(t)) => Side::Thread(t),
    }
}

/// How a line of a child (or orphan) thread is routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChildClass {
    /// Lifecycle noise that drives the lane's state but never reaches the parent's stream.
    Suppressed,
    /// Suppressed, and it closes the lane's current turn.
    Terminal,
    /// Substantive output, re-homed onto the root's session under its owner's id.
    Rehomed,
}

pub(super) fn child_class(line: &Line<'_>) -> ChildClass {
    match line.msg.kind {
        // `willRetry` absent counts as final, as it does for status (routing.md §6).
        Method::Error if line.msg.params.rest().will_retry == Some(true) => ChildClass::Rehomed,
        Method::TurnCompleted | Method::Error => ChildClass::Terminal,
        Method::ThreadStarted
        | Method::ThreadStatusChanged
        | Method::ThreadClosed
        | Method::ThreadTokenUsageUpdated
        | Method::ThreadSettingsUpdated
        | Method::ModelRerouted
        | Method::TurnStarted
        | Method::TurnStart
        | Method::PlanDelta => ChildClass::Suppressed,
        Method::AgentMessageDelta
        | Method::ReasoningSummaryTextDelta
        | Method::ReasoningTextDelta
        | Method::CommandOutputDelta
        | Method::ItemStarted
        | Method::ItemCompleted
        | Method::AccountRateLimitsUpdated => ChildClass::Rehomed,
        Method::Absent | Method::Other => by_name(line.msg.method().unwrap_or("")),
    }
}

/// The rest of routing.md §3's rule, for the methods [`Method`] does not name: lifecycle
/// families are suppressed, everything else is substantive.
fn by_name(method: &str) -> ChildClass {
    if let Some(kind) = method.strip_prefix("rollout/") {
        // A rollout's lifecycle records are a child's suppressed noise; its task's end closes the lane.
        return match kind {
            "event_msg/task_complete" | "event_msg/turn_aborted" => ChildClass::Terminal,
            "session_meta"
            | "turn_context"
            | "world_state"
            | "token_usage_record"
            | "event_msg/token_count"
            | "event_msg/task_started"
            | "event_msg/thread_settings_applied" => ChildClass::Suppressed,
            _ => ChildClass::Rehomed,
        };
    }
    if method.starts_with("thread/") || method.starts_with("turn/") || method.starts_with("model/") {
        ChildClass::Suppressed
    } else {
        ChildClass::Rehomed
    }
}
