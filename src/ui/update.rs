//! `update`: the only place where input changes the view. What the view cannot do itself (quit,
//! pause, seek) goes back to the runtime as an [`Effect`].

use ratatui::layout::{Position, Rect};

use super::keymap::Action;
use super::outline::{self, NodeId};
use super::view::{Overlay, Pane, Sort, View};
use crate::model::Model;

/// How far `[` and `]` seek, in stream milliseconds.
pub const SEEK_STEP_MS: i64 = 10_000;

/// What the runtime must do after an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    TogglePause,
    /// Apply one more event (while paused).
    Step,
    /// Move the replay by this many milliseconds of stream time (negative: back), re-running
    /// the reducer from the start when going back.
    Seek(i64),
    /// +1 one speed step faster, -1 slower (1× → 2× → 10× → max).
    Speed(i32),
}

pub fn update(view: &mut View, model: &Model, action: Action) -> Effect {
    view.refresh(model);
    match action {
        Action::Quit => return Effect::Quit,
        Action::Back => return back(view),
        Action::TogglePause => return Effect::TogglePause,
        Action::Step => return Effect::Step,
        Action::SeekBack => return Effect::Seek(-SEEK_STEP_MS),
        Action::SeekForward => return Effect::Seek(SEEK_STEP_MS),
        Action::SpeedUp => return Effect::Speed(1),
        Action::SpeedDown => return Effect::Speed(-1),
        Action::Help => toggle_overlay(view, Overlay::Help),
        Action::Diagnostics => toggle_overlay(view, Overlay::Diagnostics),
        Action::FilterStart => {
            view.typing = true;
            view.follow = false;
        }
        Action::FilterInput(c) => {
            view.filter.push(c);
            select_first_match(view, model);
        }
        Action::FilterBackspace => {
            view.filter.pop();
            select_first_match(view, model);
        }
        Action::FilterAccept => view.typing = false,
        Action::FilterCancel => {
            view.typing = false;
            view.filter.clear();
        }
        Action::Follow => view.follow = !view.follow,
        Action::Sort => {
            view.sort = match view.sort {
                Sort::Cost => Sort::Tokens,
                Sort::Tokens => Sort::Cost,
            };
        }
        Action::NextPane => view.focus = cycle(view.focus, true),
        Action::PrevPane => view.focus = cycle(view.focus, false),
        Action::MoveUp => step(view, model, -1),
        Action::MoveDown => step(view, model, 1),
        Action::PageUp => page(view, model, -1),
        Action::PageDown => page(view, model, 1),
        Action::Top => ends(view, model, true),
        Action::Bottom => ends(view, model, false),
        Action::Fold => fold(view),
        Action::Unfold => unfold(view),
        Action::OpenLane => open(view, model),
        Action::ToggleLane => toggle_lane(view, model),
        Action::Click { column, row } => click(view, model, Position::new(column, row)),
        Action::Scroll { column, row, delta } => {
            scroll(view, model, Position::new(column, row), delta);
        }
    }
    view.refresh(model);
    Effect::None
}

/// Esc closes the innermost thing: the filter prompt, an overlay, an expanded lane, an applied
/// filter; only then does it quit.
fn back(view: &mut View) -> Effect {
    if view.typing {
        view.typing = false;
        view.filter.clear();
    } else if view.overlay.is_some() {
        view.overlay = None;
        view.overlay_scroll = 0;
    } else if view.expanded.is_some() {
        view.expanded = None;
        view.scroll = 0;
    } else if !view.filter.is_empty() {
        view.filter.clear();
    } else {
        return Effect::Quit;
    }
    Effect::None
}

/// While typing a filter the cursor goes to the first thread that matches (not to an ancestor
/// kept only to show where the match sits).
fn select_first_match(view: &mut View, model: &Model) {
    view.refresh(model);
    let q = view.filter.to_lowercase();
    let hit = view.rows().iter().find_map(|r| match r.id {
        NodeId::Thread(t) if !q.is_empty() && outline::matches(model.thread(t), &q) => Some(r.id),
        _ => None,
    });
    if let Some(id) = hit {
        view.select(id);
    }
}

fn toggle_overlay(view: &mut View, which: Overlay) {
    view.overlay = (view.overlay != Some(which)).then_some(which);
    view.overlay_scroll = 0;
}

fn cycle(p: Pane, forward: bool) -> Pane {
    match (p, forward) {
        (Pane::Tree, true) | (Pane::Cost, false) => Pane::Lanes,
        (Pane::Lanes, true) | (Pane::Tree, false) => Pane::Cost,
        (Pane::Cost, true) | (Pane::Lanes, false) => Pane::Tree,
    }
}

/// Whether the lanes pane shows one thread's whole transcript (scrolls) or stacked lanes (moves).
fn lanes_scroll_text(view: &View, model: &Model) -> bool {
    view.expanded.is_some() || matches!(view.selected, Some(NodeId::Thread(_))) || lane_count(view, model) <= 1
}

fn lane_count(view: &View, model: &Model) -> usize {
    view.selected.map_or(0, |s| outline::lanes_of(model, s).len())
}

fn move_tree(view: &mut View, delta: isize) {
    let rows = view.rows();
    if rows.is_empty() {
        return;
    }
    let at = view.selected_row().unwrap_or(0);
    let to = at.saturating_add_signed(delta).min(rows.len() - 1);
    let id = rows[to].id;
    view.select(id);
    view.follow = false;
}

fn step(view: &mut View, model: &Model, delta: isize) {
    if view.overlay.is_some() {
        view.overlay_scroll = view.overlay_scroll.saturating_add_signed(delta);
        return;
    }
    match view.focus {
        Pane::Tree => move_tree(view, delta),
        Pane::Lanes if lanes_scroll_text(view, model) => {
            // Up reads older lines: scroll grows away from the newest line.
            view.scroll = view.scroll.saturating_add_signed(-delta);
        }
        Pane::Lanes => {
            let n = lane_count(view, model);
            view.lane = view.lane.saturating_add_signed(delta).min(n.saturating_sub(1));
            view.follow = false;
        }
        Pane::Cost => view.cost_scroll = view.cost_scroll.saturating_add_signed(delta),
    }
}

fn page_rows(area: Rect) -> isize {
    isize::try_from(area.height.saturating_sub(3).max(1)).unwrap_or(1)
}

fn page(view: &mut View, model: &Model, dir: isize) {
    let rows = match (view.overlay, view.focus) {
        (Some(_), _) => page_rows(view.layout.overlay),
        (None, Pane::Tree) => page_rows(view.layout.tree),
        (None, Pane::Lanes) => page_rows(view.layout.lanes),
        (None, Pane::Cost) => page_rows(view.layout.cost),
    };
    step(view, model, dir * rows);
}

fn ends(view: &mut View, model: &Model, top: bool) {
    // Far enough to reach either end; the draw clamps it to what exists.
    let far = if top { -(1 << 30) } else { 1 << 30 };
    step(view, model, far);
}

fn fold(view: &mut View) {
    let Some(at) = view.selected_row() else {
        return;
    };
    let row = view.rows()[at];
    if row.open {
        view.fold(row.id);
    } else if let Some(parent) = outline::parent_row(view.rows(), at) {
        let id = view.rows()[parent].id;
        view.select(id);
    }
}

fn unfold(view: &mut View) {
    let Some(at) = view.selected_row() else {
        return;
    };
    let row = view.rows()[at];
    if row.has_children && !row.open {
        view.unfold(row.id);
    } else if row.open {
        if let Some(next) = view.rows().get(at + 1).map(|r| r.id) {
            view.select(next);
        }
    }
}

fn open(view: &mut View, model: &Model) {
    match view.focus {
        Pane::Tree => {
            if let Some(NodeId::Thread(t)) = view.selected {
                view.expanded = Some(t);
                view.scroll = 0;
            }
            view.focus = Pane::Lanes;
        }
        Pane::Lanes => {
            if view.expanded.is_some() {
                view.expanded = None;
            } else if let Some(sel) = view.selected {
                view.expanded = outline::lanes_of(model, sel).get(view.lane).copied();
                if let Some(t) = view.expanded {
                    view.collapsed.remove(&t);
                }
            }
            view.scroll = 0;
        }
        Pane::Cost => {}
    }
}

fn toggle_lane(view: &mut View, model: &Model) {
    let Some(sel) = view.selected else { return };
    if let Some(&t) = outline::lanes_of(model, sel).get(view.lane) {
        if !view.collapsed.remove(&t) {
            view.collapsed.insert(t);
        }
    }
}

fn click(view: &mut View, model: &Model, at: Position) {
    if view.overlay.is_some() {
        if !view.layout.overlay.contains(at) {
            view.overlay = None;
        }
        return;
    }
    let layout = &view.layout;
    if layout.tree.contains(at) {
        view.focus = Pane::Tree;
        // Rows start one line below the pane's top border.
        let Some(offset) = (at.y as usize).checked_sub(layout.tree.y as usize + 1) else {
            return;
        };
        // The bottom border is not a row.
        if offset + 2 >= layout.tree.height as usize {
            return;
        }
        let index = layout.tree_offset + offset;
        let Some(row) = view.rows().get(index).copied() else {
            return;
        };
        if view.selected == Some(row.id) && row.has_children {
            if row.open {
                view.fold(row.id);
            } else {
                view.unfold(row.id);
            }
        } else {
            view.select(row.id);
            view.follow = false;
        }
    } else if layout.lanes.contains(at) {
        view.focus = Pane::Lanes;
        let hit = layout.lane_headers.iter().find(|(r, _)| r.contains(at)).map(|&(_, i)| i);
        if let Some(i) = hit {
            if view.lane == i {
                toggle_lane(view, model);
            }
            view.lane = i;
            view.follow = false;
        }
    } else if layout.cost.contains(at) {
        view.focus = Pane::Cost;
    }
}

fn scroll(view: &mut View, model: &Model, at: Position, delta: i16) {
    let delta = isize::from(delta);
    if view.overlay.is_some() {
        view.overlay_scroll = view.overlay_scroll.saturating_add_signed(delta);
        return;
    }
    let layout = &view.layout;
    if layout.tree.contains(at) {
        move_tree(view, delta);
    } else if layout.lanes.contains(at) {
        if lanes_scroll_text(view, model) {
            view.scroll = view.scroll.saturating_add_signed(-delta);
        } else {
            let n = lane_count(view, model);
            view.lane = view.lane.saturating_add_signed(delta.signum()).min(n.saturating_sub(1));
        }
    } else if layout.cost.contains(at) {
        view.cost_scroll = view.cost_scroll.saturating_add_signed(delta);
    }
}
