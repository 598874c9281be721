//! The tee's guards (`swarmtop tee --max-depth N --max-children N --max-cost USD`): a monitor of the
//! tee's own socket that reads the session as any monitor does and, when a child passes a limit,
//! asks the tee to interrupt its running turn, recorded with the reason the tree then shows
//! ("stopped by guard: depth 3 > 2"). The session's pumps never wait for it.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::control::{self, Turn};
use super::limits::{Limits, breaches};
use super::record;
use super::tee::{Line, Reply, TeeSession};
use crate::pipeline::Config;

/// How often spend is looked at again while lines arrive (the tree's shape is looked at as it changes).
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Watches the session behind `socket` until it ends, stopping the children that pass `limits`.
pub async fn guard(socket: &Path, config: Config, limits: Limits) -> Result<(), String> {
    let mut session = TeeSession::open(socket, config).await?;
    // Each running turn is asked to stop once.
    let mut asked: HashSet<(String, String)> = HashSet::new();
    let (mut structure, mut generation, mut checked) = (u64::MAX, u64::MAX, Instant::now());
    loop {
        let model = &session.pipeline.model;
        let changed =
            model.structure != structure || (model.generation != generation && checked.elapsed() >= CHECK_EVERY);
        if changed {
            (structure, generation, checked) = (model.structure, model.generation, Instant::now());
            let format = session.pipeline.format();
            let mut asks = Vec::new();
            for (idx, breach) in breaches(model, &limits) {
                let t = model.thread(idx);
                let Some(turn) = t.turns.iter().rev().find(|u| u.status == crate::model::TurnStatus::InProgress) else {
                    continue;
                };
                if !asked.insert((t.id.to_string(), turn.id.to_string())) {
                    continue;
                }
                let Some(agent) = control::for_format(format) else { continue };
                let running = Turn { thread: &t.id, turn: &turn.id, root: false };
                let act = json!({"kind": "interrupt", "by": "guard", "target": &*t.id, "turn": &*turn.id,
                                 "reason": breach.to_string()});
                asks.push(((agent.interrupt)(running), act));
                let mut kept =
                    record::act("interrupt", "guard", "tee", Some(&super::target::root_of(model, idx)), &t.id);
                kept.detail = format!("turn {}: {breach}", turn.id);
                "interrupt asked".clone_into(&mut kept.outcome);
                if let Err(e) = record::keep(&kept) {
                    eprintln!("swarmtop tee: the guard's act was not kept in the run store: {e}");
                }
            }
            for (request, act) in asks {
                session.ask(&request, act).await?;
            }
        }
        match session.next().await? {
            Line::Ended => return Ok(()),
            Line::Reply(Reply::Refused { error, .. }) => {
                eprintln!("swarmtop tee: the guard's interrupt was refused: {error}");
            }
            Line::Reply(Reply::Answer { msg, .. }) => {
                let refusal = control::for_format(session.pipeline.format()).and_then(|c| (c.refusal)(&msg));
                if let Some(why) = refusal {
                    eprintln!("swarmtop tee: the agent refused the guard's interrupt: {why}");
                }
            }
            Line::Record | Line::Live | Line::Reply(Reply::Acted { .. }) => {}
        }
    }
}
