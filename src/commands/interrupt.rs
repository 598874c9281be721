//! `swarmtop interrupt [--subtree] TARGET`: stop one agent, or its subtree the deepest first, through
//! what carries it; exit 0 only once each one confirmed it stopped, by its own agent's word.
//!
//! Carriers, the most precise first: a running tee of ours (`--socket`, else every one, as `attach`
//! finds them), where the agent's turn is interrupted and its `turn/completed` says `interrupted`;
//! an OpenCode server (`--server`, else those found running), where the session is aborted and its
//! running message ends `MessageAbortedError`; else the process the machine view found running
//! the session (any agent), signalled SIGINT, then SIGTERM after `--grace`, until it is gone.
//! Finding TARGET in several places of one kind is an error that lists them.

use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;

use super::cli::InterruptArgs;
use super::sessions::{self, Row};
use crate::act::control::{self, Turn};
use crate::act::log;
use crate::act::server::{self, Server, Sessions};
use crate::act::signal;
use crate::act::target::{self, Miss, ModelTree, Stop, Tree};
use crate::act::tee::{Line, Reply, TeeSession};
use crate::model::{Model, TurnStatus};
use crate::pipeline::Config;
use crate::router::ThreadIdx;
use crate::source::agents::control::{Outcome, TeeControl};
use crate::source::census::{self, Options};
use crate::source::proc::Proc;
use crate::source::seen::State;
use crate::source::socket;
use crate::ui::label;
use crate::wire::{Clean, sanitize_line};

/// How often an OpenCode server is asked whether its aborted sessions stopped.
const POLL: Duration = Duration::from_millis(100);

pub fn run(args: &InterruptArgs, config: Config) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(interrupt(args, config))
}

fn name(model: &Model, idx: ThreadIdx) -> String {
    label::text(model, idx)
}

fn tree(model: &Model) -> ModelTree<'_, impl Fn(ThreadIdx) -> String + '_> {
    ModelTree { model, name: |i| name(model, i) }
}

async fn interrupt(args: &InterruptArgs, config: Config) -> Result<ExitCode> {
    if args.server.is_none() {
        if let Some(found) = find(args, config.clone()).await? {
            return via_tee(args, found).await;
        }
    }
    if args.socket.is_none() {
        if let Some((server, sessions, at)) = find_server(args)? {
            return via_server(args, &server, &sessions, at);
        }
    }
    if args.socket.is_none() && args.server.is_none() {
        if let Some(row) = find_process(args, &config)? {
            return via_signal(args, &row);
        }
    }
    let looked = match (&args.socket, &args.server) {
        (Some(p), _) => format!("the tee at {}", Clean::path(p)),
        (_, Some(s)) => format!("the server at {}", sanitize_line(s)),
        _ => "no running tee, agent server or session process of yours".to_owned(),
    };
    bail!(
        "{looked} carries {} (a sub-agent outside a tee or a server cannot be stopped alone: interrupt its session)",
        sanitize_line(&args.target)
    )
}

/// Names several matches, for the error that refuses to pick one.
fn several(target: &str, list: &[(String, String)]) -> color_eyre::Report {
    let list: Vec<String> = list.iter().map(|(id, n)| format!("{n} [{id}]")).collect();
    eyre!("{} names several agents: {}", sanitize_line(target), sanitize_line(&list.join(", ")))
}

async fn via_tee(args: &InterruptArgs, (mut session, idx): (TeeSession, ThreadIdx)) -> Result<ExitCode> {
    let model = &session.pipeline.model;
    let who = name(model, idx);
    if let Some(code) = session.ended {
        bail!("{who}'s session has ended (exit {code}): nothing to interrupt");
    }
    let levels = target::plan(&tree(model), idx.index(), args.subtree);
    if levels.is_empty() {
        let status = model.thread(idx).status.as_str();
        bail!("{who} is not running a turn ({status}): nothing to interrupt");
    }
    let format = session.pipeline.format();
    let Some(agent) = control::for_format(format) else {
        bail!("swarmtop cannot interrupt a {format} session through its tee");
    };
    let deadline = tokio::time::Instant::now() + args.timeout;
    for level in &levels {
        stop_level(&mut session, agent, level, deadline).await?;
        let model = &session.pipeline.model;
        for stop in level {
            let (who, id, turn) =
                (name(model, ThreadIdx(stop.node as u32)), sanitize_line(&stop.id), sanitize_line(&stop.turn));
            let line = format!("interrupted {who} [{id}], turn {turn}\n");
            super::print(line.as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The tee whose session holds TARGET, with it.
async fn find(args: &InterruptArgs, config: Config) -> Result<Option<(TeeSession, ThreadIdx)>> {
    let paths = match &args.socket {
        Some(p) => vec![p.clone()],
        None => socket::list(&socket::lookup_dir())?.found.into_iter().map(|f| f.path).collect(),
    };
    let target = &args.target;
    let mut found = Vec::new();
    for path in paths {
        let session = match TeeSession::open(&path, config.clone()).await {
            Ok(s) => s,
            Err(e) if args.socket.is_some() => return Err(eyre!(e)),
            // A tee that went away since it was listed carries nothing.
            Err(_) => continue,
        };
        let resolved = target::resolve(&tree(&session.pipeline.model), target);
        match resolved {
            Ok(i) => found.push((session, ThreadIdx(i as u32))),
            Err(Miss::None) => {}
            Err(Miss::Several(list)) => return Err(several(target, &list)),
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(Some(found.remove(0))),
        _ => {
            let tees: Vec<String> = found.iter().map(|(s, _)| Clean::path(&s.path).to_string()).collect();
            bail!("{} is in several tees ({}): name one with --socket", sanitize_line(target), tees.join(", "))
        }
    }
}

/// How one agent's turn ended, once it has.
fn ended(model: &Model, stop: &Stop) -> Option<TurnStatus> {
    let t = model.thread(ThreadIdx(stop.node as u32));
    let turn = t.turns.iter().rev().find(|u| *u.id == *stop.turn)?;
    (turn.status != TurnStatus::InProgress).then_some(turn.status)
}

/// Asks the tee to interrupt every turn of `level` and waits until each ended as interrupted.
async fn stop_level(
    session: &mut TeeSession,
    agent: &TeeControl,
    level: &[Stop],
    deadline: tokio::time::Instant,
) -> Result<()> {
    let mut asked = Vec::new();
    for stop in level {
        let act = json!({"kind": "interrupt", "by": "swarmtop interrupt", "target": stop.id, "turn": stop.turn});
        let root = session.pipeline.model.thread(ThreadIdx(stop.node as u32)).parent.is_none();
        let running = Turn { thread: &stop.id, turn: &stop.turn, root };
        asked.push(session.ask(&(agent.interrupt)(running), act).await.map_err(|e| eyre!(e))?);
    }
    loop {
        let model = &session.pipeline.model;
        let mut open = 0;
        for stop in level {
            match ended(model, stop) {
                None => open += 1,
                Some(TurnStatus::Interrupted) => {}
                Some(other) => {
                    let how = if other == TurnStatus::Failed { "failed" } else { "completed" };
                    bail!("{} {how} before it could be interrupted", name(model, ThreadIdx(stop.node as u32)));
                }
            }
        }
        if open == 0 {
            return Ok(());
        }
        let next = tokio::time::timeout_at(deadline, session.next()).await;
        let line =
            next.map_err(|_| eyre!("no confirmation that {} stopped in time", who(&session.pipeline.model, level)))?;
        match line.map_err(|e| eyre!(e))? {
            Line::Ended => {
                bail!("the session ended before {} confirmed it stopped", who(&session.pipeline.model, level))
            }
            Line::Reply(Reply::Refused { tag, error }) if asked.contains(&tag) => {
                bail!("the tee refused to interrupt: {}", sanitize_line(&error));
            }
            Line::Reply(Reply::Answer { tag, msg }) if asked.contains(&tag) => {
                if let Some(why) = (agent.refusal)(&msg) {
                    bail!("the agent refused the interrupt: {}", sanitize_line(&why));
                }
            }
            // Records (applied already), and what the tee says of other requests.
            Line::Record | Line::Live | Line::Reply(_) => {}
        }
    }
}

fn who(model: &Model, level: &[Stop]) -> String {
    let names: Vec<String> = level.iter().map(|s| name(model, ThreadIdx(s.node as u32))).collect();
    names.join(", ")
}

/// The agent server whose sessions hold TARGET: `--server`, else every server found running.
fn find_server(args: &InterruptArgs) -> Result<Option<(Server, Sessions, usize)>> {
    let servers: Vec<Server> = match &args.server {
        Some(url) => server::apis().map(|api| Server::new(url, api)).collect::<Result<_, _>>().map_err(|e| eyre!(e))?,
        None => {
            server::running().iter().flat_map(|a| server::apis().filter_map(|api| Server::new(a, api).ok())).collect()
        }
    };
    let mut found = Vec::new();
    for server in servers {
        let sessions = match server.sessions() {
            Ok(s) => s,
            Err(e) if args.server.is_some() => return Err(eyre!(e)),
            Err(_) => continue,
        };
        match target::resolve(&sessions, &args.target) {
            Ok(at) => found.push((server, sessions, at)),
            Err(Miss::None) => {}
            Err(Miss::Several(list)) => return Err(several(&args.target, &list)),
        }
    }
    if found.len() > 1 {
        let all: Vec<String> = found.iter().map(|(s, _, _)| s.authority.clone()).collect();
        bail!("{} is on several servers ({}): name one with --server", sanitize_line(&args.target), all.join(", "));
    }
    Ok(found.pop())
}

fn via_server(args: &InterruptArgs, server: &Server, sessions: &Sessions, at: usize) -> Result<ExitCode> {
    let levels = target::plan(sessions, at, args.subtree);
    let who = |i: usize| format!("{} [{}]", sanitize_line(&sessions.names(i)[0]), sanitize_line(sessions.id(i)));
    if levels.is_empty() {
        bail!("{} is not busy on {}: nothing to interrupt", who(at), server.authority);
    }
    let deadline = std::time::Instant::now() + args.timeout;
    for level in &levels {
        for stop in level {
            server.abort(&stop.id).map_err(|e| eyre!(e))?;
        }
        for stop in level {
            let outcome = loop {
                let outcome = server.outcome(&stop.id).map_err(|e| eyre!(e))?;
                if outcome != Outcome::Running || std::time::Instant::now() > deadline {
                    break outcome;
                }
                std::thread::sleep(POLL);
            };
            let mut act = serde_json::Map::new();
            for (k, v) in [("kind", "interrupt"), ("by", "swarmtop interrupt"), ("via", server.api.via)] {
                act.insert(k.into(), v.into());
            }
            act.insert("server".into(), server.authority.clone().into());
            act.insert("target".into(), stop.id.clone().into());
            act.insert("outcome".into(), format!("{outcome:?}").into());
            log::append(act);
            match outcome {
                Outcome::Aborted => {
                    super::print(format!("interrupted {} on {}\n", who(stop.node), server.authority).as_bytes())?;
                }
                Outcome::Running => bail!("no confirmation that {} stopped in time", who(stop.node)),
                Outcome::Finished(error) => {
                    let how =
                        error.map_or_else(|| "completed".to_owned(), |e| format!("failed ({})", sanitize_line(&e)));
                    bail!("{} {how} before it could be interrupted", who(stop.node));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The machine's sessions (what `ps` lists) as a flat tree: a session runs while its process does.
struct Processes(Vec<Row>);

impl Tree for Processes {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn id(&self, i: usize) -> &str {
        self.0[i].id.as_str()
    }

    fn names(&self, i: usize) -> Vec<String> {
        vec![self.0[i].name.to_string()]
    }

    fn children(&self, _: usize) -> Vec<usize> {
        Vec::new()
    }

    fn running(&self, i: usize) -> Option<String> {
        let row = &self.0[i];
        row.pid.filter(|_| row.state == State::Live).map(|p| p.to_string())
    }
}

/// The session TARGET names among those the machine view finds (running ones however quiet).
fn find_process(args: &InterruptArgs, config: &Config) -> Result<Option<Row>> {
    let options = Options::machine(census::window(census::liveness::IDLE_AGE.as_millis() as u64, false));
    let rows = Processes(sessions::collect(&options, &config.clone().figures(), None).rows);
    match target::resolve(&rows, &args.target) {
        Ok(i) => Ok(Some(rows.0[i].clone())),
        Err(Miss::None) => Ok(None),
        Err(Miss::Several(list)) => Err(several(&args.target, &list)),
    }
}

fn via_signal(args: &InterruptArgs, row: &Row) -> Result<ExitCode> {
    let project = row.project.as_ref().map_or_else(|| "an unknown project".to_owned(), ToString::to_string);
    let what = format!("{} session {} [{}]", row.tool, row.name, row.id);
    let Some(pid) = row.pid.filter(|_| row.state == State::Live) else {
        bail!("{what} is not running ({}): nothing to interrupt", row.state.as_str());
    };
    if !args.yes && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprint!("Stop the whole {what}: pid {pid} in {project}, SIGINT then SIGTERM? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            bail!("left running");
        }
    }
    let ended = signal::stop(&Proc::default(), pid, args.grace);
    let mut act = serde_json::Map::new();
    for (k, v) in [("kind", "interrupt"), ("by", "swarmtop interrupt"), ("via", "signal")] {
        act.insert(k.into(), v.into());
    }
    act.insert("target".into(), row.id.to_string().into());
    act.insert("pid".into(), pid.into());
    act.insert("project".into(), project.clone().into());
    act.insert("outcome".into(), ended.as_ref().map_or_else(Clone::clone, |e| e.signal().to_owned()).into());
    log::append(act);
    let ended = ended.map_err(|e| eyre!(e))?;
    super::print(format!("stopped {what}: pid {pid} in {project} exited on {}\n", ended.signal()).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
