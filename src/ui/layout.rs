//! Where a frame put things: what `draw` returns, for mouse hit-testing and page sizes, and the
//! scrolls as the content clamped them, which the view adopts (`View::place`) for the next key.

use ratatui::layout::Rect;

use crate::router::ThreadIdx;

#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub tree: Rect,
    pub lanes: Rect,
    pub cost: Rect,
    pub timeline: Rect,
    pub overlay: Rect,
    /// First tree row drawn at the top of the tree pane.
    pub tree_offset: usize,
    /// First agent drawn at the top of the timeline.
    pub timeline_offset: usize,
    /// Lane headers drawn: (row on screen, lane index).
    pub lane_headers: Vec<(Rect, usize)>,
    /// Rows of the cost table drawn, from its scroll on: (screen row, thread).
    pub cost_rows: Vec<(u16, ThreadIdx)>,
    /// Rows of the timeline drawn: (screen row, tree row index).
    pub timeline_rows: Vec<(u16, usize)>,
    /// The lane text on screen, line by line, trimmed: what `y` copies from the lanes pane.
    pub lane_text: Vec<String>,
    /// The lanes' scroll as drawn (clamped to the history there is), when a transcript was drawn.
    pub scroll: Option<usize>,
    /// The cost table's scroll as drawn (its cursor kept on screen), when it was drawn.
    pub cost_scroll: Option<usize>,
    /// How many agents the cost table lists (what the filter keeps), when it was drawn.
    pub cost_listed: Option<usize>,
    /// An overlay's scroll as drawn (clamped to its text), when one was drawn.
    pub overlay_scroll: Option<usize>,
    /// What a pending `n` / `N` found, when the transcript it searches was drawn.
    pub found: Option<Found>,
    /// The history view (its list, or an opened session), when drawn.
    pub history: Rect,
    /// First row of the history's list (or of an opened session's runs) drawn.
    pub history_offset: usize,
    /// Rows of the history's list drawn: (screen row, index among the sessions shown).
    pub history_rows: Vec<(u16, usize)>,
    /// An opened session's run text scroll as drawn (clamped to its text).
    pub history_scroll: Option<usize>,
}

/// Where a jump to a search match went: the lanes' scroll that shows it, the match (as rows back
/// from the newest), and what to say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub scroll: usize,
    pub at: Option<usize>,
    pub note: String,
}

impl Layout {
    /// A new frame's layout: scroll offsets carry over from the last frame (a pane keeps its
    /// place, scrolling as little as possible), everything else is drawn anew.
    #[must_use]
    pub fn next(&self) -> Self {
        Self {
            tree_offset: self.tree_offset,
            timeline_offset: self.timeline_offset,
            history_offset: self.history_offset,
            ..Self::default()
        }
    }
}

/// The first of `len` rows to draw in `height` rows: the last frame's `offset`, moved as little
/// as keeps row `sel` on screen.
pub fn scrolled(offset: usize, sel: usize, len: usize, height: usize) -> usize {
    let offset = offset.min(len.saturating_sub(height));
    if sel < offset {
        sel
    } else if height > 0 && sel >= offset + height {
        sel + 1 - height
    } else {
        offset
    }
}
