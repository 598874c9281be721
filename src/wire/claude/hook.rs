//! Hooks: the commands a user's settings.json runs around the CLI's events (`PreToolUse`,
//! `PostToolUse`, `Stop`, ...), as 2.1.332 reports their runs (checked offline, `-p`):
//! - transcripts: an `attachment` line per run, `{type: hook_success | hook_non_blocking_error |
//!   hook_blocking_error | hook_error_during_execution | hook_cancelled | ..., hookName
//!   (`PostToolUse:Bash`), hookEvent, toolUseID (the call's id for tool hooks), stdout, stderr
//!   ("Failed with non-blocking status code: …"), exitCode, command, durationMs}`;
//! - stream-json (`--include-hook-events`; SessionStart's always): `system` `hook_started` and
//!   `hook_response {hook_id, hook_name, hook_event, output, stdout, stderr, exit_code, outcome:
//!   success | error}`, naming the session only.
//!
//! A run that succeeded is noise (several per tool call). One that failed is the user's own
//! automation breaking (a formatter, a linter, a notifier) while the agent goes on: an item of its
//! own, `Failed`, never the call's or the turn's failure. Exit code 2 is a hook's way to block or
//! object (the call is then declined, or the model told); that is its answer, not a failure.

use std::borrow::Cow;

use serde::Deserialize;

use crate::wire::fact::{Fact, Facts, ItemFact, ItemKind, ItemStatus, TurnRef};
use crate::wire::sanitize;

/// The exit code by which a hook blocks (Claude Code's hook protocol).
const BLOCKING_EXIT: i64 = 2;

/// Transcript attachment types that are a hook run gone wrong.
pub const FAILED_ATTACHMENTS: &[&str] = &["hook_non_blocking_error", "hook_error_during_execution"];

/// Whether a stream-json `hook_response` reports a failure.
pub fn response_failed(outcome: Option<&str>, exit_code: Option<i64>) -> bool {
    outcome == Some("error") && exit_code != Some(BLOCKING_EXIT)
}

/// Whether an attachment's type is a failed hook run.
pub fn attachment_failed(kind: Option<&str>) -> bool {
    kind.is_some_and(|k| FAILED_ATTACHMENTS.contains(&k))
}

/// A stream-json `hook_response` line (read on its own: its members are no other line's).
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    hook_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    hook_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    outcome: Option<Cow<'a, str>>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(borrow, default)]
    stderr: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<Cow<'a, str>>,
}

/// The facts of a stream-json `hook_response` line: an item when the run failed.
pub fn response(raw: &str, time: Option<i64>, facts: &mut Facts<'_>) {
    let Ok(r) = serde_json::from_str::<Response<'_>>(raw) else { return };
    if !response_failed(r.outcome.as_deref(), r.exit_code) {
        return;
    }
    let output = r.stderr.as_deref().filter(|s| !s.is_empty()).or(r.output.as_deref()).unwrap_or_default();
    let run = r.hook_id.as_deref().unwrap_or_default();
    failed(run, r.hook_name.as_deref(), r.exit_code, output, time, facts);
}

/// A failed hook run: `run` tells it apart (the line's uuid, or the stream's `hook_id`).
pub fn failed(
    run: &str,
    name: Option<&str>,
    exit_code: Option<i64>,
    output: &str,
    time: Option<i64>,
    facts: &mut Facts<'_>,
) {
    let name = name.filter(|n| !n.is_empty()).unwrap_or("hook");
    let title = match exit_code {
        Some(code) => format!("hook {name} failed (exit {code})"),
        None => format!("hook {name} failed"),
    };
    facts.push(Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(format!("hook:{run}"))),
        turn: Some(TurnRef::Latest),
        kind: Some(ItemKind::Command),
        status: Some(ItemStatus::Failed),
        title: Some(sanitize(&title)),
        text: Some(sanitize(output.trim_end())),
        exit_code,
        started_ms: time,
        completed_ms: time,
        ..ItemFact::default()
    })));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_an_error_outcome_other_than_a_block() {
        assert!(response_failed(Some("error"), Some(1)));
        assert!(response_failed(Some("error"), None));
        assert!(!response_failed(Some("error"), Some(2)), "exit 2 blocks: the hook's answer");
        assert!(!response_failed(Some("success"), Some(0)));
        assert!(attachment_failed(Some("hook_non_blocking_error")));
        assert!(attachment_failed(Some("hook_error_during_execution")));
        for not in ["hook_success", "hook_blocking_error", "hook_cancelled", "hook_additional_context"] {
            assert!(!attachment_failed(Some(not)), "{not}");
        }
    }

    #[test]
    fn a_failed_run_is_a_failed_command_item_named_by_its_hook() {
        let mut facts = Facts::default();
        failed("u1", Some("PostToolUse:Bash"), Some(1), "post-failed\n", Some(5), &mut facts);
        let all: Vec<&Fact<'_>> = facts.iter().collect();
        let [Fact::Item(item)] = all.as_slice() else { panic!("one item: {facts:?}") };
        assert_eq!(item.id.as_deref(), Some("hook:u1"));
        assert_eq!(item.status, Some(ItemStatus::Failed));
        assert_eq!(item.title.as_ref().map(crate::wire::Clean::as_str), Some("hook PostToolUse:Bash failed (exit 1)"));
        assert_eq!(item.text.as_ref().map(crate::wire::Clean::as_str), Some("post-failed"));
        assert_eq!(item.exit_code, Some(1));
    }
}
