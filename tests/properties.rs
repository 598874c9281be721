//! Property tests: a generator builds a random spawn tree *and* a stream of its traffic (child lines
//! before, between and after their registration; duplicated and late token frames; malformed and
//! truncated lines), so each test knows the truth it checks the pipeline against.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::json;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::{Event, Role};

/// A small deterministic generator (xorshift): proptest picks the seed and the sizes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Usage {
    input: u64,
    cached: u64,
    output: u64,
}

struct Scenario {
    lines: Vec<Vec<u8>>,
    /// thread id → parent id (None for the root).
    parents: BTreeMap<String, Option<String>>,
    /// Max-merged usage per thread: the truth of `tokens`.
    usage: BTreeMap<String, Usage>,
    malformed: usize,
}

fn id(i: usize) -> String {
    format!("01a2292d-0000-7000-8000-{i:012x}")
}

fn scenario(seed: u64, threads: usize, per_thread: usize, malformed: usize, truncated_tail: bool) -> Scenario {
    let mut rng = Rng(seed | 1);
    let n = threads.max(1);
    let parents: Vec<Option<usize>> = (0..n).map(|i| if i == 0 { None } else { Some(rng.below(i)) }).collect();

    // Each thread's own sequence, in its order; spawn lines of its children sit inside the parent's.
    let mut seqs: Vec<Vec<String>> = Vec::new();
    let mut usage = BTreeMap::new();
    for i in 0..n {
        let t = id(i);
        let mut seq = Vec::new();
        if i == 0 {
            seq.push(json!({"method": "thread/started", "params": {"thread": {"id": t, "parentThreadId": null, "model": "gpt-5.5"}}}).to_string());
        } else {
            seq.push(
                json!({"method": "thread/status/changed", "params": {"threadId": t, "status": {"type": "idle"}}})
                    .to_string(),
            );
        }
        let turn = format!("turn-{i}");
        seq.push(json!({"method": "turn/started", "params": {"threadId": t, "turn": {"id": turn, "rootTurnId": "turn-0", "status": "inProgress"}}}).to_string());
        let mut frames = Vec::new();
        let mut total = Usage::default();
        for k in 0..per_thread {
            match rng.below(4) {
                0 | 1 => seq.push(json!({"method": "item/agentMessage/delta", "params": {"threadId": t, "turnId": turn, "itemId": format!("m{i}-{}", k % 3), "delta": "text "}}).to_string()),
                2 => {
                    total.input += 100 + rng.below(900) as u64;
                    total.cached = (total.cached + rng.below(100) as u64).min(total.input);
                    total.output += 1 + rng.below(50) as u64;
                    frames.push(total);
                    seq.push(usage_line(&t, total));
                }
                _ => {
                    // A duplicated or late frame: an earlier one again.
                    if let Some(&old) = frames.get(rng.below(frames.len().max(1))) {
                        seq.push(usage_line(&t, old));
                    }
                }
            }
        }
        usage.insert(t.clone(), total);
        seqs.push(seq);
    }
    // Spawn lines go into the parent's sequence at a random point (after its turn started).
    for (child, parent) in parents.iter().enumerate() {
        let Some(p) = *parent else { continue };
        let item = format!("spawn-{child}");
        let started = json!({"method": "item/started", "params": {"threadId": id(p), "turnId": format!("turn-{p}"), "item": {"type": "collabAgentToolCall", "id": item, "tool": "spawnAgent", "status": "inProgress", "receiverThreadIds": [], "model": ""}}}).to_string();
        let completed = json!({"method": "item/completed", "params": {"threadId": id(p), "turnId": format!("turn-{p}"), "item": {"type": "collabAgentToolCall", "id": item, "tool": "spawnAgent", "status": "completed", "receiverThreadIds": [id(child)], "model": "gpt-5.6-luna"}}}).to_string();
        let seq = &mut seqs[p];
        let at = 2 + rng.below(seq.len() - 1);
        seq.insert(at.min(seq.len()), completed);
        seq.insert(at.min(seq.len() - 1), started);
    }
    for (i, seq) in seqs.iter_mut().enumerate() {
        seq.push(json!({"method": "turn/completed", "params": {"threadId": id(i), "turn": {"id": format!("turn-{i}"), "status": "completed"}}}).to_string());
    }

    // Interleave: any thread may run ahead of its registration, as real servers do.
    let mut cursors = vec![0usize; n];
    let mut lines: Vec<Vec<u8>> = Vec::new();
    loop {
        let open: Vec<usize> = (0..n).filter(|&i| cursors[i] < seqs[i].len()).collect();
        if open.is_empty() {
            break;
        }
        let i = open[rng.below(open.len())];
        lines.push(seqs[i][cursors[i]].clone().into_bytes());
        cursors[i] += 1;
    }
    let junk: [&[u8]; 4] = [
        b"not json",
        b"{\"method\":\"item/agentMessage/delta\",\"params\":{\"threadId\":",
        b"\xff\xfe\xfd",
        b"{\"no\":\"method\"}",
    ];
    for k in 0..malformed {
        let at = rng.below(lines.len() + 1);
        lines.insert(at, junk[k % junk.len()].to_vec());
    }
    let mut malformed_count = malformed;
    if truncated_tail {
        let mut last = lines.last().cloned().unwrap_or_default();
        last.truncate(last.len() / 2);
        if !last.is_empty() {
            lines.push(last);
            malformed_count += 1;
        }
    }
    Scenario {
        lines,
        parents: parents.iter().enumerate().map(|(c, p)| (id(c), p.map(id))).collect(),
        usage,
        malformed: malformed_count,
    }
}

fn usage_line(t: &str, u: Usage) -> String {
    json!({"method": "thread/tokenUsage/updated", "params": {"threadId": t, "turnId": "x", "tokenUsage": {
        "total": {"totalTokens": u.input + u.output, "inputTokens": u.input, "cachedInputTokens": u.cached, "outputTokens": u.output, "reasoningOutputTokens": 0},
        "last": {"totalTokens": 10, "inputTokens": 5, "cachedInputTokens": 0, "outputTokens": 5, "reasoningOutputTokens": 0},
        "modelContextWindow": 100_000}}})
    .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_pipeline_recovers_the_generated_truth(
        seed in any::<u64>(),
        threads in 1usize..14,
        per_thread in 0usize..12,
        malformed in 0usize..4,
        truncated in any::<bool>(),
    ) {
        let s = scenario(seed, threads, per_thread, malformed, truncated);
        let mut p = Pipeline::default();
        let mut routed: Vec<u64> = Vec::new();
        let mut bad: Vec<u64> = Vec::new();
        let mut sink = |e: &Event<'_, '_>| match e {
            Event::Line(r) => routed.push(r.line_no),
            Event::Malformed { line_no, .. } => bad.push(*line_no),
            _ => {}
        };
        for l in &s.lines {
            p.push_with(l, &mut sink);
        }
        p.finish_with(&mut sink);
        let c = p.counters();

        // Conservation, and every line accounted for exactly once.
        prop_assert!(c.conserved(), "{:?}", c);
        prop_assert_eq!(c.lines, s.lines.len() as u64);
        prop_assert_eq!(c.malformed as usize, s.malformed);
        prop_assert_eq!(c.early, c.replayed + c.evicted + c.pending_at_end);
        prop_assert_eq!(c.pending_at_end, 0);
        let mut all: Vec<u64> = routed.iter().chain(&bad).copied().collect();
        all.sort_unstable();
        let distinct: BTreeSet<u64> = all.iter().copied().collect();
        prop_assert_eq!(all.len(), distinct.len(), "a line was routed twice");
        prop_assert_eq!(all.len() as u64 + c.evicted, c.lines);

        // The tree is the generator's tree.
        let m = &p.model;
        for (child, parent) in &s.parents {
            let idx = p.find(child).expect("every thread is seen");
            let t = m.thread(idx);
            match parent {
                None => prop_assert_eq!(t.role, Role::Root),
                Some(parent) => {
                    prop_assert_eq!(t.role, Role::Child);
                    prop_assert_eq!(t.parent.map(|x| m.thread(x).id.to_string()), Some(parent.clone()));
                }
            }
        }
        prop_assert_eq!(m.threads.len(), s.parents.len());

        // Tokens are the max-merge of every frame, duplicates and late ones included.
        for (id, u) in &s.usage {
            let t = m.thread(p.find(id).unwrap());
            prop_assert_eq!((t.tokens.input, t.tokens.cached_input, t.tokens.output), (u.input, u.cached, u.output));
        }

        // Incremental roll-ups equal a recomputation from scratch.
        for (i, t) in m.threads.iter().enumerate() {
            let mut total = 0u64;
            let mut count = 0u32;
            let mut stack = vec![swarmtop::router::ThreadIdx(i as u32)];
            while let Some(x) = stack.pop() {
                count += 1;
                total += m.thread(x).tokens.input;
                stack.extend(m.thread(x).children.iter().copied());
            }
            prop_assert_eq!(t.subtree.threads, count);
            prop_assert_eq!(t.subtree.tokens.input, total);
        }
    }

    /// Any bytes at all: never a panic, and conservation holds.
    #[test]
    fn arbitrary_bytes_never_break_conservation(records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..40)) {
        let mut p = Pipeline::default();
        for r in &records {
            p.push(r);
        }
        p.finish();
        prop_assert!(p.counters().conserved());
    }
}

/// The depth of thread `i` in a tree given as parents.
fn depth_of(parents: &[Option<usize>], mut i: usize) -> u32 {
    let mut d = 0;
    while let Some(p) = parents[i] {
        d += 1;
        i = p;
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Depth is a property of the settled tree: whatever order the registration signals come in
    /// (a child before its parent, a grandchild first), every thread ends at its depth below the
    /// root, those past the guard are refused, and a thread's lines name the root's session.
    #[test]
    fn registration_order_does_not_change_the_settled_tree(
        seed in any::<u64>(),
        threads in 2usize..60,
        chain in any::<bool>(),
        guard in 2u32..8,
    ) {
        let mut rng = Rng(seed | 1);
        let parents: Vec<Option<usize>> =
            (0..threads).map(|i| if i == 0 { None } else if chain { Some(i - 1) } else { Some(rng.below(i)) }).collect();
        let mut order: Vec<usize> = (1..threads).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut lines: Vec<String> = order
            .iter()
            .map(|&i| {
                let p = id(parents[i].expect("not the root"));
                json!({"method": "thread/started", "params": {"thread": {"id": id(i), "parentThreadId": p}}}).to_string()
            })
            .collect();
        lines.push(json!({"method": "thread/started", "params": {"thread": {"id": id(0), "parentThreadId": null}}}).to_string());
        for i in 0..threads {
            lines.push(json!({"method": "item/agentMessage/delta", "params": {"threadId": id(i), "itemId": "m", "delta": "x"}}).to_string());
        }
        let limits = swarmtop::router::Limits { max_depth: guard, ..swarmtop::router::Limits::default() };
        let mut p = Pipeline::new(swarmtop::pipeline::Config { router: limits, ..swarmtop::pipeline::Config::default() });
        let root = 0usize;
        let mut sessions: BTreeMap<u32, Option<u32>> = BTreeMap::new();
        let last_lines = lines.len() - threads;
        for (n, l) in lines.iter().enumerate() {
            let mut sink = |e: &Event<'_, '_>| {
                if let Event::Line(r) = e {
                    if n >= last_lines {
                        sessions.insert(r.thread.unwrap().0, r.session.map(|s| s.0));
                    }
                }
            };
            p.push_with(l.as_bytes(), &mut sink);
        }
        p.finish();
        let root_idx = p.find(&id(root)).unwrap();
        for i in 0..threads {
            let idx = p.find(&id(i)).unwrap();
            let t = p.model.thread(idx);
            let d = depth_of(&parents, i);
            if d <= guard {
                prop_assert_eq!(t.depth, d, "thread {} of {:?} in order {:?}", i, parents, order);
                prop_assert_eq!(t.role, if i == 0 { Role::Root } else { Role::Child });
                prop_assert_eq!(sessions[&idx.0], Some(root_idx.0));
                prop_assert_eq!(p.model.root_of(idx), Some(root_idx));
            } else {
                prop_assert_eq!(t.role, Role::Orphan, "thread {} at depth {} past the guard {}", i, d, guard);
                prop_assert_eq!(sessions[&idx.0], None);
            }
        }
        let kept = (0..threads).filter(|&i| depth_of(&parents, i) <= guard).count() as u32;
        prop_assert_eq!(p.model.thread(root_idx).subtree.threads, kept);
    }
}
