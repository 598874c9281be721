//! What the interactive CLI (2.1.332) writes for a slash command it runs itself (`/clear`, `/compact`,
//! `/model`, `/cost`, ...), none of which is a prompt to the model:
//!
//! - a `user` line (`rowSource: local`) whose text is `<command-name>/compact</command-name>
//!   <command-message>compact</command-message> <command-args></command-args>`, after an `isMeta`
//!   caveat line;
//! - its output, as a `user` line `<local-command-stdout>…</local-command-stdout>` (or `-stderr`), or
//!   as a `system` `local_command` line (`/clear`, the first lines of the new session's file);
//! - `/compact` also writes the summary as a `user` line with `isCompactSummary: true` ("This session
//!   is being continued from a previous conversation…").
//!
//! Read as prompts, each opened a turn and left the session running for good: no answer follows.
//!
//! Also the CLI's note to the session that a background agent stopped (`origin.kind:
//! task-notification`, a turn of the session's own): `<task-notification><task-id>…<status>completed
//! </status><summary>Agent "X" finished</summary><note>…</note><result>…</result><usage>…</usage>`,
//! shown by its summary and result rather than as markup.

use std::borrow::Cow;

use crate::wire::fact::{
    Fact, Facts, ItemFact, ItemKind, ItemStatus, StatusChange, StatusFact, Target, TurnEnded, TurnOutcome, TurnRef,
    TurnStarted,
};
use crate::wire::sanitize;

/// The command a command line names, as the user typed it (`/model haiku`).
pub fn command(text: &str) -> Option<String> {
    let text = text.trim_start();
    if !text.starts_with("<command-name>") {
        return None;
    }
    let name = between(text, "<command-name>", "</command-name>")?;
    let args = between(text, "<command-args>", "</command-args>").unwrap_or_default().trim();
    let name = name.trim();
    let slash = if name.starts_with('/') { "" } else { "/" };
    Some(if args.is_empty() { format!("{slash}{name}") } else { format!("{slash}{name} {args}") })
}

/// A local command's output, without its tags.
pub fn output(text: &str) -> Option<&str> {
    let text = text.trim_start();
    ["stdout", "stderr"]
        .iter()
        .find_map(|s| between(text, &format!("<local-command-{s}>"), &format!("</local-command-{s}>")))
        .filter(|_| text.starts_with("<local-command-"))
}

/// A background agent's notification, as the lane shows it: its summary, then its result.
pub fn notification(text: &str) -> Option<String> {
    let text = text.trim_start();
    if !text.starts_with("<task-notification>") {
        return None;
    }
    let summary = between(text, "<summary>", "</summary>").map(str::trim).filter(|s| !s.is_empty());
    let result = between(text, "<result>", "</result>").map(str::trim).filter(|s| !s.is_empty());
    match (summary, result) {
        (Some(s), Some(r)) => Some(format!("{s}\n{r}")),
        (Some(one), None) | (None, Some(one)) => Some(one.to_owned()),
        (None, None) => None,
    }
}

fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(&text[start..start + len])
}

/// A command the user ran: a turn of its own, shown as they typed it; the session's status is left
/// as it is (the command's output, or the model's answer to a prompt command, says more).
pub fn ran(uuid: &str, command: &str, time: Option<i64>, facts: &mut Facts<'_>) {
    facts.push(Fact::TurnStarted(TurnStarted {
        turn: Some(Cow::Owned(uuid.to_owned())),
        own_root_turn: false,
        ends_previous: true,
    }));
    facts.push(item(uuid, ItemKind::UserMessage, command, time));
}

/// The command's output: it is done, and the CLI waits for the user again.
pub fn answered(uuid: &str, output: Option<&str>, time: Option<i64>, facts: &mut Facts<'_>) {
    if let Some(text) = output.map(str::trim).filter(|t| !t.is_empty()) {
        facts.push(item(uuid, ItemKind::AgentMessage, text, time));
    }
    facts.push(Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Latest,
        outcome: Some(TurnOutcome::Completed),
        error: None,
    }));
    facts.push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Idle }));
}

/// The summary `/compact` (or an automatic compaction) continues the session from.
pub fn summary(uuid: &str, text: &str, time: Option<i64>, facts: &mut Facts<'_>) {
    let Fact::Item(mut fact) = item(uuid, ItemKind::Compaction, text, time) else { return };
    fact.title = Some(sanitize("context compacted"));
    facts.push(Fact::Item(fact));
}

fn item<'l>(uuid: &str, kind: ItemKind, text: &str, time: Option<i64>) -> Fact<'l> {
    Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(uuid.to_owned())),
        turn: Some(TurnRef::Latest),
        kind: Some(kind),
        status: Some(ItemStatus::Completed),
        text: Some(sanitize(text)),
        started_ms: time,
        ..ItemFact::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_names_the_command_as_typed() {
        let clear = "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>";
        assert_eq!(command(clear).as_deref(), Some("/clear"));
        let model = "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>haiku</command-args>";
        assert_eq!(command(model).as_deref(), Some("/model haiku"));
        assert_eq!(command("Please run <command-name>/x</command-name> for me"), None, "a prompt quoting one");
        assert_eq!(command("[[agent:root]] Look at this project"), None);
    }

    #[test]
    fn a_notification_is_shown_by_its_summary_and_result() {
        let note = "<task-notification>\n<task-id>a5d8973a88e920f24</task-id>\n<tool-use-id>toolu_B</tool-use-id>\n<output-file>/tmp/x.output</output-file>\n<status>completed</status>\n<summary>Agent \"Background listing (B)\" finished</summary>\n<note>A task-notification fires each time this agent stops.</note>\n<result>B: README.md and main.py are there.</result>\n<usage><subagent_tokens>6448</subagent_tokens></usage>\n</task-notification>";
        assert_eq!(
            notification(note).as_deref(),
            Some("Agent \"Background listing (B)\" finished\nB: README.md and main.py are there.")
        );
        assert_eq!(notification("<task-notification><task-id>a</task-id></task-notification>"), None);
        assert_eq!(notification("What is a <task-notification>?"), None);
    }

    #[test]
    fn an_output_line_is_the_command_s_output() {
        let out =
            "<local-command-stdout>\u{1b}[2mCompacted (ctrl+o to see full summary)\u{1b}[22m</local-command-stdout>";
        assert_eq!(output(out), Some("\u{1b}[2mCompacted (ctrl+o to see full summary)\u{1b}[22m"));
        assert_eq!(output("<local-command-stderr>no such model</local-command-stderr>"), Some("no such model"));
        assert_eq!(output("<local-command-stdout></local-command-stdout>"), Some(""));
        assert_eq!(output("tell me about <local-command-stdout>x</local-command-stdout>"), None);
    }

    #[test]
    fn the_output_ends_the_command_s_turn_and_leaves_the_session_idle() {
        let mut facts = Facts::default();
        answered("u", Some(""), None, &mut facts);
        let f: Vec<&Fact<'_>> = facts.iter().collect();
        assert_eq!(f.len(), 2, "no empty item");
        assert!(matches!(f[0], Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Completed)));
        assert!(matches!(f[1], Fact::Status(s) if s.change == StatusChange::Idle));
    }
}
