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

use super::cli::{MonitorOpts, Speed, Theme};
use super::terminal::TerminalGuard;
use crate::pipeline::{Config, Pipeline};
use crate::router::Event;
use crate::source::files::{self, MAX_LINE, Record};
use crate::source::inbound;
use crate::source::live::{self, End, ResetReason};
use crate::source::recorded::{Piece, Recorded};
use crate::source::recording;
use crate::source::replay::{Pace, Replay};
use crate::ui::frame::{INGEST_CHUNK, INGEST_SLICE};
use crate::ui::{self, Effect, Feed, View};
use crate::wire::{Decoded, Origin, decode};

/// How often a followed file is checked for growth.
const FOLLOW_POLL: Duration = Duration::from_millis(250);
/// A followed file whose newest line is at most this old is taken to be written right now.
const FOLLOW_CLOCK_SKEW_MS: i64 = 3_600_000;
/// How often the screen is redrawn with nothing new, for its clocks.
const TICK: Duration = Duration::from_secs(1);

/// A record's time, as pacing reads it (the envelope's `ts`, else `emittedAtMs`).
fn time_of(line: &[u8]) -> Option<i64> {
    match decode(line) {
        Decoded::Line(line) => line.time(),
        Decoded::Malformed(_) => None,
    }
}

/// Applies records `range` of a replay to the pipeline, each with its file's origin.
fn apply(r: &Recorded, pipeline: &mut Pipeline, range: std::ops::Range<usize>) {
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

/// The built-in demo: a real multi-agent Codex session (see `demo/README.md`).
pub fn demo() -> Watch {
    let mut r = Recorded::from_static("demo", include_bytes!("../../assets/demo.ndjson"), &time_of);
    r.start_at_action = true;
    Watch::Replay(r)
}

/// What `swarmtop [INPUT...]` watches: no input and a terminal on stdin plays the demo; `-` or a
/// piped stdin is a live source; anything else is replayed.
pub fn watch_inputs(inputs: &[PathBuf], opts: &MonitorOpts) -> Result<Watch> {
    let stdin_is_tty = std::io::stdin().is_terminal();
    let live_stdin = match inputs {
        [] => !stdin_is_tty,
        [only] => only.as_os_str() == "-",
        _ => false,
    };
    if inputs.is_empty() && stdin_is_tty {
        return Ok(demo());
    }
    if live_stdin {
        return stdin_live(opts.record.as_deref());
    }
    let inputs_given = inputs;
    let inputs = files::expand(inputs).wrap_err("listing inputs")?;
    let recorded =
        Recorded::from_inputs(inputs_given, &inputs, opts.follow, &time_of).wrap_err("reading the inputs")?;
    Ok(Watch::Replay(recorded))
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
    Live { name: String, events: mpsc::Receiver<live::Event> },
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
    /// Live events that arrived while the view was paused, oldest first.
    held: std::collections::VecDeque<live::Event>,
    held_bytes: usize,
}

impl Monitor {
    /// Applies up to `due` replay lines from the replay's position, a chunk at a time, for at most
    /// one ingest slice; returns how many.
    fn ingest(&mut self, r: &Recorded, rep: &mut Replay, due: usize) -> usize {
        let start = Instant::now();
        let mut applied = 0;
        while applied < due && start.elapsed() < INGEST_SLICE {
            let n = (due - applied).min(INGEST_CHUNK);
            apply(r, &mut self.pipeline, rep.position()..rep.position() + n);
            rep.advance(n);
            applied += n;
            self.sampled();
        }
        self.dirty |= applied > 0;
        applied
    }

    /// A burn-rate sample at the stream's time, after each slice of ingest: the rate then
    /// follows stream time, whatever the frame cadence or the replay speed.
    fn sampled(&mut self) {
        let total = burn_total(&self.pipeline.model);
        self.view.sample_burn(self.pipeline.model.stream_ms, total);
    }

    /// A live event: applied, or held while the view is paused (counted for the header).
    fn take_live(&mut self, event: live::Event, now: Instant) {
        if !self.feed.paused {
            apply_live(event, self, now);
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

/// The total cost the burn rate follows: the roll-ups of the tops of the tree (sessions and
/// orphans), so sampling after every ingest slice costs the tops, not every thread.
fn burn_total(model: &crate::model::Model) -> i128 {
    model.sessions.iter().chain(&model.unattributed).map(|&t| model.thread(t).subtree.cost.0).sum()
}

/// `~/runs/a.ndjson` for a path under the home directory.
fn home_short(name: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && name.starts_with(&home) => format!("~{}", &name[home.len()..]),
        _ => name.to_owned(),
    }
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
    first_child.map_or(0, |i| rep.position_at(rep.offset_of(i).saturating_sub(LEAD_MS)))
}

/// Lines a live source sent while its view was paused, held until resume; past the bound the
/// view resumes on its own (a pause must not grow memory without end).
const PAUSE_HOLD_BYTES: usize = 64 << 20;
/// Bytes put on the clipboard at most: terminals drop longer OSC 52 sequences.
const COPY_MAX_BYTES: usize = 74_000;

/// The monitor on the current runtime (live sources spawn their tasks on it first).
pub async fn screen(watch: Watch, opts: &MonitorOpts, config: Config) -> Result<ExitCode> {
    let mut guard = TerminalGuard::enter()?;
    let mut keys = EventStream::new();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let now = Instant::now();
    let mut clock = ui::frame::FrameClock::new(opts.fps, TICK, now);
    let mut m = Monitor {
        pipeline: Pipeline::new(config.clone()),
        config,
        view: View::with_theme(theme_of(opts.theme)),
        feed: Feed { stall_ms: opts.stall, ..Feed::default() },
        rate: Rate { since: now, count: 0, value: 0.0 },
        dirty: true,
        finished: false,
        held: std::collections::VecDeque::new(),
        held_bytes: 0,
    };

    let (mut recorded, mut live_rx) = match watch {
        Watch::Replay(r) => (Some(r), None),
        Watch::Live { name, events } => {
            m.feed.source = name;
            m.feed.live = true;
            m.feed.connection = Some("connecting".to_owned());
            (None, Some(events))
        }
    };
    let mut replay = recorded.as_ref().map(|r| {
        m.feed.source = home_short(&r.name);
        tracing::info!(source = %r.name, records = r.len(), "replaying");
        Replay::new(r.times(), opts.max_gap, pace_of(opts.speed), now)
    });
    if let (Some(r), Some(rep)) = (recorded.as_ref(), replay.as_mut()) {
        if r.start_at_action {
            let start = action_start(r, rep, &m.config);
            apply(r, &mut m.pipeline, 0..start);
            rep.jump(start, now);
        }
    }
    let mut next_follow = now + FOLLOW_POLL;

    loop {
        let now = Instant::now();
        // Replay: apply what is due, in a bounded slice.
        if let (Some(r), Some(rep)) = (recorded.as_ref(), replay.as_mut()) {
            let due = rep.due(now);
            if due > 0 {
                let applied = m.ingest(r, rep, due);
                m.rate.add(applied, now);
            }
        }
        if let (Some(r), Some(rep)) = (recorded.as_ref(), replay.as_ref()) {
            // A recording that is not followed ends where it ends.
            if !r.follow && rep.is_done() {
                m.finish();
                m.feed.ended = Some("replay ended".to_owned());
            } else {
                m.feed.ended = None;
            }
        }
        if let (Some(r), Some(rep)) = (recorded.as_mut(), replay.as_mut()) {
            if r.follow && rep.is_done() && now >= next_follow {
                next_follow = now + FOLLOW_POLL;
                let before = r.len();
                let added = r.follow_growth(&time_of);
                if added > 0 {
                    apply(r, &mut m.pipeline, before..before + added);
                    rep.append_applied(added, now);
                    m.rate.add(added, now);
                    m.sampled();
                }
            }
        }
        // A live view resumed: what arrived meanwhile goes in through the same slices.
        if !m.feed.paused && !m.held.is_empty() {
            let start = Instant::now();
            while start.elapsed() < INGEST_SLICE {
                let Some(event) = m.held.pop_front() else { break };
                if let live::Event::Records(r) = &event {
                    m.held_bytes = m.held_bytes.saturating_sub(r.as_bytes().len());
                }
                apply_live(event, &mut m, now);
            }
            if m.held.is_empty() {
                m.feed.arrived = 0;
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
        } else if m.feed.ended.is_none() && !m.feed.paused {
            // Live: the wall clock, unless the stream's own time is far from it (an old
            // recording piped in): then quiet times and stalls are judged in stream time.
            // The threads' newest line, as of the last frame: a recording header's own time
            // (when the pipe was opened) must not make old lines look current.
            let newest = m.view.activity().newest_ms.or(m.pipeline.model.stream_ms);
            m.feed.now_ms = match (newest, unix_now_ms()) {
                (Some(stream), Some(wall)) if !(0..FOLLOW_CLOCK_SKEW_MS).contains(&(wall - stream)) => Some(stream),
                (_, wall) => wall,
            };
        }
        // Elapsed times, the clock and "stalled" move on their own: a frame a second keeps them true.
        if clock.tick_due(now) {
            clock.ticked(now);
            // A quiet second is a rate of zero, not the last rate seen.
            m.rate.add(0, now);
            // A paused view is frozen, its clock with it.
            m.dirty |= !m.feed.paused;
        }
        m.feed.events_per_sec = m.rate.value;

        if clock.due(m.dirty, now) {
            m.draw(&mut guard)?;
            clock.drawn(now);
        }

        // Sleep until the next thing that can happen on its own.
        let mut deadline = None;
        if let Some(rep) = &replay {
            deadline = if rep.due(now) > 0 { Some(now) } else { rep.next_deadline() };
        }
        if recorded.as_ref().is_some_and(|r| r.follow) {
            deadline = Some(deadline.map_or(next_follow, |d: Instant| d.min(next_follow)));
        }
        if !m.feed.paused && !m.held.is_empty() {
            deadline = Some(now);
        }
        let wake = clock.next_wake(m.dirty, now, deadline);

        tokio::select! {
            biased;
            key = keys.next() => match key {
                Some(Ok(event)) => {
                    match handle_terminal_event(&event, &mut m, recorded.as_ref(), replay.as_mut()) {
                        Some(Effect::Quit) => break,
                        Some(Effect::Suspend) => {
                            guard.suspend().wrap_err("suspending")?;
                            keys = EventStream::new();
                            m.dirty = true;
                        }
                        Some(Effect::Copy(text)) => copy_to_clipboard(&mut m, &text),
                        _ => {}
                    }
                }
                Some(Err(e)) => return Err(e).wrap_err("reading the keyboard"),
                None => break,
            },
            _ = terminate.recv() => break,
            _ = hangup.recv() => break,
            event = async { live_rx.as_mut()?.recv().await }, if live_rx.is_some() => {
                if let Some(event) = event {
                    m.take_live(event, now);
                } else {
                    live_rx = None;
                    // The source closed: ended, once what a pause holds has been shown.
                    m.take_live(live::Event::Ended(End::Closed), now);
                }
                // Drain a burst before the next frame, within the slice.
                if let Some(rx) = live_rx.as_mut() {
                    let start = Instant::now();
                    while start.elapsed() < INGEST_SLICE {
                        match rx.try_recv() {
                            Ok(event) => m.take_live(event, now),
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

/// OSC 52: the terminal puts the text on the clipboard (works over ssh and in tmux with
/// `set-clipboard on`). The footer says what was copied.
fn copy_to_clipboard(m: &mut Monitor, text: &str) {
    use base64::Engine as _;
    use std::io::Write as _;
    let mut end = text.len().min(COPY_MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(&text.as_bytes()[..end]);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
    let first = text.lines().next().unwrap_or("");
    let what = if text.lines().nth(1).is_some() { format!("{} lines", text.lines().count()) } else { first.to_owned() };
    m.view.notice = Some(format!("copied {}", ui::text::truncate(&what, 40)));
    m.dirty = true;
}

fn apply_live(event: live::Event, m: &mut Monitor, now: Instant) {
    m.dirty = true;
    if !matches!(event, live::Event::Records(_)) {
        tracing::info!(?event, "live source");
    }
    match event {
        live::Event::Connected { .. } | live::Event::Live => m.feed.connection = None,
        live::Event::Reset(reason) => {
            m.reset();
            m.feed.connection = Some(match reason {
                ResetReason::Lagged { .. } => "lagged: resyncing".to_owned(),
                ResetReason::Reconnected => "reconnected: resyncing".to_owned(),
            });
        }
        live::Event::Records(records) => {
            // Data flows: whatever the connection said before, it is live now.
            m.feed.connection = None;
            let bytes = records.as_bytes();
            let mut n = 0;
            let nothing = &mut |_: &Event<'_, '_>| {};
            let _ = files::read_records(bytes, MAX_LINE, |record| {
                n += 1;
                m.pipeline.feed(record, &Origin::NONE, nothing);
            });
            m.rate.add(n, now);
            m.sampled();
        }
        live::Event::Disconnected { retry_in, reason } => {
            m.feed.connection = Some(format!("disconnected ({reason}); retrying in {}s", retry_in.as_secs().max(1)));
        }
        live::Event::Ended(End::Closed) if m.feed.ended.is_some() => {}
        live::Event::Ended(end) => {
            m.finish();
            m.feed.connection = None;
            m.feed.ended = Some(match end {
                End::Exited(code) => format!("ended (exit {code})"),
                End::Closed => "ended".to_owned(),
                End::Failed(reason) => format!("failed: {reason}"),
            });
        }
    }
}

/// Handles a key, mouse or resize event; returns what the runtime itself must do (quit,
/// suspend, copy), having done the rest.
fn handle_terminal_event(
    event: &TermEvent,
    m: &mut Monitor,
    recorded: Option<&Recorded>,
    replay: Option<&mut Replay>,
) -> Option<Effect> {
    let action = match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => ui::action_for(*key, &m.view),
        TermEvent::Mouse(mouse) => ui::action_for_mouse(*mouse, &m.view),
        TermEvent::Resize(..) => {
            m.dirty = true;
            None
        }
        _ => None,
    };
    if matches!(event, TermEvent::Key(_)) && m.view.notice.take().is_some() {
        m.dirty = true;
    }
    let action = action?;
    m.dirty = true;
    let effect = ui::update(&mut m.view, &m.pipeline.model, action);
    let now = Instant::now();
    match (effect, recorded, replay) {
        (Effect::TogglePause, _, Some(rep)) => rep.toggle_pause(now),
        (Effect::TogglePause, _, None) => {
            // A live view: freeze what is shown; the source keeps being read and held.
            m.feed.paused = !m.feed.paused;
        }
        (Effect::Speed(step), _, Some(rep)) => {
            rep.set_pace(if step > 0 { rep.pace().faster() } else { rep.pace().slower() }, now);
        }
        (Effect::Step, Some(r), Some(rep)) => {
            if !rep.paused() {
                rep.toggle_pause(now);
            }
            if !rep.is_done() {
                m.ingest(r, rep, 1);
            }
        }
        (Effect::Seek(delta), Some(_), Some(rep)) => {
            let target = rep.seek_target(delta);
            tracing::debug!(delta, from = rep.position(), to = target, "seek");
            if target < rep.position() {
                // Back in time: the reducer is deterministic, so replaying from the start rebuilds
                // exactly the model of that moment.
                m.reset();
                m.view.burn.clear();
                rep.jump(0, now);
            }
            // Through the same bounded slices as playback: a long seek is applied over several
            // turns of the loop, keys still answered between them.
            rep.seek_to(target, now);
        }
        (effect @ (Effect::Quit | Effect::Suspend | Effect::Copy(_)), ..) => return Some(effect),
        // Nothing to do, or a replay control on a live source.
        _ => {}
    }
    None
}
