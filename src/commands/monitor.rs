//! The monitor's runtime: one task owns the pipeline and the view; sources, keys and timers reach
//! it through `select!`. Handlers only apply data and mark the screen dirty; one place draws, at
//! most `--fps` times a second, after draining whatever arrived. At replay speed `max`, ingest runs
//! in slices with a time budget so a key press is handled within a frame.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use futures_util::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::cli::{MonitorOpts, Speed, Theme, WindowOpts};
use super::terminal::TerminalGuard;
use crate::pipeline::{Config, Pipeline};
use crate::router::Event;
use crate::source::files::{self, Input, MAX_LINE, Record};
use crate::source::inbound;
use crate::source::live::{self, End, ResetReason};
use crate::source::recording;
use crate::source::replay::{Pace, Replay};
use crate::source::watch::Watcher;
use crate::ui::{self, Effect, Feed, View};
use crate::wire::{Decoded, decode};

/// Longest stretch of ingest between two looks at the keyboard.
const INGEST_SLICE: Duration = Duration::from_millis(8);
/// A followed file whose newest line is at most this old is taken to be written right now.
const FOLLOW_CLOCK_SKEW_MS: i64 = 3_600_000;
/// How often the screen is redrawn with nothing new, for its clocks.
const TICK: Duration = Duration::from_secs(1);

/// A recording held in memory: one buffer and where each record lies in it.
pub struct Recorded {
    pub name: String,
    bytes: Vec<u8>,
    records: Vec<Rec>,
    /// The files records come from: a rollout file's name tells its thread.
    sources: Vec<Source>,
    /// Whether to keep reading files as they grow, and new files appearing in `dirs` (`--follow`).
    follow: bool,
    dirs: Vec<PathBuf>,
}

struct Source {
    path: Option<PathBuf>,
    rollout_thread: Option<String>,
    /// Bytes read so far (whole lines only), for following.
    read: u64,
}

#[derive(Clone, Copy)]
enum Rec {
    Line { start: usize, end: usize, source: u32 },
    TooLong { len: usize, at: usize, head: usize, source: u32 },
}

impl Rec {
    fn source(self) -> u32 {
        match self {
            Self::Line { source, .. } | Self::TooLong { source, .. } => source,
        }
    }
}

impl Recorded {
    pub fn from_bytes(name: &str, data: &[u8]) -> Self {
        let mut r = Self::empty(name.to_owned(), false);
        r.sources.push(Source { path: None, rollout_thread: None, read: 0 });
        r.read_from(0, data).expect("reading memory cannot fail");
        r
    }

    fn empty(name: String, follow: bool) -> Self {
        Self { name, bytes: Vec::new(), records: Vec::new(), sources: Vec::new(), follow, dirs: Vec::new() }
    }

    pub fn from_inputs(paths: &[PathBuf], inputs: &[Input], follow: bool) -> Result<Self> {
        // Named as the user named it: a directory by itself, not by its first file.
        let shown = |p: &PathBuf| if p.as_os_str() == "-" { "stdin".to_owned() } else { p.display().to_string() };
        let name = match (paths, inputs) {
            ([one], _) => shown(one),
            ([first, rest @ ..], _) => format!("{} (+{})", shown(first), rest.len()),
            ([], [one, ..]) => one.name(),
            ([], []) => String::new(),
        };
        let mut r = Self::empty(name, follow);
        r.dirs = paths.iter().filter(|p| p.is_dir()).cloned().collect();
        for input in inputs {
            r.add_source(input)?;
        }
        Ok(r)
    }

    fn add_source(&mut self, input: &Input) -> Result<()> {
        let path = match input {
            Input::File(p) => Some(p.clone()),
            Input::Stdin => None,
        };
        self.sources.push(Source { path, rollout_thread: files::rollout_thread(input), read: 0 });
        let source = self.sources.len() - 1;
        let reader = files::open(input).wrap_err_with(|| format!("opening {}", input.name()))?;
        let read = self.read_from(source, reader).wrap_err_with(|| format!("reading {}", input.name()))?;
        self.sources[source].read = read;
        Ok(())
    }

    /// Appends a source's records, in order, over-long ones included where they stood.
    fn read_from(&mut self, source: usize, reader: impl std::io::BufRead) -> std::io::Result<u64> {
        let source = u32::try_from(source).unwrap_or(u32::MAX);
        files::read_records(reader, MAX_LINE, |record| {
            let at = self.bytes.len();
            match record {
                Record::Line(line) => {
                    self.bytes.extend_from_slice(line);
                    self.records.push(Rec::Line { start: at, end: at + line.len(), source });
                }
                Record::TooLong { len, head } => {
                    self.bytes.extend_from_slice(head);
                    self.records.push(Rec::TooLong { len, at, head: head.len(), source });
                }
            }
        })
    }

    /// Every record's time, decoded once up front: pacing needs the whole schedule (the duration
    /// on the position bar, seeking by time) before the first line is applied, and records are
    /// decoded again when applied — about a second per 400 MB, paid once at load.
    fn times(&self) -> Vec<Option<i64>> {
        self.records
            .iter()
            .map(|r| match *r {
                Rec::Line { start, end, .. } => match decode(&self.bytes[start..end]) {
                    Decoded::Line(line) => line.time(),
                    Decoded::Malformed(_) => None,
                },
                Rec::TooLong { .. } => None,
            })
            .collect()
    }

    fn apply(&self, pipeline: &mut Pipeline, range: std::ops::Range<usize>) {
        let nothing = &mut |_: &Event<'_, '_>| {};
        let mut current = None;
        for rec in &self.records[range] {
            // Records of several rollout files can alternate (files followed as they grow).
            if current != Some(rec.source()) {
                current = Some(rec.source());
                pipeline.set_rollout_thread(self.sources[rec.source() as usize].rollout_thread.as_deref());
            }
            match *rec {
                Rec::Line { start, end, .. } => {
                    pipeline.push(&self.bytes[start..end]);
                    pipeline.add_bytes((end - start + 1) as u64);
                }
                Rec::TooLong { len, at, head, .. } => pipeline.push_oversized(len, &self.bytes[at..at + head], nothing),
            }
        }
    }

    /// Watches every source file and followed folder (again after new files were added).
    fn watch_with(&self, watcher: &mut Watcher) {
        for path in self.sources.iter().filter_map(|s| s.path.as_deref()).chain(self.dirs.iter().map(PathBuf::as_path))
        {
            watcher.watch(path);
        }
    }

    /// Reads what followed files gained since last time (whole lines only), and files that have
    /// appeared in followed directories since (a new session's rollout, say).
    fn follow_growth(&mut self) {
        use std::io::{Read, Seek, SeekFrom};
        for source in 0..self.sources.len() {
            let Some(path) = self.sources[source].path.clone() else { continue };
            let Ok(mut file) = std::fs::File::open(&path) else { continue };
            let Ok(len) = file.metadata().map(|m| m.len()) else { continue };
            let read = &mut self.sources[source].read;
            if len < *read {
                // Truncated or replaced: start over from its beginning.
                *read = 0;
            }
            if len == *read || file.seek(SeekFrom::Start(*read)).is_err() {
                continue;
            }
            let mut buf = Vec::new();
            if file.take(len - *read).read_to_end(&mut buf).is_err() {
                continue;
            }
            if let Some(end) = buf.iter().rposition(|&b| b == b'\n') {
                buf.truncate(end + 1);
                *read += buf.len() as u64;
                let _ = self.read_from(source, buf.as_slice());
            }
        }
        if self.dirs.is_empty() {
            return;
        }
        let known: std::collections::HashSet<PathBuf> = self.sources.iter().filter_map(|s| s.path.clone()).collect();
        if let Ok(found) = files::expand(&self.dirs) {
            for input in found {
                if matches!(&input, Input::File(p) if !known.contains(p)) {
                    let _ = self.add_source(&input);
                }
            }
        }
    }
}

/// The built-in demo: a real multi-agent Codex session (see `demo/README.md`).
pub fn demo() -> Watch {
    Watch::Replay(Recorded::from_bytes("demo", include_bytes!("../../assets/demo.ndjson")))
}

/// What `swarmtop [INPUT...]` watches: no input and a terminal on stdin is the machine view; `-` or a
/// piped stdin is a live source; anything else is replayed.
pub fn watch_inputs(inputs: &[PathBuf], opts: &MonitorOpts, window: &WindowOpts) -> Result<Watch> {
    let stdin_is_tty = std::io::stdin().is_terminal();
    let live_stdin = match inputs {
        [] => !stdin_is_tty,
        [only] => only.as_os_str() == "-",
        _ => false,
    };
    if inputs.is_empty() && stdin_is_tty {
        let opts = super::sessions::Options::machine(super::sessions::window(window.since, window.all));
        return Ok(Watch::Machine(opts));
    }
    if live_stdin {
        return stdin_live(opts.record.as_deref());
    }
    let inputs_given = inputs;
    let inputs = files::expand(inputs).wrap_err("listing inputs")?;
    Ok(Watch::Replay(Recorded::from_inputs(inputs_given, &inputs, opts.follow)?))
}

/// A piped stdin as a live source, recorded with `--record`.
fn stdin_live(record: Option<&std::path::Path>) -> Result<Watch> {
    let started = recording::unix_ms();
    let header = recording::header_line(recording::Source::Stdin, None, started);
    let recorder = recording::open_requested(record, recording::Source::Stdin, started, &header)?;
    let (tx, events) = mpsc::channel(live::CHANNEL_EVENTS);
    inbound::spawn_reader(std::io::stdin(), header, recorder, tx).wrap_err("reading stdin")?;
    Ok(Watch::Live { name: "stdin".to_owned(), events })
}

/// What the monitor watches.
pub enum Watch {
    Replay(Recorded),
    Live {
        name: String,
        events: mpsc::Receiver<live::Event>,
    },
    /// Every agent session on the machine (its source starts on the monitor's runtime).
    Machine(super::sessions::Options),
}

pub fn run(watch: Watch, opts: &MonitorOpts, config: Config) -> Result<ExitCode> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().wrap_err("starting the runtime")?;
    runtime.block_on(screen(watch, opts, config))
}

fn pace_of(speed: Speed) -> Pace {
    match speed {
        Speed::Times(n) => Pace::Times(n),
        Speed::Max => Pace::Max,
    }
}

fn theme_of(theme: Theme) -> ui::Theme {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return ui::Theme::no_color();
    }
    match theme {
        Theme::Dark => ui::Theme::dark(),
        Theme::Light => ui::Theme::light(),
    }
}

/// Lines applied per second of wall time, over the last second or so.
struct Rate {
    since: Instant,
    count: u64,
    value: f64,
}

impl Rate {
    fn add(&mut self, n: usize, now: Instant) {
        self.count += n as u64;
        let elapsed = now.duration_since(self.since);
        if elapsed >= Duration::from_secs(1) {
            self.value = self.count as f64 / elapsed.as_secs_f64();
            self.count = 0;
            self.since = now;
        }
    }
}

struct Monitor {
    pipeline: Pipeline,
    config: Config,
    view: View,
    feed: Feed,
    rate: Rate,
    dirty: bool,
    /// The input has ended and the pipeline was told so (pending threads settled, as `stats` does).
    finished: bool,
}

impl Monitor {
    fn draw(&mut self, guard: &mut TerminalGuard) -> Result<()> {
        let counters = self.pipeline.counters();
        let model = &self.pipeline.model;
        let (feed, view) = (&self.feed, &mut self.view);
        guard.terminal.draw(|frame| ui::draw(frame, model, &counters, feed, view)).wrap_err("drawing")?;
        self.dirty = false;
        Ok(())
    }

    fn reset(&mut self) {
        self.pipeline = Pipeline::new(self.config.clone());
        self.finished = false;
        self.dirty = true;
    }

    /// End of input: every pending thread becomes a root or an orphan, as in `stats`.
    fn finish(&mut self) {
        if !self.finished {
            self.pipeline.finish();
            self.finished = true;
            self.dirty = true;
        }
    }
}

fn unix_now_ms() -> Option<i64> {
    SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_millis() as i64)
}

/// The monitor on the current runtime (live sources spawn their tasks on it first).
pub async fn screen(watch: Watch, opts: &MonitorOpts, config: Config) -> Result<ExitCode> {
    let mut guard = TerminalGuard::enter()?;
    let mut keys = EventStream::new();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let frame = Duration::from_secs_f64(1.0 / f64::from(opts.fps.max(1)));
    let now = Instant::now();
    let mut m = Monitor {
        pipeline: Pipeline::new(config.clone()),
        config,
        view: View::with_theme(theme_of(opts.theme)),
        feed: Feed { stall_ms: opts.stall, ..Feed::default() },
        rate: Rate { since: now, count: 0, value: 0.0 },
        dirty: true,
        finished: false,
    };
    let mut last_draw: Option<Instant> = None;

    let (mut recorded, mut live_rx) = match watch {
        Watch::Replay(r) => (Some(r), None),
        Watch::Live { name, events } => {
            m.feed.source = format!("live: {name}");
            m.feed.live = true;
            m.feed.connection = Some("connecting".to_owned());
            (None, Some(events))
        }
        Watch::Machine(opts) => {
            "machine".clone_into(&mut m.feed.source);
            m.feed.live = true;
            m.feed.machine = Some(Box::default());
            (None, Some(super::machine::spawn(opts)))
        }
    };
    let mut replay = recorded.as_ref().map(|r| {
        m.feed.source = format!("{}: {}", if r.follow { "follow" } else { "replay" }, r.name);
        tracing::info!(source = %r.name, records = r.records.len(), "replaying");
        Replay::new(&r.times(), opts.max_gap, pace_of(opts.speed), now)
    });
    // `--follow`: the watcher says when followed files or folders change.
    let mut watcher = recorded.as_ref().filter(|r| r.follow).map(|r| {
        let mut w = Watcher::new();
        r.watch_with(&mut w);
        w
    });
    let mut follow_due = false;
    let mut next_tick = now + TICK;

    loop {
        let now = Instant::now();
        // Replay: apply what is due, in a bounded slice.
        if let (Some(r), Some(rep)) = (recorded.as_ref(), replay.as_mut()) {
            let due = rep.due(now);
            if due > 0 {
                let start = Instant::now();
                let mut applied = 0;
                while applied < due && start.elapsed() < INGEST_SLICE {
                    let n = (due - applied).min(256);
                    r.apply(&mut m.pipeline, rep.position()..rep.position() + n);
                    rep.advance(n);
                    applied += n;
                }
                m.rate.add(applied, now);
                m.dirty = true;
            }
        }
        if let (Some(r), Some(rep)) = (recorded.as_ref(), replay.as_ref()) {
            // A recording that is not followed ends where it ends.
            if !r.follow && rep.is_done() {
                m.finish();
            }
        }
        if let (Some(r), Some(rep)) = (recorded.as_mut(), replay.as_mut()) {
            if r.follow && rep.is_done() && std::mem::take(&mut follow_due) {
                let before = r.records.len();
                r.follow_growth();
                if let Some(w) = watcher.as_mut() {
                    r.watch_with(w);
                }
                if r.records.len() > before {
                    r.apply(&mut m.pipeline, before..r.records.len());
                    rep.append_applied(r.records.len() - before, now);
                    m.rate.add(r.records.len() - before, now);
                    m.dirty = true;
                }
            }
        }
        if let Some(rep) = &replay {
            m.feed.paused = rep.paused();
            m.feed.speed = rep.pace().label();
            m.feed.position = Some((rep.position() as u64, rep.len() as u64));
            m.feed.live = recorded.as_ref().is_some_and(|r| r.follow) && rep.is_done();
            m.feed.now_ms = m.pipeline.model.stream_ms;
            // A followed file that has caught up is live: time moves on while its agents are quiet,
            // so quiet times and stalls are measured on the wall clock (unless the file is old).
            if m.feed.live {
                if let (Some(stream), Some(wall)) = (m.feed.now_ms, unix_now_ms()) {
                    if (0..FOLLOW_CLOCK_SKEW_MS).contains(&(wall - stream)) {
                        m.feed.now_ms = Some(wall);
                    }
                }
            }
        } else {
            m.feed.now_ms = unix_now_ms();
        }
        // Elapsed times, the clock and "stalled" move on their own: a frame a second keeps them true.
        if now >= next_tick {
            next_tick = now + TICK;
            // A quiet second is a rate of zero, not the last rate seen.
            m.rate.add(0, now);
            m.dirty = true;
        }
        m.feed.events_per_sec = m.rate.value;

        // Draw when something changed, at most once per frame interval.
        let frame_due = last_draw.map_or(now, |t| t + frame);
        if m.dirty && now >= frame_due {
            m.draw(&mut guard)?;
            last_draw = Some(now);
        }

        // Sleep until the next thing that can happen on its own.
        let mut wake = next_tick;
        if m.dirty {
            wake = wake.min(frame_due.max(now));
        }
        if let Some(rep) = &replay {
            if rep.due(now) > 0 {
                wake = now;
            } else if let Some(deadline) = rep.next_deadline() {
                wake = wake.min(deadline);
            }
        }

        tokio::select! {
            biased;
            key = keys.next() => match key {
                Some(Ok(event)) => {
                    if handle_terminal_event(&event, &mut m, recorded.as_ref(), replay.as_mut()) {
                        break;
                    }
                }
                Some(Err(e)) => return Err(e).wrap_err("reading the keyboard"),
                None => break,
            },
            _ = terminate.recv() => break,
            _ = async { Some(watcher.as_ref()?.changed().await) }, if watcher.is_some() => follow_due = true,
            _ = hangup.recv() => break,
            event = async { live_rx.as_mut()?.recv().await }, if live_rx.is_some() => {
                if let Some(event) = event {
                    apply_live(event, &mut m, now);
                } else {
                    live_rx = None;
                    if m.feed.connection.as_deref().is_none_or(|c| !c.starts_with("ended")) {
                        m.feed.connection = Some("ended".to_owned());
                    }
                    m.dirty = true;
                }
                // Drain a burst before the next frame, within the slice.
                if let Some(rx) = live_rx.as_mut() {
                    let start = Instant::now();
                    while start.elapsed() < INGEST_SLICE {
                        match rx.try_recv() {
                            Ok(event) => apply_live(event, &mut m, now),
                            Err(_) => break,
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(wake.into()) => {}
        }
    }
    drop(guard);
    tracing::info!(lines = m.pipeline.counters().lines, "monitor closed");
    Ok(ExitCode::SUCCESS)
}

fn apply_live(event: live::Event, m: &mut Monitor, now: Instant) {
    m.dirty = true;
    if !matches!(event, live::Event::Records(_)) {
        tracing::info!(?event, "live source");
    }
    match event {
        live::Event::Connected { path } => m.feed.connection = Some(format!("connected: {}", path.display())),
        live::Event::Live => m.feed.connection = Some("live".to_owned()),
        live::Event::Reset(reason) => {
            m.reset();
            m.feed.connection = Some(match reason {
                ResetReason::Lagged { .. } => "lagged: resyncing".to_owned(),
                ResetReason::Reconnected => "reconnected: resyncing".to_owned(),
            });
        }
        live::Event::Records(records) => {
            let bytes = records.as_bytes();
            let mut n = 0;
            let nothing = &mut |_: &Event<'_, '_>| {};
            let _ = files::read_records(bytes, MAX_LINE, |record| {
                n += 1;
                match record {
                    Record::Line(line) => m.pipeline.push(line),
                    Record::TooLong { len, head } => m.pipeline.push_oversized(len, head, nothing),
                }
            });
            m.pipeline.add_bytes(bytes.len() as u64);
            m.rate.add(n, now);
        }
        live::Event::Origin(thread) => m.pipeline.set_rollout_thread(thread.as_deref()),
        live::Event::Sessions(snapshot) => m.feed.machine = Some(snapshot),
        live::Event::Disconnected { retry_in, reason } => {
            m.feed.connection = Some(format!("disconnected ({reason}); retrying in {}s", retry_in.as_secs().max(1)));
        }
        live::Event::Ended(end) => {
            m.finish();
            m.feed.connection = Some(match end {
                End::Exited(code) => format!("ended (exit {code})"),
                End::Closed => "ended".to_owned(),
                End::Failed(reason) => format!("failed: {reason}"),
            });
        }
    }
}

/// Handles a key, mouse or resize event; returns whether to quit.
fn handle_terminal_event(
    event: &TermEvent,
    m: &mut Monitor,
    recorded: Option<&Recorded>,
    replay: Option<&mut Replay>,
) -> bool {
    let action = match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => ui::action_for(*key, &m.view),
        TermEvent::Mouse(mouse) => ui::action_for_mouse(*mouse, &m.view),
        TermEvent::Resize(..) => {
            m.dirty = true;
            None
        }
        _ => None,
    };
    let Some(action) = action else { return false };
    m.dirty = true;
    let effect = ui::update(&mut m.view, &m.pipeline.model, action);
    let now = Instant::now();
    match (effect, recorded, replay) {
        (Effect::Quit, ..) => return true,
        (Effect::TogglePause, _, Some(rep)) => rep.toggle_pause(now),
        (Effect::Speed(step), _, Some(rep)) => {
            rep.set_pace(if step > 0 { rep.pace().faster() } else { rep.pace().slower() }, now);
        }
        (Effect::Step, Some(r), Some(rep)) => {
            if !rep.paused() {
                rep.toggle_pause(now);
            }
            if !rep.is_done() {
                r.apply(&mut m.pipeline, rep.position()..rep.position() + 1);
                let position = rep.position() + 1;
                rep.jump(position, now);
            }
        }
        (Effect::Seek(delta), Some(r), Some(rep)) => {
            let target = rep.seek_target(delta);
            tracing::debug!(delta, from = rep.position(), to = target, "seek");
            if target < rep.position() {
                // Back in time: the reducer is deterministic, so replaying from the start rebuilds
                // exactly the model of that moment.
                m.reset();
                r.apply(&mut m.pipeline, 0..target);
            } else {
                r.apply(&mut m.pipeline, rep.position()..target);
            }
            rep.jump(target, now);
        }
        // Nothing to do, or a replay control on a live source.
        _ => {}
    }
    false
}
