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

/// Bytes read from one file before the others get their turn. One chunk is one event, held whole
/// by every consumer at once (a `serve` feed client encodes it beside it): at 4 MiB a feed's
/// history held some 20 MiB at its peak and the daemon's memory floor rose with each feed
/// (`serve_soak`); at one record event's size ([`RECORDS_PER_EVENT`]) a chunk is one frame.
///
/// [`RECORDS_PER_EVENT`]: crate::source::remote::codec::RECORDS_PER_EVENT
pub(super) const READ_CHUNK: u64 = 1 << 20;

/// A file followed.
pub(super) struct Followed {
    pub path: PathBuf,
    /// The session it is a file of (a store's: the first session found within it).
    pub session: usize,
    pub canonical: PathBuf,
    pub origin: Origin,
    /// Bytes consumed (whole lines only); a sidecar's length when it was last sent.
    pub read: u64,
    /// Where the last look for the end of a line being written stopped (past `read`: no line
    /// ends between the two); `0` when it found one.
    pub scanned: u64,
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
        written: SystemTime,
        before: Option<Before>,
        store: Option<Box<dyn Poll + Send>>,
    ) -> Self {
        let input = files::Input::File(path.clone());
        Self {
            canonical,
            origin: files::origin(&input),
            written,
            path,
            session,
            read: 0,
            scanned: 0,
            modified: None,
            before,
            store,
        }
    }

    pub fn is_store(&self) -> bool {
        self.store.is_some()
    }
}

/// Where reading a followed file stands: bytes consumed (whole lines only), and where the last
/// look for the end of a line still being written stopped ([`Followed::scanned`]).
pub(super) struct Cursor<'a> {
    pub read: &'a mut u64,
    pub scanned: &'a mut u64,
}

/// Up to [`READ_CHUNK`] new bytes of `path` from `read` on, cut after the last newline; `read`
/// moves past them, `written` takes the file's modification time; and whether the file held more
/// than the chunk (the cut at the last newline always leaves a chunk short of [`READ_CHUNK`], so
/// its length cannot tell). A file that shrank (rewritten) is read again from its start. What is
/// no regular file (any more) is not opened.
pub(super) fn grow(path: &Path, at: Cursor<'_>, written: &mut SystemTime) -> Option<(Vec<u8>, bool)> {
    let mut file = regular::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if let Ok(m) = meta.modified() {
        *written = m;
    }
    grow_from(&mut file, meta.len(), at)
}

/// [`grow`] of an open file `len` bytes long.
fn grow_from(file: &mut (impl Read + Seek), len: u64, at: Cursor<'_>) -> Option<(Vec<u8>, bool)> {
    let Cursor { read, scanned } = at;
    if len < *read {
        *read = 0;
    }
    if *scanned <= *read || len < *scanned {
        *scanned = 0;
    }
    if len == *read || len == *scanned {
        return None;
    }
    if *scanned > 0 {
        // A line with no end yet when last looked at: its end is looked for from there on, not
        // from its start (a line of tens of MiB written piece by piece was read again whole at
        // every piece).
        return long_line(file, read, scanned, len);
    }
    file.seek(SeekFrom::Start(*read)).ok()?;
    let left = len - *read;
    // Sized once: grown by doubling, a whole chunk passed through twice its size.
    let mut buf = Vec::with_capacity(usize::try_from(left.min(READ_CHUNK)).unwrap_or(0));
    file.by_ref().take(left.min(READ_CHUNK)).read_to_end(&mut buf).ok()?;
    let Some(end) = memchr::memrchr(b'\n', &buf) else {
        // No line ends here: a line still being written, or one longer than a chunk. Left alone,
        // the file would stop here for good.
        *scanned = *read + buf.len() as u64;
        return (left > READ_CHUNK).then(|| long_line(file, read, scanned, len)).flatten();
    };
    buf.truncate(end + 1);
    *read += buf.len() as u64;
    Some((buf, left > READ_CHUNK))
}

/// The line at `read` whose first bytes up to `scanned` hold no line end, once it has ended:
/// whole up to [`files::MAX_LINE`], as every other reader takes such a line; past that its first
/// bytes alone, which the reader then counts as one malformed line (with its sample in `d`).
/// `None` while the line is still being written, `scanned` moved to where the look stopped.
fn long_line(file: &mut (impl Read + Seek), read: &mut u64, scanned: &mut u64, len: u64) -> Option<(Vec<u8>, bool)> {
    file.seek(SeekFrom::Start(*scanned)).ok()?;
    let mut piece = vec![0; READ_CHUNK as usize];
    let line_end = loop {
        let n = file.read(&mut piece).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(nl) = memchr::memchr(b'\n', &piece[..n]) {
            break *scanned + nl as u64 + 1;
        }
        *scanned += n as u64;
    };
    drop(piece);
    let whole = line_end - *read <= files::MAX_LINE as u64;
    let take = if whole { line_end - *read } else { files::HEAD as u64 };
    file.seek(SeekFrom::Start(*read)).ok()?;
    let mut line = Vec::with_capacity(take as usize + 1);
    file.by_ref().take(take).read_to_end(&mut line).ok()?;
    if !whole {
        line.push(b'\n');
    }
    (*read, *scanned) = (line_end, 0);
    Some((line, line_end < len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `grow` gives for `path`, turn after turn until it says nothing more is there.
    fn lines_of(path: &Path) -> Vec<Vec<u8>> {
        let (mut read, mut scanned, mut written) = (0, 0, SystemTime::UNIX_EPOCH);
        let mut out = Vec::new();
        while let Some((chunk, _more)) = grow(path, Cursor { read: &mut read, scanned: &mut scanned }, &mut written) {
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
        let (mut read, mut scanned, mut written) = (0, 0, SystemTime::UNIX_EPOCH);
        let mut look = || grow(&path, Cursor { read: &mut read, scanned: &mut scanned }, &mut written);
        assert!(look().is_some());
        assert!(look().is_none(), "no end yet");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut f, b"y\n").unwrap();
        let (line, more) = look().unwrap();
        assert_eq!((line.len(), more), ((5 << 20) + 2, false));
    }

    /// A file read through [`grow_from`], counting the bytes read of it.
    struct Counted {
        bytes: std::io::Cursor<Vec<u8>>,
        read: u64,
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.bytes.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl Seek for Counted {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.bytes.seek(to)
        }
    }

    /// A line over the chunk (under the line bound) written a MiB at a time is looked at from where the last look
    /// stopped: each byte is read about twice in all (looked through, then taken), not again from
    /// the line's start at every piece (which read 78 MiB of these 12 before the end came).
    #[test]
    fn a_long_line_being_written_is_looked_at_from_where_the_last_look_stopped() {
        let mut file = Counted { bytes: std::io::Cursor::new(b"{\"a\":1}\n".to_vec()), read: 0 };
        let (mut read, mut scanned) = (0, 0);
        let mut look = |file: &mut Counted| {
            let len = file.bytes.get_ref().len() as u64;
            grow_from(file, len, Cursor { read: &mut read, scanned: &mut scanned })
        };
        assert_eq!(look(&mut file).map(|(l, _)| l.len()), Some(8));
        let piece = vec![b'x'; 1 << 20];
        for _ in 0..12 {
            file.bytes.get_mut().extend_from_slice(&piece);
            assert!(look(&mut file).is_none(), "no end yet");
        }
        file.bytes.get_mut().extend_from_slice(b"\n{\"b\":2}\n");
        let (line, more) = look(&mut file).unwrap();
        assert_eq!((line.len(), more), ((12 << 20) + 1, true));
        assert_eq!(look(&mut file).map(|(l, _)| l), Some(b"{\"b\":2}\n".to_vec()));
        let line = 12u64 << 20;
        assert!(file.read <= 2 * line + (1 << 20), "{} MiB read for a line of 12", file.read >> 20);
    }
}
