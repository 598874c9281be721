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

/// The limit a thread has passed already, once it is there: deeper than allowed, a child beyond
/// its parent's allowance (the later ones, in the parent's registration order), or part of a tree
/// that has spent its allowance (a child only: the session itself is the user's).
pub fn passed(model: &Model, idx: ThreadIdx, limits: &Limits) -> Option<Breach> {
    let t = model.thread(idx);
    let parent = t.parent?;
    if let Some(max) = limits.max_depth {
        if t.depth > max {
            return Some(Breach::Depth { depth: t.depth, max });
        }
    }
    if let Some(max) = limits.max_children {
        let place = model.thread(parent).children.iter().position(|&c| c == idx).map_or(u32::MAX, |p| p as u32 + 1);
        if place > max {
            return Some(Breach::Children { children: place, max });
        }
    }
    if let Some(max) = limits.max_cost {
        let root = model.root_of(idx)?;
        let Spend { cost, unpriced } = spend(model, root);
        if cost >= max {
            return Some(Breach::Cost { spent: cost, max, unpriced });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
