//! `--follow`: watches a replay's files and directories and reports what they gain — whole lines
//! only — as live events through the monitor's live channel, off the monitor's thread. Its one
//! job is noticing growth, woken by the file watcher ([`super::watch`]). Plain files are followed by their new lines; a sidecar (Claude Code's
//! `agent-<id>.meta.json`) is rewritten, not appended to, and is reported when it changes; a
//! `.gz` is not followed (it cannot be appended to line by line).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

pub use super::live::Change;
use super::live::Event;

use super::files::{self, Input};
use super::merge;
use super::watch::Watcher;

/// Longest time between two looks when the watcher reports nothing.
pub const POLL: Duration = Duration::from_secs(5);
/// Bytes read from one file per look: a file that grew by gigabytes is sent in pieces. A line
/// longer than this is read on to its end in the same look, up to [`files::MAX_LINE`].
pub const READ_MAX: u64 = 8 << 20;

/// A file to follow, as far as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    pub path: PathBuf,
    pub read: u64,
    /// A sidecar's modification time when it was read (plain files: `None`).
    pub modified: Option<SystemTime>,
}

/// What is followed, and the one look at it that finds what changed.
#[derive(Debug, Clone)]
pub struct Follower {
    files: Vec<Watched>,
    dirs: Vec<PathBuf>,
    known: HashSet<PathBuf>,
    /// How much of a file one look reads.
    bounds: Bounds,
    /// The files in the middle of a line over the bound, read past without keeping it.
    skipping: HashMap<PathBuf, Skip>,
    behind: bool,
}

/// How much of a file one look reads: [`READ_MAX`] bytes, and one line up to [`files::MAX_LINE`]
/// (tests read less).
#[derive(Debug, Clone, Copy)]
struct Bounds {
    read_max: u64,
    line_max: usize,
}

/// A line over the bound being read past: where it starts, its length so far, its head.
#[derive(Debug, Clone)]
struct Skip {
    at: u64,
    len: usize,
    head: Vec<u8>,
}

impl Follower {
    /// `files` from where each was read, and `dirs` where new files may appear.
    pub fn new(files: Vec<Watched>, dirs: Vec<PathBuf>) -> Self {
        let known = files.iter().map(|w| w.path.clone()).collect();
        let bounds = Bounds { read_max: READ_MAX, line_max: files::MAX_LINE };
        Self { files, dirs, known, bounds, skipping: HashMap::new(), behind: false }
    }

    /// Whether the last look left bytes unread: the next look reads on at once.
    pub fn behind(&self) -> bool {
        self.behind
    }

    /// One look: what the files gained and which files appeared since the last, in stream time
    /// ([`by_time`]). What a file holds past [`READ_MAX`] is read at the next look, and with it
    /// the other files' lines that may come after it: each file's position goes back to before
    /// them, so nothing is held here.
    pub fn changes(&mut self) -> Vec<Change> {
        let (changes, cut) = self.look();
        let (out, left) = by_time(changes, &cut);
        self.behind = !cut.is_empty();
        for (path, back) in left {
            if let Some(w) = self.files.iter_mut().find(|w| w.path == path) {
                match back {
                    Back::Bytes(n) => w.read -= n,
                    // Rewritten again at the next look, after the lines before it.
                    Back::Rewrite => (w.read, w.modified) = (u64::MAX, None),
                }
            }
        }
        out
    }

    /// What the files gained, file by file, and the files read only up to the bound.
    fn look(&mut self) -> (Vec<Change>, HashSet<PathBuf>) {
        let mut cut = HashSet::new();
        let mut out = Vec::new();
        let (bounds, skipping) = (self.bounds, &mut self.skipping);
        let mut read = |w: &mut Watched, out: &mut Vec<Change>| {
            if files::is_sidecar(&w.path) {
                out.extend(rewritten(w));
            } else if look(&w.path, &mut w.read, skipping, bounds, out) {
                cut.insert(w.path.clone());
            }
        };
        for w in &mut self.files {
            read(w, &mut out);
        }
        if self.dirs.is_empty() {
            return (out, cut);
        }
        let Ok(found) = files::expand(&self.dirs) else { return (out, cut) };
        for input in found {
            let Input::File(path) = input else { continue };
            if self.known.insert(path.clone()) {
                out.push(Change::Appeared { file: path.clone() });
                let mut w = Watched { path, read: 0, modified: None };
                // What the new file holds already comes at once, not a poll later.
                read(&mut w, &mut out);
                self.files.push(w);
            }
        }
        (out, cut)
    }
}

/// Follows on a thread of its own, sending changes to `tx` until its receiver is gone. It looks
/// when the file watcher ([`super::watch`]: inotify, or notify's polling fallback) reports a
/// change, and every [`POLL`] at most when nothing is reported, in case a report was lost.
pub fn spawn(mut follower: Follower, tx: mpsc::Sender<Event>) -> io::Result<()> {
    std::thread::Builder::new().name("follow".to_owned()).spawn(move || {
        let mut watcher = Watcher::new();
        for path in follower.files.iter().map(|w| &w.path).chain(&follower.dirs) {
            watcher.watch(path);
        }
        loop {
            if !follower.behind() {
                let _ = watcher.wait(POLL);
            }
            for change in follower.changes() {
                if let Change::Appeared { file } = &change {
                    watcher.watch(file);
                }
                if tx.blocking_send(Event::Followed(change)).is_err() {
                    return;
                }
            }
            if tx.is_closed() {
                return;
            }
        }
    })?;
    Ok(())
}

/// What a look read and does not hand on yet: bytes of a file's end, or a sidecar's rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Back {
    Bytes(u64),
    Rewrite,
}

/// What one look found, its lines in stream time: files restarted or appeared first, then every
/// file's new lines interleaved by their times ([`merge::runs_upto`]: a parent's lines written
/// while its children worked no longer all go before theirs), then the sidecars rewritten (a
/// sub-agent's `finished` after its last lines). When a file in `cut` was read only up to the
/// bound, the lines stop where its piece ends: what is left of the others, and the sidecars,
/// come at the next look, with its next piece; returned as what each file gives back.
fn by_time(changes: Vec<Change>, cut: &HashSet<PathBuf>) -> (Vec<Change>, Vec<(PathBuf, Back)>) {
    let mut out = Vec::with_capacity(changes.len());
    let (mut grown, mut rewritten) = (Vec::new(), Vec::new());
    for change in changes {
        match change {
            Change::Grew { file, at, bytes } => grown.push((file, at, bytes)),
            Change::Rewritten { .. } => rewritten.push(change),
            // A line over the bound has no time to go by: it comes with what happened to files.
            Change::Restarted { .. } | Change::Appeared { .. } | Change::TooLong { .. } | Change::Acts { .. } => {
                out.push(change);
            }
        }
    }
    let chunks: Vec<&[u8]> = grown.iter().map(|(_, _, bytes)| bytes.as_slice()).collect();
    let more: Vec<bool> = grown.iter().map(|(file, _, _)| cut.contains(file)).collect();
    let (runs, used) = merge::runs_upto(&chunks, &more);
    for (n, range) in runs {
        let (file, at, bytes) = &grown[n];
        let at = at + range.start as u64;
        out.push(Change::Grew { file: file.clone(), at, bytes: bytes[range].to_vec() });
    }
    let mut back: Vec<(PathBuf, Back)> = grown
        .iter()
        .zip(used)
        .filter(|((_, _, bytes), used)| *used < bytes.len())
        .map(|((file, _, bytes), used)| (file.clone(), Back::Bytes((bytes.len() - used) as u64)))
        .collect();
    if cut.is_empty() {
        out.extend(rewritten);
    } else {
        back.extend(rewritten.into_iter().filter_map(|c| match c {
            Change::Rewritten { file } => Some((file, Back::Rewrite)),
            _ => None,
        }));
    }
    (out, back)
}

/// A sidecar whose size or modification time moved since it was read.
fn rewritten(w: &mut Watched) -> Vec<Change> {
    let Ok(meta) = std::fs::metadata(&w.path) else { return Vec::new() };
    let modified = meta.modified().ok();
    if meta.len() == w.read && modified == w.modified {
        return Vec::new();
    }
    (w.read, w.modified) = (meta.len(), modified);
    vec![Change::Rewritten { file: w.path.clone() }]
}

/// What one file gained since `read` (whole lines, up to [`Bounds::read_max`] bytes, or one
/// line up to [`Bounds::line_max`]), which moves past it, appended to `out`; whether the file
/// holds more than was read. A line over the bound is read past, a look at a time, and handed on
/// as [`Change::TooLong`] once its end is there: waiting for a newline within one look's bytes,
/// a longer line stalled the file for good.
fn look(
    path: &PathBuf,
    read: &mut u64,
    skipping: &mut HashMap<PathBuf, Skip>,
    bounds: Bounds,
    out: &mut Vec<Change>,
) -> bool {
    let Ok(mut file) = File::open(path) else { return false };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return false };
    if len < *read {
        *read = 0;
        skipping.remove(path);
        out.push(Change::Restarted { file: path.clone() });
    }
    if len == *read || file.seek(SeekFrom::Start(*read)).is_err() {
        return false;
    }
    if let Some(skip) = skipping.get_mut(path) {
        match skip_on(path, &mut file, read, len, skip, bounds, out) {
            Some(true) => _ = skipping.remove(path),
            Some(false) => {}
            None => return false,
        }
        return len > *read;
    }
    let mut bytes = Vec::new();
    if (&mut file).take((len - *read).min(bounds.read_max)).read_to_end(&mut bytes).is_err() {
        return false;
    }
    // A line longer than a look reads is read on to its end, as far as the bound on one line.
    while !bytes.contains(&b'\n') && bytes.len() <= bounds.line_max && *read + (bytes.len() as u64) < len {
        let room = (bounds.line_max + 1 - bytes.len()) as u64;
        let before = bytes.len();
        if (&mut file).take(room).read_to_end(&mut bytes).is_err() || bytes.len() == before {
            return false;
        }
    }
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        if bytes.len() > bounds.line_max {
            // Over the bound: only its head is kept; its end is looked for from here on.
            let skip = Skip { at: *read, len: bytes.len(), head: bytes[..files::HEAD.min(bytes.len())].to_vec() };
            *read += bytes.len() as u64;
            skipping.insert(path.clone(), skip);
            return len > *read;
        }
        // A line still being written.
        return false;
    };
    bytes.truncate(end + 1);
    let at = *read;
    *read += bytes.len() as u64;
    let more = len > *read;
    out.push(Change::Grew { file: path.clone(), at, bytes });
    more
}

/// Reads on past a line over the bound (from `read`, at most a look's bytes): `Some(true)` once
/// its end was found and it was handed on, `Some(false)` while it goes on, `None` on a failed read.
fn skip_on(
    path: &Path,
    file: &mut File,
    read: &mut u64,
    len: u64,
    skip: &mut Skip,
    bounds: Bounds,
    out: &mut Vec<Change>,
) -> Option<bool> {
    let mut bytes = Vec::new();
    file.take((len - *read).min(bounds.read_max)).read_to_end(&mut bytes).ok()?;
    let Some(nl) = memchr::memchr(b'\n', &bytes) else {
        skip.len += bytes.len();
        *read += bytes.len() as u64;
        return Some(false);
    };
    skip.len += nl;
    *read += nl as u64 + 1;
    let head = std::mem::take(&mut skip.head);
    out.push(Change::TooLong { file: path.to_owned(), at: skip.at, len: skip.len, head });
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two files grown at one look: their lines come by time, each file's in its order and from
    /// the byte it was at; the sidecar rewritten after them.
    #[test]
    fn what_one_look_found_comes_in_stream_time() {
        let line = |ms: i64, s: &str| {
            format!(r#"{{"type":"step_start","timestamp":{ms},"sessionID":"ses_{s}","part":{{"type":"step-start"}}}}"#)
                + "\n"
        };
        let (p1, p2, c1) = (line(10, "p"), line(30, "p"), line(20, "c"));
        let (parent, child) = (PathBuf::from("parent.jsonl"), PathBuf::from("child.jsonl"));
        let sidecar = Change::Rewritten { file: PathBuf::from("agent-c.meta.json") };
        let changes = vec![
            sidecar.clone(),
            Change::Grew { file: parent.clone(), at: 100, bytes: [p1.clone(), p2.clone()].concat().into_bytes() },
            Change::Appeared { file: child.clone() },
            Change::Grew { file: child.clone(), at: 0, bytes: c1.clone().into_bytes() },
        ];
        // The child read only up to the bound: the parent's later line and the sidecar wait for
        // its next piece.
        let (got, back) = by_time(changes.clone(), &HashSet::from([child.clone()]));
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            back,
            [(parent.clone(), Back::Bytes(p2.len() as u64)), (PathBuf::from("agent-c.meta.json"), Back::Rewrite)]
        );
        let (got, back) = by_time(changes, &HashSet::new());
        assert!(back.is_empty());
        assert_eq!(
            got,
            [
                Change::Appeared { file: child.clone() },
                Change::Grew { file: parent.clone(), at: 100, bytes: p1.clone().into_bytes() },
                Change::Grew { file: child, at: 0, bytes: c1.into_bytes() },
                Change::Grew { file: parent, at: 100 + p1.len() as u64, bytes: p2.into_bytes() },
                sidecar,
            ]
        );
    }

    /// Files that grew by more than one look reads: each look hands on a piece of each, and the
    /// lines of all the looks together come in stream time, not only those of each look (issue 19:
    /// a dense file's second piece came after a sparse file's later lines read at the first look).
    #[test]
    fn lines_come_in_stream_time_across_looks() {
        let line = |ms: i64, s: &str| {
            format!(r#"{{"type":"step_start","timestamp":{ms},"sessionID":"ses_{s}","part":{{"type":"step-start"}}}}"#)
                + "\n"
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let (dense, sparse) = (dir.path().join("dense.ndjson"), dir.path().join("sparse.ndjson"));
        std::fs::write(&dense, (1..=20).map(|k| line(k * 10, "d")).collect::<String>()).expect("write");
        std::fs::write(&sparse, [15, 55, 95, 135, 175, 215].map(|ms| line(ms, "s")).concat()).expect("write");
        let watched = |path: &PathBuf| Watched { path: path.clone(), read: 0, modified: None };
        let mut follower = Follower::new(vec![watched(&dense), watched(&sparse)], Vec::new());
        // Two lines of each file a look.
        follower.bounds.read_max = 2 * line(100, "d").len() as u64;
        let mut times = Vec::new();
        for _ in 0..100 {
            let changes = follower.changes();
            if changes.is_empty() {
                break;
            }
            for change in changes {
                let Change::Grew { bytes, .. } = change else { panic!("only growth: {change:?}") };
                times.extend(bytes.split(|&b| b == b'\n').filter_map(crate::wire::stream_time));
            }
        }
        assert_eq!(times.len(), 26, "every line once: {times:?}");
        assert!(times.is_sorted(), "{times:?}");
        assert!(!follower.behind(), "caught up");
    }

    #[test]
    fn whole_lines_from_where_it_was_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.ndjson");
        std::fs::write(&path, "one\ntw").expect("write");
        let mut read = 0;
        let look = |read: &mut u64| {
            let mut out = Vec::new();
            let bounds = Bounds { read_max: READ_MAX, line_max: files::MAX_LINE };
            look(&path, read, &mut HashMap::new(), bounds, &mut out);
            out
        };
        assert_eq!(look(&mut read), [Change::Grew { file: path.clone(), at: 0, bytes: b"one\n".to_vec() }]);
        assert_eq!(look(&mut read), [], "half a line is not sent");
        std::fs::write(&path, "x\n").expect("rewrite");
        assert_eq!(
            look(&mut read),
            [
                Change::Restarted { file: path.clone() },
                Change::Grew { file: path.clone(), at: 0, bytes: b"x\n".to_vec() }
            ]
        );
    }

    /// A line longer than the bound on one line, written a piece at a time, then lines after it:
    /// it is handed on once, as its length and head, from the byte it starts at, and the lines
    /// after it follow. A line over a look's bytes but within the bound comes whole.
    #[test]
    fn a_line_over_the_bound_is_read_past_and_the_lines_after_it_follow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.ndjson");
        std::fs::write(&path, "one\n").expect("write");
        let mut follower = Follower::new(vec![Watched { path: path.clone(), read: 4, modified: None }], Vec::new());
        follower.bounds = Bounds { read_max: 16, line_max: 40 };
        let append = |text: &str| {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
            f.write_all(text.as_bytes()).expect("append");
        };
        let mut changes = Vec::new();
        let look = |follower: &mut Follower, changes: &mut Vec<Change>| {
            for _ in 0..20 {
                changes.extend(follower.changes());
                if !follower.behind() {
                    break;
                }
            }
        };
        let within = "w".repeat(30);
        append(&format!("{within}\n"));
        look(&mut follower, &mut changes);
        assert_eq!(changes, [Change::Grew { file: path.clone(), at: 4, bytes: format!("{within}\n").into_bytes() }]);
        changes.clear();
        let long = "x".repeat(300);
        // Written in pieces, each seen by a look of its own.
        for piece in long.as_bytes().chunks(70) {
            append(std::str::from_utf8(piece).expect("ascii"));
            look(&mut follower, &mut changes);
        }
        assert_eq!(changes, [], "its end is not there yet");
        append("\ntwo\nthree\n");
        look(&mut follower, &mut changes);
        let at = 4 + within.len() as u64 + 1;
        // Its head as far as it was read when it went over the bound (here less than `HEAD`).
        let head = long.as_bytes()[..41].to_vec();
        assert_eq!(
            changes,
            [
                Change::TooLong { file: path.clone(), at, len: 300, head },
                Change::Grew { file: path.clone(), at: at + 301, bytes: b"two\nthree\n".to_vec() },
            ]
        );
        assert!(follower.skipping.is_empty() && !follower.behind());
    }
}
