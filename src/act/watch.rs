//! The tee's guards (`swarmtop tee --max-depth N --max-children N --max-cost USD`): a monitor of the
//! tee's own socket that reads the session as any monitor does and, when a child passes a limit,
//! asks the tee to interrupt its running turn, recorded with the reason the tree then shows
//! ("stopped by guard: depth 3 > 2"), and kept in the run store once its turn ended (or the ask
//! was refused, or went unanswered for [`CONFIRM_WITHIN`]). The session's pumps never wait for it.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::control::{self, Turn};
use super::limits::{Limits, breaches};
use super::record;
use super::tee::{Line, Reply, TeeSession};
use crate::model::{Model, TurnStatus};
use crate::pipeline::Config;
use crate::router::ThreadIdx;
use crate::store::rows::ActRow;
use crate::wire::sanitize_line;

/// How often spend is looked at again while lines arrive (the tree's shape is looked at as it changes).
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// How long an asked turn has to end before the guard's act is kept as unconfirmed (as long as
/// `swarmtop interrupt` waits by default).
const CONFIRM_WITHIN: Duration = Duration::from_secs(30);

/// An interrupt asked and not yet answered: kept in the run store once it is known how it ended
/// (issue 23: it was kept as `interrupt asked`, never confirmed), as the other stops are.
struct Asked {
    tag: u64,
    thread: ThreadIdx,
    turn: String,
    act: ActRow,
    deadline: Instant,
}

/// Watches the session behind `socket` until it ends, stopping the children that pass `limits`.
pub async fn guard(socket: &Path, config: Config, limits: Limits) -> Result<(), String> {
    let mut session = TeeSession::open(socket, config).await?;
    // Each running turn is asked to stop once.
    let mut asked: HashSet<(String, String)> = HashSet::new();
    let mut open: Vec<Asked> = Vec::new();
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
                let Some(turn) = t.turns.iter().rev().find(|u| u.status == TurnStatus::InProgress) else {
                    continue;
                };
                if !asked.insert((t.id.to_string(), turn.id.to_string())) {
                    continue;
                }
                let Some(agent) = control::for_format(format) else { continue };
                let running = Turn { thread: &t.id, turn: &turn.id, root: false };
                let act = json!({"kind": "interrupt", "by": "guard", "target": &*t.id, "turn": &*turn.id,
                                 "reason": breach.to_string()});
                let mut kept =
                    record::act("interrupt", "guard", "tee", Some(&super::target::root_of(model, idx)), &t.id);
                kept.detail = format!("turn {}: {breach}", turn.id);
                asks.push(((agent.interrupt)(running), act, idx, turn.id.to_string(), kept));
            }
            for (request, act, thread, turn, kept) in asks {
                let tag = session.ask(&request, act).await?;
                open.push(Asked { tag, thread, turn, act: kept, deadline: Instant::now() + CONFIRM_WITHIN });
            }
        }
        settle(&session, &mut open, None);
        let next = match open.iter().map(|a| a.deadline).min() {
            Some(at) => tokio::time::timeout_at(at.into(), session.next()).await,
            None => Ok(session.next().await),
        };
        let Ok(line) = next else {
            settle(&session, &mut open, Some(&|a: &Asked| (a.deadline <= Instant::now()).then(|| UNCONFIRMED.into())));
            continue;
        };
        match line? {
            Line::Ended => {
                let ended = |_: &Asked| Some("the session ended before it confirmed it stopped".to_owned());
                settle(&session, &mut open, Some(&ended));
                return Ok(());
            }
            Line::Reply(Reply::Refused { tag, error }) => {
                eprintln!("swarmtop tee: the guard's interrupt was refused: {error}");
                let why = format!("the tee refused to interrupt: {}", sanitize_line(&error));
                settle(&session, &mut open, Some(&|a: &Asked| (a.tag == tag).then(|| why.clone())));
            }
            Line::Reply(Reply::Answer { tag, msg }) => {
                let refusal = control::for_format(session.pipeline.format()).and_then(|c| (c.refusal)(&msg));
                if let Some(why) = refusal {
                    eprintln!("swarmtop tee: the agent refused the guard's interrupt: {why}");
                    let why = format!("the agent refused the interrupt: {}", sanitize_line(&why));
                    settle(&session, &mut open, Some(&|a: &Asked| (a.tag == tag).then(|| why.clone())));
                }
            }
            Line::Record | Line::Live | Line::Reply(Reply::Acted { .. }) => {}
        }
    }
}

/// The outcome of an interrupt nothing confirmed in [`CONFIRM_WITHIN`], as `swarmtop interrupt`
/// says it of a server's abort.
const UNCONFIRMED: &str = "no confirmation in time";

/// What failed an asked interrupt whose turn has not ended, if anything did.
type Failed<'a> = dyn Fn(&Asked) -> Option<String> + 'a;

/// Keeps each asked interrupt whose end is known: its turn ended (`interrupted`, or how it ended
/// before it could be), else what `failed` says of it (a refusal, the deadline, the session's end).
fn settle(session: &TeeSession, open: &mut Vec<Asked>, failed: Option<&Failed<'_>>) {
    for act in settled(&session.pipeline.model, open, failed) {
        if let Err(e) = record::keep(&act) {
            eprintln!("swarmtop tee: the guard's act was not kept in the run store: {e}");
        }
    }
}

/// The asked interrupts whose end is known, taken out of `open` with their outcome.
fn settled(model: &Model, open: &mut Vec<Asked>, failed: Option<&Failed<'_>>) -> Vec<ActRow> {
    let mut done = Vec::new();
    open.retain_mut(|a| {
        let t = model.thread(a.thread);
        let ended = t.turns.iter().rev().find(|u| *u.id == *a.turn).map(|u| u.status);
        let outcome = match ended {
            Some(TurnStatus::Interrupted) => Some("interrupted".to_owned()),
            Some(TurnStatus::Completed) => Some("completed before it could be interrupted".to_owned()),
            Some(TurnStatus::Failed) => Some("failed before it could be interrupted".to_owned()),
            Some(TurnStatus::InProgress) | None => failed.and_then(|f| f(a)),
        };
        let Some(outcome) = outcome else { return true };
        a.act.outcome = outcome;
        done.push(a.act.clone());
        false
    });
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(method: &str, params: &serde_json::Value) -> String {
        json!({"method": method, "params": params, "emittedAtMs": 1000}).to_string()
    }

    fn asked(p: &crate::pipeline::Pipeline, tag: u64, thread: &str, deadline: Instant) -> Asked {
        let act = record::act("interrupt", "guard", "tee", Some("root"), thread);
        Asked { tag, thread: p.find(thread).expect("thread"), turn: format!("{thread}-t"), act, deadline }
    }

    /// Issue 23: a guard's interrupt is kept once its end is known, and only then: the turn ended
    /// (interrupted, or otherwise before it could be), refused, or unconfirmed past its deadline.
    #[test]
    fn an_asked_interrupt_is_kept_once_its_end_is_known() {
        let mut p = crate::pipeline::Pipeline::default();
        let started = |id: &str| {
            [
                note("thread/started", &json!({"thread": {"id": id, "parentThreadId": null}})),
                note(
                    "turn/started",
                    &json!({"threadId": id, "turn": {"id": format!("{id}-t"), "status": "inProgress"}}),
                ),
            ]
        };
        for l in ["a", "b", "c", "d"].into_iter().flat_map(started) {
            p.push(l.as_bytes());
        }
        let now = Instant::now();
        let later = now + Duration::from_secs(30);
        let mut open =
            vec![asked(&p, 1, "a", later), asked(&p, 2, "b", later), asked(&p, 3, "c", later), asked(&p, 4, "d", now)];
        assert!(settled(&p.model, &mut open, None).is_empty(), "every turn still runs");
        let ended = |id: &str, status: &str| {
            note("turn/completed", &json!({"threadId": id, "turn": {"id": format!("{id}-t"), "status": status}}))
        };
        p.push(ended("a", "interrupted").as_bytes());
        p.push(ended("b", "completed").as_bytes());
        let kept = settled(&p.model, &mut open, None);
        let said = |kept: &[ActRow]| kept.iter().map(|a| (a.target.clone(), a.outcome.clone())).collect::<Vec<_>>();
        assert_eq!(
            said(&kept),
            [("a".into(), "interrupted".into()), ("b".into(), "completed before it could be interrupted".into())]
        );
        assert!(kept[0].stopped() && !kept[1].stopped());
        let refused = |a: &Asked| (a.tag == 3).then(|| "the tee refused to interrupt: gone".to_owned());
        assert_eq!(
            said(&settled(&p.model, &mut open, Some(&refused))),
            [("c".into(), "the tee refused to interrupt: gone".into())]
        );
        let past = |a: &Asked| (a.deadline <= Instant::now()).then(|| UNCONFIRMED.to_owned());
        assert_eq!(said(&settled(&p.model, &mut open, Some(&past))), [("d".into(), UNCONFIRMED.into())]);
        assert!(open.is_empty(), "each kept once");
    }
}
