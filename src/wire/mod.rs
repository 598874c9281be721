//! Bytes to facts. A record is decoded into a [`Line`] of its format (borrowing from the input
//! buffer; unknown shapes are data, not errors, wire.md §1), then lowered into the one vocabulary
//! of [`fact`] that router and model read. Text that may reach a screen leaves this stage only
//! as [`Clean`] or [`CleanStr`].
//!
//! One module per format: [`codex`] (app-server messages and recording envelopes), [`rollout`]
//! (Codex rollout files), [`claude`] (Claude Code transcripts), [`opencode`] (OpenCode's store
//! and event stream), [`otlp`] (OpenTelemetry spans and logs, as `listen --otlp` receives them).
//! [`record`] tells them apart per
//! line; [`lower()`] sends each line to its format's lowering.

pub mod claude;
pub mod codex;
pub mod exec;
pub mod fact;
pub mod json;
mod lower;
mod malformed;
pub mod opencode;
pub mod opencode_run;
mod origin;
pub mod otlp;
pub mod record;
pub mod rollout;
mod sanitize;
mod time;

pub use claude::Reading;
pub use codex::methods;
pub use fact::{Fact, Lowered, Subject, Weight};
pub use json::{Str, parse_raw};
pub use lower::{Forgotten, Stream, lower, lower_into, lower_sidecar};
pub use malformed::{Malformed, Shape};
pub use origin::{Origin, OriginInfo};
pub use record::{Decoded, Line, decode, decode_reading, stream_time};
pub use sanitize::{Clean, CleanStr, sanitize, sanitize_line};
pub use time::iso8601_ms;
