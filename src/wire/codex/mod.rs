//! Codex app-server traffic (wire.md §2–§5): JSON-RPC messages, bare or in recording envelopes.
//! `message` holds what a line decodes to (the fast `scan` path, serde behind it), `lower` what
//! it says in the vocabulary of [`crate::wire::fact`].

mod lower;
pub mod message;
pub mod methods;
mod scan;

pub use lower::lower;
pub(crate) use scan::parse_top;
