//! The monitor screen. The runtime (`commands::monitor`) owns the terminal and the event loop; it
//! turns input into [`Action`]s with [`action_for`] / [`action_for_mouse`], applies them with
//! [`update`] (acting on the [`Effect`] it returns), and calls [`draw`] when something changed.
//!
//! ```text
//! header   source · ▶ speed · ev/s · sessions · cost                         clock
//!          position bar / connection                 early · orphans · evicted · malformed
//! ┌ agents ─────────┐┌ lanes ──────────────────────────┐┌ cost ─────────┐
//! │ tree            ││ stacked lanes / transcript      ││ totals, table │
//! └─────────────────┘└─────────────────────────────────┘└───────────────┘
//! footer   keys valid right now
//! ```
//!
//! What the runtime does with it:
//!
//! ```text
//! let mut view = View::with_theme(Theme::named(&theme_arg).unwrap_or_default());
//! on a key:    if let Some(a) = ui::action_for(key, &view) { act(ui::update(&mut view, &model, a)) }
//! on a mouse:  if let Some(a) = ui::action_for_mouse(ev, &view) { act(ui::update(&mut view, &model, a)) }
//!              where act handles Effect::{Quit, TogglePause, Step, Seek(ms), Speed(±1)}
//! on a frame:  terminal.draw(|f| ui::draw(f, &model, &counters, &feed, &mut view))
//! ```
//!
//! Draw again after every action (the view changed), whenever `model.generation` moved, and about
//! once a second while something is active: elapsed times, the clock and `stalled` follow time.

mod diagnostics;
mod footer;
mod header;
mod help;
pub mod keymap;
mod lanes;
pub mod machine;
pub mod outline;
mod sidebar;
pub mod text;
pub mod theme;
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
pub use self::view::{Overlay, Pane, SPARK_SAMPLES, Sort, View};
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
    /// `replay: demo`, `live: stdin`, `attach: tee-4121.sock`.
    pub source: String,
    pub live: bool,
    pub paused: bool,
    /// `1×`, `10×`, `max`.
    pub speed: String,
    /// Lines applied / total, for replays.
    pub position: Option<(u64, u64)>,
    pub events_per_sec: f64,
    /// `connected`, `reconnecting in 2s`, `lagged: resynced`, `ended (exit 0)`.
    pub connection: Option<String>,
    /// The clock: stream time (`model.stream_ms`) in replays, so snapshots are deterministic.
    pub now_ms: Option<i64>,
    /// Quiet time after which an active agent shows as stalled.
    pub stall_ms: u64,
    /// The machine view's sessions (`swarmtop` with no arguments), as last sampled.
    pub machine: Option<Box<crate::source::discover::Snapshot>>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            source: String::new(),
            live: false,
            paused: false,
            speed: "1×".to_owned(),
            position: None,
            events_per_sec: 0.0,
            connection: None,
            now_ms: None,
            stall_ms: 60_000,
            machine: None,
        }
    }
}

/// Draws the whole screen. Reads the model, writes the frame; of the view it only refreshes what
/// derives from the model (rows, follow target, clamped scrolls, burn samples) and notes where it
/// drew things, for the mouse.
pub fn draw(frame: &mut Frame, model: &Model, counters: &Counters, feed: &Feed, view: &mut View) {
    let area = frame.area();
    view.replay = !feed.live;
    view.refresh(model);
    // Once per frame: an O(threads) sum the header, the sidebar and the burn samples share.
    let total = model.totals();
    view.sample_burn(feed.now_ms, total.cost.0);
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
            machine_feed = Feed { source: machine::summary(model, view, snapshot), ..feed.clone() };
            &machine_feed
        }
        None => feed,
    };
    header::draw(frame, header, model, &total, counters, feed, &view.theme);
    if let Some(snapshot) = feed.machine.as_deref().filter(|_| model.sessions.is_empty()) {
        machine::draw_empty(frame, body, snapshot, &view.theme);
        footer::draw(frame, footer, view);
        return;
    }
    let (tree_w, side_w) = if area.width >= SIDEBAR_FROM {
        let side = if area.width >= 180 { 40 } else { 32 };
        (((area.width * 3) / 10).clamp(36, 64), side)
    } else {
        (((area.width * 4) / 10).clamp(28, 44), 0)
    };
    let tree_rect = Rect { width: tree_w, ..body };
    let right_rect = Rect { x: body.x + tree_w, width: body.width - tree_w, ..body };
    tree::draw(frame, tree_rect, model, feed, view);
    view.layout.cost = Rect::default();
    view.layout.lanes = Rect::default();
    if side_w > 0 {
        let lanes_rect = Rect { width: right_rect.width - side_w, ..right_rect };
        let side_rect = Rect { x: lanes_rect.right(), width: side_w, ..right_rect };
        lanes::draw(frame, lanes_rect, model, feed, view);
        sidebar::draw(frame, side_rect, model, &total, feed, view);
    } else if view.focus == Pane::Cost {
        sidebar::draw(frame, right_rect, model, &total, feed, view);
    } else {
        lanes::draw(frame, right_rect, model, feed, view);
    }
    footer::draw(frame, footer, view);
    match view.overlay {
        Some(Overlay::Help) => help::draw(frame, body, view),
        Some(Overlay::Diagnostics) => diagnostics::draw(frame, body, model, counters, view),
        None => view.layout.overlay = Rect::default(),
    }
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
