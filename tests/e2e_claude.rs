//! End-to-end with the real Claude Code CLI 2.1.332 (issue 7), offline against the scripted mock of the
//! Anthropic Messages API (`support/anthropic.rs`, scenarios in `support/claude_scenario.rs`).
//!
//! Two runs: `team` (parallel children on two models, a grandchild, a background child, a child whose
//! requests get 529 until the CLI gives up) and `interrupt` (SIGINT while a child's answer streams).
//! Each is checked first against the facts of wire.md §6 on the raw files the CLI wrote (so a new CLI
//! that writes something else fails here, naming the fact), then through swarmtop.
//!
//! Needs the CLI: `scripts/setup-claude.sh` installs it (npm) into the git-ignored `.cache/`. The test
//! skips, loudly, only when npm is missing; with `CI` set even that fails. `SWARMTOP_CLAUDE_BIN` overrides
//! the binary; `SWARMTOP_E2E_KEEP=DIR` keeps everything the CLI wrote under `DIR/<scenario>/`.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::anthropic::Usage;
use support::claude_driver::{self, ClaudeBinary, ClaudeRun, Interrupt, RunOptions, claude_binary};
use support::claude_scenario::{Agent, INTERRUPT, Pacing, ROOT_MODEL, Scenario, TEAM, agent};
use support::follower::{Followed, Follower};
use support::ingest::ingest;
use swarmtop::model::Model;
use swarmtop::model::prices::Pico;
use swarmtop::model::{ContextFill, Prices, Status, Thread, Tokens, TurnStatus};
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Role;
use swarmtop::source::files;
use swarmtop::source::live::Event as LiveEvent;
use swarmtop::source::seen::State;
use swarmtop::wire::Origin;

fn binary(test: &str) -> Option<PathBuf> {
    match claude_binary() {
        ClaudeBinary::Found(p) => Some(p),
        ClaudeBinary::Unavailable(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED {test}: {why}");
            None
        }
        ClaudeBinary::Unavailable(why) => panic!("the end-to-end test must run in CI: {why}"),
    }
}

fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// What the CLI left on disk for one session: the session file and, per agent id, its transcript and
/// sidecar.
struct OnDisk {
    session_id: String,
    session: Vec<Value>,
    agents: HashMap<String, (Vec<Value>, Value)>,
}

fn on_disk(run: &ClaudeRun) -> OnDisk {
    let dir = run.world.project_dir().expect("the CLI created its project folder");
    let session_file = std::fs::read_dir(&dir)
        .expect("project dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session transcript");
    let session_id = session_file.file_stem().unwrap().to_string_lossy().into_owned();
    let mut agents = HashMap::new();
    let subagents = dir.join(&session_id).join("subagents");
    for e in std::fs::read_dir(&subagents).into_iter().flatten().filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_prefix("agent-").and_then(|n| n.strip_suffix(".jsonl")) {
            let meta_path = subagents.join(format!("agent-{id}.meta.json"));
            let meta = std::fs::read_to_string(&meta_path)
                .map_or(Value::Null, |t| serde_json::from_str(&t).expect("meta.json"));
            agents.insert(id.to_owned(), (json_lines(&e.path()), meta));
        }
    }
    OnDisk { session_id, session: json_lines(&session_file), agents }
}

/// The agent id of each scripted agent, from its sidecar's `toolUseId` (= its card).
fn ids_by_tag(disk: &OnDisk, agents: &'static [Agent]) -> HashMap<&'static str, String> {
    let mut ids = HashMap::new();
    for (id, (_, meta)) in &disk.agents {
        let card = meta["toolUseId"].as_str().unwrap_or_default();
        if let Some(a) = agents.iter().find(|a| a.card == Some(card)) {
            ids.insert(a.tag, id.clone());
        }
    }
    ids
}

/// Per scripted agent, the usage of every answer the mock streamed to the end, once per (agent, step).
fn served_usage(run: &ClaudeRun) -> HashMap<String, Usage> {
    let mut sums: HashMap<String, Usage> = HashMap::new();
    for s in &run.served {
        if let (Some(a), Some(u), true) = (&s.agent, s.usage, s.status == 200) {
            sums.entry(a.clone()).or_default().add(u);
        }
    }
    sums
}

fn assistant_usage(lines: &[Value]) -> Usage {
    // wire.md §6: one response is several lines repeating its usage; count each (message.id, requestId) once.
    let mut seen: HashMap<(String, String), Usage> = HashMap::new();
    for l in lines.iter().filter(|l| l["type"] == "assistant") {
        let u = &l["message"]["usage"];
        let g = |k: &str| u[k].as_u64().unwrap_or(0);
        let w1 = u["cache_creation"]["ephemeral_1h_input_tokens"].as_u64().unwrap_or(0);
        let usage = Usage {
            input: g("input_tokens"),
            cache_write_5m: g("cache_creation_input_tokens") - w1,
            cache_write_1h: w1,
            cache_read: g("cache_read_input_tokens"),
            output: g("output_tokens"),
        };
        let key =
            (l["message"]["id"].as_str().unwrap_or("").to_owned(), l["requestId"].as_str().unwrap_or("").to_owned());
        let e = seen.entry(key).or_default();
        *e = Usage {
            input: e.input.max(usage.input),
            cache_write_5m: e.cache_write_5m.max(usage.cache_write_5m),
            cache_write_1h: e.cache_write_1h.max(usage.cache_write_1h),
            cache_read: e.cache_read.max(usage.cache_read),
            output: e.output.max(usage.output),
        };
    }
    let mut total = Usage::default();
    for u in seen.values() {
        total.add(*u);
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_team_session() {
    let Some(bin) = binary("real_claude_team_session") else { return };
    let world = claude_driver::World::new().expect("a world");
    // A `--follow` reader of the projects folder and the machine view's source (`swarmtop` with
    // no arguments), both started before the CLI is.
    let follower = Follower::start(world.projects(), Sightings::see);
    let machine = MachineWatch::start(&world.home);
    let run = claude_driver::run(
        &bin,
        Scenario::team(Pacing::LIVE),
        RunOptions { timeout: Duration::from_secs(90), interrupt_after: None, telemetry: None },
        world,
    )
    .await
    .unwrap_or_else(|e| panic!("the team session did not complete: {e}"));
    let followed = follower.stop();
    claude_driver::keep_if_asked(&run, "team");
    let disk_now = on_disk(&run);
    let watched = machine.stop_as_read(&disk_now.session_id, &ingest(&run.world.projects())).await;
    eprintln!("team run: {:?}, exit {:?}", run.elapsed, run.exit);
    assert!(run.exit.success(), "the CLI failed: {}", std::fs::read_to_string(&run.world.stderr).unwrap_or_default());
    assert!(run.elapsed < Duration::from_secs(60), "the run took {:?}: are the retries shortened?", run.elapsed);
    let disk = on_disk(&run);
    check_team_files(&run, &disk);
    let ids = ids_by_tag(&disk, TEAM);
    let transcripts = ingest(&run.world.projects());
    check_team_tree(&transcripts, &disk, &ids, "transcripts");
    check_team_figures(&transcripts, &run, &disk, &ids);
    let stream = ingest(&run.world.stream);
    assert_eq!(stream.format(), "claude-stream-json");
    check_team_tree(&stream, &disk, &ids, "stream-json");
    check_stream_reconciled(&stream, &transcripts, &disk, &run);
    check_followed(&followed, &ids, &transcripts);
    check_followed(&watched, &ids, &transcripts);
}

fn thread<'p>(p: &'p Pipeline, id: &str, what: &str) -> &'p Thread {
    p.model.thread(p.find(id).unwrap_or_else(|| panic!("{what}: no thread {id}")))
}

fn parent_id<'p>(p: &'p Pipeline, t: &Thread) -> Option<&'p str> {
    t.parent.map(|i| &*p.model.thread(i).id)
}

/// The tree and the statuses, from either input: every child under its parent and card, named by
/// its description, ended as it ended.
fn check_team_tree(p: &Pipeline, disk: &OnDisk, ids: &HashMap<&'static str, String>, what: &str) {
    let root = thread(p, &disk.session_id, what);
    assert_eq!(root.role, Role::Root, "{what}: the session is a root");
    assert_eq!(p.model.threads.len(), TEAM.len(), "{what}: the session and its five agents, nothing else");
    assert_eq!(root.subtree.threads as usize, TEAM.len(), "{what}: all in the session's tree");
    for a in &TEAM[1..] {
        let t = thread(p, &ids[a.tag], what);
        let parent = match a.parent {
            Some("lead") => disk.session_id.as_str(),
            Some(other) => ids[other].as_str(),
            None => unreachable!(),
        };
        assert_eq!(t.role, Role::Child, "{what}: {} is a child", a.tag);
        assert_eq!(parent_id(p, t), Some(parent), "{what}: {}'s parent", a.tag);
        assert_eq!(t.card.as_deref(), a.card, "{what}: {}'s card", a.tag);
        assert_eq!(t.name(), a.description, "{what}: {}'s name", a.tag);
        let want = if a.fails { Status::Failed } else { Status::Idle };
        assert_eq!(t.status, want, "{what}: {}'s status", a.tag);
    }
    assert_eq!(root.status, Status::Idle, "{what}: the session ended its last turn");
}

/// Swarmtop's usage per response, from what the mock served: input includes the cache.
fn tokens_of(u: Usage) -> Tokens {
    let input = u.input + u.cache_write() + u.cache_read;
    Tokens {
        input,
        cached_input: u.cache_read,
        cache_write: u.cache_write(),
        cache_write_1h: u.cache_write_1h,
        output: u.output,
        reasoning_output: 0,
        total: input + u.output,
    }
}

/// Per agent, from the transcripts: the deduplicated tokens are exactly what the mock served, the
/// model is the agent's own, the cost is the served responses priced one by one; the session's
/// figures agree with what the CLI itself reported (cost-state), with nothing unattributed.
fn check_team_figures(p: &Pipeline, run: &ClaudeRun, disk: &OnDisk, ids: &HashMap<&'static str, String>) {
    let prices = Prices::builtin();
    let mut want_cost_total = Pico::default();
    for a in TEAM {
        let id = if a.tag == "lead" { disk.session_id.as_str() } else { ids[a.tag].as_str() };
        let t = thread(p, id, "transcripts");
        let (mut tokens, mut cost) = (Tokens::default(), Pico::default());
        for s in run.served.iter().filter(|s| s.agent.as_deref() == Some(a.tag) && s.status == 200) {
            let u = tokens_of(s.usage.expect("a served answer has usage"));
            let price = prices.lookup_for_prompt(a.model, u.input).expect("the scenario's models are priced");
            tokens.add(&u);
            cost += u.cost(&price);
        }
        want_cost_total += cost;
        assert_eq!(t.tokens, tokens, "{}: tokens deduplicated per (message.id, requestId)", a.tag);
        // Its context: all its latest answer's request held, and the answer; the window is not
        // in a transcript.
        let latest = run
            .served
            .iter()
            .filter(|s| s.agent.as_deref() == Some(a.tag) && s.status == 200)
            .max_by_key(|s| s.step)
            .and_then(|s| s.usage)
            .expect("an answer");
        assert_eq!(t.context, Some(ContextFill { used: latest.total(), window: None }), "{}: context", a.tag);
        assert_eq!(t.model.as_ref().map(swarmtop::wire::Clean::as_str), Some(a.model), "{}: its own model", a.tag);
        assert_eq!(t.cost, Some(cost), "{}: cost", a.tag);
    }
    let root = thread(p, &disk.session_id, "transcripts");
    assert_eq!(root.subtree.cost_usd(), Some(want_cost_total));
    let r = p.model.reconciled(p.find(&disk.session_id).unwrap()).expect("the session's cost-state");
    assert_eq!(r.unattributed, Tokens::default(), "transcripts hold every response: nothing unattributed");
    assert_eq!(r.reported.total, root.subtree.tokens.total, "the CLI's totals are the agents' sum");
    assert_eq!(r.reported_cost, Some(want_cost_total), "the CLI prices as the table does, to the pico-dollar");
}

/// The stream is partial by design; reconciled with `result.modelUsage`, its session's totals are
/// the transcripts' exactly: what no agent can be credited with is the unattributed part, and the
/// agents' figures plus that part are the reported total, nothing counted twice.
fn check_stream_reconciled(stream: &Pipeline, transcripts: &Pipeline, disk: &OnDisk, run: &ClaudeRun) {
    let idx = stream.find(&disk.session_id).unwrap();
    let root = stream.model.thread(idx);
    let r = stream.model.reconciled(idx).expect("result.modelUsage");
    let full = thread(transcripts, &disk.session_id, "transcripts");
    assert_eq!(r.reported.total, full.subtree.tokens.total, "reported = every response of every agent");
    assert!(root.subtree.tokens.total < r.reported.total, "the stream alone is partial");
    assert!(r.unattributed.total > 0);
    assert_eq!(
        root.subtree.tokens.total + r.unattributed.total,
        r.reported.total,
        "never dropped, never double counted"
    );
    assert_eq!(r.reported_cost, full.subtree.cost_usd(), "the CLI's own cost figure");
    // The window is what `result.modelUsage` says of the session's model; the used size is the
    // latest answer's prompt (the stream's assistant lines carry the stream-start output).
    let text = String::from_utf8(run.stream()).expect("UTF-8");
    let result: Value = text
        .lines()
        .rfind(|l| l.contains(r#""type":"result""#))
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .expect("a result line");
    let window = result["modelUsage"][ROOT_MODEL]["contextWindow"].as_u64();
    assert!(window.is_some_and(|w| w > 0), "2.1.332 reports the window: {}", result["modelUsage"]);
    let fill = root.context.expect("the session's context");
    assert_eq!(fill.window, window, "the reported window");
    let of_transcript = full.context.expect("the transcript's context").used;
    assert!(fill.used > 0 && fill.used <= of_transcript, "{} of {of_transcript}", fill.used);
}

/// What a `--follow` monitor showed while the run went on: each child running under its card,
/// its tokens counted, before it ended; and at the end the same figures as a reading afterwards.
fn check_followed(followed: &Followed<Sightings>, ids: &HashMap<&'static str, String>, transcripts: &Pipeline) {
    eprintln!(
        "follower: {} polls, running-with-tokens sightings per card: {:?}",
        followed.polls, followed.seen.running_under_card
    );
    assert!(followed.polls > 5, "the follower polled during the run ({} polls)", followed.polls);
    for a in &TEAM[1..] {
        let seen = followed.seen.running_under_card.get(a.card.unwrap()).copied().unwrap_or(0);
        assert!(seen > 0, "{} ({}) was never seen running under its card with tokens while it ran", a.tag, ids[a.tag]);
    }
    for t in &transcripts.model.threads {
        let f = followed.seen.last.get(&*t.id).unwrap_or_else(|| panic!("the follower never saw {}", t.id));
        assert_eq!((f.0, f.1), (t.tokens.total, t.status), "follow ends where a reading afterwards does: {}", t.id);
    }
}

/// What a follower's model showed, poll by poll, while the CLI ran.
#[derive(Default)]
struct Sightings {
    /// Card -> polls in which its child was a child of the right place, running, with tokens.
    running_under_card: HashMap<String, usize>,
    /// Thread id -> (tokens, status) at the last poll.
    last: HashMap<String, (u64, Status)>,
}

impl Sightings {
    fn see(&mut self, m: &Model) {
        for t in &m.threads {
            let under_card = t.role == Role::Child && t.card.is_some() && t.parent.is_some();
            if under_card && t.status == Status::Running && t.tokens.total > 0 {
                *self.running_under_card.entry(t.card.as_deref().unwrap().to_owned()).or_default() += 1;
            }
            self.last.insert(t.id.to_string(), (t.tokens.total, t.status));
        }
    }
}

/// The machine view's source over the CLI's HOME, fed into a pipeline as the screen feeds it: the
/// same sightings as a [`Follower`]'s, and the sessions' liveness as its snapshots say.
struct MachineWatch {
    stop: tokio::sync::oneshot::Sender<tokio::sync::oneshot::Sender<Followed<Sightings>>>,
    states: tokio::sync::watch::Receiver<HashMap<String, State>>,
    model: tokio::sync::watch::Receiver<Watched>,
}

/// The machine watcher's model after its latest event.
#[derive(Clone, Default)]
struct Watched {
    /// Thread id -> (tokens, status).
    threads: HashMap<String, (u64, Status)>,
    /// Turns of any thread still in progress.
    open_turns: usize,
}

impl MachineWatch {
    fn start(home: &Path) -> Self {
        let opts = swarmtop::source::census::Options {
            window: swarmtop::source::agents::Window::all(),
            env: swarmtop::source::agents::Env::default().with("HOME", home),
            proc: swarmtop::source::proc::Proc::default(),
            tee_dir: home.join("run/swarmtop"),
        };
        let mut events = swarmtop::source::census::machine::spawn(opts);
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<tokio::sync::oneshot::Sender<Followed<Sightings>>>();
        let (states_tx, states) = tokio::sync::watch::channel(HashMap::new());
        let (model_tx, model) = tokio::sync::watch::channel(Watched::default());
        tokio::spawn(async move {
            let mut pipeline = Pipeline::default();
            let mut origin = Origin::NONE;
            let mut out = Followed { polls: 0, seen: Sightings::default() };
            loop {
                let event = tokio::select! {
                    reply = &mut stopped => {
                        if let Ok(reply) = reply {
                            let _ = reply.send(out);
                        }
                        return;
                    }
                    event = events.recv() => event,
                };
                // What the screen does with each (ui::runtime).
                match event {
                    Some(LiveEvent::Origin(o)) => origin = o,
                    Some(LiveEvent::Records(r)) => {
                        files::read_records(r.as_bytes(), files::MAX_LINE, |rec| {
                            pipeline.feed(rec, &origin, &mut |_: &swarmtop::router::Event<'_, '_>| {});
                        })
                        .expect("records");
                        out.polls += 1;
                    }
                    Some(LiveEvent::Stopped { id, guessed_at_ms }) => pipeline.stopped(&id, guessed_at_ms),
                    Some(LiveEvent::Resumed(id)) => pipeline.resumed(&id),
                    Some(LiveEvent::Sessions(snapshot)) => {
                        states_tx.send_replace(snapshot.sessions.iter().map(|s| (s.id.clone(), s.state)).collect());
                    }
                    Some(_) => {}
                    None => return,
                }
                out.seen.see(&pipeline.model);
                let open_turns = pipeline
                    .model
                    .threads
                    .iter()
                    .flat_map(|t| &t.turns)
                    .filter(|t| t.status == TurnStatus::InProgress)
                    .count();
                model_tx.send_replace(Watched { threads: out.seen.last.clone(), open_turns });
            }
        });
        Self { stop, states, model }
    }

    /// Once the CLI has exited: waits for `session` to be no longer live (liveness is sampled
    /// every 2 s) and for the model to be as `done` wants, then its state and what was seen.
    async fn stop(
        mut self,
        session: &str,
        done: impl Fn(&Watched) -> bool,
    ) -> (Option<State>, Followed<Sightings>, Watched) {
        let deadline = Duration::from_secs(10);
        let not_live = |s: &HashMap<String, State>| s.get(session).is_some_and(|&s| s != State::Live);
        let state = tokio::time::timeout(deadline, self.states.wait_for(not_live)).await;
        let state = state.ok().and_then(Result::ok).map(|s| s[session]);
        let caught_up = tokio::time::timeout(deadline, self.model.wait_for(|m| done(m))).await.is_ok();
        let last = self.model.borrow().clone();
        let (reply, seen) = tokio::sync::oneshot::channel();
        let _ = self.stop.send(reply);
        let seen = seen.await.expect("the machine watcher's sightings");
        assert!(caught_up, "the machine view never got where it should: {:?}", last.threads);
        (state, seen, last)
    }

    /// [`MachineWatch::stop`] after a clean run: the session idle, the model where a reading
    /// of the files afterwards is.
    async fn stop_as_read(self, session: &str, transcripts: &Pipeline) -> Followed<Sightings> {
        let want: HashMap<String, (u64, Status)> =
            transcripts.model.threads.iter().map(|t| (t.id.to_string(), (t.tokens.total, t.status))).collect();
        let (state, seen, _) = self.stop(session, |m| want.iter().all(|(id, w)| m.threads.get(id) == Some(w))).await;
        assert_eq!(state, Some(State::Idle), "the machine view: the session is idle once the CLI exited");
        seen
    }
}

/// wire.md §6 on the raw files: one sidecar per child at any depth, linked by `toolUseId` and
/// `parentAgentId`, usage per agent as the mock served it, the failing child's synthetic error line.
fn check_team_files(run: &ClaudeRun, disk: &OnDisk) {
    let ids = ids_by_tag(disk, TEAM);
    assert_eq!(ids.len(), TEAM.len() - 1, "one sidecar per child: {:?}", disk.agents.keys().collect::<Vec<_>>());
    let served = served_usage(run);
    for a in &TEAM[1..] {
        let (lines, meta) = &disk.agents[&ids[a.tag]];
        assert_eq!(meta["description"], a.description, "{}", a.tag);
        let depth = if a.parent == Some("lead") { 1 } else { 2 };
        assert_eq!(meta["spawnDepth"], depth, "{}", a.tag);
        match a.parent {
            Some("lead") => assert!(meta.get("parentAgentId").is_none(), "{}: no parentAgentId at depth 1", a.tag),
            Some(p) => assert_eq!(meta["parentAgentId"].as_str(), Some(ids[p].as_str()), "{}", a.tag),
            None => unreachable!(),
        }
        assert_eq!(meta["requestShape"], if a.background { "background" } else { "foreground" }, "{}", a.tag);
        assert_eq!(meta["finished"], true, "{}: the sidecar is rewritten when the child ends", a.tag);
        assert!(lines.iter().all(|l| l["sessionId"] == disk.session_id.as_str()), "{}: the parent's session id", a.tag);
        assert_eq!(assistant_usage(lines), served[a.tag], "{}: deduplicated usage equals what the mock served", a.tag);
        let models: Vec<&str> = lines
            .iter()
            .filter(|l| l["type"] == "assistant" && l["isApiErrorMessage"] != true)
            .filter_map(|l| l["message"]["model"].as_str())
            .collect();
        assert!(!models.is_empty() && models.iter().all(|m| *m == a.model), "{}: models {models:?}", a.tag);
        let errors: Vec<&Value> = lines.iter().filter(|l| l["isApiErrorMessage"] == true).collect();
        if a.fails {
            assert!(!errors.is_empty(), "{}: a synthetic API-error line", a.tag);
            assert!(errors.iter().all(|l| l["message"]["model"] == "<synthetic>" && l["apiErrorStatus"] == 529));
        } else {
            assert!(errors.is_empty(), "{}: no API errors", a.tag);
        }
    }
    assert_eq!(assistant_usage(&disk.session), served["lead"], "the session's own usage");
    let attempts = run.served.iter().filter(|s| s.agent.as_deref() == Some("changelog") && s.status == 529).count();
    assert_eq!(
        attempts,
        1 + claude_driver::MAX_RETRIES as usize,
        "the failing step is tried 1 + CLAUDE_CODE_MAX_RETRIES times"
    );
    assert_eq!(agent(TEAM, "lead").model, ROOT_MODEL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_interrupted_session() {
    let Some(bin) = binary("real_claude_interrupted_session") else { return };
    let world = claude_driver::World::new().expect("a world");
    let run = claude_driver::run(
        &bin,
        Scenario::interrupt(Pacing::LIVE),
        RunOptions {
            timeout: Duration::from_secs(60),
            interrupt_after: Some(Interrupt::sigint(Duration::from_millis(500))),
            telemetry: None,
        },
        world,
    )
    .await
    .unwrap_or_else(|e| panic!("the interrupted session did not complete: {e}"));
    claude_driver::keep_if_asked(&run, "interrupt");
    eprintln!("interrupt run: {:?}, exit {:?}", run.elapsed, run.exit);
    assert!(run.interrupted);
    let disk = on_disk(&run);
    let ids = ids_by_tag(&disk, INTERRUPT);
    let (lines, _) = &disk.agents[&ids["slow"]];
    let slow = run.served.iter().find(|s| s.agent.as_deref() == Some("slow") && s.step == 1).expect("the slow answer");
    assert!(!slow.completed, "the CLI hung up mid-stream");
    assert!(
        lines.iter().any(|l| l["type"] == "user" && l.to_string().contains("[Request interrupted by user]")),
        "the child's transcript ends with the interrupt"
    );
    // Through swarmtop: nothing is left running after the session ended, from either input.
    for (what, p) in [("transcripts", ingest(&run.world.projects())), ("stream-json", ingest(&run.world.stream))] {
        let root = thread(&p, &disk.session_id, what);
        assert_eq!(root.status, Status::Interrupted, "{what}: the session");
        let child = thread(&p, &ids["slow"], what);
        assert_eq!(child.status, Status::Interrupted, "{what}: the child");
        assert_eq!(parent_id(&p, child), Some(disk.session_id.as_str()), "{what}: under the session");
        assert_eq!(child.card.as_deref(), agent(INTERRUPT, "slow").card, "{what}: under its card");
    }
}

/// The same run killed (SIGKILL) while the child's answer streams: the CLI writes no end, no
/// interrupt note, its `sessions/<pid>.json` stays. Once the machine view sees the process gone,
/// nothing of the session runs on its screen: the lead and the child interrupted, no turn open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_killed_session_stops_running_in_the_machine_view() {
    let Some(bin) = binary("real_claude_killed_session_stops_running_in_the_machine_view") else { return };
    let world = claude_driver::World::new().expect("a world");
    let machine = MachineWatch::start(&world.home);
    let run = claude_driver::run(
        &bin,
        Scenario::interrupt(Pacing::LIVE),
        RunOptions {
            timeout: Duration::from_secs(60),
            interrupt_after: Some(Interrupt::sigkill(Duration::from_millis(500))),
            telemetry: None,
        },
        world,
    )
    .await
    .unwrap_or_else(|e| panic!("the killed session did not run: {e}"));
    claude_driver::keep_if_asked(&run, "killed");
    assert!(run.interrupted && run.exit.code().is_none(), "killed by a signal: {:?}", run.exit);
    let disk = on_disk(&run);
    let ids = ids_by_tag(&disk, INTERRUPT);
    // The files alone say the session still works: its turn open, the child's answer unwritten.
    let read = ingest(&run.world.projects());
    assert_eq!(thread(&read, &disk.session_id, "files").status, Status::Running, "nothing in the files ends it");
    let stopped = |m: &Watched| {
        m.open_turns == 0
            && [disk.session_id.as_str(), ids["slow"].as_str()]
                .iter()
                .all(|id| m.threads.get(*id).is_some_and(|t| t.1 == Status::Interrupted))
    };
    let (state, seen, last) = machine.stop(&disk.session_id, stopped).await;
    // Its `sessions/<pid>.json` stays behind naming the dead pid: the session has ended, not
    // "idle, maybe still running" for five minutes.
    assert_eq!(state, Some(State::Ended), "ended once its pid is gone");
    let leftover = std::fs::read_dir(run.world.home.join(".claude/sessions")).expect("sessions/").count();
    assert!(leftover > 0, "the CLI's sessions file outlives a SIGKILL");
    let card = agent(INTERRUPT, "slow").card.unwrap();
    assert!(seen.seen.running_under_card.get(card).is_some_and(|&n| n > 0), "the child ran under its card first");
    assert_eq!(last.threads.len(), INTERRUPT.len(), "the session and its child: {:?}", last.threads);
}
