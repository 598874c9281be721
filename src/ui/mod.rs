//! The monitor screen. [`runtime::Runtime`] is the state machine that drives it: fed inputs and
//! the time, it turns input into [`Action`]s with [`action_for`] / [`action_for_mouse`], applies
//! them with [`update`] (acting on the [`Effect`] it returns), ingests in bounded slices and calls
//! [`draw`] when [`frame::FrameClock`] says a frame is due. `commands::monitor` only owns the
//! terminal, the keyboard, the signals and the sources.
//!
//! ```text
//! header   state · agents · cost · burn · need you · ev/s                      clock
//!          source, position bar                                 ⚠ problems · d
//! ┌ agents ─────────┐┌ lanes / timeline ───────────────┐┌ cost ─────────┐
//! │ tree            ││ stacked lanes / transcript      ││ totals, table │
//! └─────────────────┘└─────────────────────────────────┘└───────────────┘
//! footer   keys valid right now
//! ```
//!
//! Draw again after every action (the view changed), whenever `model.generation` moved, and about
//! once a second while something is active: elapsed times, the clock and `stalled` follow time.

mod diagnostics;
mod footer;
pub mod frame;
mod header;
mod help;
pub mod keymap;
pub mod label;
mod lanes;
pub mod machine;
pub mod outline;
pub mod runtime;
mod sidebar;
pub mod status;
pub mod text;
pub mod theme;
mod timeline;
pub mod tops;
mod tree;
mod update;
mod view;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub use self::keymap::{Action, BINDINGS, Binding, action_for, action_for_mouse};
pub use self::outline::NodeId;
pub use self::theme::Theme;
pub use self::update::{Effect, SEEK_STEP_MS, update};
pub use self::view::{Jump, Overlay, Pane, SPARK_SAMPLES, Sort, TimeWindow, TreeSort, View};
use crate::model::Model;
use crate::router::Counters;

/// Smallest screen the layout is drawn for; below it a message asks for more room.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;
/// From this width the cost sidebar has its own column; below, it takes the lanes' place when
/// focused (Tab).
const SIDEBAR_FROM: u16 = 110;

/// What the runtime knows about its feed, for the header and the position bar.
#[derive(Debug, Clone)]
pub struct Feed {
    /// What is watched: `demo`, `~/runs/a.ndjson`, `stdin`, `tee-4121.sock`.
    pub source: String,
    /// The feed is a live stream (stdin, attach, listen, a followed file that caught up).
    pub live: bool,
    pub paused: bool,
    /// Lines that arrived from a live source while its view was paused (applied on resume).
    pub arrived: u64,
    /// `1×`, `10×`, `max`.
    pub speed: String,
    /// Lines applied / total, for replays.
    pub position: Option<(u64, u64)>,
    pub events_per_sec: f64,
    /// What a live connection is doing when it is not simply live: `connecting`,
    /// `reconnecting in 2s`, `lagged: resyncing`.
    pub connection: Option<String>,
    /// The feed is over and why: `replay ended`, `ended (exit 0)`, `failed: …`.
    pub ended: Option<String>,
    /// The clock: stream time (`model.stream_ms`) in replays, so snapshots are deterministic.
    pub now_ms: Option<i64>,
    /// Quiet time after which an active agent shows as stalled.
    pub stall_ms: u64,
    /// The machine view's sessions (`swarmtop` with no arguments), as last sampled.
    pub machine: Option<Box<crate::source::discover::Snapshot>>,
    /// The OTLP export's counters, when the session exports (`--otlp`).
    pub export: Option<ExportFeed>,
    /// The OTLP receiver's counters, when `listen --otlp` receives.
    pub receive: Option<ReceiveFeed>,
}

/// What the OTLP receiver has taken in and refused, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveFeed {
    pub requests: u64,
    pub spans: u64,
    pub logs: u64,
    pub refused: u64,
    /// Spans forgotten by the join bound before their parent arrived.
    pub forgotten: u64,
    /// What each of the receiver's bounds refused or dropped, by name.
    pub limits: Vec<(&'static str, u64)>,
}

/// What the OTLP exporter has done so far, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFeed {
    pub target: String,
    pub queued: u64,
    pub sent: u64,
    pub retried: u64,
    pub dropped: u64,
    pub rejected: u64,
    /// The last attempt failed and is being retried (the collector is down).
    pub failing: bool,
    /// Why the last attempt that failed did (`connection refused`).
    pub cause: Option<String>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            source: String::new(),
            live: false,
            paused: false,
            arrived: 0,
            speed: "1×".to_owned(),
            position: None,
            events_per_sec: 0.0,
            connection: None,
            ended: None,
            now_ms: None,
            stall_ms: 60_000,
            machine: None,
            export: None,
            receive: None,
        }
    }
}

/// Draws the whole screen. Reads the model, writes the frame; of the view it only refreshes what
/// derives from the model (rows, follow target, clamped scrolls, burn samples) and notes where it
/// drew things, for the mouse.
pub fn draw(frame: &mut Frame, model: &Model, counters: &Counters, feed: &Feed, view: &mut View) {
    let area = frame.area();
    view.replay = !feed.live;
    // A followed file is live too, but quitting loses nothing: it is all in the file. So with the
    // machine view: its sessions are on disk, and a tee serves its history to the next attach.
    view.live_source = feed.live && feed.position.is_none() && feed.ended.is_none() && feed.machine.is_none();
    view.clock = status::Clock { now_ms: feed.now_ms, stall_ms: feed.stall_ms, ended: feed.ended.is_some() };
    view.machine = feed.machine.is_some();
    if let Some(snapshot) = feed.machine.as_deref() {
        // Regroups only when the snapshot or the tree's shape changed.
        view.tops.refresh(model, snapshot, feed.now_ms);
    }
    view.refresh(model);
    // Once per frame: an O(threads) sum the header, the sidebar and the burn samples share.
    let mut total = model.totals();
    if view.machine {
        // Totals are of what is shown: an aged-out session's spend is counted in `d` instead.
        total = view.tops.shown(model, &total);
    }
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area, view);
        return;
    }
    let header = Rect { height: 2, ..area };
    let footer = Rect { y: area.bottom() - 1, height: 1, ..area };
    let body = Rect { y: area.y + 2, height: area.height - 3, ..area };
    let machine_feed;
    let feed = match &feed.machine {
        Some(snapshot) => {
            machine_feed = Feed { source: machine::summary(view), live: machine::any_live(snapshot), ..feed.clone() };
            &machine_feed
        }
        None => feed,
    };
    let figures =
        header::Figures { model, totals: &total, counters, activity: view.activity(), burn: view.burn_per_min() };
    header::draw(frame, header, &figures, feed, &view.theme);
    if let Some(snapshot) = feed.machine.as_deref().filter(|_| model.sessions.is_empty()) {
        machine::draw_empty(frame, body, snapshot, &view.theme);
        footer::draw(frame, footer, view);
        return;
    }
    view.layout.tree = Rect::default();
    view.layout.cost = Rect::default();
    view.layout.lanes = Rect::default();
    view.layout.timeline = Rect::default();
    view.layout.timeline_rows.clear();
    if view.zoom {
        // One pane on the whole body: the focused one.
        match view.focus {
            Pane::Tree => tree::draw(frame, body, model, feed, view),
            Pane::Cost => sidebar::draw(frame, body, model, &total, view),
            Pane::Lanes => right_pane(frame, body, model, feed, view),
        }
    } else {
        let (tree_w, side_w) = if area.width >= SIDEBAR_FROM {
            let side = if area.width >= 180 { 40 } else { 32 };
            // The machine view's session rows carry pid, CPU % and memory too.
            let tree = if view.machine {
                ((area.width * 9) / 20).clamp(40, 90)
            } else {
                ((area.width * 3) / 10).clamp(36, 64)
            };
            (tree, side)
        } else {
            (((area.width * 4) / 10).clamp(28, 44), 0)
        };
        let tree_rect = Rect { width: tree_w, ..body };
        let right_rect = Rect { x: body.x + tree_w, width: body.width - tree_w, ..body };
        tree::draw(frame, tree_rect, model, feed, view);
        if side_w > 0 {
            let lanes_rect = Rect { width: right_rect.width - side_w, ..right_rect };
            let side_rect = Rect { x: lanes_rect.right(), width: side_w, ..right_rect };
            right_pane(frame, lanes_rect, model, feed, view);
            sidebar::draw(frame, side_rect, model, &total, view);
        } else if view.focus == Pane::Cost {
            sidebar::draw(frame, right_rect, model, &total, view);
        } else {
            right_pane(frame, right_rect, model, feed, view);
        }
    }
    footer::draw(frame, footer, view);
    match view.overlay {
        Some(Overlay::Help) => help::draw(frame, body, view),
        Some(Overlay::Diagnostics) => diagnostics::draw(frame, body, model, counters, feed, view),
        Some(Overlay::ConfirmQuit) => confirm_quit(frame, body, feed, view),
        None => view.layout.overlay = Rect::default(),
    }
}

/// The lanes, or the timeline in their place.
fn right_pane(frame: &mut Frame, area: Rect, model: &Model, feed: &Feed, view: &mut View) {
    if view.timeline {
        timeline::draw(frame, area, model, feed, view);
    } else {
        lanes::draw(frame, area, model, feed, view);
    }
}

/// "Quit?" while a live stream would be lost: what is lost, and the two answers.
fn confirm_quit(frame: &mut Frame, area: Rect, feed: &Feed, view: &mut View) {
    let theme = &view.theme;
    let lines = vec![
        Line::from(Span::styled(format!("{} is live.", feed.source), theme.bold)),
        Line::from("Quitting stops watching it; what it sends"),
        Line::from("from now on will not be shown again."),
        Line::default(),
        Line::from(vec![
            Span::styled("y", theme.key),
            Span::raw(" quit   "),
            Span::styled("n", theme.key),
            Span::raw("/"),
            Span::styled("Esc", theme.key),
            Span::raw(" stay"),
        ]),
    ];
    let w = 48.min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let rect = help::centred(area, w, h);
    let block = ratatui::widgets::Block::bordered()
        .border_style(theme.warn)
        .title(Span::styled(" quit? ", theme.title))
        .padding(ratatui::widgets::Padding::horizontal(1));
    frame.render_widget(ratatui::widgets::Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
    view.layout.overlay = rect;
}

/// Writes lines top-down into `area`, each cut at its width. Panes use this rather than a
/// `Paragraph`: their lines are already wrapped and fitted, and skipping the paragraph's own
/// reflow keeps a frame's cost at the cells written.
fn put_lines(frame: &mut Frame, area: Rect, lines: &[Line<'_>]) {
    let buf = frame.buffer_mut();
    for (line, y) in lines.iter().zip(area.top()..area.bottom()) {
        buf.set_line(area.x, y, line, area.width);
    }
}

fn too_small(frame: &mut Frame, area: Rect, view: &View) {
    let msg = [
        Line::from(Span::styled("swarmtop", view.theme.brand)),
        Line::from(format!("needs {MIN_WIDTH}×{MIN_HEIGHT}, has {}×{}", area.width, area.height)),
        Line::from(Span::styled("enlarge the terminal · q quits", view.theme.dim)),
    ];
    let h = (msg.len() as u16).min(area.height);
    let rect = Rect { y: area.y + (area.height - h) / 2, height: h, ..area };
    frame.render_widget(Paragraph::new(msg.to_vec()).centered(), rect);
}
