//! Inputs that hold nothing to show — an empty file, a folder with no recording in it, a file
//! of no agent's traffic (`stats /etc/passwd`, a binary) — are a one-line error naming the input
//! and why, exit 1, where they were an empty tree that exited 0 or a screen that waited for ever.

use std::path::PathBuf;

use color_eyre::eyre::{Result, eyre};

use crate::pipeline::Pipeline;
use crate::source::files;
use crate::source::recorded::{Piece, Recorded};
use crate::wire::decode;

/// A folder named on the command line with no recording in it: nothing of it would be read.
pub fn folders_hold_recordings(paths: &[PathBuf]) -> Result<()> {
    for p in paths.iter().filter(|p| p.is_dir()) {
        let found = files::expand(std::slice::from_ref(p)).map_err(|e| eyre!("listing {}: {e}", p.display()))?;
        if found.is_empty() {
            return Err(eyre!(
                "{}: no recording in this folder (no *.ndjson, *.jsonl or .gz file, no agent's store)",
                p.display()
            ));
        }
    }
    Ok(())
}

/// After a headless read: the inputs held at least one line of an agent's traffic.
pub fn required(paths: &[PathBuf], pipeline: &Pipeline) -> Result<()> {
    let c = pipeline.counters();
    let first = || pipeline.model.diagnostics.malformed.front().map(|m| (m.line_no, m.reason.clone()));
    required_of(paths, (c.lines, c.malformed), !pipeline.model.threads.is_empty(), first)
}

/// [`required`] of a stream read in parts: its `(lines, malformed)`, whether any thread was
/// made, and its first malformed line (its number and why).
pub fn required_of(
    paths: &[PathBuf],
    (lines, malformed): (u64, u64),
    threads: bool,
    first: impl FnOnce() -> Option<(u64, String)>,
) -> Result<()> {
    if lines == 0 {
        return Err(eyre!("{}: empty, nothing to read", named(paths)));
    }
    if malformed < lines || threads {
        return Ok(());
    }
    Err(no_traffic(paths, lines, first()))
}

/// Before a replay: the recording is not empty, and holds at least one line of an agent's
/// traffic. Looks no further than the first line that decodes (the first, in a recording).
pub fn required_in_replay(paths: &[PathBuf], recorded: &Recorded) -> Result<()> {
    if recorded.is_empty() {
        return Err(eyre!("{}: empty, nothing to replay", named(paths)));
    }
    let mut first_bad = None;
    let mut start = 0;
    while start < recorded.len() {
        let end = recorded.len().min(start.saturating_add(SCAN_SLICE));
        let mut found = false;
        let mut line_no = start as u64;
        let _ = recorded.each(start..end, |piece| match piece {
            Piece::Line(line) if !found => {
                line_no += 1;
                match decode(line) {
                    Ok(_) => found = true,
                    Err(e) => {
                        first_bad.get_or_insert((line_no, e.to_string()));
                    }
                }
            }
            Piece::TooLong { len, .. } if !found => {
                line_no += 1;
                first_bad.get_or_insert((line_no, format!("a line of {len} bytes, too long")));
            }
            _ => {}
        });
        if found {
            return Ok(());
        }
        start = end;
    }
    Err(no_traffic(paths, recorded.len() as u64, first_bad))
}

/// Records decoded between two looks at whether one was an agent's.
const SCAN_SLICE: usize = 4096;

fn no_traffic(paths: &[PathBuf], lines: u64, first: Option<(u64, String)>) -> color_eyre::Report {
    let why = first.map(|(n, reason)| format!(" (line {n}: {reason})")).unwrap_or_default();
    let lines = if lines == 1 { "its one line is not".to_owned() } else { format!("none of its {lines} lines is") };
    eyre!("{}: no agent traffic in it: {lines} an agent's{why}", named(paths))
}

/// The inputs as the user named them.
fn named(paths: &[PathBuf]) -> String {
    let shown = |p: &PathBuf| if p.as_os_str() == "-" { "stdin".to_owned() } else { p.display().to_string() };
    match paths {
        [one] => shown(one),
        [first, rest @ ..] => format!("{} (+{} more)", shown(first), rest.len()),
        [] => "the input".to_owned(),
    }
}
