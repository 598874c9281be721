//! Every decoded line to the one vocabulary of [`super::fact`], by the module of its format.

use super::fact::{Format, Lowered};
use super::malformed::{Malformed, Shape};
use super::origin::Origin;
use super::record::{Decoded, Line};
use super::{claude, codex, exec, opencode, opencode_run, otlp, rollout};

/// The latest time a line may claim (9999-12-31T23:59:59.999Z); earlier than 1970 is 1970. A
/// line's time orders pending windows: a wild one must not hold them open (or shut) for ever.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// What lowering remembers between records of one input stream: the format-specific context one
/// line does not carry (a rollout file's thread, named once in its first line).
#[derive(Debug, Default)]
pub struct Stream {
    rollout: rollout::Follow,
    claude: claude::partial::Partials,
    exec: exec::Follow,
}

/// What lowering's own bounds forgot (shown with the other bounds: `d`, `stats --json`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    /// Streamed responses forgotten past [`claude::partial::OPEN_RESPONSES`].
    pub responses: u64,
    /// Sub-agents' spawning tool uses forgotten past [`claude::partial::TASKS`].
    pub tasks: u64,
}

impl Stream {
    pub fn forgotten(&self) -> Forgotten {
        Forgotten { responses: self.claude.forgotten, tasks: self.claude.forgotten_tasks }
    }
}

/// Lowers one decoded line from `origin`. Lowering the same line from the same origin again gives
/// the same facts, whatever came between, except where the format says a line belongs to the
/// thread an earlier line named (rollouts: a caller replaying a line knows its thread already) or
/// finishes what earlier lines streamed (Claude stream-json `--include-partial-messages`).
pub fn lower<'l>(line: &'l Decoded<'_>, origin: &Origin, stream: &mut Stream) -> Lowered<'l> {
    let mut out = Lowered::default();
    lower_into(line, origin, stream, &mut out);
    out
}

/// [`lower`] into a slot the caller owns, which starts as [`Lowered::default`]: lowered in place,
/// the some 230 bytes of a lowered line are not copied out once more on every line.
pub fn lower_into<'l>(line: &'l Decoded<'_>, origin: &Origin, stream: &mut Stream, out: &mut Lowered<'l>) {
    out.time = line.time().map(|t| t.clamp(0, MAX_TIME_MS));
    out.raw = line.raw;
    match &line.line {
        Line::AppServer { dir, msg } => codex::lower(msg, *dir, out),
        Line::Marker => out.format = Format::Marker,
        Line::ClaudeTranscript(l) => claude::lower(l, out),
        Line::ClaudeStream(l) => claude::stream::lower(l, &mut stream.claude, out),
        Line::CodexRollout(l) => rollout::lower(l, origin, &mut stream.rollout, out),
        Line::CodexExec(l) => exec::lower(l, origin, &mut stream.exec, out),
        Line::OpenCode(l) => opencode::lower(l, out),
        Line::OpenCodeRun(l) => opencode_run::lower(l, out),
        Line::Otlp(l) => otlp::lower(l, out),
    }
    if let Some(act) = line.act {
        acted(act, out);
    }
}

/// An envelope's `act` (recording.md): what swarmtop asked of the session, for the tree to say why an
/// agent stopped, or (`kind` `deny`) which of its calls a guard refused. An `act` that does not
/// name its target says nothing.
fn acted(act: &str, out: &mut Lowered<'_>) {
    #[derive(serde::Deserialize)]
    struct Act {
        target: Option<String>,
        by: Option<String>,
        reason: Option<String>,
        kind: Option<String>,
        call: Option<String>,
    }
    let Ok(Act { target: Some(target), by, reason, kind, call }) = serde_json::from_str::<Act>(act) else { return };
    let who = by.as_deref().unwrap_or("swarmtop");
    let why = match reason {
        Some(r) => format!("{who}: {r}"),
        None => who.to_owned(),
    };
    out.facts.push(super::fact::Fact::Acted(super::fact::Acted {
        target: target.into(),
        why: super::sanitize(&why),
        refused: kind.as_deref() == Some("deny"),
        call: call.map(|c| super::sanitize_line(&c).to_string().into()),
    }));
}

/// A record of a file that is one object describing a thread rather than a stream of lines (a
/// Claude Code sub-agent's `agent-<id>.meta.json`, wire.md §6), lowered by what its origin says
/// the file is. `None` when the origin is not such a file.
pub fn lower_sidecar<'l>(record: &'l [u8], origin: &Origin) -> Option<Result<Lowered<'l>, Malformed>> {
    if !origin.info().is_some_and(|i| i.sidecar) {
        return None;
    }
    let Ok(text) = std::str::from_utf8(record) else { return Some(Err(Malformed::NotUtf8)) };
    let ahead = origin.info().is_some_and(|i| i.ahead);
    let mut out = Lowered { format: Format::ClaudeTranscript, raw: text, ahead, ..Lowered::default() };
    Some(match claude::sidecar::lower(text, origin, &mut out) {
        Some(()) => Ok(out),
        None => Err(Malformed::NotAMessage(Shape::ClaudeTranscript)),
    })
}
