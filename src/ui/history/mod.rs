//! The history view (`H`): past root sessions from the run store, newest first, as `swarmtop
//! history` lists them; filtered with `/`; Enter opens one, as a replay of its files when they are
//! all still there, else as the store keeps it (its runs, their figures and their text).
//!
//! The store is read off the UI thread (`commands::past`): what it read arrives as a [`Loaded`],
//! which the runtime hands to [`HistoryView::take`]. Everything here is plain values, already
//! sanitised and formatted where it came in (times in the user's zone), so that drawing it is a
//! pure function of the view.

pub(super) mod keys;
pub(super) mod list;
pub(super) mod stored;

use std::sync::Arc;

use crate::model::prices::Pico;
use crate::model::{AgentOp, Item, ItemKind, ItemStatus, Status, Tokens};
use crate::wire::Clean;

use super::status::Shown;

/// A past root session, as the history lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Past {
    pub id: Clean,
    pub agent: Clean,
    pub name: Clean,
    pub project: Option<Clean>,
    /// `2026-02-12 17:02` in the user's zone.
    pub start: Option<String>,
    /// How long from its first line to its last.
    pub elapsed_ms: Option<i64>,
    pub status: Clean,
    pub agents: u32,
    pub depth: u32,
    pub tokens: Tokens,
    pub cost: Option<Pico>,
    /// Every file it was read from was still there at the last sync.
    pub files_present: bool,
}

impl Past {
    /// Whether the filter `query` (lower case) names it: its id, agent, name, project or status.
    fn matches(&self, query: &str) -> bool {
        let has = |c: &Clean| c.as_str().to_lowercase().contains(query);
        has(&self.id)
            || has(&self.agent)
            || has(&self.name)
            || has(&self.status)
            || self.project.as_ref().is_some_and(has)
    }
}

/// One run of a stored session (a thread of its tree), with its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastRun {
    pub thread: Clean,
    pub depth: u32,
    pub name: Clean,
    pub agent_type: Option<Clean>,
    pub brief: Option<Clean>,
    pub model: Option<Clean>,
    pub status: Clean,
    pub child: bool,
    pub elapsed_ms: Option<i64>,
    pub turns: u32,
    pub tool_calls: u32,
    /// Its own spend.
    pub tokens: Tokens,
    pub cost: Option<Pico>,
    pub answer: Option<Clean>,
    pub files_changed: Vec<Clean>,
    pub entries: Vec<PastItem>,
}

/// One item of a stored run: what its lane showed, capped as the store keeps it, with the
/// agent's own name for a call (`task`, `Agent`, `spawnAgent`) and the turn it was in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastItem {
    /// Its own id (empty in a store older than schema 4).
    pub id: Clean,
    pub kind: Clean,
    pub status: ItemStatus,
    pub title: Clean,
    pub text: Clean,
    /// Its turn, counted from 0 (none in a store older than schema 4).
    pub turn: Option<u32>,
    /// The agent's own name for the call, for display only.
    pub tool: Option<Clean>,
    pub op: Option<AgentOp>,
    pub exit_code: Option<i64>,
    /// The runs it names (a wait's agents, a spawn's new one), as the tree names them.
    pub receivers: Vec<Clean>,
    /// Why a call failed, in the agent's own words (none in a store older than schema 6).
    pub why: Option<Clean>,
}

impl PastItem {
    /// As the model holds an item, for the lanes to draw: its kind by its stored name, its status,
    /// the agent's own name for the call; no thread of its own (the names it gives its receivers
    /// go beside it, [`Self::receivers`]).
    pub fn item(&self) -> Item {
        let mut item = Item::new(self.id.as_str(), ItemKind::of(self.kind.as_str()));
        item.status = self.status;
        item.title = self.title.clone();
        item.text = self.text.clone();
        item.turn = self.turn.map(|t| t as usize);
        item.tool = self.tool.as_ref().map(|t| t.as_str().into());
        item.op = self.op;
        item.exit_code = self.exit_code;
        item.why = self.why.clone().map(Box::new);
        item
    }
}

/// An act on a stored session (an interrupt, a guard's refusal), as `history SESSION` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastAct {
    /// `2026-02-12 17:02` in the user's zone.
    pub at: String,
    /// `interrupt`, `deny`.
    pub kind: Clean,
    /// The agent acted on (a thread's or the session's id).
    pub target: Clean,
    /// Who acted (`guard`, `swarmtop monitor`) and through what (`hook`, `tee`, `signal`).
    pub by: Clean,
    pub via: Clean,
    /// The turn, the refused call, the pid.
    pub detail: Clean,
    /// `interrupted`, `denied: depth 2 > 1`, or why it failed.
    pub outcome: Clean,
}

impl PastAct {
    /// As `history SESSION` prints it: `when  what target by who via how (detail): result`.
    pub fn line(&self) -> String {
        let detail = if self.detail.is_empty() { String::new() } else { format!(" ({})", self.detail) };
        format!("{}  {} {} by {} via {}{detail}: {}", self.at, self.kind, self.target, self.by, self.via, self.outcome)
    }
}

/// A session as the store keeps it (its files are gone, or are rows of another agent's store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub session: Past,
    /// In the store's order: a run's parent comes before it.
    pub runs: Vec<PastRun>,
    /// What was done to it, oldest first.
    pub acts: Vec<PastAct>,
}

impl Stored {
    /// The acts on run `run`: those aimed at its thread, and on the first (the root) those aimed
    /// at no run the store holds (the session itself), so that every act shows somewhere.
    pub fn acts_on(&self, run: usize) -> impl Iterator<Item = &PastAct> {
        let thread = self.runs.get(run).map(|r| &r.thread);
        self.acts
            .iter()
            .filter(move |a| Some(&a.target) == thread || (run == 0 && !self.runs.iter().any(|r| r.thread == a.target)))
    }
}

/// What the store holds and how much it read, for the `d` view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFacts {
    pub path: Clean,
    /// Bytes the store takes on disk.
    pub bytes: u64,
    /// Bytes of the agents' files it indexed.
    pub indexed: u64,
    pub sessions: u64,
    pub runs: u64,
}

/// What a read of the store brought.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// The sessions (newest first), and the store's size; or why they could not be read.
    Listing(Result<Arc<[Past]>, String>, Option<StoreFacts>),
    /// One session from the store, or why it could not be opened.
    Stored(Result<Box<Stored>, String>),
    /// The store's size alone (read when the monitor starts, for `d`).
    Store(StoreFacts),
}

/// The list as last read.
#[derive(Debug, Clone, Default)]
pub enum Listing {
    #[default]
    Unread,
    Reading,
    Failed(String),
    Ready(Arc<[Past]>),
}

/// A session opened from the list.
#[derive(Debug, Clone)]
pub enum Opened {
    /// Asked of the store (or its files being read for a replay).
    Opening(Clean),
    Failed(String),
    Ready(Box<Stored>),
}

/// The history's filter (`/`): applies while non-empty.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub query: String,
    /// Keys go to the query (after `/`, until Enter or Esc).
    pub typing: bool,
}

/// What a key in the history asks of the shell, which reads the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// Sync the store and read its sessions again.
    List,
    /// Open this session.
    Open(String),
}

/// The history view's state.
#[derive(Debug, Clone, Default)]
pub struct HistoryView {
    pub open: bool,
    pub listing: Listing,
    pub store: Option<StoreFacts>,
    pub filter: Filter,
    /// Selected row among those the filter keeps.
    pub selected: usize,
    /// A session opened from the store (drawn over the list).
    pub opened: Option<Opened>,
    /// The opened session's selected run.
    pub run: usize,
    /// Lines scrolled down the selected run's text.
    pub scroll: usize,
    /// This screen is a replay opened from a history list: Esc at its top goes back there.
    pub nested: bool,
}

impl HistoryView {
    /// The sessions the filter keeps, as indices into the listing.
    pub fn shown(&self) -> Vec<usize> {
        let Listing::Ready(all) = &self.listing else { return Vec::new() };
        let q = self.filter.query.to_lowercase();
        all.iter().enumerate().filter(|(_, p)| q.is_empty() || p.matches(&q)).map(|(i, _)| i).collect()
    }

    /// The selected session, if the list has one.
    pub fn selected(&self) -> Option<&Past> {
        let Listing::Ready(all) = &self.listing else { return None };
        let shown = self.shown();
        shown.get(self.selected.min(shown.len().saturating_sub(1))).and_then(|&i| all.get(i))
    }

    /// Takes what a read of the store brought.
    pub fn take(&mut self, loaded: Loaded) {
        match loaded {
            Loaded::Listing(listing, store) => {
                self.listing = match listing {
                    Ok(all) => Listing::Ready(all),
                    Err(why) => Listing::Failed(why),
                };
                if store.is_some() {
                    self.store = store;
                }
                self.selected = self.selected.min(self.shown().len().saturating_sub(1));
            }
            Loaded::Store(facts) => self.store = Some(facts),
            // A session the user has left meanwhile stays closed.
            Loaded::Stored(_) if self.opened.is_none() => {}
            Loaded::Stored(stored) => {
                self.opened = Some(match stored {
                    Ok(s) => Opened::Ready(s),
                    Err(why) => Opened::Failed(why),
                });
                self.run = 0;
                self.scroll = 0;
            }
        }
    }
}

/// How a stored status shows: the monitor's glyphs and styles, a finished child's idle as done.
pub fn shown(status: &str, child: bool) -> Shown {
    let s = match status {
        "pending" => Status::Pending,
        "running" => Status::Running,
        "waiting" => Status::Waiting,
        "retrying" => Status::Retrying,
        "failed" => Status::Failed,
        "interrupted" => Status::Interrupted,
        "closed" => Status::Closed,
        _ if child => return Shown::Done,
        _ => Status::Idle,
    };
    Shown::Is(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sanitize_line;

    fn past(id: &str, agent: &str, project: &str) -> Past {
        Past {
            id: sanitize_line(id),
            agent: sanitize_line(agent),
            name: sanitize_line("lead"),
            project: Some(sanitize_line(project)),
            start: None,
            elapsed_ms: None,
            status: sanitize_line("idle"),
            agents: 1,
            depth: 0,
            tokens: Tokens::default(),
            cost: None,
            files_present: true,
        }
    }

    #[test]
    fn the_filter_keeps_sessions_by_agent_project_or_id_and_the_cursor_stays_in_range() {
        let mut h = HistoryView::default();
        let all: Arc<[Past]> = vec![past("a1", "alpha", "/w/one"), past("b2", "beta", "/w/two")].into();
        h.selected = 5;
        h.take(Loaded::Listing(Ok(all), None));
        assert_eq!(h.selected, 1, "clamped to the list");
        h.filter.query = "TWO".to_owned();
        assert_eq!(h.shown(), vec![1]);
        assert_eq!(h.selected().map(|p| p.id.as_str()), Some("b2"));
        h.filter.query = "alp".to_owned();
        assert_eq!(h.shown(), vec![0]);
        h.filter.query = "nothing".to_owned();
        assert!(h.selected().is_none());
    }

    #[test]
    fn a_stored_session_that_arrives_after_the_user_left_stays_closed() {
        let mut h = HistoryView::default();
        let stored = Stored { session: past("a1", "alpha", "/w"), runs: Vec::new(), acts: Vec::new() };
        h.take(Loaded::Stored(Ok(Box::new(stored))));
        assert!(h.opened.is_none());
    }
}
