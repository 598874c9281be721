//! A replay's records: where each one lies, not its bytes. Plain files are read back record by
//! record when the replay applies them (issue 8: holding a 512 MB recording in memory cost
//! 767 MB of RSS); what cannot be read back at an offset — stdin, `.gz`, the built-in demo — is
//! kept in memory. With `--follow` the files are re-read as they grow, and new files in the
//! followed directories join the replay.
//!
//! Records of several files are applied in stream time ([`super::merge`]): the index is put in
//! the merge's order once the files are read; what a followed file gains later comes as it comes.
//!
//! Record times are needed up front (the position bar's duration, seeking by time), so the
//! caller's `time_of` reads each record's time once, while it is loaded; sources know nothing
//! of what records mean.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::files::{self, Input, MAX_LINE, Record};
use super::follow::{Change, Watched};
use super::merge::{self, Order};
use crate::wire::{Clean, Origin};

/// Reads a record's time (unix ms), if it has one.
pub type TimeOf<'a> = &'a dyn Fn(&[u8]) -> Option<i64>;

/// One record as the replay hands it out.
pub enum Piece<'a> {
    /// The records that follow come from another source, which can tell whose records they are
    /// (a rollout file's name, a Claude sub-agent's file).
    Source {
        origin: &'a Origin,
    },
    Line(&'a [u8]),
    TooLong {
        len: usize,
        head: &'a [u8],
    },
}

pub struct Recorded {
    pub name: Clean,
    sources: Vec<Source>,
    records: Vec<Rec>,
    times: Vec<Option<i64>>,
    /// The heads of over-long records (the rest is gone: only its length is kept).
    heads: Vec<u8>,
    /// Keep reading files as they grow, and new files appearing in `dirs` (`--follow`).
    pub follow: bool,
    dirs: Vec<PathBuf>,
    /// Start a few seconds before the first child registers (the demo), the opening applied at once.
    pub start_at_action: bool,
    /// Plain files held open ([`Backing::File`]), at most [`merge::OPEN_MAX`].
    open_files: usize,
    /// Reads of a file past that bound ([`Backing::Closed`]), each of which opened it again: the
    /// diagnostics view shows it as `stats --json` shows `input.reopened`.
    reopened: Cell<u64>,
    /// The source of the act records beside the files, once there are some.
    acts: Option<usize>,
    /// Followed: what gives the act records kept since (`Change::Acts`), looked at now and then by
    /// whoever follows the files (the run store's reader, which this stage does not know).
    pub acts_since: Option<Box<dyn FnMut() -> Vec<u8> + Send>>,
}

struct Source {
    path: Option<PathBuf>,
    origin: Origin,
    /// Bytes read so far (whole lines only), for following.
    read: u64,
    data: Backing,
    /// A sidecar is rewritten, not appended to: it is read whole again when it changes, and this
    /// is when it was read last.
    modified: Option<std::time::SystemTime>,
}

enum Backing {
    /// Records are read back at their offsets.
    File(File),
    /// A plain file past the bound of files held open ([`merge::OPEN_MAX`]): opened again by its
    /// path for each read (a folder of a thousand rollouts ran out of file descriptors).
    Closed,
    /// Records are offsets into these bytes.
    Memory(Vec<u8>),
    Static(&'static [u8]),
}

#[derive(Clone, Copy)]
enum Rec {
    Line { at: u64, len: u32, source: u32 },
    TooLong { len: usize, head: u32, head_len: u16, source: u32 },
}

impl Rec {
    fn source(self) -> u32 {
        match self {
            Self::Line { source, .. } | Self::TooLong { source, .. } => source,
        }
    }
}

impl Recorded {
    /// A recording compiled into the binary (the demo).
    pub fn from_static(name: &str, data: &'static [u8], time_of: TimeOf<'_>) -> Self {
        let mut r = Self::empty(crate::wire::sanitize_line(name), false);
        r.sources.push(Source {
            path: None,
            origin: Origin::NONE,
            read: 0,
            data: Backing::Static(data),
            modified: None,
        });
        let read = r.index(0, 0, data, time_of).expect("reading memory cannot fail");
        r.sources[0].read = read;
        r
    }

    fn empty(name: Clean, follow: bool) -> Self {
        Self {
            name,
            sources: Vec::new(),
            records: Vec::new(),
            times: Vec::new(),
            heads: Vec::new(),
            follow,
            dirs: Vec::new(),
            start_at_action: false,
            open_files: 0,
            reopened: Cell::new(0),
            acts: None,
            acts_since: None,
        }
    }

    /// A plain file's backing: the file itself while fewer than [`merge::OPEN_MAX`] are held
    /// open, else closed, to be opened again when read.
    fn keep_open(&mut self, file: File) -> Backing {
        if self.open_files < merge::OPEN_MAX {
            self.open_files += 1;
            Backing::File(file)
        } else {
            Backing::Closed
        }
    }

    /// `paths` as the user named them (for the name shown), `inputs` as they expand.
    pub fn from_inputs(paths: &[PathBuf], inputs: &[Input], follow: bool, time_of: TimeOf<'_>) -> io::Result<Self> {
        Self::from_inputs_with(paths, inputs, follow, time_of, Vec::new())
    }

    /// [`Recorded::from_inputs`], with `acts` beside them: act records (`source::acts`) of what was
    /// done to these sessions that their files do not hold (the run store keeps them), merged in
    /// at their times as a stream of their own.
    pub fn from_inputs_with(
        paths: &[PathBuf],
        inputs: &[Input],
        follow: bool,
        time_of: TimeOf<'_>,
        acts: Vec<u8>,
    ) -> io::Result<Self> {
        // Named as the user named it: a directory by itself, not by its first file.
        let shown = |p: &PathBuf| if p.as_os_str() == "-" { "stdin".to_owned() } else { p.display().to_string() };
        let name = match (paths, inputs) {
            ([one], _) => shown(one),
            ([first, rest @ ..], _) => format!("{} (+{})", shown(first), rest.len()),
            ([], [one, ..]) => one.name(),
            ([], []) => String::new(),
        };
        let mut r = Self::empty(crate::wire::sanitize_line(&name), follow);
        r.dirs = paths.iter().filter(|p| p.is_dir()).cloned().collect();
        for input in inputs {
            r.add_source(input, time_of).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", input.name())))?;
        }
        if !acts.is_empty() {
            r.more_acts(acts, time_of)?;
        }
        r.merge(Order::Time);
        Ok(r)
    }

    /// Puts the records in stream time, each source's in its own order, a sidecar's applied
    /// ahead of its transcript's first record too ([`merge::Stream`]).
    fn merge(&mut self, order: Order) {
        let origins: Vec<Origin> = self.sources.iter().map(|s| s.origin.clone()).collect();
        let streams = merge::streams(&origins);
        if streams.len() < 2 && streams.iter().all(|s| s.sidecar.is_none()) {
            return;
        }
        // Each source was indexed whole in turn: its records are one run of the index.
        let mut of_source: Vec<Vec<usize>> = vec![Vec::new(); self.sources.len()];
        for (i, rec) in self.records.iter().enumerate() {
            of_source[rec.source() as usize].push(i);
        }
        let mut lists = Vec::with_capacity(streams.len());
        for stream in &streams {
            let main = &of_source[stream.main];
            let mut list: Vec<(usize, Option<i64>)> = Vec::with_capacity(main.len() + 2);
            if let Some(sidecar) = stream.sidecar {
                // Applied ahead at the time of its transcript's first record.
                let first = main.first().and_then(|&i| self.times[i]);
                for &i in &of_source[sidecar] {
                    let twin = self.twin(sidecar, i);
                    list.push((twin, first));
                }
            }
            list.extend(main.iter().map(|&i| (i, self.times[i])));
            if let Some(sidecar) = stream.sidecar {
                list.extend(of_source[sidecar].iter().map(|&i| (i, self.times[i])));
            }
            lists.push(list);
        }
        let order = merge::clock::order(&lists, order);
        self.records = order.iter().map(|&i| self.records[i]).collect();
        self.times = order.iter().map(|&i| self.times[i]).collect();
    }

    /// Record `i` of sidecar source `sidecar`, applied ahead of its transcript: a record of a
    /// source of its own (its origin says so), appended to the index; returns its place.
    fn twin(&mut self, sidecar: usize, i: usize) -> usize {
        let ahead = merge::ahead(&self.sources[sidecar].origin);
        let known = self.sources.iter().position(|s| s.path.is_none() && s.origin == ahead);
        let source = known.unwrap_or_else(|| {
            let data = match &self.sources[sidecar].data {
                Backing::Memory(bytes) => Backing::Memory(bytes.clone()),
                Backing::Static(bytes) => Backing::Static(bytes),
                // A sidecar is read whole into memory.
                Backing::File(f) => f.try_clone().map_or(Backing::Memory(Vec::new()), Backing::File),
                Backing::Closed => Backing::Memory(Vec::new()),
            };
            self.sources.push(Source { path: None, origin: ahead, read: 0, data, modified: None });
            self.sources.len() - 1
        });
        let src = u32::try_from(source).unwrap_or(u32::MAX);
        let rec = match self.records[i] {
            Rec::Line { at, len, .. } => Rec::Line { at, len, source: src },
            Rec::TooLong { len, head, head_len, .. } => Rec::TooLong { len, head, head_len, source: src },
        };
        self.records.push(rec);
        self.times.push(self.times[i]);
        self.records.len() - 1
    }

    fn add_source(&mut self, input: &Input, time_of: TimeOf<'_>) -> io::Result<()> {
        let path = match input {
            Input::File(p) => Some(p.clone()),
            Input::Stdin => None,
        };
        let sidecar = matches!(input, Input::File(p) if files::is_sidecar(p));
        let plain = match input {
            // A sidecar is read whole and flattened into one record: kept in memory.
            Input::File(_) if sidecar => None,
            Input::File(p) => {
                let mut f = File::open(p)?;
                let mut magic = [0u8; 2];
                let n = f.read(&mut magic)?;
                f.seek(SeekFrom::Start(0))?;
                // Gzip cannot be read back at an offset: those are decompressed into memory; an
                // OpenCode store is read through SQLite, its records kept in memory too.
                (n < 2 || magic != [0x1f, 0x8b]).then_some(f).filter(|_| !super::opencode::is_sqlite(p))
            }
            Input::Stdin => None,
        };
        let source = self.sources.len();
        let origin = files::origin(input);
        if let Some(file) = plain {
            let reader = BufReader::with_capacity(1 << 20, file.try_clone()?);
            let data = self.keep_open(file);
            self.sources.push(Source { path, origin, read: 0, data, modified: None });
            let read = self.index(source, 0, reader, time_of)?;
            self.sources[source].read = read;
        } else {
            let mut bytes = Vec::new();
            files::open(input)?.read_to_end(&mut bytes)?;
            let mut read = bytes.len() as u64;
            let mut modified = None;
            if let (true, Some(p)) = (sidecar, &path) {
                // What counts for a sidecar is the file as it is on disk, not its flattened text.
                let meta = std::fs::metadata(p)?;
                (read, modified) = (meta.len(), meta.modified().ok());
            }
            self.sources.push(Source { path, origin, read: 0, data: Backing::Memory(Vec::new()), modified });
            self.index(source, 0, bytes.as_slice(), time_of)?;
            self.sources[source].data = Backing::Memory(bytes);
            self.sources[source].read = read;
        }
        Ok(())
    }

    /// Notes the records of `reader`, which starts at byte `base` of the source; returns the bytes read.
    fn index(&mut self, source: usize, base: u64, reader: impl BufRead, time_of: TimeOf<'_>) -> io::Result<u64> {
        let src = u32::try_from(source).unwrap_or(u32::MAX);
        let (records, times, heads) = (&mut self.records, &mut self.times, &mut self.heads);
        files::read_records_at(reader, MAX_LINE, |at, record| match record {
            Record::Line(line) => {
                records.push(Rec::Line {
                    at: base + at,
                    len: u32::try_from(line.len()).unwrap_or(u32::MAX),
                    source: src,
                });
                times.push(time_of(line));
            }
            Record::TooLong { len, head } => {
                let start = u32::try_from(heads.len()).unwrap_or(u32::MAX);
                heads.extend_from_slice(head);
                records.push(Rec::TooLong { len, head: start, head_len: head.len() as u16, source: src });
                times.push(None);
            }
        })
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many times a file past the bound of files held open was opened again to be read.
    pub fn reopened(&self) -> u64 {
        self.reopened.get()
    }

    /// Every record's time (unix ms, `None` when it has none), in order.
    pub fn times(&self) -> &[Option<i64>] {
        &self.times
    }

    /// Hands out the records of `range` in order, with a [`Piece::Source`] before the first and
    /// whenever the source changes (records of followed files can alternate). Consecutive records
    /// of a file are read back with one read.
    pub fn each(&self, range: Range<usize>, mut visit: impl FnMut(Piece<'_>)) -> io::Result<()> {
        let range = range.start.min(self.records.len())..range.end.min(self.records.len());
        let mut buf: Vec<u8> = Vec::new();
        let mut current = None;
        let mut next = range.start;
        while next < range.end {
            let rec = self.records[next];
            let source = rec.source() as usize;
            if current != Some(source) {
                current = Some(source);
                visit(Piece::Source { origin: &self.sources[source].origin });
            }
            match rec {
                Rec::TooLong { len, head, head_len, .. } => {
                    let head = &self.heads[head as usize..head as usize + usize::from(head_len)];
                    visit(Piece::TooLong { len, head });
                    next += 1;
                }
                Rec::Line { at, len, .. } => match &self.sources[source].data {
                    Backing::Memory(bytes) => {
                        visit(Piece::Line(slice(bytes, at, len)));
                        next += 1;
                    }
                    Backing::Static(bytes) => {
                        visit(Piece::Line(slice(bytes, at, len)));
                        next += 1;
                    }
                    data @ (Backing::File(_) | Backing::Closed) => {
                        let reopened;
                        let file = if let Backing::File(file) = data {
                            file
                        } else {
                            let path = self.sources[source].path.as_ref();
                            reopened = File::open(path.ok_or_else(|| io::Error::other("a closed input has no path"))?)?;
                            self.reopened.set(self.reopened.get().saturating_add(1));
                            &reopened
                        };
                        // The run of lines of this file that follow: one read for all of them.
                        let mut end = next + 1;
                        let mut last = (at, len);
                        while end < range.end {
                            match self.records[end] {
                                Rec::Line { at: off, len: n, source: src }
                                    if src as usize == source && off >= last.0 =>
                                {
                                    last = (off, n);
                                    end += 1;
                                }
                                _ => break,
                            }
                        }
                        let span = (last.0 + u64::from(last.1) - at) as usize;
                        buf.resize(span, 0);
                        file.read_exact_at(&mut buf, at)?;
                        for rec in &self.records[next..end] {
                            if let Rec::Line { at: off, len: n, .. } = *rec {
                                visit(Piece::Line(slice(&buf, off - at, n)));
                            }
                        }
                        next = end;
                    }
                },
            }
        }
        Ok(())
    }

    /// What [`super::follow`] must watch: the plain files and the sidecars, as far as they were
    /// read, and the directories where new files may appear.
    pub fn watched(&self) -> (Vec<Watched>, Vec<PathBuf>) {
        let files = self
            .sources
            .iter()
            .filter(|s| matches!(s.data, Backing::File(_) | Backing::Closed) || s.modified.is_some())
            .filter_map(|s| Some(Watched { path: s.path.clone()?, read: s.read, modified: s.modified }))
            .collect();
        (files, self.dirs.clone())
    }

    /// Takes in a followed file's change; returns how many records it added (at the end).
    pub fn followed(&mut self, change: Change, time_of: TimeOf<'_>) -> usize {
        let before = self.records.len();
        let find = |sources: &[Source], file: &PathBuf| sources.iter().position(|s| s.path.as_ref() == Some(file));
        match change {
            Change::Appeared { file } => {
                if find(&self.sources, &file).is_none() {
                    let origin = files::origin(&Input::File(file.clone()));
                    // A sidecar's text comes with `Rewritten`; a plain file's lines with `Grew`.
                    let data = if files::is_sidecar(&file) {
                        Some(Backing::Memory(Vec::new()))
                    } else {
                        File::open(&file).ok().map(|f| self.keep_open(f))
                    };
                    if let Some(data) = data {
                        self.sources.push(Source { path: Some(file), origin, read: 0, data, modified: None });
                    }
                }
            }
            Change::Rewritten { file } => {
                if let Some(source) = find(&self.sources, &file) {
                    self.reread_sidecar(source, &file, time_of);
                }
            }
            Change::Restarted { file } => {
                if let Some(source) = find(&self.sources, &file) {
                    // Records already applied stay; what the file holds now is read from its start.
                    self.sources[source].read = 0;
                    if matches!(self.sources[source].data, Backing::File(_))
                        && let Ok(f) = File::open(&file)
                    {
                        self.sources[source].data = Backing::File(f);
                    }
                }
            }
            Change::Grew { file, at, bytes } => {
                if let Some(source) = find(&self.sources, &file) {
                    self.sources[source].read = at + bytes.len() as u64;
                    let _ = self.index(source, at, bytes.as_slice(), time_of);
                }
            }
            Change::Acts { records } => {
                let _ = self.more_acts(records, time_of);
            }
            Change::TooLong { file, at, len, head } => {
                if let Some(source) = find(&self.sources, &file) {
                    self.sources[source].read = at + len as u64 + 1;
                    let head = &head[..head.len().min(files::HEAD)];
                    let start = u32::try_from(self.heads.len()).unwrap_or(u32::MAX);
                    self.heads.extend_from_slice(head);
                    let src = u32::try_from(source).unwrap_or(u32::MAX);
                    self.records.push(Rec::TooLong { len, head: start, head_len: head.len() as u16, source: src });
                    self.times.push(None);
                }
            }
        }
        self.records.len() - before
    }
}

impl Recorded {
    /// Act records beside the files (`source::acts`): appended to a memory source of their own.
    fn more_acts(&mut self, records: Vec<u8>, time_of: TimeOf<'_>) -> io::Result<()> {
        let source = *self.acts.get_or_insert_with(|| {
            self.sources.push(Source {
                path: None,
                origin: Origin::NONE,
                read: 0,
                data: Backing::Memory(Vec::new()),
                modified: None,
            });
            self.sources.len() - 1
        });
        let Backing::Memory(bytes) = &self.sources[source].data else { return Ok(()) };
        let base = bytes.len() as u64;
        let read = self.index(source, base, records.as_slice(), time_of)?;
        if let Backing::Memory(bytes) = &mut self.sources[source].data {
            if bytes.is_empty() {
                *bytes = records;
            } else {
                bytes.extend_from_slice(&records);
            }
        }
        self.sources[source].read = base + read;
        Ok(())
    }

    /// A sidecar changed (Claude Code rewrites it with `finished: true`): its whole new text is one
    /// more record, lowered like the first.
    fn reread_sidecar(&mut self, source: usize, path: &std::path::Path, time_of: TimeOf<'_>) {
        let Ok(meta) = std::fs::metadata(path) else { return };
        let modified = meta.modified().ok();
        let s = &self.sources[source];
        if s.read == meta.len() && s.modified == modified {
            return;
        }
        let Ok(text) = files::read_sidecar(path) else { return };
        let Backing::Memory(bytes) = &mut self.sources[source].data else { return };
        let base = bytes.len() as u64;
        bytes.extend_from_slice(&text);
        self.sources[source].read = meta.len();
        self.sources[source].modified = modified;
        let _ = self.index(source, base, text.as_slice(), time_of);
    }
}

fn slice(bytes: &[u8], at: u64, len: u32) -> &[u8] {
    let start = usize::try_from(at).unwrap_or(usize::MAX).min(bytes.len());
    let end = start.saturating_add(len as usize).min(bytes.len());
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(r: &Recorded, range: Range<usize>) -> Vec<String> {
        let mut out = Vec::new();
        r.each(range, |p| match p {
            Piece::Source { .. } => out.push("|".to_owned()),
            Piece::Line(l) => out.push(String::from_utf8_lossy(l).into_owned()),
            Piece::TooLong { len, .. } => out.push(format!("too long {len}")),
        })
        .expect("read");
        out
    }

    /// Past the bound of files held open, the rest are closed and opened again when read: every
    /// line of every file is read back, in time.
    #[test]
    fn past_open_max_files_are_read_back_by_their_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = merge::OPEN_MAX + 3;
        let paths: Vec<PathBuf> = (0..n)
            .map(|i| {
                let path = dir.path().join(format!("f{i:04}.ndjson"));
                std::fs::write(&path, format!("{i:04}a\n{i:04}b\n")).expect("write");
                path
            })
            .collect();
        let inputs: Vec<Input> = paths.iter().cloned().map(Input::File).collect();
        let time = |l: &[u8]| std::str::from_utf8(&l[..4]).ok()?.parse::<i64>().ok();
        let r = Recorded::from_inputs(&[dir.path().to_owned()], &inputs, false, &time).expect("load");
        let open = r.sources.iter().filter(|s| matches!(s.data, Backing::File(_))).count();
        assert_eq!(open, merge::OPEN_MAX);
        let lines: Vec<String> = lines_of(&r, 0..2 * n).into_iter().filter(|l| l != "|").collect();
        let want: Vec<String> = (0..n).flat_map(|i| [format!("{i:04}a"), format!("{i:04}b")]).collect();
        assert_eq!(lines, want);
        assert_eq!(r.reopened(), 3, "each closed file opened again once, for its one run of lines");
        assert_eq!(r.watched().0.len(), n, "every file followed, closed or not");
    }

    #[test]
    fn a_file_is_read_back_at_its_offsets_and_takes_in_its_growth() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.ndjson");
        std::fs::write(&path, "one\n\ntwo\nthree\n").expect("write");
        let time = |l: &[u8]| i64::try_from(l.len()).ok();
        let mut r = Recorded::from_inputs(std::slice::from_ref(&path), &[Input::File(path.clone())], true, &time)
            .expect("load");
        assert!(matches!(r.sources[0].data, Backing::File(_)), "a plain file is not held in memory");
        assert_eq!(r.times(), [Some(3), Some(3), Some(5)]);
        assert_eq!(lines_of(&r, 0..3), ["|", "one", "two", "three"]);
        assert_eq!(lines_of(&r, 1..2), ["|", "two"]);
        let grew = |at: u64, b: &[u8]| Change::Grew { file: path.clone(), at, bytes: b.to_vec() };
        std::fs::write(&path, "one\n\ntwo\nthree\nfour\nfive\n").expect("append");
        assert_eq!(r.watched().0, [Watched { path: path.clone(), read: 15, modified: None }]);
        assert_eq!(r.followed(grew(15, b"four\n"), &time), 1);
        assert_eq!(lines_of(&r, 3..4), ["|", "four"]);
        assert_eq!(r.followed(grew(20, b"five\n"), &time), 1);
        assert_eq!(lines_of(&r, 0..5), ["|", "one", "two", "three", "four", "five"]);
        let other = dir.path().join("b.ndjson");
        std::fs::write(&other, "six\n").expect("write");
        assert_eq!(r.followed(Change::Appeared { file: other.clone() }, &time), 0);
        assert_eq!(r.followed(Change::Grew { file: other, at: 0, bytes: b"six\n".to_vec() }, &time), 1);
        assert_eq!(lines_of(&r, 4..6), ["|", "five", "|", "six"]);
    }

    #[test]
    fn a_sidecar_is_one_record_read_again_when_it_is_rewritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let subagents = dir.path().join("s1/subagents");
        std::fs::create_dir_all(&subagents).expect("mkdir");
        let meta = subagents.join("agent-a1.meta.json");
        std::fs::write(&meta, "{\"description\":\"d\",\n \"spawnDepth\":1}").expect("write");
        let time = |_: &[u8]| None;
        let mut r = Recorded::from_inputs(&[dir.path().to_path_buf()], &[Input::File(meta.clone())], true, &time)
            .expect("load");
        assert_eq!(lines_of(&r, 0..1), ["|", "{\"description\":\"d\",  \"spawnDepth\":1}"]);
        let origin = r.sources[0].origin.info().cloned().expect("an origin");
        assert_eq!(
            (origin.thread.as_deref(), origin.session.as_deref(), origin.sidecar),
            (Some("a1"), Some("s1"), true)
        );
        assert_eq!(r.watched().0.len(), 1, "the sidecar is watched");
        assert_eq!(r.followed(Change::Rewritten { file: meta.clone() }, &time), 0, "unchanged");
        std::fs::write(&meta, "{\"description\":\"d\",\"spawnDepth\":1,\"finished\":true}").expect("rewrite");
        assert_eq!(r.followed(Change::Rewritten { file: meta.clone() }, &time), 1, "rewritten: read whole again");
        assert_eq!(lines_of(&r, 1..2), ["|", "{\"description\":\"d\",\"spawnDepth\":1,\"finished\":true}"]);
    }

    #[test]
    fn files_are_replayed_in_stream_time_and_a_sidecar_ahead_of_its_transcript_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let subagents = dir.path().join("s1/subagents");
        std::fs::create_dir_all(&subagents).expect("mkdir");
        std::fs::write(dir.path().join("s1.jsonl"), "1\n3\n6\n").expect("write");
        std::fs::write(subagents.join("agent-a1.jsonl"), "2\n4\n").expect("write");
        std::fs::write(subagents.join("agent-a1.meta.json"), "{\"finished\":true}").expect("write");
        let inputs = files::expand(&[dir.path().to_path_buf()]).expect("expand");
        let time = |l: &[u8]| std::str::from_utf8(l).ok()?.parse().ok();
        let r = Recorded::from_inputs(&[dir.path().to_path_buf()], &inputs, false, &time).expect("load");
        let sidecar = "{\"finished\":true}";
        assert_eq!(
            lines_of(&r, 0..r.len()),
            ["|", "1", "|", sidecar, "|", "2", "|", "3", "|", "4", "|", sidecar, "|", "6"]
        );
        assert_eq!(r.times(), [Some(1), None, Some(2), Some(3), Some(4), None, Some(6)]);
        let mut ahead = Vec::new();
        r.each(0..r.len(), |p| {
            if let Piece::Source { origin } = p {
                ahead.push(origin.info().is_some_and(|i| i.ahead));
            }
        })
        .expect("read");
        assert_eq!(ahead, [false, true, false, false, false, false, false], "only the first sidecar is applied ahead");
    }

    #[test]
    fn gzip_and_static_data_are_kept_in_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.ndjson.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"x\ny\n").expect("gz");
        std::fs::write(&path, gz.finish().expect("gz")).expect("write");
        let none = |_: &[u8]| None;
        let r = Recorded::from_inputs(std::slice::from_ref(&path), &[Input::File(path.clone())], false, &none)
            .expect("load");
        assert_eq!(lines_of(&r, 0..2), ["|", "x", "y"]);
        let s = Recorded::from_static("demo", b"a\nb\n", &none);
        assert_eq!(lines_of(&s, 0..2), ["|", "a", "b"]);
    }
}
