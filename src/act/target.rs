//! Which agent `swarmtop interrupt TARGET` means, and what stopping it (or its subtree) takes: the
//! running turns, the deepest first. The same for every carrier: a tee's session (the model), an
//! OpenCode server's sessions, the machine's session processes.

use crate::model::{Model, TurnStatus};
use crate::router::ThreadIdx;

/// Agents as a carrier knows them, by index.
pub trait Tree {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn id(&self, i: usize) -> &str;
    /// What the agent is called where the user saw it (the tree's label, a title).
    fn names(&self, i: usize) -> Vec<String>;
    fn children(&self, i: usize) -> Vec<usize>;
    /// The turn it runs (empty where a carrier has no turns), if it runs one.
    fn running(&self, i: usize) -> Option<String>;
}

/// Why a target names no single agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    None,
    /// Several agents answer to it: their ids and names.
    Several(Vec<(String, String)>),
}

/// The agent `target` names: its id; else the one id it begins, or ends, with (the tree's short
/// ids are the last 8 hex digits); else the one agent of that name.
pub fn resolve(tree: &impl Tree, target: &str) -> Result<usize, Miss> {
    let target = target.trim();
    if target.is_empty() {
        return Err(Miss::None);
    }
    if let Some(i) = (0..tree.len()).find(|&i| tree.id(i) == target) {
        return Ok(i);
    }
    let rules: [&dyn Fn(usize) -> bool; 3] =
        [&|i| tree.id(i).starts_with(target), &|i| tree.id(i).ends_with(target), &|i| {
            tree.names(i).iter().any(|n| n == target)
        }];
    for rule in rules {
        let found: Vec<usize> = (0..tree.len()).filter(|&i| rule(i)).collect();
        match found.as_slice() {
            [] => {}
            [one] => return Ok(*one),
            several => {
                let named = |i: usize| tree.names(i).into_iter().next().unwrap_or_default();
                return Err(Miss::Several(several.iter().map(|&i| (tree.id(i).to_owned(), named(i))).collect()));
            }
        }
    }
    Err(Miss::None)
}

/// One agent to stop: its running turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub node: usize,
    pub id: String,
    pub turn: String,
}

/// What stopping agent `at` takes: its running turn; with `subtree`, every running turn below it
/// too, in levels from the deepest up, so that no parent is stopped while a child of it still runs
/// (a parent stopped first would leave its children running, openai/codex#15732). Agents that run
/// nothing are left out.
pub fn plan(tree: &impl Tree, at: usize, subtree: bool) -> Vec<Vec<Stop>> {
    let mut levels: Vec<Vec<Stop>> = Vec::new();
    let mut stack = vec![(at, 0usize)];
    // Bounded by the tree: a carrier whose parents loop must not loop us.
    let mut seen = 0usize;
    while let Some((i, below)) = stack.pop() {
        seen += 1;
        if seen > tree.len() {
            break;
        }
        if let Some(turn) = tree.running(i) {
            if levels.len() <= below {
                levels.resize_with(below + 1, Vec::new);
            }
            levels[below].push(Stop { node: i, id: tree.id(i).to_owned(), turn });
        }
        if subtree {
            stack.extend(tree.children(i).into_iter().map(|c| (c, below + 1)));
        }
    }
    levels.retain(|l| !l.is_empty());
    levels.reverse();
    for level in &mut levels {
        level.sort_by_key(|s| s.node);
    }
    levels
}

/// The id of the session `idx` is in (its root's).
pub fn root_of(model: &Model, mut idx: ThreadIdx) -> String {
    // Bounded by the tree: parents never loop, but input is never trusted to say so.
    for _ in 0..model.threads.len() {
        match model.thread(idx).parent {
            Some(p) => idx = p,
            None => break,
        }
    }
    model.thread(idx).id.to_string()
}

/// A tee's session: the model, its agents named as the tree names them.
pub struct ModelTree<'m, F> {
    pub model: &'m Model,
    pub name: F,
}

impl<F: Fn(ThreadIdx) -> String> Tree for ModelTree<'_, F> {
    fn len(&self) -> usize {
        self.model.threads.len()
    }

    fn id(&self, i: usize) -> &str {
        &self.model.threads[i].id
    }

    fn names(&self, i: usize) -> Vec<String> {
        vec![(self.name)(ThreadIdx(i as u32)), self.model.threads[i].name()]
    }

    fn children(&self, i: usize) -> Vec<usize> {
        self.model.threads[i].children.iter().map(|c| c.index()).collect()
    }

    fn running(&self, i: usize) -> Option<String> {
        let turn = self.model.threads[i].turns.iter().rev().find(|u| u.status == TurnStatus::InProgress)?;
        Some(turn.id.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;
    use crate::source::files::Record;
    use crate::wire::Origin;

    /// A root `r` running a turn, with children `c1` (running) and `c2` (done), and `c1`'s child
    /// `g` (running).
    fn tree() -> Pipeline {
        let spawn = |parent: &str, item: &str, child: &str| {
            format!(
                r#"{{"method":"item/completed","params":{{"threadId":"{parent}","turnId":"t-{parent}","item":{{"type":"collabAgentToolCall","id":"{item}","tool":"spawnAgent","status":"completed","senderThreadId":"{parent}","receiverThreadIds":["{child}"],"agentsStates":{{}}}}}}}}"#
            )
        };
        let turn = |thread: &str, method: &str, status: &str| {
            format!(
                r#"{{"method":"{method}","params":{{"threadId":"{thread}","turn":{{"id":"t-{thread}","status":"{status}"}}}}}}"#
            )
        };
        let lines = [
            r#"{"method":"thread/started","params":{"thread":{"id":"r0000000-0000-0000-0000-0000000000aa"}}}"#
                .to_owned(),
            turn("r0000000-0000-0000-0000-0000000000aa", "turn/started", "inProgress"),
            spawn("r0000000-0000-0000-0000-0000000000aa", "s1", "c1000000-0000-0000-0000-0000000000bb"),
            spawn("r0000000-0000-0000-0000-0000000000aa", "s2", "c2000000-0000-0000-0000-0000000000cc"),
            turn("c1000000-0000-0000-0000-0000000000bb", "turn/started", "inProgress"),
            turn("c2000000-0000-0000-0000-0000000000cc", "turn/started", "inProgress"),
            turn("c2000000-0000-0000-0000-0000000000cc", "turn/completed", "completed"),
            spawn("c1000000-0000-0000-0000-0000000000bb", "s3", "g0000000-0000-0000-0000-0000000000dd"),
            turn("g0000000-0000-0000-0000-0000000000dd", "turn/started", "inProgress"),
        ];
        let mut p = Pipeline::default();
        for l in &lines {
            p.feed(Record::Line(l.as_bytes()), &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
        }
        p
    }

    fn named(m: &Model) -> ModelTree<'_, impl Fn(ThreadIdx) -> String + '_> {
        ModelTree {
            model: m,
            name: |i: ThreadIdx| if m.thread(i).id.starts_with('g') { "grep".into() } else { "x".into() },
        }
    }

    fn find(p: &Pipeline, target: &str) -> Result<String, Miss> {
        resolve(&named(&p.model), target).map(|i| p.model.threads[i].id.to_string())
    }

    #[test]
    fn a_target_is_an_id_a_unique_prefix_or_suffix_or_a_name() {
        let p = tree();
        assert_eq!(find(&p, "c1000000-0000-0000-0000-0000000000bb").unwrap(), "c1000000-0000-0000-0000-0000000000bb");
        assert_eq!(find(&p, "c2").unwrap(), "c2000000-0000-0000-0000-0000000000cc");
        assert_eq!(find(&p, "000000aa").unwrap(), "r0000000-0000-0000-0000-0000000000aa", "the tree's short id");
        assert_eq!(find(&p, "grep").unwrap(), "g0000000-0000-0000-0000-0000000000dd");
        assert_eq!(find(&p, "nobody"), Err(Miss::None));
        assert!(matches!(find(&p, "c"), Err(Miss::Several(v)) if v.len() == 2));
    }

    #[test]
    fn a_subtree_stops_the_deepest_running_turns_first() {
        let p = tree();
        let m = &named(&p.model);
        let root = p.find("r0000000-0000-0000-0000-0000000000aa").unwrap().index();
        let planned = plan(m, root, true);
        let levels: Vec<Vec<&str>> = planned.iter().map(|l| l.iter().map(|s| &s.id[..2]).collect()).collect();
        assert_eq!(levels, [vec!["g0"], vec!["c1"], vec!["r0"]], "c2 runs nothing and is left out");
        assert_eq!(plan(m, root, false).len(), 1);
        let done = p.find("c2000000-0000-0000-0000-0000000000cc").unwrap().index();
        assert!(plan(m, done, true).is_empty());
        assert_eq!(plan(m, root, false)[0][0].turn, "t-r0000000-0000-0000-0000-0000000000aa");
    }
}
