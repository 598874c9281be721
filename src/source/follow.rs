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
}

impl Follower {
    /// `files` from where each was read, and `dirs` where new files may appear.
    pub fn new(files: Vec<Watched>, dirs: Vec<PathBuf>) -> Self {
        let known = files.iter().map(|w| w.path.clone()).collect();
        Self { files, dirs, known }
    }

    /// One look: what the files gained and which files appeared since the last, in stream time
    /// ([`by_time`]).
    pub fn changes(&mut self) -> Vec<Change> {
        by_time(self.look())
    }

    /// What the files gained, file by file.
    fn look(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        for w in &mut self.files {
            out.extend(if files::is_sidecar(&w.path) { rewritten(w) } else { look(&w.path, &mut w.read) });
        }
        if self.dirs.is_empty() {
            return out;
        }
        let Ok(found) = files::expand(&self.dirs) else { return out };
        for input in found {
            let Input::File(path) = input else { continue };
            if self.known.insert(path.clone()) {
                out.push(Change::Appeared { file: path.clone() });
                let mut w = Watched { path, read: 0, modified: None };
                // What the new file holds already comes at once, not a poll later.
                out.extend(if files::is_sidecar(&w.path) { rewritten(&mut w) } else { look(&w.path, &mut w.read) });
                self.files.push(w);
            }
        }
        out
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
            let _ = watcher.wait(POLL);
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

/// What one look found, its lines in stream time: files restarted or appeared first, then every
/// file's new lines interleaved by their times ([`merge::runs`]: a parent's lines written while
/// its children worked no longer all go before theirs), then the sidecars rewritten (a sub-agent's
/// `finished` after its last lines).
fn by_time(changes: Vec<Change>) -> Vec<Change> {
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
    for (n, range) in merge::runs(&chunks) {
        let (file, at, bytes) = &grown[n];
        let at = at + range.start as u64;
        out.push(Change::Grew { file: file.clone(), at, bytes: bytes[range].to_vec() });
    }
    out.extend(rewritten);
    out
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

/// What one file gained since `read`, which moves past it.
fn look(path: &PathBuf, read: &mut u64) -> Vec<Change> {
    let mut out = Vec::new();
    let Ok(mut file) = File::open(path) else { return out };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return out };
    if len < *read {
        *read = 0;
        out.push(Change::Restarted { file: path.clone() });
    }
    if len == *read || file.seek(SeekFrom::Start(*read)).is_err() {
        return out;
    }
    let mut bytes = Vec::new();
    if file.take((len - *read).min(READ_MAX)).read_to_end(&mut bytes).is_err() {
        return out;
    }
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else { return out };
    bytes.truncate(end + 1);
    let at = *read;
    *read += bytes.len() as u64;
    out.push(Change::Grew { file: path.clone(), at, bytes });
    out
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
        let got = by_time(vec![
            sidecar.clone(),
            Change::Grew { file: parent.clone(), at: 100, bytes: [p1.clone(), p2.clone()].concat().into_bytes() },
            Change::Appeared { file: child.clone() },
            Change::Grew { file: child.clone(), at: 0, bytes: c1.clone().into_bytes() },
        ]);
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

    #[test]
    fn whole_lines_from_where_it_was_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.ndjson");
        std::fs::write(&path, "one\ntw").expect("write");
        let mut read = 0;
        assert_eq!(look(&path, &mut read), [Change::Grew { file: path.clone(), at: 0, bytes: b"one\n".to_vec() }]);
        assert_eq!(look(&path, &mut read), [], "half a line is not sent");
        std::fs::write(&path, "x\n").expect("rewrite");
        assert_eq!(
            look(&path, &mut read),
            [
                Change::Restarted { file: path.clone() },
                Change::Grew { file: path.clone(), at: 0, bytes: b"x\n".to_vec() }
            ]
        );
    }
}
