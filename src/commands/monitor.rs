//! The monitor's shell: the terminal, the keyboard, the signals and the sources, around the
//! runtime state machine of `ui::runtime`, which is fed what arrives and the time, and says when
//! to draw and when to wake.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::EventStream;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::acting::Acts;
use super::cli::{GlobalOpts, MonitorOpts, RemoteOpts, Speed, Theme, WindowOpts};
use super::export::{feed_of, finish_live, live_request, start_live};
use super::past;
use super::terminal::{QuitSignals, TerminalGuard};
use crate::act::notify::run::Notifier;
use crate::export::Live;
use crate::pipeline::{Config, Pipeline};
use crate::source::agents;
use crate::source::census;
use crate::source::files;
use crate::source::follow;
use crate::source::inbound;
use crate::source::live;
use crate::source::otlp;
use crate::source::recorded::Recorded;
use crate::source::recording;
use crate::source::remote;
use crate::source::replay::Pace;
use crate::ui::frame::INGEST_SLICE;
use crate::ui::history::Loaded;
use crate::ui::runtime::{Input, Runtime, Settings, time_of};
use crate::ui::{self, Effect, View};
use crate::wire::{Clean, sanitize_line};

/// The built-in demo: a real multi-agent Codex session (see `demo/README.md`).
pub fn demo() -> Watch {
    let mut r = Recorded::from_static("demo", include_bytes!("../../assets/demo.ndjson"), &time_of);
    r.start_at_action = true;
    Watch::Replay(r)
}

/// `swarmtop --server URL`: the machine view of that `swarmtop serve`, its sessions in the window.
pub fn watch_server(remote: &RemoteOpts, window: &WindowOpts) -> Result<Watch> {
    let url = remote.server.as_deref().unwrap_or_default();
    let token = match &remote.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .wrap_err_with(|| format!("reading the token in {}", crate::wire::Clean::path(path)))?,
        ),
        None => std::env::var("SWARMTOP_SERVER_TOKEN").ok(),
    };
    let server = remote::Server::parse(url, token).map_err(|e| color_eyre::eyre::eyre!("--server: {e}"))?;
    let w = remote::Window { since_ms: window.since, all: window.all };
    Ok(Watch::Remote(server, w, Shown::of(window)))
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
        let opts = census::Options::machine(census::window(window.since, window.all));
        return Ok(Watch::Machine(opts, Shown::of(window)));
    }
    if live_stdin {
        return stdin_live(opts.record.as_deref());
    }
    if let [only] = inputs {
        let (tx, events) = mpsc::channel(live::CHANNEL_EVENTS);
        for open in agents::AGENTS.iter().filter_map(|a| a.live) {
            if let Some(input) = open(only, opts.follow, &tx) {
                return reader_live(input?, opts.record.as_deref(), (tx, events));
            }
        }
    }
    let inputs_given = inputs;
    // A followed file or folder may be empty yet: what is written to it later is shown.
    if !opts.follow {
        super::traffic::folders_hold_recordings(inputs_given)?;
    }
    let inputs = files::expand(inputs).wrap_err("listing inputs")?;
    // Sessions the run store indexed: what was done to them, which their files may not hold;
    // followed or not (issue 23: a followed replay showed none).
    let acts = past::acts_on_files(&opts.store, &inputs);
    let since = opts.follow.then(|| past::acts_since(&opts.store, &inputs, &acts));
    let mut recorded = Recorded::from_inputs_with(inputs_given, &inputs, opts.follow, &time_of, acts)
        .wrap_err("reading the inputs")?;
    recorded.acts_since = since;
    if !opts.follow {
        super::traffic::required_in_replay(inputs_given, &recorded)?;
    }
    Ok(Watch::Replay(recorded))
}

/// A piped stdin as a live source, recorded with `--record`.
fn stdin_live(record: Option<&std::path::Path>) -> Result<Watch> {
    let started = recording::unix_ms();
    let header = recording::header_line(recording::Source::Stdin, None, started);
    let recorder = recording::open_requested(record, recording::Source::Stdin, started, &header)?;
    let (tx, events) = mpsc::channel(live::CHANNEL_EVENTS);
    inbound::spawn_reader(std::io::stdin(), header, recorder, tx).wrap_err("reading stdin")?;
    Ok(Watch::Live { name: sanitize_line("stdin"), events })
}

/// An input an agent reads live (a server's event stream, a store followed), as a live source
/// (its records are what a recording with `--record` holds).
fn reader_live(
    input: agents::LiveInput,
    record: Option<&std::path::Path>,
    (tx, events): (mpsc::Sender<live::Event>, mpsc::Receiver<live::Event>),
) -> Result<Watch> {
    let started = recording::unix_ms();
    let header = recording::header_line(input.source, None, started);
    let recorder = recording::open_requested(record, input.source, started, &header)?;
    let name = input.name;
    inbound::spawn_reader(input.reader, header, recorder, tx).wrap_err_with(|| format!("reading {name}"))?;
    Ok(Watch::Live { name, events })
}

/// What the monitor watches.
pub enum Watch {
    Replay(Recorded),
    Live {
        name: Clean,
        events: mpsc::Receiver<live::Event>,
    },
    /// Every agent session on the machine (its source starts on a thread of its own), and which
    /// are shown.
    Machine(census::Options, Shown),
    /// Every agent session on another machine, from its `swarmtop serve`, for the same screen.
    Remote(remote::Server, remote::Window, Shown),
}

/// Which sessions the machine view shows: those active within `since_ms` (`None`: all), each
/// ended one until `keep_ms` after its last activity (`None`: for ever).
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub keep_ms: Option<u64>,
    pub since_ms: Option<u64>,
}

impl Shown {
    fn of(window: &WindowOpts) -> Self {
        Self { keep_ms: window.keep_ms(), since_ms: (!window.all).then_some(window.since) }
    }
}

pub fn run(watch: Watch, opts: &MonitorOpts, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let past = past_access(opts, &config, global);
    run_with(watch, opts, config, Some(past))
}

/// A server's machine view: as [`run`], but with no history view (H) of a run store here, which is
/// not the server's (its history is `/api/sessions`, or `history --store` on its database).
pub fn run_remote(watch: Watch, opts: &MonitorOpts, config: Config) -> Result<ExitCode> {
    run_with(watch, opts, config, None)
}

fn run_with(watch: Watch, opts: &MonitorOpts, config: Config, past: Option<past::Access>) -> Result<ExitCode> {
    let export = start_live(live_request(&opts.otlp, false))?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().wrap_err("starting the runtime")?;
    let outlets = Outlets { export, receive: None, past };
    runtime.block_on(screen(watch, opts, config, outlets))
}

/// How the history view (H) reaches the run store.
pub fn past_access(opts: &MonitorOpts, config: &Config, global: &GlobalOpts) -> past::Access {
    past::Access { store: opts.store.clone(), config: config.clone(), global: global.clone() }
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

/// Bytes put on the clipboard at most: terminals drop longer OSC 52 sequences.
const COPY_MAX_BYTES: usize = 74_000;

fn unix_now_ms() -> Option<i64> {
    SystemTime::now().duration_since(UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok())
}

/// `~/runs/a.ndjson` for a path under the home directory.
fn home_short(name: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && name.starts_with(&home) => format!("~{}", &name[home.len()..]),
        _ => name.to_owned(),
    }
}

/// Where a live session's telemetry goes out (`--otlp URL`) and comes in from (`listen --otlp`),
/// and where the history view's run store is.
#[derive(Default)]
pub struct Outlets {
    pub export: Option<Live>,
    pub receive: Option<Arc<otlp::Counters>>,
    pub past: Option<past::Access>,
}

/// The screen keys go to and frames show: the last one opened from a history, else the first.
fn top<'a>(first: &'a mut Runtime, opened: &'a mut [Runtime]) -> &'a mut Runtime {
    opened.last_mut().unwrap_or(first)
}

/// The screen at `depth` (0: the first), if it is still open.
fn at<'a>(first: &'a mut Runtime, opened: &'a mut [Runtime], depth: usize) -> Option<&'a mut Runtime> {
    if depth == 0 { Some(first) } else { opened.get_mut(depth - 1) }
}

/// Screens opened from the history view (H), over the first: each a replay of a past session's
/// files. Esc at the top of one goes back to the screen it was opened from.
struct Opened {
    screens: Vec<Runtime>,
    settings: Settings,
    config: Config,
    access: Option<past::Access>,
    tx: mpsc::Sender<past::Reply>,
}

impl Opened {
    /// None opened yet; the store's size asked for at once (for `d`). Replies arrive on the receiver.
    fn new(access: Option<past::Access>, settings: &Settings, config: &Config) -> (Self, mpsc::Receiver<past::Reply>) {
        let (tx, rx) = mpsc::channel(4);
        if let Some(access) = &access {
            past::facts(access, 0, tx.clone());
        }
        (Self { screens: Vec::new(), settings: settings.clone(), config: config.clone(), access, tx }, rx)
    }

    fn advance(&mut self, now: Instant) {
        for screen in &mut self.screens {
            screen.advance(now, unix_now_ms());
        }
    }

    /// Does what an effect of the screen at the top asks of the store; whether it was one of those.
    fn effect(&mut self, first: &mut Runtime, effect: &Effect) -> bool {
        let depth = self.screens.len();
        match (effect, &self.access) {
            (Effect::LoadHistory, Some(access)) => past::list(access, depth, self.tx.clone()),
            (Effect::OpenPast(id), Some(access)) => past::open(access, id.clone(), depth, self.tx.clone()),
            (Effect::LoadHistory | Effect::OpenPast(_), None) => {
                let loaded = Loaded::Listing(Err("no run store for this view".to_owned()), None);
                top(first, &mut self.screens).input(Input::Past(loaded), Instant::now());
            }
            (Effect::Return, _) => {
                self.screens.pop();
                top(first, &mut self.screens).notice("back to the history".to_owned());
            }
            _ => return false,
        }
        true
    }

    /// What a read of the store brought, to the screen that asked (if it is still open).
    fn reply(&mut self, first: &mut Runtime, reply: past::Reply) {
        let now = Instant::now();
        let on_top = reply.depth == self.screens.len();
        let Some(screen) = at(first, &mut self.screens, reply.depth) else { return };
        match reply.what {
            past::Brought::Loaded(loaded) => {
                screen.input(Input::Past(loaded), now);
            }
            past::Brought::Replay(mut recorded) => {
                screen.opened_elsewhere();
                // Only the screen on top opens another; one below was left meanwhile.
                if !on_top {
                    return;
                }
                recorded.name = sanitize_line(&home_short(recorded.name.as_str()));
                let view = View::with_theme(screen.view.theme.clone());
                let mut opened = Runtime::replay(*recorded, view, &self.settings, self.config.clone(), now);
                opened.nest();
                opened.notice("Esc: back to the history".to_owned());
                self.screens.push(opened);
            }
        }
    }
}

fn receive_feed(c: &otlp::Counters) -> ui::ReceiveFeed {
    use std::sync::atomic::Ordering::Relaxed;
    ui::ReceiveFeed {
        requests: c.requests.load(Relaxed),
        spans: c.spans.load(Relaxed),
        logs: c.logs.load(Relaxed),
        refused: c.refused.load(Relaxed),
        forgotten: c.forgotten.load(Relaxed),
        limits: c.limits(),
    }
}

/// The screen's runtime for what is watched, and the channel its live events arrive on.
fn runtime_of(
    watch: Watch,
    mut view: View,
    settings: &Settings,
    config: Config,
    now: Instant,
) -> Result<(Runtime, Option<mpsc::Receiver<live::Event>>)> {
    Ok(match watch {
        Watch::Replay(mut r) => {
            r.name = sanitize_line(&home_short(r.name.as_str()));
            // Followed files report their growth through the same channel as live sources.
            let follow = if r.follow {
                let (files, dirs) = r.watched();
                let (tx, rx) = mpsc::channel(live::CHANNEL_EVENTS);
                if let Some(since) = r.acts_since.take() {
                    past::follow_acts(since, tx.clone()).wrap_err("following the run store's acts")?;
                }
                follow::spawn(follow::Follower::new(files, dirs), tx).wrap_err("following the inputs")?;
                Some(rx)
            } else {
                None
            };
            (Runtime::replay(r, view, settings, config, now), follow)
        }
        Watch::Live { name, events } => (Runtime::live(name, view, settings, config, now), Some(events)),
        Watch::Machine(opts, shown) => {
            let home = std::env::var("HOME").ok();
            view.derived.tops.since_ms = shown.since_ms;
            (Runtime::machine(view, settings, config, now, shown.keep_ms, home), Some(census::machine::spawn(opts)))
        }
        Watch::Remote(server, window, shown) => {
            let events = remote::spawn(server.clone(), window).wrap_err("starting the server's feed")?;
            view.derived.tops.since_ms = shown.since_ms;
            // The home that shortens its paths is the server's, from its first snapshot.
            let mut rt = Runtime::machine(view, settings, config, now, shown.keep_ms, None);
            rt.feed.source = sanitize_line(server.authority());
            rt.feed.connection = Some(sanitize_line("connecting"));
            (rt, Some(events))
        }
    })
}

/// What carries out the screen's interrupt keys: on a server's machine view, nothing here (each
/// ask is answered that its agents run there).
fn acts_for(watch: &Watch, config: &Config) -> (Acts, mpsc::Receiver<super::acting::Answered>) {
    let (acts, rx) = Acts::new(config.clone());
    match watch {
        Watch::Remote(server, ..) => {
            (acts.elsewhere(format!("its agents run on {}: act there (swarmtop interrupt)", server.authority())), rx)
        }
        _ => (acts, rx),
    }
}

/// The monitor on the current runtime (live sources spawn their tasks on it first).
pub async fn screen(watch: Watch, opts: &MonitorOpts, config: Config, outlets: Outlets) -> Result<ExitCode> {
    let Outlets { mut export, receive, past } = outlets;
    // The model generation the export last looked at.
    let mut exported = u64::MAX;
    // Handlers first: a signal that lands once the alternate screen is on must find them in place,
    // or its default action ends the process with the terminal left raw.
    let mut signals = QuitSignals::new()?;
    let mut guard = TerminalGuard::enter()?;
    let mut keys = EventStream::new();
    let now = Instant::now();
    let settings = Settings {
        fps: opts.fps,
        stall_ms: opts.stall,
        max_gap_ms: opts.max_gap,
        pace: pace_of(opts.speed),
        clock: Instant::now,
    };
    let view = View::with_theme(theme_of(opts.theme));
    let (mut opened, mut past_rx) = Opened::new(past, &settings, &config);
    let (acts, mut act_rx) = acts_for(&watch, &config);
    let (mut rt, mut live_rx) = runtime_of(watch, view, &settings, config, now)?;

    let mut notifier = Notifier::new(opts.notify, opts.notify_cmd.clone(), rt.feed.source.as_str())
        .wrap_err("starting --notify-cmd")?;
    loop {
        let now = Instant::now();
        rt.advance(now, unix_now_ms());
        if let Some(n) = notifier.as_mut() {
            n.look(rt.model(), &rt.feed, now, &mut std::io::stdout());
            rt.feed.notify = Some(n.feed());
        }
        opened.advance(now);
        if let Some(x) = export.as_mut() {
            // Only queues the spans that ended: the exporter's thread sends them.
            if rt.model().generation != exported {
                x.update(rt.model(), rt.format());
                exported = rt.model().generation;
            }
            rt.feed.export = Some(feed_of(x));
        }
        if let Some(r) = &receive {
            rt.feed.receive = Some(receive_feed(r));
        }
        let shown = top(&mut rt, &mut opened.screens);
        if shown.frame_due(now) {
            guard.terminal.draw(|frame| shown.draw(frame, now)).wrap_err("drawing")?;
        }
        let wake = shown.wake(now).min(rt.wake(now));
        tokio::select! {
            biased;
            key = keys.next() => match key {
                Some(Ok(event)) => match top(&mut rt, &mut opened.screens).input(Input::Terminal(event), Instant::now()) {
                    Some(Effect::Quit) => break,
                    Some(Effect::Suspend) => {
                        guard.suspend().wrap_err("suspending")?;
                        keys = EventStream::new();
                        top(&mut rt, &mut opened.screens).notice("resumed".to_owned());
                    }
                    Some(Effect::Copy(text)) => top(&mut rt, &mut opened.screens).notice(copy_to_clipboard(&text)),
                    Some(Effect::PlanAct(ask)) => acts.start(opened.screens.len(), &ask, false),
                    Some(Effect::Act(ask)) => acts.start(opened.screens.len(), &ask, true),
                    Some(effect) => {
                        opened.effect(&mut rt, &effect);
                    }
                    None => {}
                },
                Some(Err(e)) => return Err(e).wrap_err("reading the keyboard"),
                None => break,
            },
            // A request to quit, like `q`: the guard restores the terminal on the way out.
            _ = signals.recv() => break,
            Some(reply) = past_rx.recv() => opened.reply(&mut rt, reply),
            Some((depth, reply)) = act_rx.recv() => {
                if let Some(screen) = at(&mut rt, &mut opened.screens, depth) {
                    screen.input(Input::Act(reply), Instant::now());
                }
            }
            event = async { live_rx.as_mut()?.recv().await }, if live_rx.is_some() => {
                let now = Instant::now();
                if let Some(event) = event {
                    rt.input(Input::Live(event), now);
                } else {
                    live_rx = None;
                    rt.input(Input::LiveClosed, now);
                }
                // Drain a burst before the next frame, within the slice.
                if let Some(rx) = live_rx.as_mut() {
                    let start = Instant::now();
                    while start.elapsed() < INGEST_SLICE {
                        match rx.try_recv() {
                            Ok(event) => rt.input(Input::Live(event), now),
                            Err(_) => break,
                        };
                    }
                }
            }
            () = tokio::time::sleep_until(wake.into()) => {}
        }
    }
    drop(guard);
    tracing::info!(lines = rt.lines(), "monitor closed");
    if let Some(x) = export {
        finish_live(x, rt.model(), rt.format());
    }
    Ok(ExitCode::SUCCESS)
}

/// OSC 52: the terminal puts the text on the clipboard (works over ssh and in tmux with
/// `set-clipboard on`). Returns what the footer says about it.
fn copy_to_clipboard(text: &str) -> String {
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
    let lines = text.lines().count();
    let what = if lines > 1 { format!("{lines} lines") } else { text.to_owned() };
    format!("copied {}", ui::text::truncate(&what, 40))
}

/// `swarmtop --follow FILES/DIRS` without a screen: the monitor's own reading of files that grow
/// (and of files that appear in followed folders), applied to a pipeline as the monitor applies
/// them after its replay has caught up. For tests and tools that need to see what a `--follow`
/// monitor shows at a given moment.
pub struct Follow {
    recorded: Recorded,
    follower: follow::Follower,
    pub pipeline: Pipeline,
}

impl Follow {
    /// Reads what is there already, as the monitor does on start.
    pub fn start(paths: &[PathBuf], config: Config) -> Result<Self> {
        let inputs = files::expand(paths).wrap_err("listing inputs")?;
        let mut recorded =
            Recorded::from_inputs(paths, &inputs, true, &ui::runtime::time_of).wrap_err("reading the inputs")?;
        // Nothing here is paced: the times would only grow with what is followed.
        recorded.forget_times();
        let mut pipeline = Pipeline::new(config);
        ui::runtime::apply(&recorded, &mut pipeline, 0..recorded.len());
        let (files, dirs) = recorded.watched();
        Ok(Self { recorded, follower: follow::Follower::new(files, dirs), pipeline })
    }

    /// One look of the monitor's follower: what grew or appeared since, applied. Returns the
    /// number of new records.
    pub fn poll(&mut self) -> usize {
        let before = self.recorded.len();
        let mut added = 0;
        for change in self.follower.changes() {
            added += self.recorded.followed(change, &ui::runtime::time_of);
        }
        ui::runtime::apply(&self.recorded, &mut self.pipeline, before..before + added);
        added
    }
}
