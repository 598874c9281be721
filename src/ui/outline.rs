//! The agents tree as rows: sessions ▸ turns ▸ cards ▸ lanes (child threads) ▸ their cards ▸
//! grandchildren, any depth; then the unattributed and pending threads.
//!
//! Rows are small `Copy` records (a node handle, depth and tree guides); the text of a row is made
//! only for the rows on screen. The list is rebuilt only when the model, the folds or the filter
//! change (see `View::refresh`), and its cost is that of the open part of the tree: cards come from
//! a thread's children (append-only, registration order), never from a scan of its items.
//!
//! The pane does not go through `tui_tree_widget`: that widget wants every open row built as an
//! owned item and flattens them all on each render, which at 1,000 threads costs about as much as
//! this whole screen (`benches/render.rs` prints the comparison).

use std::hash::Hash;
use std::sync::Arc;

use super::memo::Memo;
use super::tops::Tops;
use crate::model::{AgentOp, Item, ItemKind, Model, Thread};
use crate::router::{Role, ThreadIdx};

/// The order of siblings in the tree (and of rows on the timeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// A node of the tree, stable while the model grows: selection and folds hold these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeId {
    Thread(ThreadIdx),
    /// A root's turn that spawned children: (thread, turn index).
    Turn(ThreadIdx, u32),
    /// Cards of one kind in one turn, named by their first lane (children are append-only, so the
    /// first lane of a group never changes).
    Group(ThreadIdx, ThreadIdx),
    Unattributed,
    /// Under a session's root: what its agent reported spending that no agent of it accounts for
    /// (a stream omits responses by design), so that the session's rows sum to its total.
    Spent(ThreadIdx),
    Pending,
    /// The machine view: every session of one agent (`claude`, `codex`, …), by its interned id.
    Agent(u16),
    /// The machine view: an agent's sessions in one working directory.
    Project(u32),
}

/// Whether a row has children, and whether they show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    Leaf,
    Open,
    Folded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub id: NodeId,
    pub depth: u16,
    pub fold: Fold,
    /// This row is its parent's last child (`└` rather than `├`).
    pub last: bool,
    /// Bit `d` set: the ancestor at depth `d + 1` has siblings below, so a `│` runs through.
    pub guides: u64,
    /// The row belongs to a session the machine view knows has ended: drawn dimmed.
    pub ended: bool,
}

/// Cards of one kind in one turn of a thread, and the lanes they opened.
#[derive(Debug, Clone)]
pub struct Group {
    /// The group's first lane, which names it ([`NodeId::Group`]) even when a filter hides it.
    pub first: ThreadIdx,
    pub turn: Option<usize>,
    pub label: &'static str,
    /// The agent's own name for its cards' call (`spawnAgent`, `Agent`, `task`), as the row shows it.
    pub tool: Option<Box<str>>,
    pub lanes: Vec<ThreadIdx>,
}

impl Group {
    /// The row's words for its cards: the agent's own tool, else what the call does.
    pub fn shown(&self) -> &str {
        self.tool.as_deref().unwrap_or(self.label)
    }
}

/// What a card did, in the words of the tree row (`⑂ spawn ×3`).
fn label_of(item: &Item) -> &'static str {
    match (&item.kind, item.op) {
        (ItemKind::SubAgentActivity, _) => AgentOp::Spawn.word(),
        (_, Some(op)) => op.word(),
        _ => "agent",
    }
}

/// The cards of a thread, grouped by (turn, kind), in the order their first lane registered; and
/// its children that have no card (registered from `thread/started` or `thread/read`).
pub fn groups(model: &Model, t: &Thread) -> (Vec<Group>, Vec<ThreadIdx>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut loose = Vec::new();
    for &c in &t.children {
        let child = model.thread(c);
        let Some(card) = child.card.as_deref() else {
            loose.push(c);
            continue;
        };
        let Some(item) = t.item(card) else {
            loose.push(c);
            continue;
        };
        let label = label_of(item);
        if let Some(g) = groups.iter_mut().find(|g| g.turn == item.turn && g.label == label) {
            g.lanes.push(c);
        } else {
            // A sub-agent activity's `tool` is its kind of event, not a call of the agent's.
            let tool = item.tool.clone().filter(|_| item.kind == ItemKind::Collab);
            groups.push(Group { first: c, turn: item.turn, label, tool, lanes: vec![c] });
        }
    }
    (groups, loose)
}

/// [`groups`] of a parent, with its loose children.
pub type Grouped = (Vec<Group>, Vec<ThreadIdx>);

/// The card groups of the last parent asked about, kept for one tree structure: keys and frames
/// over a card with 100k lanes must not regroup its children each time, only when the tree
/// changes (`model.structure`). Keyed by the tree's structure, the thread count (a seek may
/// replace the model) and the parent.
#[derive(Debug, Default)]
pub struct GroupCache(Memo<(u64, usize, ThreadIdx), Grouped>);

impl GroupCache {
    pub fn of(&self, model: &Model, parent: ThreadIdx) -> Arc<Grouped> {
        let key = (model.structure, model.threads.len(), parent);
        self.0.get(key, || groups(model, model.thread(parent)))
    }
}

/// The lanes a node shows in the lanes pane (a group row of the machine view: its sessions).
pub fn lanes_of(model: &Model, id: NodeId, cache: &GroupCache, tops: &Tops) -> Vec<ThreadIdx> {
    match id {
        NodeId::Agent(a) => tops.roots_of_agent(a).into_iter().filter(|t| t.index() < model.threads.len()).collect(),
        NodeId::Project(p) => tops
            .project_group(p)
            .map(|g| g.roots.iter().copied().filter(|t| t.index() < model.threads.len()).collect())
            .unwrap_or_default(),
        // A session's unattributed row shows the session's own lane.
        NodeId::Thread(t) | NodeId::Spent(t) if t.index() < model.threads.len() => vec![t],
        NodeId::Thread(_) | NodeId::Spent(_) => Vec::new(),
        NodeId::Turn(t, turn) => {
            if t.index() >= model.threads.len() {
                return Vec::new();
            }
            let g = cache.of(model, t);
            g.0.iter().filter(|g| g.turn == Some(turn as usize)).flat_map(|g| g.lanes.iter().copied()).collect()
        }
        NodeId::Group(t, first) => {
            if t.index() >= model.threads.len() {
                return Vec::new();
            }
            cache.of(model, t).0.iter().find(|g| g.first == first).map(|g| g.lanes.clone()).unwrap_or_default()
        }
        NodeId::Unattributed => model.unattributed.clone(),
        NodeId::Pending => pending(model),
    }
}

pub fn pending(model: &Model) -> Vec<ThreadIdx> {
    model
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| t.role == Role::Pending)
        .map(|(i, _)| ThreadIdx(i as u32))
        .collect()
}

/// Which threads a filter keeps: the matches and their ancestors (so a match keeps its place).
pub fn filter_keep(model: &Model, query: &str) -> Vec<bool> {
    let q = query.to_lowercase();
    let mut keep = vec![false; model.threads.len()];
    for i in 0..model.threads.len() {
        if !keep[i] && matches(model, ThreadIdx(i as u32), &q) {
            for a in model.ancestors(ThreadIdx(i as u32)) {
                if std::mem::replace(&mut keep[a.index()], true) {
                    break;
                }
            }
        }
    }
    keep
}

/// Whether a thread matches a (lower-case) filter query: by name (its label too: `scout` finds
/// the child spawned as the scout before its nickname arrives), status word or model.
pub fn matches(model: &Model, idx: ThreadIdx, q: &str) -> bool {
    let t = model.thread(idx);
    t.name().to_lowercase().contains(q)
        || super::label::of(model, idx).name.to_lowercase().contains(q)
        || t.status.as_str().contains(q)
        || t.model.as_ref().is_some_and(|m| m.as_str().to_lowercase().contains(q))
        || (q == "done" && t.status == crate::model::Status::Idle && t.parent.is_some())
        || t.waiting_on().is_some_and(|w| match w {
            crate::model::Wait::Approval => "approval".contains(q),
            crate::model::Wait::UserInput => "input".contains(q),
        })
}

/// A node's children, in display order; the same walk serves counting and emitting.
struct Walk<'a, S> {
    model: &'a Model,
    folded: &'a std::collections::HashSet<NodeId, S>,
    keep: Option<&'a [bool]>,
    sort: TreeSort,
    rows: Vec<Row>,
    /// Rows pushed now belong to an ended session.
    ended: bool,
}

/// Siblings in the chosen order; ties (and `Arrival`) keep registration order.
fn sort_siblings(model: &Model, sort: TreeSort, kids: &mut [ThreadIdx]) {
    let t = |i: &ThreadIdx| model.thread(*i);
    match sort {
        TreeSort::Arrival => {}
        TreeSort::Cost => kids.sort_by_key(|i| std::cmp::Reverse(t(i).subtree.cost.0)),
        TreeSort::Tokens => kids.sort_by_key(|i| std::cmp::Reverse(t(i).subtree.tokens.total)),
        TreeSort::Elapsed => kids.sort_by_key(|i| {
            let th = t(i);
            std::cmp::Reverse(th.last_ms.zip(th.first_ms).map_or(0, |(l, f)| l.saturating_sub(f)))
        }),
        TreeSort::Start => kids.sort_by_key(|i| t(i).first_ms.unwrap_or(i64::MAX)),
    }
}

/// A node waiting to be laid out, with what its row needs. The walk keeps these on its own
/// stack rather than recursing: a chain of agents as deep as the model allows cannot overflow
/// the call stack.
enum Task {
    Thread(ThreadIdx),
    /// A root's turn and the cards of that turn.
    Turn(ThreadIdx, usize, Vec<Group>),
    Group(ThreadIdx, Group),
    /// A session's unattributed spend.
    Spent(ThreadIdx),
}

struct Frame {
    task: Task,
    depth: u16,
    last: bool,
    guides: u64,
}

impl<S: std::hash::BuildHasher> Walk<'_, S> {
    fn kept(&self, t: ThreadIdx) -> bool {
        self.keep.is_none_or(|k| k.get(t.index()).copied().unwrap_or(false))
    }

    fn open(&self, id: NodeId) -> bool {
        // A filter shows every match: folds do not apply while it is on.
        self.keep.is_some() || !self.folded.contains(&id)
    }

    fn push(&mut self, id: NodeId, depth: u16, has_children: bool, last: bool, guides: u64) -> bool {
        let fold = match (has_children, has_children && self.open(id)) {
            (false, _) => Fold::Leaf,
            (true, true) => Fold::Open,
            (true, false) => Fold::Folded,
        };
        self.rows.push(Row { id, depth, fold, last, guides, ended: self.ended });
        fold == Fold::Open
    }

    /// Children guides: this row's own line continues below it unless it was the last.
    fn child_guides(depth: u16, last: bool, guides: u64) -> u64 {
        if depth == 0 || depth > 64 || last { guides } else { guides | (1 << (depth - 1)) }
    }

    /// A thread's children as tasks: a root's turns (a session's turns are the user's prompts),
    /// a child's cards directly (so depth grows by two per generation, not three), then the
    /// children no card announced.
    fn thread_kids(&self, idx: ThreadIdx) -> Vec<Task> {
        let model = self.model;
        let t = model.thread(idx);
        let (groups, mut loose) = groups(model, t);
        let groups: Vec<Group> = groups
            .into_iter()
            .filter_map(|mut g| {
                g.lanes.retain(|&c| self.kept(c));
                sort_siblings(model, self.sort, &mut g.lanes);
                (!g.lanes.is_empty()).then_some(g)
            })
            .collect();
        sort_siblings(model, self.sort, &mut loose);
        let mut kids: Vec<Task> = Vec::new();
        if t.role == Role::Root {
            let mut turns: Vec<usize> = groups.iter().filter_map(|g| g.turn).collect();
            turns.sort_unstable();
            turns.dedup();
            for turn in turns {
                let inner = groups.iter().filter(|g| g.turn == Some(turn)).cloned().collect();
                kids.push(Task::Turn(idx, turn, inner));
            }
            kids.extend(groups.into_iter().filter(|g| g.turn.is_none()).map(|g| Task::Group(idx, g)));
        } else {
            kids.extend(groups.into_iter().map(|g| Task::Group(idx, g)));
        }
        kids.extend(loose.into_iter().filter(|&c| self.kept(c)).map(Task::Thread));
        if has_spent(model, idx) {
            kids.push(Task::Spent(idx));
        }
        kids
    }

    /// Lays out `frames` and everything open below them, in order.
    fn run(&mut self, frames: Vec<Frame>) {
        let mut stack: Vec<Frame> = frames.into_iter().rev().collect();
        while let Some(Frame { task, depth, last, guides }) = stack.pop() {
            let kids: Vec<Task> = match task {
                Task::Thread(idx) => {
                    if self.model.thread(idx).children.is_empty() && !has_spent(self.model, idx) {
                        // Most threads of a swarm are leaves: no cards to group, nothing to allocate.
                        self.push(NodeId::Thread(idx), depth, false, last, guides);
                        continue;
                    }
                    let kids = self.thread_kids(idx);
                    if !self.push(NodeId::Thread(idx), depth, !kids.is_empty(), last, guides) {
                        continue;
                    }
                    kids
                }
                Task::Turn(t, turn, groups) => {
                    if !self.push(NodeId::Turn(t, turn as u32), depth, !groups.is_empty(), last, guides) {
                        continue;
                    }
                    groups.into_iter().map(|g| Task::Group(t, g)).collect()
                }
                Task::Group(t, g) => {
                    if !self.push(NodeId::Group(t, g.first), depth, true, last, guides) {
                        continue;
                    }
                    g.lanes.into_iter().map(Task::Thread).collect()
                }
                Task::Spent(t) => {
                    self.push(NodeId::Spent(t), depth, false, last, guides);
                    continue;
                }
            };
            let inner = Self::child_guides(depth, last, guides);
            let n = kids.len();
            for (i, task) in kids.into_iter().enumerate().rev() {
                stack.push(Frame { task, depth: depth + 1, last: i + 1 == n, guides: inner });
            }
        }
    }

    /// The machine view: agent ▸ project ▸ session rows, each session's tree below it. A group
    /// shows while a session in it is kept by the filter.
    fn machine(&mut self, tops: &Tops) {
        for agent in &tops.groups {
            let projects: Vec<(u32, Vec<ThreadIdx>)> = agent
                .projects
                .iter()
                .map(|p| {
                    (
                        p.id,
                        p.roots
                            .iter()
                            .copied()
                            .filter(|&r| r.index() < self.model.threads.len() && self.kept(r))
                            .collect::<Vec<_>>(),
                    )
                })
                .filter(|(_, roots)| !roots.is_empty())
                .collect();
            if projects.is_empty() {
                continue;
            }
            let all_ended = projects.iter().flat_map(|(_, r)| r).all(|&r| ended(tops, r));
            self.ended = all_ended;
            if !self.push(NodeId::Agent(agent.id), 0, true, true, 0) {
                continue;
            }
            let n = projects.len();
            for (i, (id, roots)) in projects.into_iter().enumerate() {
                let last = i + 1 == n;
                self.ended = roots.iter().all(|&r| ended(tops, r));
                if !self.push(NodeId::Project(id), 1, true, last, 0) {
                    continue;
                }
                let guides = Self::child_guides(1, last, 0);
                let m = roots.len();
                for (k, root) in roots.into_iter().enumerate() {
                    self.ended = ended(tops, root);
                    self.run(vec![Frame { task: Task::Thread(root), depth: 2, last: k + 1 == m, guides }]);
                }
            }
        }
    }

    /// `threads` as the children of a top row (unattributed, pending).
    fn under_top(&mut self, threads: Vec<ThreadIdx>) {
        let n = threads.len();
        let frames = threads.into_iter().enumerate().map(|(i, t)| Frame {
            task: Task::Thread(t),
            depth: 1,
            last: i + 1 == n,
            guides: 0,
        });
        self.run(frames.collect());
    }
}

/// Every visible row of the tree, top to bottom.
pub fn flatten<S: std::hash::BuildHasher>(
    model: &Model,
    folded: &std::collections::HashSet<NodeId, S>,
    keep: Option<&[bool]>,
    sort: TreeSort,
    tops: Option<&Tops>,
) -> Vec<Row> {
    let mut walk = Walk { model, folded, keep, sort, rows: Vec::new(), ended: false };
    if let Some(tops) = tops {
        walk.machine(tops);
    } else {
        let mut sessions = model.sessions.clone();
        sort_siblings(model, sort, &mut sessions);
        let roots: Vec<Frame> = sessions
            .into_iter()
            .filter(|&root| walk.kept(root))
            .map(|root| Frame { task: Task::Thread(root), depth: 0, last: true, guides: 0 })
            .collect();
        walk.run(roots);
    }
    walk.ended = false;
    let orphans: Vec<ThreadIdx> = model.unattributed.iter().copied().filter(|&t| walk.kept(t)).collect();
    if !orphans.is_empty() && walk.push(NodeId::Unattributed, 0, true, true, 0) {
        walk.under_top(orphans);
    }
    let waiting: Vec<ThreadIdx> = pending(model).into_iter().filter(|&t| walk.kept(t)).collect();
    if !waiting.is_empty() && walk.push(NodeId::Pending, 0, true, true, 0) {
        walk.under_top(waiting);
    }
    walk.rows
}

/// A session root with spend its agent reported and no agent of it accounts for.
fn has_spent(model: &Model, idx: ThreadIdx) -> bool {
    let part = model.unattributed_part(idx);
    part.tokens.total > 0 || part.cost > crate::model::prices::Pico::default()
}

fn ended(tops: &Tops, root: ThreadIdx) -> bool {
    tops.session(root).is_some_and(|s| s.state == Some(crate::source::seen::State::Ended))
}

impl Row {
    pub fn has_children(&self) -> bool {
        self.fold != Fold::Leaf
    }

    pub fn is_open(&self) -> bool {
        self.fold == Fold::Open
    }
}

/// The node a row's parent is (for ← on a leaf), by walking up to the nearest shallower row.
pub fn parent_row(rows: &[Row], at: usize) -> Option<usize> {
    let depth = rows.get(at)?.depth;
    (0..at).rev().find(|&i| rows[i].depth < depth)
}
