//! End-to-end with the real Claude Code CLI 2.1.332: a session with a foreground sub-agent, then
//! `claude -p --resume <id>` in a new process, while a `--follow` reader watches the projects folder
//! from before the first run. The resumed run appends to the same transcript: the follower shows one
//! session (the child under it, no second root), two turns, and every response counted once — the
//! same tree and figures as reading the folder afterwards, equal to what the mock served.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it into the git-ignored `.cache/` (skips, loudly, only
//! when npm is missing; with `CI` set even that fails). `SWARMTOP_CLAUDE_BIN` overrides the binary.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use support::anthropic::{Block, MessagesRequest, Reply, Script, Served, Usage};
use support::claude_driver::{self, ClaudeRun, RunOptions, binary};
use support::follower::Follower;
use support::ingest::ingest;
use swarmtop::model::Model;
use swarmtop::model::Status;
use swarmtop::router::Role;

/// The lead's first answer spawns a foreground helper; every later one (the resumed run's too) is a
/// text. Each answer's usage is distinct, so a response counted twice shows.
struct Lead;

impl Script for Lead {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let lead = req.agent.as_deref() == Some("lead") && !req.is_subagent;
        let blocks = match (lead, req.step) {
            (true, 0) => vec![Block::ToolUse {
                id: "toolu_resume_helper".to_owned(),
                name: "Agent".to_owned(),
                input: json!({
                    "description": "List the files",
                    "prompt": "[[agent:helper]] List the project's files.",
                    "subagent_type": "general-purpose",
                    "run_in_background": false,
                }),
            }],
            (true, step) => vec![Block::Text(format!("Lead answer {step}."))],
            (false, _) => vec![Block::Text("README.md and main.py.".to_owned())],
        };
        let stop = if matches!(blocks[0], Block::ToolUse { .. }) { "tool_use" } else { "end_turn" };
        let step = u64::try_from(req.step).unwrap_or(0);
        Reply::Message {
            blocks,
            stop,
            usage: Usage {
                input: 100 + step,
                cache_write_5m: 10,
                cache_write_1h: 0,
                cache_read: 1000 + 10 * step,
                output: 20 + step + if lead { 0 } else { 7 },
            },
            model: None,
            pre_delay: Duration::from_millis(20),
            delta_delay: Duration::ZERO,
            signal: false,
        }
    }
}

fn served_total(served: &[Served]) -> u64 {
    served
        .iter()
        .filter(|s| s.status == 200)
        .filter_map(|s| s.usage)
        .map(|u| u.input + u.cache_write_5m + u.cache_write_1h + u.cache_read + u.output)
        .sum()
}

/// What the follower's model held: the most threads at once, and each thread at the last poll.
#[derive(Default)]
struct Seen {
    most_roots: usize,
    last: HashMap<String, (u64, Status, usize)>,
}

fn observe(seen: &mut Seen, m: &Model) {
    seen.most_roots = seen.most_roots.max(m.threads.iter().filter(|t| t.role == Role::Root).count());
    for t in &m.threads {
        seen.last.insert(t.id.to_string(), (t.tokens.total, t.status, t.turns.len()));
    }
}

fn session_of(run: &ClaudeRun) -> String {
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let init = text.lines().find(|l| l.contains(r#""subtype":"init""#)).expect("an init line");
    serde_json::from_str::<Value>(init).expect("JSON")["session_id"].as_str().expect("a session id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_resumed_in_a_new_process_while_followed_is_one_session_counted_once() {
    let Some(bin) = binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    let follower = Follower::start(world.projects(), observe);
    let opts = || RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None };
    let first = claude_driver::run_with(&bin, Lead, opts(), world, &[]).await.expect("the first run");
    assert!(
        first.exit.success(),
        "the CLI failed: {}",
        std::fs::read_to_string(&first.world.stderr).unwrap_or_default()
    );
    let id = session_of(&first);
    let mut served = first.served.clone();
    let second =
        claude_driver::run_with(&bin, Lead, opts(), first.world, &["--resume", &id]).await.expect("the resumed run");
    assert!(
        second.exit.success(),
        "resume failed: {}",
        std::fs::read_to_string(&second.world.stderr).unwrap_or_default()
    );
    assert_eq!(session_of(&second), id, "--resume keeps the session id");
    served.extend(second.served.iter().cloned());
    let followed = follower.stop();
    let seen = &followed.seen;

    let read = ingest(&second.world.projects());
    assert_eq!(read.model.threads.len(), 2, "the session and its helper");
    let root = read.model.thread(read.find(&id).expect("the session"));
    assert_eq!(root.role, Role::Root);
    assert_eq!(root.turns.len(), 2, "one turn per run");
    assert_eq!(root.status, Status::Idle);
    let helper = read.model.threads.iter().find(|t| t.role == Role::Child).expect("the helper");
    assert_eq!(helper.status, Status::Idle);
    assert_eq!(root.subtree.tokens.total, served_total(&served), "every served response once, read afterwards");

    assert!(followed.polls > 5, "the follower polled while the CLI ran ({} polls)", followed.polls);
    assert_eq!(seen.most_roots, 1, "the follower never showed a second session");
    assert_eq!(seen.last.len(), 2, "the follower's threads: {:?}", seen.last.keys().collect::<Vec<_>>());
    for t in &read.model.threads {
        let f = seen.last.get(&*t.id).unwrap_or_else(|| panic!("the follower never saw {}", t.id));
        assert_eq!(*f, (t.tokens.total, t.status, t.turns.len()), "following ends where reading does: {}", t.id);
    }
}

/// `--resume <id> --fork-session`: a new session, whose file starts with a copy of the original's
/// lines (same uuids and response ids, `requestSessionId` naming the original), the helper's result
/// too, and whose `cost-state` starts from the original's total. Read with the original (in either
/// file order) or alone (as `ps` reads it), the fork has no child of its own and claims nothing
/// unattributed; every served response is counted once, by the session that made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_fork_is_a_second_session_without_the_originals_children() {
    let Some(bin) = binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    let opts = || RunOptions { timeout: Duration::from_secs(60), interrupt_after: None, telemetry: None };
    let first = claude_driver::run_with(&bin, Lead, opts(), world, &[]).await.expect("the first run");
    assert!(first.exit.success(), "{}", std::fs::read_to_string(&first.world.stderr).unwrap_or_default());
    let id = session_of(&first);
    let fork = claude_driver::run_with(&bin, Lead, opts(), first.world, &["--resume", &id, "--fork-session"])
        .await
        .expect("the forked run");
    assert!(fork.exit.success(), "{}", std::fs::read_to_string(&fork.world.stderr).unwrap_or_default());
    let fork_id = session_of(&fork);
    assert_ne!(fork_id, id, "--fork-session starts a new session");
    let dir = fork.world.project_dir().expect("the project folder");
    let fork_file = dir.join(format!("{fork_id}.jsonl"));
    let copied = std::fs::read_to_string(&fork_file).expect("the fork's file");
    assert!(copied.contains(&format!(r#""requestSessionId":"{id}""#)), "the fork copies the original's lines");

    let check = |p: &swarmtop::pipeline::Pipeline, what: &str| {
        let f = p.find(&fork_id).unwrap_or_else(|| panic!("{what}: the fork"));
        let t = p.model.thread(f);
        assert_eq!(t.role, Role::Root, "{what}: the fork is a session");
        assert!(t.children.is_empty(), "{what}: the fork has no child of its own");
        let r = p.model.reconciled(f).expect("the fork's cost-state");
        assert_eq!(r.unattributed.total, 0, "{what}: the fork's reported total starts from the original's");
        assert_eq!(t.subtree.tokens.total, served_total(&fork.served), "{what}: the fork's own responses");
    };
    let alone = ingest(&fork_file);
    check(&alone, "the fork alone");
    assert_eq!(alone.model.threads.len(), 1, "the fork alone: no helper: {:?}", alone.model.threads);
    // Both orders: a registration from the fork read first took the helper from the original.
    let original = dir.join(format!("{id}.jsonl"));
    let helper_dir = dir.join(&id);
    for (what, paths) in [
        ("fork first", vec![fork_file.clone(), original.clone(), helper_dir.clone()]),
        ("original first", vec![original.clone(), helper_dir.clone(), fork_file.clone()]),
    ] {
        let p = swarmtop::commands::ingest(
            &paths,
            swarmtop::pipeline::Config::default(),
            &mut |_: &swarmtop::router::Event<'_, '_>| {},
        )
        .expect("the files");
        check(&p, what);
        let o = p.model.thread(p.find(&id).expect("the original"));
        assert_eq!(o.children.len(), 1, "{what}: the helper is the original's");
        let all: u64 =
            [o.subtree.tokens.total, p.model.thread(p.find(&fork_id).unwrap()).subtree.tokens.total].iter().sum();
        assert_eq!(all, served_total(&first.served) + served_total(&fork.served), "{what}: every response once");
    }
}
