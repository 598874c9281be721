//! The tree the screen and `stats` show: sessions, threads, turns, items, cards and lanes, tokens
//! and cost with subtree roll-ups. It consumes the router's events in order and applies the facts
//! each line states, whatever the format the line was in; pure, like the router.

mod account;
pub use self::account::{QUARTER_MS, Response, Settled, quarter};
mod diagnostics;
mod item;
mod kept;
pub mod prices;
mod receivers;
mod thread;
mod tokens;

use std::sync::Arc;

pub use self::diagnostics::{Diagnostics, LogEntry, MalformedSample};
pub use self::item::{AgentOp, Handles, Item, ItemKind, ItemStatus};
pub use self::kept::Kept;
use self::prices::Pico;
pub use self::prices::{Price, Prices};
pub use self::thread::{ContextFill, Status, Thread, Turn, TurnStatus, Wait, short_id};
use self::tokens::Delta;
pub use self::tokens::{CostSource, Rollup, Tokens};
use crate::router::{Class, Event, Registry, Role, Routed, Sink, ThreadIdx, Via};
use crate::wire::CleanStr;
use crate::wire::fact::{
    self, Fact, ItemFact, Parentage, StatusChange, Target, TextRule, ThreadFact, TurnOutcome, TurnRef, Usage,
};

/// Bounds of what the model keeps; what they drop is counted in [`Diagnostics`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Text kept per item (the newest part).
    pub item_text: usize,
    /// Item text kept per thread; older items lose their text first.
    pub thread_text: usize,
    /// Items kept per thread, the newest (cards with lanes and the opening items of the first turn
    /// stay too): older ones are dropped, counted (`dropped_items`), and still counted in the
    /// thread's items. Beyond what a lane's scrollback (`thread_text`) shows, an old item is
    /// only a row of the timeline's past.
    pub items_per_thread: usize,
    /// Turns kept per thread, the newest (the first turn, whose prompt names a session, and the
    /// turns holding a card with lanes, which are rows of the tree, stay too): older ones are
    /// dropped, counted (`dropped_turns`), and still counted in the thread's turns. A session
    /// runs for days: 53,338 turns of one thread held 514 MB (issue 22).
    pub turns_per_thread: usize,
    /// API responses held per thread, the newest: an older one is settled, its figures kept only
    /// in its quarter hour's spend on its model (what the store reports), and `export` sends no
    /// `chat` span for it once it has settled. A session written at 200 responses a second held
    /// every one: a daemon's memory climbed with it (`serve_soak`).
    pub responses_per_thread: usize,
    /// Receivers named before their thread appeared, kept until it does; past it they are counted
    /// (`dropped_receivers`) and the item shows fewer names.
    pub awaited_receivers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            item_text: 256 << 10,
            thread_text: 1 << 20,
            items_per_thread: ITEMS_PER_THREAD,
            turns_per_thread: TURNS_PER_THREAD,
            responses_per_thread: RESPONSES_PER_THREAD,
            awaited_receivers: 65_536,
        }
    }
}

/// Default of [`Limits::items_per_thread`]: about what a lane's text bound holds
/// ([`Limits::thread_text`], a KiB an item); twice as many held a long session's model at twice the
/// memory of a short one's (issue 22: 2 GB of Codex traffic against 20 MB, 2.32× for the monitor
/// and 1.64× for `stats`; 1.56× and 1.39× with this).
pub const ITEMS_PER_THREAD: usize = 1_024;
/// Default of [`Limits::responses_per_thread`]: as many as items are held.
pub const RESPONSES_PER_THREAD: usize = ITEMS_PER_THREAD;
/// Default of [`Limits::turns_per_thread`].
pub const TURNS_PER_THREAD: usize = 256;
/// Refusals kept per thread (a guard refusing a spawn loop refuses it again and again: the lane
/// has room for a few).
pub const MAX_REFUSALS: usize = 64;
/// Items at the start of a turn that say what it was asked (`ui::label` reads the first turn's
/// for a session's name): the first turn keeps them whatever the items bound drops.
pub const OPENING_ITEMS: usize = 4;

#[derive(Debug, Default)]
pub struct Model {
    pub threads: Vec<Thread>,
    /// Root threads, in the order they became roots.
    pub sessions: Vec<ThreadIdx>,
    /// Orphans shown under "unattributed"; an orphan that registers later leaves this list.
    pub unattributed: Vec<ThreadIdx>,
    pub diagnostics: Diagnostics,
    /// Largest line time seen (unix ms): the clock of replays and snapshots.
    pub stream_ms: Option<i64>,
    /// Bumped by every change, so a screen knows when it must draw again.
    pub generation: u64,
    /// Bumped only when the tree's shape changes (a thread appears or moves, a lane opens, a thread
    /// with children gains a turn or an item, or one of its cards is relabelled): an outline of the
    /// tree built at one value holds until it changes.
    pub structure: u64,
    prices: Prices,
    limits: Limits,
    awaited: receivers::Awaited,
    /// Sessions stopped on a guess (no process was seen running them, none seen exiting), with
    /// the time of the guess: a line of theirs stamped after it proves them running. By root: the
    /// machine view guesses at tens of thousands of old sessions at once (a list of them cost a
    /// pass over it for every stop and every line).
    guessed_stops: rustc_hash::FxHashMap<ThreadIdx, i64>,
}

impl Model {
    pub fn new(prices: Prices, limits: Limits) -> Self {
        Self { prices, limits, ..Self::default() }
    }

    pub fn thread(&self, idx: ThreadIdx) -> &Thread {
        &self.threads[idx.index()]
    }

    /// What was spent: every thread, whatever its place in the tree, and every session's part
    /// that its agent reported and no thread accounts for (so the total is the agent's own).
    pub fn totals(&self) -> Rollup {
        let mut total = Rollup::default();
        for t in &self.threads {
            total.threads = total.threads.saturating_add(1);
            total.tokens.add(&t.tokens);
            if let Some(c) = t.cost {
                total.cost += c;
                total.priced = total.priced.saturating_add(1);
            }
            let (table, agent) = t.cost_source.counts();
            total.by_table = total.by_table.saturating_add(u32::try_from(table).unwrap_or(0));
            total.by_agent = total.by_agent.saturating_add(u32::try_from(agent).unwrap_or(0));
        }
        for &s in &self.sessions {
            total = total.plus(&self.unattributed_part(s));
        }
        total
    }

    /// What a thread and its descendants spent; for a session's root, with the part its agent
    /// reported and no thread accounts for (the session's rows, the unattributed one included).
    pub fn spent(&self, idx: ThreadIdx) -> Rollup {
        let t = &self.threads[idx.index()];
        if t.role == Role::Root { t.subtree.plus(&self.unattributed_part(idx)) } else { t.subtree }
    }

    /// A session's unattributed part as a roll-up of no thread (empty when there is none).
    pub fn unattributed_part(&self, root: ThreadIdx) -> Rollup {
        let Some(r) = self.reconciled(root) else { return Rollup::default() };
        let cost = r.unattributed_cost.unwrap_or_default();
        let spent = cost > Pico::default();
        Rollup { threads: 0, tokens: r.unattributed, cost, priced: 0, by_table: 0, by_agent: u32::from(spent) }
    }

    /// A session's figures reconciled with what its agent reported for the whole session, when it
    /// did (`None` otherwise): what the agent reported, and the part of it no thread of the
    /// session accounts for (a stream omits responses by design).
    pub fn reconciled(&self, root: ThreadIdx) -> Option<Reconciled> {
        let t = &self.threads[root.index()];
        if t.reported_usage.is_empty() && t.reported_cost.is_empty() {
            return None;
        }
        let mut reported = Tokens::default();
        for (_, tokens) in &t.reported_usage {
            reported.add(tokens);
        }
        let reported_cost = (!t.reported_cost.is_empty())
            .then(|| t.reported_cost.iter().fold(Pico::default(), |sum, (_, usd)| sum + *usd));
        let seen = t.subtree.tokens;
        // The session's threads can only fall short of the agent's own total; where a figure of
        // theirs is above it (a figure the agent does not count), nothing is unattributed there.
        // A fork's figure starts from its original's, spent and counted there: what it reports
        // beyond its own threads is that inherited spend, not spend of no agent (a fork read
        // with its original showed the original's whole total again as unattributed).
        let unattributed =
            if t.reported_usage.is_empty() || t.forked { Tokens::default() } else { reported.saturating_minus(&seen) };
        // A thread that used nothing costs nothing (a depth-2 agent a stream never shows): known.
        let mut all_priced = true;
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            let th = &self.threads[i.index()];
            all_priced &= th.cost.is_some();
            stack.extend_from_slice(&th.children);
        }
        let unattributed_cost = match reported_cost {
            Some(r) if all_priced && r > t.subtree.cost && !t.forked => Some(r - t.subtree.cost),
            Some(_) if all_priced => Some(Pico::default()),
            _ => None,
        };
        Some(Reconciled { reported, reported_cost, unattributed, unattributed_cost })
    }

    /// What a thread cost, as shown: its cost, marked when it is the agent's own figure.
    pub fn shown_cost(&self, idx: ThreadIdx) -> ShownCost {
        let t = &self.threads[idx.index()];
        match (t.cost, t.cost_source) {
            (Some(c), CostSource::Agent) => ShownCost::Reported(c),
            (Some(c), _) => ShownCost::Priced(c),
            (None, _) => ShownCost::Unpriced,
        }
    }

    /// What a thread spent and where the figure comes from: the price table; else the agent's
    /// figure for the thread alone (OpenCode's per-session cost); else, when the thread is the only
    /// one of its session on its model, the agent's figure for that model (a model the table does
    /// not know yet is still costed, as the agent's figure); else $0 when it used nothing; else
    /// unpriced.
    fn cost_of(&self, idx: ThreadIdx) -> (Option<Pico>, CostSource) {
        let t = &self.threads[idx.index()];
        let used = t.tokens != Tokens::default();
        let table = match &t.account {
            Some(account) => account.cost(),
            None => t.model.as_ref().and_then(|m| self.prices.lookup(m.as_str())).map(|p| t.tokens.cost(&p)),
        };
        if let Some(c) = table {
            return (Some(c), if used { CostSource::Table } else { CostSource::NoUsage });
        }
        if let Some(c) = t.own_reported_cost.or_else(|| self.session_figure(idx)) {
            return (Some(c), CostSource::Agent);
        }
        if used { (None, CostSource::Unpriced) } else { (Some(Pico::default()), CostSource::NoUsage) }
    }

    /// The agent's figure for the thread's model over its whole session, when the thread is the
    /// only one of the session on that model (else whose share of it is whose is unknown).
    fn session_figure(&self, idx: ThreadIdx) -> Option<Pico> {
        let model = self.threads[idx.index()].model.as_ref()?;
        let root = self.root_of(idx)?;
        let &(_, usd) = self.threads[root.index()].reported_cost.iter().find(|(m, _)| m == model)?;
        let mut same_model = 0usize;
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            let th = &self.threads[i.index()];
            same_model += usize::from(th.model.as_ref() == Some(model));
            stack.extend_from_slice(&th.children);
        }
        (same_model == 1).then_some(usd)
    }

    /// Every thread of the session again, when its agent reported figures by model: a thread
    /// joined it, or changed model, or the figures changed, and which thread a figure prices
    /// may have changed with it.
    fn reprice_session(&mut self, idx: ThreadIdx) {
        let Some(root) = self.root_of(idx) else { return };
        if self.threads[root.index()].reported_cost.is_empty() {
            return;
        }
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            let tokens = self.threads[i.index()].tokens;
            self.reprice(i, tokens);
            stack.extend_from_slice(&self.threads[i.index()].children);
        }
    }

    /// Threads that used tokens no price table and no figure of the agent's costs.
    pub fn unpriced_threads(&self) -> usize {
        self.threads.iter().filter(|t| t.cost.is_none()).count()
    }

    /// The chain from a thread up to its root or orphan, the thread first. The router keeps every
    /// chain within its depth guard, so this is short.
    pub fn ancestors(&self, idx: ThreadIdx) -> impl Iterator<Item = ThreadIdx> + '_ {
        let mut next = Some(idx);
        let mut guard = self.threads.len() + 1;
        std::iter::from_fn(move || {
            let cur = next?;
            guard = guard.checked_sub(1)?;
            next = self.threads[cur.index()].parent;
            Some(cur)
        })
    }

    /// The root at the top of a thread's chain, when the chain reaches a root.
    pub fn root_of(&self, idx: ThreadIdx) -> Option<ThreadIdx> {
        let top = self.ancestors(idx).last()?;
        (self.threads[top.index()].role == Role::Root).then_some(top)
    }

    fn seen(&mut self, idx: ThreadIdx, id: &Arc<str>) {
        debug_assert_eq!(idx.index(), self.threads.len());
        self.threads.push(Thread::new(Arc::clone(id)));
    }

    fn registered(&mut self, child: ThreadIdx, parent: ThreadIdx, via: Via, card: Option<&str>, depth: u32) {
        let was_orphan = self.threads[child.index()].role == Role::Orphan;
        if was_orphan {
            self.unattributed.retain(|&t| t != child);
        }
        let t = &mut self.threads[child.index()];
        t.role = Role::Child;
        t.parent = Some(parent);
        t.depth = depth;
        t.via = Some(via);
        t.card = card.map(Into::into);
        self.threads[parent.index()].children.push(child);
        let delta = self.threads[child.index()].subtree.as_delta();
        self.propagate(parent, &delta);
        if let Some(card) = card {
            self.attach_lane(parent, card, child);
            self.name_from_card(parent, card, child);
        }
        self.reprice_session(child);
    }

    /// A child detached from its parent (the depth guard refused it once its chain was known).
    fn detach(&mut self, child: ThreadIdx) {
        let Some(parent) = self.threads[child.index()].parent.take() else { return };
        let subtree = self.threads[child.index()].subtree;
        for idx in self.ancestors(parent).collect::<Vec<_>>() {
            self.threads[idx.index()].subtree.remove(&subtree);
        }
        let p = &mut self.threads[parent.index()];
        p.children.retain(|&c| c != child);
        if let Some(card) = self.threads[child.index()].card.clone() {
            let p = &mut self.threads[parent.index()];
            if let Some(item) = p.item_index.get(&card, &p.items).and_then(|i| p.items.get_mut(i)) {
                item.lanes.retain(|&c| c != child);
            }
        }
    }

    /// A card that says what its agents are called names the children it spawns.
    fn name_from_card(&mut self, parent: ThreadIdx, card: &str, child: ThreadIdx) {
        let Some(item) = self.threads[parent.index()].item(card) else { return };
        let (nickname, role) = (item.lane_nickname().cloned(), item.agent_type().cloned());
        let t = &mut self.threads[child.index()];
        if t.nickname.is_none() {
            t.nickname = nickname;
        }
        if t.agent_role.is_none() {
            t.agent_role = role;
        }
    }

    fn attach_lane(&mut self, parent: ThreadIdx, card: &str, child: ThreadIdx) {
        let p = &mut self.threads[parent.index()];
        if let Some(item) = p.item_index.get(card, &p.items).and_then(|i| p.items.get_mut(i)) {
            if !item.lanes.contains(&child) {
                item.lanes.push(child);
            }
        }
    }

    /// Adds a change of figures to a thread's subtree and every ancestor's.
    fn propagate(&mut self, from: ThreadIdx, delta: &Delta) {
        let mut next = Some(from);
        let mut guard = self.threads.len() + 1;
        while let Some(idx) = next {
            guard = match guard.checked_sub(1) {
                Some(g) => g,
                None => break,
            };
            let t = &mut self.threads[idx.index()];
            t.subtree.apply(delta);
            next = t.parent;
        }
    }

    /// Recomputes a thread's own cost after its tokens or model changed, and rolls the change up.
    fn reprice(&mut self, idx: ThreadIdx, old_tokens: Tokens) {
        let (new_cost, source) = self.cost_of(idx);
        let t = &self.threads[idx.index()];
        let (old_cost, old_source) = (t.cost, t.cost_source);
        let (new_table, new_agent) = source.counts();
        let (old_table, old_agent) = old_source.counts();
        let delta = Delta {
            threads: 0,
            tokens: t.tokens.minus(&old_tokens),
            cost: new_cost.unwrap_or_default() - old_cost.unwrap_or_default(),
            priced: i64::from(new_cost.is_some()) - i64::from(old_cost.is_some()),
            by_table: new_table - old_table,
            by_agent: new_agent - old_agent,
        };
        let t = &mut self.threads[idx.index()];
        t.cost = new_cost;
        t.cost_source = source;
        self.propagate(idx, &delta);
    }

    fn set_model(&mut self, idx: ThreadIdx, model: &CleanStr<'_>) {
        if model.is_empty() {
            return;
        }
        let t = &mut self.threads[idx.index()];
        if t.model.as_ref().is_some_and(|m| m.as_str() == model.as_str()) {
            return;
        }
        t.model = Some(model.to_clean());
        let tokens = t.tokens;
        self.reprice(idx, tokens);
        self.reprice_session(idx);
    }

    fn apply(&mut self, r: &Routed<'_, '_>) {
        let record = r.record;
        if let Some(t) = record.time {
            self.stream_ms = Some(self.stream_ms.map_or(t, |s| s.max(t)));
        }
        match r.class {
            Class::Control => {
                // Responses and client traffic feed metadata only: names, models, agent paths,
                // and what swarmtop asked of a thread (which the line itself may not name).
                for fact in record.facts.iter() {
                    match (fact, r.thread) {
                        (Fact::Acted(a), _) => self.acted(a, r.registry),
                        (_, Some(idx)) => self.apply_fact(idx, fact, r),
                        (_, None) => {}
                    }
                }
            }
            Class::Global => {
                for fact in record.facts.iter() {
                    if let Fact::Notice(n) = fact {
                        self.diagnostics.global(r.line_no, n);
                    }
                }
            }
            Class::Malformed => {}
            Class::Root | Class::Rehomed | Class::Suppressed => {
                if let Some(idx) = r.thread {
                    self.thread_line(idx, r);
                }
            }
        }
    }

    fn thread_line(&mut self, idx: ThreadIdx, r: &Routed<'_, '_>) {
        let time = r.record.time;
        if !self.guessed_stops.is_empty() {
            self.proven_running(idx, time);
        }
        let t = &mut self.threads[idx.index()];
        t.lines += 1;
        if let Some(ms) = time {
            // The earliest, not the first read: a store's snapshot hands on a session's row (its
            // last update) before its messages (an OpenCode agent that ran 4 s showed 0:00).
            t.first_ms = Some(t.first_ms.map_or(ms, |f| f.min(ms)));
            t.last_ms = Some(t.last_ms.map_or(ms, |l| l.max(ms)));
        }
        // A retry is transient: the thread's next line puts back the status it had.
        if t.status == Status::Retrying {
            if let Some(before) = t.before_retry.take() {
                t.status = before;
            }
        }
        for fact in r.record.facts.iter() {
            self.apply_fact(idx, fact, r);
        }
        self.generation += 1;
    }

    /// The thread a fact is about: the line's own, or one it names (skipped when not seen yet).
    fn target(idx: ThreadIdx, target: &Target<'_>, registry: &Registry) -> Option<ThreadIdx> {
        match target {
            Target::Subject => Some(idx),
            Target::Thread(id) => registry.find(id),
        }
    }

    fn apply_fact(&mut self, idx: ThreadIdx, fact: &Fact<'_>, r: &Routed<'_, '_>) {
        // Seven facts in ten are deltas: their few instructions stay together, apart from the
        // rest (the per-line path is long enough to miss the instruction cache).
        match fact {
            Fact::Delta(d) => self.delta(idx, d),
            _ => self.apply_other_fact(idx, fact, r),
        }
    }

    #[inline]
    fn delta(&mut self, idx: ThreadIdx, d: &crate::wire::fact::Delta<'_>) {
        let slot = self.item_slot(idx, &d.item, None, Some(&TurnRef::Known(d.turn.clone())));
        if let Some(text) = &d.text {
            self.edit_item(idx, slot, |item| item.push_delta(text, d.part));
        }
    }

    #[inline(never)]
    fn apply_other_fact(&mut self, idx: ThreadIdx, fact: &Fact<'_>, r: &Routed<'_, '_>) {
        // A line without a time of its own happened at the stream's time so far, as the merge
        // orders it (Claude Code's stream-json `task_updated` that ends a sub-agent's turn has
        // none: the turn stayed open for ever).
        let time = r.record.time.or(self.stream_ms);
        match fact {
            Fact::Thread(t) => self.describe(idx, t, r.registry),
            // The router registered the children; their lanes open with the registration.
            Fact::Spawn(_) | Fact::Notice(_) | Fact::CopiedCall(_) => {}
            Fact::TurnStarted(turn) => {
                if turn.ends_previous {
                    let t = &self.threads[idx.index()];
                    // A turn told again (an OTLP agent span exported unfinished, then ended) does
                    // not end itself.
                    let last = t.turns.len().checked_sub(1).filter(|&l| {
                        t.turns
                            .get(l)
                            .is_some_and(|u| u.status == TurnStatus::InProgress && turn.turn.as_deref() != Some(&*u.id))
                    });
                    if let Some(last) = last {
                        self.end_turn(idx, last, TurnStatus::Completed, time);
                    }
                }
                if let Some(id) = turn.turn.as_deref() {
                    let slot = self.turn_or_new(idx, id, time);
                    if let Some(record) = self.threads[idx.index()].turns.get_mut(slot) {
                        record.started_ms = record.started_ms.or(time);
                    }
                }
            }
            Fact::TurnEnded(end) => self.turn_ended(idx, end, time),
            Fact::Item(item) => self.item(idx, item, r.registry),
            Fact::Delta(d) => self.delta(idx, d),
            Fact::Usage(usage) => self.usage(idx, usage, time),
            Fact::Model(m) => {
                if let Some(t) = Self::target(idx, &m.target, r.registry) {
                    self.set_model(t, &m.model);
                }
            }
            Fact::Status(s) => {
                if let Some(t) = Self::target(idx, &s.target, r.registry) {
                    self.status(t, s.change, time);
                }
            }
            Fact::Error(e) => {
                let t = &mut self.threads[idx.index()];
                if e.message.is_some() {
                    t.last_error.clone_from(&e.message);
                }
                if e.retrying {
                    if t.status != Status::Retrying {
                        t.before_retry = Some(t.status);
                    }
                    t.status = Status::Retrying;
                } else if !e.goes_on {
                    t.status = Status::Failed;
                }
            }
            Fact::Answered(a) => {
                if let Some(child) = r.registry.find(&a.child) {
                    self.answered(child, a.status, time);
                }
            }
            Fact::CostReported(c) => self.reported_cost(idx, c),
            Fact::ReportedUsage(u) => {
                let model = u.model.to_clean();
                let tokens = Tokens::of(&u.tokens);
                if let Some(window) = u.context_window {
                    self.context_window(idx, &model, window);
                }
                let t = &mut self.threads[idx.index()];
                match t.reported_usage.iter_mut().find(|(m, _)| *m == model) {
                    Some((_, figure)) => *figure = tokens,
                    None => kept::push_small(&mut t.reported_usage, (model, tokens)),
                }
            }
            Fact::SessionEnded(end) => self.session_ended(idx, end.interrupted),
            Fact::Copied => self.threads[idx.index()].forked = true,
            Fact::Acted(a) => self.acted(a, r.registry),
        }
    }

    /// A child's answer is in (`status`: how it ended): the turn it worked in is over now, not at
    /// some later line.
    fn answered(&mut self, child: ThreadIdx, status: Status, time: Option<i64>) {
        let t = &self.threads[child.index()];
        let open = t
            .turns
            .len()
            .checked_sub(1)
            .filter(|&last| t.turns.get(last).is_some_and(|turn| turn.status == TurnStatus::InProgress));
        if let Some(turn) = open {
            let state = match status {
                Status::Failed => TurnStatus::Failed,
                Status::Interrupted => TurnStatus::Interrupted,
                _ => TurnStatus::Completed,
            };
            self.end_turn(child, turn, state, time);
        }
        let t = &mut self.threads[child.index()];
        t.status = status;
        t.answered = true;
    }

    /// A call whose end hands back its agents' answers ([`ItemFact::answers`]) ended: each agent
    /// it started that still works and began before that end has answered (its own last record
    /// may come later: Claude Code exports logs and spans in batches of their own). One that
    /// began after the end was launched in the background and works on.
    fn call_answered(&mut self, idx: ThreadIdx, slot: usize) {
        let Some(item) = self.threads[idx.index()].items.get(slot) else { return };
        let status = match item.status {
            ItemStatus::InProgress => return,
            ItemStatus::Completed => Status::Idle,
            ItemStatus::Failed => Status::Failed,
            ItemStatus::Interrupted | ItemStatus::Declined => Status::Interrupted,
        };
        let Some(end) = item.completed_ms else { return };
        for child in item.lanes.clone() {
            let c = &self.threads[child.index()];
            if c.status.is_active() && c.began_ms.or(c.first_ms).is_some_and(|began| began <= end) {
                self.answered(child, status, Some(end));
            }
        }
    }

    /// swarmtop asked a thread to stop (why, for the tree), or a guard refused a call of its (once
    /// per call: a replay may hear of it from a recording and from the run store).
    fn acted(&mut self, a: &crate::wire::fact::Acted<'_>, registry: &Registry) {
        let Some(t) = registry.find(&a.target) else { return };
        let t = &mut self.threads[t.index()];
        if !a.refused {
            t.stopped_by = Some(a.why.clone());
            return;
        }
        let call: Option<Box<str>> = a.call.as_deref().map(Into::into);
        let known = t.refusals.iter().any(|(c, why)| *c == call && (c.is_some() || *why == a.why));
        if !known && t.refusals.len() < MAX_REFUSALS {
            t.refusals.push((call, a.why.clone()));
        }
    }

    /// What a thread's description says of its names and model. A description of someone's
    /// sub-agent never changes a root.
    fn describe(&mut self, idx: ThreadIdx, fact: &ThreadFact<'_>, registry: &Registry) {
        let about = if **registry.id(idx) == *fact.thread { Some(idx) } else { registry.find(&fact.thread) };
        let Some(about) = about else { return };
        let t = &mut self.threads[about.index()];
        if fact.parentage == Parentage::SubAgent && t.role == Role::Root {
            return;
        }
        if let Some(b) = fact.began_ms {
            t.began_ms = Some(t.began_ms.map_or(b, |was| was.min(b)));
        }
        if t.nickname.is_none() {
            t.nickname.clone_from(&fact.nickname);
        }
        if t.agent_role.is_none() {
            t.agent_role.clone_from(&fact.role);
        }
        if t.agent_path.is_none() {
            if let Some(path) = fact.path.as_ref().filter(|p| !p.is_empty()) {
                t.agent_path = Some(path.clone());
                self.awaited.path(path.as_str(), about);
                self.receivers_arrived(path.as_str(), about);
            }
        }
        if let Some(model) = &fact.model {
            self.set_model(about, &CleanStr::from(model.clone()));
        }
    }

    /// A status as reported; some depend on the one before (routing.md §6).
    fn status(&mut self, idx: ThreadIdx, change: StatusChange, time: Option<i64>) {
        let t = &mut self.threads[idx.index()];
        let from = t.status;
        t.status = match change {
            StatusChange::Waiting(wait) => {
                t.wait = Some(wait);
                Status::Waiting
            }
            StatusChange::Active if matches!(from, Status::Waiting | Status::Retrying) => Status::Running,
            StatusChange::Idle if matches!(from, Status::Running | Status::Waiting | Status::Retrying) => Status::Idle,
            StatusChange::Began if from == Status::Pending => Status::Running,
            StatusChange::Set(_) if t.answered => from,
            StatusChange::Set(s) => s,
            StatusChange::Active | StatusChange::Idle | StatusChange::Began => from,
        };
        if t.status != from {
            // The agent's own word on how it stands outweighs the source's guess.
            t.cut_short = None;
            // Idle with its turn still open: that turn ended now (its record follows); active
            // again within it, it did not.
            let last = t.turns.len().checked_sub(1);
            if let Some(turn) = last.and_then(|l| t.turns.get_mut(l)).filter(|u| u.status == TurnStatus::InProgress) {
                turn.idle_ms = if t.status == Status::Idle { turn.idle_ms.or(time) } else { None };
            }
        }
    }

    fn usage(&mut self, idx: ThreadIdx, usage: &Usage<'_>, time: Option<i64>) {
        match usage {
            Usage::Cumulative { total, context } => {
                let t = &mut self.threads[idx.index()];
                let old = t.tokens;
                if let Some(total) = total {
                    t.tokens.merge_max(total);
                }
                if let Some(context) = context {
                    t.context = Some(*context);
                }
                if t.tokens != old {
                    self.reprice(idx, old);
                }
            }
            Usage::Response(response) => {
                // Some models bill a request by its prompt's size (Claude Haiku 5.5 above 100,000).
                let prompt = response.tokens.input_tokens.unwrap_or(0);
                let price = response.model.as_ref().and_then(|m| self.prices.lookup_for_prompt(m.as_str(), prompt));
                let key = format!("{}\u{1f}{}", response.key.0, response.key.1);
                let t = &mut self.threads[idx.index()];
                let old = t.tokens;
                let model = response.model.as_ref().map(CleanStr::to_clean);
                let account = t.account.get_or_insert_with(Default::default);
                let gained = account.state(&key, &Tokens::of(&response.tokens), price, model, time);
                // The newest response's size as merged (its lines repeat it, the answer's count
                // growing from its stream-start value); an older one stated again is not the
                // context now.
                let newest = account.responses().last().filter(|r| *r.key == *key).map(|r| r.tokens.total);
                account.bound(self.limits.responses_per_thread, &self.prices);
                t.tokens.add(&gained);
                if let (Some(c), Some(merged)) = (response.context, newest) {
                    // A window said once (the session's report) holds for the thread's later fills.
                    let window = c.window.or(t.context.and_then(|old| old.window));
                    t.context = Some(ContextFill { used: c.used.max(merged), window });
                }
                self.reprice(idx, old);
            }
        }
    }

    fn reported_cost(&mut self, idx: ThreadIdx, c: &fact::CostReported<'_>) {
        let Some(usd) = Pico::parse_usd(&c.usd) else { return };
        let model = c.model.as_ref().map(CleanStr::to_clean).unwrap_or_default();
        let t = &mut self.threads[idx.index()];
        if c.own {
            let before = t.own_reported_cost.unwrap_or_default();
            t.own_reported_cost = Some(if c.cumulative { usd } else { before + usd });
            let tokens = t.tokens;
            self.reprice(idx, tokens);
            return;
        }
        match t.reported_cost.iter_mut().find(|(m, _)| *m == model) {
            Some((_, figure)) if c.cumulative => *figure = usd,
            Some((_, figure)) => *figure += usd,
            None => kept::push_small(&mut t.reported_cost, (model, usd)),
        }
        self.reprice_session(idx);
    }

    /// Nothing of an ended session runs any more: what was still active stops.
    fn session_ended(&mut self, idx: ThreadIdx, interrupted: bool) {
        let end = if interrupted { Status::Interrupted } else { Status::Idle };
        let mut stack = vec![idx];
        while let Some(t) = stack.pop() {
            let thread = &mut self.threads[t.index()];
            if thread.status.is_active() || thread.status == Status::Pending {
                thread.status = end;
                // Its turn in progress ended with it (an OpenCode run killed mid-turn kept showing
                // `● turn 1` under its interrupted session).
                if interrupted {
                    for turn in thread.turns.iter_mut().filter(|u| u.status == TurnStatus::InProgress) {
                        turn.status = TurnStatus::Interrupted;
                    }
                }
            }
            stack.extend_from_slice(&thread.children);
        }
    }

    /// The session rooted at `root` says the window of `model`: every context fill in its tree
    /// on that model is of that window.
    fn context_window(&mut self, root: ThreadIdx, model: &crate::wire::Clean, window: u64) {
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            let Some(t) = self.threads.get_mut(i.index()) else { continue };
            stack.extend_from_slice(&t.children);
            if t.model.as_ref() == Some(model) {
                if let Some(c) = &mut t.context {
                    c.window = Some(window);
                }
            }
        }
    }

    /// [`Model::stopped`] on a guess made at `at_ms` (unix ms): no process was seen running the
    /// session, none seen exiting (one the source cannot see, in a container, would write on).
    /// A line of the session stamped after the guess undoes it.
    pub fn stopped_on_guess(&mut self, root: ThreadIdx, at_ms: i64) {
        self.stopped(root);
        self.guessed_stops.insert(root, at_ms);
    }

    /// A line of `idx` at `time` after a guessed stop of its session: it runs after all.
    fn proven_running(&mut self, idx: ThreadIdx, time: Option<i64>) {
        let Some(time) = time else { return };
        let Some(root) = self.root_of(idx) else { return };
        if self.guessed_stops.get(&root).is_some_and(|&at| time > at) {
            self.resumed(root);
        }
    }

    /// The process of the session rooted at `root` is gone without a word in its files (killed
    /// mid-answer: no end line, no interrupt note): every thread of its tree still at work, and
    /// its turn and items in progress, were interrupted, at the last time the stream told.
    pub fn stopped(&mut self, root: ThreadIdx) {
        self.guessed_stops.remove(&root);
        let time = self.stream_ms;
        let mut stack = vec![root];
        while let Some(t) = stack.pop() {
            let Some(thread) = self.threads.get_mut(t.index()) else { continue };
            stack.extend_from_slice(&thread.children);
            for turn in thread.turns.iter_mut().filter(|turn| turn.status == TurnStatus::InProgress) {
                turn.status = TurnStatus::Interrupted;
                turn.completed_ms = time;
                turn.cut_short = true;
            }
            // Every item still at work, whether or not a turn holds it.
            for item in thread.items.iter_mut().filter(|item| item.status == ItemStatus::InProgress) {
                item.status = ItemStatus::Interrupted;
                item.completed_ms = time;
                item.cut_short = true;
            }
            if thread.status.is_active() || thread.status == Status::Pending {
                thread.cut_short = Some(thread.status);
                thread.status = Status::Interrupted;
            }
        }
        self.generation += 1;
    }

    /// Drops what a session that stopped no longer needs held, for a daemon that follows every
    /// session of a machine for days (`serve`): of each of its threads, the items and turns that
    /// can no longer change (those still at work, or cut short by the stop, stay, and so do the
    /// newest, the opening ones and the cards with lanes), and its responses but the newest
    /// (settled: its figures stay). Counted as the items and turns bounds count what they drop.
    /// A 20-line session held 18 KB in `serve`'s model, some 6.5 once compacted (heaptrack, `serve_soak`).
    pub fn compact(&mut self, root: ThreadIdx) {
        let mut stack = vec![root];
        while let Some(idx) = stack.pop() {
            let Some(t) = self.threads.get(idx.index()) else { continue };
            stack.extend_from_slice(&t.children);
            self.compact_thread(idx);
        }
    }

    fn compact_thread(&mut self, idx: ThreadIdx) {
        let Thread { turns, items, item_index, turn_index, last_item, text_bytes, account, .. } =
            &mut self.threads[idx.index()];
        let newest = items.len().checked_sub(1);
        let opening = turns.get(0).map_or(&[][..], |first| &first.items[..first.items.len().min(OPENING_ITEMS)]);
        let keep = |ordinal: usize, item: &Item| {
            Some(ordinal) == newest
                || item.status == ItemStatus::InProgress
                || item.cut_short
                || !item.lanes.is_empty()
                || opening.contains(&ordinal)
        };
        while let Some((ordinal, item)) = items.drop_oldest(keep) {
            item_index.remove(ordinal, &item);
            *text_bytes = text_bytes.saturating_sub(item.text.len());
            if *last_item == Some(ordinal) {
                *last_item = None;
            }
            self.diagnostics.dropped_items += 1;
        }
        items.fit();
        item_index.fit(items);
        let newest = turns.len().checked_sub(1);
        let keep = |ordinal: usize, turn: &Turn| {
            ordinal == 0
                || Some(ordinal) == newest
                || turn.status == TurnStatus::InProgress
                || turn.cut_short
                || turn.items.iter().any(|&i| items.get(i).is_some_and(|item| !item.lanes.is_empty()))
        };
        while let Some((ordinal, turn)) = turns.drop_oldest(keep) {
            turn_index.remove(ordinal, &turn);
            self.diagnostics.dropped_turns += 1;
        }
        // What the turns held list only the items still held (the first turn's opening ones stay).
        for (ordinal, turn) in turns.iter_mut_entries() {
            let mut at = 0;
            turn.items.retain(|&i| {
                at += 1;
                (ordinal == 0 && at <= OPENING_ITEMS) || items.get(i).is_some()
            });
            turn.items.shrink_to_fit();
        }
        turns.fit();
        turn_index.fit(turns);
        if let Some(account) = account {
            account.settle_all_but(1, &self.prices);
        }
    }

    /// The source finds the session rooted at `root` running after all (its process judged gone
    /// a moment too soon, or another process took it up): what [`Model::stopped`] cut short and
    /// nothing has told of since is as it was.
    pub fn resumed(&mut self, root: ThreadIdx) {
        self.guessed_stops.remove(&root);
        let mut stack = vec![root];
        while let Some(t) = stack.pop() {
            let Some(thread) = self.threads.get_mut(t.index()) else { continue };
            stack.extend_from_slice(&thread.children);
            for turn in &mut thread.turns {
                if std::mem::take(&mut turn.cut_short) && turn.status == TurnStatus::Interrupted {
                    turn.status = TurnStatus::InProgress;
                    turn.completed_ms = None;
                }
            }
            for item in &mut thread.items {
                if std::mem::take(&mut item.cut_short) && item.status == ItemStatus::Interrupted {
                    item.status = ItemStatus::InProgress;
                    item.completed_ms = None;
                }
            }
            if let Some(was) = thread.cut_short.take().filter(|_| thread.status == Status::Interrupted) {
                thread.status = was;
            }
        }
        self.generation += 1;
    }

    /// The turn a reference means, as an index into the thread's turns.
    fn turn_ref(&mut self, idx: ThreadIdx, turn: &TurnRef<'_>) -> Option<usize> {
        let t = &self.threads[idx.index()];
        match turn {
            TurnRef::Id(id) => Some(self.turn_or_new(idx, id, None)),
            TurnRef::IdOrLatest(id) => {
                id.as_deref().and_then(|id| t.turn_index.get(id, &t.turns)).or(t.turns.len().checked_sub(1))
            }
            TurnRef::Latest => t.turns.len().checked_sub(1),
            TurnRef::Known(id) => id.as_deref().and_then(|id| t.turn_index.get(id, &t.turns)),
        }
    }

    /// The turn with this id; on first sight a new one, in progress.
    fn turn_or_new(&mut self, idx: ThreadIdx, id: &str, time: Option<i64>) -> usize {
        let t = &mut self.threads[idx.index()];
        if let Some(slot) = t.turn_index.get(id, &t.turns) {
            return slot;
        }
        let turn = Turn {
            id: id.into(),
            status: TurnStatus::InProgress,
            started_ms: time,
            completed_ms: None,
            items: Vec::new(),
            error: None,
            idle_ms: None,
            cut_short: false,
        };
        let slot = t.turns.push_within(turn, self.limits.turns_per_thread.max(1));
        t.turn_index.insert(slot, &t.turns);
        // The outline shows the turns and cards of the threads that have children.
        if !t.children.is_empty() {
            self.structure += 1;
        }
        self.bound_turns(idx);
        slot
    }

    /// Drops the oldest turns past the turns bound. The first turn stays (its prompt names the
    /// session), and so do the turns holding a card with lanes (rows of the tree).
    fn bound_turns(&mut self, idx: ThreadIdx) {
        let Thread { turns, items, turn_index, .. } = &mut self.threads[idx.index()];
        while turns.in_window() > self.limits.turns_per_thread.max(1) {
            let pinned = |ordinal: usize, turn: &Turn| {
                ordinal == 0 || turn.items.iter().any(|&i| items.get(i).is_some_and(|item| !item.lanes.is_empty()))
            };
            let Some((ordinal, turn)) = turns.drop_oldest(pinned) else { break };
            turn_index.remove(ordinal, &turn);
            self.diagnostics.dropped_turns += 1;
        }
    }

    /// Ends a turn; its items still in progress end with it (an interrupted `wait` never gets its
    /// own item/completed, wire.md §3).
    fn end_turn(&mut self, idx: ThreadIdx, turn: usize, state: TurnStatus, time: Option<i64>) {
        let item_state = match state {
            TurnStatus::Failed => ItemStatus::Failed,
            TurnStatus::Interrupted => ItemStatus::Interrupted,
            TurnStatus::Completed | TurnStatus::InProgress => ItemStatus::Completed,
        };
        let Thread { turns, items, .. } = &mut self.threads[idx.index()];
        let Some(record) = turns.get_mut(turn) else { return };
        // The same end told again (Codex's `<turn_aborted>` note then its event, Claude's
        // `stop_hook_summary` then `turn_duration`) ended the turn the first time.
        let again = record.status == state && state != TurnStatus::InProgress && record.completed_ms.is_some();
        record.status = state;
        if !again {
            record.completed_ms = record.idle_ms.take().or(time);
        }
        record.cut_short = false;
        for &i in &record.items {
            let Some(item) = items.get_mut(i) else { continue };
            // An item a stop cut short was still at work as far as the agent knows.
            if item.status == ItemStatus::InProgress || item.cut_short {
                item.status = item_state;
                item.completed_ms = time;
                item.cut_short = false;
            }
        }
    }

    fn turn_ended(&mut self, idx: ThreadIdx, end: &fact::TurnEnded<'_>, time: Option<i64>) {
        let (state, status) = match end.outcome {
            Some(TurnOutcome::Completed) => (TurnStatus::Completed, Some(Status::Idle)),
            Some(TurnOutcome::Failed) => (TurnStatus::Failed, Some(Status::Failed)),
            Some(TurnOutcome::Interrupted) => (TurnStatus::Interrupted, Some(Status::Interrupted)),
            None => (TurnStatus::Completed, None),
        };
        let turn = self.turn_ref(idx, &end.turn);
        if let Some(turn) = turn {
            self.end_turn(idx, turn, state, time);
        }
        let t = &mut self.threads[idx.index()];
        if let Some(s) = status {
            t.status = s;
            t.cut_short = None;
        }
        if end.error.is_some() {
            if let Some(record) = turn.and_then(|turn| t.turns.get_mut(turn)) {
                record.error.clone_from(&end.error);
            }
            t.last_error.clone_from(&end.error);
        }
    }

    /// An item already seen. Deltas come in runs for one item: the last one is checked first.
    fn known_item(&mut self, idx: ThreadIdx, id: &str) -> Option<usize> {
        let t = &mut self.threads[idx.index()];
        if let Some(slot) =
            t.last_item.filter(|&slot| t.items.get(slot).is_some_and(|i| crate::router::same_id(&i.id, id)))
        {
            return Some(slot);
        }
        let slot = t.item_index.get(id, &t.items)?;
        t.last_item = Some(slot);
        Some(slot)
    }

    /// The item with this id; on first sight a new one of `kind`, filed under `turn` (the oldest
    /// items past the items bound make way for it).
    fn item_slot(&mut self, idx: ThreadIdx, id: &str, kind: Option<&ItemKind>, turn: Option<&TurnRef<'_>>) -> usize {
        if let Some(slot) = self.known_item(idx, id) {
            return slot;
        }
        let turn = turn.and_then(|t| self.turn_ref(idx, t));
        let t = &mut self.threads[idx.index()];
        let mut item = Item::new(id, kind.cloned().unwrap_or_else(|| ItemKind::of("")));
        item.turn = turn;
        let slot = t.items.push_within(item, self.limits.items_per_thread.max(1));
        t.item_index.insert(slot, &t.items);
        t.last_item = Some(slot);
        if let Some(record) = turn.and_then(|turn| t.turns.get_mut(turn)) {
            record.items.push(slot);
            // A turn of more items than the thread keeps forgets the dropped ones (not its
            // opening ones): what it lists stays within the bound too.
            if record.items.len() > 2 * self.limits.items_per_thread + OPENING_ITEMS {
                let items = &t.items;
                let mut at = 0;
                record.items.retain(|&i| {
                    at += 1;
                    at <= OPENING_ITEMS || items.get(i).is_some()
                });
            }
        }
        if !t.children.is_empty() {
            self.structure += 1;
        }
        self.bound_items(idx);
        slot
    }

    /// Drops the oldest items past the items bound. Cards with lanes stay (the tree hangs from
    /// them), and so do the opening items of the first turn (its prompt names the session).
    fn bound_items(&mut self, idx: ThreadIdx) {
        let Thread { turns, items, item_index, last_item, text_bytes, .. } = &mut self.threads[idx.index()];
        while items.in_window() > self.limits.items_per_thread.max(1) {
            let opening = turns.get(0).map_or(&[][..], |first| &first.items[..first.items.len().min(OPENING_ITEMS)]);
            let pinned = |ordinal: usize, item: &Item| !item.lanes.is_empty() || opening.contains(&ordinal);
            let Some((ordinal, item)) = items.drop_oldest(pinned) else { break };
            item_index.remove(ordinal, &item);
            *text_bytes = text_bytes.saturating_sub(item.text.len());
            if *last_item == Some(ordinal) {
                *last_item = None;
            }
            self.diagnostics.dropped_items += 1;
        }
    }

    /// Changes an item through `edit`, keeping the thread's text accounting and bounds true.
    fn edit_item(&mut self, idx: ThreadIdx, slot: usize, edit: impl FnOnce(&mut Item)) {
        let t = &mut self.threads[idx.index()];
        let Some(item) = t.items.get_mut(slot) else { return };
        let before = item.text.len();
        edit(item);
        if item.status != ItemStatus::InProgress {
            // Its text is whole: a thread holds up to the items bound of them.
            item.text.fit();
        }
        t.text_bytes = (t.text_bytes + item.text.len()).saturating_sub(before);
        self.bound_text(idx, slot);
    }

    fn item(&mut self, idx: ThreadIdx, f: &ItemFact<'_>, registry: &Registry) {
        let slot = match &f.id {
            Some(id) if f.update_only => self.known_item(idx, id),
            Some(id) => Some(self.item_slot(idx, id, f.kind.as_ref(), f.turn.as_ref())),
            None if f.update_only => return,
            None => {
                // Items without an id of their own are told apart by the line that brought them.
                let id = format!("line-{}", self.threads[idx.index()].lines);
                Some(self.item_slot(idx, &id, f.kind.as_ref(), f.turn.as_ref()))
            }
        };
        let Some(slot) = slot else { return };
        let mut receivers = Vec::with_capacity(f.receivers.len());
        for name in &f.receivers {
            match self.awaited.find(registry, name) {
                Some(r) => receivers.push(r),
                None if name.is_empty() => {}
                None => {
                    if !self.awaited.hold(name, (idx, slot), self.limits.awaited_receivers) {
                        self.diagnostics.dropped_receivers += 1;
                    }
                }
            }
        }
        let mut relabelled = false;
        self.edit_item(idx, slot, |item| {
            if let Some(kind) = &f.kind {
                // An item first named by a delta has no kind yet.
                if matches!(item.kind, ItemKind::Other(_)) && item.kind != *kind {
                    item.kind = kind.clone();
                    relabelled = true;
                }
            }
            if let Some(status) = f.status {
                item.status = status;
                item.cut_short = false;
                if status != ItemStatus::Failed {
                    item.why = None;
                }
            }
            if f.exit_code.is_some() {
                item.exit_code = f.exit_code;
            }
            if let Some(title) = &f.title {
                item.title.clone_from(title);
            }
            if f.op.is_some() && item.op != f.op {
                item.op = f.op;
                relabelled = true;
            }
            if let Some(tool) = &f.tool {
                if item.tool.as_deref() != Some(tool.as_str()) {
                    item.tool = Some(tool.as_str().into());
                    relabelled = true;
                }
            }
            if let Some(text) = &f.text {
                let replace = match f.text_rule {
                    TextRule::Authoritative => true,
                    TextRule::Provisional => item.text.is_empty(),
                    TextRule::Output => item.kind != ItemKind::Collab,
                };
                if replace {
                    item.text.clone_from(text);
                }
            }
            // Any other item's text is its output, which says why already.
            if let Some(why) = f.why.as_ref().filter(|_| item.kind == ItemKind::Collab) {
                item.why = Some(Box::new(why.clone()));
            }
            if f.lane_nickname.is_some() {
                item.lane_names_mut().nickname.clone_from(&f.lane_nickname);
            }
            if f.lane_role.is_some() {
                item.lane_names_mut().role.clone_from(&f.lane_role);
            }
            item.started_ms = item.started_ms.or(f.started_ms);
            item.completed_ms = item.completed_ms.or(f.completed_ms);
            for r in &receivers {
                if !item.receivers.contains(r) {
                    item.receivers.push(*r);
                }
            }
        });
        // What a card is (its kind, its tool) names its row in the outline.
        if relabelled && !self.threads[idx.index()].children.is_empty() {
            self.structure += 1;
        }
        if f.card {
            self.attach_known_lanes(idx, slot);
        }
        if f.answers {
            self.call_answered(idx, slot);
        }
    }

    /// A thread appeared under a name items gave it before: it joins their receivers.
    fn receivers_arrived(&mut self, name: &str, thread: ThreadIdx) {
        for (holder, slot) in self.awaited.arrived(name) {
            // The item may have been dropped by the items bound since.
            let Some(item) = self.threads[holder.index()].items.get_mut(slot) else { continue };
            if !item.receivers.contains(&thread) {
                item.receivers.push(thread);
            }
        }
    }

    /// Children registered with an item as card before the item itself was applied (a spawn
    /// line replayed from a pending parent) still get their lane.
    fn attach_known_lanes(&mut self, parent: ThreadIdx, slot: usize) {
        let p = &self.threads[parent.index()];
        let Some(id) = p.items.get(slot).map(|i| &i.id) else { return };
        let lanes: Vec<ThreadIdx> =
            p.children.iter().copied().filter(|c| self.threads[c.index()].card.as_deref() == Some(&**id)).collect();
        let Some(item) = self.threads[parent.index()].items.get_mut(slot) else { return };
        for c in lanes {
            if !item.lanes.contains(&c) {
                item.lanes.push(c);
                self.structure += 1;
            }
        }
    }

    /// Applies the per-item and per-thread text bounds after an item's text grew.
    fn bound_text(&mut self, idx: ThreadIdx, slot: usize) {
        let limits = self.limits;
        let t = &mut self.threads[idx.index()];
        let dropped = t.items.get_mut(slot).map_or(0, |item| item.bound_text(limits.item_text));
        t.text_bytes -= dropped.min(t.text_bytes);
        self.diagnostics.dropped_text_bytes += dropped as u64;
        while t.text_bytes > limits.thread_text {
            // The oldest item held at or past the floor (those the items bound dropped are gone).
            let Some(floor) = t.items.entries_from(t.text_floor).next().map(|(o, _)| o) else { break };
            if floor == slot {
                break;
            }
            let Some(item) = t.items.get_mut(floor) else { break };
            let freed = item.text.len();
            item.text = crate::wire::Clean::new();
            item.dropped_bytes += freed as u64;
            t.text_bytes -= freed.min(t.text_bytes);
            self.diagnostics.dropped_text_bytes += freed as u64;
            t.text_floor = floor + 1;
        }
    }
}

impl Sink for Model {
    fn event(&mut self, event: &Event<'_, '_>) {
        if let Event::Line(routed) = event {
            self.apply(routed);
        } else {
            self.tree_event(event);
        }
        self.generation += 1;
    }
}

impl Model {
    /// The router's events about the tree (every one but a line's): rare, and kept out of the
    /// per-line path.
    #[inline(never)]
    fn tree_event(&mut self, event: &Event<'_, '_>) {
        match event {
            Event::Seen { thread, id } => {
                self.seen(*thread, id);
                self.receivers_arrived(id, *thread);
                self.structure += 1;
            }
            Event::Registered { child, parent, via, card, depth } => {
                self.registered(*child, *parent, *via, *card, *depth);
                self.structure += 1;
            }
            Event::Depth { thread, depth } => {
                self.threads[thread.index()].depth = *depth;
                self.structure += 1;
            }
            Event::CardKnown { child, card } => {
                self.threads[child.index()].card = Some((*card).into());
                if let Some(parent) = self.threads[child.index()].parent {
                    self.attach_lane(parent, card, *child);
                }
                self.structure += 1;
            }
            Event::BecameRoot { thread } => {
                self.threads[thread.index()].role = Role::Root;
                self.sessions.push(*thread);
                self.structure += 1;
            }
            Event::Orphaned { thread, .. } => {
                if self.threads[thread.index()].role != Role::Orphan {
                    self.detach(*thread);
                    let t = &mut self.threads[thread.index()];
                    t.role = Role::Orphan;
                    t.parent = None;
                    self.unattributed.push(*thread);
                    self.structure += 1;
                }
            }
            Event::Line(routed) => self.apply(routed),
            Event::Malformed { line_no, reason, record } => self.diagnostics.malformed(*line_no, reason, record),
        }
    }
}

/// Pretty money for people (`$0.84`, `$0.0031`); `stats --json` prints the exact decimal instead.
/// A thread's cost as shown (see [`Model::shown_cost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownCost {
    Priced(Pico),
    /// The agent's own figure: the price table does not know the model.
    Reported(Pico),
    Unpriced,
}

impl ShownCost {
    pub fn priced(self) -> Option<Pico> {
        match self {
            Self::Priced(c) => Some(c),
            _ => None,
        }
    }
}

/// `$0.02`, `$0.02 (agent)` for the agent's own figure, `—` unpriced.
pub fn format_shown(cost: ShownCost) -> String {
    match cost {
        ShownCost::Priced(c) => format_usd(Some(c)),
        ShownCost::Reported(c) => format!("{} (agent)", format_usd(Some(c))),
        ShownCost::Unpriced => format_usd(None),
    }
}

pub fn format_usd(cost: Option<Pico>) -> String {
    match cost {
        None => "—".to_owned(),
        Some(c) => {
            let usd = c.usd();
            if usd == 0.0 {
                "$0".to_owned()
            } else if usd.abs() < 0.01 {
                format!("${usd:.4}")
            } else {
                format!("${usd:.2}")
            }
        }
    }
}

/// A session against its agent's own report (see [`Model::reconciled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconciled {
    /// The agent's total for the session, every model.
    pub reported: Tokens,
    /// The agent's own cost figure for the session, when it gave one.
    pub reported_cost: Option<Pico>,
    /// What no thread of the session accounts for: `reported` less the session's subtree.
    pub unattributed: Tokens,
    /// The same in money, when every thread of the session is priced.
    pub unattributed_cost: Option<Pico>,
}
