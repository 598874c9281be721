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
use crate::act::record;
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
use crate::store::rows::ActRow;
use crate::ui::acting::Plan;
use crate::ui::label;
use crate::wire::{Clean, sanitize_line};

/// How often an OpenCode server is asked whether its aborted sessions stopped.
const POLL: Duration = Duration::from_millis(100);

/// Who acts, as the act is recorded.
pub const BY_COMMAND: &str = "swarmtop interrupt";

pub fn run(args: &InterruptArgs, config: Config) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let carrier = locate(args, config).await?;
        if let Carrier::Process(row) = &carrier {
            ask_first(args, row)?;
        }
        let mut printed = Ok(());
        let done = carry(args, carrier, BY_COMMAND, &mut |line| {
            if printed.is_ok() {
                printed = super::print(format!("{line}\n").as_bytes());
            }
        })
        .await;
        printed?;
        done.map(|()| ExitCode::SUCCESS)
    })
}

/// On a terminal, before a whole session's process is signalled (`--yes` skips it).
fn ask_first(args: &InterruptArgs, row: &Row) -> Result<()> {
    let pid = process_pid(row)?;
    if args.yes || !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Ok(());
    }
    eprint!("Stop the whole {}: pid {pid} in {}, SIGINT then SIGTERM? [y/N] ", what(row), project(row));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        bail!("left running");
    }
    Ok(())
}

fn name(model: &Model, idx: ThreadIdx) -> String {
    label::text(model, idx)
}

fn tree(model: &Model) -> ModelTree<'_, impl Fn(ThreadIdx) -> String + '_> {
    ModelTree { model, name: |i| name(model, i) }
}

/// What carries the agent to stop, found.
pub enum Carrier {
    /// A tee of ours, its session read up to now, and the agent in it.
    Tee(Box<TeeSession>, ThreadIdx),
    /// An agent server, its sessions, and the one to stop.
    Server(Server, Sessions, usize),
    /// The process running the whole session (any agent).
    Process(Row),
}

/// Finds what carries TARGET: a tee, else a server, else a session's process.
pub async fn locate(args: &InterruptArgs, config: Config) -> Result<Carrier> {
    if args.server.is_none() {
        if let Some((session, idx)) = find(args, config.clone()).await? {
            return Ok(Carrier::Tee(Box::new(session), idx));
        }
    }
    if args.socket.is_none() {
        if let Some((server, sessions, at)) = find_server(args)? {
            return Ok(Carrier::Server(server, sessions, at));
        }
    }
    if args.socket.is_none() && args.server.is_none() {
        if let Some(row) = find_process(args, &config)? {
            return Ok(Carrier::Process(row));
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

/// What stopping it takes and how, for a question asked before anything is done.
pub fn plan(args: &InterruptArgs, carrier: &Carrier) -> Result<Plan> {
    match carrier {
        Carrier::Tee(session, idx) => {
            let (levels, agent) = tee_levels(args, session, *idx)?;
            let model = &session.pipeline.model;
            let tee = session.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
            let stops = levels
                .iter()
                .flatten()
                .map(|s| format!("{} [{}], its running turn", name(model, ThreadIdx(s.node as u32)), short(&s.id)))
                .collect();
            let how =
                vec![format!("through the tee at {}{tee}", Clean::path(&session.path)), format!("by {}", agent.how)];
            Ok(Plan { how, stops })
        }
        Carrier::Server(server, sessions, at) => {
            let levels = server_levels(args, server, sessions, *at)?;
            let pid = server.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
            let stops = levels.iter().flatten().map(|s| served(sessions, s.node)).collect();
            let how = vec![
                format!("through the agent server at {}{pid}", server.authority),
                format!("by {}", server.api.how),
            ];
            Ok(Plan { how, stops })
        }
        Carrier::Process(row) => {
            let pid = process_pid(row)?;
            let how = vec![
                format!("a signal to the process running the whole session: pid {pid} in {}", project(row)),
                format!("SIGINT (as Ctrl-C), then SIGTERM after {} s", args.grace.as_secs()),
            ];
            Ok(Plan { how, stops: vec![format!("{}: pid {pid}", what(row))] })
        }
    }
}

/// Stops what `carrier` carries, each stop told to `report` once confirmed (by its agent's word,
/// or its process gone); every act is logged, as `by` did it.
pub async fn carry(args: &InterruptArgs, carrier: Carrier, by: &str, report: &mut dyn FnMut(String)) -> Result<()> {
    match carrier {
        Carrier::Tee(session, idx) => via_tee(args, *session, idx, by, report).await,
        Carrier::Server(server, sessions, at) => via_server(args, &server, &sessions, at, by, report),
        Carrier::Process(row) => via_signal(args, &row, by, report),
    }
}

/// Keeps the act in the run store; a store that cannot be written is said (on stderr from the
/// command, in the log from the monitor, whose screen owns the terminal).
fn keep(act: &ActRow, by: &str) {
    if let Err(e) = record::keep(act) {
        tracing::warn!(error = %e, "the act was not kept in the run store");
        if by == BY_COMMAND {
            eprintln!("swarmtop: the act was not kept in the run store: {e}");
        }
    }
}

/// The root session of a server's session `i`.
fn served_root(sessions: &Sessions, mut i: usize) -> String {
    for _ in 0..sessions.len() {
        let parent = sessions.list[i].parent.as_ref();
        match parent.and_then(|p| sessions.list.iter().position(|s| &s.id == p)) {
            Some(p) => i = p,
            None => break,
        }
    }
    sessions.id(i).to_owned()
}

/// The tree's short id: the last 8 characters.
fn short(id: &str) -> String {
    let id = sanitize_line(id).to_string();
    let n = id.chars().count();
    id.chars().skip(n.saturating_sub(8)).collect()
}

fn served(sessions: &Sessions, i: usize) -> String {
    format!("{} [{}]", sanitize_line(&sessions.names(i)[0]), sanitize_line(sessions.id(i)))
}

fn what(row: &Row) -> String {
    format!("{} session {} [{}]", row.tool, row.name, row.id)
}

fn project(row: &Row) -> String {
    row.project
        .as_deref()
        .map_or_else(|| "an unknown project".to_owned(), |p| Clean::path(std::path::Path::new(p)).to_string())
}

/// Names several matches, for the error that refuses to pick one.
fn several(target: &str, list: &[(String, String)]) -> color_eyre::Report {
    let list: Vec<String> = list.iter().map(|(id, n)| format!("{n} [{id}]")).collect();
    eyre!("{} names several agents: {}", sanitize_line(target), sanitize_line(&list.join(", ")))
}

/// The running turns to stop in a tee's session, the deepest first, and how.
fn tee_levels(
    args: &InterruptArgs,
    session: &TeeSession,
    idx: ThreadIdx,
) -> Result<(Vec<Vec<Stop>>, &'static TeeControl)> {
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
    Ok((levels, agent))
}

async fn via_tee(
    args: &InterruptArgs,
    mut session: TeeSession,
    idx: ThreadIdx,
    by: &str,
    report: &mut dyn FnMut(String),
) -> Result<()> {
    let (levels, agent) = tee_levels(args, &session, idx)?;
    let root = target::root_of(&session.pipeline.model, idx);
    let deadline = tokio::time::Instant::now() + args.timeout;
    for level in &levels {
        let stopped = stop_level(&mut session, agent, level, deadline, by).await;
        let model = &session.pipeline.model;
        for stop in level {
            let mut act = record::act("interrupt", by, "tee", Some(&root), &stop.id);
            act.detail = format!("turn {}", stop.turn);
            act.outcome =
                stopped.as_ref().map_or_else(|e| sanitize_line(&e.to_string()).to_string(), |()| "interrupted".into());
            keep(&act, by);
            if stopped.is_ok() {
                let (who, id, turn) =
                    (name(model, ThreadIdx(stop.node as u32)), sanitize_line(&stop.id), sanitize_line(&stop.turn));
                report(format!("interrupted {who} [{id}], turn {turn}"));
            }
        }
        stopped?;
    }
    Ok(())
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
    by: &str,
) -> Result<()> {
    let mut asked = Vec::new();
    for stop in level {
        let act = json!({"kind": "interrupt", "by": by, "target": stop.id, "turn": stop.turn});
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
    let servers: Vec<Server> = if let Some(url) = &args.server {
        server::apis().map(|api| Server::new(url, api)).collect::<Result<_, _>>().map_err(|e| eyre!(e))?
    } else {
        let mut found = Vec::new();
        for (authority, pid) in server::running() {
            for api in server::apis() {
                if let Ok(mut s) = Server::new(&authority, api) {
                    s.pid = Some(pid);
                    found.push(s);
                }
            }
        }
        found
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

/// The busy sessions to abort on a server, the deepest first.
fn server_levels(args: &InterruptArgs, server: &Server, sessions: &Sessions, at: usize) -> Result<Vec<Vec<Stop>>> {
    let levels = target::plan(sessions, at, args.subtree);
    if levels.is_empty() {
        bail!("{} is not busy on {}: nothing to interrupt", served(sessions, at), server.authority);
    }
    Ok(levels)
}

fn via_server(
    args: &InterruptArgs,
    server: &Server,
    sessions: &Sessions,
    at: usize,
    by: &str,
    report: &mut dyn FnMut(String),
) -> Result<()> {
    let levels = server_levels(args, server, sessions, at)?;
    let who = |i: usize| served(sessions, i);
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
            for (k, v) in [("kind", "interrupt"), ("by", by), ("via", server.api.via)] {
                act.insert(k.into(), v.into());
            }
            act.insert("server".into(), server.authority.clone().into());
            act.insert("target".into(), stop.id.clone().into());
            act.insert("outcome".into(), format!("{outcome:?}").into());
            log::append(act);
            let mut kept =
                record::act("interrupt", by, server.api.via, Some(&served_root(sessions, stop.node)), &stop.id);
            kept.detail = format!("server {}", server.authority);
            kept.outcome = match &outcome {
                Outcome::Aborted => "interrupted".to_owned(),
                Outcome::Running => "no confirmation in time".to_owned(),
                Outcome::Finished(_) => "ended before the abort".to_owned(),
            };
            keep(&kept, by);
            match outcome {
                Outcome::Aborted => report(format!("interrupted {} on {}", who(stop.node), server.authority)),
                Outcome::Running => bail!("no confirmation that {} stopped in time", who(stop.node)),
                Outcome::Finished(error) => {
                    let how =
                        error.map_or_else(|| "completed".to_owned(), |e| format!("failed ({})", sanitize_line(&e)));
                    bail!("{} {how} before it could be interrupted", who(stop.node));
                }
            }
        }
    }
    Ok(())
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

/// The pid running a whole session, when it runs.
fn process_pid(row: &Row) -> Result<u32> {
    let Some(pid) = row.pid.filter(|_| row.state == State::Live) else {
        bail!("{} is not running ({}): nothing to interrupt", what(row), row.state.as_str());
    };
    Ok(pid)
}

fn via_signal(args: &InterruptArgs, row: &Row, by: &str, report: &mut dyn FnMut(String)) -> Result<()> {
    let (what, project) = (what(row), project(row));
    let pid = process_pid(row)?;
    let ended = signal::stop(&Proc::default(), pid, args.grace);
    let mut act = serde_json::Map::new();
    for (k, v) in [("kind", "interrupt"), ("by", by), ("via", "signal")] {
        act.insert(k.into(), v.into());
    }
    act.insert("target".into(), row.id.to_string().into());
    act.insert("pid".into(), pid.into());
    act.insert("project".into(), project.clone().into());
    act.insert("outcome".into(), ended.as_ref().map_or_else(Clone::clone, |e| e.signal().to_owned()).into());
    log::append(act);
    let mut kept = record::act("interrupt", by, "signal", Some(row.id.as_str()), row.id.as_str());
    kept.detail = format!("pid {pid} in {project}");
    kept.outcome = ended.as_ref().map_or_else(Clone::clone, |e| format!("exited on {}", e.signal()));
    keep(&kept, by);
    let ended = ended.map_err(|e| eyre!(e))?;
    report(format!("stopped {what}: pid {pid} in {project} exited on {}", ended.signal()));
    Ok(())
}
