//! Recorded inputs: files, `.gz` files, directories of them, and `-` for stdin, read in the order
//! given as one stream of records (routing.md §7).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::wire::{Origin, OriginInfo};

/// Longest record kept whole (wire.md: a huge line is counted malformed, never buffered whole).
pub const MAX_LINE: usize = 16 << 20;
/// Bytes of an oversized record kept for its diagnostics sample.
pub const HEAD: usize = 200;
const READ_BUFFER: usize = 1 << 20;

/// One input of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    pub fn name(&self) -> String {
        match self {
            Self::Stdin => "stdin".to_owned(),
            Self::File(p) => p.display().to_string(),
        }
    }
}

/// A record: a line without its `\n`, or the fact of a line too long to keep.
#[derive(Debug, Clone, Copy)]
pub enum Record<'a> {
    Line(&'a [u8]),
    TooLong { len: usize, head: &'a [u8] },
}

/// Expands the command line's inputs: a directory gives its `*.ndjson` / `*.jsonl` files (also
/// `.gz`), recursively, in name order, each file once however many links lead to it. In a
/// directory only regular files count: a FIFO or a device there (an OpenCode store's name
/// included) would block the read for ever; a path named on its own is read whatever it is.
pub fn expand(paths: &[PathBuf]) -> io::Result<Vec<Input>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
        } else if !p.is_dir() {
            out.push(Input::File(p.clone()));
        } else if let Some(store) = holds_store(p).then(|| super::opencode::store_at(p)).flatten() {
            // An OpenCode data directory: its store is the input.
            out.push(Input::File(store));
        } else {
            let mut files = collect_dir(p)?;
            // By the path as text, not component by component: `s.jsonl` then `s/subagents/…`, so a
            // Claude Code session's own file comes before its sub-agents' ('.' sorts before '/'),
            // and a sub-agent's sidecar right before its transcript (it links the agent).
            files.sort_by_cached_key(|p| sort_key(p));
            out.extend(files.into_iter().map(Input::File));
        }
    }
    Ok(out)
}

/// The recordings under `root`. Directories are entered by their canonical path, once each, so a
/// link back up (`a -> .`) cannot make the walk endless, and a file reached through several
/// links is read once (under the name that sorts first). The walk keeps its own stack: a deep
/// tree cannot overflow the call stack.
fn collect_dir(root: &Path) -> io::Result<Vec<PathBuf>> {
    use std::collections::{HashMap, HashSet};
    let mut entered: HashSet<PathBuf> = HashSet::new();
    let mut files: HashMap<PathBuf, PathBuf> = HashMap::new();
    // Each directory with its canonical path when it is known without asking: a directory that is
    // no link, listed in one whose canonical path is known, is there under its own name. Asked for
    // each, the walk's look for the links on the way was most of a repeated `report`'s look at a
    // Claude Code folder (a call per component of the path, per directory).
    let mut stack: Vec<(PathBuf, Option<PathBuf>)> = vec![(root.to_owned(), None)];
    while let Some((dir, known)) = stack.pop() {
        let canonical = match known {
            Some(c) => c,
            None => std::fs::canonicalize(&dir).map_err(|e| with_path(&e, &dir))?,
        };
        if !entered.insert(canonical.clone()) {
            continue;
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| with_path(&e, &dir))? {
            let entry = entry?;
            let path = entry.path();
            // The entry's own type, as the directory listing gives it: only a link needs a look
            // at what it leads to (the walk costs a few system calls per directory, not per file).
            let link = entry.file_type().map_or(true, |t| t.is_symlink());
            let is_dir = if link { path.is_dir() } else { entry.file_type().is_ok_and(|t| t.is_dir()) };
            // What is there and no regular file is never opened; a dangling link is kept.
            let special = if link {
                std::fs::metadata(&path).is_ok_and(|m| !m.is_file())
            } else {
                entry.file_type().is_ok_and(|t| !t.is_file())
            };
            if is_dir {
                let known = (!link).then(|| canonical.join(entry.file_name()));
                stack.push((path, known));
            } else if is_recording_name(&path) && !special {
                // A file that is no link is where its directory is; a link is followed. A dangling
                // link is kept as it is: opening it reports the error with its name.
                let key = if link {
                    std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())
                } else {
                    canonical.join(entry.file_name())
                };
                match files.entry(key) {
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(path);
                    }
                    std::collections::hash_map::Entry::Occupied(mut o) => {
                        if path.as_os_str() < o.get().as_os_str() {
                            o.insert(path);
                        }
                    }
                }
            }
        }
    }
    Ok(files.into_values().collect())
}

/// A directory (so `expand` found it) with a regular file where OpenCode keeps its store.
fn holds_store(dir: &Path) -> bool {
    super::regular::is_regular(&dir.join(super::opencode::STORE_NAME))
}

/// A name that is not UTF-8 is judged by its readable part.
fn is_recording_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default().to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    [".ndjson", ".jsonl"].iter().any(|ext| name.ends_with(ext)) || is_sidecar(path)
}

/// `agent-<id>.meta.json` sorts as `agent-<id>.jsonl` does, just before it.
fn sort_key(path: &Path) -> (std::ffi::OsString, bool) {
    let text = path.as_os_str().to_string_lossy();
    match text.strip_suffix(SIDECAR_SUFFIX) {
        Some(stem) if is_sidecar(path) => (format!("{stem}.jsonl").into(), false),
        _ => (path.as_os_str().to_owned(), true),
    }
}

const SIDECAR_SUFFIX: &str = ".meta.json";

/// A Claude Code sub-agent's sidecar, `agent-<id>.meta.json` (wire.md §6).
pub fn is_sidecar(path: &Path) -> bool {
    claude_agent(path).is_some_and(|(_, sidecar)| sidecar)
}

/// The Claude Code sub-agent a file is about, from its name: `agent-<id>.jsonl` (its transcript)
/// or `agent-<id>.meta.json` (its sidecar, `true`).
fn claude_agent(path: &Path) -> Option<(&str, bool)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("agent-")?;
    let (id, sidecar) = match stem.strip_suffix(SIDECAR_SUFFIX) {
        Some(id) => (id, true),
        None => (stem.strip_suffix(".gz").unwrap_or(stem).strip_suffix(".jsonl")?, false),
    };
    (!id.is_empty()).then_some((id, sidecar))
}

/// The session a sub-agent file belongs to: the `<sessionId>` of `<sessionId>/subagents/<file>`.
fn claude_session(path: &Path) -> Option<&str> {
    let dir = path.parent()?;
    if dir.file_name()? != "subagents" {
        return None;
    }
    dir.parent()?.file_name()?.to_str()
}

fn with_path(e: &io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The thread a Codex rollout file belongs to, from its name: `rollout-<time>-<threadId>.jsonl`.
pub fn rollout_thread(input: &Input) -> Option<String> {
    let Input::File(path) = input else { return None };
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let stem = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    let uuid_shaped =
        id.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() });
    uuid_shaped.then(|| id.to_owned())
}

/// What an input's name tells about its records (the thread of a Codex rollout file), passed
/// with each of them to the pipeline.
pub fn origin(input: &Input) -> Origin {
    let Input::File(path) = input else { return Origin::NONE };
    let agent = claude_agent(path);
    let thread = rollout_thread(input).or_else(|| agent.map(|(id, _)| id.to_owned()));
    Origin::new(OriginInfo {
        file: Some(path.to_string_lossy().into()),
        thread: thread.map(Into::into),
        session: agent.and(claude_session(path)).map(Into::into),
        sidecar: agent.is_some_and(|(_, sidecar)| sidecar),
        ahead: false,
    })
}

/// A sidecar as one record: the whole file, its line breaks (only ever between JSON tokens: a
/// string cannot hold a raw one) made spaces, ending in one `\n`.
pub fn read_sidecar(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path).map_err(|e| with_path(&e, path))?;
    for b in &mut bytes {
        if matches!(*b, b'\n' | b'\r') {
            *b = b' ';
        }
    }
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    bytes.push(b'\n');
    Ok(bytes)
}

/// Opens an input for reading, decompressing gzip (by magic number, so a renamed file works).
pub fn open(input: &Input) -> io::Result<Box<dyn BufRead + Send>> {
    open_buffered(input)
}

/// [`open`], unbuffered where the input is a plain file: for a reader that reads into buffers of
/// its own ([`Cutter`]), a buffer in between would only copy every byte once more.
pub fn open_unbuffered(input: &Input) -> io::Result<Box<dyn Read + Send>> {
    use std::os::unix::fs::FileExt;
    let Input::File(p) = input else { return Ok(Box::new(open_buffered(input)?)) };
    if is_sidecar(p) {
        return Ok(Box::new(open_buffered(input)?));
    }
    let file = File::open(p)?;
    // The kinds are told apart by the first bytes, read in place: the file is opened once.
    let mut head = [0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match file.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = &head[..n];
    if head == super::opencode::SQLITE_MAGIC {
        return Ok(Box::new(open_buffered(input)?));
    }
    Ok(if head.starts_with(&[0x1f, 0x8b]) { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) })
}

/// Whether a file starting with `head` (its first 16 bytes, or all of a shorter one) is read as
/// it lies: neither gzip nor a store of rows ([`open_unbuffered`] tells them so). A reader that
/// goes on from an offset (the daemon's sync, `store::carry`) may seek in it.
pub fn is_plain(head: &[u8]) -> bool {
    !head.starts_with(&[0x1f, 0x8b]) && !head.starts_with(super::opencode::SQLITE_MAGIC)
}

fn open_buffered(input: &Input) -> io::Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = match input {
        Input::Stdin => Box::new(io::stdin()),
        // OpenCode's store: its rows, as records (read through SQLite, never as bytes), a page at
        // a time.
        Input::File(p) if super::opencode::is_sqlite(p) => Box::new(super::opencode::snapshot_reader(p)?),
        Input::File(p) if is_sidecar(p) => Box::new(io::Cursor::new(read_sidecar(p)?)),
        // The caller names the input in its context ("opening X"); naming it here too would say
        // it twice.
        Input::File(p) => Box::new(File::open(p)?),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, raw);
    let gz = reader.fill_buf().map(|b| b.starts_with(&[0x1f, 0x8b]))?;
    Ok(if gz { Box::new(BufReader::with_capacity(READ_BUFFER, MultiGzDecoder::new(reader))) } else { Box::new(reader) })
}

/// Splits a reader into records, calling `each` for every one; returns the bytes read.
///
/// A record that is empty or only ASCII whitespace is not a record (routing.md §8). Lines are
/// handed out straight from the read buffer when they fit in it, copied only when they span reads.
///
/// A UTF-8 byte order mark at the very start is not part of the first record (editors on Windows
/// write one). When reading fails (a truncated `.gz`), the records before the failure have been
/// handed out, the incomplete last line too, and the error is returned: a caller can show the
/// figures of what was read along with the error.
pub fn read_records(reader: impl BufRead, max_line: usize, mut each: impl FnMut(Record<'_>)) -> io::Result<u64> {
    read_records_at(reader, max_line, |_, r| each(r))
}

/// [`read_records`], with each record's byte offset in the stream: a replay keeps offsets, not
/// bytes, and reads records back from the file when it applies them.
pub fn read_records_at(reader: impl BufRead, max_line: usize, each: impl FnMut(u64, Record<'_>)) -> io::Result<u64> {
    read_records_from(reader, max_line, true, each)
}

/// [`read_records_at`] on a reader that starts `at_start` of its input or not: a byte order mark
/// is only skipped at the start (a replay reads records back from the middle of a file).
pub fn read_records_from(
    mut reader: impl BufRead,
    max_line: usize,
    at_start: bool,
    mut each: impl FnMut(u64, Record<'_>),
) -> io::Result<u64> {
    let mut bytes = 0u64;
    let mut partial: Vec<u8> = Vec::new();
    let mut overflow: Option<usize> = None;
    // Where the line in `partial` began.
    let mut partial_at = 0u64;
    let mut first = at_start;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                finish_partial(&mut partial, &mut overflow, max_line, &mut |r| each(partial_at, r));
                return Err(e);
            }
        };
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut start = 0;
        if std::mem::take(&mut first) {
            // A mark split over two reads is not worth handling: readers fill far more than 3 bytes.
            if chunk.starts_with(BOM) {
                start = BOM.len();
            }
        }
        while let Some(i) = memchr::memchr(b'\n', &chunk[start..]) {
            let end = start + i;
            if partial.is_empty() && overflow.is_none() {
                emit(&chunk[start..end], max_line, &mut |r| each(bytes + start as u64, r));
            } else {
                append(&mut partial, &mut overflow, &chunk[start..end], max_line);
                finish_partial(&mut partial, &mut overflow, max_line, &mut |r| each(partial_at, r));
            }
            start = end + 1;
        }
        if partial.is_empty() && overflow.is_none() {
            partial_at = bytes + start as u64;
        }
        append(&mut partial, &mut overflow, &chunk[start..], max_line);
        bytes += len as u64;
        reader.consume(len);
    }
    finish_partial(&mut partial, &mut overflow, max_line, &mut |r| each(partial_at, r));
    Ok(bytes)
}

/// Where a record lies in a chunk's bytes: a line, or the head of a line too long to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Line(Range<usize>),
    TooLong { len: usize, head: Range<usize> },
}

impl Span {
    /// The record this span marks in `bytes`.
    pub fn record<'a>(&self, bytes: &'a [u8]) -> Record<'a> {
        match self {
            Self::Line(r) => Record::Line(&bytes[r.clone()]),
            Self::TooLong { len, head } => Record::TooLong { len: *len, head: &bytes[head.clone()] },
        }
    }
}

/// What [`Cutter::cut`] put in the buffer: whole lines (the last one may lack its `\n` at the
/// end of the input), or the head of one line over the bound, with the line's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    Lines(Range<usize>),
    TooLong { len: usize, head: Range<usize> },
}

impl Cut {
    /// The records of the cut, as [`read_records`] hands them out: blank lines and later pieces
    /// of over-long recorded lines are no records.
    pub fn spans(&self, bytes: &[u8], max_line: usize, spans: &mut Vec<Span>) {
        match self {
            Self::Lines(range) => {
                let mut start = range.start;
                let end = range.end;
                let mut push = |s: usize, e: usize| {
                    emit(&bytes[s..e], max_line, &mut |r| {
                        spans.push(match r {
                            Record::Line(_) => Span::Line(s..e),
                            Record::TooLong { len, head } => Span::TooLong { len, head: s..s + head.len() },
                        });
                    });
                };
                for nl in memchr::memchr_iter(b'\n', &bytes[start..end]) {
                    let stop = range.start + nl;
                    push(start, stop);
                    start = stop + 1;
                }
                if start < end {
                    push(start, end);
                }
            }
            Self::TooLong { len, head } => {
                if !super::recording::is_continuation(&bytes[head.clone()]) {
                    spans.push(Span::TooLong { len: *len, head: head.clone() });
                }
            }
        }
    }
}

/// Cuts one input into chunks of whole records, read straight into the caller's buffer (no
/// buffer in between, no copy of each record): the records are those of [`read_records`] on the
/// same reader, in the same order, however the reads fall.
pub struct Cutter<R> {
    reader: R,
    /// A buffer whose first `carried` bytes are the unfinished line after the last chunk's last
    /// `\n`: the next chunk is read into it, so those bytes are copied once, not twice.
    carry: Vec<u8>,
    carried: usize,
    max_line: usize,
    first: bool,
    ended: bool,
    /// A read that failed: returned once the records before it are handed out.
    failed: Option<io::Error>,
}

/// The smallest buffer a chunk is read into.
const MIN_CHUNK: usize = 512;

impl<R: Read> Cutter<R> {
    /// Lines over `max_line` (at least [`HEAD`]) bytes are [`Cut::TooLong`].
    pub fn new(reader: R, max_line: usize) -> Self {
        // A bound below the head's length would leave the head past what was read.
        Self {
            reader,
            carry: Vec::new(),
            carried: 0,
            max_line: max_line.max(HEAD),
            first: true,
            ended: false,
            failed: None,
        }
    }

    /// [`Cutter::new`], reading the next input's first tail into `spare` (a buffer a finished
    /// cutter gave back with [`Cutter::into_spare`]) rather than into a new one.
    pub fn with_spare(reader: R, max_line: usize, spare: Vec<u8>) -> Self {
        Self { carry: spare, ..Self::new(reader, max_line) }
    }

    /// The buffer kept for tails, for the next input's cutter.
    pub fn into_spare(self) -> Vec<u8> {
        self.carry
    }

    /// Reads the next chunk of at least `target` bytes (or up to the end) into `buf`, whose length
    /// is the room to read into (grown as a line needs, never shrunk here): whole lines, or one
    /// over-long line's head. `None` at the end of the input; the error of a failed read comes
    /// after the records read before it, the unfinished last line among them.
    pub fn cut(&mut self, buf: &mut Vec<u8>, target: usize) -> io::Result<Option<Cut>> {
        if self.ended {
            return self.failed.take().map_or(Ok(None), Err);
        }
        let mut filled = std::mem::take(&mut self.carried);
        if filled > 0 {
            // The caller's buffer holds the next tail.
            std::mem::swap(buf, &mut self.carry);
        }
        let room = target.max(MIN_CHUNK).max(filled.saturating_mul(2));
        if buf.len() < room {
            buf.resize(room, 0);
        }
        let mut start = 0;
        // Bytes from `start` up to here hold no `\n`.
        let mut searched = 0;
        loop {
            if filled == buf.len() {
                if let Some(end) = self.last_line_end(buf, searched.max(start), filled) {
                    return Ok(Some(Cut::Lines(start..end)));
                }
                searched = filled;
                if filled - start > self.max_line {
                    return self.too_long(buf, start, filled).map(Some);
                }
                let grown = buf.len().saturating_mul(2).min(start + self.max_line + 1);
                buf.resize(grown, 0);
            }
            let n = match self.reader.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.failed = Some(e);
                    0
                }
            };
            if std::mem::take(&mut self.first) && buf[..filled + n].starts_with(BOM) {
                start = BOM.len();
            }
            filled += n;
            if n == 0 {
                self.ended = true;
                return if start < filled {
                    Ok(Some(Cut::Lines(start..filled)))
                } else {
                    self.failed.take().map_or(Ok(None), Err)
                };
            }
            if filled - start >= target {
                if let Some(end) = self.last_line_end(buf, searched.max(start), filled) {
                    return Ok(Some(Cut::Lines(start..end)));
                }
                searched = filled;
            }
        }
    }

    /// The end of the last whole line in `buf[from..filled]`, keeping what follows it for the
    /// next chunk.
    fn last_line_end(&mut self, buf: &[u8], from: usize, filled: usize) -> Option<usize> {
        let end = from + memchr::memrchr(b'\n', &buf[from..filled])? + 1;
        self.keep(&buf[end..filled]);
        Some(end)
    }

    /// Keeps the bytes after a chunk's last whole line for the next chunk.
    fn keep(&mut self, tail: &[u8]) {
        if self.carry.len() < tail.len() {
            self.carry.resize(tail.len(), 0);
        }
        self.carry[..tail.len()].copy_from_slice(tail);
        self.carried = tail.len();
    }

    /// A line over the bound fills `buf[start..filled]`: keeps its head, reads past its end.
    fn too_long(&mut self, buf: &mut [u8], start: usize, mut filled: usize) -> io::Result<Cut> {
        let head = start..start + HEAD;
        let mut len = filled - start;
        // The rest of the line is read over the bytes after the head, and counted.
        loop {
            filled = head.end;
            let n = match self.reader.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.failed = Some(e);
                    0
                }
            };
            if n == 0 {
                self.ended = true;
                return Ok(Cut::TooLong { len, head });
            }
            if let Some(nl) = memchr::memchr(b'\n', &buf[filled..filled + n]) {
                self.keep(&buf[filled + nl + 1..filled + n]);
                return Ok(Cut::TooLong { len: len + nl, head });
            }
            len += n;
        }
    }
}

/// The UTF-8 byte order mark.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

pub(super) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

fn emit(line: &[u8], max_line: usize, each: &mut impl FnMut(Record<'_>)) {
    // A later piece of an over-long line was counted with its first piece.
    if is_blank(line) || super::recording::is_continuation(line) {
        return;
    }
    if line.len() > max_line {
        each(Record::TooLong { len: line.len(), head: &line[..HEAD.min(line.len())] });
    } else {
        each(Record::Line(line));
    }
}

/// Buffers part of a line that spans reads; past the bound only its length and head are kept.
pub(super) fn append(partial: &mut Vec<u8>, overflow: &mut Option<usize>, piece: &[u8], max_line: usize) {
    if let Some(n) = overflow {
        *n += piece.len();
    } else if partial.len() + piece.len() > max_line {
        *overflow = Some(partial.len() + piece.len());
        let room = HEAD.saturating_sub(partial.len());
        partial.extend_from_slice(&piece[..room.min(piece.len())]);
        partial.truncate(HEAD);
        partial.shrink_to(HEAD);
    } else {
        partial.extend_from_slice(piece);
    }
}

fn finish_partial(
    partial: &mut Vec<u8>,
    overflow: &mut Option<usize>,
    max_line: usize,
    each: &mut impl FnMut(Record<'_>),
) {
    match overflow.take() {
        Some(_) if super::recording::is_continuation(partial) => {}
        Some(len) => each(Record::TooLong { len, head: partial }),
        None if !partial.is_empty() => emit(partial, max_line, each),
        None => {}
    }
    partial.clear();
}

/// Bytes shaped like recordings for the readers' property tests: blank lines, CRLF, BOMs,
/// continued records, words, and lines past the buffers' sizes.
#[cfg(test)]
pub(crate) fn record_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"  \t".to_vec()),
        Just(BOM.to_vec()),
        Just(b"{\"ts\":1,\"dir\":\"s2c\",\"continued\":true,\"rawB64\":\"eHh4\"}".to_vec()),
        proptest::collection::vec(b'a'..=b'z', 0..40),
        (1usize..3).prop_map(|k| vec![b'x'; k * 300]),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn claude_sub_agent_files_name_their_agent_and_session_and_sidecars_come_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("s1/subagents");
        std::fs::create_dir_all(&sub).expect("mkdir");
        for name in ["agent-b2.jsonl", "agent-a1.jsonl", "agent-a1.meta.json", "agent-b2.meta.json", "notes.json"] {
            std::fs::write(sub.join(name), "{}\n").expect("write");
        }
        std::fs::write(dir.path().join("s1.jsonl"), "{}\n").expect("write");
        let names: Vec<String> = expand(&[dir.path().to_path_buf()])
            .expect("expand")
            .iter()
            .map(|i| i.name().rsplit('/').next().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(names, ["s1.jsonl", "agent-a1.meta.json", "agent-a1.jsonl", "agent-b2.meta.json", "agent-b2.jsonl"]);
        let meta = origin(&Input::File(sub.join("agent-a1.meta.json")));
        let info = meta.info().expect("an origin");
        assert_eq!((info.thread.as_deref(), info.session.as_deref(), info.sidecar), (Some("a1"), Some("s1"), true));
        let transcript = origin(&Input::File(sub.join("agent-a1.jsonl")));
        assert!(!transcript.info().expect("an origin").sidecar);
        // An old-layout sub-agent file beside its session names no session.
        let old = origin(&Input::File(dir.path().join("agent-c3.jsonl")));
        assert_eq!((old.thread(), old.info().and_then(|i| i.session.as_deref())), (Some("c3"), None));
    }

    #[test]
    fn a_sidecar_reads_as_one_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agent-a1.meta.json");
        std::fs::write(&path, "{\n  \"spawnDepth\": 2\n}\n").expect("write");
        let mut got = Vec::new();
        read_records(open(&Input::File(path)).expect("open"), MAX_LINE, |r| {
            if let Record::Line(l) = r {
                got.push(String::from_utf8_lossy(l).into_owned());
            }
        })
        .expect("read");
        assert_eq!(got, ["{   \"spawnDepth\": 2 }"]);
    }

    fn records(data: &[u8], cap: usize, max: usize) -> (Vec<String>, u64) {
        let mut out = Vec::new();
        let reader = BufReader::with_capacity(cap, data);
        let bytes = read_records(reader, max, |r| {
            out.push(match r {
                Record::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Record::TooLong { len, head } => {
                    format!("TOO LONG {len} {}", String::from_utf8_lossy(head).len())
                }
            });
        })
        .unwrap();
        (out, bytes)
    }

    #[test]
    fn offsets_point_at_each_record_whatever_the_buffer() {
        let data = b"a\n\n  \nbcd\r\nefghij\nk";
        for cap in [1, 2, 3, 5, 64] {
            let mut seen = Vec::new();
            read_records_at(BufReader::with_capacity(cap, &data[..]), 1 << 20, |at, r| {
                if let Record::Line(l) = r {
                    assert_eq!(&data[at as usize..at as usize + l.len()], l, "buffer {cap}");
                    seen.push(at);
                }
            })
            .unwrap();
            assert_eq!(seen, [0, 6, 11, 18], "buffer {cap}");
        }
    }

    #[test]
    fn splits_on_newlines_and_skips_blank_records() {
        let data = b"a\n\n  \t\r\nbb\r\nccc";
        for cap in [1, 2, 3, 64] {
            let (r, bytes) = records(data, cap, 100);
            assert_eq!(r, ["a", "bb\r", "ccc"], "buffer {cap}");
            assert_eq!(bytes, data.len() as u64);
        }
    }

    #[test]
    fn oversized_lines_are_reported_not_kept() {
        let mut data = vec![b'x'; 1000];
        data.extend_from_slice(b"\nok\n");
        for cap in [7, 4096] {
            let (r, _) = records(&data, cap, 500);
            assert_eq!(r, ["TOO LONG 1000 200", "ok"], "buffer {cap}");
        }
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_record() {
        for cap in [3, 5, 64] {
            let (r, bytes) = records(b"\xef\xbb\xbf{}\n\xef\xbb\xbf[]\n", cap, 100);
            assert_eq!(r, ["{}", "\u{feff}[]"], "buffer {cap}: only the stream's first mark goes");
            assert_eq!(bytes, 12);
        }
    }

    #[test]
    fn a_truncated_gz_gives_what_was_read_then_the_error() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for i in 0..2000 {
            writeln!(enc, "{{\"id\":{i},\"result\":{{}}}}").unwrap();
        }
        let gz = enc.finish().unwrap();
        let cut = &gz[..gz.len() / 2];
        let reader = BufReader::new(MultiGzDecoder::new(cut));
        let mut n = 0;
        let err = read_records(reader, MAX_LINE, |_| n += 1).unwrap_err();
        assert!(n > 100 && n < 2000, "{n} records before the cut");
        assert!(err.to_string().contains("deflate"), "{err}");
    }

    #[test]
    fn links_back_up_are_walked_once_and_each_file_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("s.ndjson"), b"{}\n").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/t.jsonl"), b"{}\n").unwrap();
        std::os::unix::fs::symlink(".", root.join("a")).unwrap();
        std::os::unix::fs::symlink(".", root.join("b")).unwrap();
        std::os::unix::fs::symlink("..", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("s.ndjson", root.join("z-link.ndjson")).unwrap();
        let found = expand(&[root.to_owned()]).unwrap();
        let names: Vec<String> = found
            .iter()
            .map(|i| match i {
                Input::File(p) => p.strip_prefix(root).unwrap().display().to_string(),
                Input::Stdin => "-".into(),
            })
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().any(|n| n.ends_with("s.ndjson")), "{names:?}");
        assert!(names.iter().any(|n| n.ends_with("t.jsonl")), "{names:?}");
    }

    #[test]
    fn rollout_files_name_their_thread() {
        let file = |n: &str| Input::File(PathBuf::from("/s/2026/11/29").join(n));
        let id = "01a2292d-f8ac-71e0-b822-647118037869";
        assert_eq!(rollout_thread(&file(&format!("rollout-2026-11-29T21-20-08-{id}.jsonl"))).as_deref(), Some(id));
        assert_eq!(rollout_thread(&file(&format!("rollout-2026-11-29T21-20-08-{id}.jsonl.gz"))).as_deref(), Some(id));
        assert_eq!(rollout_thread(&file("rollout-short.jsonl")), None);
        assert_eq!(rollout_thread(&file(&format!("other-{id}.jsonl"))), None);
        assert_eq!(rollout_thread(&Input::Stdin), None);
    }

    #[test]
    fn gzip_is_detected_by_magic() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.data");
        let mut enc = flate2::write::GzEncoder::new(File::create(&path).unwrap(), flate2::Compression::fast());
        enc.write_all(b"{\"id\":1}\n").unwrap();
        enc.finish().unwrap();
        let (mut n, reader) = (0, open(&Input::File(path.clone())).unwrap());
        let bytes = read_records(reader, MAX_LINE, |_| n += 1).unwrap();
        assert_eq!((n, bytes), (1, 9));
        let (records, ended) = cut_records(open_unbuffered(&Input::File(path)).unwrap(), MAX_LINE, 4096);
        assert_eq!((records, ended), (vec![(b"{\"id\":1}".to_vec(), None)], true));
    }

    /// A reader that hands out its bytes in the given sizes, then fails if told to.
    struct Pieces<'a> {
        data: &'a [u8],
        sizes: std::iter::Cycle<std::vec::IntoIter<usize>>,
        fail_at_end: bool,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() {
                return if self.fail_at_end { Err(io::Error::other("cut short")) } else { Ok(0) };
            }
            let n = self.sizes.next().unwrap_or(1).clamp(1, buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// A record's bytes (its head, when too long) and its length when too long.
    type Owned = (Vec<u8>, Option<usize>);

    fn owned(r: Record<'_>) -> Owned {
        match r {
            Record::Line(l) => (l.to_vec(), None),
            Record::TooLong { len, head } => (head.to_vec(), Some(len)),
        }
    }

    /// Every record through [`Cutter`], in `target`-byte chunks, and how reading ended.
    fn cut_records(reader: impl Read, max_line: usize, target: usize) -> (Vec<Owned>, bool) {
        let (mut cutter, mut buf, mut out) = (Cutter::new(reader, max_line), Vec::new(), Vec::new());
        loop {
            let mut spans = Vec::new();
            match cutter.cut(&mut buf, target) {
                Ok(Some(cut)) => {
                    cut.spans(&buf, max_line, &mut spans);
                    out.extend(spans.iter().map(|s| owned(s.record(&buf))));
                }
                Ok(None) => return (out, true),
                Err(_) => return (out, false),
            }
        }
    }

    proptest! {
        #[test]
        fn the_cutter_gives_the_records_read_records_gives(
            data in record_bytes(),
            sizes in proptest::collection::vec(1usize..700, 1..6),
            target in prop_oneof![Just(1usize), 1usize..2000],
            max_line in HEAD..900,
            fail_at_end: bool,
        ) {
            let reader = || Pieces { data: &data, sizes: sizes.clone().into_iter().cycle(), fail_at_end };
            let mut expected = Vec::new();
            let ended = read_records(BufReader::with_capacity(64, reader()), max_line, |r| expected.push(owned(r))).is_ok();
            let (got, got_ended) = cut_records(reader(), max_line, target);
            prop_assert_eq!(got, expected);
            prop_assert_eq!(got_ended, ended);
        }
    }
}
