//! All view state: selection, folds, focus, filter, sort, overlays, scroll — and the caches a frame
//! needs (tree rows, per-agent order, burn-rate samples, where things were drawn for the mouse).
//!
//! Input changes this state only through `update`. `refresh` re-derives what depends on the model
//! (rows after a change, the follow target, clamping), so a model that grew between two frames
//! never leaves the view pointing at nothing.

use std::collections::VecDeque;

use ratatui::layout::Rect;
use rustc_hash::FxHashSet;

use super::outline::{self, NodeId, Row};
use super::theme::Theme;
use crate::model::Model;
use crate::router::{Role, ThreadIdx};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Tree,
    Lanes,
    Cost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Diagnostics,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Cost,
    Tokens,
}

/// Where the last frame put things, for mouse hit-testing and page sizes.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub tree: Rect,
    pub lanes: Rect,
    pub cost: Rect,
    /// First tree row drawn at the top of the tree pane.
    pub tree_offset: usize,
    /// Lane headers drawn: (row on screen, lane index).
    pub lane_headers: Vec<(Rect, usize)>,
    pub overlay: Rect,
}

/// How many burn-rate samples are kept: one per stream second, two minutes.
pub const SPARK_SAMPLES: usize = 120;

#[derive(Debug)]
pub struct View {
    pub theme: Theme,
    pub focus: Pane,
    pub overlay: Option<Overlay>,
    pub selected: Option<NodeId>,
    pub folded: FxHashSet<NodeId>,
    /// The filter query; applies while non-empty.
    pub filter: String,
    /// Keys go to the filter query (after `/`, until Enter or Esc).
    pub typing: bool,
    pub follow: bool,
    pub sort: Sort,
    /// Selected lane among the lanes of the selected node.
    pub lane: usize,
    /// Lanes folded to their header line.
    pub collapsed: FxHashSet<ThreadIdx>,
    /// The lane shown alone, with its full scrollback.
    pub expanded: Option<ThreadIdx>,
    /// Rows scrolled back from the newest line, in the lanes pane.
    pub scroll: usize,
    pub cost_scroll: usize,
    pub overlay_scroll: usize,
    /// Whether the feed is a replay (step, seek and speed keys apply); noted by `draw`.
    pub replay: bool,
    pub layout: Layout,
    /// (stream second, total cost in pico-dollars), oldest first; bounded by [`SPARK_SAMPLES`].
    pub burn: VecDeque<(i64, i128)>,
    cache: Cache,
}

#[derive(Debug, Default)]
struct Cache {
    /// (model generation, thread count, folds, filter). The thread count is there because a seek
    /// may replace the model with a shorter one: no cached row may name a thread it lacks.
    key: Option<(u64, usize, u64, String)>,
    rows: Vec<Row>,
    /// Index of the selected row, found once per refresh.
    selected_row: Option<usize>,
    /// Bumped by every fold change, so the rows know to rebuild.
    folds: u64,
    follow_key: Option<u64>,
    order_key: Option<(u64, usize, Sort)>,
    order: Vec<ThreadIdx>,
}

impl Default for View {
    fn default() -> Self {
        Self::new()
    }
}

impl View {
    pub fn new() -> Self {
        Self::with_theme(Theme::from_env())
    }

    pub fn with_theme(theme: Theme) -> Self {
        Self {
            theme,
            focus: Pane::Tree,
            overlay: None,
            selected: None,
            folded: FxHashSet::default(),
            filter: String::new(),
            typing: false,
            follow: false,
            sort: Sort::Cost,
            lane: 0,
            collapsed: FxHashSet::default(),
            expanded: None,
            scroll: 0,
            cost_scroll: 0,
            overlay_scroll: 0,
            replay: false,
            layout: Layout::default(),
            burn: VecDeque::new(),
            cache: Cache::default(),
        }
    }

    /// The tree rows of the last refresh.
    pub fn rows(&self) -> &[Row] {
        &self.cache.rows
    }

    /// Index of the selected row in [`Self::rows`].
    pub fn selected_row(&self) -> Option<usize> {
        let sel = self.selected?;
        match self.cache.selected_row {
            Some(i) if self.cache.rows.get(i).is_some_and(|r| r.id == sel) => Some(i),
            _ => self.cache.rows.iter().position(|r| r.id == sel),
        }
    }

    pub(super) fn fold(&mut self, id: NodeId) -> bool {
        self.cache.folds += 1;
        self.folded.insert(id)
    }

    pub(super) fn unfold(&mut self, id: NodeId) -> bool {
        self.cache.folds += 1;
        self.folded.remove(&id)
    }

    /// Selects a node; the lanes it shows start at their first lane, at the newest line.
    pub(super) fn select(&mut self, id: NodeId) {
        if self.selected != Some(id) {
            self.selected = Some(id);
            self.lane = 0;
            self.scroll = 0;
            self.expanded = None;
        }
    }

    /// The thread the sidebar and the gauge describe: the selected thread, or the selected lane.
    pub fn focus_thread(&self, model: &Model) -> Option<ThreadIdx> {
        if let Some(t) = self.expanded {
            return Some(t);
        }
        match self.selected? {
            NodeId::Thread(t) => Some(t),
            other => outline::lanes_of(model, other).get(self.lane).copied().or(match other {
                NodeId::Turn(t, _) | NodeId::Group(t, _) => Some(t),
                _ => None,
            }),
        }
    }

    /// Brings the derived state up to date with the model: rows, follow, clamping.
    pub fn refresh(&mut self, model: &Model) {
        let key = (model.generation, model.threads.len(), self.cache.folds, self.filter.clone());
        if self.cache.key.as_ref() != Some(&key) {
            let keep = (!self.filter.is_empty()).then(|| outline::filter_keep(model, &self.filter));
            self.cache.rows = outline::flatten(model, &self.folded, keep.as_deref());
            self.cache.key = Some(key);
        }
        if self.follow && self.cache.follow_key != Some(model.generation) {
            self.cache.follow_key = Some(model.generation);
            self.follow_newest(model);
        }
        self.cache.selected_row = self.selected_row();
        if self.cache.selected_row.is_none() {
            // The selected node left the tree (a filter, a thread that moved): take the first row.
            self.selected = self.cache.rows.first().map(|r| r.id);
            self.cache.selected_row = self.selected.map(|_| 0);
            self.lane = 0;
            self.scroll = 0;
        }
        if let Some(t) = self.expanded {
            if t.index() >= model.threads.len() {
                self.expanded = None;
            }
        }
    }

    /// `f`: the newest child that is still active, its card selected and its lane highlighted.
    fn follow_newest(&mut self, model: &Model) {
        let newest = model
            .threads
            .iter()
            .enumerate()
            .rev()
            .find(|(_, t)| t.role == Role::Child && t.status.is_active())
            .map(|(i, _)| ThreadIdx(i as u32));
        let Some(child) = newest else { return };
        let Some(parent) = model.thread(child).parent else {
            return;
        };
        let Some((first, lane)) = group_of(model, parent, child) else {
            self.select(NodeId::Thread(child));
            return;
        };
        // Every node above the lane must be open for its row to be there: each ancestor, the
        // turn and the card through which the chain passes.
        let mut changed = false;
        let chain: Vec<ThreadIdx> = model.ancestors(child).collect();
        for pair in chain.windows(2) {
            let (c, p) = (pair[0], pair[1]);
            changed |= self.folded.remove(&NodeId::Thread(p));
            let turn = model.thread(c).card.as_deref().and_then(|card| model.thread(p).item(card)?.turn);
            if let Some(turn) = turn {
                changed |= self.folded.remove(&NodeId::Turn(p, turn as u32));
            }
            if let Some((first, _)) = group_of(model, p, c) {
                changed |= self.folded.remove(&NodeId::Group(p, first));
            }
        }
        if changed {
            self.cache.folds += 1;
            let keep = (!self.filter.is_empty()).then(|| outline::filter_keep(model, &self.filter));
            self.cache.rows = outline::flatten(model, &self.folded, keep.as_deref());
            self.cache.key = Some((model.generation, model.threads.len(), self.cache.folds, self.filter.clone()));
        }
        self.select(NodeId::Group(parent, first));
        self.lane = lane;
    }

    /// Threads in the sidebar's order (cost or tokens, largest first), cached per model change.
    pub fn agent_order(&mut self, model: &Model) -> &[ThreadIdx] {
        let key = (model.generation, model.threads.len(), self.sort);
        if self.cache.order_key != Some(key) {
            let mut order: Vec<ThreadIdx> = (0..model.threads.len()).map(|i| ThreadIdx(i as u32)).collect();
            match self.sort {
                Sort::Cost => order.sort_by_key(|&i| {
                    let t = model.thread(i);
                    (std::cmp::Reverse(t.cost.map_or(-1, |c| c.0)), i)
                }),
                Sort::Tokens => {
                    order.sort_by_key(|&i| (std::cmp::Reverse(model.thread(i).tokens.total), i));
                }
            }
            self.cache.order = order;
            self.cache.order_key = Some(key);
        }
        &self.cache.order
    }

    /// Notes the total cost at a stream time, one sample per stream second (bounded).
    pub(super) fn sample_burn(&mut self, now_ms: Option<i64>, total: i128) {
        let Some(now) = now_ms else { return };
        let sec = now.div_euclid(1000);
        match self.burn.back_mut() {
            Some(last) if last.0 == sec => last.1 = total,
            Some(last) if last.0 > sec => {
                // Time went backwards: a seek. The old curve no longer describes this stream.
                self.burn.clear();
                self.burn.push_back((sec, total));
            }
            _ => self.burn.push_back((sec, total)),
        }
        while self.burn.len() > SPARK_SAMPLES {
            self.burn.pop_front();
        }
    }
}

/// The card group of `parent` that holds `child`: its name (first lane) and the child's place in it.
fn group_of(model: &Model, parent: ThreadIdx, child: ThreadIdx) -> Option<(ThreadIdx, usize)> {
    let (groups, _) = outline::groups(model, model.thread(parent));
    groups.iter().find_map(|g| Some((g.first, g.lanes.iter().position(|&c| c == child)?)))
}
