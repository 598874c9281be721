//! The timeline's window on time: what it spans (the whole run; in the machine view the session
//! the cursor is in, whose sessions are of every age) and the part of it on screen, which follows
//! now until the user scrolls or zooms.

use super::outline::NodeId;
use super::view::View;
use crate::model::Model;
use crate::router::ThreadIdx;

/// The narrowest window.
pub const MIN_SPAN_MS: i64 = 1_000;

/// What the timeline spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// The first line and the newest.
    pub first: i64,
    pub last: i64,
    /// Something in it is still at work: it runs on to now.
    pub going: bool,
    /// The session it is (the machine view), or `None`: the whole run.
    pub session: Option<ThreadIdx>,
}

impl Extent {
    /// The end of time on the timeline: now while something is at work, else the last line.
    pub fn now(&self, now_ms: Option<i64>) -> i64 {
        if self.going { now_ms.unwrap_or(self.last).max(self.last) } else { self.last }
    }
}

/// The session the machine view's timeline shows: the one the cursor is in (an agent's or a
/// project's row: its first session).
pub fn session_of(view: &View, model: &Model) -> Option<ThreadIdx> {
    if !view.derived.machine {
        return None;
    }
    let tops = &view.derived.tops;
    let root = match view.selection.node? {
        NodeId::Thread(t) | NodeId::Turn(t, _) | NodeId::Group(t, _) if t.index() < model.threads.len() => {
            model.ancestors(t).last()?
        }
        NodeId::Agent(a) => *tops.roots_of_agent(a).first()?,
        NodeId::Project(p) => *tops.project_group(p)?.roots.first()?,
        _ => return None,
    };
    (root.index() < model.threads.len()).then_some(root)
}

/// The timeline's extent: the selected session's in the machine view (its first line to its
/// newest, going while an agent of it is active), else the whole stream's.
pub fn extent(view: &View, model: &Model) -> Option<Extent> {
    if let Some(root) = session_of(view, model) {
        let t = model.thread(root);
        let below = view.activity().subtree(root);
        let first = [t.first_ms, below.first_ms].into_iter().flatten().min()?;
        let last = [t.last_ms, below.last_ms].into_iter().flatten().max().unwrap_or(first).max(first);
        let going = t.status.is_active() || below.active > 0;
        return Some(Extent { first, last, going, session: Some(root) });
    }
    let first = model.threads.iter().filter_map(|t| t.first_ms).min()?;
    let last = model.stream_ms.or_else(|| model.threads.iter().filter_map(|t| t.last_ms).max())?;
    Some(Extent { first, last: last.max(first), going: true, session: None })
}

/// The window as drawn, in stream time: the whole extent unless the user scrolled or zoomed (on
/// this extent: a window set on another session's timeline does not apply to this one).
pub fn resolved(view: &View, model: &Model, now_ms: Option<i64>) -> Option<(i64, i64)> {
    let e = extent(view, model)?;
    let now = e.now(now_ms);
    let window = view.panes.window;
    let (span, end) = if window.session == e.session { (window.span_ms, window.end_ms) } else { (0, None) };
    let span = if span > 0 { span } else { (now - e.first).max(MIN_SPAN_MS) };
    let end = end.unwrap_or(now);
    Some((end - span, end))
}
