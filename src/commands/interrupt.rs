//! `swarmtop interrupt [--subtree] [--socket PATH] TARGET`: stop one agent, or its subtree the deepest
//! first, through the tee that carries its session; exit 0 only once every one of them confirmed it
//! stopped (its running turn ended as interrupted, by its own agent's word).
//!
//! TARGET is looked for in every running tee of ours (as `attach` finds them) unless `--socket`
//! names one; finding it in several is an error that lists them.

use std::process::ExitCode;

use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;

use super::cli::InterruptArgs;
use crate::act::control::{self, AgentControl, Running};
use crate::act::target::{self, Miss, Stop};
use crate::act::tee::{Line, Reply, TeeSession};
use crate::model::{Model, TurnStatus};
use crate::pipeline::Config;
use crate::router::ThreadIdx;
use crate::source::socket;
use crate::ui::label;
use crate::wire::{Clean, sanitize_line};

pub fn run(args: &InterruptArgs, config: Config) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(interrupt(args, config))
}

fn name(model: &Model, idx: ThreadIdx) -> String {
    label::text(model, idx)
}

async fn interrupt(args: &InterruptArgs, config: Config) -> Result<ExitCode> {
    let (mut session, idx) = find(args, config).await?;
    let model = &session.pipeline.model;
    let who = name(model, idx);
    if let Some(code) = session.ended {
        bail!("{who}'s session has ended (exit {code}): nothing to interrupt");
    }
    let levels = target::plan(model, idx, args.subtree);
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
            let (who, id, turn) = (name(model, stop.thread), sanitize_line(&stop.id), sanitize_line(&stop.turn));
            let line = format!("interrupted {who} [{id}], turn {turn}\n");
            super::print(line.as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The tee whose session holds TARGET, with it.
async fn find(args: &InterruptArgs, config: Config) -> Result<(TeeSession, ThreadIdx)> {
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
        let model = &session.pipeline.model;
        match target::resolve(model, target, |i| name(model, i)) {
            Ok(idx) => found.push((session, idx)),
            Err(Miss::None) => {}
            Err(Miss::Several(list)) => {
                let list: Vec<String> = list.iter().map(|(id, n)| format!("{n} [{id}]")).collect();
                bail!("{} names several agents: {}", sanitize_line(target), sanitize_line(&list.join(", ")));
            }
        }
    }
    match found.len() {
        0 => bail!("no running tee of yours carries {}", sanitize_line(target)),
        1 => Ok(found.remove(0)),
        _ => {
            let tees: Vec<String> = found.iter().map(|(s, _)| Clean::path(&s.path).to_string()).collect();
            bail!("{} is in several tees ({}): name one with --socket", sanitize_line(target), tees.join(", "))
        }
    }
}

/// How one agent's turn ended, once it has.
fn ended(model: &Model, stop: &Stop) -> Option<TurnStatus> {
    let t = model.thread(stop.thread);
    let turn = t.turns.iter().rev().find(|u| *u.id == *stop.turn)?;
    (turn.status != TurnStatus::InProgress).then_some(turn.status)
}

/// Asks the tee to interrupt every turn of `level` and waits until each ended as interrupted.
async fn stop_level(
    session: &mut TeeSession,
    agent: &AgentControl,
    level: &[Stop],
    deadline: tokio::time::Instant,
) -> Result<()> {
    let mut asked = Vec::new();
    for stop in level {
        let act = json!({"kind": "interrupt", "by": "swarmtop interrupt", "target": stop.id, "turn": stop.turn});
        let root = session.pipeline.model.thread(stop.thread).parent.is_none();
        let running = Running { thread: &stop.id, turn: &stop.turn, root };
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
                    bail!("{} {how} before it could be interrupted", name(model, stop.thread));
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
                if let Some(why) = control::refusal(&msg) {
                    bail!("the agent refused the interrupt: {}", sanitize_line(&why));
                }
            }
            // Records (applied already), and what the tee says of other requests.
            Line::Record | Line::Live | Line::Reply(_) => {}
        }
    }
}

fn who(model: &Model, level: &[Stop]) -> String {
    let names: Vec<String> = level.iter().map(|s| name(model, s.thread)).collect();
    names.join(", ")
}
