//! `--follow`: watches a replay's files and directories and reports what they gain — whole lines
//! only — as live events through the monitor's live channel, off the monitor's thread. Its one
//! job is noticing growth; it polls today, and a file-system watcher can take its place without
//! the rest changing. Only plain files are followed (a `.gz` cannot be appended to line by line).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use super::files::{self, Input};
use super::live::Event;

/// How often the files are looked at.
pub const POLL: Duration = Duration::from_millis(250);
/// Bytes read from one file per look: a file that grew by gigabytes is sent in pieces.
pub const READ_MAX: u64 = 8 << 20;

/// What happened to a followed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Whole lines were appended: `bytes` start at byte `at` of `file`.
    Grew { file: PathBuf, at: u64, bytes: Vec<u8> },
    /// The file is now shorter than what was read (replaced, truncated): it is read again from
    /// its start.
    Restarted { file: PathBuf },
    /// A new file appeared in a followed directory; its lines follow as `Grew` from byte 0.
    Appeared { file: PathBuf },
}

/// Follows `files` (each from the offset already read) and new files in `dirs`, sending changes
/// to `tx` until its receiver is gone.
pub fn spawn(files: Vec<(PathBuf, u64)>, dirs: Vec<PathBuf>, tx: mpsc::Sender<Event>) -> io::Result<()> {
    std::thread::Builder::new().name("follow".to_owned()).spawn(move || run(files, &dirs, &tx))?;
    Ok(())
}

fn run(mut files: Vec<(PathBuf, u64)>, dirs: &[PathBuf], tx: &mpsc::Sender<Event>) {
    let mut known: HashSet<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    loop {
        std::thread::sleep(POLL);
        for (path, read) in &mut files {
            for change in look(path, read) {
                if tx.blocking_send(Event::Followed(change)).is_err() {
                    return;
                }
            }
        }
        if dirs.is_empty() {
            continue;
        }
        let Ok(found) = files::expand(dirs) else { continue };
        for input in found {
            let Input::File(path) = input else { continue };
            if known.insert(path.clone()) {
                if tx.blocking_send(Event::Followed(Change::Appeared { file: path.clone() })).is_err() {
                    return;
                }
                files.push((path, 0));
            }
        }
    }
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
