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
    /// `canonical`: the path as [`crate::source::proc::canonical`] gives it.
    pub fn new(
        path: PathBuf,
        canonical: PathBuf,
        session: usize,
        before: Option<Before>,
        store: Option<Box<dyn Poll + Send>>,
    ) -> Self {
        let input = files::Input::File(path.clone());
        Self {
            canonical,
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
    file.by_ref().take(left.min(READ_CHUNK)).read_to_end(&mut buf).ok()?;
    let Some(end) = memchr::memrchr(b'\n', &buf) else {
        // No line ends in a whole chunk: one line longer than it. Left alone, the file would stop
        // here for good.
        return (left > READ_CHUNK).then(|| long_line(&mut file, buf, read, len)).flatten();
    };
    buf.truncate(end + 1);
    *read += buf.len() as u64;
    Some((buf, left > READ_CHUNK))
}

/// The line at `read` that `head` (a whole chunk) begins, once it has ended: whole up to
/// [`files::MAX_LINE`], as every other reader takes such a line; past that its first bytes alone,
/// which the reader then counts as one malformed line (with its sample in `d`). `None` while the
/// line is still being written.
fn long_line(file: &mut std::fs::File, mut head: Vec<u8>, read: &mut u64, len: u64) -> Option<(Vec<u8>, bool)> {
    let mut at = *read + head.len() as u64;
    let mut piece = vec![0; READ_CHUNK as usize];
    // Whether `head` still holds the line whole: once a piece is left out, it never is again.
    let mut whole = true;
    let line_end = loop {
        let n = file.read(&mut piece).ok()?;
        if n == 0 {
            return None;
        }
        let end = memchr::memchr(b'\n', &piece[..n]);
        let take = end.map_or(n, |nl| nl + 1);
        whole &= head.len() + take <= files::MAX_LINE;
        if whole {
            head.extend_from_slice(&piece[..take]);
        }
        if end.is_some() {
            break at + take as u64;
        }
        at += n as u64;
    };
    if !whole {
        head.truncate(files::HEAD.min(head.len()));
        head.push(b'\n');
    }
    *read = line_end;
    Some((head, line_end < len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `grow` gives for `path`, turn after turn until it says nothing more is there.
    fn lines_of(path: &Path) -> Vec<Vec<u8>> {
        let (mut read, mut written) = (0, SystemTime::UNIX_EPOCH);
        let mut out = Vec::new();
        while let Some((chunk, _more)) = grow(path, &mut read, &mut written) {
            out.extend(chunk.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec));
        }
        out
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_read_and_the_file_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let long = |n: usize| format!("{{\"pad\":\"{}\"}}\n", "x".repeat(n));
        let text = format!("{{\"a\":1}}\n{}{{\"b\":2}}\n{}{{\"c\":3}}\n", long(6 << 20), long(files::MAX_LINE + 10));
        std::fs::write(&path, &text).unwrap();
        let lines = lines_of(&path);
        assert_eq!(lines.len(), 5, "every line, in order");
        assert_eq!(lines[1].len(), (6 << 20) + 11, "a line under the bound comes whole");
        assert_eq!(lines[2], b"{\"b\":2}\n");
        assert_eq!(lines[3].len(), files::HEAD + 1, "past the bound, its head (then malformed)");
        assert_eq!(lines[4], b"{\"c\":3}\n");
    }

    #[test]
    fn a_long_line_still_being_written_waits_for_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, format!("{{\"a\":1}}\n{}", "x".repeat(5 << 20))).unwrap();
        let (mut read, mut written) = (0, SystemTime::UNIX_EPOCH);
        assert!(grow(&path, &mut read, &mut written).is_some());
        assert!(grow(&path, &mut read, &mut written).is_none(), "no end yet");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut f, b"y\n").unwrap();
        let (line, more) = grow(&path, &mut read, &mut written).unwrap();
        assert_eq!((line.len(), more), ((5 << 20) + 2, false));
    }
}
