//! How an agent shows on screen, beyond its routing status (routing.md §6): whether a quiet
//! parent is waiting on its children or truly stalled needs the activity of its whole subtree,
//! which [`Activity`] gathers once per model change in one iterative pass (no recursion: a chain
//! of 100k children must not overflow the stack).

use rustc_hash::FxHashMap;

use crate::model::{AgentOp, ItemStatus, Model, Status, Thread, Wait};
use crate::router::ThreadIdx;

/// What a thread's descendants are doing, for one model generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subtree {
    /// Newest line time among the descendants (the thread itself excluded).
    pub last_ms: Option<i64>,
    /// Oldest line time among the descendants (the thread itself excluded).
    pub first_ms: Option<i64>,
    /// Descendants whose own status is active.
    pub active: u32,
    /// What it waits on itself (its own sub-agents, not theirs): each child at work or spawned and
    /// not started yet, and each spawn call of its current turn not answered whose agent is not
    /// one of those (a call and the agent it started are one).
    pub children: u32,
}

/// [`Subtree`] of every thread, indexed like `model.threads`.
#[derive(Debug, Default)]
pub struct Activity {
    of: Vec<Subtree>,
    /// People needed: agents waiting for an approval or for input.
    pub need_you: usize,
    pub active: usize,
    /// The newest line time of any thread.
    pub newest_ms: Option<i64>,
}

impl Activity {
    pub fn of(model: &Model) -> Self {
        let n = model.threads.len();
        let mut of = vec![Subtree::default(); n];
        // Preorder from every top (a root, an orphan, a pending thread), then fold each thread
        // into its parent from the leaves up: reversed preorder visits children before parents.
        let mut order = Vec::with_capacity(n);
        let mut stack: Vec<ThreadIdx> = Vec::new();
        for (i, t) in model.threads.iter().enumerate() {
            if t.parent.is_none_or(|p| p.index() >= n) {
                stack.push(ThreadIdx(i as u32));
                while let Some(at) = stack.pop() {
                    order.push(at);
                    stack.extend(model.thread(at).children.iter().copied().filter(|c| c.index() < n));
                }
            }
        }
        for &idx in order.iter().rev() {
            let t = model.thread(idx);
            let Some(p) = t.parent.filter(|p| p.index() < n) else { continue };
            let mine = of[idx.index()];
            let up = &mut of[p.index()];
            up.active = up.active.saturating_add(mine.active).saturating_add(u32::from(t.status.is_active()));
            up.last_ms = up.last_ms.max(mine.last_ms).max(t.last_ms);
            up.first_ms = [up.first_ms, mine.first_ms, t.first_ms].into_iter().flatten().min();
        }
        for (i, t) in model.threads.iter().enumerate() {
            of[i].children = waits_on(model, t);
        }
        let need_you = model.threads.iter().filter(|t| t.status == Status::Waiting).count();
        let active = model.threads.iter().filter(|t| t.status.is_active()).count();
        let newest_ms = model.threads.iter().filter_map(|t| t.last_ms).max();
        Self { of, need_you, active, newest_ms }
    }

    pub fn subtree(&self, idx: ThreadIdx) -> Subtree {
        self.of.get(idx.index()).copied().unwrap_or_default()
    }
}

/// A thread's state as the screen names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Is(Status),
    /// An idle child: it answered and has nothing left to do.
    Done,
    /// Waiting for a person: an approval (`waitingOnApproval`) or an answer (`waitingOnUserInput`);
    /// `None` when the agent did not say which.
    NeedsYou(Option<Wait>),
    /// Running with this many sub-agents of its own at work or spawn calls not yet answered.
    OnChildren(u32),
    /// Active, and no line for longer than the stall threshold in itself or anything below it.
    Stalled,
    /// The stream ended (a replay's last line, a closed pipe) while the thread was still active:
    /// nothing more will come, so it is neither running nor failed.
    Unfinished,
}

/// What [`Shown::of`] needs besides the thread.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now_ms: Option<i64>,
    pub stall_ms: u64,
    /// The feed has ended: nothing more will arrive.
    pub ended: bool,
}

impl Shown {
    pub fn of(t: &Thread, below: Subtree, clock: Clock) -> Self {
        let stall = i64::try_from(clock.stall_ms).unwrap_or(i64::MAX);
        let quiet_for = |last: Option<i64>| match (clock.now_ms, last) {
            (Some(now), Some(last)) => now.saturating_sub(last),
            _ => 0,
        };
        let quiet = clock.stall_ms > 0 && quiet_for(t.last_ms) > stall;
        match t.status {
            Status::Waiting => Self::NeedsYou(t.waiting_on()),
            s if s.is_active() && clock.ended => Self::Unfinished,
            Status::Running if below.children > 0 => {
                let below_quiet = clock.stall_ms > 0 && quiet_for(below.last_ms) > stall;
                if quiet && below_quiet { Self::Stalled } else { Self::OnChildren(below.children) }
            }
            s if s.is_active() && quiet => Self::Stalled,
            Status::Idle if t.parent.is_some() => Self::Done,
            s => Self::Is(s),
        }
    }

    pub fn glyph(self) -> &'static str {
        match self {
            Self::Is(Status::Pending) => "○",
            Self::Is(Status::Running) => "●",
            Self::Is(Status::Waiting) | Self::NeedsYou(_) => "⚑",
            Self::Is(Status::Retrying) => "↻",
            Self::Is(Status::Idle) | Self::Done => "✓",
            Self::Is(Status::Failed) => "✗",
            Self::Is(Status::Interrupted) => "◼",
            Self::Is(Status::Closed) => "·",
            Self::OnChildren(_) => "◷",
            Self::Stalled => "◔",
            Self::Unfinished => "◌",
        }
    }

    /// One word (or two) for the lane header and the legend.
    pub fn word(self) -> String {
        match self {
            Self::Is(s) => s.as_str().to_owned(),
            Self::Done => "done".to_owned(),
            Self::NeedsYou(Some(Wait::Approval)) => "needs approval".to_owned(),
            Self::NeedsYou(Some(Wait::UserInput)) => "needs input".to_owned(),
            Self::NeedsYou(None) => "needs you".to_owned(),
            Self::OnChildren(n) => format!("waiting on {n}"),
            Self::Stalled => "stalled".to_owned(),
            Self::Unfinished => "unfinished".to_owned(),
        }
    }
}

/// What `t` waits on (issue 19: `waiting on 5` beside `⑂ spawn ×4` counted the larger of its
/// children at work and its open calls, and a child spawned but not started in neither): each
/// spawn call of its current turn still open or whose agent is live, and each live child no
/// call names. A call and its agent are paired by the ids the agent gives (the call's id on the
/// child, the child's id on the call). Only where none is told yet (a Claude OTLP child learns
/// its call when the call's span ends) are a call no agent names and an agent no call names
/// taken to be each other, in the order they came; a call that failed or was stopped started no
/// agent and takes none (a failed spawn took the next call's child: two waited on, not one).
fn waits_on(model: &Model, t: &Thread) -> u32 {
    let n = model.threads.len();
    let live = |c: ThreadIdx| {
        c.index() < n && {
            let c = model.thread(c);
            // Spawned and nothing told of it but that: a Codex child between its spawn's
            // completion and its first turn (`collab_v1`: 7 ms) is waited on as one at work. (An
            // OTLP child with spans and no turn has told more: its status says.)
            c.status.is_active()
                || (c.status == Status::Pending && c.turns.is_empty() && c.items.is_empty() && c.tokens.total == 0)
        }
    };
    let turn = t.turns.len().checked_sub(1);
    let open = |i: &crate::model::Item| i.status == ItemStatus::InProgress && i.turn == turn;
    if t.children.is_empty() {
        // No agent yet (most threads): only its current turn's open calls, read from the end.
        let calls =
            t.items.iter().rev().take_while(|i| i.turn == turn).filter(|i| i.op == Some(AgentOp::Spawn) && open(i));
        return u32::try_from(calls.count()).unwrap_or(u32::MAX);
    }
    let calls: Vec<&crate::model::Item> = t.items.iter().filter(|i| i.op == Some(AgentOp::Spawn)).collect();
    // Which call names each child, found once (a parent of thousands is drawn every frame).
    let by_id: FxHashMap<&str, usize> = calls.iter().enumerate().map(|(k, i)| (&*i.id, k)).collect();
    let mut named: FxHashMap<ThreadIdx, usize> = FxHashMap::default();
    for (k, call) in calls.iter().enumerate() {
        for &c in call.lanes.iter().chain(&call.receivers) {
            named.entry(c).or_insert(k);
        }
    }
    let mut agents: Vec<(bool, bool)> = vec![(false, false); calls.len()];
    let mut unnamed_children = Vec::new();
    for &c in &t.children {
        let call =
            named.get(&c).copied().or_else(|| model.thread(c).card.as_deref().and_then(|id| by_id.get(id).copied()));
        match call {
            Some(k) => agents[k] = (true, agents[k].1 || live(c)),
            None => unnamed_children.push(c),
        }
    }
    // In the order they began, not the order they were heard of (an OTLP batch comes in the
    // order its spans ended).
    if unnamed_children.len() > 1 {
        unnamed_children.sort_by_key(|&c| (model.thread(c).began_ms.or(model.thread(c).first_ms), c.index()));
    }
    let mut unnamed_children = unnamed_children.into_iter();
    let mut count = 0usize;
    for (call, (has_agent, agent_lives)) in calls.iter().zip(agents) {
        let started_none = matches!(call.status, ItemStatus::Failed | ItemStatus::Interrupted | ItemStatus::Declined);
        let agent_lives =
            if has_agent || started_none { agent_lives } else { unnamed_children.next().is_some_and(live) };
        count += usize::from(open(call) || agent_lives);
    }
    count += unnamed_children.filter(|&c| live(c)).count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(now: i64) -> Clock {
        Clock { now_ms: Some(now), stall_ms: 60_000, ended: false }
    }

    fn note(method: &str, params: &serde_json::Value, ms: i64) -> String {
        serde_json::json!({"method": method, "params": params, "emittedAtMs": ms}).to_string()
    }

    /// A root that spawned one child; both in a turn; the root's last line at t=1000, the child's
    /// at `child_ms`.
    fn parent_and_child(child_ms: i64) -> crate::pipeline::Pipeline {
        use serde_json::json;
        let collab = |event: &str, status: &str, receivers: &[&str]| {
            note(
                event,
                &json!({"threadId": "root", "turnId": "t1", "item": {"type": "collabAgentToolCall", "id": "c1",
                    "tool": "spawnAgent", "status": status, "senderThreadId": "root",
                    "receiverThreadIds": receivers, "prompt": "scout the repo", "agentsStates": {}}}),
                1000,
            )
        };
        let lines = [
            note("thread/started", &json!({"thread": {"id": "root", "parentThreadId": null}}), 0),
            note("turn/started", &json!({"threadId": "root", "turn": {"id": "t1", "status": "inProgress"}}), 0),
            collab("item/started", "inProgress", &[]),
            collab("item/completed", "completed", &["kid"]),
            note("turn/started", &json!({"threadId": "kid", "turn": {"id": "k1", "status": "inProgress"}}), child_ms),
        ];
        let mut p = crate::pipeline::Pipeline::default();
        for l in &lines {
            p.push(l.as_bytes());
        }
        p
    }

    fn shown(p: &crate::pipeline::Pipeline, id: &str, c: Clock) -> Shown {
        let idx = p.find(id).expect("thread");
        Shown::of(p.model.thread(idx), Activity::of(&p.model).subtree(idx), c)
    }

    #[test]
    fn a_quiet_parent_with_a_busy_child_is_waiting_not_stalled() {
        let m = parent_and_child(100_000);
        assert_eq!(m.model.threads.len(), 2);
        assert_eq!(shown(&m, "root", clock(120_000)), Shown::OnChildren(1));
        assert_eq!(shown(&m, "kid", clock(120_000)), Shown::Is(Status::Running));
    }

    #[test]
    fn stalled_means_the_whole_subtree_is_quiet() {
        let m = parent_and_child(2_000);
        assert_eq!(shown(&m, "root", clock(200_000)), Shown::Stalled);
        assert_eq!(shown(&m, "kid", clock(200_000)), Shown::Stalled);
        assert_eq!(shown(&m, "root", clock(30_000)), Shown::OnChildren(1), "not quiet yet: on its child");
    }

    #[test]
    fn waiting_counts_its_own_sub_agents_and_open_spawn_calls_not_theirs() {
        use serde_json::json;
        let mut m = parent_and_child(100_000);
        // The child spawns a grandchild: the root still waits on one, the child on one.
        for l in [
            note("thread/started", &json!({"thread": {"id": "grand", "parentThreadId": "kid"}}), 100_001),
            note("turn/started", &json!({"threadId": "grand", "turn": {"id": "g1", "status": "inProgress"}}), 100_002),
        ] {
            m.push(l.as_bytes());
        }
        assert_eq!(shown(&m, "root", clock(100_010)), Shown::OnChildren(1));
        assert_eq!(shown(&m, "kid", clock(100_010)), Shown::OnChildren(1));
        // A spawn call not yet answered is waited on before its agent has a name.
        let spawning = note(
            "item/started",
            &json!({"threadId": "grand", "turnId": "g1", "item": {"type": "collabAgentToolCall", "id": "c9",
                "tool": "spawnAgent", "status": "inProgress", "senderThreadId": "grand",
                "receiverThreadIds": [], "prompt": "dig", "agentsStates": {}}}),
            100_003,
        );
        m.push(spawning.as_bytes());
        assert_eq!(shown(&m, "grand", clock(100_010)), Shown::OnChildren(1));
    }

    #[test]
    fn a_call_and_the_agent_it_started_are_waited_on_once_and_a_child_not_started_yet_too() {
        use serde_json::json;
        let spawn = |event: &str, id: &str, status: &str, receivers: &[&str], ms: i64| {
            note(
                event,
                &json!({"threadId": "root", "turnId": "t1", "item": {"type": "collabAgentToolCall", "id": id,
                    "tool": "spawnAgent", "status": status, "senderThreadId": "root",
                    "receiverThreadIds": receivers, "prompt": "go", "agentsStates": {}}}),
                ms,
            )
        };
        let mut p = crate::pipeline::Pipeline::default();
        for l in [
            note("thread/started", &json!({"thread": {"id": "root", "parentThreadId": null}}), 0),
            note("turn/started", &json!({"threadId": "root", "turn": {"id": "t1", "status": "inProgress"}}), 0),
            spawn("item/started", "c1", "inProgress", &[], 10),
            // collab_v1: the child's first line is an idle status, before its spawn names it.
            note("thread/status/changed", &json!({"threadId": "kid", "status": {"type": "idle"}}), 20),
            spawn("item/completed", "c1", "completed", &["kid"], 20),
        ] {
            p.push(l.as_bytes());
        }
        assert_eq!(shown(&p, "root", clock(25)), Shown::OnChildren(1), "spawned, not started: waited on");
        p.push(spawn("item/started", "c2", "inProgress", &[], 30).as_bytes());
        let started = json!({"threadId": "kid", "turn": {"id": "k1", "status": "inProgress"}});
        p.push(note("turn/started", &started, 31).as_bytes());
        assert_eq!(shown(&p, "root", clock(35)), Shown::OnChildren(2), "the child at work and the open call");
        let done = json!({"threadId": "kid", "turn": {"id": "k1", "status": "completed"}});
        p.push(note("turn/completed", &done, 40).as_bytes());
        assert_eq!(shown(&p, "root", clock(45)), Shown::OnChildren(1), "only the open call");
    }

    #[test]
    fn a_failed_spawn_takes_no_agent_of_the_next_call() {
        use serde_json::json;
        let spawn = |event: &str, id: &str, status: &str, ms: i64| {
            note(
                event,
                &json!({"threadId": "root", "turnId": "t1", "item": {"type": "collabAgentToolCall", "id": id,
                    "tool": "spawnAgent", "status": status, "senderThreadId": "root",
                    "receiverThreadIds": [], "prompt": "go", "agentsStates": {}}}),
                ms,
            )
        };
        let mut p = crate::pipeline::Pipeline::default();
        for l in [
            note("thread/started", &json!({"thread": {"id": "root", "parentThreadId": null}}), 0),
            note("turn/started", &json!({"threadId": "root", "turn": {"id": "t1", "status": "inProgress"}}), 0),
            // Over the thread limit: completed failed, no agent (wire.md §3).
            spawn("item/started", "c1", "inProgress", 10),
            spawn("item/completed", "c1", "failed", 11),
            spawn("item/started", "c2", "inProgress", 20),
            // The second call's agent, told by its own line before the call names it.
            note("thread/started", &json!({"thread": {"id": "kid", "parentThreadId": "root"}}), 21),
            note("turn/started", &json!({"threadId": "kid", "turn": {"id": "k1", "status": "inProgress"}}), 22),
        ] {
            p.push(l.as_bytes());
        }
        assert_eq!(shown(&p, "root", clock(25)), Shown::OnChildren(1), "the second call and its agent, once");
        let done = json!({"threadId": "kid", "turn": {"id": "k1", "status": "completed"}});
        p.push(note("turn/completed", &done, 30).as_bytes());
        p.push(spawn("item/completed", "c2", "completed", 31).as_bytes());
        assert_eq!(shown(&p, "root", clock(35)), Shown::Is(Status::Running), "nothing left to wait on");
    }

    #[test]
    fn an_ended_stream_leaves_active_agents_unfinished() {
        let m = parent_and_child(2_000);
        let ended = Clock { ended: true, ..clock(3_000) };
        assert_eq!(shown(&m, "kid", ended), Shown::Unfinished);
    }

    #[test]
    fn activity_counts_descendants_without_recursion() {
        let m = parent_and_child(5_000);
        let a = Activity::of(&m.model);
        let root = m.find("root").expect("root");
        assert_eq!(a.subtree(root), Subtree { last_ms: Some(5_000), first_ms: Some(5_000), active: 1, children: 1 });
        assert_eq!(a.active, 2);
        assert_eq!(a.need_you, 0);
    }

    #[test]
    fn an_approval_and_an_answer_are_told_apart_and_both_need_a_person() {
        let mut m = parent_and_child(5_000);
        let waiting = |thread: &str, flag: &str| {
            let status = serde_json::json!({"type": "active", "activeFlags": [flag]});
            note("thread/status/changed", &serde_json::json!({"threadId": thread, "status": status}), 5_000)
        };
        m.push(waiting("root", "waitingOnApproval").as_bytes());
        m.push(waiting("kid", "waitingOnUserInput").as_bytes());
        let (root, kid) = (shown(&m, "root", clock(6_000)), shown(&m, "kid", clock(6_000)));
        assert_eq!(root, Shown::NeedsYou(Some(Wait::Approval)));
        assert_eq!(kid, Shown::NeedsYou(Some(Wait::UserInput)));
        assert_eq!((root.word(), kid.word()), ("needs approval".to_owned(), "needs input".to_owned()));
        assert_eq!(Activity::of(&m.model).need_you, 2);
        let active = serde_json::json!({"type": "active", "activeFlags": []});
        m.push(
            note("thread/status/changed", &serde_json::json!({"threadId": "kid", "status": active}), 5_500).as_bytes(),
        );
        assert_eq!(shown(&m, "kid", clock(6_000)), Shown::Is(Status::Running));
        assert_eq!(m.model.thread(m.find("kid").expect("kid")).waiting_on(), None, "a wait ended is forgotten");
    }

    /// Claude Code 2.1.332's telemetry names the call that spawned a sub-agent only on the call's
    /// `tool.execution` span, exported when the call is answered (`wire::otlp::sub_agent`): until
    /// then calls and agents are paired in order. Two calls, A then B; B's agent is heard of first
    /// (a batch of spans comes in the order they ended) though A's began first. When B's agent is
    /// done and B answered, the session waits on A alone: one, not two (its agent taken for B's).
    #[test]
    fn otlp_agents_no_call_names_yet_are_paired_with_the_calls_in_the_order_they_began() {
        use serde_json::json;
        let attrs = |pairs: &[(&str, &str)]| -> Vec<serde_json::Value> {
            pairs.iter().map(|(k, v)| json!({"key": k, "value": {"stringValue": v}})).collect()
        };
        let ns = |ms: i64| (ms * 1_000_000).to_string();
        let log = |ts: i64, at: i64, pairs: &[(&str, &str)]| {
            let mut all = vec![("session.id", "sess")];
            all.extend_from_slice(pairs);
            json!({"ts": ts, "dir": "in", "msg": {"otlp": "log",
                "log": {"attributes": attrs(&all), "timeUnixNano": ns(at), "spanId": "", "traceId": ""}}})
            .to_string()
        };
        let chat = |ts: i64, kid: &str, span: &str, from: i64, to: i64| {
            let a = [
                ("session.id", "sess"),
                ("agent_id", kid),
                ("gen_ai.conversation.id", kid),
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.request.model", "claude-sonnet-4-5"),
            ];
            json!({"ts": ts, "dir": "in", "msg": {"otlp": "span", "span": {"name": "claude_code.llm_request",
                "traceId": "5bd37003d6d6ae547a3f03498be655ac", "spanId": span, "parentSpanId": "98026d16700a1b4d",
                "startTimeUnixNano": ns(from), "endTimeUnixNano": ns(to), "attributes": attrs(&a)}}})
            .to_string()
        };
        let call = |id: &'static str| [("event.name", "tool_decision"), ("tool_name", "Agent"), ("tool_use_id", id)];
        let mut m = crate::pipeline::Pipeline::default();
        let at = |m: &mut crate::pipeline::Pipeline, lines: &[String], now: i64| {
            for l in lines {
                m.push(l.as_bytes());
            }
            shown(m, "sess", clock(now))
        };
        let prompt = log(1000, 1000, &[("event.name", "user_prompt"), ("prompt.id", "p1")]);
        let calls = [log(1000, 1001, &call("call_A")), log(1000, 1002, &call("call_B"))];
        assert_eq!(at(&mut m, &[prompt, calls[0].clone(), calls[1].clone()], 1000), Shown::OnChildren(2));
        // B's agent first: its first response ended first.
        let began =
            [chat(1300, "kidB", "0000000000000b01", 1020, 1150), chat(1300, "kidA", "0000000000000a01", 1010, 1250)];
        assert_eq!(at(&mut m, &began, 1300), Shown::OnChildren(2), "two calls open");
        let kid = |name: &str| m.model.thread(m.find(name).expect("kid")).card.clone();
        assert_eq!((kid("kidA"), kid("kidB")), (None, None), "no call named yet");
        // A's agent works on; B's is done and B answered, before any call's span came.
        let b_done = [
            log(
                1500,
                1400,
                &[
                    ("agent_id", "kidA"),
                    ("event.name", "tool_decision"),
                    ("tool_name", "Bash"),
                    ("tool_use_id", "toolu_a_ls"),
                ],
            ),
            log(1500, 1450, &[("agent_id", "kidB"), ("event.name", "subagent_completed")]),
            log(
                1500,
                1460,
                &[
                    ("event.name", "tool_result"),
                    ("tool_name", "Agent"),
                    ("tool_use_id", "call_B"),
                    ("success", "true"),
                ],
            ),
        ];
        assert_eq!(at(&mut m, &b_done, 1500), Shown::OnChildren(1), "A's call and its agent, once");
        // B's call span ends: the receiver's link names B's agent; still one.
        let link = json!({"ts": 1700, "dir": "in", "msg": {"otlp": "link", "traceId": "t", "child": "kidB",
            "parent": "sess", "card": "call_B"}})
        .to_string();
        assert_eq!(at(&mut m, &[link], 1700), Shown::OnChildren(1));
        assert_eq!(m.model.thread(m.find("kidB").expect("kidB")).card.as_deref(), Some("call_B"));
    }
}
