//! Why a record is not a line swarmtop can read (routing.md §3), and what it looked like.

use std::fmt;

use super::fact::Format;

/// Notes the top-level keys that tell the formats apart (wire.md §1), a bit each.
#[derive(Default, Clone, Copy)]
pub(crate) struct ShapeKeys(u8);

const PAYLOAD: u8 = 1;
const TYPE: u8 = 1 << 1;
/// `uuid`, `parentUuid`, `leafUuid`, `messageId` or `sessionId`: a Claude Code transcript's.
const TRANSCRIPT: u8 = 1 << 2;
const OTLP: u8 = 1 << 3;
/// `session_id`: stream-json (`claude -p --output-format stream-json`) spells it in snake case;
/// an interactive 2.1.332 transcript line can carry both (the snake one naming the session before
/// a `/clear`), and is a transcript line.
const SNAKE_SESSION: u8 = 1 << 4;
/// `sessionId` in camel case: only a transcript spells it so.
const CAMEL_SESSION: u8 = 1 << 5;
const OPENCODE: u8 = 1 << 6;

impl ShapeKeys {
    pub fn note(&mut self, key: &[u8]) {
        self.0 |= match key {
            b"payload" => PAYLOAD,
            b"type" => TYPE,
            b"opencode" => OPENCODE,
            b"sessionId" => TRANSCRIPT | CAMEL_SESSION,
            b"uuid" | b"parentUuid" | b"leafUuid" | b"messageId" => TRANSCRIPT,
            b"otlp" => OTLP,
            b"session_id" => SNAKE_SESSION,
            _ => 0,
        };
    }

    fn has(self, keys: u8) -> bool {
        self.0 & keys == keys
    }

    pub fn shape(self) -> Shape {
        if self.has(OTLP) {
            Shape::Otlp
        } else if self.has(OPENCODE) {
            Shape::OpenCode
        } else if !self.has(TYPE) {
            Shape::Other
        } else if self.has(PAYLOAD) {
            Shape::CodexRollout
        } else if self.has(SNAKE_SESSION) && !self.has(CAMEL_SESSION) {
            Shape::ClaudeStream
        } else if self.has(TRANSCRIPT) {
            Shape::ClaudeTranscript
        } else {
            Shape::Typed
        }
    }
}

/// What kind of non-Codex record a malformed line looked like (for `input.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    CodexRollout,
    ClaudeTranscript,
    ClaudeStream,
    /// A record of OpenCode's store or event stream (`{"opencode": …}`).
    OpenCode,
    /// A record of `listen --otlp` (`{"otlp": …}`).
    Otlp,
    /// A line with a `type` and none of the other formats' keys: `codex exec --json`, or
    /// `opencode run --format json`.
    Typed,
    #[default]
    Other,
}

impl Shape {
    /// The format a line of this shape that could not be read says its input is in: a rollout or
    /// Claude Code line that did not read is still a line of that format (`input.format`).
    pub fn format(self) -> Option<Format> {
        match self {
            Self::CodexRollout => Some(Format::CodexRollout),
            Self::ClaudeTranscript => Some(Format::ClaudeTranscript),
            Self::ClaudeStream => Some(Format::ClaudeStream),
            Self::OpenCode | Self::Otlp | Self::Typed | Self::Other => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    NotUtf8,
    NotJson(String),
    /// JSON, but a field the reducer reads has the wrong type (`threadId: 7`, `willRetry: "yes"`).
    WrongType(String),
    /// A JSON object, but neither a Codex message, an envelope nor a swarmtop marker.
    NotAMessage(Shape),
    /// An envelope that kept bytes which were not JSON (`rawB64`).
    RawBytes,
    TooLong(usize),
}

impl Malformed {
    /// The format the record's shape says its input is in, when it says one.
    pub fn format(&self) -> Option<Format> {
        match self {
            Self::NotAMessage(shape) => shape.format(),
            _ => None,
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("not UTF-8"),
            Self::NotJson(e) => write!(f, "not JSON: {e}"),
            Self::WrongType(e) => write!(f, "wrong type: {e}"),
            Self::NotAMessage(Shape::CodexRollout) => f.write_str("a Codex rollout line, not an app-server message"),
            Self::NotAMessage(Shape::ClaudeTranscript) => {
                f.write_str("a Claude Code transcript line, not an app-server message")
            }
            Self::NotAMessage(Shape::Otlp) => f.write_str("an OTLP record swarmtop could not read"),
            Self::NotAMessage(Shape::ClaudeStream) => {
                f.write_str("a Claude Code stream-json line, not an app-server message")
            }
            Self::NotAMessage(Shape::OpenCode) => f.write_str("an OpenCode record swarmtop cannot read"),
            Self::NotAMessage(Shape::Typed) => f.write_str(
                "a typed line of no format swarmtop reads (not `codex exec --json` or `opencode run --format json`)",
            ),
            Self::NotAMessage(Shape::Other) => f.write_str("no method, id or swarmtop member"),
            Self::RawBytes => f.write_str("recorded bytes that were not JSON (rawB64)"),
            Self::TooLong(n) => write!(f, "line of {n} bytes is over the length bound"),
        }
    }
}
