//! A replay's records: where they lie, not their bytes. Plain files are read back when the
//! replay applies them (issue 8: holding a 512 MB recording in memory cost 767 MB of RSS); what
//! cannot be read back at an offset — stdin, `.gz`, the built-in demo — is kept in memory. With
//! `--follow` the files are re-read as they grow, and new files in the followed directories join
//! the replay.
//!
//! Nothing is kept per record (issue 22: 48 bytes a record grew the monitor ninefold from a 20 MB
//! to a 2 GB recording): a source keeps the offset of every [`MARK_EVERY`]th record, and the
//! replay's order is runs of consecutive records of one source. A record is read back from the
//! mark before it, or from where the last read of its source stopped (playback reads on in order).
//!
//! Records of several files are applied in stream time ([`super::merge`]): the order is put in
//! the merge's once the files are read; what a followed file gains later comes as it comes.
//!
//! Record times are needed up front (the position bar's duration, seeking by time), so the
//! caller's `time_of` reads each record's time once, while it is loaded; sources know nothing of
//! what records mean. One input is replayed in its own order: its times go straight into the
//! replay's schedule ([`Schedule`], a mark a block of records, at the default gap cap). Several
//! are put in time order once all are read, so their times are kept until then, in a byte or two
//! a record ([`Times`]) (issue 22: held through loading at 2 GB, that log's 5 MiB grew the
//! monitor's peak with the recording).

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::compact::Times;
use super::files::{self, Input, MAX_LINE, Record};
use super::follow::{Change, Watched};
use super::merge::{self, Order};
use super::replay::{self, Schedule};
use crate::wire::{Clean, Origin};

/// Reads a record's time (unix ms), if it has one.
pub type TimeOf<'a> = &'a dyn Fn(&[u8]) -> Option<i64>;

/// A source keeps the offset of every this many records: reading one record at random reads at
/// most this many before it (a few hundred KB of a Codex session), for 16 bytes a mark.
const MARK_EVERY: u64 = 1024;
/// What one read of a file back brings at most.
const READ_BLOCK: usize = 256 << 10;

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
    /// The replay's order: runs of consecutive records of one source, by where each starts.
    order: Vec<Run>,
    /// Records in the replay.
    len: usize,
    /// The records' times, in the replay's order, until [`Recorded::forget_times`]: kept when
    /// the records may be put in another order once read (several inputs).
    times: Option<Times>,
    /// Else the replay's schedule, made as the records are read.
    schedule: Option<Schedule>,
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

/// Records `first..` of `source`, from position `start` of the replay to the next run's start.
#[derive(Clone, Copy)]
struct Run {
    start: usize,
    source: u32,
    first: u64,
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
    /// Records noted so far.
    count: u64,
    /// (record, byte offset) of every [`MARK_EVERY`]th record, and of the first after a restart.
    marks: Vec<(u64, u64)>,
    /// Where the last read stopped: the next record and its offset, when it was seen.
    cursor: Cell<Option<(u64, u64)>>,
}

impl Source {
    fn new(path: Option<PathBuf>, origin: Origin, data: Backing) -> Self {
        Self { path, origin, read: 0, data, modified: None, count: 0, marks: Vec::new(), cursor: Cell::new(None) }
    }
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

/// A source's bytes from an offset on, a block at a time, until `stop` is set: a read back stops
/// once it has the records it wants, though the file goes on.
struct ReadBack<'a> {
    data: Bytes<'a>,
    at: u64,
    buf: Vec<u8>,
    filled: Range<usize>,
    stop: &'a Cell<bool>,
}

enum Bytes<'a> {
    File(&'a File),
    Slice(&'a [u8]),
}

impl Read for ReadBack<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ReadBack<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.stop.get() {
            return Ok(&[]);
        }
        match self.data {
            Bytes::Slice(bytes) => {
                let start = usize::try_from(self.at).unwrap_or(usize::MAX).min(bytes.len());
                Ok(&bytes[start..bytes.len().min(start + READ_BLOCK)])
            }
            Bytes::File(file) => {
                if self.filled.is_empty() {
                    self.buf.resize(READ_BLOCK, 0);
                    let n = loop {
                        match file.read_at(&mut self.buf, self.at) {
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            other => break other?,
                        }
                    };
                    self.filled = 0..n;
                }
                Ok(&self.buf[self.filled.clone()])
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.at += n as u64;
        if let Bytes::File(_) = self.data {
            self.filled.start = (self.filled.start + n).min(self.filled.end);
        }
    }
}

impl Recorded {
    /// A recording compiled into the binary (the demo).
    pub fn from_static(name: &str, data: &'static [u8], time_of: TimeOf<'_>) -> Self {
        let mut r = Self::empty(crate::wire::sanitize_line(name), false);
        r.sources.push(Source::new(None, Origin::NONE, Backing::Static(data)));
        let read = r.index(0, 0, data, time_of).expect("reading memory cannot fail");
        r.sources[0].read = read;
        r
    }

    fn empty(name: Clean, follow: bool) -> Self {
        Self {
            name,
            sources: Vec::new(),
            order: Vec::new(),
            len: 0,
            times: None,
            schedule: Some(Schedule::new(replay::DEFAULT_MAX_GAP_MS)),
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
        // Records put in time order once read (several inputs, a sidecar applied ahead, acts)
        // need their times then.
        let sidecar = inputs.iter().any(|i| matches!(i, Input::File(p) if files::is_sidecar(p)));
        if inputs.len() > 1 || sidecar || !acts.is_empty() {
            (r.times, r.schedule) = (Some(Times::default()), None);
        }
        r.dirs = paths.iter().filter(|p| p.is_dir()).cloned().collect();
        for input in inputs {
            r.add_source(input, time_of).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", input.name())))?;
        }
        if !acts.is_empty() {
            r.more_acts(acts, time_of)?;
        }
        r.merge(Order::Time);
        // A mark every 1,024 records, pushed one by one: held at up to twice their room for the
        // whole replay (a 2 GB recording's took 128 KB for 86).
        for s in &mut r.sources {
            s.marks.shrink_to_fit();
        }
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
        // Each source was indexed whole in turn: its records are one run, record `i` of the
        // index being the run's start plus its place in the source. Records of the twins made
        // below are numbered on from the end.
        let mut start = vec![0usize; self.sources.len()];
        for run in &self.order {
            start[run.source as usize] = run.start;
        }
        let mut times: Vec<Option<i64>> = self.times.take().map(|t| t.iter().collect()).unwrap_or_default();
        let mut lists = Vec::with_capacity(streams.len());
        for stream in &streams {
            let of = |s: usize, count: u64| start[s]..start[s] + usize::try_from(count).unwrap_or(0);
            let main = of(stream.main, self.sources[stream.main].count);
            let mut list: Vec<(usize, Option<i64>)> = Vec::with_capacity(main.len() + 2);
            if let Some(sidecar) = stream.sidecar {
                // Applied ahead at the time of its transcript's first record.
                let first = times.get(main.start).copied().flatten().filter(|_| !main.is_empty());
                let own = of(sidecar, self.sources[sidecar].count);
                let twin = self.twin(sidecar);
                start.push(times.len());
                for i in own.clone() {
                    list.push((times.len(), first));
                    times.push(times[i]);
                }
                debug_assert_eq!(start.len(), twin + 1);
                list.extend(main.clone().map(|i| (i, times[i])));
                list.extend(own.map(|i| (i, times[i])));
            } else {
                list.extend(main.map(|i| (i, times[i])));
            }
            lists.push(list);
        }
        let order = merge::clock::order(&lists, order);
        drop(lists);
        self.reorder(&order, &start, &times);
    }

    /// Sets the replay's order to `order` (records numbered as [`Recorded::merge`] numbers them,
    /// source `s`'s from `start[s]`), with their times.
    fn reorder(&mut self, order: &[usize], start: &[usize], times: &[Option<i64>]) {
        // Sources by where their records start, to name the source of a record number.
        let mut by_start: Vec<(usize, usize)> =
            start.iter().enumerate().filter(|&(s, _)| self.sources[s].count > 0).map(|(s, &at)| (at, s)).collect();
        by_start.sort_unstable();
        self.order.clear();
        self.len = 0;
        let mut log = Times::default();
        for &i in order {
            let (at, s) = by_start[by_start.partition_point(|&(at, _)| at <= i) - 1];
            self.place(s, (i - at) as u64);
            log.push(times[i]);
        }
        self.times = Some(log);
    }

    /// A source of its own for sidecar `sidecar`'s records applied ahead of its transcript (its
    /// origin says so): the same bytes, the same records; returns it.
    fn twin(&mut self, sidecar: usize) -> usize {
        let ahead = merge::ahead(&self.sources[sidecar].origin);
        let s = &self.sources[sidecar];
        let data = match &s.data {
            Backing::Memory(bytes) => Backing::Memory(bytes.clone()),
            Backing::Static(bytes) => Backing::Static(bytes),
            // A sidecar is read whole into memory.
            Backing::File(f) => f.try_clone().map_or(Backing::Memory(Vec::new()), Backing::File),
            Backing::Closed => Backing::Memory(Vec::new()),
        };
        let mut twin = Source::new(None, ahead, data);
        (twin.count, twin.marks) = (s.count, s.marks.clone());
        self.sources.push(twin);
        self.sources.len() - 1
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
            self.sources.push(Source::new(path, origin, data));
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
            self.sources.push(Source::new(path, origin, Backing::Memory(Vec::new())));
            self.sources[source].modified = modified;
            self.index(source, 0, bytes.as_slice(), time_of)?;
            self.sources[source].data = Backing::Memory(bytes);
            self.sources[source].read = read;
        }
        Ok(())
    }

    /// Notes the records of `reader`, which starts at byte `base` of the source; returns the bytes read.
    fn index(&mut self, source: usize, base: u64, reader: impl BufRead, time_of: TimeOf<'_>) -> io::Result<u64> {
        files::read_records_from(reader, MAX_LINE, base == 0, |at, record| {
            let time = match record {
                Record::Line(line) => time_of(line),
                Record::TooLong { .. } => None,
            };
            self.note(source, base + at, time);
        })
    }

    /// Notes the next record of `source`, lying at byte `at`: a mark now and then, its place at
    /// the end of the replay's order, its time.
    fn note(&mut self, source: usize, at: u64, time: Option<i64>) {
        let s = &mut self.sources[source];
        if s.count % MARK_EVERY == 0 {
            s.marks.push((s.count, at));
        }
        let record = s.count;
        s.count += 1;
        self.place(source, record);
        if let Some(times) = &mut self.times {
            times.push(time);
        } else if let Some(schedule) = &mut self.schedule {
            schedule.push(time);
        }
    }

    /// Puts record `record` of `source` next in the replay's order.
    fn place(&mut self, source: usize, record: u64) {
        let src = u32::try_from(source).unwrap_or(u32::MAX);
        let follows = self
            .order
            .last()
            .is_some_and(|run| run.source == src && run.first + (self.len - run.start) as u64 == record);
        if !follows {
            self.order.push(Run { start: self.len, source: src, first: record });
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many times a file past the bound of files held open was opened again to be read.
    pub fn reopened(&self) -> u64 {
        self.reopened.get()
    }

    /// Every record's time (unix ms, `None` when it has none), in order; none once forgotten.
    pub fn times(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        self.times.iter().flat_map(Times::iter)
    }

    /// The times are no longer needed: records noted from now on keep none.
    pub fn forget_times(&mut self) {
        (self.times, self.schedule) = (None, None);
    }

    /// The replay's schedule of the records so far with gaps capped at `max_gap_ms`, made as they
    /// were read or of their times; `None` when neither fits (another cap than the one the
    /// schedule was made with): the caller reads the times again. The times are forgotten.
    pub fn take_schedule(&mut self, max_gap_ms: u64) -> Option<Schedule> {
        let times = self.times.take();
        let made = self.schedule.take().filter(|s| s.max_gap_ms() == max_gap_ms);
        made.or_else(|| {
            let times = times?;
            let mut schedule = Schedule::new(max_gap_ms);
            for t in times.iter() {
                schedule.push(t);
            }
            Some(schedule)
        })
    }

    /// Hands out the records of `range` in order, with a [`Piece::Source`] before the first and
    /// whenever the source changes (records of followed files can alternate). Consecutive records
    /// of a file are read back together.
    pub fn each(&self, range: Range<usize>, visit: impl FnMut(Piece<'_>)) -> io::Result<()> {
        self.each_counted(range, true, visit)
    }

    /// [`Recorded::each`] for the replay's schedule, reading its records' times again: a file
    /// opened again for it is not counted in [`Recorded::reopened`], which says what applying the
    /// records took, as `stats --json` counts it (`input.reopened`).
    pub fn each_for_times(&self, range: Range<usize>, visit: impl FnMut(Piece<'_>)) -> io::Result<()> {
        self.each_counted(range, false, visit)
    }

    fn each_counted(&self, range: Range<usize>, count: bool, mut visit: impl FnMut(Piece<'_>)) -> io::Result<()> {
        let range = range.start.min(self.len)..range.end.min(self.len);
        let mut next = range.start;
        let mut run = self.order.partition_point(|r| r.start <= next).saturating_sub(1);
        let mut current = None;
        while next < range.end {
            let Run { start, source, first } = self.order[run];
            let end = self.order.get(run + 1).map_or(self.len, |r| r.start).min(range.end);
            let source = source as usize;
            if current != Some(source) {
                current = Some(source);
                visit(Piece::Source { origin: &self.sources[source].origin });
            }
            self.read(source, first + (next - start) as u64, end - next, count, &mut visit)?;
            next = end;
            run += 1;
        }
        Ok(())
    }

    /// Hands out `n` records of `source` from its record `record` on, read from the mark before
    /// it, or from where the last read of the source stopped when that is nearer.
    fn read(
        &self,
        source: usize,
        record: u64,
        n: usize,
        count: bool,
        visit: &mut impl FnMut(Piece<'_>),
    ) -> io::Result<()> {
        let s = &self.sources[source];
        let Some(mark) = s.marks.partition_point(|&(r, _)| r <= record).checked_sub(1) else {
            return Err(io::Error::other("a record before its source's first"));
        };
        let (mut from, mut at) = s.marks[mark];
        if let Some((r, off)) = s.cursor.get()
            && (from..=record).contains(&r)
        {
            (from, at) = (r, off);
        }
        let reopened;
        let data = match &s.data {
            Backing::File(file) => Bytes::File(file),
            Backing::Closed => {
                let path = s.path.as_ref().ok_or_else(|| io::Error::other("a closed input has no path"))?;
                reopened = File::open(path)?;
                if count {
                    self.reopened.set(self.reopened.get().saturating_add(1));
                }
                Bytes::File(&reopened)
            }
            Backing::Memory(bytes) => Bytes::Slice(bytes),
            Backing::Static(bytes) => Bytes::Slice(bytes),
        };
        let stop = Cell::new(false);
        let reader = ReadBack { data, at, buf: Vec::new(), filled: 0..0, stop: &stop };
        let (skip, want) = (record - from, record - from + n as u64);
        let mut seen = 0u64;
        files::read_records_from(reader, MAX_LINE, at == 0, |off, r| {
            if seen >= want {
                if seen == want {
                    // The record after the last wanted: where the next read of the source starts.
                    s.cursor.set(Some((record + n as u64, at + off)));
                    stop.set(true);
                }
            } else if seen >= skip {
                visit(match r {
                    Record::Line(line) => Piece::Line(line),
                    Record::TooLong { len, head } => Piece::TooLong { len, head },
                });
            }
            seen += 1;
        })?;
        if seen < want {
            s.cursor.set(None);
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the input is shorter than when it was read"));
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
        let before = self.len;
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
                        self.sources.push(Source::new(Some(file), origin, data));
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
                    // Records already applied stay; what the file holds now is read from its
                    // start, its next record read back from there.
                    let s = &mut self.sources[source];
                    s.read = 0;
                    s.marks.push((s.count, 0));
                    s.cursor.set(None);
                    if matches!(s.data, Backing::File(_))
                        && let Ok(f) = File::open(&file)
                    {
                        s.data = Backing::File(f);
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
            Change::TooLong { file, at, len, .. } => {
                if let Some(source) = find(&self.sources, &file) {
                    // Read back from the file like any other record: its head is there.
                    self.sources[source].read = at + len as u64 + 1;
                    self.note(source, at, None);
                }
            }
        }
        self.len - before
    }
}

impl Recorded {
    /// Act records beside the files (`source::acts`): appended to a memory source of their own.
    fn more_acts(&mut self, records: Vec<u8>, time_of: TimeOf<'_>) -> io::Result<()> {
        let source = *self.acts.get_or_insert_with(|| {
            self.sources.push(Source::new(None, Origin::NONE, Backing::Memory(Vec::new())));
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
        assert_eq!(r.times().count(), 0, "one input keeps no times, only the schedule made of them");
        let schedule = r.take_schedule(replay::DEFAULT_MAX_GAP_MS).expect("made while loading");
        let pace = replay::Replay::from_schedule(schedule, replay::Pace::Max, std::time::Instant::now());
        assert_eq!((pace.len(), pace.duration_ms()), (3, 2), "times 3, 3, 5");
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
        assert_eq!(r.times().collect::<Vec<_>>(), [Some(1), None, Some(2), Some(3), Some(4), None, Some(6)]);
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
