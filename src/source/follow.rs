//! `--follow`: watches a replay's files and directories and reports what they gain — whole lines
//! only — as live events through the monitor's live channel, off the monitor's thread. Its one
//! job is noticing growth, woken by the file watcher ([`super::watch`]). Plain files are followed by their new lines; a sidecar (Claude Code's
//! `agent-<id>.meta.json`) is rewritten, not appended to, and is reported when it changes; a
//! `.gz` is not followed (it cannot be appended to line by line).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

pub use super::live::Change;
use super::live::Event;

use super::files::{self, Input};
use super::merge;
use super::watch::Watcher;

/// Longest time between two looks when the watcher reports nothing.
pub const POLL: Duration = Duration::from_secs(5);
/// Bytes read from one file per look: a file that grew by gigabytes is sent in pieces.
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
    /// Bytes read from one file per look ([`READ_MAX`]; tests read less).
    read_max: u64,
    behind: bool,
}

impl Follower {
    /// `files` from where each was read, and `dirs` where new files may appear.
    pub fn new(files: Vec<Watched>, dirs: Vec<PathBuf>) -> Self {
        let known = files.iter().map(|w| w.path.clone()).collect();
        Self { files, dirs, known, read_max: READ_MAX, behind: false }
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
        let max = self.read_max;
        let mut read = |w: &mut Watched, out: &mut Vec<Change>| {
            if files::is_sidecar(&w.path) {
                out.extend(rewritten(w));
            } else if look(&w.path, &mut w.read, max, out) {
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
            Change::Restarted { .. } | Change::Appeared { .. } => out.push(change),
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

/// What one file gained since `read` (up to `max` bytes), which moves past it, appended to
/// `out`; whether the file holds more than was read.
fn look(path: &PathBuf, read: &mut u64, max: u64, out: &mut Vec<Change>) -> bool {
    let Ok(mut file) = File::open(path) else { return false };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return false };
    if len < *read {
        *read = 0;
        out.push(Change::Restarted { file: path.clone() });
    }
    if len == *read || file.seek(SeekFrom::Start(*read)).is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    if file.take((len - *read).min(max)).read_to_end(&mut bytes).is_err() {
        return false;
    }
    let more = len - *read > bytes.len() as u64;
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else { return false };
    bytes.truncate(end + 1);
    let at = *read;
    *read += bytes.len() as u64;
    out.push(Change::Grew { file: path.clone(), at, bytes });
    more
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
        follower.read_max = 2 * line(100, "d").len() as u64;
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
            look(&path, read, READ_MAX, &mut out);
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
}
