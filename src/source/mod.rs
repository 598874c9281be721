//! Where bytes come from: files, directories, `.gz`, stdin, live sockets and the tee proxy.
//! Sources split bytes into records and know nothing of what the records mean; they know the
//! recording format (`recording.md`) only to write and unwrap its framing.
//!
//! - [`files`]: recorded inputs; [`merge`]: several of them as one stream, by stream time;
//!   [`recorded`]: a replay's records, read back from their files (in the merge's order);
//!   [`replay`]: their pacing; [`follow`]: their files' growth. What a file's place tells of its
//!   records travels with them as a [`crate::wire::Origin`].
//! - [`recording`]: the recording writer (header, envelopes, files), and which lines it can embed.
//! - [`tee`]: the stdio proxy that records and publishes a session; [`hub`] serves its monitors;
//!   [`inject`] writes the acts its monitors ask for (an interrupt) into the session.
//! - [`attach`]: a monitor's connection to a tee, as [`live::Event`]s.
//! - [`inbound`]: one-way live sources (`listen` producers, a piped stdin).
//! - [`socket`]: where the live sockets are, and which of them are running.
//! - [`opencode`]: OpenCode's SQLite store, read and followed as records; [`batches`]: a store of
//!   many sessions read a batch of sessions at a time.
//! - [`acts`]: swarmtop's own log of the acts it did outside a tee, handed on beside a server's records.
//! - [`agents`]: the agent registry: where each agent's sessions live, how its files are laid
//!   out, how its processes are recognised, how its sessions are followed and its spend reported.
//! - [`census`]: what runs on this machine now, from one walk of `/proc` a tick ([`proc`]), for
//!   `ps` and the machine view alike; [`seen`]: its rows.
//! - [`regular`]: opening what must be a regular file without ever blocking on a FIFO or device.
//! - [`watch`]: file-change notifications (`notify`, with its polling fallback) for followers.
//! - [`otlp`]: the OTLP/HTTP receiver of `listen --otlp`.
//! - [`remote`]: another machine's machine view, from its `swarmtop serve` (`--server URL`).

pub mod acts;
pub mod agents;
pub mod attach;
pub mod batches;
pub mod census;
pub mod compact;
pub mod files;
pub mod follow;
pub mod hub;
pub mod inbound;
pub mod inject;
pub mod live;
pub mod merge;
pub mod opencode;
pub mod otlp;
pub mod proc;
pub mod recorded;
pub mod recording;
pub mod regular;
pub mod remote;
pub mod replay;
pub mod seen;
pub mod socket;
pub mod sse;
pub mod tee;
pub mod watch;
