//! The files the machine view follows, and reading what they gained: whole lines of a session's
//! files (only those older than its tee, when a tee carries it), a sidecar whole whenever it is
//! rewritten, a store through its follower. Only regular files are ever opened.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::Before;
use super::{Gone, Machine};
use crate::source::agents::Poll;
use crate::source::files;
use crate::source::origin::Origin;
use crate::source::regular;

/// Bytes read from one file before the others get their turn.
const READ_CHUNK: u64 = 4 << 20;

/// A file followed.
pub(super) struct Followed {
    pub path: PathBuf,
    pub canonical: PathBuf,
    pub origin: Origin,
    /// Bytes consumed (whole lines only); a sidecar's length when it was last sent.
    pub read: u64,
    /// A sidecar's modification time when it was last sent (plain files: `None`).
    pub modified: Option<SystemTime>,
    /// Only lines older than a tee's start (it carries the rest).
    pub before: Option<Before>,
    /// A store of many sessions: followed by its log, never read as bytes.
    pub store: Option<Box<dyn Poll + Send>>,
}

impl Followed {
    pub fn new(path: PathBuf, before: Option<Before>, store: Option<Box<dyn Poll + Send>>) -> Self {
        let input = files::Input::File(path.clone());
        Self {
            canonical: crate::source::proc::canonical(&path),
            origin: files::origin(&input),
            path,
            read: 0,
            modified: None,
            before,
            store,
        }
    }

    pub fn is_store(&self) -> bool {
        self.store.is_some()
    }
}

impl Machine {
    /// Sends what a followed file gained since the last read (whole lines only).
    pub(super) async fn read_file(&mut self, i: usize) -> Result<(), Gone> {
        if let Some(follower) = &mut self.files[i].store {
            // A store that cannot be read now is counted (each failed look) and looked at again.
            let records = follower.poll().unwrap_or_else(|e| {
                self.read_trouble.unreadable(&e.to_string());
                Vec::new()
            });
            if !records.is_empty() {
                self.forward(Origin::NONE, records).await?;
            }
            return Ok(());
        }
        if files::is_sidecar(&self.files[i].path) {
            return self.read_sidecar(i).await;
        }
        loop {
            let f = &mut self.files[i];
            if f.before.is_some_and(|b| b.done()) {
                return Ok(());
            }
            let Some(mut chunk) = grow(&f.path, &mut f.read) else { return Ok(()) };
            if let Some(before) = &mut f.before {
                chunk = before.keep(&chunk);
            }
            let more = chunk.len() as u64 >= READ_CHUNK;
            let origin = f.origin.clone();
            self.learn_project(i, &chunk);
            if !chunk.is_empty() {
                self.forward(origin, chunk).await?;
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// A sidecar (Claude Code's `agent-<id>.meta.json`, wire.md §6) is one JSON object with no
    /// line break at its end, rewritten whole (`finished: true` once its agent ends): read as
    /// lines it never gave one, so a child at depth 2 (linked by its sidecar alone) stayed
    /// pending for good and every child was pending until its parent's tool result. It is sent
    /// whole whenever it changed, once it parses: a rewrite caught half-way is read again on the
    /// change that completes it.
    async fn read_sidecar(&mut self, i: usize) -> Result<(), Gone> {
        let f = &mut self.files[i];
        let Ok(meta) = std::fs::metadata(&f.path) else { return Ok(()) };
        let modified = meta.modified().ok();
        if (meta.len(), modified) == (f.read, f.modified) || !meta.is_file() {
            return Ok(());
        }
        let Ok(text) = files::read_sidecar(&f.path) else { return Ok(()) };
        if serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_err() {
            return Ok(());
        }
        (f.read, f.modified) = (meta.len(), modified);
        let origin = f.origin.clone();
        self.forward(origin, text).await
    }

    /// A session named by a guess takes the cwd the first of its lines that carries one says (the
    /// next snapshot regroups it): the lines are read here anyway, the file is not read again.
    fn learn_project(&mut self, file: usize, chunk: &[u8]) {
        let Some(s) = self.sessions.iter_mut().find(|s| s.project_guessed && s.files.contains(&file)) else { return };
        let Some(cwd_in) = s.agent.place.as_ref().and_then(|p| p.cwd_in) else { return };
        if let Some(cwd) = cwd_in(chunk) {
            s.project = Some(cwd);
            s.project_guessed = false;
        }
    }
}

/// Up to [`READ_CHUNK`] new bytes of `path` from `read` on, cut after the last newline; `read`
/// moves past them. A file that shrank (rewritten) is read again from its start. What is no
/// regular file (any more) is not opened.
fn grow(path: &Path, read: &mut u64) -> Option<Vec<u8>> {
    let mut file = regular::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len < *read {
        *read = 0;
    }
    if len == *read {
        return None;
    }
    file.seek(SeekFrom::Start(*read)).ok()?;
    let mut buf = Vec::new();
    file.take((len - *read).min(READ_CHUNK)).read_to_end(&mut buf).ok()?;
    let end = memchr::memrchr(b'\n', &buf)?;
    buf.truncate(end + 1);
    *read += buf.len() as u64;
    Some(buf)
}
