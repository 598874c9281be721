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
    server_notifications: names(include_str!("../../assets/methods/server-notifications.txt")),
    server_requests: names(include_str!("../../assets/methods/server-requests.txt")),
    client_requests: names(include_str!("../../assets/methods/client-requests.txt")),
    client_notifications: names(include_str!("../../assets/methods/client-notifications.txt")),
});

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
    fn sides() {
        assert_eq!(sender("item/agentMessage/delta"), Sender::ServerNotification);
        assert_eq!(sender("item/commandExecution/requestApproval"), Sender::ServerRequest);
        assert_eq!(sender("turn/start"), Sender::ClientRequest);
        assert_eq!(sender("initialized"), Sender::ClientNotification);
        assert_eq!(sender("thread/teleported"), Sender::Unknown);
    }
}
