//! Which side sends a method (methods.md), kept as data in `assets/methods/`. Newer servers add
//! methods, so an unknown name is never an error: routing.md §3 decides by rule.

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

/// Who sends a method, by the 0.171.0 schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    ServerNotification,
    ServerRequest,
    ClientRequest,
    ClientNotification,
    Unknown,
}

struct Lists {
    server_notifications: FxHashSet<&'static str>,
    server_requests: FxHashSet<&'static str>,
    client_requests: FxHashSet<&'static str>,
    client_notifications: FxHashSet<&'static str>,
}

fn names(text: &'static str) -> FxHashSet<&'static str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| Lists {
    server_notifications: names(include_str!("../../../assets/methods/server-notifications.txt")),
    server_requests: names(include_str!("../../../assets/methods/server-requests.txt")),
    client_requests: names(include_str!("../../../assets/methods/client-requests.txt")),
    client_notifications: names(include_str!("../../../assets/methods/client-notifications.txt")),
});

/// The methods the router and the model branch on, named once when a line is decoded: later
/// stages compare a byte instead of a string, and need no lookup in the lists for these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// No `method` member (responses, markers).
    #[default]
    Absent,
    AgentMessageDelta,
    ReasoningSummaryTextDelta,
    ReasoningTextDelta,
    CommandOutputDelta,
    PlanDelta,
    ItemStarted,
    ItemCompleted,
    ThreadStarted,
    ThreadStatusChanged,
    ThreadClosed,
    ThreadTokenUsageUpdated,
    ThreadSettingsUpdated,
    ModelRerouted,
    TurnStarted,
    TurnCompleted,
    TurnStart,
    Error,
    AccountRateLimitsUpdated,
    /// Any other name: whoever cares reads the string.
    Other,
}

impl Method {
    /// Stream deltas first: they are most lines.
    pub fn of(name: &str) -> Self {
        match name {
            "item/agentMessage/delta" => Self::AgentMessageDelta,
            "item/reasoning/summaryTextDelta" => Self::ReasoningSummaryTextDelta,
            "item/reasoning/textDelta" => Self::ReasoningTextDelta,
            "item/commandExecution/outputDelta" => Self::CommandOutputDelta,
            "item/plan/delta" => Self::PlanDelta,
            "item/started" => Self::ItemStarted,
            "item/completed" => Self::ItemCompleted,
            "thread/started" => Self::ThreadStarted,
            "thread/status/changed" => Self::ThreadStatusChanged,
            "thread/closed" => Self::ThreadClosed,
            "thread/tokenUsage/updated" => Self::ThreadTokenUsageUpdated,
            "thread/settings/updated" => Self::ThreadSettingsUpdated,
            "model/rerouted" => Self::ModelRerouted,
            "turn/started" => Self::TurnStarted,
            "turn/completed" => Self::TurnCompleted,
            "turn/start" => Self::TurnStart,
            "error" => Self::Error,
            "account/rateLimits/updated" => Self::AccountRateLimitsUpdated,
            _ => Self::Other,
        }
    }

    /// Who sends it, as [`sender`] would say; `None` when only the lists know.
    pub fn sender(self) -> Option<Sender> {
        match self {
            Self::Absent | Self::Other => None,
            Self::TurnStart => Some(Sender::ClientRequest),
            _ => Some(Sender::ServerNotification),
        }
    }
}

pub fn sender(method: &str) -> Sender {
    let lists = &*LISTS;
    if lists.server_notifications.contains(method) {
        Sender::ServerNotification
    } else if lists.server_requests.contains(method) {
        Sender::ServerRequest
    } else if lists.client_requests.contains(method) {
        Sender::ClientRequest
    } else if lists.client_notifications.contains(method) {
        Sender::ClientNotification
    } else {
        Sender::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_have_the_schema_counts() {
        let l = &*LISTS;
        assert_eq!(l.server_notifications.len(), 87);
        assert_eq!(l.server_requests.len(), 10);
        assert_eq!(l.client_requests.len(), 110);
        assert_eq!(l.client_notifications.len(), 1);
    }

    #[test]
    fn named_methods_agree_with_the_lists() {
        let named = [
            "item/agentMessage/delta",
            "item/reasoning/summaryTextDelta",
            "item/reasoning/textDelta",
            "item/commandExecution/outputDelta",
            "item/plan/delta",
            "item/started",
            "item/completed",
            "thread/started",
            "thread/status/changed",
            "thread/closed",
            "thread/tokenUsage/updated",
            "thread/settings/updated",
            "model/rerouted",
            "turn/started",
            "turn/completed",
            "turn/start",
            "error",
            "account/rateLimits/updated",
        ];
        for name in named {
            let m = Method::of(name);
            assert!(!matches!(m, Method::Other | Method::Absent), "{name}");
            assert_eq!(m.sender(), Some(sender(name)), "{name}");
        }
        assert_eq!(Method::of("thread/teleported"), Method::Other);
        assert_eq!(Method::of("item/mcpToolCall/progress").sender(), None);
    }

    #[test]
    fn sides() {
        assert_eq!(sender("item/agentMessage/delta"), Sender::ServerNotification);
        assert_eq!(sender("item/commandExecution/requestApproval"), Sender::ServerRequest);
        assert_eq!(sender("turn/start"), Sender::ClientRequest);
        assert_eq!(sender("initialized"), Sender::ClientNotification);
        assert_eq!(sender("thread/teleported"), Sender::Unknown);
    }
}
