//! Every decoded line to the one vocabulary of [`super::fact`], by the module of its format.

use super::fact::{Lowered, Origin};
use super::record::{Line, Other};
use super::{claude, codex, rollout};

/// The latest time a line may claim (9999-12-31T23:59:59.999Z); earlier than 1970 is 1970. A
/// line's time orders pending windows: a wild one must not hold them open (or shut) for ever.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// What lowering remembers between records of one input stream: the format-specific context one
/// line does not carry (a rollout file's thread, named once in its first line).
#[derive(Debug, Default)]
pub struct Stream {
    rollout: rollout::Follow,
}

/// Lowers one decoded line from `origin`. Lowering the same line from the same origin again gives
/// the same facts, whatever came between, except where the format says a line belongs to the
/// thread an earlier line named (rollouts): a caller replaying a line knows its thread already.
pub fn lower<'l>(line: &'l Line<'_>, origin: &Origin, stream: &mut Stream) -> Lowered<'l> {
    let time = line.time().map(|t| t.clamp(0, MAX_TIME_MS));
    let mut out = Lowered { time, raw: line.raw, ..Lowered::default() };
    match &line.other {
        Some(Other::Claude(l)) => claude::lower(l, &mut out),
        Some(Other::Rollout(l)) => rollout::lower(l, origin, &mut stream.rollout, &mut out),
        None => codex::lower(&line.msg, line.dir, &mut out),
    }
    out
}
