//! The recording writer of `recording.md`: a header line, then one envelope per input line, built
//! as bytes so that every original line survives verbatim (key order, spacing, number spelling).
//!
//! Files are appended with plain `write`s and never buffered in the process: once `append`
//! returns, a crash of swarmtop (even `SIGKILL`) cannot lose the record. There is no `fsync` per
//! line; surviving a power cut would cost the proxy its throughput.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::Deserialize;
use serde::de::IgnoredAny;

pub const FORMAT_VERSION: u32 = 1;

/// Longest line kept in one record. A longer line (no newline for 64 MiB) is recorded in pieces,
/// so the carry buffer stays bounded while the concatenated pieces still give back the exact
/// bytes: the first a `rawB64` record with `"partial":true`, each later one a `rawB64` record
/// with `"continued":true` right after `dir` (and `"partial":true` while more follow). Readers
/// count the line once, by its first piece: a continuation is not a line of its own
/// ([`is_continuation`]), so a live view, `stats` on the recording and `stats` on the original
/// input agree.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// What follows `dir` in a continuation piece's envelope.
const CONTINUED: &[u8] = b"\"continued\":true,\"rawB64\":\"";

/// Whether a record (or the head of one) is a later piece of an over-long line (see
/// [`MAX_LINE_BYTES`]). Only raw pieces qualify: a record with a `msg` is never skipped.
pub fn is_continuation(record: &[u8]) -> bool {
    // `{"ts":<at most 20 digits>,"dir":"<3 letters>",` comes first: the marker starts by byte 48.
    record.starts_with(b"{\"ts\":")
        && memchr::memmem::find(&record[..record.len().min(48 + CONTINUED.len())], CONTINUED).is_some()
}

/// Which side a line came from (`recording.md`, envelope `dir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    ServerToClient,
    ClientToServer,
    In,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ServerToClient => "s2c",
            Self::ClientToServer => "c2s",
            Self::In => "in",
        }
    }
}

/// The `source` of a recording header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Tee,
    Stdin,
    Listen,
    Attach,
    File,
    /// An OpenCode store followed, or `opencode serve`'s event stream.
    OpenCode,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tee => "tee",
            Self::Stdin => "stdin",
            Self::Listen => "listen",
            Self::Attach => "attach",
            Self::File => "file",
            Self::OpenCode => "opencode",
        }
    }
}

/// Unix time in milliseconds; a clock before 1970 reads as 0 rather than failing a recording.
pub fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A time as unix milliseconds (`None` before 1970 or past what an `i64` holds).
pub fn ms_of(t: SystemTime) -> Option<i64> {
    t.duration_since(UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok())
}

/// The header line (with its `\n`), members in the order `recording.md` shows them.
pub fn header_line(source: Source, command: Option<&[OsString]>, started_ms: i64) -> Vec<u8> {
    let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    let json = |s: &str| serde_json::Value::from(s).to_string();
    let mut line = format!(
        "{{\"swarmtop\":\"recording\",\"version\":{FORMAT_VERSION},\"startedMs\":{started_ms},\"source\":\"{}\"",
        source.as_str()
    );
    if let Some(command) = command {
        let args: Vec<String> = command.iter().map(|a| json(&a.to_string_lossy())).collect();
        line.push_str(",\"command\":[");
        line.push_str(&args.join(","));
        line.push(']');
    }
    line.push_str(",\"host\":");
    line.push_str(&json(&host));
    line.push_str("}\n");
    line.into_bytes()
}

/// Deepest nesting of arrays and objects embedded verbatim: an envelope adds one level around the
/// line, and `serde_json` readers refuse documents nested more than 128 deep, so a deeper line is
/// kept as `rawB64` instead of making its record unreadable.
const EMBED_DEPTH: usize = 100;

/// Whether `line` can be embedded verbatim as the value of `msg`: the tee asks this of every line
/// it forwards.
pub fn is_json(line: &[u8]) -> bool {
    crate::wire::json::valid::is_document(line, EMBED_DEPTH)
}

/// Appends one envelope (with its `\n`) for `line` (without its `\n`) to `out`.
pub fn encode_record(out: &mut Vec<u8>, ts: i64, dir: Dir, line: &[u8], partial: bool) {
    encode_prefix(out, ts, dir);
    encode_body(out, line, is_json(line), partial);
}

fn encode_prefix(out: &mut Vec<u8>, ts: i64, dir: Dir) {
    // `write!` into a Vec cannot fail.
    let _ = write!(out, "{{\"ts\":{ts},\"dir\":\"{}\",", dir.as_str());
}

fn encode_body(out: &mut Vec<u8>, line: &[u8], json: bool, partial: bool) {
    // Reserved once and encoded in place: a piece can be 16 MiB, and growing `out` by doubling
    // beside a separate base64 copy held three times the piece at its peak.
    const FRAME: usize = 40;
    if json {
        out.reserve(line.len() + FRAME);
        out.extend_from_slice(b"\"msg\":");
        out.extend_from_slice(line);
    } else {
        let encoded = base64::encoded_len(line.len(), true).unwrap_or(usize::MAX);
        out.reserve(encoded.saturating_add(FRAME));
        out.extend_from_slice(b"\"rawB64\":\"");
        let start = out.len();
        out.resize(start + encoded, 0);
        let written = base64::engine::general_purpose::STANDARD
            .encode_slice(line, &mut out[start..])
            .expect("sized by encoded_len");
        out.truncate(start + written);
        out.push(b'"');
    }
    if partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    out.extend_from_slice(b"}\n");
}

/// How a source treats lines that are already recording records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// Every line is wrapped (the tee: whatever the peers say is data).
    Always,
    /// Envelopes from a producer are kept as they are (`listen`: "raw lines or envelopes"),
    /// instead of being wrapped twice; everything else is wrapped.
    KeepEnvelopes,
}

/// Splits one direction's byte stream into lines and encodes each complete line as a record.
/// Bytes after the last newline wait in the carry until their line completes or the stream ends.
#[derive(Debug)]
pub struct Encoder {
    dir: Dir,
    wrap: Wrap,
    carry: Vec<u8>,
    finished: bool,
    max_line: usize,
    /// A piece of the current line has been recorded: what follows of it is a continuation.
    continuing: bool,
}

impl Encoder {
    pub fn new(dir: Dir, wrap: Wrap) -> Self {
        Self { dir, wrap, carry: Vec::new(), finished: false, max_line: MAX_LINE_BYTES, continuing: false }
    }

    /// With a lower bound than [`MAX_LINE_BYTES`] on the bytes carried for one line (a source
    /// with many producers at once bounds each of them more tightly).
    #[must_use]
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line.clamp(1, MAX_LINE_BYTES);
        self
    }

    /// Encodes the complete lines of `chunk` (plus what was carried) into `out`.
    pub fn encode(&mut self, ts: i64, chunk: &[u8], out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        // Every line of one read shares its time: the prefix is formatted once.
        let mut prefix = Vec::with_capacity(48);
        encode_prefix(&mut prefix, ts, self.dir);
        let mut rest = chunk;
        if !self.carry.is_empty() || self.continuing {
            let Some(i) = memchr::memchr(b'\n', rest) else {
                self.carry.extend_from_slice(rest);
                self.bound_carry(&prefix, out);
                return;
            };
            self.carry.extend_from_slice(&rest[..i]);
            let line = std::mem::take(&mut self.carry);
            if std::mem::take(&mut self.continuing) {
                continuation(out, &prefix, &line, false);
            } else {
                self.line(out, &prefix, &line, false);
            }
            // Keep the allocation for the next line that spans reads.
            self.carry = line;
            self.carry.clear();
            rest = &rest[i + 1..];
        }
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line(out, &prefix, &rest[..i], false);
            rest = &rest[i + 1..];
        }
        self.carry.extend_from_slice(rest);
        self.bound_carry(&prefix, out);
    }

    /// The stream ended: a pending line without newline becomes a `partial` record. Later
    /// `encode` calls add nothing (a pump still running after the end must not append after the
    /// end marker).
    pub fn finish(&mut self, ts: i64, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        if !self.carry.is_empty() {
            let mut prefix = Vec::with_capacity(48);
            encode_prefix(&mut prefix, ts, self.dir);
            let line = std::mem::take(&mut self.carry);
            if self.continuing {
                continuation(out, &prefix, &line, true);
            } else {
                self.line(out, &prefix, &line, true);
            }
        }
    }

    fn bound_carry(&mut self, prefix: &[u8], out: &mut Vec<u8>) {
        if self.carry.len() >= self.max_line {
            let piece = std::mem::take(&mut self.carry);
            if self.continuing {
                continuation(out, prefix, &piece, true);
            } else {
                out.extend_from_slice(prefix);
                encode_body(out, &piece, false, true);
                self.continuing = true;
            }
        }
    }

    fn line(&self, out: &mut Vec<u8>, prefix: &[u8], line: &[u8], partial: bool) {
        let json = match self.wrap {
            Wrap::Always => is_json(line),
            Wrap::KeepEnvelopes => match probe(line) {
                Probe::Envelope if !partial => {
                    out.extend_from_slice(line);
                    out.push(b'\n');
                    return;
                }
                Probe::Envelope | Probe::Json => true,
                Probe::NotJson => false,
            },
        };
        out.extend_from_slice(prefix);
        encode_body(out, line, json, partial);
    }
}

/// A later piece of an over-long line: raw bytes, marked so that readers do not count it again.
fn continuation(out: &mut Vec<u8>, prefix: &[u8], piece: &[u8], partial: bool) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(b"\"continued\":true,");
    encode_body(out, piece, false, partial);
}

enum Probe {
    Envelope,
    Json,
    NotJson,
}

/// An envelope has `ts`, `dir` and one of `msg` / `rawB64` at the top level.
fn probe(line: &[u8]) -> Probe {
    #[derive(Deserialize)]
    struct Top {
        ts: Option<i64>,
        dir: Option<IgnoredAny>,
        msg: Option<IgnoredAny>,
        #[serde(rename = "rawB64")]
        raw_b64: Option<IgnoredAny>,
    }
    if !is_json(line) {
        return Probe::NotJson;
    }
    match std::str::from_utf8(line).map(serde_json::from_str::<Top>) {
        Ok(Ok(t)) if t.ts.is_some() && t.dir.is_some() && (t.msg.is_some() || t.raw_b64.is_some()) => Probe::Envelope,
        _ => Probe::Json,
    }
}

/// An open recording: the file and how many bytes it holds.
#[derive(Debug)]
pub struct Recorder {
    file: File,
    path: PathBuf,
    len: u64,
    /// Tests fill the disk: writes past this length fail, after writing what fits.
    #[cfg(test)]
    full_at: Option<u64>,
}

impl Recorder {
    /// Creates `path` (mode 0600, parent directories 0700 as needed) and writes `header`.
    /// An existing file is never reused: recordings are append-only and start with their header.
    pub fn create(path: &Path, header: &[u8]) -> io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        // The umask can only remove bits from 0600, but a recording holds the whole session:
        // make the mode exact whatever the umask.
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        let mut rec = Self {
            file,
            path: path.to_owned(),
            len: 0,
            #[cfg(test)]
            full_at: None,
        };
        rec.append(header)?;
        Ok(rec)
    }

    /// Appends whole records; returns the offset they start at. A write that fails part-way (disk
    /// full) is cut back off, so that the recording still ends on a whole record; the file is then
    /// as it was before the call, and [`Recorder::len`] says how much of it is good.
    pub fn append(&mut self, records: &[u8]) -> io::Result<u64> {
        let start = self.len;
        if let Err(e) = self.write(records) {
            // Best effort: if even this fails, readers still stop at the torn line's missing `\n`.
            if self.file.set_len(start).is_ok() {
                let _ = self.file.seek(io::SeekFrom::Start(start));
            }
            return Err(e);
        }
        self.len += records.len() as u64;
        Ok(start)
    }

    fn write(&mut self, records: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        if let Some(full_at) = self.full_at {
            let room = usize::try_from(full_at.saturating_sub(self.len)).unwrap_or(usize::MAX);
            if records.len() > room {
                self.file.write_all(&records[..room])?;
                return Err(io::ErrorKind::StorageFull.into());
            }
        }
        self.file.write_all(records)
    }

    /// This recorder on a disk that is full once the file holds `len` bytes.
    #[cfg(test)]
    pub(crate) fn failing_after(mut self, len: u64) -> Self {
        self.full_at = Some(len);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `$XDG_STATE_HOME/swarmtop/recordings` (else `~/.local/state/swarmtop/recordings`).
pub fn default_dir() -> io::Result<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        // The XDG spec says relative values are invalid and must be ignored.
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".local/state"))
        })
        .ok_or_else(|| io::Error::other("neither XDG_STATE_HOME nor HOME is set"))?;
    Ok(state.join("swarmtop").join("recordings"))
}

/// `YYYYMMDDTHHMMSSZ-<source>-<pid>.ndjson`: names sort by time.
pub fn default_file_name(source: Source, started_ms: i64, pid: u32) -> String {
    format!("{}-{}-{pid}.ndjson", utc_stamp(started_ms.div_euclid(1000)), source.as_str())
}

/// Where to record when the user gave `--record FILE`, or nothing: an existing directory gets
/// a default-named file inside it.
/// The recorder a live source's `--record FILE|DIR` asks for (none without the option).
pub fn open_requested(
    record: Option<&Path>,
    source: Source,
    started_ms: i64,
    header: &[u8],
) -> io::Result<Option<Recorder>> {
    let Some(file) = record else { return Ok(None) };
    let path = resolve_path(Some(file), source, started_ms)?;
    Recorder::create(&path, header)
        .map(Some)
        .map_err(|e| io::Error::new(e.kind(), format!("creating the recording {}: {e}", path.display())))
}

pub fn resolve_path(explicit: Option<&Path>, source: Source, started_ms: i64) -> io::Result<PathBuf> {
    let name = default_file_name(source, started_ms, std::process::id());
    match explicit {
        Some(p) if p.is_dir() => Ok(p.join(name)),
        Some(p) => Ok(p.to_owned()),
        None => Ok(default_dir()?.join(name)),
    }
}

/// `YYYYMMDDTHHMMSSZ` in UTC, from the civil-date conversion on days since 1970-01-01.
fn utc_stamp(unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Proleptic Gregorian date of a day count, computed in 400-year eras (146 097 days each) with
/// years starting in March so that the leap day falls at the end of the year.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_all(chunks: &[&[u8]], wrap: Wrap) -> String {
        let mut enc = Encoder::new(Dir::In, wrap);
        let mut out = Vec::new();
        for c in chunks {
            enc.encode(7, c, &mut out);
        }
        enc.finish(8, &mut out);
        String::from_utf8(out).expect("records are UTF-8")
    }

    #[test]
    fn msg_is_the_line_verbatim() {
        let line = br#"{"b": 1.50,  "a":[1e3]}"#;
        let mut out = Vec::new();
        encode_record(&mut out, 12, Dir::ServerToClient, line, false);
        assert_eq!(out, b"{\"ts\":12,\"dir\":\"s2c\",\"msg\":{\"b\": 1.50,  \"a\":[1e3]}}\n");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("record is JSON");
        assert_eq!(v["msg"]["a"][0], 1000.0);
    }

    #[test]
    fn not_json_and_not_utf8_are_kept_as_base64() {
        let mut out = Vec::new();
        encode_record(&mut out, 1, Dir::ClientToServer, b"hello {", false);
        encode_record(&mut out, 1, Dir::ClientToServer, b"\"\xff\"", false);
        encode_record(&mut out, 1, Dir::ClientToServer, b"", false);
        encode_record(&mut out, 1, Dir::ClientToServer, b"\"a\tb\"", false);
        let text = String::from_utf8(out).expect("records are UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"ts":1,"dir":"c2s","rawB64":"aGVsbG8gew=="}"#);
        assert_eq!(lines[1], r#"{"ts":1,"dir":"c2s","rawB64":"Iv8i"}"#);
        assert_eq!(lines[2], r#"{"ts":1,"dir":"c2s","rawB64":""}"#);
        assert_eq!(lines[3], r#"{"ts":1,"dir":"c2s","rawB64":"ImEJYiI="}"#);
    }

    #[test]
    fn lines_split_across_chunks_are_joined_and_a_final_partial_line_is_marked() {
        let text = encode_all(&[b"{\"a\"", b":1}\n[2]\n{\"b", b"\":2}\n3"], Wrap::Always);
        assert_eq!(
            text,
            "{\"ts\":7,\"dir\":\"in\",\"msg\":{\"a\":1}}\n\
             {\"ts\":7,\"dir\":\"in\",\"msg\":[2]}\n\
             {\"ts\":7,\"dir\":\"in\",\"msg\":{\"b\":2}}\n\
             {\"ts\":8,\"dir\":\"in\",\"msg\":3,\"partial\":true}\n"
        );
    }

    #[test]
    fn nothing_is_encoded_after_finish() {
        let mut enc = Encoder::new(Dir::In, Wrap::Always);
        let mut out = Vec::new();
        enc.finish(1, &mut out);
        enc.encode(2, b"{}\n", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn listen_keeps_envelopes_and_wraps_everything_else() {
        let env = r#"{"ts":5,"dir":"s2c","msg":{"method":"x"}}"#;
        let text =
            encode_all(&[format!("{env}\n{{\"method\":\"y\"}}\n{{\"ts\":1}}\nnope\n").as_bytes()], Wrap::KeepEnvelopes);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], env);
        assert_eq!(lines[1], r#"{"ts":7,"dir":"in","msg":{"method":"y"}}"#);
        assert_eq!(lines[2], r#"{"ts":7,"dir":"in","msg":{"ts":1}}"#);
        assert_eq!(lines[3], r#"{"ts":7,"dir":"in","rawB64":"bm9wZQ=="}"#);
    }

    #[test]
    fn header_names_source_command_and_host() {
        let line = header_line(Source::Tee, Some(&["codex".into(), "app-server".into()]), 42);
        assert!(line.starts_with(br#"{"swarmtop":"recording","version":1,"startedMs":42,"source":"tee","command":["codex","app-server"],"host":"#));
        assert_eq!(line.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&line).expect("header is JSON");
        assert_eq!(v["swarmtop"], "recording");
        assert_eq!(v["version"], 1);
        assert_eq!(v["startedMs"], 42);
        assert_eq!(v["source"], "tee");
        assert_eq!(v["command"], serde_json::json!(["codex", "app-server"]));
        assert!(v["host"].is_string());
        let stdin = header_line(Source::Stdin, None, 1);
        let v: serde_json::Value = serde_json::from_slice(&stdin).expect("header is JSON");
        assert!(v.get("command").is_none());
    }

    #[test]
    fn recorder_creates_private_file_and_dirs_and_never_reuses_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/rec.ndjson");
        let mut rec = Recorder::create(&path, b"H\n").expect("create");
        assert_eq!(rec.append(b"R1\n").expect("append"), 2);
        assert_eq!(rec.len(), 5);
        assert_eq!(fs::read(&path).expect("read"), b"H\nR1\n");
        let mode = |p: &Path| fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        assert!(Recorder::create(&path, b"H\n").is_err());
    }

    #[test]
    fn a_write_that_fails_part_way_is_cut_back_to_a_whole_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rec.ndjson");
        let mut rec = Recorder::create(&path, b"H\n").expect("create").failing_after(6);
        rec.append(b"R1\n").expect("fits");
        assert!(rec.append(b"R2\nR3\n").is_err());
        assert_eq!(fs::read(&path).expect("read"), b"H\nR1\n");
        assert_eq!(rec.len(), 5);
    }

    #[test]
    fn default_names_sort_by_time() {
        assert_eq!(default_file_name(Source::Tee, 0, 9), "19700101T000000Z-tee-9.ndjson");
        // 2026-11-29T08:57:49Z, and a leap day.
        assert_eq!(utc_stamp(1_795_942_669), "20261129T085749Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
    }

    #[test]
    fn an_over_long_line_is_recorded_in_pieces_that_give_it_back_and_count_once() {
        let mut enc = Encoder::new(Dir::In, Wrap::Always).with_max_line(8);
        let mut out = Vec::new();
        enc.encode(1, b"{\"a\":1}\n0123456789", &mut out);
        enc.encode(2, b"abcdefghij", &mut out);
        enc.encode(3, b"XY\n{\"b\":2}\n", &mut out);
        let text = String::from_utf8(out.clone()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(!is_continuation(lines[1].as_bytes()), "the first piece is the line's record");
        assert!(lines[1].ends_with(",\"partial\":true}"));
        assert!(lines[2..4].iter().all(|l| is_continuation(l.as_bytes())), "{text}");
        assert!(lines[3].ends_with("\"}"), "the last piece ends the line: {}", lines[3]);
        let mut back = Vec::new();
        for l in &lines[1..4] {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
            let raw = v["rawB64"].as_str().expect("raw");
            back.extend(base64::engine::general_purpose::STANDARD.decode(raw).expect("base64"));
        }
        assert_eq!(back, b"0123456789abcdefghijXY");
        let mut records = 0;
        super::super::files::read_records(out.as_slice(), 40, |_| records += 1).expect("read");
        assert_eq!(records, 3, "{{a}}, the over-long line once, {{b}}");
        assert!(!is_continuation(br#"{"ts":1,"dir":"in","continued":true,"msg":{}}"#), "a msg is never skipped");
    }

    #[test]
    fn an_endless_line_is_recorded_in_bounded_pieces() {
        let mut enc = Encoder::new(Dir::In, Wrap::Always);
        let mut out = Vec::new();
        let piece = vec![b'x'; MAX_LINE_BYTES / 2];
        enc.encode(1, &piece, &mut out);
        assert!(out.is_empty());
        enc.encode(1, &piece, &mut out);
        assert!(!out.is_empty());
        assert!(enc.carry.is_empty());
        let v: serde_json::Value = serde_json::from_slice(&out).expect("record is JSON");
        assert_eq!(v["partial"], true);
    }
}
