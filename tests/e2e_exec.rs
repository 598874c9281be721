//! End-to-end with the real `codex exec --json` 0.171.0, piped into swarmtop as scripts do, offline against
//! the scripted mock model (`support/scenario.rs`: a lead with four children, one failing, one with two
//! children of its own).
//!
//! `codex exec --json` reports the session's own thread only; its children appear through the lead's
//! `collab_tool_call` items. Checked: the tree it allows (the lead and its four children under their spawn
//! cards, each named by the task it was spawned with), the lead's tokens against what the mock served it,
//! and every child's end against the rollout files the same run wrote (which see everything).
//!
//! Needs the codex binary: `scripts/setup-codex.sh` installs it into the git-ignored `.cache/` (skips, loudly,
//! only when npm is missing; with `CI` set even that fails). `SWARMTOP_CODEX_BIN` overrides the binary.

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::harness::{World, codex_binary, env_remove};
use support::ingest::ingest;
use support::mock_model::{MockModel, Usage};
use support::scenario::{AGENTS, Pacing, ROOT_PROMPT, RefactorScenario};
use swarmtop::model::Status;
use swarmtop::router::Role;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_exec_json_shows_the_tree_its_events_allow() {
    let Some(codex) = codex_binary().or_skip("real_codex_exec_json") else {
        return;
    };
    let mock = MockModel::start(RefactorScenario { pacing: Pacing::TEST }).await.expect("the mock");
    let world = World::new(&mock.base_url()).expect("a world");
    let out = world.root.path().join("exec.ndjson");
    let stderr = world.root.path().join("exec.stderr");
    let mut cmd = tokio::process::Command::new(&codex);
    cmd.args(["exec", "--json", "--skip-git-repo-check", ROOT_PROMPT])
        .envs(world.env(Pacing::TEST))
        .current_dir(&world.work)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .kill_on_drop(true);
    for k in env_remove() {
        cmd.env_remove(k);
    }
    let started = std::time::Instant::now();
    // Generous: on a loaded machine (load average 20 on two cores) a run that takes seconds when
    // quiet took over a minute and a half.
    let status = tokio::time::timeout(Duration::from_secs(300), cmd.status())
        .await
        .unwrap_or_else(|_| panic!("codex exec did not finish; mock served: {:#?}", mock.served()))
        .expect("codex exec ran");
    eprintln!("codex exec: {:?}, {status}", started.elapsed());
    assert!(status.success(), "codex exec failed: {}", std::fs::read_to_string(&stderr).unwrap_or_default());

    if std::env::var_os("SWARMTOP_E2E_SHOW").is_some() {
        eprintln!("{}", std::fs::read_to_string(&out).unwrap_or_default());
    }
    let p = ingest(&out);
    assert_eq!(p.format(), "codex-exec-json");
    let roots: Vec<_> = p.model.threads.iter().filter(|t| t.role == Role::Root).collect();
    assert_eq!(roots.len(), 1, "one session");
    let lead = roots[0];
    // The lead's running total, as `turn.completed` states it, is every response the mock served the lead.
    let mut served = Usage::default();
    for s in mock.served().iter().filter(|s| s.agent.as_deref() == Some("lead") && s.status == 200) {
        served.add(s.usage.expect("a served response has usage"));
    }
    assert_eq!(lead.tokens.total, served.total(), "the lead's tokens, each response once");
    assert_eq!(lead.tokens.cached_input, served.cached_input);
    let direct = AGENTS.iter().filter(|a| a.parent == Some("lead")).count();
    assert_eq!(lead.children.len(), direct, "the lead's children, from its spawn cards");
    assert_eq!(p.model.threads.len(), 1 + direct, "grandchildren say nothing on this wire");

    // Every child ends as the lead was told: three finished, the docs helper errored.
    let rollouts = ingest(&world.home.join("sessions"));
    let mut ends = Vec::new();
    let mut names = Vec::new();
    for &c in &lead.children {
        let child = p.model.thread(c);
        // This wire names no child: the prompt it was spawned with does (`[task:scout] …`).
        names.push(swarmtop::ui::label::of(&p.model, c).name);
        assert!(child.card.is_some(), "{} is under its spawn card", child.id);
        let truth = rollouts.model.thread(rollouts.find(&child.id).expect("the child's rollout"));
        eprintln!("child {}: exec {:?}, rollout {:?}", child.id, child.status, truth.status);
        assert_eq!(child.status, truth.status, "{}: the rollout ends the child as exec was told", child.id);
        ends.push(child.status);
    }
    let mut spawned: Vec<&str> = AGENTS.iter().filter(|a| a.parent == Some("lead")).map(|a| a.tag).collect();
    names.sort();
    spawned.sort_unstable();
    assert_eq!(names, spawned, "each child named by its task");
    ends.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(ends, [Status::Failed, Status::Idle, Status::Idle, Status::Idle]);
    let root_truth = rollouts.model.thread(rollouts.find(&lead.id).expect("the lead's rollout"));
    assert_eq!(lead.tokens.total, root_truth.tokens.total, "the same total as the lead's rollout");
}
