//! The tree the screen and `stats` show: sessions, threads, turns, items, cards and lanes, tokens
//! and cost with subtree roll-ups. It consumes the router's events in order; pure, like the router.

mod claude;
mod diagnostics;
mod item;
pub mod prices;
mod rollout;
mod thread;
mod tokens;

use rustc_hash::FxHashMap;
use serde::Deserialize;

pub use self::diagnostics::{Diagnostics, LogEntry, MalformedSample};
pub use self::item::{Item, ItemKind, ItemStatus};
use self::prices::Pico;
pub use self::prices::{Price, Prices};
pub use self::thread::{ContextFill, Status, Thread, Turn, TurnStatus, short_id};
use self::tokens::Delta;
pub use self::tokens::{Rollup, Tokens};
use crate::router::{Class, Event, Role, Routed, Sink, ThreadIdx};
use crate::wire::methods::Method;
use crate::wire::{Line, Str, parse_raw, sanitize};

/// Bounds of what the model keeps; what they drop is counted in [`Diagnostics`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Text kept per item (the newest part).
    pub item_text: usize,
    /// Item text kept per thread; older items lose their text first.
    pub thread_text: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { item_text: 256 << 10, thread_text: 1 << 20 }
    }
}

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
    prices: Prices,
    limits: Limits,
    by_id: FxHashMap<Box<str>, ThreadIdx>,
}

impl Model {
    pub fn new(prices: Prices, limits: Limits) -> Self {
        Self { prices, limits, ..Self::default() }
    }

    pub fn thread(&self, idx: ThreadIdx) -> &Thread {
        &self.threads[idx.index()]
    }

    pub fn find(&self, id: &str) -> Option<ThreadIdx> {
        self.by_id.get(id).copied()
    }

    /// Totals over every thread, whatever its place in the tree.
    pub fn totals(&self) -> Rollup {
        let mut total = Rollup::default();
        for t in &self.threads {
            total.threads += 1;
            total.tokens.add(&t.tokens);
            if let Some(c) = t.cost {
                total.cost += c;
                total.priced += 1;
            }
        }
        total
    }

    pub fn unpriced_threads(&self) -> usize {
        self.threads.iter().filter(|t| t.cost.is_none()).count()
    }

    /// The chain from a thread up to its root or orphan, the thread first.
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

    fn seen(&mut self, idx: ThreadIdx, id: &str) {
        debug_assert_eq!(idx.index(), self.threads.len());
        self.threads.push(Thread::new(id));
        self.by_id.insert(id.into(), idx);
    }

    fn registered(
        &mut self,
        child: ThreadIdx,
        parent: ThreadIdx,
        via: crate::router::Via,
        card: Option<&str>,
        depth: u32,
    ) {
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
            if via == crate::router::Via::TaskTool {
                self.name_claude_agent(parent, card, child);
            }
        }
    }

    /// A Claude Code sub-agent is known by its task's description, and its role is the agent type.
    fn name_claude_agent(&mut self, parent: ThreadIdx, card: &str, child: ThreadIdx) {
        let Some(item) = self.threads[parent.index()].item(card) else { return };
        let (title, kind) = (item.title.clone(), item.agent_type.clone());
        let t = &mut self.threads[child.index()];
        if t.nickname.is_none() && !title.is_empty() {
            t.nickname = Some(title);
        }
        if t.agent_role.is_none() {
            t.agent_role = kind;
        }
    }

    fn attach_lane(&mut self, parent: ThreadIdx, card: &str, child: ThreadIdx) {
        let p = &mut self.threads[parent.index()];
        if let Some(&i) = p.item_index.get(card) {
            if !p.items[i].lanes.contains(&child) {
                p.items[i].lanes.push(child);
            }
        }
    }

    /// Adds a change of figures to a thread's subtree and every ancestor's.
    fn propagate(&mut self, from: ThreadIdx, delta: &Delta) {
        let chain: Vec<ThreadIdx> = self.ancestors(from).collect();
        for idx in chain {
            self.threads[idx.index()].subtree.apply(delta);
        }
    }

    /// Recomputes a thread's own cost after its tokens or model changed, and rolls the change up.
    fn reprice(&mut self, idx: ThreadIdx, old_tokens: Tokens) {
        let t = &self.threads[idx.index()];
        let new_cost = match &t.claude {
            Some(account) => account.cost(),
            None => t.model.as_ref().and_then(|m| self.prices.lookup(m.as_str())).map(|p| t.tokens.cost(&p)),
        };
        let old_cost = t.cost;
        let delta = Delta {
            threads: 0,
            tokens: t.tokens.minus(&old_tokens),
            cost: new_cost.unwrap_or_default() - old_cost.unwrap_or_default(),
            priced: i64::from(new_cost.is_some()) - i64::from(old_cost.is_some()),
        };
        self.threads[idx.index()].cost = new_cost;
        self.propagate(idx, &delta);
    }

    fn set_model(&mut self, idx: ThreadIdx, model: &str) {
        if model.is_empty() {
            return;
        }
        let t = &mut self.threads[idx.index()];
        if t.model.as_ref().is_some_and(|m| m.as_str() == model) {
            return;
        }
        t.model = Some(sanitize(model));
        let tokens = t.tokens;
        self.reprice(idx, tokens);
    }

    fn apply(&mut self, r: &Routed<'_, '_>) {
        let line = r.line;
        if let Some(t) = line.time() {
            self.stream_ms = Some(self.stream_ms.map_or(t, |s| s.max(t)));
        }
        match r.class {
            Class::Control => self.apply_control(r.thread, line),
            Class::Global => self.diagnostics.global(r.line_no, line),
            Class::Malformed => {}
            Class::Root | Class::Rehomed | Class::Suppressed => {
                if let Some(idx) = r.thread {
                    self.apply_thread_line(idx, line);
                }
            }
        }
    }

    /// Responses feed metadata: nicknames, roles, models, agent paths.
    fn apply_control(&mut self, subject: Option<ThreadIdx>, line: &Line<'_>) {
        let Some(idx) = subject else { return };
        let Some(result) = &line.msg.result else {
            return;
        };
        if let Some(info) = &result.thread {
            self.learn_thread_info(idx, info);
        }
        if let Some(model) = result.model.as_deref() {
            self.set_model(idx, model);
        }
    }

    fn learn_thread_info(&mut self, idx: ThreadIdx, info: &crate::wire::ThreadInfo<'_>) {
        let spawn = info.spawn();
        let t = &mut self.threads[idx.index()];
        let nickname = info.agent_nickname.as_deref().or(spawn.as_ref().and_then(|s| s.agent_nickname.as_deref()));
        if t.nickname.is_none() {
            t.nickname = nickname.filter(|n| !n.is_empty()).map(sanitize);
        }
        if t.agent_role.is_none() {
            let role = info.agent_role.as_deref().or(spawn.as_ref().and_then(|s| s.agent_role.as_deref()));
            t.agent_role = role.filter(|r| !r.is_empty()).map(sanitize);
        }
        if t.agent_path.is_none() {
            t.agent_path = spawn.as_ref().and_then(|s| s.agent_path.as_deref()).filter(|p| !p.is_empty()).map(sanitize);
        }
        if let Some(model) = info.model.as_deref() {
            self.set_model(idx, model);
        }
    }

    fn apply_thread_line(&mut self, idx: ThreadIdx, line: &Line<'_>) {
        let time = line.time();
        {
            let t = &mut self.threads[idx.index()];
            t.lines += 1;
            if let Some(ms) = time {
                t.first_ms.get_or_insert(ms);
                t.last_ms = Some(t.last_ms.map_or(ms, |l| l.max(ms)));
            }
            // A retry is transient: the thread's next line puts back the status it had.
            if t.status == Status::Retrying {
                if let Some(before) = t.before_retry.take() {
                    t.status = before;
                }
            }
        }
        if let Some(claude) = &line.msg.claude {
            self.apply_claude(idx, claude, time);
            self.generation += 1;
            return;
        }
        if let Some(rollout) = &line.msg.rollout {
            self.apply_rollout(idx, rollout, time);
            self.generation += 1;
            return;
        }
        let p = line.msg.params.rest();
        match line.msg.kind {
            Method::ThreadStarted => {
                if let Some(info) = &p.thread {
                    self.learn_thread_info(idx, info);
                }
            }
            Method::ThreadStatusChanged => self.status_changed(idx, p.status),
            Method::ThreadClosed => self.threads[idx.index()].status = Status::Closed,
            Method::ThreadTokenUsageUpdated => {
                if let Some(usage) = &p.token_usage {
                    let t = &mut self.threads[idx.index()];
                    let old = t.tokens;
                    if let Some(total) = &usage.total {
                        t.tokens.merge_max(total);
                    }
                    if let (Some(last), Some(window)) =
                        (usage.last.and_then(|l| l.total_tokens), usage.model_context_window)
                    {
                        t.context = Some(ContextFill { used: last, window });
                    }
                    if t.tokens != old {
                        self.reprice(idx, old);
                    }
                }
            }
            Method::ThreadSettingsUpdated => {
                if let Some(model) = p.settings_model.as_deref() {
                    self.set_model(idx, model);
                }
            }
            Method::ModelRerouted => {
                if let Some(model) = p.to_model.as_deref() {
                    self.set_model(idx, model);
                }
            }
            Method::TurnStarted => {
                if let Some(turn) = self.turn(idx, line) {
                    let t = &mut self.threads[idx.index()];
                    t.turns[turn].started_ms = t.turns[turn].started_ms.or(time);
                }
                self.threads[idx.index()].status = Status::Running;
            }
            Method::TurnCompleted => self.turn_completed(idx, line),
            Method::Error => {
                let message = parse_raw::<ErrorBody<'_>>(p.error).and_then(|e| e.message).map(|m| sanitize(&m));
                let t = &mut self.threads[idx.index()];
                if message.is_some() {
                    t.last_error = message;
                }
                if p.will_retry == Some(true) {
                    if t.status != Status::Retrying {
                        t.before_retry = Some(t.status);
                    }
                    t.status = Status::Retrying;
                } else {
                    t.status = Status::Failed;
                }
            }
            Method::ItemStarted => self.item_line(idx, line, false),
            Method::ItemCompleted => self.item_line(idx, line, true),
            _ if line.msg.method().unwrap_or("").starts_with("item/") => self.item_delta(idx, line),
            _ => {}
        }
        self.generation += 1;
    }

    fn status_changed(&mut self, idx: ThreadIdx, raw: Option<&serde_json::value::RawValue>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct StatusBody<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<Str<'a>>,
            #[serde(default)]
            active_flags: Vec<Str<'a>>,
        }
        let Some(body) = parse_raw::<StatusBody<'_>>(raw) else {
            return;
        };
        let t = &mut self.threads[idx.index()];
        let from = t.status;
        t.status = match body.kind.as_deref() {
            Some("active")
                if body.active_flags.iter().any(|f| f == "waitingOnApproval" || f == "waitingOnUserInput") =>
            {
                Status::Waiting
            }
            Some("active") if matches!(from, Status::Waiting | Status::Retrying) => Status::Running,
            Some("idle") if matches!(from, Status::Running | Status::Waiting | Status::Retrying) => Status::Idle,
            Some("notLoaded") => Status::Closed,
            _ => from,
        };
    }

    /// The turn a line names (creating it), as an index into the thread's turns.
    fn turn(&mut self, idx: ThreadIdx, line: &Line<'_>) -> Option<usize> {
        let id = line.msg.params.rest().turn.as_ref()?.id.as_deref()?;
        Some(self.turn_or_new(idx, id, None))
    }

    /// The turn with this id; on first sight a new one, in progress.
    pub(super) fn turn_or_new(&mut self, idx: ThreadIdx, id: &str, time: Option<i64>) -> usize {
        let t = &mut self.threads[idx.index()];
        *t.turn_index.entry(id.into()).or_insert_with(|| {
            t.turns.push(Turn {
                id: id.into(),
                status: TurnStatus::InProgress,
                started_ms: time,
                completed_ms: None,
                items: Vec::new(),
                error: None,
            });
            t.turns.len() - 1
        })
    }

    /// Ends a turn; its items still in progress end with it (an interrupted `wait` never gets its
    /// own item/completed, wire.md §3).
    pub(super) fn end_turn(&mut self, idx: ThreadIdx, turn: usize, state: TurnStatus, time: Option<i64>) {
        let item_state = match state {
            TurnStatus::Failed => ItemStatus::Failed,
            TurnStatus::Interrupted => ItemStatus::Interrupted,
            TurnStatus::Completed | TurnStatus::InProgress => ItemStatus::Completed,
        };
        let Thread { turns, items, .. } = &mut self.threads[idx.index()];
        let record = &mut turns[turn];
        record.status = state;
        record.completed_ms = time;
        for &i in &record.items {
            if items[i].status == ItemStatus::InProgress {
                items[i].status = item_state;
                items[i].completed_ms = time;
            }
        }
    }

    fn turn_completed(&mut self, idx: ThreadIdx, line: &Line<'_>) {
        let turn_status = line.msg.params.rest().turn.as_ref().and_then(|t| t.status.as_deref()).unwrap_or("");
        let (turn_state, status) = match turn_status {
            "completed" => (TurnStatus::Completed, Some(Status::Idle)),
            "failed" => (TurnStatus::Failed, Some(Status::Failed)),
            "interrupted" => (TurnStatus::Interrupted, Some(Status::Interrupted)),
            _ => (TurnStatus::Completed, None),
        };
        let error = line
            .msg
            .params
            .rest()
            .turn
            .as_ref()
            .and_then(|t| parse_raw::<ErrorBody<'_>>(t.error))
            .and_then(|e| e.message)
            .map(|m| sanitize(&m));
        let time = line.time();
        let Some(turn) = self.turn(idx, line) else {
            return;
        };
        self.end_turn(idx, turn, turn_state, time);
        let t = &mut self.threads[idx.index()];
        if let Some(s) = status {
            t.status = s;
        }
        if error.is_some() {
            t.turns[turn].error.clone_from(&error);
            t.last_error = error;
        }
    }

    /// The item a line names, created on first sight and filed under the line's turn.
    fn item_slot(&mut self, idx: ThreadIdx, id: &str, kind: &str, line: &Line<'_>) -> usize {
        if let Some(slot) = self.known_item(idx, id) {
            return slot;
        }
        let t = &self.threads[idx.index()];
        let turn = line.msg.params.turn_id.as_deref().and_then(|tid| t.turn_index.get(tid).copied());
        self.item_or_new(idx, id, ItemKind::of(kind), turn, None)
    }

    /// An item already seen. Deltas come in runs for one item: the last one is checked first.
    fn known_item(&mut self, idx: ThreadIdx, id: &str) -> Option<usize> {
        let t = &mut self.threads[idx.index()];
        if let Some(slot) = t.last_item.filter(|&slot| *t.items[slot].id == *id) {
            return Some(slot);
        }
        let slot = *t.item_index.get(id)?;
        t.last_item = Some(slot);
        Some(slot)
    }

    /// The item with this id; on first sight a new one of `kind`, filed under `turn`.
    pub(super) fn item_or_new(
        &mut self,
        idx: ThreadIdx,
        id: &str,
        kind: ItemKind,
        turn: Option<usize>,
        time: Option<i64>,
    ) -> usize {
        if let Some(slot) = self.known_item(idx, id) {
            return slot;
        }
        let t = &mut self.threads[idx.index()];
        let mut item = Item::new(id, "");
        item.kind = kind;
        item.turn = turn;
        item.started_ms = time;
        let slot = t.items.len();
        t.items.push(item);
        t.item_index.insert(id.into(), slot);
        t.last_item = Some(slot);
        if let Some(turn) = turn {
            t.turns[turn].items.push(slot);
        }
        slot
    }

    /// Changes an item through `edit`, keeping the thread's text accounting and bounds true.
    pub(super) fn edit_item(&mut self, idx: ThreadIdx, slot: usize, edit: impl FnOnce(&mut Item)) {
        let t = &mut self.threads[idx.index()];
        let item = &mut t.items[slot];
        let before = item.text.len();
        edit(item);
        t.text_bytes = (t.text_bytes + item.text.len()).saturating_sub(before);
        self.bound_text(idx, slot);
    }

    fn item_line(&mut self, idx: ThreadIdx, line: &Line<'_>, completed: bool) {
        let Some(wire_item) = &line.msg.params.rest().item else {
            return;
        };
        let Some(id) = wire_item.id.as_deref() else {
            return;
        };
        let slot = self.item_slot(idx, id, wire_item.kind(), line);
        let time = line.time();
        let receivers: Vec<ThreadIdx> = wire_item
            .receiver_thread_ids
            .iter()
            .flatten()
            .map(|r| &**r)
            .chain(wire_item.agent_thread_id.as_deref())
            .filter_map(|r| self.find(r))
            .collect();
        self.edit_item(idx, slot, |item| {
            item.absorb(wire_item, completed);
            if completed {
                item.completed_ms = item.completed_ms.or(time);
            } else {
                item.started_ms = item.started_ms.or(time);
            }
            for r in &receivers {
                if !item.receivers.contains(r) {
                    item.receivers.push(*r);
                }
            }
        });
        match wire_item.kind() {
            "collabAgentToolCall" => {
                let tool = wire_item.tool();
                let tool = tool.as_deref().unwrap_or("");
                // The spawn's resolved model names the child's model; item/started's never does.
                if completed && tool == "spawnAgent" {
                    if let Some(model) = wire_item.model.as_deref() {
                        for &r in &receivers {
                            self.set_model(r, model);
                        }
                    }
                }
                if completed && tool == "closeAgent" && wire_item.status.as_deref() == Some("completed") {
                    for &r in &receivers {
                        self.threads[r.index()].status = Status::Closed;
                    }
                }
                self.attach_known_lanes(idx, slot);
            }
            "subAgentActivity" => {
                // An activity naming a root (a child's `interacted` about `/root`) changes nothing about
                // it (routing.md §8).
                let named = wire_item.agent_thread_id.as_deref().and_then(|c| self.find(c));
                if let Some(child) = named.filter(|&c| self.threads[c.index()].role != Role::Root) {
                    if let Some(model) = wire_item.model.as_deref() {
                        self.set_model(child, model);
                    }
                    let path = wire_item.agent_path.as_deref().filter(|p| !p.is_empty());
                    let t = &mut self.threads[child.index()];
                    if t.agent_path.is_none() && wire_item.activity.as_deref() == Some("started") {
                        t.agent_path = path.map(sanitize);
                    }
                }
                self.attach_known_lanes(idx, slot);
            }
            _ => {}
        }
    }

    /// Children registered with an item as card before the item itself was applied (a spawn
    /// line replayed from a pending parent) still get their lane.
    fn attach_known_lanes(&mut self, parent: ThreadIdx, slot: usize) {
        let p = &self.threads[parent.index()];
        let id = &p.items[slot].id;
        let lanes: Vec<ThreadIdx> =
            p.children.iter().copied().filter(|c| self.threads[c.index()].card.as_deref() == Some(&**id)).collect();
        let item = &mut self.threads[parent.index()].items[slot];
        for c in lanes {
            if !item.lanes.contains(&c) {
                item.lanes.push(c);
            }
        }
    }

    fn item_delta(&mut self, idx: ThreadIdx, line: &Line<'_>) {
        let p = &line.msg.params;
        let Some(item_id) = p.item_id.as_deref() else {
            return;
        };
        let slot = self.item_slot(idx, item_id, "", line);
        let Some(delta) = p.delta.as_deref() else {
            return;
        };
        let index = p.summary_index.or(p.content_index);
        self.edit_item(idx, slot, |item| item.push_delta(delta, index));
    }

    /// Applies the per-item and per-thread text bounds after an item's text grew.
    fn bound_text(&mut self, idx: ThreadIdx, slot: usize) {
        let limits = self.limits;
        let t = &mut self.threads[idx.index()];
        let dropped = t.items[slot].bound_text(limits.item_text);
        t.text_bytes -= dropped.min(t.text_bytes);
        self.diagnostics.dropped_text_bytes += dropped as u64;
        while t.text_bytes > limits.thread_text && t.text_floor < t.items.len() {
            let floor = t.text_floor;
            if floor == slot {
                break;
            }
            let freed = t.items[floor].text.len();
            t.items[floor].text.clear();
            t.items[floor].dropped_bytes += freed as u64;
            t.text_bytes -= freed.min(t.text_bytes);
            self.diagnostics.dropped_text_bytes += freed as u64;
            t.text_floor += 1;
        }
    }
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
}

impl Sink for Model {
    fn event(&mut self, event: &Event<'_, '_>) {
        match event {
            Event::Seen { thread, id } => self.seen(*thread, id),
            Event::Registered { child, parent, via, card, depth } => {
                self.registered(*child, *parent, *via, *card, *depth);
            }
            Event::CardKnown { child, card } => {
                self.threads[child.index()].card = Some((*card).into());
                if let Some(parent) = self.threads[child.index()].parent {
                    self.attach_lane(parent, card, *child);
                }
            }
            Event::BecameRoot { thread } => {
                self.threads[thread.index()].role = Role::Root;
                self.sessions.push(*thread);
            }
            Event::Orphaned { thread, .. } => {
                let t = &mut self.threads[thread.index()];
                if t.role != Role::Orphan {
                    t.role = Role::Orphan;
                    t.parent = None;
                    self.unattributed.push(*thread);
                }
            }
            Event::Line(routed) => self.apply(routed),
            Event::Malformed { line_no, reason, record } => self.diagnostics.malformed(*line_no, reason, record),
        }
        self.generation += 1;
    }
}

/// Pretty money for people (`$0.84`, `$0.0031`); `stats --json` prints the exact decimal instead.
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

#[cfg(test)]
mod tests;
