//! `opencode run --format json` (OpenCode 1.18.33, wire.md §9): one line per finished part of the
//! **root session only**, `{type, timestamp (unix ms), sessionID, part}`, the part as the store
//! keeps it:
//!
//! - `step_start` (`part.type: step-start`): a model step (one assistant message, `messageID`) begins;
//! - `text`, `reasoning`: the step's text, once it is complete (nothing streams);
//! - `tool_use` (`part.type: tool`): a tool call once it finished, `state.status` `completed` or
//!   `error`; a `task` call names its sub-agent's session in `state.metadata.sessionId`;
//! - `step_finish` (`step-finish`): the step's `reason` (`tool-calls`: another step follows;
//!   `stop`: the answer), its `tokens` {input, output, reasoning, cache {read, write}} and `cost`;
//! - `error` {`error` {name, data}}: the run failed.
//!
//! A sub-agent's own parts, tokens and cost are in the store only: from this output it is a lane
//! under its card that finished, failed or was cancelled as its card did, with nothing of its own.
//! No line names the root's own model (a step's part has tokens and cost only; a `task` call's
//! `metadata.model` is its sub-agent's, the agent's own model else the caller's): the root's model
//! stays unknown rather than guessed, its cost is OpenCode's own figure.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::fact::{
    Answered, CostReported, ErrorFact, Fact, Format, ItemStatus, Lowered, Parentage, ResponseUsage, Status,
    StatusChange, StatusFact, Subject, Target, ThreadFact, TurnEnded, TurnOutcome, TurnRef, TurnStarted, Usage, Via,
    Weight,
};
use super::json::{Str, opt_str};
use super::opencode::{self, Part, Tokens};
use super::sanitize;

/// One line of `opencode run --format json`.
#[derive(Debug, Default, Deserialize)]
pub struct RunLine<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(default)]
    pub timestamp: Option<i64>,
    #[serde(rename = "sessionID", borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub part: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    /// `part`, read as a part of the store is.
    #[serde(skip)]
    pub parsed: Option<Part<'a>>,
}

/// What a `step_finish` part says beyond a part's common members.
#[derive(Debug, Default, Deserialize)]
struct StepFinish<'a> {
    #[serde(rename = "messageID", borrow, default, deserialize_with = "opt_str")]
    message_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    reason: Option<Str<'a>>,
    #[serde(default)]
    tokens: Option<Tokens>,
    #[serde(borrow, default)]
    cost: Option<&'a RawValue>,
}

/// An `opencode run --format json` line, or `None` when the text is not one.
pub fn parse(text: &str) -> Option<RunLine<'_>> {
    let mut line: RunLine<'_> = serde_json::from_str(text).ok()?;
    line.session_id.as_deref().filter(|s| s.starts_with("ses_"))?;
    line.kind.as_ref()?;
    line.parsed = line.part.and_then(|p| serde_json::from_str(p.get()).ok());
    Some(line)
}

impl RunLine<'_> {
    pub fn time(&self) -> Option<i64> {
        self.timestamp
    }
}

/// The one turn of a run: its prompt is not in the output, so it has no id of its own.
const TURN: &str = "run";

fn set<'l>(status: Status) -> Fact<'l> {
    Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(status) })
}

/// Lowers one line, said by the run's session.
pub fn lower<'l>(line: &'l RunLine<'_>, out: &mut Lowered<'l>) {
    out.format = Format::OpenCode;
    let Some(session) = line.session_id.as_deref() else { return };
    out.subject = Subject::Thread(Cow::Borrowed(session));
    out.weight = Weight::Output;
    match line.kind.as_deref() {
        Some("step_start") => {
            out.weight = Weight::Noise;
            // `opencode run` prints its own session only: the root.
            out.facts.push(Fact::Thread(Box::new(ThreadFact::new(Cow::Borrowed(session), Parentage::Root))));
            out.facts.push(Fact::TurnStarted(TurnStarted {
                turn: Some(Cow::Borrowed(TURN)),
                own_root_turn: true,
                ends_previous: false,
            }));
            out.facts.push(set(Status::Running));
        }
        Some("step_finish") => step_finish(line, out),
        Some("error") => {
            out.weight = Weight::Closing;
            let (message, aborted) = opencode::error_text(line.error);
            let outcome = if aborted { TurnOutcome::Interrupted } else { TurnOutcome::Failed };
            out.facts.push(Fact::TurnEnded(TurnEnded {
                turn: TurnRef::Latest,
                outcome: Some(outcome),
                // An abort is the user's, not an error to mark the lane with.
                error: if aborted { None } else { message.clone() },
            }));
            if !aborted {
                out.facts.push(Fact::Error(ErrorFact { message, retrying: false, goes_on: false }));
            }
            out.facts.push(set(if aborted { Status::Interrupted } else { Status::Failed }));
        }
        // `text`, `reasoning`, `tool_use` and what comes next: a part, read as the store's is.
        _ => {
            if let Some(part) = &line.parsed {
                opencode::part(part, Some(session), out);
            }
            task(line, session, out);
        }
    }
}

/// A `task` call's child, named as its store row would name it: by the task's description and
/// agent type, on the model the call's metadata says it ran.
fn task<'l>(line: &'l RunLine<'_>, session: &'l str, out: &mut Lowered<'l>) {
    #[derive(Default, Deserialize)]
    struct Task<'a> {
        #[serde(borrow, default, deserialize_with = "opt_str")]
        id: Option<Str<'a>>,
        #[serde(borrow, default, deserialize_with = "opt_str")]
        tool: Option<Str<'a>>,
        #[serde(borrow, default)]
        state: Option<TaskState<'a>>,
    }
    #[derive(Default, Deserialize)]
    struct TaskState<'a> {
        #[serde(borrow, default, deserialize_with = "opt_str")]
        status: Option<Str<'a>>,
        #[serde(borrow, default, deserialize_with = "opt_str")]
        error: Option<Str<'a>>,
        #[serde(borrow, default)]
        input: Option<TaskInput<'a>>,
        #[serde(borrow, default)]
        metadata: Option<TaskMetadata<'a>>,
    }
    #[derive(Default, Deserialize)]
    struct TaskInput<'a> {
        #[serde(borrow, default, deserialize_with = "opt_str")]
        description: Option<Str<'a>>,
        #[serde(borrow, default, deserialize_with = "opt_str")]
        subagent_type: Option<Str<'a>>,
    }
    #[derive(Default, Deserialize)]
    struct TaskMetadata<'a> {
        #[serde(rename = "sessionId", borrow, default, deserialize_with = "opt_str")]
        session_id: Option<Str<'a>>,
        #[serde(borrow, default)]
        model: Option<TaskModel<'a>>,
        #[serde(default)]
        interrupted: Option<bool>,
    }
    #[derive(Default, Deserialize)]
    struct TaskModel<'a> {
        #[serde(rename = "modelID", borrow, default, deserialize_with = "opt_str")]
        model_id: Option<Str<'a>>,
    }
    let Some(raw) = line.part else { return };
    let Ok(t) = serde_json::from_str::<Task<'l>>(raw.get()) else { return };
    if t.tool.as_deref() != Some("task") {
        return;
    }
    let state = t.state.unwrap_or_default();
    let meta = state.metadata.unwrap_or_default();
    let Some(child) = meta.session_id.filter(|c| !c.is_empty()) else { return };
    let input = state.input.unwrap_or_default();
    let card = t.id.filter(|c| !c.is_empty());
    let mut fact =
        ThreadFact::new(child.clone(), Parentage::Child { parent: Cow::Borrowed(session), via: Via::TaskTool, card });
    fact.nickname = input.description.as_deref().filter(|d| !d.is_empty()).map(sanitize);
    fact.role = input.subagent_type.as_deref().filter(|r| !r.is_empty()).map(sanitize);
    fact.model = meta.model.and_then(|m| m.model_id).as_deref().filter(|m| !m.is_empty()).map(sanitize);
    out.facts.push(Fact::Thread(Box::new(fact)));
    // The child's own end is in the store only; here its card's end is all there is of it: a
    // failed or cancelled call ended the child so (a completed one answered, as the part says).
    let end =
        match opencode::item_status(state.status.as_deref(), state.error.as_deref(), meta.interrupted == Some(true)) {
            ItemStatus::Failed => Status::Failed,
            ItemStatus::Interrupted => Status::Interrupted,
            _ => return,
        };
    out.facts.push(Fact::Answered(Answered { child, status: end }));
}

fn step_finish<'l>(line: &'l RunLine<'_>, out: &mut Lowered<'l>) {
    let Some(step) = line.part.and_then(|p| serde_json::from_str::<StepFinish<'l>>(p.get()).ok()) else { return };
    if let (Some(message), Some(tokens)) = (step.message_id, step.tokens) {
        out.facts.push(Fact::Usage(Usage::Response(Box::new(ResponseUsage {
            key: (message, Cow::Borrowed("")),
            tokens: opencode::breakdown(&tokens),
            model: None,
            context: None,
        }))));
    }
    // Each step's cost, what OpenCode's own price table (the user's config) says.
    if let Some(cost) = step.cost.map(RawValue::get).filter(|c| c.parse::<f64>().is_ok_and(|v| v > 0.0)) {
        out.facts.push(Fact::CostReported(CostReported {
            model: None,
            usd: Cow::Borrowed(cost),
            cumulative: false,
            own: true,
        }));
    }
    if step.reason.as_deref().is_some_and(|r| r != "tool-calls") {
        out.weight = Weight::Closing;
        out.facts.push(Fact::TurnEnded(TurnEnded {
            turn: TurnRef::Latest,
            outcome: Some(TurnOutcome::Completed),
            error: None,
        }));
        out.facts.push(Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Idle }));
    }
}

#[cfg(test)]
mod tests {
    use crate::wire::fact::{Format, Subject};
    use crate::wire::record::{Line, decode};

    fn lowered(text: &str) -> (Subject<'static>, String) {
        let line = decode(text.as_bytes()).unwrap_or_else(|m| panic!("malformed: {text}: {m}"));
        assert!(matches!(line.line, Line::OpenCodeRun(_)), "{text}");
        assert_eq!(line.time(), Some(1_796_137_192_100));
        let out = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut crate::wire::Stream::default());
        assert_eq!(out.format, Format::OpenCode);
        let Subject::Thread(t) = &out.subject else { panic!("{:?}", out.subject) };
        (Subject::Thread(t.to_string().into()), format!("{:?}", out.facts.iter().collect::<Vec<_>>()))
    }

    const S: &str = r#""timestamp":1796137192100,"sessionID":"ses_root""#;

    #[test]
    fn a_step_starts_the_runs_turn_on_its_root_session() {
        let (subject, facts) = lowered(&format!(
            r#"{{"type":"step_start",{S},"part":{{"id":"prt_1","messageID":"msg_1","sessionID":"ses_root","type":"step-start"}}}}"#
        ));
        assert_eq!(subject, Subject::Thread("ses_root".into()));
        assert!(
            facts.contains("Root") && facts.contains(r#"turn: Some("run")"#) && facts.contains("Running"),
            "{facts}"
        );
    }

    #[test]
    fn a_step_finish_is_one_responses_usage_and_its_own_cost_and_stop_ends_the_turn() {
        let (_, facts) = lowered(&format!(
            r#"{{"type":"step_finish",{S},"part":{{"id":"prt_9","reason":"stop","messageID":"msg_3","sessionID":"ses_root","type":"step-finish","tokens":{{"total":1225,"input":1087,"output":13,"reasoning":5,"cache":{{"write":0,"read":120}}}},"cost":0.003366}}}}"#
        ));
        assert!(facts.contains(r#"key: ("msg_3", "")"#), "one response per step: {facts}");
        assert!(facts.contains("input_tokens: Some(1207)"), "input includes the cache read: {facts}");
        assert!(facts.contains("output_tokens: Some(18)"), "output includes reasoning: {facts}");
        assert!(facts.contains(r#"usd: "0.003366", cumulative: false, own: true"#), "{facts}");
        assert!(facts.contains("Completed") && facts.contains("Idle"));
        let (_, between) = lowered(&format!(
            r#"{{"type":"step_finish",{S},"part":{{"reason":"tool-calls","messageID":"msg_1","type":"step-finish","tokens":{{"input":907,"output":11}},"cost":0}}}}"#
        ));
        assert!(!between.contains("TurnEnded") && !between.contains("CostReported"), "{between}");
    }

    #[test]
    fn a_task_call_names_its_child_under_its_card() {
        let (_, facts) = lowered(&format!(
            r#"{{"type":"tool_use",{S},"part":{{"type":"tool","tool":"task","callID":"call_a","state":{{"status":"completed","input":{{"description":"List files A","prompt":"go","subagent_type":"general"}},"output":"<task id=\"ses_child\">done</task>","metadata":{{"parentSessionId":"ses_root","sessionId":"ses_child","model":{{"modelID":"mock-large","providerID":"mock"}}}},"time":{{"start":1,"end":2}}}},"id":"prt_task","sessionID":"ses_root","messageID":"msg_1"}}}}"#
        ));
        assert!(facts.contains(r#"Spawn(Spawn { child: "ses_child", card: Some("prt_task")"#), "{facts}");
        assert!(facts.contains(r#"Answered { child: "ses_child", status: Idle }"#), "{facts}");
        assert!(
            facts.contains(
                r#"thread: "ses_child", parentage: Child { parent: "ses_root", via: TaskTool, card: Some("prt_task") }"#
            ),
            "{facts}"
        );
        assert!(facts.contains(r#"nickname: Some("List files A")"#) && facts.contains(r#"model: Some("mock-large")"#));
    }

    /// The child's own end is nowhere in this output: a failed call fails its child, a cancelled
    /// one interrupts it (the `subfail` capture's child stayed pending for good).
    #[test]
    fn a_failed_or_cancelled_task_call_ends_its_child_so() {
        let call = |status: &str, error: &str| {
            lowered(&format!(
                r#"{{"type":"tool_use",{S},"part":{{"type":"tool","tool":"task","callID":"call_f","state":{{"status":"{status}","input":{{"description":"List files FAIL","subagent_type":"general"}},"error":"{error}","metadata":{{"parentSessionId":"ses_root","sessionId":"ses_child","model":{{"modelID":"mock-large","providerID":"mock"}}}},"time":{{"start":1,"end":2}}}},"id":"prt_task","sessionID":"ses_root","messageID":"msg_1"}}}}"#
            ))
            .1
        };
        let failed = call("error", "Subagent failed (task_id: ses_child): mock: internal server error");
        assert!(failed.contains(r#"Answered { child: "ses_child", status: Failed }"#), "{failed}");
        let cancelled = call("error", "Task cancelled");
        assert!(cancelled.contains(r#"Answered { child: "ses_child", status: Interrupted }"#), "{cancelled}");
        let running = call("running", "");
        assert!(!running.contains("Answered"), "a call still running ended nothing: {running}");
    }

    #[test]
    fn an_error_fails_the_run() {
        let (_, facts) = lowered(&format!(
            r#"{{"type":"error",{S},"error":{{"name":"APIError","data":{{"message":"Internal","statusCode":500}}}}}}"#
        ));
        assert!(facts.contains("APIError (HTTP 500): Internal") && facts.contains("Failed"), "{facts}");
    }
}
