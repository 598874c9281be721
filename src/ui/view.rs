//! All view state, in four parts: where the cursor is ([`Selection`]), what each pane shows and
//! how ([`Panes`]), where the last frame put things ([`Layout`]), and what follows from the model
//! and the feed ([`Derived`]: tree rows, activity, the machine view's grouping, burn samples).
//!
//! Input changes the first two only through `update`. [`View::sync`] brings the derived part up
//! to date after the model or the feed moved (rows after a change, the follow target, clamping),
//! so a model that grew between two frames never leaves the view pointing at nothing; `draw` then
//! reads the view without changing it, and [`View::place`] keeps what it drew.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::acting::Acting;
use super::feed::Feed;
use super::history::HistoryView;
pub use super::layout::Layout;
use super::memo::Memo;
pub use super::outline::TreeSort;
use super::outline::{self, NodeId, Row};
use super::status::{Activity, Clock, Shown};
use super::theme::Theme;
use super::tops::Tops;
use crate::model::prices::Pico;
use crate::model::{Model, Rollup};
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
    /// "Interrupt this agent?" ([`super::acting`]).
    Act,
}

/// A pending jump to a search match, resolved by the next draw of the lanes (which knows the
/// wrapping width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jump {
    Older,
    Newer,
}

/// The timeline's window on time: `span_ms` wide (0: the whole run), ending at `end_ms`
/// (`None`: at now), set on the timeline of `session` (the machine view's; `None`: the run's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeWindow {
    pub span_ms: i64,
    pub end_ms: Option<i64>,
    pub session: Option<ThreadIdx>,
}

/// The cost table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sort {
    Cost,
    Tokens,
}

/// How many burn-rate samples are kept: one per stream second, two minutes.
pub const SPARK_SAMPLES: usize = 120;

#[derive(Debug)]
pub struct View {
    pub theme: Theme,
    pub selection: Selection,
    pub panes: Panes,
    pub layout: Layout,
    pub derived: Derived,
    /// The history view (`H`): past sessions from the run store.
    pub history: HistoryView,
    /// The interrupt dialog (`i`, `I`).
    pub acting: Acting,
}

/// Where the cursor is.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The tree's selected node (the timeline's rows are the tree's agents: one selection).
    pub node: Option<NodeId>,
    /// Selected lane among the lanes of the selected node.
    pub lane: usize,
    /// The lane shown alone, with its full scrollback.
    pub expanded: Option<ThreadIdx>,
    /// Selected row of the cost table.
    pub cost_row: usize,
    /// `f`: the selection follows the newest active lane.
    pub follow: bool,
    /// The user has acted: the machine view no longer puts the cursor on the newest session.
    pub chosen: bool,
}

/// A filter of the tree (`/` in the tree).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Applies while non-empty.
    pub query: String,
    /// Keys go to the query (after `/`, until Enter or Esc).
    pub typing: bool,
}

/// The text search of the lanes (`/` in the lanes): highlights while non-empty.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub query: String,
    /// Keys go to the query.
    pub typing: bool,
    pub jump: Option<Jump>,
    /// The match the last jump went to, as rows back from the newest.
    pub at: Option<usize>,
    /// What the last jump found: `3/17`, `no match in the last 5,000 rows`.
    pub note: Option<String>,
}

/// The transcript rows that hold the search query: distances from the newest row, newest first,
/// and how many rows were searched.
#[derive(Debug, Default)]
pub struct Matches {
    pub hits: Vec<usize>,
    pub rows: usize,
}

/// What a search's matches depend on: the transcript, its wrapping width and the rows of a
/// failure's reason, the query, the model.
type MatchKey = (ThreadIdx, usize, Option<usize>, String, u64, usize);

/// What each pane shows and how.
#[derive(Debug, Clone)]
pub struct Panes {
    pub focus: Pane,
    pub overlay: Option<Overlay>,
    /// The focused pane alone on the body of the screen (`z`).
    pub zoom: bool,
    /// The timeline in the lanes' place (`t`).
    pub timeline: bool,
    pub window: TimeWindow,
    /// Tree nodes folded (change them through `View::fold` / `unfold`: the rows depend on them).
    pub folded: FxHashSet<NodeId>,
    /// Lanes folded to their header line.
    pub collapsed: FxHashSet<ThreadIdx>,
    pub filter: Filter,
    pub search: Search,
    pub tree_sort: TreeSort,
    pub sort: Sort,
    /// Rows scrolled back from the newest line, in the lanes pane.
    pub scroll: usize,
    pub cost_scroll: usize,
    pub overlay_scroll: usize,
    /// A one-line message for the footer (`copied …`), until the next key.
    pub notice: Option<String>,
}

/// What follows from the model and the feed, brought up to date by [`View::sync`].
#[derive(Debug)]
pub struct Derived {
    /// The feed is a replay (step, seek and speed keys apply).
    pub replay: bool,
    /// Quitting would lose a live stream for good (`cmd | swarmtop`): `q` asks first.
    pub live_source: bool,
    /// The tree starts with agent and project rows (the machine view).
    pub machine: bool,
    /// The time statuses are judged at.
    pub clock: Clock,
    /// (stream second, total cost in pico-dollars), oldest first; bounded by [`SPARK_SAMPLES`].
    pub burn: VecDeque<(i64, i128)>,
    /// The card groups the lanes, titles and keys ask for, once per tree structure.
    pub groups: outline::GroupCache,
    /// The machine view's agent ▸ project ▸ session grouping (used while `machine` is set).
    pub tops: Tops,
    /// The search's matches in the transcript shown, once per model change.
    pub matches: Memo<MatchKey, Matches>,
    /// The header's and the cost pane's totals (of what is shown), once per change of the model
    /// or the grouping: a pass over every thread and session at every frame, the clock's
    /// included, was a tenth of a quiet machine view's work.
    pub totals: Memo<(u64, usize, u64, bool), Rollup>,
    activity: Activity,
    activity_key: Option<(u64, usize)>,
    rows: Rows,
    follow_key: Option<u64>,
    order: Memo<OrderKey, AgentOrder>,
}

/// The tree rows, rebuilt only when what they depend on changed.
#[derive(Debug, Default)]
struct Rows {
    /// (shape of the tree, thread count, folds, filter, order, grouping): what the rows depend
    /// on. See `Model::structure`; the thread count is there because a seek may replace the
    /// model with a shorter one, and no cached row may name a thread it lacks.
    key: Option<(u64, usize, u64, String, TreeSort, Option<u64>)>,
    list: Vec<Row>,
    /// Index of the selected row, found once per refresh.
    selected: Option<usize>,
    /// Bumped by every fold change, so the rows know to rebuild.
    folds: u64,
}

/// The cost table's first rows in its order, and how many agents it lists in all.
#[derive(Debug)]
pub struct AgentOrder {
    pub first: Vec<ThreadIdx>,
    pub listed: usize,
}

/// What the cost table's order depends on: the model, its sort, how many rows are asked for, the
/// grouping (aged-out sessions leave it) and the filter (it lists what the tree keeps).
type OrderKey = (u64, usize, Sort, usize, u64, String);

impl View {
    pub fn with_theme(theme: Theme) -> Self {
        Self {
            theme,
            selection: Selection::default(),
            panes: Panes {
                focus: Pane::Tree,
                overlay: None,
                zoom: false,
                timeline: false,
                window: TimeWindow::default(),
                folded: FxHashSet::default(),
                collapsed: FxHashSet::default(),
                filter: Filter::default(),
                search: Search::default(),
                tree_sort: TreeSort::Arrival,
                sort: Sort::Cost,
                scroll: 0,
                cost_scroll: 0,
                overlay_scroll: 0,
                notice: None,
            },
            layout: Layout::default(),
            derived: Derived {
                replay: false,
                live_source: false,
                machine: false,
                clock: Clock { now_ms: None, stall_ms: 60_000, ended: false },
                burn: VecDeque::new(),
                groups: outline::GroupCache::default(),
                tops: Tops::default(),
                matches: Memo::default(),
                totals: Memo::default(),
                activity: Activity::default(),
                activity_key: None,
                rows: Rows::default(),
                follow_key: None,
                order: Memo::default(),
            },
            history: HistoryView::default(),
            acting: Acting::default(),
        }
    }

    /// The tree rows of the last refresh.
    pub fn rows(&self) -> &[Row] {
        &self.derived.rows.list
    }

    /// Index of the selected row in [`Self::rows`].
    pub fn selected_row(&self) -> Option<usize> {
        let sel = self.selection.node?;
        let rows = &self.derived.rows;
        match rows.selected {
            Some(i) if rows.list.get(i).is_some_and(|r| r.id == sel) => Some(i),
            _ => rows.list.iter().position(|r| r.id == sel),
        }
    }

    /// Unfolds every node.
    pub(super) fn expand_all(&mut self) {
        self.derived.rows.folds += 1;
        self.panes.folded.clear();
    }

    /// Folds every node that has children, down to the sessions.
    pub(super) fn collapse_all(&mut self, model: &Model) {
        self.expand_all();
        self.refresh_rows(model);
        // Group rows stay open: every session keeps its row.
        let open: Vec<NodeId> = self
            .rows()
            .iter()
            .filter(|r| r.has_children() && !matches!(r.id, NodeId::Agent(_) | NodeId::Project(_)))
            .map(|r| r.id)
            .collect();
        self.panes.folded.extend(open);
        self.derived.rows.folds += 1;
        // The selection may have gone inside a fold: its session stands for it.
        self.refresh_rows(model);
    }

    pub(super) fn fold(&mut self, id: NodeId) -> bool {
        self.derived.rows.folds += 1;
        self.panes.folded.insert(id)
    }

    pub(super) fn unfold(&mut self, id: NodeId) -> bool {
        self.derived.rows.folds += 1;
        self.panes.folded.remove(&id)
    }

    /// Selects a node; the lanes it shows start at their first lane, at the newest line.
    pub(super) fn select(&mut self, id: NodeId) {
        if self.selection.node != Some(id) {
            self.selection.node = Some(id);
            self.selection.lane = 0;
            self.selection.expanded = None;
            self.panes.scroll = 0;
        }
    }

    /// The lanes the selected node shows (one thread's: its transcript).
    pub fn lanes(&self, model: &Model) -> Vec<ThreadIdx> {
        match (self.selection.expanded, self.selection.node) {
            (Some(t), _) => vec![t],
            (None, Some(sel)) => outline::lanes_of(model, sel, &self.derived.groups, &self.derived.tops),
            (None, None) => Vec::new(),
        }
    }

    /// The thread the sidebar and the gauge describe: the selected thread, or the selected lane.
    pub fn focus_thread(&self, model: &Model) -> Option<ThreadIdx> {
        if let Some(t) = self.selection.expanded {
            return Some(t);
        }
        match self.selection.node? {
            NodeId::Thread(t) => Some(t),
            other => outline::lanes_of(model, other, &self.derived.groups, &self.derived.tops)
                .get(self.selection.lane)
                .copied()
                .or(match other {
                    NodeId::Turn(t, _) | NodeId::Group(t, _) => Some(t),
                    _ => None,
                }),
        }
    }

    /// Which threads the filter keeps (`None`: no filter): the matches and their ancestors, and
    /// in the machine view every session of an agent or project the filter names.
    pub fn kept(&self, model: &Model) -> Option<Vec<bool>> {
        let query = &self.panes.filter.query;
        if query.is_empty() {
            return None;
        }
        let mut keep = outline::filter_keep(model, query);
        if self.derived.machine {
            self.derived.tops.keep_matching_groups(model, query, &mut keep);
        }
        Some(keep)
    }

    /// Rebuilds the tree rows if what they depend on changed.
    fn refresh_rows(&mut self, model: &Model) {
        let filter = &self.panes.filter.query;
        // A filter looks at names, statuses and models, which change without the shape changing.
        // So does an order by figures.
        let by_figures = !filter.is_empty() || self.panes.tree_sort != TreeSort::Arrival;
        // The model counts changes of the tree's shape itself: no pass over the threads per frame.
        let shape = if by_figures { model.generation } else { model.structure };
        let machine = self.derived.machine;
        let tops = machine.then_some(self.derived.tops.generation);
        let key = (shape, model.threads.len(), self.derived.rows.folds, filter.clone(), self.panes.tree_sort, tops);
        if self.derived.rows.key.as_ref() != Some(&key) {
            let keep = self.kept(model);
            let tops = machine.then_some(&self.derived.tops);
            self.derived.rows.list =
                outline::flatten(model, &self.panes.folded, keep.as_deref(), self.panes.tree_sort, tops);
            self.derived.rows.key = Some(key);
        }
    }

    /// How a thread shows right now (its subtree's activity as of the last refresh).
    pub fn shown(&self, model: &Model, idx: ThreadIdx) -> Shown {
        Shown::of(model.thread(idx), self.derived.activity.subtree(idx), self.derived.clock)
    }

    /// Counts over the whole model, as of the last refresh.
    pub fn activity(&self) -> &Activity {
        &self.derived.activity
    }

    /// Brings the derived state up to date with the model and the feed, before a frame: what the
    /// feed says of itself, the machine view's grouping, then the rows, follow and clamping.
    pub fn sync(&mut self, model: &Model, feed: &Feed) {
        let d = &mut self.derived;
        d.replay = !feed.live;
        d.live_source = feed.loses_on_quit();
        d.clock = Clock { now_ms: feed.now_ms, stall_ms: feed.stall_ms, ended: feed.ended.is_some() };
        d.machine = feed.machine.is_some();
        if let Some(snapshot) = feed.machine.as_ref() {
            // Regroups only when the snapshot or the tree's shape changed.
            d.tops.refresh(model, snapshot, feed.now_ms, feed.loading);
        }
        self.refresh(model);
        if self.derived.machine && !self.selection.chosen {
            self.select_newest_session(model);
        }
        let lanes = self.lanes(model).len();
        self.selection.lane = self.selection.lane.min(lanes.saturating_sub(1));
        let agents = model.threads.len().saturating_sub(self.derived.tops.hidden_len());
        self.selection.cost_row = self.selection.cost_row.min(agents.saturating_sub(1));
    }

    /// The machine view opens on the newest live session (the grouping lists it first, else the
    /// newest session): until the user acts, the cursor stays there as sessions are found.
    fn select_newest_session(&mut self, model: &Model) {
        let groups = &self.derived.tops.groups;
        let Some(&root) = groups.first().and_then(|a| a.projects.first()).and_then(|p| p.roots.first()) else {
            return;
        };
        if self.selection.node != Some(NodeId::Thread(root)) && root.index() < model.threads.len() {
            self.open_chain(model, root);
            self.select(NodeId::Thread(root));
            self.derived.rows.selected = self.selected_row();
        }
    }

    /// Brings the derived state up to date with the model: activity, rows, follow, the selection.
    pub fn refresh(&mut self, model: &Model) {
        let key = (model.generation, model.threads.len());
        if self.derived.activity_key != Some(key) {
            self.derived.activity = Activity::of(model);
            self.derived.activity_key = Some(key);
        }
        self.refresh_rows(model);
        if self.selection.follow && self.derived.follow_key != Some(model.generation) {
            self.derived.follow_key = Some(model.generation);
            self.follow_newest(model);
        }
        self.derived.rows.selected = self.selected_row();
        if self.derived.rows.selected.is_none() {
            // The selected node left the tree (a filter, a thread that moved): take the first row.
            self.selection.node = self.rows().first().map(|r| r.id);
            self.derived.rows.selected = self.selection.node.map(|_| 0);
            self.selection.lane = 0;
            self.panes.scroll = 0;
        }
        if self.selection.expanded.is_some_and(|t| t.index() >= model.threads.len()) {
            self.selection.expanded = None;
        }
    }

    /// Keeps what a frame drew: where things are, for the mouse and page sizes, and the scrolls
    /// as the content clamped them (`Home` asks for "as far as it goes"; the next `↓` starts there).
    pub fn place(&mut self, layout: Layout) {
        if let Some(scroll) = layout.scroll {
            self.panes.scroll = scroll;
        }
        if let Some(scroll) = layout.cost_scroll {
            self.panes.cost_scroll = scroll;
        }
        if let Some(listed) = layout.cost_listed {
            // A filter lists fewer agents: the cursor stays on one of them.
            self.selection.cost_row = self.selection.cost_row.min(listed.saturating_sub(1));
        }
        if let Some(scroll) = layout.overlay_scroll {
            self.panes.overlay_scroll = scroll;
        }
        if let Some(scroll) = layout.history_scroll {
            self.history.scroll = scroll;
        }
        if let Some(found) = &layout.found {
            let search = &mut self.panes.search;
            search.jump = None;
            search.at = found.at;
            search.note = Some(found.note.clone());
            self.panes.scroll = found.scroll;
        }
        self.layout = layout;
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
        self.selection.lane = lane;
    }

    /// Every node above a thread opened, so its row is in the tree: each ancestor, the turn and
    /// the card through which the chain passes.
    fn open_chain(&mut self, model: &Model, thread: ThreadIdx) {
        let mut changed = false;
        let chain: Vec<ThreadIdx> = model.ancestors(thread).collect();
        let folded = &mut self.panes.folded;
        if self.derived.machine {
            // The session's agent and project rows, above its root.
            if let Some(s) = chain.last().and_then(|&root| self.derived.tops.session(root)) {
                changed |= folded.remove(&NodeId::Agent(s.agent));
                changed |= folded.remove(&NodeId::Project(s.project));
            }
        }
        for pair in chain.windows(2) {
            let (c, p) = (pair[0], pair[1]);
            changed |= folded.remove(&NodeId::Thread(p));
            let turn = model.thread(c).card.as_deref().and_then(|card| model.thread(p).item(card)?.turn);
            if let Some(turn) = turn {
                changed |= folded.remove(&NodeId::Turn(p, turn as u32));
            }
            if let Some((first, _)) = group_of(model, p, c) {
                changed |= folded.remove(&NodeId::Group(p, first));
            }
        }
        if changed {
            self.derived.rows.folds += 1;
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
        if !self.panes.filter.query.is_empty() && !self.rows().iter().any(|r| r.id == NodeId::Thread(thread)) {
            self.panes.filter.query.clear();
            self.refresh_rows(model);
        }
        self.select(NodeId::Thread(thread));
        self.selection.follow = false;
    }

    /// The first `rows` agents of the cost table in its order (cost or tokens, largest first):
    /// those the filter keeps, less the aged-out sessions' (they left the screen). Remembered per
    /// model change; only those asked for are sorted (a partial selection finds them in linear
    /// time).
    pub fn agent_order(&self, model: &Model, rows: usize) -> Arc<AgentOrder> {
        let d = &self.derived;
        let sort = self.panes.sort;
        let filter = &self.panes.filter.query;
        let key = (model.generation, model.threads.len(), sort, rows, d.tops.generation, filter.clone());
        d.order.get(key, || {
            let keep = self.kept(model);
            let shown = |i: &ThreadIdx| !d.tops.is_hidden(*i) && keep.as_ref().is_none_or(|k| k[i.index()]);
            let mut order: Vec<ThreadIdx> =
                (0..model.threads.len()).map(|i| ThreadIdx(i as u32)).filter(shown).collect();
            let by_cost = |&i: &ThreadIdx| (std::cmp::Reverse(model.thread(i).cost.map_or(-1, |c| c.0)), i);
            let by_tokens = |&i: &ThreadIdx| (std::cmp::Reverse(i128::from(model.thread(i).tokens.total)), i);
            let key_of: &dyn Fn(&ThreadIdx) -> (std::cmp::Reverse<i128>, ThreadIdx) = match sort {
                Sort::Cost => &by_cost,
                Sort::Tokens => &by_tokens,
            };
            let listed = order.len();
            if rows < order.len() {
                order.select_nth_unstable_by_key(rows, key_of);
                order.truncate(rows);
            }
            order.sort_unstable_by_key(key_of);
            AgentOrder { first: order, listed }
        })
    }

    /// Cost per minute over the minute before the clock's now (stream time, or the wall clock of
    /// a live feed that is current), so a quiet stream decays to zero; `None` before any time has
    /// passed and once the feed has ended (nothing is spending: there is no rate).
    pub fn burn_per_min(&self) -> Option<Pico> {
        let d = &self.derived;
        if d.clock.ended {
            return None;
        }
        let &(last, total) = d.burn.back()?;
        // The clock never reads earlier than the newest sample (a seek clears the samples).
        let now = d.clock.now_ms.map_or(last, |ms| ms.div_euclid(1000)).max(last);
        let Some(from) = d.burn.iter().find(|s| s.0 >= now - 60).copied() else {
            return Some(Pico(0));
        };
        let mins = (now - from.0) as f64 / 60.0;
        (mins > 0.0).then(|| Pico(((total - from.1) as f64 / mins) as i128))
    }

    /// Notes the total cost at a stream time, one sample per stream second (bounded).
    pub fn sample_burn(&mut self, now_ms: Option<i64>, total: i128) {
        let Some(now) = now_ms else { return };
        let sec = now.div_euclid(1000);
        let burn = &mut self.derived.burn;
        match burn.back_mut() {
            Some(last) if last.0 == sec => last.1 = total,
            Some(last) if last.0 > sec => {
                // Time went backwards: a seek. The old curve no longer describes this stream.
                burn.clear();
                burn.push_back((sec, total));
            }
            _ => burn.push_back((sec, total)),
        }
        while burn.len() > SPARK_SAMPLES {
            burn.pop_front();
        }
    }
}

/// The card group of `parent` that holds `child`: its name (first lane) and the child's place in it.
fn group_of(model: &Model, parent: ThreadIdx, child: ThreadIdx) -> Option<(ThreadIdx, usize)> {
    let (groups, _) = outline::groups(model, model.thread(parent));
    groups.iter().find_map(|g| Some((g.first, g.lanes.iter().position(|&c| c == child)?)))
}
