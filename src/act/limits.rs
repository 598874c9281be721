//! Guards on a swarm (the design's recursion-depth guard, carried to fan-out and spend): which limit
//! a spawn would pass, or which threads already passed one. Pure: read from the model, as `stats`
//! builds it from the agents' own files or traffic.

use std::fmt;

use crate::model::prices::Pico;
use crate::model::{Model, ShownCost, format_usd};
use crate::router::ThreadIdx;
use crate::wire::fact::{ItemKind, ItemStatus};

/// `--max-depth N --max-children N --max-cost USD`: each absent limit is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Deepest a sub-agent may sit (the session is 0, its children 1).
    pub max_depth: Option<u32>,
    /// Most sub-agents one agent may spawn.
    pub max_children: Option<u32>,
    /// Most a session's whole tree may spend.
    pub max_cost: Option<Pico>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A limit passed, with the figures that passed it. Shown to the model that is refused and on
/// the tree: `depth 2 > 1`, `children 4 > 3`, `spend $0.52 ≥ $0.50`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breach {
    Depth {
        depth: u32,
        max: u32,
    },
    Children {
        children: u32,
        max: u32,
    },
    /// The tree's spend reached the limit (`unpriced` agents' spend is not in it).
    Cost {
        spent: Pico,
        max: Pico,
        unpriced: u32,
    },
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Depth { depth, max } => write!(f, "depth {depth} > {max}"),
            Self::Children { children, max } => write!(f, "children {children} > {max}"),
            Self::Cost { spent, max, unpriced } => {
                write!(f, "spend {} ≥ {}", format_usd(Some(spent)), format_usd(Some(max)))?;
                if unpriced > 0 {
                    write!(f, " (and {unpriced} unpriced)")?;
                }
                Ok(())
            }
        }
    }
}

/// What a session's whole tree has spent: every agent's cost as shown (the price table's, else the
/// agent's own figure), or the agent's own total for the session when that is more (a stream
/// omits responses by design).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub cost: Pico,
    /// Agents whose spend is unknown (a model no table prices): not in `cost`.
    pub unpriced: u32,
}

pub fn spend(model: &Model, root: ThreadIdx) -> Spend {
    let mut out = Spend::default();
    let mut stack = vec![root];
    while let Some(i) = stack.pop() {
        let t = model.thread(i);
        match model.shown_cost(i) {
            ShownCost::Priced(c) | ShownCost::Reported(c) => out.cost += c,
            // An agent that used nothing spent nothing, priced or not.
            ShownCost::Unpriced if t.tokens.total == 0 => {}
            ShownCost::Unpriced => out.unpriced = out.unpriced.saturating_add(1),
        }
        stack.extend_from_slice(&t.children);
    }
    if let Some(reported) = model.reconciled(root).and_then(|r| r.reported_cost) {
        out.cost = out.cost.max(reported);
    }
    out
}

/// Spawns an agent has made: its children, or its spawning calls that did not fail when there are
/// more of those (a call's child registers only once it starts). `besides` is a call not to count
/// (the one being decided on).
fn spawned(model: &Model, caller: ThreadIdx, besides: Option<&str>) -> u32 {
    let t = model.thread(caller);
    let calls = t
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Collab && i.status != ItemStatus::Failed && Some(&*i.id) != besides)
        .count();
    u32::try_from(calls.max(t.children.len())).unwrap_or(u32::MAX)
}

/// The first limit that one more spawn by `caller` would pass: a child one level below it, one
/// more child of it, in a tree that has spent what it has. `call` is the spawning call's id when
/// the transcript may hold it already.
pub fn spawn_breach(model: &Model, caller: ThreadIdx, call: Option<&str>, limits: &Limits) -> Option<Breach> {
    let t = model.thread(caller);
    if let Some(max) = limits.max_depth {
        let depth = t.depth.saturating_add(1);
        if depth > max {
            return Some(Breach::Depth { depth, max });
        }
    }
    if let Some(max) = limits.max_children {
        let children = spawned(model, caller, call).saturating_add(1);
        if children > max {
            return Some(Breach::Children { children, max });
        }
    }
    if let Some(max) = limits.max_cost {
        let root = model.root_of(caller).unwrap_or(caller);
        let Spend { cost, unpriced } = spend(model, root);
        if cost >= max {
            return Some(Breach::Cost { spent: cost, max, unpriced });
        }
    }
    None
}

/// The running children that have passed a limit, each with the first it passed: deeper than
/// allowed, a child beyond its parent's allowance (the later ones, in the parent's registration
/// order), or part of a tree that has spent its allowance. A session itself is the user's: never
/// listed. Each tree's spend is summed once.
pub fn breaches(model: &Model, limits: &Limits) -> Vec<(ThreadIdx, Breach)> {
    let mut spent: Vec<(ThreadIdx, Spend)> = Vec::new();
    let mut out = Vec::new();
    for i in (0..model.threads.len()).map(|i| ThreadIdx(i as u32)) {
        let t = model.thread(i);
        let Some(parent) = t.parent else { continue };
        if !t.turns.iter().any(|u| u.status == crate::model::TurnStatus::InProgress) {
            continue;
        }
        if let Some(max) = limits.max_depth.filter(|&max| t.depth > max) {
            out.push((i, Breach::Depth { depth: t.depth, max }));
            continue;
        }
        if let Some(max) = limits.max_children {
            let place = model.thread(parent).children.iter().position(|&c| c == i).map_or(u32::MAX, |p| p as u32 + 1);
            if place > max {
                out.push((i, Breach::Children { children: place, max }));
                continue;
            }
        }
        if let (Some(max), Some(root)) = (limits.max_cost, model.root_of(i)) {
            let Spend { cost, unpriced } = if let Some((_, s)) = spent.iter().find(|(r, _)| *r == root) {
                *s
            } else {
                let s = spend(model, root);
                spent.push((root, s));
                s
            };
            if cost >= max {
                out.push((i, Breach::Cost { spent: cost, max, unpriced }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;
    use crate::source::files::Record;
    use crate::wire::Origin;

    fn feed(p: &mut Pipeline, lines: &[String]) {
        for l in lines {
            p.feed(Record::Line(l.as_bytes()), &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
        }
    }

    fn spawn(parent: &str, item: &str, child: &str) -> String {
        format!(
            r#"{{"method":"item/completed","params":{{"threadId":"{parent}","turnId":"t","item":{{"type":"collabAgentToolCall","id":"{item}","tool":"spawnAgent","status":"completed","senderThreadId":"{parent}","receiverThreadIds":["{child}"],"agentsStates":{{}}}}}}}}"#
        )
    }

    fn started(thread: &str) -> String {
        format!(
            r#"{{"method":"turn/started","params":{{"threadId":"{thread}","turn":{{"id":"t-{thread}","status":"inProgress"}}}}}}"#
        )
    }

    /// `r` runs `a` and `b`; `a` runs `g`; all running.
    fn tree() -> Pipeline {
        let mut p = Pipeline::default();
        let lines = [
            r#"{"method":"thread/started","params":{"thread":{"id":"r"}}}"#.to_owned(),
            started("r"),
            spawn("r", "s1", "a"),
            spawn("r", "s2", "b"),
            spawn("a", "s3", "g"),
            started("a"),
            started("b"),
            started("g"),
        ];
        feed(&mut p, &lines);
        p
    }

    fn ids(p: &Pipeline, found: &[(ThreadIdx, Breach)]) -> Vec<(String, String)> {
        found.iter().map(|(i, b)| (p.model.thread(*i).id.to_string(), b.to_string())).collect()
    }

    #[test]
    fn running_children_past_a_limit_are_found_and_the_session_never_is() {
        let p = tree();
        let deep = Limits { max_depth: Some(1), ..Limits::default() };
        assert_eq!(ids(&p, &breaches(&p.model, &deep)), [("g".into(), "depth 2 > 1".into())]);
        let few = Limits { max_children: Some(1), ..Limits::default() };
        assert_eq!(ids(&p, &breaches(&p.model, &few)), [("b".into(), "children 2 > 1".into())]);
        let broke = Limits { max_cost: Some(Pico::default()), ..Limits::default() };
        let all: Vec<String> = ids(&p, &breaches(&p.model, &broke)).into_iter().map(|(id, _)| id).collect();
        assert_eq!(all, ["a", "b", "g"], "every running child of a tree past its budget, not the session");
        let root = p.find("r").unwrap();
        assert_eq!(spawn_breach(&p.model, root, None, &few).map(|b| b.to_string()).as_deref(), Some("children 3 > 1"));
    }

    #[test]
    fn an_act_in_a_recording_says_why_its_target_stopped() {
        let mut p = tree();
        let act = r#"{"ts":9,"dir":"c2s","act":{"kind":"interrupt","by":"guard","target":"g","turn":"t-g","reason":"depth 2 > 1"},"msg":{"id":"swarmtop-n-1","method":"turn/interrupt","params":{"threadId":"g","turnId":"t-g"}}}"#;
        feed(&mut p, &[act.to_owned()]);
        let g = p.model.thread(p.find("g").unwrap());
        assert_eq!(g.stopped_by.as_ref().map(crate::wire::Clean::as_str), Some("guard: depth 2 > 1"));
        assert_eq!(p.counters().control, 1, "the act's line is the client's kind of line: control");
    }

    #[test]
    fn breaches_read_as_the_figures_that_passed() {
        assert_eq!(Breach::Depth { depth: 3, max: 2 }.to_string(), "depth 3 > 2");
        assert_eq!(Breach::Children { children: 4, max: 3 }.to_string(), "children 4 > 3");
        let max = Pico::parse_usd("0.5").unwrap();
        let spent = Pico::parse_usd("0.52").unwrap();
        assert_eq!(Breach::Cost { spent, max, unpriced: 0 }.to_string(), "spend $0.52 ≥ $0.50");
        assert_eq!(Breach::Cost { spent, max, unpriced: 2 }.to_string(), "spend $0.52 ≥ $0.50 (and 2 unpriced)");
    }
}
