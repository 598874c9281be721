//! What the census says of the sessions on this machine, as the machine view and `ps` show them:
//! one row per root session, whether it runs, and what discovery met and could not use. Text in
//! a row is clean where it is made (file names and working directories come from the file system
//! and the agents' files, and can carry escape sequences or a newline).

use std::path::PathBuf;

use super::proc::Usage;
use crate::wire::{Clean, sanitize_line};

/// Whether a session runs, as far as the machine can tell (`census::liveness` decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// A process runs it, or its tee runs.
    Live,
    /// No process is seen, but its files changed recently (file age is the fallback).
    Idle,
    Ended,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Idle => "idle",
            Self::Ended => "ended",
        }
    }
}

/// A session as the machine view lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The agent's name in the registry (`claude`, `codex`, …).
    pub tool: &'static str,
    /// The root session's id: a key to find it in the model by, never shown as it is.
    pub id: String,
    /// The working directory it ran in, on one line.
    pub project: Option<Clean>,
    /// Its file or its tee's socket, on one line.
    pub source: Clean,
    pub state: State,
    pub pid: Option<u32>,
    pub usage: Option<Usage>,
    /// When the session last showed activity (unix ms, wall clock): its newest file's
    /// modification, or the last record its tee sent. The screen ages ended sessions out by it.
    pub last_activity_ms: Option<i64>,
}

impl Seen {
    /// The project as the screen groups by it.
    pub fn project(&self) -> Option<&str> {
        self.project.as_ref().map(Clean::as_str)
    }
}

/// Every session the machine view follows, and where it looked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub sessions: Vec<Seen>,
    /// Each agent's folder, whether or not it exists (for "looked in …").
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub tee_dir: PathBuf,
    /// The user's home, from the environment the census read (for `~/…`): the screen reads no
    /// environment of its own.
    pub home: Option<PathBuf>,
    /// What discovery met and could not use.
    pub trouble: Trouble,
}

/// Files discovery met where an agent's files were expected and could not use as they are, counted
/// where the user sees them (`ps` notes on stderr, the machine view's diagnostics): nothing found
/// vanishes without a word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trouble {
    /// No regular file (a FIFO, a device, a socket): never opened, since opening one can wait
    /// for ever.
    pub not_regular: usize,
    /// Names that are not UTF-8: listed all the same, shown with U+FFFD for the bytes that are not.
    pub names_not_utf8: usize,
    /// Files of a listed session that could not be read (its row shows what could).
    pub unreadable: usize,
    /// The first [`Trouble::MAX_SAMPLES`] of them, each the path and why.
    pub samples: Vec<Clean>,
}

impl Trouble {
    /// Samples kept; the counts go on.
    pub const MAX_SAMPLES: usize = 16;

    /// A file refused for its type (`why` says which, with its path).
    pub fn not_regular(&mut self, why: &std::io::Error) {
        self.not_regular += 1;
        self.sample(&why.to_string());
    }

    /// A file of a listed session that could not be read.
    pub fn unreadable(&mut self, why: &str) {
        self.unreadable += 1;
        self.sample(why);
    }

    /// A name that is not UTF-8.
    pub fn name_not_utf8(&mut self) {
        self.names_not_utf8 += 1;
    }

    /// Adds what another look met.
    pub fn add(&mut self, other: &Self) {
        self.not_regular += other.not_regular;
        self.names_not_utf8 += other.names_not_utf8;
        self.unreadable += other.unreadable;
        for s in &other.samples {
            if self.samples.len() < Self::MAX_SAMPLES && !self.samples.contains(s) {
                self.samples.push(s.clone());
            }
        }
    }

    /// Keeps `text` (sanitised) among the samples while there is room; counts nothing.
    pub fn sample(&mut self, text: &str) {
        let clean = sanitize_line(text);
        if self.samples.len() < Self::MAX_SAMPLES && !self.samples.contains(&clean) {
            self.samples.push(clean);
        }
    }

    /// One line per kind of trouble, then the samples, as `ps` prints them.
    pub fn notes(&self) -> Vec<String> {
        let plural = |n: usize, one: &str, many: &str| if n == 1 { one.to_owned() } else { many.to_owned() };
        let mut out = Vec::new();
        if self.not_regular > 0 {
            let n = self.not_regular;
            out.push(format!("{n} {} not a regular file, skipped", plural(n, "file is", "files are")));
        }
        if self.names_not_utf8 > 0 {
            let n = self.names_not_utf8;
            out.push(format!("{n} file {} not UTF-8 (shown with U+FFFD)", plural(n, "name is", "names are")));
        }
        if self.unreadable > 0 {
            let n = self.unreadable;
            out.push(format!("{n} {} could not be read", plural(n, "file", "files")));
        }
        out.extend(self.samples.iter().map(|s| format!("  {s}")));
        out
    }
}
