//! A file the machine view follows, and how much of it was read: whole lines of a session's
//! files (only those older than its tee, when a tee carries it). Only regular files are ever
//! opened. What is read goes out in `reading`.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::Before;
use crate::source::agents::Poll;
use crate::source::files;
use crate::source::regular;
use crate::wire::Origin;

/// Bytes read from one file before the others get their turn.
pub(super) const READ_CHUNK: u64 = 4 << 20;

/// A file followed.
pub(super) struct Followed {
    pub path: PathBuf,
    /// The session it is a file of (a store's: the first session found within it).
    pub session: usize,
    pub canonical: PathBuf,
    pub origin: Origin,
    /// Bytes consumed (whole lines only); a sidecar's length when it was last sent.
    pub read: u64,
    /// A sidecar's modification time when it was last sent (plain files: `None`).
    pub modified: Option<SystemTime>,
    /// Its modification time when it was last looked at (read, or told of by the watcher): a
    /// session's age is judged by it every tick, with no look at the disk (a `stat` of every
    /// followed file every tick cost most of an idle machine view's time).
    pub written: SystemTime,
    /// Only lines older than a tee's start (it carries the rest).
    pub before: Option<Before>,
    /// A store of many sessions: followed by its log, never read as bytes.
    pub store: Option<Box<dyn Poll + Send>>,
}

impl Followed {
    pub fn new(path: PathBuf, session: usize, before: Option<Before>, store: Option<Box<dyn Poll + Send>>) -> Self {
        let input = files::Input::File(path.clone());
        Self {
            canonical: crate::source::proc::canonical(&path),
            origin: files::origin(&input),
            written: crate::source::agents::modified(&path),
            path,
            session,
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

/// Up to [`READ_CHUNK`] new bytes of `path` from `read` on, cut after the last newline; `read`
/// moves past them, `written` takes the file's modification time; and whether the file held more
/// than the chunk (the cut at the last newline always leaves a chunk short of [`READ_CHUNK`], so
/// its length cannot tell). A file that shrank (rewritten) is read again from its start. What is
/// no regular file (any more) is not opened.
pub(super) fn grow(path: &Path, read: &mut u64, written: &mut SystemTime) -> Option<(Vec<u8>, bool)> {
    let mut file = regular::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if let Ok(m) = meta.modified() {
        *written = m;
    }
    let len = meta.len();
    if len < *read {
        *read = 0;
    }
    if len == *read {
        return None;
    }
    file.seek(SeekFrom::Start(*read)).ok()?;
    let left = len - *read;
    let mut buf = Vec::new();
    file.take(left.min(READ_CHUNK)).read_to_end(&mut buf).ok()?;
    let end = memchr::memrchr(b'\n', &buf)?;
    buf.truncate(end + 1);
    *read += buf.len() as u64;
    Some((buf, left > READ_CHUNK))
}
