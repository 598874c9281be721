//! What the runtime knows about its feed, handed to every frame: the source, its state, the
//! replay position, the clock, and the counters of what the session exports and receives.

use std::sync::Arc;

use crate::source::seen::Snapshot;
use crate::wire::Clean;

/// What the runtime knows about its feed, for the header and the position bar.
#[derive(Debug, Clone)]
pub struct Feed {
    /// What is watched: `demo`, `~/runs/a.ndjson`, `stdin`, `tee-4121.sock`.
    pub source: Clean,
    /// The feed is a live stream (stdin, attach, listen, a followed file that caught up).
    pub live: bool,
    pub paused: bool,
    /// Lines that arrived from a live source while its view was paused (applied on resume).
    pub arrived: u64,
    /// `1×`, `10×`, `max`.
    pub speed: String,
    /// Lines applied / total, for replays.
    pub position: Option<(u64, u64)>,
    pub events_per_sec: f64,
    /// What a live connection is doing when it is not simply live: `connecting`,
    /// `reconnecting in 2s`, `lagged: resyncing`.
    pub connection: Option<Clean>,
    /// The feed is over and why: `replay ended`, `ended (exit 0)`, `failed: …`.
    pub ended: Option<Clean>,
    /// The clock: stream time (`model.stream_ms`) in replays, so snapshots are deterministic.
    pub now_ms: Option<i64>,
    /// Quiet time after which an active agent shows as stalled.
    pub stall_ms: u64,
    /// The machine view's sessions (`swarmtop` with no arguments), as last sampled. Shared: the
    /// frame's copy of the feed and the grouping's hold the same one (a copy of 50,000 rows a
    /// frame was a third of an idle machine view's work).
    pub machine: Option<Arc<Snapshot>>,
    /// The machine view's source is still reading what was on disk when it started (newest
    /// first): a session it lists whose lines have not come yet is loading, not missing.
    pub loading: bool,
    /// The OTLP export's counters, when the session exports (`--otlp`).
    pub export: Option<ExportFeed>,
    /// The OTLP receiver's counters, when `listen --otlp` receives.
    pub receive: Option<ReceiveFeed>,
    /// What notifying has done, when asked to (`--notify`, `--notify-cmd`).
    pub notify: Option<NotifyFeed>,
    /// Times a replayed file past the bound of files held open
    /// ([`crate::source::merge::OPEN_MAX`]) was opened again to be read (`input.reopened` of
    /// `stats --json`).
    pub reopened: u64,
}

/// What notifying has done so far, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyFeed {
    /// Where notices go: `terminal`, `command`, or both.
    pub to: String,
    pub notices: u64,
    /// Held back by the rate limit.
    pub limited: u64,
    /// Runs of the command that succeeded, failed (non-zero, not started, killed), or found its
    /// queue full.
    pub ran: u64,
    pub failed: u64,
    pub dropped: u64,
    /// Why the last failed run failed.
    pub cause: Option<Clean>,
}

/// What the OTLP receiver has taken in and refused, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveFeed {
    pub requests: u64,
    pub spans: u64,
    pub logs: u64,
    pub refused: u64,
    /// Spans forgotten by the join bound before their parent arrived.
    pub forgotten: u64,
    /// What each of the receiver's bounds refused or dropped, by name.
    pub limits: Vec<(&'static str, u64)>,
}

/// What the OTLP exporter has done so far, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFeed {
    pub target: String,
    pub queued: u64,
    pub sent: u64,
    pub retried: u64,
    pub dropped: u64,
    pub rejected: u64,
    /// The last attempt failed and is being retried (the collector is down).
    pub failing: bool,
    /// Why the last attempt that failed did (`connection refused`).
    pub cause: Option<Clean>,
    /// Span ids no longer remembered as sent (the export's bound on what it remembers).
    pub forgotten: u64,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            source: Clean::new(),
            live: false,
            paused: false,
            arrived: 0,
            speed: "1×".to_owned(),
            position: None,
            events_per_sec: 0.0,
            connection: None,
            ended: None,
            now_ms: None,
            stall_ms: 60_000,
            machine: None,
            loading: false,
            notify: None,
            export: None,
            receive: None,
            reopened: 0,
        }
    }
}

impl Feed {
    /// Whether quitting would lose a live stream for good (`cmd | swarmtop`). A followed file is
    /// live too, but quitting loses nothing: it is all in the file. So with the machine view: its
    /// sessions are on disk, and a tee serves its history to the next attach.
    pub fn loses_on_quit(&self) -> bool {
        self.live && self.position.is_none() && self.ended.is_none() && self.machine.is_none()
    }
}
