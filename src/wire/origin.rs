//! Where a record came from, told by the source that read it: what a file's place says about its
//! records (a rollout file's thread, a Claude sub-agent's file or sidecar). Sources make it and
//! lowering reads it, so it lives here, where sources find it without `wire` reaching back into
//! them; nothing downstream branches on it but the count of lines ([`Origin::counted`]).

use std::sync::Arc;

/// Where a record came from, when that tells what its own text does not: the thread a rollout
/// file belongs to (its name), the sub-agent a Claude transcript file is (its name, its
/// `meta.json` sidecar). Sources pass one with every record; a buffered line keeps its origin, so
/// its replay lowers to the same facts as a live route would. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin(Option<Arc<OriginInfo>>);

/// What a source knows of a file beyond its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginInfo {
    /// The file's path, as the source names it (raw: sanitise before showing it).
    pub file: Option<Box<str>>,
    /// The thread whose records the file holds, by its name (Codex rollouts: the thread id; Claude
    /// sub-agent files: the agent id). A record that names its own thread overrides it.
    pub thread: Option<Box<str>>,
    /// The session (root thread) the file belongs to, when its place tells (Claude: the
    /// `<sessionId>/subagents/` folder).
    pub session: Option<Box<str>>,
    /// The file is a sidecar describing `thread` (Claude `agent-<id>.meta.json`), not a transcript.
    pub sidecar: bool,
    /// A sidecar applied ahead of its agent's first line, as it was when the agent started (a
    /// recorded one is as last rewritten: `finished` once its agent ended, which is not yet so
    /// there). The same record is applied again, and counted, where it lies in time.
    pub ahead: bool,
}

impl Origin {
    /// No origin: stdin, sockets, a recording.
    pub const NONE: Self = Self(None);

    pub fn new(info: OriginInfo) -> Self {
        if info == OriginInfo::default() { Self(None) } else { Self(Some(Arc::new(info))) }
    }

    /// The file's thread, for a record that does not name its own.
    pub fn thread(&self) -> Option<&str> {
        self.0.as_ref()?.thread.as_deref()
    }

    pub fn info(&self) -> Option<&OriginInfo> {
        self.0.as_deref()
    }

    /// Whether its records count among the input's lines and bytes: a record applied ahead of
    /// where it lies is counted there, once.
    pub fn counted(&self) -> bool {
        !self.info().is_some_and(|i| i.ahead)
    }
}
