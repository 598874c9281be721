//! Notifications (`--notify`, `--notify-cmd CMD`): what is worth telling a person who is not
//! looking — an agent needs an approval or an answer, fails, stalls, or a swarm finishes.
//!
//! What to tell is decided here, from the model and the clock alone ([`Watch::observe`]): each look
//! compares how every agent shows now with how it showed at the last look, so a state is told
//! once, when it is entered. An agent first seen already in such a state is told only if its last
//! line is recent ([`FRESH_MS`]): starting the monitor on an old failure says nothing. How often
//! is decided by [`limit::Limiter`]; how it reaches the person by [`deliver`] (the terminal's bell
//! and desktop notification, the user's command), which is the only part that does anything.

pub mod deliver;
pub mod limit;
pub mod run;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::model::{Model, Status, Wait, format_usd};
use crate::router::ThreadIdx;
use crate::ui::label;
use crate::ui::status::{Activity, Clock, Shown};

/// How recent an agent's last line must be for a state it is first seen in to be told.
pub const FRESH_MS: i64 = 30_000;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Waiting for an approval.
    Approval,
    /// Waiting for the user's answer.
    Input,
    /// Waiting for a person, its agent did not say for what.
    NeedsYou,
    Failed,
    /// Active, and nothing from it or below it for the stall threshold.
    Stalled,
    /// A session whose agents had sub-agents has no agent working any more.
    Finished,
}

impl Kind {
    /// The event's name in `--notify-cmd`'s JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "needs-approval",
            Self::Input => "needs-input",
            Self::NeedsYou => "needs-you",
            Self::Failed => "failed",
            Self::Stalled => "stalled",
            Self::Finished => "finished",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Approval => "needs approval",
            Self::Input => "needs input",
            Self::NeedsYou => "needs you",
            Self::Failed => "failed",
            Self::Stalled => "stalled",
            Self::Finished => "finished",
        }
    }
}

/// One thing to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub kind: Kind,
    /// The session's root thread id.
    pub session: String,
    pub thread: String,
    /// The agent as the tree names it (a session: its first prompt).
    pub agent: String,
    /// What else there is to say: the error, how long it has been quiet, what the swarm spent.
    pub detail: String,
    /// Its agent's last line (unix ms), if known.
    pub at_ms: Option<i64>,
}

impl Notice {
    /// One line: `docs failed`.
    pub fn title(&self) -> String {
        format!("{} {}", self.agent, self.kind.words())
    }

    /// The event as `--notify-cmd` reads it on stdin; `suppressed`: notices the rate limit held
    /// back since the last one told.
    pub fn json(&self, source: &str, suppressed: u64) -> Value {
        json!({
            "event": self.kind.as_str(),
            "title": self.title(),
            "message": self.detail,
            "agent": self.agent,
            "thread": self.thread,
            "session": self.session,
            "source": source,
            "ts": self.at_ms,
            "suppressed": suppressed,
        })
    }
}

/// How one agent stood at the last look.
#[derive(Debug, Clone)]
struct Last {
    id: Arc<str>,
    state: Option<Kind>,
    /// A root: it or an agent below it was at work.
    busy: bool,
}

/// What was told so far, to tell only what changed.
#[derive(Debug, Default)]
pub struct Watch {
    last: Vec<Option<Last>>,
}

/// The state an agent's look is told as, if any.
fn state_of(shown: Shown) -> Option<Kind> {
    match shown {
        Shown::NeedsYou(Some(Wait::Approval)) => Some(Kind::Approval),
        Shown::NeedsYou(Some(Wait::UserInput)) => Some(Kind::Input),
        Shown::NeedsYou(None) => Some(Kind::NeedsYou),
        Shown::Is(Status::Failed) => Some(Kind::Failed),
        Shown::Stalled => Some(Kind::Stalled),
        _ => None,
    }
}

impl Watch {
    /// What changed since the last look that is worth telling, in the model's order.
    pub fn observe(&mut self, model: &Model, clock: Clock) -> Vec<Notice> {
        let activity = Activity::of(model);
        let mut notices = Vec::new();
        self.last.resize(model.threads.len(), None);
        for (i, t) in model.threads.iter().enumerate() {
            let idx = ThreadIdx(i as u32);
            let below = activity.subtree(idx);
            let state = state_of(Shown::of(t, below, clock));
            let busy = t.parent.is_none() && (t.status.is_active() || below.active > 0);
            // A slot reused by another thread (a model rebuilt) is a first sight.
            let before = self.last[i].take().filter(|l| l.id == t.id);
            let told = match &before {
                Some(l) => state.filter(|s| l.state != Some(*s)),
                None => state.filter(|s| *s != Kind::Stalled && fresh(t.last_ms, clock)),
            };
            if let Some(kind) = told {
                notices.push(notice(model, idx, kind, clock));
            }
            let finished = before.as_ref().is_some_and(|l| l.busy) && !busy && !t.children.is_empty();
            if finished && !clock.ended {
                notices.push(notice(model, idx, Kind::Finished, clock));
            }
            self.last[i] = Some(Last { id: Arc::clone(&t.id), state, busy });
        }
        notices
    }
}

fn fresh(last_ms: Option<i64>, clock: Clock) -> bool {
    match (clock.now_ms, last_ms) {
        (Some(now), Some(last)) => now.saturating_sub(last) <= FRESH_MS,
        _ => false,
    }
}

fn notice(model: &Model, idx: ThreadIdx, kind: Kind, clock: Clock) -> Notice {
    let t = model.thread(idx);
    let root = model.root_of(idx).unwrap_or(idx);
    let agent = label::of(model, idx).name;
    let detail = match kind {
        Kind::Failed => {
            let turn_error = t.turns.iter().rev().find_map(|u| u.error.as_ref());
            t.last_error.as_ref().or(turn_error).map(ToString::to_string).unwrap_or_default()
        }
        Kind::Stalled => {
            let quiet = clock.now_ms.zip(t.last_ms).map_or(0, |(now, last)| now.saturating_sub(last) / 1000);
            format!("nothing for {quiet}s")
        }
        Kind::Finished => {
            let n = t.subtree.threads;
            format!("{n} agent{} · {}", if n == 1 { "" } else { "s" }, format_usd(t.subtree.cost_usd()))
        }
        Kind::Approval | Kind::Input | Kind::NeedsYou => {
            t.current_item().map(|i| i.title.to_string()).filter(|s| !s.is_empty()).unwrap_or_default()
        }
    };
    Notice {
        kind,
        session: model.thread(root).id.to_string(),
        thread: t.id.to_string(),
        agent: crate::ui::text::truncate(&agent, 60),
        detail: crate::ui::text::truncate(&detail, 200),
        at_ms: t.last_ms,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pipeline::Pipeline;

    fn push(p: &mut Pipeline, method: &str, params: &Value, ms: i64) {
        p.push(json!({"method": method, "params": params, "emittedAtMs": ms}).to_string().as_bytes());
    }

    fn turn(p: &mut Pipeline, thread: &str, method: &str, status: &str, ms: i64) {
        let mut turn = json!({"id": format!("t-{thread}"), "status": status});
        if status == "failed" {
            turn["error"] = json!({"message": "high demand"});
        }
        push(p, method, &json!({"threadId": thread, "turn": turn}), ms);
    }

    /// A root that spawned `kid`, both at work at t=1000.
    fn swarm() -> Pipeline {
        let mut p = Pipeline::default();
        push(&mut p, "thread/started", &json!({"thread": {"id": "root"}}), 0);
        turn(&mut p, "root", "turn/started", "inProgress", 0);
        let spawn = json!({"threadId": "root", "turnId": "t-root", "item": {"type": "collabAgentToolCall",
            "id": "s1", "tool": "spawnAgent", "status": "completed", "senderThreadId": "root",
            "receiverThreadIds": ["kid"], "prompt": "scout the repo", "agentsStates": {}}});
        push(&mut p, "item/completed", &spawn, 1000);
        turn(&mut p, "kid", "turn/started", "inProgress", 1000);
        p
    }

    fn clock(p: &Pipeline) -> Clock {
        Clock { now_ms: p.model.stream_ms, stall_ms: 60_000, ended: false }
    }

    fn told(w: &mut Watch, p: &Pipeline, c: Clock) -> Vec<(Kind, String)> {
        w.observe(&p.model, c).into_iter().map(|n| (n.kind, n.thread)).collect()
    }

    #[test]
    fn each_state_is_told_once_when_it_is_entered() {
        let mut p = swarm();
        let mut w = Watch::default();
        assert!(told(&mut w, &p, clock(&p)).is_empty(), "nothing to tell: both at work");
        turn(&mut p, "kid", "turn/completed", "failed", 2000);
        let n = w.observe(&p.model, clock(&p));
        assert_eq!(n.len(), 1, "{n:?}");
        assert_eq!((n[0].kind, n[0].thread.as_str(), n[0].session.as_str()), (Kind::Failed, "kid", "root"));
        assert_eq!(n[0].detail, "high demand");
        assert!(told(&mut w, &p, clock(&p)).is_empty(), "told once, however often looked at");

        let status = |flags: &[&str]| json!({"threadId": "root", "status": {"type": "active", "activeFlags": flags}});
        push(&mut p, "thread/status/changed", &status(&["waitingOnApproval"]), 3000);
        assert_eq!(told(&mut w, &p, clock(&p)), [(Kind::Approval, "root".to_owned())]);
        push(&mut p, "thread/status/changed", &status(&[]), 3100);
        assert!(told(&mut w, &p, clock(&p)).is_empty());
        push(&mut p, "thread/status/changed", &status(&["waitingOnUserInput"]), 3200);
        assert_eq!(told(&mut w, &p, clock(&p)), [(Kind::Input, "root".to_owned())]);
        push(&mut p, "thread/status/changed", &status(&[]), 3300);

        // Time alone: quiet past the stall threshold.
        let later = Clock { now_ms: Some(3300 + 61_000), ..clock(&p) };
        assert_eq!(told(&mut w, &p, later), [(Kind::Stalled, "root".to_owned())]);
        assert!(told(&mut w, &p, later).is_empty());

        turn(&mut p, "root", "turn/completed", "completed", 70_000);
        let n = w.observe(&p.model, clock(&p));
        assert_eq!(n.iter().map(|n| n.kind).collect::<Vec<_>>(), [Kind::Finished]);
        // Agents that used nothing cost $0, known (not `—`).
        assert_eq!(n[0].detail, "2 agents · $0", "{n:?}");
    }

    #[test]
    fn what_was_already_so_when_first_seen_is_told_only_if_recent() {
        let mut p = swarm();
        turn(&mut p, "kid", "turn/completed", "failed", 2000);
        let old = Clock { now_ms: Some(2000 + FRESH_MS + 1), ..clock(&p) };
        assert!(told(&mut Watch::default(), &p, old).is_empty(), "an old failure, on starting");
        let recent = Clock { now_ms: Some(2000 + FRESH_MS), ..clock(&p) };
        assert_eq!(told(&mut Watch::default(), &p, recent), [(Kind::Failed, "kid".to_owned())]);
        let stalled = Clock { now_ms: Some(100_000), stall_ms: 1, ended: false };
        let n = told(&mut Watch::default(), &p, stalled);
        assert!(n.is_empty(), "a stall is a change over time, never told on a first sight: {n:?}");
    }

    #[test]
    fn a_stream_that_ends_mid_work_finishes_no_swarm() {
        let p = swarm();
        let mut w = Watch::default();
        w.observe(&p.model, clock(&p));
        let ended = Clock { ended: true, ..clock(&p) };
        assert!(told(&mut w, &p, ended).is_empty(), "unfinished is not finished");
    }
}
