//! The machine view's top rows: agent (`claude`, `codex`, …) ▸ project (the working directory)
//! ▸ session (its root thread, whose spawn tree follows as everywhere else).
//!
//! Which root belongs where comes from the discovery snapshot (`Seen`: the agent, the session
//! id, the project, live/idle/ended). The grouping is rebuilt only when the snapshot or the
//! tree's shape changes, never per frame; group ids are interned and never reused, so folds and
//! the selection hold across rebuilds. Ended sessions whose last activity is older than the keep
//! bound leave the rows, and are counted.

use std::cmp::Reverse;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::memo::Memo;
use crate::model::prices::Pico;
use crate::model::{Model, Rollup};
use crate::router::{Role, ThreadIdx};
use crate::source::proc::Usage;
use crate::source::seen::{Snapshot, State};
use crate::wire::sanitize_line;

/// The agent group of roots no session of the snapshot names (a thread whose root file is
/// outside the window, or a frame drawn before the first snapshot).
const OTHER: &str = "other";

/// What the screen knows of one session beyond its threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Session {
    /// `None`: no session of the snapshot names this root.
    pub state: Option<State>,
    pub pid: Option<u32>,
    pub usage: Option<Usage>,
    /// Wall time of its last activity (unix ms).
    pub last_activity_ms: Option<i64>,
    pub agent: u16,
    pub project: u32,
}

/// A project (working directory) as its row shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub agent: u16,
    /// The folder's own name (`web`), or `?` when the session did not say where it ran.
    pub name: String,
    /// The whole path, `~`-shortened (empty when unknown).
    pub path: String,
    raw: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectGroup {
    pub id: u32,
    /// Its sessions' roots, live first, then by newest activity.
    pub roots: Vec<ThreadIdx>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentGroup {
    pub id: u16,
    pub projects: Vec<ProjectGroup>,
}

/// Counts of the last rebuild, for the header and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Sessions on screen.
    pub shown: usize,
    pub live: usize,
    pub idle: usize,
    pub ended: usize,
    /// Ended sessions left out because their last activity is older than the keep bound.
    pub aged_out: usize,
    /// Sessions found whose lines have not come yet (the newest are read first): counted, listed
    /// once they come.
    pub loading: usize,
}

#[derive(Debug, Default)]
pub struct Tops {
    /// The user's home, for `~/…` (handed in: the screen reads no environment).
    pub home: Option<String>,
    /// How long an ended session stays after its last activity (`None`: for ever).
    pub keep_ms: Option<i64>,
    agents: Vec<String>,
    projects: Vec<Project>,
    /// Each project's id by its agent and raw path (a regroup of 50,000 sessions looked each one's
    /// project up in a list of all of them).
    project_ids: FxHashMap<(u16, Option<String>), u32>,
    pub groups: Vec<AgentGroup>,
    sessions: FxHashMap<ThreadIdx, Session>,
    pub counts: Counts,
    /// Roots of the sessions aged out: off the screen, and out of its totals.
    pub aged_roots: Vec<ThreadIdx>,
    /// Every thread of those sessions (their roots' subtrees).
    hidden: FxHashSet<ThreadIdx>,
    /// Bumped whenever the groups change: the rows depend on it.
    pub generation: u64,
    key: Option<(u64, usize, usize, bool)>,
    snapshot: Option<Arc<Snapshot>>,
    /// Each group row's figures, once per change of the model or the grouping (summed per row
    /// and per frame, they were most of what a quiet machine view drew).
    figures: Memo<(u64, usize, u64), GroupFigures>,
}

/// What a group row (an agent, a project) adds up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub sessions: usize,
    pub live: usize,
    pub tokens: u64,
    /// `None` when no session of the group is priced.
    pub cost: Option<Pico>,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.sessions += o.sessions;
        self.live += o.live;
        self.tokens = self.tokens.saturating_add(o.tokens);
        self.cost = match (self.cost, o.cost) {
            (Some(a), Some(b)) => Some(Pico(a.0.saturating_add(b.0))),
            (a, b) => a.or(b),
        };
    }
}

/// Every group's figures, by agent and by project id.
#[derive(Debug, Default)]
pub struct GroupFigures {
    agents: FxHashMap<u16, Figures>,
    projects: FxHashMap<u32, Figures>,
}

impl GroupFigures {
    pub fn agent(&self, id: u16) -> Figures {
        self.agents.get(&id).copied().unwrap_or_default()
    }

    pub fn project(&self, id: u32) -> Figures {
        self.projects.get(&id).copied().unwrap_or_default()
    }
}

impl Tops {
    /// The agent's name (sanitised).
    pub fn agent(&self, id: u16) -> &str {
        self.agents.get(usize::from(id)).map_or(OTHER, String::as_str)
    }

    pub fn project(&self, id: u32) -> Option<&Project> {
        self.projects.get(id as usize)
    }

    /// The session a root thread is, when the machine view groups it.
    pub fn session(&self, root: ThreadIdx) -> Option<&Session> {
        self.sessions.get(&root)
    }

    pub fn agent_group(&self, id: u16) -> Option<&AgentGroup> {
        self.groups.iter().find(|g| g.id == id)
    }

    pub fn project_group(&self, id: u32) -> Option<&ProjectGroup> {
        self.groups.iter().flat_map(|g| &g.projects).find(|p| p.id == id)
    }

    /// A thread of a session aged out: not on the screen, not in its totals.
    pub fn is_hidden(&self, idx: ThreadIdx) -> bool {
        self.hidden.contains(&idx)
    }

    /// Threads of the aged-out sessions.
    pub fn hidden_len(&self) -> usize {
        self.hidden.len()
    }

    /// What the aged-out sessions add up to (their roots' subtrees), for `d`.
    pub fn aged(&self, model: &Model) -> Rollup {
        let mut sum = Rollup::default();
        for &root in &self.aged_roots {
            sum = sum.plus(&model.spent(root));
        }
        sum
    }

    /// The totals of what the screen shows: `all` (every thread) less the aged-out sessions.
    pub fn shown(&self, model: &Model, all: &Rollup) -> Rollup {
        let aged = self.aged(model);
        Rollup {
            threads: all.threads.saturating_sub(aged.threads),
            tokens: all.tokens.saturating_minus(&aged.tokens),
            cost: all.cost - aged.cost,
            priced: all.priced.saturating_sub(aged.priced),
            by_table: all.by_table.saturating_sub(aged.by_table),
            by_agent: all.by_agent.saturating_sub(aged.by_agent),
        }
    }

    /// A filter that names an agent or a project (its folder or path) keeps every session in it,
    /// each with its whole tree.
    pub fn keep_matching_groups(&self, model: &Model, query: &str, keep: &mut [bool]) {
        let q = query.to_lowercase();
        for agent in &self.groups {
            let agent_hit = self.agent(agent.id).to_lowercase().contains(&q);
            for p in &agent.projects {
                let hit = agent_hit
                    || self
                        .project(p.id)
                        .is_some_and(|pr| pr.name.to_lowercase().contains(&q) || pr.path.to_lowercase().contains(&q));
                if hit {
                    for &r in p.roots.iter().filter(|r| r.index() < model.threads.len()) {
                        keep_subtree(model, r, keep);
                    }
                }
            }
        }
    }

    /// Every root under a group row, in row order.
    /// Every group row's figures as `model` has them now.
    pub fn figures(&self, model: &Model) -> Arc<GroupFigures> {
        self.figures.get((model.generation, model.threads.len(), self.generation), || {
            let mut out = GroupFigures::default();
            for agent in &self.groups {
                let mut of_agent = Figures::default();
                for p in &agent.projects {
                    let mut of_project = Figures::default();
                    for &r in p.roots.iter().filter(|r| r.index() < model.threads.len()) {
                        let spent = model.spent(r);
                        let live = self.session(r).is_some_and(|s| s.state == Some(State::Live));
                        let one = Figures {
                            sessions: 1,
                            live: usize::from(live),
                            tokens: spent.tokens.total,
                            cost: spent.cost_usd(),
                        };
                        of_project.add(&one);
                    }
                    of_agent.add(&of_project);
                    out.projects.insert(p.id, of_project);
                }
                out.agents.insert(agent.id, of_agent);
            }
            out
        })
    }

    pub fn roots_of_agent(&self, id: u16) -> Vec<ThreadIdx> {
        self.agent_group(id)
            .map(|g| g.projects.iter().flat_map(|p| p.roots.iter().copied()).collect())
            .unwrap_or_default()
    }

    fn intern_agent(&mut self, name: &str) -> u16 {
        let clean = sanitize_line(name).to_string();
        if let Some(i) = self.agents.iter().position(|a| *a == clean) {
            return i as u16;
        }
        self.agents.push(clean);
        (self.agents.len() - 1) as u16
    }

    fn intern_project(&mut self, agent: u16, raw: Option<&str>) -> u32 {
        let key = (agent, raw.map(str::to_owned));
        if let Some(&i) = self.project_ids.get(&key) {
            return i;
        }
        let (name, path) = match raw {
            Some(raw) => {
                let trimmed = raw.trim_end_matches('/');
                let name = trimmed.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(raw);
                let short = match self.home.as_deref() {
                    Some(h) if !h.is_empty() && h != "/" && trimmed == h => "~".to_owned(),
                    Some(h) if !h.is_empty() && h != "/" && trimmed.starts_with(&format!("{h}/")) => {
                        format!("~{}", &trimmed[h.len()..])
                    }
                    _ => trimmed.to_owned(),
                };
                // A project known only by its folder's name (no `/`: not a path yet) has no path to add.
                let path = if trimmed.contains('/') { sanitize_line(&short).to_string() } else { String::new() };
                (sanitize_line(name).to_string(), path)
            }
            None => ("?".to_owned(), String::new()),
        };
        self.projects.push(Project { agent, name, path, raw: key.1.clone() });
        let id = (self.projects.len() - 1) as u32;
        self.project_ids.insert(key, id);
        id
    }

    /// Regroups the roots if the tree's shape or the snapshot changed since the last call; `now_ms`
    /// (the wall clock) ages ended sessions out; `loading`: the source still reads what was on
    /// disk (sessions not read yet are counted). Returns whether the groups changed.
    pub fn refresh(&mut self, model: &Model, snapshot: &Arc<Snapshot>, now_ms: Option<i64>, loading: bool) -> bool {
        let key = (model.structure, model.threads.len(), model.sessions.len(), loading);
        // The same snapshot as last time is the same one shared, not 50,000 rows to compare.
        let same = self.snapshot.as_ref().is_some_and(|s| Arc::ptr_eq(s, snapshot) || **s == **snapshot);
        if self.key == Some(key) && same {
            return false;
        }
        self.key = Some(key);
        self.snapshot = Some(Arc::clone(snapshot));
        let before: Vec<(ThreadIdx, Option<State>)> = self.states();
        let groups = self.build(model, snapshot, now_ms, loading);
        // Rows carry each session's ended state: a change of state is a change of rows too.
        if groups == self.groups && self.states() == before {
            return false;
        }
        self.groups = groups;
        self.generation += 1;
        true
    }

    /// Each listed root's state, in row order.
    fn states(&self) -> Vec<(ThreadIdx, Option<State>)> {
        self.groups
            .iter()
            .flat_map(|g| &g.projects)
            .flat_map(|p| &p.roots)
            .map(|&r| (r, self.sessions.get(&r).and_then(|s| s.state)))
            .collect()
    }

    fn hide_subtree(&mut self, model: &Model, root: ThreadIdx) {
        let mut stack = vec![root];
        while let Some(t) = stack.pop() {
            if self.hidden.insert(t) {
                stack.extend_from_slice(&model.thread(t).children);
            }
        }
    }

    fn build(&mut self, model: &Model, snapshot: &Snapshot, now_ms: Option<i64>, loading: bool) -> Vec<AgentGroup> {
        let roots: FxHashMap<&str, ThreadIdx> = model.sessions.iter().map(|&r| (&*model.thread(r).id, r)).collect();
        // A tee's session is named by a thread of its stream, not always the root: its root is
        // the top of that thread's chain (a scan of the threads, once per snapshot, only then).
        let mut by_id: Option<FxHashMap<&str, ThreadIdx>> = None;
        self.sessions.clear();
        self.counts = Counts::default();
        self.aged_roots.clear();
        self.hidden.clear();
        for seen in &snapshot.sessions {
            let root = roots.get(seen.id.as_str()).copied().or_else(|| {
                let all = by_id.get_or_insert_with(|| {
                    model.threads.iter().enumerate().map(|(i, t)| (&*t.id, ThreadIdx(i as u32))).collect()
                });
                let t = *all.get(seen.id.as_str())?;
                model.ancestors(t).last().filter(|&r| model.thread(r).role == Role::Root)
            });
            let aged = seen.state == State::Ended
                && matches!((self.keep_ms, now_ms, seen.last_activity_ms),
                    (Some(keep), Some(now), Some(last)) if now.saturating_sub(last) > keep);
            let Some(root) = root else {
                self.counts.loading += usize::from(loading && !aged);
                continue;
            };
            if self.sessions.contains_key(&root) {
                continue;
            }
            let agent = self.intern_agent(seen.tool);
            let project = self.intern_project(agent, seen.project());
            let session = Session {
                state: Some(seen.state),
                pid: seen.pid,
                usage: seen.usage,
                last_activity_ms: seen.last_activity_ms,
                agent,
                project,
            };
            self.sessions.insert(root, session);
            if aged {
                self.counts.aged_out += 1;
                continue;
            }
            match seen.state {
                State::Live => self.counts.live += 1,
                State::Idle => self.counts.idle += 1,
                State::Ended => self.counts.ended += 1,
            }
        }
        let mut listed: Vec<(ThreadIdx, Session)> = Vec::new();
        for &root in &model.sessions {
            let session = if let Some(s) = self.sessions.get(&root) {
                *s
            } else {
                let agent = self.intern_agent(OTHER);
                let project = self.intern_project(agent, None);
                let s = Session { state: None, pid: None, usage: None, last_activity_ms: None, agent, project };
                self.sessions.insert(root, s);
                s
            };
            let aged = session.state == Some(State::Ended)
                && matches!((self.keep_ms, now_ms, session.last_activity_ms),
                    (Some(keep), Some(now), Some(last)) if now.saturating_sub(last) > keep);
            if aged {
                self.aged_roots.push(root);
                self.hide_subtree(model, root);
            } else {
                listed.push((root, session));
            }
        }
        self.counts.shown = listed.len();
        // Live first, then idle, ended and unlisted; newest activity first within each.
        let rank = |(root, s): &(ThreadIdx, Session)| {
            let state = match s.state {
                Some(State::Live) => 0,
                Some(State::Idle) => 1,
                Some(State::Ended) => 2,
                None => 3,
            };
            let last = s.last_activity_ms.or(model.thread(*root).last_ms).unwrap_or(i64::MIN);
            (state, Reverse(last), *root)
        };
        listed.sort_by_key(rank);
        // Groups take the rank of their best session: the sorted order, first seen first.
        let mut groups: Vec<AgentGroup> = Vec::new();
        // Where each project's group is (its agent's group, its place there).
        let mut placed: FxHashMap<u32, (usize, usize)> = FxHashMap::default();
        for (root, s) in listed {
            if let Some(&(g, p)) = placed.get(&s.project) {
                groups[g].projects[p].roots.push(root);
                continue;
            }
            let g = groups.iter().position(|g| g.id == s.agent).unwrap_or_else(|| {
                groups.push(AgentGroup { id: s.agent, projects: Vec::new() });
                groups.len() - 1
            });
            placed.insert(s.project, (g, groups[g].projects.len()));
            groups[g].projects.push(ProjectGroup { id: s.project, roots: vec![root] });
        }
        groups
    }
}

/// Marks a root and everything below it kept.
fn keep_subtree(model: &Model, root: ThreadIdx, keep: &mut [bool]) {
    let mut stack = vec![root];
    while let Some(t) = stack.pop() {
        if let Some(k) = keep.get_mut(t.index()) {
            *k = true;
            stack.extend(model.thread(t).children.iter().copied().filter(|c| c.index() < model.threads.len()));
        }
    }
}
