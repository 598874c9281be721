//! The monitor screen. [`runtime::Runtime`] is the state machine that drives it: fed inputs, the
//! time and a clock for its ingest slices, it turns input into [`Action`]s with [`action_for`] /
//! [`action_for_mouse`], applies them with [`update`] (acting on the [`Effect`] it returns),
//! ingests in bounded slices and calls [`render`] when [`frame::FrameClock`] says a frame is due:
//! [`View::sync`] brings the view up to date, [`draw`] draws it (reading the model, the feed and
//! the view, changing none of them) and returns the [`Layout`] the view keeps for the mouse.
//! `commands::monitor` owns the terminal, the keyboard, the signals, the sources, the clocks and
//! the environment, and hands in what the screen needs of them.
//!
//! Draw again after every action (the view changed), whenever `model.generation` moved, and about
//! once a second while something is active: elapsed times, the clock and `stalled` follow time.

pub mod acting;
mod diagnostics;
mod dialog;
mod feed;
mod footer;
pub mod frame;
mod header;
mod help;
pub mod history;
pub mod keymap;
pub mod label;
mod lanes;
mod layout;
mod legend;
pub mod machine;
mod memo;
pub mod outline;
mod paint;
pub mod runtime;
mod scene;
mod screen;
mod sidebar;
pub mod status;
pub mod text;
pub mod theme;
mod timeline;
pub mod tops;
mod tree;
mod update;
mod view;
mod window;

pub use self::feed::{ExportFeed, Feed, NotifyFeed, ReceiveFeed};
pub use self::keymap::{Action, BINDINGS, Binding, action_for, action_for_mouse};
pub use self::layout::{Found, Layout};
pub use self::outline::NodeId;
pub use self::screen::{MIN_HEIGHT, MIN_WIDTH, draw, render};
pub use self::theme::Theme;
pub use self::update::{Effect, SEEK_STEP_MS, update};
pub use self::view::{
    Derived, Filter, Jump, Overlay, Pane, Panes, SPARK_SAMPLES, Search, Selection, Sort, TimeWindow, TreeSort, View,
};
