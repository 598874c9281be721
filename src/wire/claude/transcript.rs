//! Claude Code transcript lines (wire.md §6): `~/.claude/projects/<project>/<sessionId>.jsonl`, with
//! sub-agents in `<sessionId>/subagents/agent-<agentId>.jsonl`.
//!
//! A line's thread is the sub-agent's `agentId`, else the session; what it says is lowered into
//! the facts every format shares (wire.md §6).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::wire::fact::{
    AgentOp, Answered, Breakdown, CleanStr, ContextFill, Fact, Format, ItemFact, ItemKind, ItemStatus, Lowered,
    ModelChange, Notice, Parentage, ResponseUsage, Spawn, Status, StatusChange, StatusFact, Subject, Target, TextRule,
    ThreadFact, TurnEnded, TurnOutcome, TurnRef, TurnStarted, Usage as FactUsage, Via,
};
use crate::wire::json::{Str, opt_str};
use crate::wire::sanitize;
use crate::wire::time::iso8601_ms;

use super::outcome;

/// The parts of a transcript line swarmtop reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeLine<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub uuid: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub session_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
    #[serde(default)]
    pub is_sidechain: Option<bool>,
    #[serde(default)]
    pub is_meta: Option<bool>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub timestamp: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub request_id: Option<Str<'a>>,
    /// The session whose request it was, on the history a `--fork-session` copies into its new
    /// session's file (2.1.332): that session spent it.
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub request_session_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub message: Option<ClaudeMessage<'a>>,
    #[serde(borrow, default)]
    pub data: Option<ProgressData<'a>>,
    #[serde(rename = "parentToolUseID", borrow, default, deserialize_with = "opt_str")]
    pub parent_tool_use_id: Option<Str<'a>>,
    /// A synthetic line for a request that failed for good (2.1.332), with its HTTP status.
    #[serde(default)]
    pub is_api_error_message: Option<bool>,
    #[serde(default)]
    pub api_error_status: Option<u64>,
    /// An answer cut short by an interrupt.
    #[serde(default)]
    pub is_aborted_mid_stream: Option<bool>,
    /// `toolUseResult` read as a sub-agent's answer (it is often a whole file's contents, of which
    /// only these members matter).
    #[serde(rename = "toolUseResult", borrow, default, deserialize_with = "agent_result")]
    pub agent_result: Option<AgentResult<'a>>,
    /// A tool result line's permission check (2.1.332): a `reject` is a call the CLI refused to run.
    #[serde(borrow, default, deserialize_with = "decision")]
    pub permission_decision: Option<Decision<'a>>,
    /// `system` lines: `local_command` (the output of a slash command), `compact_boundary`, ...
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub subtype: Option<Str<'a>>,
    /// The summary a compaction continues the session from (a `user` line, not a prompt).
    #[serde(default)]
    pub is_compact_summary: Option<bool>,
    /// Why a tool call did not run: `user-rejected` when the user said no at its prompt or stopped
    /// the turn (Esc, SIGINT) while it waited or ran; `permission-rule` for a rule or hook.
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub tool_denial_kind: Option<Str<'a>>,
    /// How the CLI was started: `cli` (interactive), `sdk-cli` (`-p`), `sdk-ts`, ...
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub entrypoint: Option<Str<'a>>,
    /// An `attachment` line's payload, kept only when it is a hook run that failed (see
    /// [`super::hook`]); every other attachment is context the CLI gave the model.
    #[serde(rename = "attachment", borrow, default, deserialize_with = "failed_hook")]
    pub failed_hook: Option<HookRun<'a>>,
    // The top-level members a Codex message, an envelope or a rollout line has, by whether they
    // are there at all (null included): a line with any of them is not read as a transcript line
    // alone ([`ClaudeLine::is_plain_transcript`]). Fields, not a flattened struct: flattening buffers every member.
    #[serde(default)]
    method: Present,
    #[serde(default)]
    params: Present,
    #[serde(default)]
    id: Present,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
    #[serde(default)]
    emitted_at_ms: Present,
    #[serde(default)]
    swarmtop: Present,
    #[serde(default)]
    ts: Present,
    #[serde(default)]
    dir: Present,
    #[serde(default)]
    msg: Present,
    #[serde(default)]
    raw_b64: Present,
    #[serde(default)]
    payload: Present,
    /// stream-json spells the session in snake case (and carries `uuid` too): such a line is a
    /// stream line, never a transcript line read alone — unless it names its session in camel case
    /// too, as interactive 2.1.332 transcripts do (the snake one is then stale after a `/clear`).
    #[serde(rename = "session_id", default)]
    stream_session_id: Present,
}

/// A member whose value does not matter, only that it is there.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Present(bool);

impl ClaudeLine<'_> {
    /// What the full parse notes of a snake-case `session_id` member, for the one-pass reader.
    pub(super) fn note_stream_session_id(&mut self) {
        self.stream_session_id = Present(true);
    }

    /// Plainly a transcript line and nothing else: a `uuid` or `sessionId` (what makes the record
    /// reader call it one), and no member of a Codex message, an envelope, a rollout line or a
    /// stream-json line.
    pub(super) fn is_plain_transcript(&self) -> bool {
        let others = [
            self.method,
            self.params,
            self.id,
            self.result,
            self.error,
            self.emitted_at_ms,
            self.swarmtop,
            self.ts,
            self.dir,
            self.msg,
            self.raw_b64,
            self.payload,
        ];
        let stream = self.stream_session_id.0 && self.session_id.is_none();
        (self.uuid.is_some() || self.session_id.is_some()) && !stream && !others.iter().any(|p| p.0)
    }
}

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Self(true))
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct ClaudeMessage<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub model: Option<Str<'a>>,
    /// A string (one text block), or an array of content blocks.
    #[serde(borrow, default, deserialize_with = "content_blocks")]
    pub content: Vec<Block<'a>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub stop_reason: Option<Str<'a>>,
}

/// Anthropic usage of one API response. `input_tokens` excludes the cache.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation: Option<CacheCreation>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct CacheCreation {
    #[serde(default)]
    pub ephemeral_5m_input_tokens: Option<u64>,
    #[serde(default)]
    pub ephemeral_1h_input_tokens: Option<u64>,
}

/// `data` of a `progress` line: a sub-agent's progress names it (`agent_progress`, `agentId`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressData<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
}

/// One content block of a message.
#[derive(Debug, Default, Deserialize)]
pub struct Block<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub text: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub thinking: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub name: Option<Str<'a>>,
    /// A tool call's input, as far as its title needs it.
    #[serde(borrow, default, deserialize_with = "tool_input")]
    pub input: ToolInput<'a>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub tool_use_id: Option<Str<'a>>,
    /// A tool result's text: its content's string, or the text of its content's blocks, a line each.
    #[serde(borrow, default, deserialize_with = "result_content")]
    pub content: Str<'a>,
    #[serde(default)]
    pub is_error: Option<bool>,
}

impl<'a> Block<'a> {
    /// A text block: what a message's content is when it is a plain string.
    pub fn text(text: Str<'a>) -> Self {
        Self { kind: Some(Cow::Borrowed("text")), text: Some(text), ..Self::default() }
    }
}

/// `toolUseResult` of a tool result line, when a sub-agent answered it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub agent_id: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub status: Option<Str<'a>>,
}

/// How a tool call's permission was decided (`permissionDecision` of a transcript line,
/// `tool_result_meta[].permission_decision` of stream-json): `accept` or `reject`, by a `source`
/// (the settings, the permission mode, the user).
#[derive(Debug, Default, Deserialize)]
pub struct Decision<'a> {
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub decision: Option<Str<'a>>,
}

/// A hook run as an `attachment` line reports it (2.1.332).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "opt_str")]
    pub kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub hook_name: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "opt_str")]
    pub stderr: Option<Str<'a>>,
    #[serde(default)]
    pub exit_code: Option<i64>,
}

impl Decision<'_> {
    pub fn refused(&self) -> bool {
        self.decision.as_deref().is_some_and(|d| matches!(d, "reject" | "deny"))
    }
}

impl<'a> ClaudeLine<'a> {
    pub fn time(&self) -> Option<i64> {
        self.timestamp.as_deref().and_then(iso8601_ms)
    }

    /// A compaction side-chain (`acompact-…`) is the session's own work, not a sub-agent.
    pub fn sub_agent(&self) -> Option<&str> {
        self.agent_id.as_deref().filter(|a| !a.is_empty() && !a.starts_with("acompact"))
    }

    /// The thread a line belongs to: its sub-agent, else its session.
    pub fn thread(&self) -> Option<&str> {
        self.sub_agent().or(self.session_id.as_deref()).filter(|t| !t.is_empty())
    }

    /// A line of the session's own work — its file, or its compaction side-chain — which marks the
    /// session as a root. (An inline side-chain line without an `agentId`, the oldest layout, names
    /// no agent and marks nothing.)
    pub fn is_main(&self) -> bool {
        self.sub_agent().is_none() && (self.agent_id.is_some() || self.is_sidechain != Some(true))
    }

    /// Whether an interrupt on this line ends the whole session: it is the session's own, and not the
    /// interactive CLI's, where Esc stops only the turn (the CLI waits for the next prompt, and its
    /// background agents go on working).
    pub fn interrupt_ends_session(&self) -> bool {
        self.is_main() && self.entrypoint.as_deref() != Some("cli")
    }

    pub fn blocks(&self) -> &[Block<'a>] {
        self.message.as_ref().map_or(&[], |m| &m.content)
    }

    /// The sub-agent a line announces, with its card (the `Task` / `Agent` tool use), if any.
    pub fn announced_agent(&self) -> Option<(Cow<'a, str>, Option<Cow<'a, str>>)> {
        if let Some(data) = &self.data {
            if data.kind.as_deref() == Some("agent_progress") {
                let agent = data.agent_id.clone().filter(|a| !a.is_empty() && !a.starts_with("acompact"))?;
                return Some((agent, self.parent_tool_use_id.clone()));
            }
        }
        let agent =
            self.agent_result.as_ref()?.agent_id.clone().filter(|a| !a.is_empty() && !a.starts_with("acompact"))?;
        let card = self.blocks().iter().find_map(|b| b.tool_use_id.clone());
        Some((agent, card))
    }
}

/// Content as blocks: a plain string is one text block.
pub fn blocks_of(content: Option<&RawValue>) -> Vec<Block<'_>> {
    let Some(raw) = content else { return Vec::new() };
    if raw.get().starts_with('"') {
        let text: Option<Str<'_>> = serde_json::from_str(raw.get()).ok();
        return text.map(|t| vec![Block::text(t)]).unwrap_or_default();
    }
    serde_json::from_str(raw.get()).unwrap_or_default()
}

/// Parses a transcript line; `None` when it is not one (it has no `type`).
pub fn parse(text: &str) -> Option<ClaudeLine<'_>> {
    let line: ClaudeLine<'_> = serde_json::from_str(text).ok()?;
    line.kind.as_ref()?;
    Some(line)
}

impl Usage {
    /// Whether every count is zero or absent.
    fn is_nothing(&self) -> bool {
        [self.input_tokens, self.cache_read_input_tokens, self.cache_creation_input_tokens, self.output_tokens]
            .iter()
            .all(|n| n.unwrap_or(0) == 0)
    }

    /// The figures in the OpenAI vocabulary of [`Breakdown`].
    pub fn breakdown(&self) -> Breakdown {
        let v = |x: Option<u64>| x.unwrap_or(0);
        let written = v(self.cache_creation_input_tokens);
        let one_hour = self.cache_creation.and_then(|c| c.ephemeral_1h_input_tokens).unwrap_or(0).min(written);
        tokens(v(self.input_tokens), v(self.cache_read_input_tokens), written, one_hour, v(self.output_tokens))
    }
}

/// Anthropic figures (input without the cache; cache reads; cache writes, of them kept an hour;
/// output) in the OpenAI vocabulary of [`Breakdown`]: input includes cache reads and writes.
pub(super) fn tokens(fresh: u64, read: u64, written: u64, one_hour: u64, output: u64) -> Breakdown {
    let input = fresh.saturating_add(written).saturating_add(read);
    Breakdown {
        input_tokens: Some(input),
        cached_input_tokens: Some(read),
        cache_write_input_tokens: Some(written),
        cache_write_1h_input_tokens: Some(one_hour),
        output_tokens: Some(output),
        reasoning_output_tokens: Some(0),
        total_tokens: Some(input.saturating_add(output)),
    }
}

/// A tool's input, for its one-line title (and a spawn's lanes).
#[derive(Debug, Deserialize, Default)]
pub struct ToolInput<'a> {
    #[serde(borrow, default)]
    pub command: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub description: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub prompt: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub subagent_type: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub file_path: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub pattern: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub url: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub query: Option<Str<'a>>,
}

/// The text of a tool result's content (a string or text blocks).
pub(super) fn result_text(content: Option<&RawValue>) -> Str<'_> {
    joined(blocks_of(content).into_iter().filter_map(|b| b.text))
}

/// Texts a line each; the one text as it is.
pub(super) fn joined<'a>(mut texts: impl Iterator<Item = Str<'a>>) -> Str<'a> {
    let Some(first) = texts.next() else { return Cow::Borrowed("") };
    match texts.next() {
        None => first,
        Some(second) => {
            let mut all = first.into_owned();
            for t in std::iter::once(second).chain(texts) {
                all.push('\n');
                all.push_str(&t);
            }
            Cow::Owned(all)
        }
    }
}

// The full parse reads nested values whole, then decodes them as the one-pass reader does; a
// value of another shape reads as none, as it always has.
fn content_blocks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Block<'de>>, D::Error> {
    Ok(blocks_of(Option::<&'de RawValue>::deserialize(d)?))
}

fn tool_input<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ToolInput<'de>, D::Error> {
    Ok(Option::<&'de RawValue>::deserialize(d)?
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default())
}

fn result_content<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Str<'de>, D::Error> {
    Ok(result_text(Option::<&'de RawValue>::deserialize(d)?))
}

fn agent_result<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<AgentResult<'de>>, D::Error> {
    Ok(Option::<&'de RawValue>::deserialize(d)?.and_then(|raw| serde_json::from_str(raw.get()).ok()))
}

/// `permissionDecision`, when it is an object: a newer CLI's other shape is no reason to lose the line.
fn decision<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Decision<'de>>, D::Error> {
    Ok(Option::<&'de RawValue>::deserialize(d)?.and_then(|raw| serde_json::from_str(raw.get()).ok()))
}

/// `attachment`, when it is a failed hook run (any other shape or type is no fact, and no reason
/// to lose the line).
fn failed_hook<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<HookRun<'de>>, D::Error> {
    let raw = Option::<&'de RawValue>::deserialize(d)?;
    Ok(raw
        .and_then(|raw| serde_json::from_str::<HookRun<'de>>(raw.get()).ok())
        .filter(|run| super::hook::attachment_failed(run.kind.as_deref())))
}

/// Lowers one transcript line into `out` (whose time and raw text the caller has set).
pub fn lower<'l>(line: &'l ClaudeLine<'_>, out: &mut Lowered<'l>) {
    out.format = Format::ClaudeTranscript;
    let Some(thread) = line.thread() else {
        // A line of no session (`file-history-snapshot`, `summary`): nothing to attribute.
        out.subject = Subject::Global;
        let method = format!("claude/{}", line.kind.as_deref().unwrap_or_default());
        out.facts.push(Fact::Notice(Notice { method: sanitize(&method).into(), message: None }));
        return;
    };
    out.subject = Subject::Thread(Cow::Borrowed(thread));
    // A line of a Claude session's own file names a root, as `thread/started` without a parent does.
    if line.is_main() {
        out.facts.push(Fact::Thread(Box::new(ThreadFact::new(Cow::Borrowed(thread), Parentage::Root))));
    }
    match line.kind.as_deref() {
        Some("assistant") => assistant(line, out),
        Some("user") => user(line, out),
        Some("system") if line.subtype.as_deref() == Some("local_command") => {
            let uuid = line.uuid.as_deref().unwrap_or_default();
            super::local::answered(uuid, None, out.time, &mut out.facts);
        }
        // Written once the turn's last response is in (2.1.x): the turn is over.
        Some("system") if matches!(line.subtype.as_deref(), Some("stop_hook_summary" | "turn_duration")) => {
            out.facts.push(status(Status::Idle));
            out.facts.push(Fact::TurnEnded(TurnEnded {
                turn: TurnRef::Latest,
                outcome: Some(TurnOutcome::Completed),
                error: None,
            }));
        }
        Some("cost-state") => {
            let raw = out.raw;
            outcome::cost_state(raw, &mut out.facts);
        }
        Some("attachment") => {
            if let Some(run) = &line.failed_hook {
                let id = line.uuid.as_deref().unwrap_or_default();
                let output = run.stderr.as_deref().unwrap_or_default();
                super::hook::failed(id, run.hook_name.as_deref(), run.exit_code, output, out.time, &mut out.facts);
            }
        }
        _ => {}
    }
    if let Some((child, card)) = line.announced_agent() {
        out.facts.push(Fact::Spawn(Spawn { child, card, via: Via::TaskTool }));
    }
}

fn status<'l>(status: Status) -> Fact<'l> {
    Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(status) })
}

/// Usage is per API response, and one response is written as several lines (one per content block)
/// repeating it: each line states the response's usage under its `(message.id, requestId)` key.
/// Each response is priced by its own model, so a session that switches models, or a local
/// `<synthetic>` message, is costed right.
fn assistant<'l>(line: &'l ClaudeLine<'_>, out: &mut Lowered<'l>) {
    let Some(message) = &line.message else { return };
    let time = out.time;
    let facts = &mut out.facts;
    let model = message.model.as_deref().filter(|m| !m.is_empty());
    // `<synthetic>` messages are made locally: free, and no change of the thread's model.
    if let Some(m) = model.filter(|m| *m != "<synthetic>") {
        facts.push(Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(m) }));
    }
    // A fork's copy of a line its original session wrote (2.1.332 `--fork-session`).
    let copied = line.request_session_id.as_deref().is_some_and(|r| Some(r) != line.session_id.as_deref());
    if copied {
        facts.push(Fact::Copied);
        for b in line.blocks().iter().filter(|b| b.kind.as_deref() == Some("tool_use")) {
            if let Some(id) = b.id.as_deref() {
                facts.push(Fact::CopiedCall(Cow::Borrowed(id)));
            }
        }
    }
    // A `<synthetic>` message the CLI wrote itself (an API error, a cancelled request) carries
    // zero usage under a model name that is no model: no response was made, so none is counted
    // (a report by model would list `<synthetic>` with nothing in it).
    let synthetic_nothing = model == Some("<synthetic>") && message.usage.as_ref().is_none_or(Usage::is_nothing);
    if let Some(usage) = message.usage.as_ref().filter(|_| !copied && !synthetic_nothing) {
        facts.push(Fact::Usage(FactUsage::Response(Box::new(ResponseUsage {
            key: (
                message.id.as_deref().map_or(Cow::Borrowed(""), Cow::Borrowed),
                line.request_id.as_deref().map_or(Cow::Borrowed(""), Cow::Borrowed),
            ),
            tokens: usage.breakdown(),
            model: model.map(CleanStr::new),
            context: ContextFill::of_response(&usage.breakdown()),
        }))));
    }
    let uuid = line.uuid.as_deref().unwrap_or_default();
    let blocks = line.blocks();
    for (i, block) in blocks.iter().enumerate() {
        match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref() {
                    facts.push(block_item(format!("{uuid}#{i}"), ItemKind::AgentMessage, text, time));
                }
            }
            Some("thinking") => {
                if let Some(text) = block.thinking.as_deref() {
                    facts.push(block_item(format!("{uuid}#{i}"), ItemKind::Reasoning, text, time));
                }
            }
            Some("tool_use") => facts.extend(tool_use(block, time)),
            _ => {}
        }
    }
    // A response is written one content block a line, most of them with `stop_reason: null`: a
    // line of text may be followed by the same response's tool call. Only the response's own stop
    // reason (2.1.332), or the turn's closing lines (`stop_hook_summary`, `turn_duration`), end the
    // turn; until then the agent that has its prompt is running (it flapped `✓` then `●`).
    let ended = message.stop_reason.as_deref().is_some_and(|r| r != "tool_use");
    facts.push(status(if ended { Status::Idle } else { Status::Running }));
    if line.is_api_error_message == Some(true) {
        let text: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
        outcome::api_error(line.api_error_status, &text.join("\n"), facts);
    } else if line.is_aborted_mid_stream == Some(true) {
        outcome::interrupted(line.interrupt_ends_session(), facts);
    } else if message.stop_reason.as_deref() == Some("end_turn") {
        // 2.1.332 writes the response's own stop reason: `end_turn` is the turn's last answer (a
        // new prompt or notification starts the next turn), so the turn is over, not left open.
        facts.push(Fact::TurnEnded(TurnEnded {
            turn: TurnRef::Latest,
            outcome: Some(TurnOutcome::Completed),
            error: None,
        }));
    }
}

fn block_item<'l>(id: String, kind: ItemKind, text: &str, time: Option<i64>) -> Fact<'l> {
    Fact::Item(Box::new(ItemFact {
        id: Some(Cow::Owned(id)),
        turn: Some(TurnRef::Latest),
        kind: Some(kind),
        status: Some(ItemStatus::Completed),
        text: Some(sanitize(text)),
        started_ms: time,
        ..ItemFact::default()
    }))
}

/// The tools by which a Claude Code agent spawns a sub-agent: `Task` (2.1.39), `Agent` (from 2.1.63;
/// stream-json's tool list still says `Task`), wire.md §6.
pub const SPAWN_TOOLS: &[&str] = &["Agent", "Task"];

/// What a call of the tool `name` does to other agents: Claude Code's spawning tools start one.
pub fn agent_op(name: &str) -> Option<AgentOp> {
    SPAWN_TOOLS.contains(&name).then_some(AgentOp::Spawn)
}

pub(super) fn tool_use<'l>(block: &Block<'_>, time: Option<i64>) -> Option<Fact<'l>> {
    let id = block.id.as_deref()?;
    let name = block.name.as_deref().unwrap_or("tool");
    let input = &block.input;
    let (kind, title) = match name {
        "Bash" => (ItemKind::Command, input.command.as_deref().unwrap_or_default().to_owned()),
        _ if agent_op(name) == Some(AgentOp::Spawn) => {
            (ItemKind::Collab, input.description.as_deref().unwrap_or_default().to_owned())
        }
        _ => {
            let arg = [&input.file_path, &input.pattern, &input.command, &input.url, &input.query, &input.description]
                .into_iter()
                .find_map(|a| a.as_deref());
            (ItemKind::DynamicTool, arg.map_or_else(|| name.to_owned(), |a| format!("{name} {a}")))
        }
    };
    let spawn = kind == ItemKind::Collab;
    let mut fact = ItemFact {
        id: Some(Cow::Owned(id.to_owned())),
        turn: Some(TurnRef::Latest),
        kind: Some(kind),
        status: Some(ItemStatus::InProgress),
        title: Some(sanitize(&title)),
        started_ms: time,
        ..ItemFact::default()
    };
    if spawn {
        // A spawn card in Claude Code's own words (`Agent`, `Task` before 2.1.63); the task's
        // description and agent type name its lanes.
        fact.op = Some(AgentOp::Spawn);
        fact.tool = Some(sanitize(name));
        fact.text = Some(sanitize(input.prompt.as_deref().unwrap_or_default()));
        fact.lane_nickname = Some(sanitize(&title)).filter(|t| !t.is_empty());
        fact.lane_role = input.subagent_type.as_deref().map(sanitize);
    }
    Some(Fact::Item(Box::new(fact)))
}

fn user<'l>(line: &'l ClaudeLine<'_>, out: &mut Lowered<'l>) {
    let time = out.time;
    let facts = &mut out.facts;
    let blocks = line.blocks();
    let results: Vec<&Block<'_>> = blocks.iter().filter(|b| b.kind.as_deref() == Some("tool_result")).collect();
    if results.is_empty() {
        // A prompt (not a tool's answer, not Claude Code's own meta text) opens a turn.
        if line.is_meta != Some(true) {
            let text: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
            if text.first().is_some_and(|t| outcome::is_interrupt_note(t)) {
                outcome::interrupted(line.interrupt_ends_session(), facts);
                return;
            }
            let uuid = line.uuid.as_deref().unwrap_or_default();
            let first = text.first().copied().unwrap_or_default();
            if line.is_compact_summary == Some(true) {
                super::local::summary(uuid, &text.join("\n"), time, facts);
                return;
            }
            if let Some(command) = super::local::command(first) {
                super::local::ran(uuid, &command, time, facts);
                return;
            }
            if let Some(output) = super::local::output(first) {
                super::local::answered(uuid, Some(output), time, facts);
                return;
            }
            facts.push(Fact::TurnStarted(TurnStarted {
                turn: Some(Cow::Borrowed(uuid)),
                own_root_turn: false,
                ends_previous: true,
            }));
            let shown = super::local::notification(first).unwrap_or_else(|| text.join("\n"));
            facts.push(block_item(uuid.to_owned(), ItemKind::UserMessage, &shown, time));
            facts.push(status(Status::Running));
        }
        return;
    }
    for block in results {
        let Some(tool_use) = block.tool_use_id.as_deref() else { continue };
        // A refused call never ran: declined, not a failure of the tool.
        let status = if line.permission_decision.as_ref().is_some_and(Decision::refused) {
            ItemStatus::Declined
        } else if line.tool_denial_kind.as_deref() == Some("user-rejected") {
            // The user stopped it (said no, or interrupted): the line cannot tell which; not a failure.
            ItemStatus::Interrupted
        } else if block.is_error == Some(true) {
            ItemStatus::Failed
        } else {
            ItemStatus::Completed
        };
        let text = sanitize(&block.content);
        facts.push(Fact::Item(Box::new(ItemFact {
            id: Some(Cow::Owned(tool_use.to_owned())),
            update_only: true,
            why: (status == ItemStatus::Failed).then(|| text.clone()),
            text: Some(text),
            text_rule: TextRule::Output,
            status: Some(status),
            completed_ms: time,
            ..ItemFact::default()
        })));
    }
    // A sub-agent's answer ends it.
    let result = line.agent_result.as_ref();
    if let Some(agent) = result.and_then(|r| r.agent_id.as_deref()) {
        // Background agents first answer with a launch acknowledgement, not their end.
        let end = match result.and_then(|r| r.status.as_deref()) {
            Some("completed") => Some(Status::Idle),
            Some("failed" | "error") => Some(Status::Failed),
            _ => None,
        };
        if let Some(end) = end {
            facts.push(Fact::Answered(Answered { child: Cow::Owned(agent.to_owned()), status: end }));
        }
    }
    facts.push(status(Status::Running));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Clean;
    use crate::wire::fact::{Fact, ItemKind, ItemStatus, Lowered, Parentage, Status, StatusChange, Subject};

    fn lowered(text: &str, check: impl FnOnce(&Lowered<'_>)) {
        let line = parse(text).expect("a transcript line");
        let mut out = Lowered { time: line.time(), raw: text, ..Lowered::default() };
        lower(&line, &mut out);
        check(&out);
    }

    fn facts<'a>(l: &'a Lowered<'_>) -> Vec<&'a Fact<'a>> {
        l.facts.iter().collect()
    }

    /// 2.1.332 writes a response's real stop reason on its lines: `end_turn` is the turn's last
    /// answer and ends it; `tool_use` (and 2.1.39's `null`) leaves it open.
    #[test]
    fn an_end_turn_answer_ends_the_turn() {
        let last = r#"{"type":"assistant","sessionId":"s","isSidechain":false,"uuid":"u","requestId":"r","message":{"id":"m","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}}"#;
        let ends = |l: &Lowered<'_>| {
            facts(l).iter().any(
                |f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(crate::wire::fact::TurnOutcome::Completed)),
            )
        };
        lowered(last, |l| assert!(ends(l), "{:?}", l.facts));
        let calls = last.replace(r#""stop_reason":"end_turn""#, r#""stop_reason":"tool_use""#);
        lowered(&calls, |l| assert!(!ends(l)));
        let old = last.replace(r#""stop_reason":"end_turn""#, r#""stop_reason":null"#);
        lowered(&old, |l| assert!(!ends(l)));
    }

    /// 2.1.332 writes each settings.json hook run as an `attachment` line: a success is no fact, a
    /// failure (exit 1: `hook_non_blocking_error`) an item of its own, and the call it ran after
    /// is not touched.
    #[test]
    fn a_failed_hook_run_is_a_failed_item_and_a_successful_one_is_no_fact() {
        let failed = r#"{"parentUuid":"p","isSidechain":false,"attachment":{"type":"hook_non_blocking_error","hookName":"PostToolUse:Bash","toolUseID":"toolu_1","hookEvent":"PostToolUse","stderr":"Failed with non-blocking status code: post-failed","stdout":"","exitCode":1,"command":"echo post-failed >&2; exit 1","durationMs":1},"type":"attachment","uuid":"a1","timestamp":"2026-12-01T20:50:01.000Z","sessionId":"s"}"#;
        lowered(failed, |l| {
            let items: Vec<_> =
                facts(l).into_iter().filter_map(|f| if let Fact::Item(i) = f { Some(i) } else { None }).collect();
            assert_eq!(items.len(), 1, "{:?}", l.facts);
            assert_eq!(items[0].id.as_deref(), Some("hook:a1"));
            assert_eq!(items[0].status, Some(ItemStatus::Failed));
            assert!(!items[0].update_only, "its own item, not the call's");
            assert_eq!(items[0].title.as_ref().map(Clean::as_str), Some("hook PostToolUse:Bash failed (exit 1)"));
        });
        let success =
            failed.replace("hook_non_blocking_error", "hook_success").replace(r#""exitCode":1"#, r#""exitCode":0"#);
        lowered(&success, |l| assert!(!facts(l).iter().any(|f| matches!(f, Fact::Item(_)))));
        let context = r#"{"parentUuid":"p","attachment":{"type":"date","date":"2026-12-01"},"type":"attachment","uuid":"a2","sessionId":"s"}"#;
        lowered(context, |l| assert!(!facts(l).iter().any(|f| matches!(f, Fact::Item(_)))));
    }

    /// 2.1.332 writes every tool result's permission check on its line; a refused call (not in the
    /// working directory, a Bash rule missing, the plan mode) never ran.
    #[test]
    fn a_refused_call_is_declined_and_an_accepted_one_is_the_tool_s_own() {
        let refused = r#"{"type":"user","sessionId":"s","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to write to /tmp/x.txt, but you haven't granted it yet.","is_error":true,"tool_use_id":"toolu_w"}]},"toolUseResult":"Error: Claude requested permissions to write to /tmp/x.txt, but you haven't granted it yet.","toolDenialKind":"user-rejected","permissionDecision":{"decision":"reject","source":"config","reasonCode":"workingDir"}}"#;
        lowered(refused, |l| {
            assert!(matches!(facts(l)[1], Fact::Item(i) if i.update_only && i.status == Some(ItemStatus::Declined)));
        });
        let failed = refused.replace(r#""decision":"reject""#, r#""decision":"accept""#);
        let failed = failed.replace(r#""toolDenialKind":"user-rejected","#, "");
        lowered(&failed, |l| assert!(matches!(facts(l)[1], Fact::Item(i) if i.status == Some(ItemStatus::Failed))));
        let odd = refused.replace(r#"{"decision":"reject","source":"config","reasonCode":"workingDir"}"#, "7");
        let odd = odd.replace(r#""toolDenialKind":"user-rejected","#, "");
        lowered(&odd, |l| assert!(matches!(facts(l)[1], Fact::Item(i) if i.status == Some(ItemStatus::Failed))));
        // "No" at the interactive prompt, or Esc / SIGINT while the call waits or runs: written alike.
        let stopped = r#"{"type":"user","sessionId":"s","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","content":"The user doesn't want to proceed with this tool use.","is_error":true,"tool_use_id":"toolu_b"}]},"toolUseResult":"User rejected tool use","toolDenialKind":"user-rejected"}"#;
        lowered(stopped, |l| {
            assert!(matches!(facts(l)[1], Fact::Item(i) if i.status == Some(ItemStatus::Interrupted)));
        });
    }

    /// Esc in the interactive CLI (2.1.332, `entrypoint: cli`) stops the session's turn; the CLI waits
    /// for the next prompt and its background agents go on (their files keep growing, and the CLI
    /// says "Waiting for 2 background agents to finish"). `-p` (`sdk-cli`) exits on SIGINT: nothing of
    /// it runs any more.
    #[test]
    fn an_interactive_interrupt_ends_the_turn_and_a_print_mode_one_the_session() {
        let note = |entry: &str| {
            format!(
                r#"{{"type":"user","sessionId":"s","uuid":"u","isSidechain":false,"entrypoint":"{entry}","message":{{"role":"user","content":[{{"type":"text","text":"[Request interrupted by user]"}}]}}}}"#
            )
        };
        let ends = |l: &Lowered<'_>| facts(l).iter().any(|f| matches!(f, Fact::SessionEnded(e) if e.interrupted));
        let turn = |l: &Lowered<'_>| {
            facts(l).iter().any(
                |f| matches!(f, Fact::TurnEnded(t) if t.outcome == Some(crate::wire::fact::TurnOutcome::Interrupted)),
            )
        };
        lowered(&note("cli"), |l| {
            assert!(turn(l));
            assert!(!ends(l), "the interactive session goes on");
        });
        lowered(&note("sdk-cli"), |l| {
            assert!(turn(l));
            assert!(ends(l), "-p exits on SIGINT");
        });
    }

    /// `/compact` typed in the interactive CLI (2.1.332), in the order the file has them: the summary,
    /// the command, its output. None is a prompt; the session ends idle, not running for good.
    #[test]
    fn a_local_command_is_a_turn_of_its_own_that_its_output_ends() {
        let running = |l: &Lowered<'_>| {
            facts(l).iter().any(|f| matches!(f, Fact::Status(s) if s.change == StatusChange::Set(Status::Running)))
        };
        let summary = r#"{"type":"user","sessionId":"s","uuid":"u1","isSidechain":false,"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued from a previous conversation that ran out of context."}}"#;
        lowered(summary, |l| {
            assert!(!running(l));
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Item(i) if i.kind == Some(ItemKind::Compaction))));
            assert!(!facts(l).iter().any(|f| matches!(f, Fact::TurnStarted(_))), "no turn of its own");
        });
        let command = r#"{"type":"user","sessionId":"s","uuid":"u2","isSidechain":false,"rowSource":"local","message":{"role":"user","content":"<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>"}}"#;
        lowered(command, |l| {
            assert!(!running(l), "nothing asks the model");
            assert!(facts(l).iter().any(|f| matches!(f, Fact::TurnStarted(_))));
            assert!(
                facts(l)
                    .iter()
                    .any(|f| matches!(f, Fact::Item(i) if i.text.as_ref().map(Clean::as_str) == Some("/compact")))
            );
        });
        let output = r#"{"type":"user","sessionId":"s","uuid":"u3","isSidechain":false,"message":{"role":"user","content":"<local-command-stdout>\u001b[2mCompacted (ctrl+o to see full summary)\u001b[22m</local-command-stdout>"}}"#;
        lowered(output, |l| {
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Status(s) if s.change == StatusChange::Idle)));
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Item(i) if i.text.as_ref().map(Clean::as_str) == Some("Compacted (ctrl+o to see full summary)"))));
        });
        // `/clear` leaves its output as the new session's `system` line.
        let clear = r#"{"type":"system","subtype":"local_command","sessionId":"s","uuid":"u4","isSidechain":false,"content":"<local-command-stdout></local-command-stdout>","commandRun":{"command":"clear","args":""}}"#;
        lowered(clear, |l| {
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Status(s) if s.change == StatusChange::Idle)));
        });
    }

    #[test]
    fn a_session_line_is_the_root_s_own_and_states_its_response() {
        let main = r#"{"type":"assistant","sessionId":"s","isSidechain":false,"uuid":"u","requestId":"r","timestamp":"2026-02-12T16:02:27.718Z","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"cache_read_input_tokens":10,"output_tokens":2}}}"#;
        lowered(main, |l| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            assert_eq!(l.time, Some(1_770_912_147_718));
            let f = facts(l);
            assert!(matches!(f[0], Fact::Thread(t) if t.parentage == Parentage::Root && t.thread == "s"));
            assert!(matches!(f[1], Fact::Model(m) if m.model.as_str() == "claude-opus-4-6"));
            let Fact::Usage(crate::wire::fact::Usage::Response(r)) = f[2] else { panic!("{:?}", f[2]) };
            assert_eq!((&*r.key.0, &*r.key.1), ("m", "r"));
            assert_eq!(r.tokens.input_tokens, Some(13), "input includes the cache reads");
            assert_eq!(r.tokens.cached_input_tokens, Some(10));
            assert!(matches!(f[3], Fact::Item(i) if i.text.as_ref().map(Clean::as_str) == Some("hi")));
            // One block of a response whose stop reason is not written: more blocks may follow.
            assert!(matches!(f[4], Fact::Status(s) if s.change == StatusChange::Set(Status::Running)));
        });
        // The turn's closing lines end it.
        for subtype in ["stop_hook_summary", "turn_duration"] {
            let closing = format!(
                r#"{{"type":"system","subtype":"{subtype}","sessionId":"s","uuid":"u5","isSidechain":false,"timestamp":"2026-02-12T16:08:07.176Z"}}"#
            );
            lowered(&closing, |l| {
                let f = facts(l);
                assert!(f.iter().any(|f| matches!(f, Fact::Status(s) if s.change == StatusChange::Set(Status::Idle))));
                assert!(f.iter().any(|f| matches!(f, Fact::TurnEnded(e) if e.outcome == Some(TurnOutcome::Completed))));
            });
        }
    }

    #[test]
    fn a_forks_copied_history_is_shown_but_spent_by_the_session_it_came_from() {
        let copied = r#"{"type":"assistant","sessionId":"fork","uuid":"u","requestId":"r","requestSessionId":"orig","message":{"id":"m","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":2}}}"#;
        lowered(copied, |l| {
            assert_eq!(l.subject, Subject::Thread("fork".into()));
            assert!(!facts(l).iter().any(|f| matches!(f, Fact::Usage(_))), "not the fork's spend");
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Item(_))), "still the fork's history");
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Copied)), "the fork's copy");
        });
        let own = copied.replace(r#""requestSessionId":"orig""#, r#""requestSessionId":"fork""#);
        lowered(&own, |l| {
            assert!(facts(l).iter().any(|f| matches!(f, Fact::Usage(_))));
            assert!(!facts(l).iter().any(|f| matches!(f, Fact::Copied | Fact::CopiedCall(_))));
        });
        // A copied spawning call: its result announces the original's sub-agent, not the fork's.
        let call = copied.replace(
            r#"{"type":"text","text":"hi"}"#,
            r#"{"type":"tool_use","id":"toolu_9","name":"Agent","input":{"description":"d","prompt":"p"}}"#,
        );
        lowered(&call, |l| assert!(facts(l).iter().any(|f| matches!(f, Fact::CopiedCall(c) if c == "toolu_9"))));
    }

    #[test]
    fn sub_agent_and_compaction_lines() {
        let sub = r#"{"type":"user","sessionId":"s","agentId":"a1","isSidechain":true,"uuid":"v"}"#;
        lowered(sub, |l| {
            assert_eq!(l.subject, Subject::Thread("a1".into()));
            assert!(!l.facts.iter().any(|f| matches!(f, Fact::Thread(_))), "a sub-agent's line marks no root");
        });
        // A compaction side-chain is the session's own work.
        let compact = r#"{"type":"user","sessionId":"s","agentId":"acompact-1","isSidechain":true,"uuid":"w"}"#;
        lowered(compact, |l| {
            assert_eq!(l.subject, Subject::Thread("s".into()));
            assert!(matches!(facts(l)[0], Fact::Thread(t) if t.parentage == Parentage::Root));
        });
        let snapshot = r#"{"type":"file-history-snapshot","messageId":"x","snapshot":{}}"#;
        lowered(snapshot, |l| assert_eq!(l.subject, Subject::Global));
    }

    #[test]
    fn announced_agents() {
        let progress = r#"{"type":"progress","sessionId":"s","uuid":"u","parentToolUseID":"toolu_1","data":{"type":"agent_progress","agentId":"a1","message":{}}}"#;
        lowered(progress, |l| {
            let spawn = l.facts.iter().find_map(|f| if let Fact::Spawn(s) = f { Some(s) } else { None });
            let spawn = spawn.expect("a spawn");
            assert_eq!((&*spawn.child, spawn.card.as_deref()), ("a1", Some("toolu_1")));
        });
        let result = r#"{"type":"user","sessionId":"s","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"done"}]},"toolUseResult":{"status":"completed","agentId":"a2"}}"#;
        lowered(result, |l| {
            let f = facts(l);
            assert!(matches!(f[1], Fact::Item(i) if i.update_only && i.status == Some(ItemStatus::Completed)));
            assert!(matches!(f[2], Fact::Answered(a) if a.child == "a2" && a.status == Status::Idle));
            assert!(
                matches!(f.last(), Some(Fact::Spawn(s)) if s.child == "a2" && s.card.as_deref() == Some("toolu_2"))
            );
        });
        let bash = r#"{"type":"progress","sessionId":"s","data":{"type":"bash_progress"}}"#;
        lowered(bash, |l| assert!(!l.facts.iter().any(|f| matches!(f, Fact::Spawn(_)))));
    }

    #[test]
    fn a_task_names_its_lanes() {
        let task = r#"{"type":"assistant","sessionId":"s","uuid":"u","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"Find \u001b[31mit","prompt":"look","subagent_type":"Explore"}}]}}"#;
        lowered(task, |l| {
            let item = l.facts.iter().find_map(|f| if let Fact::Item(i) = f { Some(i) } else { None }).unwrap();
            assert_eq!(item.op, Some(crate::wire::fact::AgentOp::Spawn));
            assert_eq!(item.tool.as_ref().map(Clean::as_str), Some("Task"), "in Claude Code's words");
            assert_eq!(item.lane_nickname.as_ref().map(Clean::as_str), Some("Find it"), "sanitised");
            assert_eq!(item.lane_role.as_ref().map(Clean::as_str), Some("Explore"));
            assert_eq!(item.text.as_ref().map(Clean::as_str), Some("look"));
        });
    }
}
