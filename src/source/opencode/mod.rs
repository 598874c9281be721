//! OpenCode as an input (wire.md §9): its SQLite store and `opencode serve`'s event stream, handed
//! on as records, one JSON line each, for `wire::opencode` to lower ([`records`]).
//!
//! One job per module: the store file ([`store`]), its values read tolerantly ([`cells`]), tables
//! read in pages ([`pages`]), the store as it is now ([`snapshot`]), a batch of root sessions at a time ([`batches`]) and its root sessions for
//! discovery ([`roots`]), the event log followed ([`follower`]), whether a process still writes the
//! store ([`writer`]); the server's HTTP ([`http`]), its event stream ([`serve`], read by [`crate::source::sse`]) and what
//! it holds ([`resync`]). Records cross threads through a queue bounded in bytes ([`channel`]).

mod batches;
mod cells;
mod channel;
mod follower;
mod http;
mod pages;
mod records;
mod resync;
mod roots;
mod serve;
mod snapshot;
mod store;
mod writer;

pub use batches::{BATCH_ROOTS, ReadAhead};
pub use cells::MAX_VALUE;
pub use channel::{ChannelReader, MAX_QUEUED};
pub use follower::{Follower, MAX_POLL_BYTES, POLL, follow, follow_reader};
pub use http::{HEAD_TIMEOUT, MAX_HEAD, MAX_HEADER_LINE, SSE_SILENCE, probe, server_of};
pub use pages::{PAGE_BYTES, PAGE_ROWS, PageBounds};
pub use resync::{MAX_RESPONSE, MAX_RESYNC_SESSIONS, session_status};
pub use roots::{Root, roots};
pub use serve::{BACKOFF_FIRST, BACKOFF_MAX, Link, STEADY, Serve, link_events, server_reader, sse_records};
pub use snapshot::{Snapshot, SnapshotReader, snapshot, snapshot_of, snapshot_reader, snapshot_reader_with};
pub use store::{SQLITE_MAGIC, STORE_NAME, is_sqlite, open, store_at};
pub use writer::{Writer, is_opencode, writer};

#[cfg(test)]
mod tests;
