//! The guards of an agent server's sessions (`swarmtop guard --server URL --max-depth N …`): the
//! server's event stream read into a model as the monitor reads it, and each running session past
//! a limit aborted through the server's own API (`source::agents::control::ServerApi`), once per
//! session, the act logged and kept in the run store. The session itself (a root) is the user's and
//! is never stopped: the limits are on sub-agents, as the tee's guards are.

use std::collections::HashSet;
use std::path::Path;

use tokio::sync::mpsc;

use super::limits::{Limits, breaches};
use super::server::{self, Server};
use super::{log, record, target};
use crate::model::TurnStatus;
use crate::pipeline::{Config, Pipeline};
use crate::router::Event;
use crate::source::agents::AGENTS;
use crate::source::files::{self, MAX_LINE, Record};
use crate::source::live::{self, Event as LiveEvent};
use crate::source::{inbound, recording};
use crate::wire::{Origin, sanitize_line};

/// Watches the server at `url` until its stream ends, aborting the sessions that pass `limits`;
/// `said` is told each abort and how it went.
pub fn guard(url: &str, config: &Config, limits: &Limits, said: &mut dyn FnMut(String)) -> Result<(), String> {
    let server = server::apis()
        .find_map(|api| Server::new(url, api).ok())
        .ok_or_else(|| format!("not an agent server's address (http://HOST:PORT): {}", sanitize_line(url)))?;
    let (tx, mut rx) = mpsc::channel(live::CHANNEL_EVENTS);
    let address = format!("http://{}", server.authority);
    let input = AGENTS
        .iter()
        .filter_map(|a| a.live)
        .find_map(|open| open(Path::new(&address), true, &tx))
        .ok_or_else(|| format!("no agent serves its sessions at {address}"))?
        .map_err(|e| e.to_string())?;
    let header = recording::header_line(input.source, None, recording::unix_ms());
    inbound::spawn_reader(input.reader, header, None, tx).map_err(|e| format!("reading {address}: {e}"))?;
    let mut pipeline = Pipeline::new(config.clone());
    let mut origin = Origin::NONE;
    // Each session is asked to stop once: a session aborted is not busy again unless prompted anew.
    let mut asked: HashSet<String> = HashSet::new();
    while let Some(event) = rx.blocking_recv() {
        match event {
            LiveEvent::Records(records) => {
                let nothing = &mut |_: &Event<'_, '_>| {};
                let _ = files::read_records(records.as_bytes(), MAX_LINE, |r| pipeline.feed(r, &origin, nothing));
            }
            LiveEvent::Oversized { len, head } => {
                pipeline.feed(Record::TooLong { len, head: &head }, &Origin::NONE, &mut |_: &Event<'_, '_>| {});
            }
            LiveEvent::Origin(o) => origin = o,
            LiveEvent::Reset(_) => pipeline = Pipeline::new(config.clone()),
            LiveEvent::Ended(_) => return Ok(()),
            _ => continue,
        }
        stop_breaches(&server, &pipeline, limits, &mut asked, said);
    }
    Ok(())
}

/// Aborts each running session past a limit that was not asked before.
fn stop_breaches(
    server: &Server,
    pipeline: &Pipeline,
    limits: &Limits,
    asked: &mut HashSet<String>,
    said: &mut dyn FnMut(String),
) {
    let model = &pipeline.model;
    for (idx, breach) in breaches(model, limits) {
        let t = model.thread(idx);
        let running = t.turns.iter().any(|u| u.status == TurnStatus::InProgress);
        if t.parent.is_none() || !running || !asked.insert(t.id.to_string()) {
            continue;
        }
        let aborted = server.abort(&t.id);
        let outcome = aborted.as_ref().map_or_else(|e| sanitize_line(e).to_string(), |()| "aborted".to_owned());
        let mut act = serde_json::Map::new();
        for (k, v) in [("kind", "interrupt"), ("by", "guard"), ("via", server.api.via)] {
            act.insert(k.into(), v.into());
        }
        act.insert("server".into(), server.authority.clone().into());
        act.insert("target".into(), t.id.to_string().into());
        act.insert("reason".into(), breach.to_string().into());
        act.insert("outcome".into(), outcome.clone().into());
        log::append(act);
        let mut kept = record::act("interrupt", "guard", server.api.via, Some(&target::root_of(model, idx)), &t.id);
        kept.detail = format!("server {}: {breach}", server.authority);
        kept.outcome.clone_from(&outcome);
        if let Err(e) = record::keep(&kept) {
            said(format!("(the act was not kept in the run store: {e})"));
        }
        said(format!(
            "stopped by guard: {breach}: {} [{}] on {}: {outcome}",
            sanitize_line(&t.name()),
            sanitize_line(&t.id),
            server.authority
        ));
    }
}
