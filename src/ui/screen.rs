//! The whole screen: [`draw`] reads the model, the feed and the view and writes the frame,
//! returning where it put things; it changes nothing else. [`render`] is one frame as the runtime
//! draws it: the view synced to the model and the feed, drawn, and the layout kept.
//!
//! ```text
//! header   state · agents · cost · burn · need you · ev/s                      clock
//!          source, position bar                                 ⚠ problems · d
//! ┌ agents ─────────┐┌ lanes / timeline ───────────────┐┌ cost ─────────┐
//! │ tree            ││ stacked lanes / transcript      ││ totals, table │
//! └─────────────────┘└─────────────────────────────────┘└───────────────┘
//! footer   keys valid right now
//! ```

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::feed::Feed;
use super::layout::Layout;
use super::paint::centred;
use super::scene::Scene;
use super::view::{Overlay, Pane, View};
use super::{diagnostics, dialog, footer, header, help, history, lanes, machine, sidebar, timeline, tree};
use crate::model::Model;
use crate::router::Counters;

/// Smallest screen the layout is drawn for; below it a message asks for more room.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;
/// From this width the cost sidebar has its own column; below, it takes the lanes' place when
/// focused (Tab).
const SIDEBAR_FROM: u16 = 110;

/// One frame as the runtime draws it: the view brought up to date with the model and the feed,
/// the screen drawn, and what it drew kept for the keys and the mouse.
pub fn render(frame: &mut Frame, model: &Model, counters: &Counters, feed: &Feed, view: &mut View) {
    view.sync(model, feed);
    let layout = draw(frame, model, counters, feed, view);
    view.place(layout);
}

/// Draws the whole screen from a view synced to the model ([`View::sync`]); returns where it put
/// things.
pub fn draw(frame: &mut Frame, model: &Model, counters: &Counters, feed: &Feed, view: &View) -> Layout {
    let area = frame.area();
    let mut layout = view.layout.next();
    let (machine, tops) = (view.derived.machine, &view.derived.tops);
    let key = (model.generation, model.threads.len(), tops.generation, machine);
    let totals = *view.derived.totals.get(key, || {
        let all = model.totals();
        // Totals are of what is shown: an aged-out session's spend is counted in `d` instead.
        if machine { tops.shown(model, &all) } else { all }
    });
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area, view);
        return layout;
    }
    let machine_feed;
    let feed = match &feed.machine {
        Some(snapshot) => {
            machine_feed = Feed {
                source: machine::summary(view, &feed.source),
                live: machine::any_live(snapshot),
                ..feed.clone()
            };
            &machine_feed
        }
        None => feed,
    };
    let scene = Scene { model, counters, feed, view, totals };
    let header_area = Rect { height: 2, ..area };
    let footer_area = Rect { y: area.bottom() - 1, height: 1, ..area };
    let body = Rect { y: area.y + 2, height: area.height - 3, ..area };
    header::draw(frame, header_area, &scene);
    let empty_machine = feed.machine.as_deref().filter(|_| model.sessions.is_empty());
    if view.history.open {
        // The history in the body's place: the monitor goes on underneath, its header above. An
        // empty machine view gives way to it too (issue 20: `H` there showed no list).
        if view.history.opened.is_some() {
            history::stored::draw(frame, body, view, &mut layout);
        } else {
            history::list::draw(frame, body, view, &mut layout);
        }
    } else if let Some(snapshot) = empty_machine {
        machine::draw_empty(frame, body, snapshot, view);
    } else {
        panes(frame, body, &scene, &mut layout);
    }
    footer::draw(frame, footer_area, view);
    match view.panes.overlay {
        Some(Overlay::Help) => help::draw(frame, body, view, &mut layout),
        Some(Overlay::Diagnostics) => diagnostics::draw(frame, body, &scene, &mut layout),
        Some(Overlay::ConfirmQuit) => confirm_quit(frame, body, &scene, &mut layout),
        Some(Overlay::Act) => dialog::draw(frame, body, view, &mut layout),
        None => {}
    }
    layout
}

/// The body: the tree, the lanes (or the timeline) and the cost sidebar side by side as the
/// width allows, or the focused one alone when zoomed.
fn panes(frame: &mut Frame, body: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let view = s.view;
    if view.panes.zoom {
        match view.panes.focus {
            Pane::Tree => tree::draw(frame, body, s, layout),
            Pane::Cost => sidebar::draw(frame, body, s, layout),
            Pane::Lanes => right_pane(frame, body, s, layout),
        }
        return;
    }
    let width = body.width;
    let (tree_w, side_w) = if width >= SIDEBAR_FROM {
        let side = if width >= 180 { 40 } else { 32 };
        // The machine view's session rows carry pid, CPU % and memory too.
        let tree =
            if view.derived.machine { ((width * 9) / 20).clamp(40, 90) } else { ((width * 3) / 10).clamp(36, 64) };
        (tree, side)
    } else if view.derived.machine {
        // Room for a session row's state and pid beside its name, at 80 columns too.
        ((width / 2).clamp(28, 54), 0)
    } else {
        (((width * 4) / 10).clamp(28, 44), 0)
    };
    let tree_rect = Rect { width: tree_w, ..body };
    let right_rect = Rect { x: body.x + tree_w, width: body.width - tree_w, ..body };
    tree::draw(frame, tree_rect, s, layout);
    if side_w > 0 {
        let lanes_rect = Rect { width: right_rect.width - side_w, ..right_rect };
        let side_rect = Rect { x: lanes_rect.right(), width: side_w, ..right_rect };
        right_pane(frame, lanes_rect, s, layout);
        sidebar::draw(frame, side_rect, s, layout);
    } else if view.panes.focus == Pane::Cost {
        sidebar::draw(frame, right_rect, s, layout);
    } else {
        right_pane(frame, right_rect, s, layout);
    }
}

/// The lanes, or the timeline in their place.
fn right_pane(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    if s.view.panes.timeline {
        timeline::draw(frame, area, s, layout);
    } else {
        lanes::draw(frame, area, s, layout);
    }
}

/// "Quit?" while a live stream would be lost: what is lost, and the two answers.
fn confirm_quit(frame: &mut Frame, area: Rect, s: &Scene<'_>, layout: &mut Layout) {
    let theme = &s.view.theme;
    let lines = vec![
        Line::from(Span::styled(format!("{} is live.", s.feed.source), theme.bold)),
        Line::from("Quitting stops watching it; what it sends"),
        Line::from("from now on will not be shown again."),
        Line::default(),
        dialog::answers(s.view),
    ];
    let w = 48.min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let rect = centred(area, w, h);
    let block = ratatui::widgets::Block::bordered()
        .border_style(theme.warn)
        .title(Span::styled(" quit? ", theme.title))
        .padding(ratatui::widgets::Padding::horizontal(1));
    frame.render_widget(ratatui::widgets::Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
    layout.overlay = rect;
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
