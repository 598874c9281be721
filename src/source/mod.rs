//! Sources: bytes in, records out, with the time they arrived. The first stage: it knows the
//! recording format (`recording.md`) but nothing of what the lines mean.
//!
//! - [`recording`]: the recording writer (header, envelopes, files).
//! - [`tee`]: the stdio proxy that records and publishes a session; [`hub`] serves its monitors.
//! - [`attach`]: a monitor's connection to a tee, as [`live::Event`]s.
//! - [`inbound`]: one-way live sources (`listen` producers, a piped stdin).
//! - [`socket`]: where the live sockets are, and which of them are running.

pub mod attach;
pub mod hub;
pub mod inbound;
pub mod live;
pub mod recording;
pub mod socket;
pub mod tee;
