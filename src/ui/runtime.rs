//! The monitor's runtime as a state machine: fed inputs (keys, mouse, live events) and the time,
//! it applies data, keeps the view and the feed up to date and says when to draw and when to
//! wake. It owns no terminal, reads no clock of its own and does no waiting: `commands::monitor`
//! does those (the terminal guard, `select!` over keys, sources and signals) and hands in the
//! instants, the wall time and the clock that bounds an ingest slice ([`Settings::clock`]), so all
//! of this is tested by handing it instants.
//!
//! One rule throughout: ingest goes in bounded slices ([`INGEST_SLICE`], chunks of
//! [`INGEST_CHUNK`]) whatever asked for it — replay pacing, a seek, a step, what a paused live
//! view held — so a key is answered within a frame.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ratatui::Frame;

use super::acting::Reply;
use super::feed::Feed;
use super::frame::{FrameClock, INGEST_CHUNK, INGEST_SLICE};
use super::history::Loaded;
use super::keymap::{action_for, action_for_mouse};
use super::screen::render;
use super::update::{Effect, update};
use super::view::View;
use crate::model::Model;
use crate::pipeline::{Config, Pipeline};
use crate::router::Event;
use crate::source::files::{self, MAX_LINE, Record};
use crate::source::follow::Change;
use crate::source::live::{self, End, ResetReason};
use crate::source::recorded::{Piece, Recorded};
use crate::source::replay::{LineTimes, Pace, Replay, Schedule};
use crate::wire::{Clean, Origin, sanitize_line};

/// A stream whose newest line is at most this old is taken to be written right now: its quiet
/// times and stalls are measured on the wall clock. Older, they are measured in stream time.
const CLOCK_SKEW_MS: i64 = 3_600_000;
/// How often the screen is redrawn with nothing new, for its clocks.
const TICK: Duration = Duration::from_secs(1);
/// Lines a live source sent while its view was paused, held until resume; past the bound the
/// view resumes on its own (a pause must not grow memory without end).
pub const PAUSE_HOLD_BYTES: usize = 64 << 20;

/// What the runtime is fed besides the time.
#[derive(Debug)]
pub enum Input {
    Terminal(crossterm::event::Event),
    Live(live::Event),
    /// The live source's channel closed.
    LiveClosed,
    /// What a read of the run store brought, for the history view.
    Past(Loaded),
    /// What finding or doing an interrupt brought, for its dialog.
    Act(Reply),
}

/// How the monitor was asked to run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub fps: u32,
    pub stall_ms: u64,
    pub max_gap_ms: u64,
    pub pace: Pace,
    /// The clock an ingest slice is measured on ([`INGEST_SLICE`]): `Instant::now` in the
    /// monitor; tests may hand in their own.
    pub clock: fn() -> Instant,
}

/// A record's time, as pacing reads it (the envelope's `ts`, else the line's own): the clock
/// several files are merged by, in a replay as in `stats`.
pub fn time_of(line: &[u8]) -> Option<i64> {
    crate::wire::stream_time(line)
}

/// Applies records `range` of a replay to the pipeline, each with its file's origin.
pub fn apply(r: &Recorded, pipeline: &mut Pipeline, range: std::ops::Range<usize>) {
    let nothing = &mut |_: &Event<'_, '_>| {};
    // An `Origin` is an `Arc`: cloned once per change of file.
    let mut origin = Origin::NONE;
    let read = r.each(range, |piece| match piece {
        Piece::Source { origin: o } => origin = o.clone(),
        Piece::Line(line) => pipeline.feed(Record::Line(line), &origin, nothing),
        Piece::TooLong { len, head } => pipeline.feed(Record::TooLong { len, head }, &origin, nothing),
    });
    if let Err(e) = read {
        // The file changed under the replay (truncated, removed): what was read stands.
        tracing::warn!(error = %e, source = %r.name, "reading the recording back");
    }
}

/// A replay's record times, read back for its schedule as [`time_of`] read them while the
/// recording was loaded.
struct TimesOf<'a>(&'a Recorded);

impl LineTimes for TimesOf<'_> {
    fn each_time(&self, lines: std::ops::Range<usize>, visit: &mut dyn FnMut(Option<i64>)) {
        let read = self.0.each_for_times(lines, |piece| match piece {
            Piece::Line(line) => visit(time_of(line)),
            Piece::TooLong { .. } => visit(None),
            Piece::Source { .. } => {}
        });
        if let Err(e) = read {
            // The schedule makes do with what was read: later lines fall due with the last.
            tracing::warn!(error = %e, source = %self.0.name, "reading the recording's times back");
        }
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

/// A replay: its records and their pacing.
struct Replayed {
    recorded: Recorded,
    pace: Replay,
    /// Growth of followed files reported before the replay caught up, applied once it has.
    growth: VecDeque<Change>,
}

pub struct Runtime {
    pipeline: Pipeline,
    config: Config,
    pub view: View,
    pub feed: Feed,
    rate: Rate,
    dirty: bool,
    /// The input has ended and the pipeline was told so (pending threads settled, as `stats` does).
    finished: bool,
    /// Live events that arrived while the view was paused, oldest first.
    held: VecDeque<live::Event>,
    held_bytes: usize,
    clock: FrameClock,
    replay: Option<Replayed>,
    /// Measures the ingest slices.
    slice_clock: fn() -> Instant,
    /// Where the live records that follow come from (a machine-wide source interleaves files).
    live_origin: Origin,
    /// The wall clock (unix ms) at the last `advance`.
    wall_ms: Option<i64>,
    /// The machine view has read what was on disk at start: its burn rate counts from here, on
    /// the wall clock (its sessions' stream times are each their own).
    machine_caught_up: bool,
}

impl Runtime {
    fn new(view: View, settings: &Settings, config: Config, now: Instant) -> Self {
        Self {
            pipeline: Pipeline::new(config.clone()),
            config,
            view,
            feed: Feed { stall_ms: settings.stall_ms, ..Feed::default() },
            rate: Rate { since: now, count: 0, value: 0.0 },
            dirty: true,
            finished: false,
            held: VecDeque::new(),
            held_bytes: 0,
            clock: FrameClock::new(settings.fps, TICK, now),
            replay: None,
            slice_clock: settings.clock,
            live_origin: Origin::NONE,
            wall_ms: None,
            machine_caught_up: false,
        }
    }

    /// A replay of `recorded`, paced from its records' times.
    pub fn replay(mut recorded: Recorded, view: View, settings: &Settings, config: Config, now: Instant) -> Self {
        let mut rt = Self::new(view, settings, config, now);
        rt.feed.source.clone_from(&recorded.name);
        tracing::info!(source = %recorded.name, records = recorded.len(), "replaying");
        // The schedule keeps a mark a block of records and reads their times back as it needs
        // them: the recording keeps none once it is taken.
        let schedule = recorded.take_schedule(settings.max_gap_ms).unwrap_or_else(|| {
            // Another gap cap than the one the schedule was made with while loading.
            let mut schedule = Schedule::new(settings.max_gap_ms);
            TimesOf(&recorded).each_time(0..recorded.len(), &mut |t| schedule.push(t));
            schedule
        });
        let mut pace = Replay::from_schedule(schedule, settings.pace, now);
        if recorded.start_at_action {
            let start = action_start(&recorded, &pace, &rt.config);
            apply(&recorded, &mut rt.pipeline, 0..start);
            pace.jump(start, now, &TimesOf(&recorded));
        }
        rt.replay = Some(Replayed { recorded, pace, growth: VecDeque::new() });
        rt
    }

    /// A live source named `name`, whose events come through [`Input::Live`].
    pub fn live(name: Clean, view: View, settings: &Settings, config: Config, now: Instant) -> Self {
        let mut rt = Self::new(view, settings, config, now);
        rt.feed.source = name;
        rt.feed.live = true;
        rt.feed.connection = Some(sanitize_line("connecting"));
        rt
    }

    /// The machine view: a live source of every session on the machine (`swarmtop`, no arguments).
    /// An ended session leaves the screen `keep_ms` after its last activity (`None`: never);
    /// `home` shortens project paths to `~/…`.
    pub fn machine(
        mut view: View,
        settings: &Settings,
        config: Config,
        now: Instant,
        keep_ms: Option<u64>,
        home: Option<String>,
    ) -> Self {
        view.derived.tops.keep_ms = keep_ms.map(|k| i64::try_from(k).unwrap_or(i64::MAX));
        view.derived.tops.home = home;
        let mut rt = Self::live(sanitize_line("machine"), view, settings, config, now);
        rt.feed.connection = None;
        rt.feed.machine = Some(std::sync::Arc::default());
        rt.feed.loading = true;
        rt
    }

    pub fn model(&self) -> &Model {
        &self.pipeline.model
    }

    pub fn lines(&self) -> u64 {
        self.pipeline.counters().lines
    }

    /// `input.format` of what was read so far.
    pub fn format(&self) -> &'static str {
        self.pipeline.format()
    }

    /// Takes one input; returns what only the caller can do (quit, suspend, copy).
    pub fn input(&mut self, input: Input, now: Instant) -> Option<Effect> {
        match input {
            Input::Terminal(event) => return self.terminal(&event, now),
            Input::Live(live::Event::Followed(change)) => {
                if let Some(rp) = self.replay.as_mut() {
                    rp.growth.push_back(change);
                }
            }
            Input::Live(event) => self.take_live(event, now),
            // A replay's follower stopping ends nothing: the recording is all there.
            Input::LiveClosed if self.replay.is_some() => {}
            // The source closed: ended, once what a pause holds has been shown.
            Input::LiveClosed => self.take_live(live::Event::Ended(End::Closed), now),
            Input::Past(loaded) => {
                self.view.history.take(loaded);
                self.dirty = true;
            }
            Input::Act(reply) => {
                if let Some(said) = self.view.acting.take(reply) {
                    self.view.panes.notice = Some(said);
                }
                self.dirty = true;
            }
        }
        None
    }

    /// Does what time asks for: replay lines falling due, followed files growing, what a pause
    /// held, the tick; `wall_ms` is the wall clock (unix ms) for live feeds.
    pub fn advance(&mut self, now: Instant, wall_ms: Option<i64>) {
        self.wall_ms = wall_ms.or(self.wall_ms);
        if let Some(rp) = self.replay.as_mut() {
            let due = rp.pace.due(now, &TimesOf(&rp.recorded));
            if due > 0 {
                let slice = Slice { clock: self.slice_clock, due };
                let applied = ingest(&mut self.pipeline, &mut self.view, &rp.recorded, &mut rp.pace, slice);
                self.dirty |= applied > 0;
                self.rate.add(applied, now);
            }
            // A recording that is not followed ends where it ends.
            if !rp.recorded.follow && rp.pace.is_done() {
                if !self.finished {
                    self.pipeline.finish();
                    self.finished = true;
                    self.dirty = true;
                }
                if self.feed.ended.is_none() {
                    self.feed.ended = Some(sanitize_line("replay ended"));
                }
            } else {
                self.feed.ended = None;
            }
            // What followed files gained (reported by `source::follow`), once caught up: the
            // lines are due the moment they exist.
            while rp.pace.is_done() {
                let Some(change) = rp.growth.pop_front() else { break };
                let before = rp.recorded.len();
                let added = rp.recorded.followed(change, &time_of);
                if added > 0 {
                    apply(&rp.recorded, &mut self.pipeline, before..before + added);
                    rp.pace.append_applied(added, now);
                    self.rate.add(added, now);
                    sample(&mut self.view, &self.pipeline.model, self.pipeline.model.stream_ms);
                    self.dirty = true;
                }
            }
        }
        // A live view resumed: what arrived meanwhile goes in through the same slices.
        if !self.feed.paused && !self.held.is_empty() {
            let start = (self.slice_clock)();
            while (self.slice_clock)().duration_since(start) < INGEST_SLICE {
                let Some(event) = self.held.pop_front() else { break };
                if let live::Event::Records(r) = &event {
                    self.held_bytes = self.held_bytes.saturating_sub(r.as_bytes().len());
                }
                self.apply_live(event, now);
            }
            if self.held.is_empty() {
                self.feed.arrived = 0;
            }
        }
        self.update_feed(now, wall_ms);
        // Elapsed times, the clock and "stalled" move on their own: a frame a second keeps them true.
        if self.clock.tick_due(now) {
            self.clock.ticked(now);
            // A quiet second is a rate of zero, not the last rate seen.
            self.rate.add(0, now);
            if self.feed.machine.is_some() && !self.feed.paused {
                // The machine's burn is per wall minute: quiet seconds count too.
                self.sample_live();
            }
            // A paused view is frozen, its clock with it.
            self.dirty |= !self.feed.paused;
        }
        // Once the input is over nothing arrives: the last second's rate is not a rate now.
        self.feed.events_per_sec = if self.feed.ended.is_some() { 0.0 } else { self.rate.value };
    }

    fn update_feed(&mut self, now: Instant, wall_ms: Option<i64>) {
        // The threads' newest line, as of the last frame: a recording header's own time (when the
        // pipe was opened) must not make old lines look current.
        let newest = self.view.activity().newest_ms.or(self.pipeline.model.stream_ms);
        let wall_if_current = |stream: Option<i64>| match (stream, wall_ms) {
            (Some(stream), Some(wall)) if !(0..CLOCK_SKEW_MS).contains(&(wall - stream)) => Some(stream),
            (stream, wall) => wall.or(stream),
        };
        if let Some(rp) = &self.replay {
            let rep = &rp.pace;
            self.feed.paused = rep.paused();
            self.feed.speed = rep.pace().label();
            self.feed.position = Some((rep.position() as u64, rep.len() as u64));
            self.feed.reopened = rp.recorded.reopened();
            // A followed file that has caught up is live: time moves on while its agents are quiet.
            self.feed.live = rp.recorded.follow && rep.is_done();
            // A replay's clock is its stream's, moving on between lines as it did when they were
            // written (a running agent's time ticks while it is quiet, as `--follow` showed it).
            let since = i64::try_from(rep.since_last_ms(now, &TimesOf(&rp.recorded))).unwrap_or(i64::MAX);
            let replayed = self.pipeline.model.stream_ms.map(|s| s.saturating_add(since));
            self.feed.now_ms = if self.feed.live { wall_if_current(newest) } else { replayed };
        } else if self.feed.machine.is_some() && !self.feed.paused {
            // Sessions of many ages: the machine's clock is the wall clock.
            self.feed.now_ms = wall_ms.or(newest);
        } else if self.feed.ended.is_none() && !self.feed.paused {
            self.feed.now_ms = wall_if_current(newest);
        }
    }

    /// Whether a frame is due now.
    pub fn frame_due(&self, now: Instant) -> bool {
        self.clock.due(self.dirty, now)
    }

    /// Draws the screen (call when [`Self::frame_due`]), noting the frame.
    pub fn draw(&mut self, frame: &mut Frame, now: Instant) {
        let started = (self.slice_clock)();
        let counters = self.pipeline.counters();
        render(frame, &self.pipeline.model, &counters, &self.feed, &mut self.view);
        self.dirty = false;
        self.clock.drawn_in(now, (self.slice_clock)().saturating_duration_since(started));
    }

    /// When to wake with no input: the next frame, tick, replay line or follow poll.
    pub fn wake(&self, now: Instant) -> Instant {
        let mut deadline = None;
        if let Some(rp) = &self.replay {
            let times = TimesOf(&rp.recorded);
            deadline = if rp.pace.due(now, &times) > 0 || (rp.pace.is_done() && !rp.growth.is_empty()) {
                Some(now)
            } else {
                rp.pace.next_deadline(&times)
            };
        }
        if !self.feed.paused && !self.held.is_empty() {
            deadline = Some(now);
        }
        self.clock.next_wake(self.dirty, now, deadline)
    }

    /// The session the history asked to open was opened as a replay of its files (a screen of its
    /// own): the history shows its list again for when that screen returns here.
    pub fn opened_elsewhere(&mut self) {
        self.view.history.opened = None;
        self.dirty = true;
    }

    /// This screen was opened from another's history: Esc at its top returns there.
    pub fn nest(&mut self) {
        self.view.history.nested = true;
    }

    /// A footer message (`copied …`) until the next key.
    pub fn notice(&mut self, text: String) {
        self.view.panes.notice = Some(text);
        self.dirty = true;
    }

    /// A live event: applied, or held while the view is paused (counted for the header).
    fn take_live(&mut self, event: live::Event, now: Instant) {
        if !self.feed.paused {
            self.apply_live(event, now);
            return;
        }
        if let live::Event::Records(r) = &event {
            let bytes = r.as_bytes();
            self.feed.arrived += memchr::memchr_iter(b'\n', bytes).count() as u64;
            self.held_bytes += bytes.len();
        }
        self.held.push_back(event);
        self.dirty = true;
        if self.held_bytes > PAUSE_HOLD_BYTES {
            tracing::warn!(bytes = self.held_bytes, "pause hold bound reached: resuming");
            self.feed.paused = false;
        }
    }

    fn reset(&mut self) {
        self.pipeline = Pipeline::new(self.config.clone());
        // A server's machine view sends its history again before what happens now.
        self.machine_caught_up = false;
        self.feed.loading = self.feed.machine.is_some();
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

    /// A burn sample after live records: at stream time, or in the machine view on the wall clock
    /// once what was on disk is in (history read at start is not spending now).
    fn sample_live(&mut self) {
        if self.feed.machine.is_none() {
            sample(&mut self.view, &self.pipeline.model, self.pipeline.model.stream_ms);
        } else if self.machine_caught_up {
            sample(&mut self.view, &self.pipeline.model, self.wall_ms);
        }
    }

    fn apply_live(&mut self, event: live::Event, now: Instant) {
        self.dirty = true;
        if !matches!(event, live::Event::Records(_)) {
            tracing::info!(?event, "live source");
        }
        match event {
            live::Event::Live if self.feed.machine.is_some() => {
                self.machine_caught_up = true;
                self.feed.loading = false;
                self.view.derived.burn.clear();
                self.sample_live();
            }
            live::Event::Connected { .. } | live::Event::Live => self.feed.connection = None,
            live::Event::Reset(reason) => {
                self.reset();
                self.feed.connection = Some(sanitize_line(match reason {
                    ResetReason::Lagged { .. } => "lagged: resyncing",
                    ResetReason::Reconnected => "reconnected: resyncing",
                }));
            }
            live::Event::Records(records) => {
                // Data flows: whatever the connection said before, it is live now.
                self.feed.connection = None;
                let bytes = records.as_bytes();
                let mut n = 0;
                let nothing = &mut |_: &Event<'_, '_>| {};
                let pipeline = &mut self.pipeline;
                let origin = &self.live_origin;
                let _ = files::read_records(bytes, MAX_LINE, |record| {
                    n += 1;
                    pipeline.feed(record, origin, nothing);
                });
                self.rate.add(n, now);
                self.sample_live();
            }
            live::Event::Oversized { len, head } => {
                self.pipeline.feed(Record::TooLong { len, head: &head }, &Origin::NONE, &mut |_: &Event<'_, '_>| {});
            }
            live::Event::Notice(text) => self.notice(text.to_string()),
            live::Event::Origin(origin) => self.live_origin = origin,
            live::Event::Sessions(snapshot) => {
                // A server's machine view: paths are shortened by the server's home.
                if self.view.derived.tops.home.is_none() {
                    self.view.derived.tops.home = snapshot.home.as_ref().map(|h| h.to_string_lossy().into_owned());
                }
                self.feed.machine = Some(std::sync::Arc::from(snapshot));
            }
            live::Event::Stopped { id, guessed_at_ms } => self.pipeline.stopped(&id, guessed_at_ms),
            live::Event::Resumed(id) => self.pipeline.resumed(&id),
            live::Event::Disconnected { retry_in, reason } => {
                // The reason is clean; the words around it are ours.
                self.feed.connection = Some(sanitize_line(&format!(
                    "disconnected ({reason}); retrying in {}s",
                    retry_in.as_secs().max(1)
                )));
            }
            live::Event::Ended(End::Closed) if self.feed.ended.is_some() => {}
            // Only a replay follows files (handled in `input`).
            live::Event::Followed(_) => {}
            live::Event::Ended(end) => {
                self.finish();
                self.feed.connection = None;
                self.feed.ended = Some(sanitize_line(&match end {
                    End::Exited(code) => format!("ended (exit {code})"),
                    End::Closed => "ended".to_owned(),
                    End::Failed(reason) => format!("failed: {reason}"),
                }));
            }
        }
    }

    /// A key, mouse or resize event; returns what only the caller can do, having done the rest.
    fn terminal(&mut self, event: &crossterm::event::Event, now: Instant) -> Option<Effect> {
        use crossterm::event::{Event as TermEvent, KeyEventKind};
        let action = match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => action_for(*key, &self.view),
            TermEvent::Mouse(mouse) => action_for_mouse(*mouse, &self.view),
            TermEvent::Resize(..) => {
                self.dirty = true;
                None
            }
            _ => None,
        };
        if matches!(event, TermEvent::Key(_)) && self.view.panes.notice.take().is_some() {
            self.dirty = true;
        }
        let action = action?;
        self.dirty = true;
        let effect = update(&mut self.view, &self.pipeline.model, action);
        match (effect, self.replay.as_mut()) {
            (Effect::TogglePause, Some(rp)) => rp.pace.toggle_pause(now, &TimesOf(&rp.recorded)),
            (Effect::TogglePause, None) => {
                // A live view: freeze what is shown; the source keeps being read and held.
                self.feed.paused = !self.feed.paused;
            }
            (Effect::Speed(step), Some(rp)) => {
                let pace = if step > 0 { rp.pace.pace().faster() } else { rp.pace.pace().slower() };
                rp.pace.set_pace(pace, now, &TimesOf(&rp.recorded));
            }
            (Effect::Step, Some(rp)) => {
                if !rp.pace.paused() {
                    rp.pace.toggle_pause(now, &TimesOf(&rp.recorded));
                }
                if !rp.pace.is_done() {
                    let slice = Slice { clock: self.slice_clock, due: 1 };
                    ingest(&mut self.pipeline, &mut self.view, &rp.recorded, &mut rp.pace, slice);
                }
            }
            (Effect::Seek(delta), Some(rp)) => {
                let target = rp.pace.seek_target(delta, &TimesOf(&rp.recorded));
                tracing::debug!(delta, from = rp.pace.position(), to = target, "seek");
                if target < rp.pace.position() {
                    // Back in time: the reducer is deterministic, so replaying from the start
                    // rebuilds exactly the model of that moment.
                    self.pipeline = Pipeline::new(self.config.clone());
                    self.finished = false;
                    self.view.derived.burn.clear();
                    rp.pace.jump(0, now, &TimesOf(&rp.recorded));
                }
                // Through the same bounded slices as playback: a long seek is applied over
                // several turns of the loop, keys still answered between them.
                rp.pace.seek_to(target, now, &TimesOf(&rp.recorded));
            }
            (
                effect @ (Effect::Quit
                | Effect::Suspend
                | Effect::Copy(_)
                | Effect::LoadHistory
                | Effect::OpenPast(_)
                | Effect::Return
                | Effect::PlanAct(_)
                | Effect::Act(_)),
                _,
            ) => return Some(effect),
            // Nothing to do, or a replay control on a live source.
            _ => {}
        }
        None
    }
}

/// One turn of ingest: up to `due` lines, for at most one [`INGEST_SLICE`] of `clock`.
#[derive(Clone, Copy)]
struct Slice {
    clock: fn() -> Instant,
    due: usize,
}

/// Applies up to `due` replay lines from the replay's position, a chunk at a time, for at most
/// one ingest slice; returns how many.
fn ingest(pipeline: &mut Pipeline, view: &mut View, r: &Recorded, rep: &mut Replay, slice: Slice) -> usize {
    let Slice { clock, due } = slice;
    let start = clock();
    let mut applied = 0;
    while applied < due && clock().duration_since(start) < INGEST_SLICE {
        let n = (due - applied).min(INGEST_CHUNK);
        apply(r, pipeline, rep.position()..rep.position() + n);
        rep.advance(n);
        applied += n;
        sample(view, &pipeline.model, pipeline.model.stream_ms);
    }
    applied
}

/// A burn-rate sample at the stream's time, after each slice of ingest: the rate then follows
/// stream time, whatever the frame cadence or the replay speed. It sums the roll-ups of the tops
/// of the tree (sessions and orphans), so a sample costs the tops, not every thread.
fn sample(view: &mut View, model: &Model, at_ms: Option<i64>) {
    let total: i128 = model.sessions.iter().chain(&model.unattributed).map(|&t| model.thread(t).subtree.cost.0).sum();
    view.sample_burn(at_ms, total);
}

/// Where the demo starts: a few seconds before its first child registers, so a new user sees the
/// swarm at once. Everything before is applied at once, not skipped: the screen shows what the
/// opening led to. Found by running the records through a scratch pipeline (the demo is small).
fn action_start(r: &Recorded, rep: &Replay, config: &Config) -> usize {
    const LEAD_MS: u64 = 2_000;
    let mut scratch = Pipeline::new(config.clone());
    let first_child = (0..r.len()).find(|&i| {
        apply(r, &mut scratch, i..i + 1);
        scratch.model.threads.len() >= 2
    });
    let times = TimesOf(r);
    first_child.map_or(0, |i| rep.position_at(rep.offset_of(i, &times).saturating_sub(LEAD_MS), &times))
}

#[cfg(test)]
mod tests {
    use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::ui::{Overlay, Theme};

    const DEMO: &[u8] = include_bytes!("../../assets/demo.ndjson");

    fn settings(pace: Pace) -> Settings {
        Settings { fps: 30, stall_ms: 60_000, max_gap_ms: 2_000, pace, clock: Instant::now }
    }

    fn demo(pace: Pace, now: Instant) -> Runtime {
        let mut r = Recorded::from_static("demo", DEMO, &time_of);
        r.start_at_action = true;
        Runtime::replay(r, View::with_theme(Theme::no_color()), &settings(pace), Config::default(), now)
    }

    fn key(c: char) -> Input {
        Input::Terminal(TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)))
    }

    fn records(lines: &[&[u8]]) -> Input {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        Input::Live(live::Event::Records(live::Records::new(bytes)))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_schedule_made_while_loading_or_read_again_is_the_one_made_of_the_times() {
        let r = Recorded::from_static("demo", DEMO, &time_of);
        let mut times = Vec::new();
        TimesOf(&r).each_time(0..r.len(), &mut |t| times.push(t));
        for gap in [2_000, 60_000] {
            let want = Replay::new(times.iter().copied(), gap, Pace::Max, Instant::now());
            let loaded = Recorded::from_static("demo", DEMO, &time_of);
            let settings = Settings { max_gap_ms: gap, ..settings(Pace::Max) };
            let rt = Runtime::replay(
                loaded,
                View::with_theme(Theme::no_color()),
                &settings,
                Config::default(),
                Instant::now(),
            );
            let got = &rt.replay.as_ref().expect("a replay").pace;
            assert_eq!((got.len(), got.duration_ms()), (want.len(), want.duration_ms()), "gap {gap}");
            let offsets = |p: &Replay| (0..p.len()).map(|i| p.offset_of(i, &TimesOf(&r))).collect::<Vec<_>>();
            assert_eq!(offsets(got), offsets(&want), "gap {gap}");
        }
    }

    #[test]
    fn a_replay_plays_at_its_pace_and_ends_once() {
        let t0 = Instant::now();
        let mut rt = demo(Pace::Times(1), t0);
        let start = rt.lines();
        assert!(start > 0, "the demo starts where its action starts, the opening applied");
        assert!(rt.model().threads.len() < 2, "the first child registers within seconds, not before");
        rt.advance(t0 + ms(5_000), None);
        assert!(rt.model().threads.len() >= 2, "a swarm within five seconds");
        assert!(rt.frame_due(t0 + ms(5_000)));
        let mut rt = demo(Pace::Max, t0);
        let mut now = t0;
        for _ in 0..1000 {
            rt.advance(now, None);
            if rt.feed.ended.is_some() {
                break;
            }
            now += ms(10);
        }
        assert_eq!(rt.feed.ended.as_ref().map(Clean::as_str), Some("replay ended"));
        assert_eq!(rt.feed.position.map(|(a, b)| a == b), Some(true));
        assert!(rt.feed.events_per_sec == 0.0, "an ended replay has no rate: {}", rt.feed.events_per_sec);
    }

    /// A replay's clock moves on between lines (issue 19, seen in tmux replaying a Claude folder at
    /// 1×: a background child sleeping 5 s showed `0:02` until its next line, then `0:05`): what a
    /// running agent's time and the header's clock read is the stream's time plus the replay time
    /// since the last line, held at the next line's, and still while paused.
    #[test]
    fn a_replay_s_clock_moves_on_between_lines() {
        let t0 = Instant::now();
        let line = |ts: i64, method: &str, params: &str| {
            format!(r#"{{"ts":{ts},"dir":"s2c","msg":{{"method":"{method}","params":{params}}}}}"#)
        };
        let text = [
            line(1_000, "thread/started", r#"{"thread":{"id":"root","parentThreadId":null}}"#),
            line(1_000, "turn/started", r#"{"threadId":"root","turn":{"id":"t1","status":"inProgress"}}"#),
            line(
                2_500,
                "item/started",
                r#"{"threadId":"root","turnId":"t1","item":{"type":"agentMessage","id":"m1","text":"hi"}}"#,
            ),
        ]
        .join("\n");
        let text: &'static [u8] = Box::leak(text.into_bytes().into_boxed_slice());
        let r = Recorded::from_static("clock", text, &time_of);
        let mut rt =
            Runtime::replay(r, View::with_theme(Theme::no_color()), &settings(Pace::Times(1)), Config::default(), t0);
        rt.advance(t0, None);
        assert_eq!(rt.feed.now_ms, Some(1_000));
        rt.advance(t0 + ms(600), None);
        assert_eq!(rt.feed.now_ms, Some(1_600), "600 ms on, no line due: the clock moved with it");
        let root = rt.model().thread(crate::router::ThreadIdx(0));
        assert_eq!(crate::ui::text::elapsed(root, rt.feed.now_ms), Some(600), "the running agent's time too");
        rt.input(key(' '), t0 + ms(600));
        rt.advance(t0 + ms(1_200), None);
        assert_eq!(rt.feed.now_ms, Some(1_600), "paused: the clock with it");
        rt.input(key(' '), t0 + ms(1_200));
        rt.advance(t0 + ms(2_100), None);
        assert_eq!(rt.feed.now_ms, Some(2_500), "the next line, at its own time");
    }

    #[test]
    fn a_seek_back_replays_through_bounded_slices() {
        let t0 = Instant::now();
        let mut rt = demo(Pace::Max, t0);
        let mut now = t0;
        while rt.feed.ended.is_none() {
            rt.advance(now, None);
            now += ms(10);
        }
        let end = rt.lines();
        // A first frame tells the view it shows a replay (its keys apply).
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).expect("terminal");
        term.draw(|f| rt.draw(f, now)).expect("draw");
        assert_eq!(rt.input(key('['), now), None);
        assert!(rt.lines() < end, "the model was rebuilt from the start, not at once to the target");
        let mut turns = 0;
        while rt.replay.as_ref().is_some_and(|r| r.pace.seeking()) {
            rt.advance(now, None);
            turns += 1;
            assert!(turns < 1000);
        }
        assert!(rt.lines() < end, "ten seconds back is short of the end");
        assert!(rt.lines() > 0);
    }

    /// A live view of stdin at full speed, as `cmd | swarmtop` opens it.
    fn live_stdin(t0: Instant) -> Runtime {
        Runtime::live(
            sanitize_line("stdin"),
            View::with_theme(Theme::no_color()),
            &settings(Pace::Max),
            Config::default(),
            t0,
        )
    }

    #[test]
    fn a_paused_live_view_holds_what_arrives_and_counts_it() {
        let t0 = Instant::now();
        let mut rt = live_stdin(t0);
        let lines: Vec<&[u8]> = DEMO.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        rt.input(records(&lines[..100]), t0);
        assert_eq!(rt.feed.connection, None, "data flows: no longer connecting");
        let before = rt.lines();
        assert_eq!(rt.input(key(' '), t0), None);
        assert!(rt.feed.paused);
        rt.input(records(&lines[100..300]), t0);
        rt.input(Input::LiveClosed, t0);
        rt.advance(t0 + ms(100), None);
        assert_eq!(rt.lines(), before, "nothing applied while paused");
        assert_eq!(rt.feed.arrived, 200);
        assert_eq!(rt.feed.ended, None, "the end is held too");
        rt.input(key(' '), t0 + ms(200));
        for k in 0..100 {
            rt.advance(t0 + ms(300 + k), None);
        }
        assert_eq!(rt.lines(), before + 200);
        assert_eq!(rt.feed.arrived, 0);
        assert_eq!(rt.feed.ended.as_ref().map(Clean::as_str), Some("ended"));
    }

    #[test]
    fn quitting_a_live_stream_asks_first_and_esc_never_quits() {
        let t0 = Instant::now();
        let mut rt = live_stdin(t0);
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).expect("terminal");
        term.draw(|f| rt.draw(f, t0)).expect("draw");
        let esc = Input::Terminal(TermEvent::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
        assert_eq!(rt.input(esc, t0), None);
        assert_eq!(rt.input(key('q'), t0), None);
        assert_eq!(rt.view.panes.overlay, Some(Overlay::ConfirmQuit));
        assert_eq!(rt.input(key('y'), t0), Some(Effect::Quit));
    }

    #[test]
    fn the_loop_sleeps_until_something_can_happen() {
        let t0 = Instant::now();
        let mut rt = demo(Pace::Times(1), t0);
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).expect("terminal");
        rt.advance(t0, None);
        term.draw(|f| rt.draw(f, t0)).expect("draw");
        let wake = rt.wake(t0);
        assert!(wake > t0 && wake <= t0 + TICK, "the next line or the tick: {:?}", wake - t0);
        rt.input(key(' '), t0);
        rt.advance(t0, None);
        term.draw(|f| rt.draw(f, t0 + ms(40))).expect("draw");
        assert_eq!(rt.wake(t0 + ms(40)), t0 + TICK, "paused: only the tick");
    }
}
