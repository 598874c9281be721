//! Recorded inputs: files, `.gz` files, directories of them, and `-` for stdin, read in the order
//! given as one stream of records (routing.md §7).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::origin::{Origin, OriginInfo};

/// Longest record kept whole (wire.md: a huge line is counted malformed, never buffered whole).
pub const MAX_LINE: usize = 16 << 20;
/// Bytes of an oversized record kept for its diagnostics sample.
const HEAD: usize = 200;
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
/// `.gz`), recursively, in name order.
pub fn expand(paths: &[PathBuf]) -> io::Result<Vec<Input>> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
        } else if p.is_dir() {
            let mut files = Vec::new();
            collect_dir(p, &mut files).map_err(|e| with_path(&e, p))?;
            // By the path as text, not component by component: `s.jsonl` then `s/subagents/…`, so a
            // Claude Code session's own file comes before its sub-agents' ('.' sorts before '/'),
            // and a sub-agent's sidecar right before its transcript (it links the agent).
            files.sort_by_cached_key(|p| sort_key(p));
            out.extend(files.into_iter().map(Input::File));
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    Ok(out)
}

fn collect_dir(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_dir(&path, out)?;
        } else if is_recording_name(&path) {
            out.push(path);
        }
    }
    Ok(())
}

fn is_recording_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
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
    let raw: Box<dyn Read + Send> = match input {
        Input::Stdin => Box::new(io::stdin()),
        Input::File(p) if is_sidecar(p) => Box::new(io::Cursor::new(read_sidecar(p)?)),
        Input::File(p) => Box::new(File::open(p).map_err(|e| with_path(&e, p))?),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, raw);
    let gz = reader.fill_buf().map(|b| b.starts_with(&[0x1f, 0x8b]))?;
    Ok(if gz { Box::new(BufReader::with_capacity(READ_BUFFER, MultiGzDecoder::new(reader))) } else { Box::new(reader) })
}

/// Splits a reader into records, calling `each` for every one; returns the bytes read.
///
/// A record that is empty or only ASCII whitespace is not a record (routing.md §8). Lines are
/// handed out straight from the read buffer when they fit in it, copied only when they span reads.
pub fn read_records(reader: impl BufRead, max_line: usize, mut each: impl FnMut(Record<'_>)) -> io::Result<u64> {
    read_records_at(reader, max_line, |_, r| each(r))
}

/// [`read_records`], with each record's byte offset in the stream: a replay keeps offsets, not
/// bytes, and reads records back from the file when it applies them.
pub fn read_records_at(
    mut reader: impl BufRead,
    max_line: usize,
    mut each: impl FnMut(u64, Record<'_>),
) -> io::Result<u64> {
    let mut bytes = 0u64;
    let mut partial: Vec<u8> = Vec::new();
    let mut overflow: Option<usize> = None;
    // Where the line in `partial` began.
    let mut partial_at = 0u64;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut start = 0;
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

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

fn emit(line: &[u8], max_line: usize, each: &mut impl FnMut(Record<'_>)) {
    if is_blank(line) {
        return;
    }
    if line.len() > max_line {
        each(Record::TooLong { len: line.len(), head: &line[..HEAD.min(line.len())] });
    } else {
        each(Record::Line(line));
    }
}

/// Buffers part of a line that spans reads; past the bound only its length and head are kept.
fn append(partial: &mut Vec<u8>, overflow: &mut Option<usize>, piece: &[u8], max_line: usize) {
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
        Some(len) => each(Record::TooLong { len, head: partial }),
        None if !partial.is_empty() => emit(partial, max_line, each),
        None => {}
    }
    partial.clear();
}

#[cfg(test)]
mod tests {
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
        let (mut n, reader) = (0, open(&Input::File(path)).unwrap());
        let bytes = read_records(reader, MAX_LINE, |_| n += 1).unwrap();
        assert_eq!((n, bytes), (1, 9));
    }
}
