//! What the keys do in the history view, for `update` (the one place the view changes) while the
//! view is open with nothing over it: move in the list or in an opened session's runs, scroll a
//! run's text, open, read the store again, go back.

use ratatui::layout::Position;

use super::{Ask, HistoryView, Listing, Opened};
use crate::ui::keymap::Action;
use crate::ui::layout::Layout;

/// Far enough to reach either end; the draw clamps it to what exists.
const FAR: isize = 1 << 30;

pub fn act(h: &mut HistoryView, layout: &Layout, action: Action) -> Option<Ask> {
    let page = isize::try_from(layout.history.height.saturating_sub(3).max(1)).unwrap_or(1);
    match action {
        Action::MoveUp => step(h, -1),
        Action::MoveDown => step(h, 1),
        Action::PageUp => page_by(h, -page),
        Action::PageDown => page_by(h, page),
        Action::Top => ends(h, -FAR),
        Action::Bottom => ends(h, FAR),
        Action::OpenLane => return open(h),
        Action::Reload => {
            h.listing = Listing::Reading;
            return Some(Ask::List);
        }
        Action::Back => back(h),
        Action::FilterStart if h.opened.is_none() => h.filter.typing = true,
        Action::Click { column, row } => return click(h, layout, Position::new(column, row)),
        Action::Scroll { delta, .. } => step(h, isize::from(delta.signum())),
        _ => {}
    }
    None
}

/// Opens the selected session: the shell decides how (a replay of its files, or the store's).
fn open(h: &mut HistoryView) -> Option<Ask> {
    if h.opened.is_some() {
        return None;
    }
    let id = h.selected().map(|p| p.id.clone())?;
    h.opened = Some(Opened::Opening(id.clone()));
    Some(Ask::Open(id.to_string()))
}

/// Esc: an opened session back to the list, the list (and its filter) back to the monitor.
fn back(h: &mut HistoryView) {
    if h.opened.take().is_some() {
        h.scroll = 0;
        return;
    }
    h.open = false;
    h.filter.query.clear();
}

fn step(h: &mut HistoryView, delta: isize) {
    match &h.opened {
        Some(Opened::Ready(s)) => {
            let to = h.run.saturating_add_signed(delta).min(s.runs.len().saturating_sub(1));
            if to != h.run {
                h.run = to;
                h.scroll = 0;
            }
        }
        Some(_) => {}
        None => h.selected = h.selected.saturating_add_signed(delta).min(h.shown().len().saturating_sub(1)),
    }
}

/// Pages scroll an opened run's text, and move through the list.
fn page_by(h: &mut HistoryView, delta: isize) {
    if h.opened.is_some() {
        h.scroll = h.scroll.saturating_add_signed(delta);
    } else {
        step(h, delta);
    }
}

fn ends(h: &mut HistoryView, far: isize) {
    if h.opened.is_some() {
        h.scroll = h.scroll.saturating_add_signed(far);
    } else {
        step(h, far);
    }
}

/// A click on a row selects it; on the selected row, opens it.
fn click(h: &mut HistoryView, layout: &Layout, at: Position) -> Option<Ask> {
    if h.opened.is_some() || !layout.history.contains(at) {
        return None;
    }
    let &(_, index) = layout.history_rows.iter().find(|&&(y, _)| y == at.y)?;
    if h.selected == index {
        return open(h);
    }
    h.selected = index;
    None
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ui::history::{Loaded, Past, PastRun, Stored};
    use crate::wire::sanitize_line;

    fn past(id: &str) -> Past {
        Past {
            id: sanitize_line(id),
            agent: sanitize_line("agent"),
            name: sanitize_line("lead"),
            project: None,
            start: None,
            elapsed_ms: None,
            status: sanitize_line("idle"),
            agents: 1,
            depth: 0,
            tokens: crate::model::Tokens::default(),
            cost: None,
            files_present: false,
        }
    }

    fn run(name: &str) -> PastRun {
        PastRun {
            thread: sanitize_line(name),
            depth: 0,
            name: sanitize_line(name),
            agent_type: None,
            brief: None,
            model: None,
            status: sanitize_line("idle"),
            child: false,
            elapsed_ms: None,
            turns: 0,
            tool_calls: 0,
            tokens: crate::model::Tokens::default(),
            cost: None,
            answer: None,
            files_changed: Vec::new(),
            entries: Vec::new(),
        }
    }

    #[test]
    fn enter_asks_the_shell_to_open_the_selected_session_and_esc_goes_back_one_level() {
        let mut h = HistoryView { open: true, ..HistoryView::default() };
        let all: Arc<[Past]> = vec![past("s-new"), past("s-old")].into();
        h.take(Loaded::Listing(Ok(all), None));
        let layout = Layout::default();
        assert_eq!(act(&mut h, &layout, Action::MoveDown), None);
        assert_eq!(act(&mut h, &layout, Action::OpenLane), Some(Ask::Open("s-old".to_owned())));
        assert!(matches!(h.opened, Some(Opened::Opening(_))));
        assert_eq!(act(&mut h, &layout, Action::OpenLane), None, "one at a time");
        let stored = Stored { session: past("s-old"), runs: vec![run("lead"), run("scout")], acts: Vec::new() };
        h.take(Loaded::Stored(Ok(Box::new(stored))));
        act(&mut h, &layout, Action::MoveDown);
        assert_eq!(h.run, 1, "↓ moves through the runs");
        act(&mut h, &layout, Action::MoveDown);
        assert_eq!(h.run, 1, "and stops at the last");
        act(&mut h, &layout, Action::Back);
        assert!(h.opened.is_none() && h.open, "Esc: back to the list");
        assert_eq!(h.selected, 1, "on the same row");
        act(&mut h, &layout, Action::Back);
        assert!(!h.open, "Esc again: back to the monitor");
    }

    #[test]
    fn reload_reads_the_store_again() {
        let mut h = HistoryView { open: true, ..HistoryView::default() };
        assert_eq!(act(&mut h, &Layout::default(), Action::Reload), Some(Ask::List));
        assert!(matches!(h.listing, Listing::Reading));
    }
}
