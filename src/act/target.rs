//! Which agent `swarmtop interrupt TARGET` means, and what stopping it (or its subtree) takes:
//! the running turns, the deepest first.

use crate::model::{Model, TurnStatus};
use crate::router::ThreadIdx;

/// Why a target names no single agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    None,
    /// Several agents answer to it: their ids and names.
    Several(Vec<(String, String)>),
}

/// The agent `target` names: its id; else the one id it begins, or ends, with (the tree's short
/// ids are the last 8 hex digits); else the one agent of that name (as `name` gives it).
pub fn resolve(model: &Model, target: &str, name: impl Fn(ThreadIdx) -> String) -> Result<ThreadIdx, Miss> {
    let all = || (0..model.threads.len()).map(|i| ThreadIdx(i as u32));
    let target = target.trim();
    if target.is_empty() {
        return Err(Miss::None);
    }
    if let Some(i) = all().find(|&i| &*model.thread(i).id == target) {
        return Ok(i);
    }
    let rules: [&dyn Fn(ThreadIdx) -> bool; 3] =
        [&|i| model.thread(i).id.starts_with(target), &|i| model.thread(i).id.ends_with(target), &|i| {
            name(i) == target || model.thread(i).name() == target
        }];
    for rule in rules {
        let found: Vec<ThreadIdx> = all().filter(|&i| rule(i)).collect();
        match found.as_slice() {
            [] => {}
            [one] => return Ok(*one),
            several => {
                return Err(Miss::Several(
                    several.iter().map(|&i| (model.thread(i).id.to_string(), name(i))).collect(),
                ));
            }
        }
    }
    Err(Miss::None)
}

/// One agent to stop: its running turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub thread: ThreadIdx,
    pub id: String,
    pub turn: String,
}

/// The turn an agent is running, if it is running one.
pub fn running_turn(model: &Model, idx: ThreadIdx) -> Option<&str> {
    let t = model.thread(idx);
    let turn = t.turns.iter().rev().find(|u| u.status == TurnStatus::InProgress)?;
    Some(&turn.id)
}

/// What stopping `idx` takes: its running turn; with `subtree`, every running turn below it too,
/// in levels from the deepest up, so that no parent is stopped while a child of it still runs (a
/// parent stopped first would leave its children running, openai/codex#15732). Agents that run
/// nothing are left out.
pub fn plan(model: &Model, idx: ThreadIdx, subtree: bool) -> Vec<Vec<Stop>> {
    let mut levels: Vec<Vec<Stop>> = Vec::new();
    let mut stack = vec![(idx, 0usize)];
    // Bounded by the tree: a thread is listed once under its one parent.
    let mut seen = 0usize;
    while let Some((i, below)) = stack.pop() {
        seen += 1;
        if seen > model.threads.len() {
            break;
        }
        if let Some(turn) = running_turn(model, i) {
            if levels.len() <= below {
                levels.resize_with(below + 1, Vec::new);
            }
            levels[below].push(Stop { thread: i, id: model.thread(i).id.to_string(), turn: turn.to_owned() });
        }
        if subtree {
            stack.extend(model.thread(i).children.iter().map(|&c| (c, below + 1)));
        }
    }
    levels.retain(|l| !l.is_empty());
    levels.reverse();
    for level in &mut levels {
        level.sort_by_key(|s| s.thread.0);
    }
    levels
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

    fn find(p: &Pipeline, target: &str) -> Result<String, Miss> {
        let m = &p.model;
        resolve(m, target, |i| if m.thread(i).id.starts_with('g') { "grep".into() } else { "x".into() })
            .map(|i| m.thread(i).id.to_string())
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
        let m = &p.model;
        let root = p.find("r0000000-0000-0000-0000-0000000000aa").unwrap();
        let planned = plan(m, root, true);
        let levels: Vec<Vec<&str>> = planned.iter().map(|l| l.iter().map(|s| &s.id[..2]).collect()).collect();
        assert_eq!(levels, [vec!["g0"], vec!["c1"], vec!["r0"]], "c2 runs nothing and is left out");
        assert_eq!(plan(m, root, false).len(), 1);
        let done = p.find("c2000000-0000-0000-0000-0000000000cc").unwrap();
        assert!(plan(m, done, true).is_empty());
        assert_eq!(plan(m, root, false)[0][0].turn, "t-r0000000-0000-0000-0000-0000000000aa");
    }
}
