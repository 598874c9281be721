//! What live sources (attach, listen, stdin) hand to their consumer, through a bounded channel.
//! A consumer (the headless stats printer, the monitor screen) owns the pipeline and applies
//! these events in order; the source never touches the pipeline.

use std::path::PathBuf;
use std::time::Duration;

use crate::wire::Clean;

/// Capacity of the channel between a live source and its consumer, in events. Each event holds
/// what one `read` brought, so this bounds memory to a few megabytes while letting the source
/// run ahead of a consumer that is drawing a frame.
pub const CHANNEL_EVENTS: usize = 64;

/// Complete records (recording header, envelopes, raw lines), each ending in `\n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Records(Vec<u8>);

impl Records {
    /// `bytes` must be empty or end in `\n`.
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        debug_assert!(bytes.last().is_none_or(|&b| b == b'\n'));
        Self(bytes)
    }

    /// Each record without its `\n`.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let body = self.0.strip_suffix(b"\n").unwrap_or(&self.0);
        body.split(|&b| b == b'\n').filter(move |_| !self.0.is_empty())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why what was received so far must be thrown away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// The tee dropped us for falling behind; records from `dropped_from_ms` on were not sent.
    Lagged { dropped_from_ms: i64 },
    /// The connection broke and has been made again.
    Reconnected,
}

/// How a live stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The proxied command exited with this status (the tee's `end` marker).
    Exited(i32),
    /// The producer closed the stream without an end marker: for a tee, what was received is
    /// only part of its session.
    Closed,
    /// The source could not be read at all (e.g. nothing listens on the socket).
    Failed(Clean),
}

// Not `Eq`: a machine-wide snapshot holds CPU shares.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Connected to a tee; its history (from the header on) follows.
    Connected {
        path: PathBuf,
    },
    /// Drop every record received so far: the stream starts again from its header, on a new
    /// connection (a `Connected` follows). The router is deterministic, so rebuilding from the
    /// history gives the same model.
    Reset(ResetReason),
    Records(Records),
    /// A record longer than the line bound: its length and first bytes only. It counts as one
    /// malformed line (`Pipeline::push_oversized`), as a line over the bound does in `stats`.
    Oversized {
        len: usize,
        head: Vec<u8>,
    },
    /// History is over; what follows happens now.
    Live,
    /// The connection is down; the next attempt is in `retry_in`.
    Disconnected {
        retry_in: Duration,
        reason: Clean,
    },
    /// Something the user should know about the source that is not a record (a producer refused
    /// for a bound), on one line.
    Notice(Clean),
    /// The stream is over for good; no event follows.
    Ended(End),
    /// Where the records that follow come from, for sources that interleave several files.
    Origin(crate::wire::Origin),
    /// The sessions a machine-wide source follows, and their liveness.
    Sessions(Box<super::seen::Snapshot>),
    /// The process that ran this session (its root thread's id) is gone, seen exiting or aged out
    /// with none: nothing of it runs any more, whatever its files last said (a SIGKILL writes no
    /// end). Sent once per stop, after the snapshot that says so.
    /// `guessed_at_ms`: no process was seen exiting, none seen running it (unix ms of the guess):
    /// a line of the session stamped after it proves it running after all.
    Stopped {
        id: String,
        guessed_at_ms: Option<i64>,
    },
    /// A session sent as [`Event::Stopped`] runs after all: a process runs it again (its own,
    /// judged gone a moment too soon, or one that took it up).
    Resumed(String),
    /// A followed replay's file changed (`--follow`, see [`super::follow`]).
    Followed(Change),
}

/// What happened to a followed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Whole lines were appended: `bytes` start at byte `at` of `file`.
    Grew { file: PathBuf, at: u64, bytes: Vec<u8> },
    /// The file is now shorter than what was read (replaced, truncated): it is read again from
    /// its start.
    Restarted { file: PathBuf },
    /// A new file appeared in a followed directory; its lines follow as `Grew` from byte 0.
    Appeared { file: PathBuf },
    /// A sidecar was rewritten: read it whole again.
    Rewritten { file: PathBuf },
    /// A line of `file` from byte `at` was longer than the bound on one line: only its length
    /// (without its newline) and its head were kept; reading goes on after it.
    TooLong { file: PathBuf, at: u64, len: usize, head: Vec<u8> },
    /// Act records (`source::acts`, whole lines) of what was done to the replayed sessions since
    /// it started (the run store keeps them; the files may never say): applied as they come.
    Acts { records: Vec<u8> },
}
