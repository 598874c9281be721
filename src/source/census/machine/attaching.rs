//! Attaching to the running tees: each found in the socket folder is attached once, its events
//! forwarded as they come, and it is listed as one session once its stream names a thread.

use std::time::SystemTime;

use tokio::sync::mpsc;

use super::tees::TeeFeed;
use super::{Gone, Machine, RunState, Session};
use crate::source::agents::{self, tee};
use crate::source::attach;
use crate::source::live::{CHANNEL_EVENTS, Event};
use crate::wire::Origin;

impl Machine {
    /// Attaches to every trusted tee not attached yet.
    pub(super) fn find_tees(&mut self) {
        for t in tee::running_in(&self.opts.tee_dir) {
            if self.tees.iter().any(|known| known.socket == t.socket && !known.ended) {
                continue;
            }
            let index = self.tees.len();
            self.tees.push(TeeFeed::new(t.socket.clone(), t.pid));
            let (one_tx, mut one_rx) = mpsc::channel(CHANNEL_EVENTS);
            let options = attach::Options { path: t.socket, reconnect: false, record: None, rediscover: None };
            tokio::spawn(attach::run(options, one_tx));
            let all = self.tee_tx.clone();
            tokio::spawn(async move {
                while let Some(event) = one_rx.recv().await {
                    if all.send((index, event)).await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    pub(super) async fn tee_event(&mut self, i: usize, event: Event) -> Result<(), Gone> {
        match event {
            Event::Connected { .. } => self.tees[i].connected(),
            Event::Reset(_) => self.tees[i].reset(),
            Event::Live => self.tees[i].live = true,
            Event::Ended(_) => {
                self.tees[i].ended = true;
                self.tees[i].live = false;
            }
            Event::Records(records) => {
                let out = self.tees[i].take(&records);
                if self.tee_session(i) {
                    // Its row's group is known before its threads arrive.
                    self.announce().await?;
                }
                if !out.is_empty() {
                    self.tees[i].last_ms = crate::source::recording::ms_of(SystemTime::now());
                    self.forward(Origin::NONE, out).await?;
                }
            }
            Event::Oversized { .. } => self.tees[i].oversized(),
            Event::Disconnected { .. }
            | Event::Origin(_)
            | Event::Sessions(_)
            | Event::Stopped { .. }
            | Event::Resumed(_)
            | Event::Followed(_)
            | Event::Notice(_) => {}
        }
        Ok(())
    }

    /// A tee is listed as one session, under the first root thread its stream names, as the
    /// agent it speaks; whether this call listed it.
    fn tee_session(&mut self, i: usize) -> bool {
        let t = &self.tees[i];
        if t.session.is_some() {
            return false;
        }
        let Some(id) = t.threads.iter().min().cloned() else { return false };
        let index = self.sessions.len();
        self.sessions.push(Session {
            agent: t.agent().unwrap_or(&agents::tee::AGENT),
            id,
            project: t.pid.and_then(|p| self.opts.proc.cwd(p)).map(|p| p.display().to_string()),
            project_guessed: false,
            source: t.socket.clone(),
            files: Vec::new(),
            canonical: Vec::new(),
            tee: Some(i),
            within: None,
            modified: SystemTime::UNIX_EPOCH,
            run: RunState::default(),
        });
        self.tees[i].session = Some(index);
        true
    }
}
