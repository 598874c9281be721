//! What `serve` follows: the machine source's events applied to one pipeline, as the machine
//! view applies them, and each change that makes to a thread told once, as an event for the
//! clients: a new agent or a new place in the tree (`agent`), a status (`status`), an item
//! (`item`), spend (`usage`). Only the threads a batch of records touched are compared with what
//! was last told of them: the work is the batch's, whatever the history.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::model::Model;
use crate::model::prices::Pico;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Event as Routed, ThreadIdx};
use crate::source::files::{self, Record};
use crate::source::live::Event;
use crate::store::capture::{kind_name, status_name};
use crate::wire::Origin;

/// What was last told of a thread.
#[derive(Debug, Clone, Default, PartialEq)]
struct Told {
    known: bool,
    parent: Option<ThreadIdx>,
    depth: u32,
    status: &'static str,
    items: usize,
    last_item: Option<&'static str>,
    tokens: u64,
    cost: Option<Pico>,
}

/// The live state of each root session followed, by its id: what `/api/sessions` adds to the
/// store's rows, and what a client that must resync is sent.
pub type Sessions = Arc<Mutex<BTreeMap<String, Value>>>;

/// One change, for the clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: &'static str,
    pub data: Value,
}

pub struct Live {
    config: Config,
    pipeline: Pipeline,
    told: Vec<Told>,
    touched: Vec<ThreadIdx>,
    /// Roots whose live state changed since it was last published.
    roots: Vec<ThreadIdx>,
    origin: Origin,
    /// History is read: changes from now on are told (the history itself is in the store and in
    /// `/api/sessions`, not replayed as events).
    caught_up: bool,
    sessions: Sessions,
    /// Records applied since the store was last brought up to date.
    pub unsynced: u64,
    /// Sessions that stopped are compacted ([`Model::compact`]): the daemon follows every session
    /// of the machine for as long as it runs, and each that ended held all it ever held (18 KB
    /// a 20-line session; an hour of `serve_soak` starts 360). Off while an exporter reads the
    /// model: it sends a session's spans from its items and responses.
    pub compact: bool,
    /// Sessions compacted so far.
    pub compacted: u64,
}

impl Live {
    pub fn new(config: Config, sessions: Sessions) -> Self {
        Self {
            pipeline: Pipeline::new(config.clone()),
            config,
            told: Vec::new(),
            touched: Vec::new(),
            roots: Vec::new(),
            origin: Origin::NONE,
            caught_up: false,
            sessions,
            unsynced: 0,
            compact: true,
            compacted: 0,
        }
    }

    pub fn model(&self) -> &Model {
        &self.pipeline.model
    }

    /// The format the source's lines are in (what an exporter names the provider by).
    pub fn format(&self) -> &str {
        self.pipeline.format()
    }

    /// Applies one event of the source; returns the changes it made, in order.
    pub fn apply(&mut self, event: Event) -> Vec<Change> {
        match event {
            Event::Records(records) => {
                // Record by record: each change is its own event, in the order the lines made them.
                let mut out = Vec::new();
                let mut n = 0u64;
                let _ = files::read_records(records.as_bytes(), files::MAX_LINE, |record| {
                    n += 1;
                    let touched = &mut self.touched;
                    self.pipeline.feed(record, &self.origin, &mut |e: &Routed<'_, '_>| touch(touched, e));
                    self.changes_into(&mut out);
                });
                self.unsynced = self.unsynced.saturating_add(n);
                self.publish_sessions();
                out
            }
            Event::Oversized { len, head } => {
                self.pipeline.feed(Record::TooLong { len, head: &head }, &Origin::NONE, &mut |_: &Routed<'_, '_>| {});
                Vec::new()
            }
            Event::Origin(origin) => {
                self.origin = origin;
                Vec::new()
            }
            Event::Stopped { id, guessed_at_ms } => {
                self.pipeline.stopped(&id, guessed_at_ms);
                self.touch_session(&id);
                let changes = self.changes();
                // After its changes are told: they read its newest item.
                if let Some(root) = self.pipeline.find(&id).filter(|_| self.compact) {
                    self.pipeline.model.compact(root);
                    self.compacted += 1;
                }
                changes
            }
            Event::Resumed(id) => {
                self.pipeline.resumed(&id);
                self.touch_session(&id);
                self.changes()
            }
            Event::Reset(_) => {
                self.pipeline = Pipeline::new(self.config.clone());
                self.told.clear();
                self.roots.clear();
                self.sessions.lock().unwrap_or_else(PoisonError::into_inner).clear();
                vec![Change { kind: "resync", data: json!({"reason": "the source started again"}) }]
            }
            Event::Live => {
                self.caught_up = true;
                vec![Change { kind: "resync", data: json!({"reason": "caught up"}) }]
            }
            Event::Connected { .. }
            | Event::Disconnected { .. }
            | Event::Notice(_)
            | Event::Ended(_)
            | Event::Sessions(_)
            | Event::Followed(_) => Vec::new(),
        }
    }

    /// Every thread of the session whose root is `id` (a stop or a resume changes them all).
    fn touch_session(&mut self, id: &str) {
        let Some(root) = self.pipeline.find(id) else { return };
        let model = &self.pipeline.model;
        self.touched.extend(
            (0..model.threads.len())
                .map(|i| ThreadIdx(u32::try_from(i).unwrap_or(u32::MAX)))
                .filter(|&t| model.root_of(t) == Some(root)),
        );
    }

    /// What changed in the touched threads since it was last told.
    fn changes(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        self.changes_into(&mut out);
        self.publish_sessions();
        out
    }

    /// The live state of the sessions that changed, for `/api/sessions` (once per batch).
    fn publish_sessions(&mut self) {
        if self.roots.is_empty() {
            return;
        }
        self.roots.sort_unstable();
        self.roots.dedup();
        let model = &self.pipeline.model;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        for &root in &self.roots {
            sessions.insert(model.thread(root).id.to_string(), live_state(model, root));
        }
        self.roots.clear();
    }

    fn changes_into(&mut self, out: &mut Vec<Change>) {
        if self.touched.is_empty() {
            return;
        }
        let mut touched = std::mem::take(&mut self.touched);
        touched.sort_unstable();
        touched.dedup();
        let model = &self.pipeline.model;
        if self.told.len() < model.threads.len() {
            self.told.resize(model.threads.len(), Told::default());
        }
        for &idx in &touched {
            let Some(t) = model.threads.get(idx.index()) else { continue };
            let now = Told {
                known: true,
                parent: t.parent,
                depth: t.depth,
                status: t.status.as_str(),
                items: t.items.len(),
                last_item: t.items.last().map(|i| status_name(i.status)),
                tokens: t.tokens.total,
                cost: t.cost,
            };
            let before = std::mem::replace(&mut self.told[idx.index()], now.clone());
            if now == before {
                continue;
            }
            self.roots.extend(model.root_of(idx));
            if self.caught_up {
                out.extend(told(model, idx, &before, &now));
            }
        }
        touched.clear();
        // Its room is used again by the next record.
        self.touched = touched;
    }
}

fn touch(touched: &mut Vec<ThreadIdx>, event: &Routed<'_, '_>) {
    match event {
        Routed::Seen { thread, .. }
        | Routed::Depth { thread, .. }
        | Routed::BecameRoot { thread }
        | Routed::Orphaned { thread, .. } => touched.push(*thread),
        Routed::Registered { child, parent, .. } => touched.extend([*child, *parent]),
        Routed::CardKnown { child, .. } => touched.push(*child),
        Routed::Line(line) => touched.extend(line.thread.into_iter().chain(line.owner)),
        Routed::Malformed { .. } => {}
    }
}

fn cost(c: Option<Pico>) -> Value {
    c.map_or(Value::Null, |c| c.to_string().parse().unwrap_or(Value::Null))
}

/// The events telling `now` after `before` of one thread.
fn told(model: &Model, idx: ThreadIdx, before: &Told, now: &Told) -> Vec<Change> {
    let t = model.thread(idx);
    let session = model.root_of(idx).map(|r| model.thread(r).id.to_string());
    let base = |mut v: Value| {
        v["session"] = json!(session);
        v["thread"] = json!(t.id.as_ref());
        v
    };
    let mut out = Vec::new();
    if !before.known || before.parent != now.parent || before.depth != now.depth {
        let parent = t.parent.map(|p| model.thread(p).id.to_string());
        let model_name = t.model.as_ref().map(crate::wire::Clean::as_str);
        out.push(Change {
            kind: "agent",
            data: base(json!({"parent": parent, "depth": t.depth, "name": t.name(), "model": model_name})),
        });
    }
    if before.status != now.status {
        out.push(Change { kind: "status", data: base(json!({"status": now.status})) });
    }
    if before.items != now.items || before.last_item != now.last_item {
        let last = t.items.last();
        out.push(Change {
            kind: "item",
            data: base(json!({
                "items": now.items,
                "kind": last.map(|i| kind_name(&i.kind)),
                "title": last.map(|i| i.title.as_str()),
                "itemStatus": now.last_item,
            })),
        });
    }
    if before.tokens != now.tokens || before.cost != now.cost {
        out.push(Change { kind: "usage", data: base(json!({"tokens": tokens(&t.tokens), "costUsd": cost(t.cost)})) });
    }
    out
}

fn tokens(t: &crate::model::Tokens) -> Value {
    json!({
        "input": t.input,
        "cachedInput": t.cached_input,
        "cacheWrite": t.cache_write,
        "output": t.output,
        "reasoningOutput": t.reasoning_output,
        "total": t.total,
    })
}

/// A root session's live state: its status, agents and figures now.
fn live_state(model: &Model, root: ThreadIdx) -> Value {
    let t = model.thread(root);
    let spent = model.spent(root);
    json!({
        "id": t.id.as_ref(),
        "status": t.status.as_str(),
        "agents": spent.threads,
        "lastLineMs": t.last_ms,
        "tokens": tokens(&spent.tokens),
        "costUsd": cost(spent.cost_usd()),
        "costSource": spent.source().as_str(),
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::source::live::Records;

    const ID: &str = "00000000-0000-4000-8000-000000000001";

    /// A Claude Code session's lines: a prompt, then `n` answers of 1 input and 1 output token.
    fn session(from: u64, n: u64) -> Event {
        let at = "2026-12-03T22:00:00.000Z";
        let mut text = String::new();
        if from == 1 {
            let _ = writeln!(
                text,
                r#"{{"parentUuid":null,"sessionId":"{ID}","version":"2.1.39","type":"user","message":{{"role":"user","content":"go"}},"uuid":"{ID}-u","timestamp":"{at}"}}"#
            );
        }
        for i in from..from + n {
            let _ = writeln!(
                text,
                r#"{{"parentUuid":"{ID}-u","sessionId":"{ID}","version":"2.1.39","message":{{"model":"claude-opus-4-6","id":"msg_{i}","type":"message","role":"assistant","content":[{{"type":"text","text":"line {i}"}}],"usage":{{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}},"requestId":"req_{i}","type":"assistant","uuid":"{ID}-{i}","timestamp":"{at}"}}"#
            );
        }
        Event::Records(Records::new(text.into_bytes()))
    }

    #[test]
    fn a_session_that_stopped_holds_only_what_can_still_change_and_keeps_its_figures() {
        let mut live = Live::new(Config::default(), Sessions::default());
        live.apply(session(1, 20));
        let root = live.pipeline.find(ID).unwrap();
        let before = live.model().thread(root).clone();
        assert!(before.items.kept() >= 20 && before.responses().len() == 20, "{}", before.items.kept());
        live.apply(Event::Stopped { id: ID.into(), guessed_at_ms: Some(0) });
        let t = live.model().thread(root);
        assert_eq!(live.compacted, 1);
        assert!(t.items.kept() <= 1 + crate::model::OPENING_ITEMS, "{} items held", t.items.kept());
        assert_eq!(t.responses().len(), 1);
        assert_eq!(
            (t.items.len(), t.lines, t.tokens, t.cost),
            (before.items.len(), before.lines, before.tokens, before.cost)
        );
        assert_eq!(live.model().spent(root).tokens, before.subtree.tokens);
        // It goes on where it stopped: its next answer is one more item and one more response.
        live.apply(session(21, 1));
        let t = live.model().thread(root);
        assert_eq!(
            (t.items.len(), t.responses_stated(), t.tokens.total),
            (before.items.len() + 1, 21, before.tokens.total + 2)
        );
        assert!(live.model().diagnostics.dropped_items > 0);
    }
}
