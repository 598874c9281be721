//! One thread (root or child) as the screen and `stats` see it.

use std::sync::Arc;

use super::account::Account;
use super::item::Item;
use super::kept::{Ids, Kept, Named};
use super::prices::Pico;
use super::tokens::{CostSource, Rollup, Tokens};
use crate::router::{Role, ThreadIdx, Via};
use crate::wire::Clean;
pub use crate::wire::fact::{ContextFill, Status, Wait};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    InProgress,
    Completed,
    Failed,
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct Turn {
    pub id: Box<str>,
    pub status: TurnStatus,
    pub started_ms: Option<i64>,
    pub completed_ms: Option<i64>,
    /// Items of this turn, in first-seen order (ordinals in the thread's items; those the items
    /// bound dropped are forgotten here too, all but the turn's opening ones).
    pub items: Vec<usize>,
    pub error: Option<Clean>,
    /// When its agent said it went idle while the turn was still open: Codex marks the thread
    /// `idle` a moment before it writes `turn/completed` (every turn of the 0.171.0 captures), and
    /// the turn ended when the agent stopped, not when its record followed.
    pub idle_ms: Option<i64>,
    /// Ended by the source's word that its process was gone ([`super::Model::stopped`]), not by
    /// the agent's: undone if the source finds it running after all.
    pub cut_short: bool,
}

impl Named for Turn {
    fn name(&self) -> &str {
        &self.id
    }
}

#[derive(Debug, Clone)]
pub struct Thread {
    /// Shared with the router's registry: stored once.
    pub id: Arc<str>,
    pub role: Role,
    pub parent: Option<ThreadIdx>,
    pub depth: u32,
    pub via: Option<Via>,
    /// Id of the parent's item that announced this thread.
    pub card: Option<Box<str>>,
    /// Registered children, append-only, in registration order: the parent's catalog.
    pub children: Vec<ThreadIdx>,
    pub nickname: Option<Clean>,
    pub agent_path: Option<Clean>,
    pub agent_role: Option<Clean>,
    pub model: Option<Clean>,
    pub status: Status,
    /// What a waiting thread waits for (read it through [`Thread::waiting_on`]).
    pub(super) wait: Option<Wait>,
    /// The status a retrying thread returns to on its next line.
    pub(super) before_retry: Option<Status>,
    /// Its turns as the turns bound keeps them: `len` counts them all.
    pub turns: Kept<Turn>,
    /// Ordinals of the turns held, by id.
    pub(super) turn_index: Ids,
    /// Its items as the items bound keeps them: `len` counts them all.
    pub items: Kept<Item>,
    /// Ordinals of the items held, by id.
    pub(super) item_index: Ids,
    /// The item the last item line named: deltas come in runs for one item, and comparing one
    /// id is cheaper than hashing it.
    pub(super) last_item: Option<usize>,
    pub tokens: Tokens,
    pub context: Option<ContextFill>,
    /// The active status [`super::Model::stopped`] interrupted, kept until the source finds the
    /// session running after all (or the agent says how it stands).
    pub cut_short: Option<Status>,
    /// What it spent: by the price table; else the agent's own figure for it; $0 while it has
    /// used nothing. `None` only for tokens with no price and no figure from the agent: unpriced.
    pub cost: Option<Pico>,
    /// Where `cost` came from.
    pub cost_source: CostSource,
    /// This thread plus all its descendants.
    pub subtree: Rollup,
    pub first_ms: Option<i64>,
    /// When its own work began, by its records' start times where they tell it (an OTLP
    /// sub-agent); orders the agents no call names yet ([`crate::ui`]'s waiting count).
    pub began_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub lines: u64,
    pub last_error: Option<Clean>,
    /// Who asked it to stop, and why (`guard: depth 3 > 2`): swarmtop acted on it.
    pub stopped_by: Option<Clean>,
    /// Calls of its a guard refused (a spawn past a limit), oldest first: the call's id where the
    /// act names one, and who refused it and why (`guard: denied: depth 2 > 1`).
    pub refusals: Vec<(Option<Box<str>>, Clean)>,
    /// Usage stated per API response (its cost comes from there, response by response).
    pub(super) account: Option<Account>,
    /// Its parent has its final answer: its own lines no longer change its status.
    pub(super) answered: bool,
    /// What the agent itself reported this thread cost, by model (the agent's own figure, shown
    /// where the price table does not know the model).
    pub reported_cost: Vec<(Clean, Pico)>,
    /// What the agent reported this thread alone cost ([`crate::wire::fact::CostReported::own`]):
    /// its cost where the price table does not know its model.
    pub own_reported_cost: Option<Pico>,
    /// What the agent itself reported its whole session used, by model (a session's own figure,
    /// every agent of it included: stream-json `result.modelUsage`, `cost-state`).
    pub reported_usage: Vec<(Clean, Tokens)>,
    /// It holds a copy of another session's history (a fork): what it reports includes that
    /// session's spend.
    pub forked: bool,
    /// Bytes of item text held, for the scrollback bound.
    pub(super) text_bytes: usize,
    /// Items before this index have had their text dropped by the scrollback bound.
    pub(super) text_floor: usize,
}

impl Thread {
    pub(super) fn new(id: Arc<str>) -> Self {
        Self {
            id,
            role: Role::Pending,
            parent: None,
            depth: 0,
            via: None,
            card: None,
            children: Vec::new(),
            nickname: None,
            agent_path: None,
            agent_role: None,
            model: None,
            status: Status::Pending,
            wait: None,
            before_retry: None,
            turns: Kept::default(),
            turn_index: Ids::default(),
            items: Kept::default(),
            item_index: Ids::default(),
            last_item: None,
            tokens: Tokens::default(),
            context: None,
            cut_short: None,
            cost: Some(Pico::default()),
            cost_source: CostSource::NoUsage,
            subtree: Rollup { threads: 1, priced: 1, ..Rollup::default() },
            first_ms: None,
            began_ms: None,
            last_ms: None,
            lines: 0,
            last_error: None,
            stopped_by: None,
            refusals: Vec::new(),
            account: None,
            answered: false,
            reported_cost: Vec::new(),
            own_reported_cost: None,
            reported_usage: Vec::new(),
            forked: false,
            text_bytes: 0,
            text_floor: 0,
        }
    }

    /// Its status in the one word every view uses (docs/status.md): an idle sub-agent answered,
    /// `done`; an idle session ended its turn and waits for a prompt, `idle`.
    pub fn word(&self) -> &'static str {
        match self.status {
            Status::Idle if self.parent.is_some() => "done",
            s => s.as_str(),
        }
    }

    /// Who a waiting thread needs: an approval or an answer; `None` when it is not waiting, or
    /// its agent did not say (an OTLP `waiting`).
    pub fn waiting_on(&self) -> Option<Wait> {
        self.wait.filter(|_| self.status == Status::Waiting)
    }

    /// The API responses whose usage was stated one by one (Claude Code) that are held (the
    /// newest, [`super::Limits::responses_per_thread`]), first stated first.
    pub fn responses(&self) -> &[super::Response] {
        self.account.as_ref().map_or(&[], |a| a.responses())
    }

    /// Responses stated, settled ones included: one past the newest's ordinal.
    pub fn responses_stated(&self) -> usize {
        self.account.as_ref().map_or(0, |a| a.settled() + a.responses().len())
    }

    /// The response of ordinal `r` (the `r`-th first stated), while it is held.
    pub fn response(&self, r: usize) -> Option<&super::Response> {
        let a = self.account.as_ref()?;
        a.responses().get(r.checked_sub(a.settled())?)
    }

    /// The spend of the responses no longer held, by quarter hour and model.
    pub fn settled_spend(&self) -> &[super::Settled] {
        self.account.as_ref().map_or(&[], |a| a.settled_spend())
    }

    /// The best label known (routing.md §8): nickname, else the last segment of the agent path,
    /// else the last 8 hex digits of the id (UUIDv7 ids of one session share their first digits).
    pub fn name(&self) -> String {
        if let Some(n) = self.nickname.as_ref().filter(|n| !n.is_empty()) {
            return n.to_string();
        }
        if let Some(seg) = self.agent_path.as_ref().and_then(|p| p.as_str().rsplit('/').find(|s| !s.is_empty())) {
            return seg.to_owned();
        }
        short_id(&self.id)
    }

    pub fn item(&self, id: &str) -> Option<&Item> {
        self.item_index.get(id, &self.items).and_then(|i| self.items.get(i))
    }

    /// The item doing something right now: the newest one still in progress.
    pub fn current_item(&self) -> Option<&Item> {
        self.items.iter().rev().take(64).find(|i| i.status == super::ItemStatus::InProgress)
    }
}

/// The last 8 hex digits of an id.
pub fn short_id(id: &str) -> String {
    let hex: Vec<char> = id.chars().filter(char::is_ascii_hexdigit).collect();
    if hex.len() >= 8 { hex[hex.len() - 8..].iter().collect() } else { crate::wire::sanitize(id).to_string() }
}
