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
use super::status::{Activity, Clock, Shown};
use super::theme::Theme;
use super::tops::Tops;
use crate::model::Model;
use crate::model::prices::Pico;
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
    /// "Quit and lose the live stream?"
    ConfirmQuit,
}

/// The order of siblings in the tree (and of rows on the timeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeSort {
    /// Registration order: the parent's catalog.
    Arrival,
    Cost,
    Tokens,
    Elapsed,
    Start,
}

impl TreeSort {
    #[must_use]
    pub fn next(self) -> Self {
        match self {
            Self::Arrival => Self::Cost,
            Self::Cost => Self::Tokens,
            Self::Tokens => Self::Elapsed,
            Self::Elapsed => Self::Start,
            Self::Start => Self::Arrival,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Arrival => "arrival",
            Self::Cost => "cost",
            Self::Tokens => "tokens",
            Self::Elapsed => "elapsed",
            Self::Start => "start",
        }
    }
}

/// A pending jump to a search match, resolved by the next draw of the lanes (which knows the
/// wrapping width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jump {
    Older,
    Newer,
}

/// The timeline's window on time: `span_ms` wide (0: the whole run), ending at `end_ms`
/// (`None`: at now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeWindow {
    pub span_ms: i64,
    pub end_ms: Option<i64>,
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
    /// Rows of the cost table drawn, from `cost_scroll` on: (screen row, thread).
    pub cost_rows: Vec<(u16, ThreadIdx)>,
    pub timeline: Rect,
    /// First agent drawn at the top of the timeline.
    pub timeline_offset: usize,
    /// Rows of the timeline drawn: (screen row, tree row index).
    pub timeline_rows: Vec<(u16, usize)>,
    /// `lanes 292–300 of 300` when not every lane of a card fits.
    pub lanes_note: Option<String>,
    /// The text of the lane rows on screen, for `y`.
    pub lane_text: Vec<String>,
}

/// How many burn-rate samples are kept: one per stream second, two minutes.
pub const SPARK_SAMPLES: usize = 120;

#[allow(clippy::struct_excessive_bools)]
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
    /// The text search of the lanes pane; highlights while non-empty.
    pub search: String,
    /// Keys go to the search query.
    pub searching: bool,
    pub jump: Option<Jump>,
    /// The match the last jump went to, as rows back from the newest.
    pub search_at: Option<usize>,
    /// What the last jump found: `no match in the last 5,000 rows`.
    pub search_note: Option<String>,
    /// The timeline in the lanes' place (`t`).
    pub timeline: bool,
    pub window: TimeWindow,
    /// The focused pane alone on the body of the screen (`z`).
    pub zoom: bool,
    pub tree_sort: TreeSort,
    /// Selected row of the cost table.
    pub cost_row: usize,
    /// A one-line message for the footer (`copied …`), until the next key.
    pub notice: Option<String>,
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
    /// Whether quitting would lose a live stream for good (`cmd | swarmtop`): `q` asks first.
    pub live_source: bool,
    pub layout: Layout,
    /// (stream second, total cost in pico-dollars), oldest first; bounded by [`SPARK_SAMPLES`].
    pub burn: VecDeque<(i64, i128)>,
    /// The time statuses are judged at, noted by `draw` from the feed.
    pub clock: Clock,
    activity: Activity,
    activity_key: Option<(u64, usize)>,
    cache: Cache,
    /// The card groups the lanes, titles and keys ask for, once per tree structure.
    pub groups: outline::GroupCache,
    /// The machine view's agent ▸ project ▸ session grouping (used while `machine` is set).
    pub tops: Tops,
    /// The tree starts with agent and project rows (the machine view); noted by `draw`.
    pub machine: bool,
}

#[derive(Debug, Default)]
struct Cache {
    /// (shape of the tree, thread count, folds, filter): what the rows depend on. See
    /// `Model::structure`; the thread count is there because a seek may replace the model with a
    /// shorter one, and no cached row may name a thread it lacks.
    key: Option<(u64, usize, u64, String, TreeSort, Option<u64>)>,
    rows: Vec<Row>,
    /// Index of the selected row, found once per refresh.
    selected_row: Option<usize>,
    /// Bumped by every fold change, so the rows know to rebuild.
    folds: u64,
    follow_key: Option<u64>,
    order_key: Option<(u64, usize, Sort, usize, u64)>,
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
            search: String::new(),
            searching: false,
            jump: None,
            search_at: None,
            search_note: None,
            timeline: false,
            window: TimeWindow::default(),
            zoom: false,
            tree_sort: TreeSort::Arrival,
            cost_row: 0,
            notice: None,
            follow: false,
            sort: Sort::Cost,
            lane: 0,
            collapsed: FxHashSet::default(),
            expanded: None,
            scroll: 0,
            cost_scroll: 0,
            overlay_scroll: 0,
            replay: false,
            live_source: false,
            layout: Layout::default(),
            burn: VecDeque::new(),
            clock: Clock { now_ms: None, stall_ms: 60_000, ended: false },
            activity: Activity::default(),
            activity_key: None,
            cache: Cache::default(),
            groups: outline::GroupCache::default(),
            tops: Tops::default(),
            machine: false,
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

    /// Unfolds every node.
    pub(super) fn expand_all(&mut self) {
        self.cache.folds += 1;
        self.folded.clear();
    }

    /// Folds every node that has children, down to the sessions.
    pub(super) fn collapse_all(&mut self, model: &Model) {
        self.expand_all();
        self.refresh_rows(model);
        // Group rows stay open: every session keeps its row.
        let open: Vec<NodeId> = self
            .cache
            .rows
            .iter()
            .filter(|r| r.has_children && !matches!(r.id, NodeId::Agent(_) | NodeId::Project(_)))
            .map(|r| r.id)
            .collect();
        self.folded.extend(open);
        self.cache.folds += 1;
        // The selection may have gone inside a fold: its session stands for it.
        self.refresh_rows(model);
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
            other => {
                outline::lanes_of(model, other, &self.groups, &self.tops).get(self.lane).copied().or(match other {
                    NodeId::Turn(t, _) | NodeId::Group(t, _) => Some(t),
                    _ => None,
                })
            }
        }
    }

    /// Rebuilds the tree rows if what they depend on changed.
    fn refresh_rows(&mut self, model: &Model) {
        // A filter looks at names, statuses and models, which change without the shape changing.
        // So does an order by figures.
        let by_figures = !self.filter.is_empty() || self.tree_sort != TreeSort::Arrival;
        // The model counts changes of the tree's shape itself: no pass over the threads per frame.
        let shape = if by_figures { model.generation } else { model.structure };
        let tops = self.machine.then_some(self.tops.generation);
        let key = (shape, model.threads.len(), self.cache.folds, self.filter.clone(), self.tree_sort, tops);
        if self.cache.key.as_ref() != Some(&key) {
            let keep = (!self.filter.is_empty()).then(|| {
                let mut keep = outline::filter_keep(model, &self.filter);
                if self.machine {
                    self.keep_matching_groups(model, &mut keep);
                }
                keep
            });
            let tops = self.machine.then_some(&self.tops);
            self.cache.rows = outline::flatten(model, &self.folded, keep.as_deref(), self.tree_sort, tops);
            self.cache.key = Some(key);
        }
    }

    /// A filter that names an agent or a project (its folder or path) keeps every session in it.
    fn keep_matching_groups(&self, model: &Model, keep: &mut [bool]) {
        let q = self.filter.to_lowercase();
        for agent in &self.tops.groups {
            let agent_hit = self.tops.agent(agent.id).to_lowercase().contains(&q);
            for p in &agent.projects {
                let hit = agent_hit
                    || self
                        .tops
                        .project(p.id)
                        .is_some_and(|pr| pr.name.to_lowercase().contains(&q) || pr.path.to_lowercase().contains(&q));
                if hit {
                    for &r in p.roots.iter().filter(|r| r.index() < model.threads.len()) {
                        keep[r.index()] = true;
                    }
                }
            }
        }
    }

    /// How a thread shows right now (its subtree's activity as of the last refresh).
    pub fn shown(&self, model: &Model, idx: ThreadIdx) -> Shown {
        Shown::of(model.thread(idx), self.activity.subtree(idx), self.clock)
    }

    /// Counts over the whole model, as of the last refresh.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// Brings the derived state up to date with the model: rows, follow, clamping.
    pub fn refresh(&mut self, model: &Model) {
        let key = (model.generation, model.threads.len());
        if self.activity_key != Some(key) {
            self.activity = Activity::of(model);
            self.activity_key = Some(key);
        }
        self.refresh_rows(model);
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
        self.open_chain(model, child);
        self.select(NodeId::Group(parent, first));
        self.lane = lane;
    }

    /// Every node above a thread opened, so its row is in the tree: each ancestor, the turn and
    /// the card through which the chain passes.
    fn open_chain(&mut self, model: &Model, thread: ThreadIdx) {
        let mut changed = false;
        let chain: Vec<ThreadIdx> = model.ancestors(thread).collect();
        if self.machine {
            // The session's agent and project rows, above its root.
            if let Some(s) = chain.last().and_then(|&root| self.tops.session(root)) {
                changed |= self.folded.remove(&NodeId::Agent(s.agent));
                changed |= self.folded.remove(&NodeId::Project(s.project));
            }
        }
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
            self.refresh_rows(model);
        }
    }

    /// Selects a thread's own row in the tree, opening what hides it (a filter that hides it
    /// is cleared).
    pub(super) fn reveal(&mut self, model: &Model, thread: ThreadIdx) {
        if thread.index() >= model.threads.len() {
            return;
        }
        self.open_chain(model, thread);
        if !self.filter.is_empty() && !self.cache.rows.iter().any(|r| r.id == NodeId::Thread(thread)) {
            self.filter.clear();
            self.refresh_rows(model);
        }
        self.select(NodeId::Thread(thread));
        self.follow = false;
    }

    /// The first `rows` threads in the sidebar's order (cost or tokens, largest first), cached
    /// per model change. Only those are sorted: a partial selection finds them in linear time.
    pub fn agent_order(&mut self, model: &Model, rows: usize) -> &[ThreadIdx] {
        let key = (model.generation, model.threads.len(), self.sort, rows, self.tops.generation);
        if self.cache.order_key != Some(key) {
            // An aged-out session's agents left the screen with it.
            let mut order: Vec<ThreadIdx> =
                (0..model.threads.len()).map(|i| ThreadIdx(i as u32)).filter(|&i| !self.tops.is_hidden(i)).collect();
            let by_cost = |&i: &ThreadIdx| (std::cmp::Reverse(model.thread(i).cost.map_or(-1, |c| c.0)), i);
            let by_tokens = |&i: &ThreadIdx| (std::cmp::Reverse(i128::from(model.thread(i).tokens.total)), i);
            let key_of: &dyn Fn(&ThreadIdx) -> (std::cmp::Reverse<i128>, ThreadIdx) = match self.sort {
                Sort::Cost => &by_cost,
                Sort::Tokens => &by_tokens,
            };
            if rows < order.len() {
                order.select_nth_unstable_by_key(rows, key_of);
                order.truncate(rows);
            }
            order.sort_unstable_by_key(key_of);
            self.cache.order = order;
            self.cache.order_key = Some(key);
        }
        &self.cache.order
    }

    /// Cost per minute over the minute before the clock's now (stream time, or the wall clock of
    /// a live feed that is current), so a quiet stream decays to zero; `None` before any time has
    /// passed and once the feed has ended (nothing is spending: there is no rate).
    pub fn burn_per_min(&self) -> Option<Pico> {
        if self.clock.ended {
            return None;
        }
        let &(last, total) = self.burn.back()?;
        // The clock never reads earlier than the newest sample (a seek clears the samples).
        let now = self.clock.now_ms.map_or(last, |ms| ms.div_euclid(1000)).max(last);
        let Some(from) = self.burn.iter().find(|s| s.0 >= now - 60).copied() else {
            return Some(Pico(0));
        };
        let mins = (now - from.0) as f64 / 60.0;
        (mins > 0.0).then(|| Pico(((total - from.1) as f64 / mins) as i128))
    }

    /// Notes the total cost at a stream time, one sample per stream second (bounded).
    pub fn sample_burn(&mut self, now_ms: Option<i64>, total: i128) {
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
