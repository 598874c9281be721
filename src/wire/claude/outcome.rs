//! How a Claude Code transcript says an agent's work ended otherwise than with an answer, and what the
//! CLI says it cost (wire.md §6, seen with 2.1.332; the captures' NOTES have the lines):
//!
//! - A request that failed for good (retries exhausted) leaves an assistant line of model
//!   `<synthetic>` with `isApiErrorMessage: true` and `apiErrorStatus`: the agent failed.
//! - SIGINT / Esc: the agent's file gets a user line `[Request interrupted by user]` (`… for tool
//!   use]` when a tool ran), an answer cut mid-stream may be marked `isAbortedMidStream`: the agent
//!   was interrupted, and when it is the session's own file, the session is over.
//! - `cost-state` lines (the session file, at the end of each turn): the CLI's running total of the
//!   whole session, by model, children included.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::wire::fact::{
    Breakdown, CostReported, ErrorFact, Fact, Facts, ReportedUsage, SessionEnded, Status, StatusChange, StatusFact,
    Target, TurnEnded, TurnOutcome, TurnRef,
};
use crate::wire::{CleanStr, sanitize};

/// The text Claude Code writes as a user message when the user interrupts it.
pub fn is_interrupt_note(text: &str) -> bool {
    text.trim_start().starts_with("[Request interrupted by user")
}

fn set(status: Status) -> Fact<'static> {
    Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(status) })
}

/// The line's agent was interrupted; `session` when the line is the session's own (a root): then
/// nothing of the session runs any more.
pub fn interrupted(session: bool, facts: &mut Facts<'_>) {
    facts.push(Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Latest,
        outcome: Some(TurnOutcome::Interrupted),
        error: None,
    }));
    facts.push(set(Status::Interrupted));
    if session {
        facts.push(Fact::SessionEnded(SessionEnded { interrupted: true }));
    }
}

/// A synthetic API-error line: the agent's request failed after the CLI's own retries.
pub fn api_error(status: Option<u64>, text: &str, facts: &mut Facts<'_>) {
    let message = match status {
        Some(s) if !text.contains(&s.to_string()) => sanitize(&format!("HTTP {s}: {text}")),
        _ => sanitize(text),
    };
    facts.push(Fact::Error(ErrorFact { message: Some(message.clone()), retrying: false, goes_on: false }));
    facts.push(Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Latest,
        outcome: Some(TurnOutcome::Failed),
        error: Some(message),
    }));
    facts.push(set(Status::Failed));
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CostState<'a> {
    #[serde(borrow, default)]
    model_usage: Option<BTreeMap<Cow<'a, str>, ModelUsage<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelUsage<'a> {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(rename = "cacheCreationEphemeral1hInputTokens", default)]
    cache_creation_1h_input_tokens: Option<u64>,
    #[serde(rename = "costUSD", borrow, default)]
    cost_usd: Option<&'a RawValue>,
}

/// A `cost-state` line: per model, the session's totals ([`Fact::ReportedUsage`]) and the CLI's own
/// cost ([`Fact::CostReported`], cumulative). `false` when the line is not one.
pub fn cost_state<'l>(text: &'l str, facts: &mut Facts<'l>) -> bool {
    // serde would read `[]` as a struct of defaults.
    if !text.trim_start().starts_with('{') {
        return false;
    }
    let Ok(state) = serde_json::from_str::<CostState<'l>>(text) else { return false };
    for (model, u) in state.model_usage.into_iter().flatten() {
        let v = |x: Option<u64>| x.unwrap_or(0);
        let (fresh, read, written) =
            (v(u.input_tokens), v(u.cache_read_input_tokens), v(u.cache_creation_input_tokens));
        let input = fresh.saturating_add(read).saturating_add(written);
        let output = v(u.output_tokens);
        let tokens = Breakdown {
            input_tokens: Some(input),
            cached_input_tokens: Some(read),
            cache_write_input_tokens: Some(written),
            cache_write_1h_input_tokens: Some(v(u.cache_creation_1h_input_tokens).min(written)),
            output_tokens: Some(output),
            reasoning_output_tokens: Some(0),
            total_tokens: Some(input.saturating_add(output)),
        };
        let model_name = match model {
            Cow::Borrowed(m) => CleanStr::new(m),
            Cow::Owned(m) => CleanStr::from(sanitize(&m)),
        };
        if let Some(usd) = u.cost_usd {
            facts.push(Fact::CostReported(CostReported {
                model: Some(model_name.clone()),
                usd: Cow::Borrowed(usd.get()),
                cumulative: true,
                own: false,
            }));
        }
        facts.push(Fact::ReportedUsage(ReportedUsage { model: model_name, tokens, context_window: None }));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Clean;

    fn all<'a>(f: &'a Facts<'a>) -> Vec<&'a Fact<'a>> {
        f.iter().collect()
    }

    #[test]
    fn interrupt_notes_of_the_cli() {
        assert!(is_interrupt_note("[Request interrupted by user]"));
        assert!(is_interrupt_note("[Request interrupted by user for tool use]"));
        assert!(!is_interrupt_note("Please do not interrupt"));
    }

    #[test]
    fn an_interrupt_ends_the_turn_and_a_session_s_ends_the_session() {
        let mut f = Facts::default();
        interrupted(false, &mut f);
        assert!(matches!(all(&f)[0], Fact::TurnEnded(t) if t.outcome == Some(TurnOutcome::Interrupted)));
        assert!(matches!(all(&f)[1], Fact::Status(s) if s.change == StatusChange::Set(Status::Interrupted)));
        assert_eq!(f.len(), 2, "a child's interrupt leaves the session to its own lines");
        let mut f = Facts::default();
        interrupted(true, &mut f);
        assert!(matches!(all(&f)[2], Fact::SessionEnded(e) if e.interrupted));
    }

    #[test]
    fn a_synthetic_api_error_fails_the_agent() {
        let mut f = Facts::default();
        api_error(Some(529), "API Error: Repeated 529 Overloaded errors", &mut f);
        let facts = all(&f);
        assert!(
            matches!(facts[0], Fact::Error(e) if !e.retrying && e.message.as_ref().map(Clean::as_str) == Some("API Error: Repeated 529 Overloaded errors"))
        );
        assert!(matches!(facts[2], Fact::Status(s) if s.change == StatusChange::Set(Status::Failed)));
        let mut f = Facts::default();
        api_error(Some(500), "Internal error", &mut f);
        assert!(
            matches!(all(&f)[0], Fact::Error(e) if e.message.as_ref().map(Clean::as_str) == Some("HTTP 500: Internal error"))
        );
    }

    #[test]
    fn cost_state_reports_the_session_by_model() {
        let line = r#"{"type":"cost-state","sessionId":"s","totalCostUSD":0.085891045,"modelUsage":{"claude-sonnet-4-5":{"inputTokens":11208,"outputTokens":1308,"cacheReadInputTokens":56456,"cacheCreationInputTokens":3508,"cacheCreationEphemeral5mInputTokens":2605,"cacheCreationEphemeral1hInputTokens":903,"costUSD":0.08536755},"claude-haiku-5-5":{"inputTokens":2061,"outputTokens":261,"cacheReadInputTokens":10427,"cacheCreationInputTokens":661,"costUSD":0.000523495}}}"#;
        let mut f = Facts::default();
        assert!(cost_state(line, &mut f));
        let facts = all(&f);
        assert!(matches!(facts[0], Fact::CostReported(c) if c.cumulative && &*c.usd == "0.000523495"
            && c.model.as_ref().map(CleanStr::as_str) == Some("claude-haiku-5-5")));
        let Fact::ReportedUsage(sonnet) = facts[3] else { panic!("{:?}", facts[3]) };
        assert_eq!(sonnet.model.as_str(), "claude-sonnet-4-5");
        assert_eq!(sonnet.tokens.input_tokens, Some(11208 + 56456 + 3508));
        assert_eq!((sonnet.tokens.cache_write_1h_input_tokens, sonnet.tokens.output_tokens), (Some(903), Some(1308)));
        assert!(!cost_state("[]", &mut Facts::default()));
    }
}
