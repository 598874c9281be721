//! The running tees the machine view attaches to: their streams forwarded as they come, each
//! listed as one session, under the first root thread its stream names and the agent it speaks.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::SystemTime;

use tokio::sync::mpsc;

use super::{Gone, Machine, Session};
use crate::source::agents::{self, Agent, tee};
use crate::source::attach;
use crate::source::live::{CHANNEL_EVENTS, Event, Records};
use crate::source::origin::Origin;

/// A tee attached to.
pub(super) struct TeeFeed {
    pub socket: PathBuf,
    pub pid: Option<u32>,
    pub started_ms: Option<i64>,
    pub threads: HashSet<String>,
    /// The agent its stream speaks, once a line said.
    agent: Option<&'static Agent>,
    /// Records of this tee forwarded, and to skip after a resync (its history comes again).
    forwarded: u64,
    skip: u64,
    first: bool,
    header: Option<Vec<u8>>,
    pub live: bool,
    pub ended: bool,
    pub session: Option<usize>,
    /// Wall time of the last record it sent (unix ms).
    pub last_ms: Option<i64>,
}

impl TeeFeed {
    fn new(socket: PathBuf, pid: Option<u32>) -> Self {
        Self {
            socket,
            pid,
            started_ms: None,
            threads: HashSet::new(),
            agent: None,
            forwarded: 0,
            skip: 0,
            first: true,
            header: None,
            live: false,
            ended: false,
            session: None,
            last_ms: None,
        }
    }

    /// The records of a batch to forward: the first of a connection starts a new session when it
    /// is another header; what a resync sends again is skipped; the threads and the agent its
    /// lines name are noted.
    fn take(&mut self, records: &Records) -> Vec<u8> {
        let mut out = Vec::new();
        for line in records.iter() {
            if std::mem::take(&mut self.first) && self.header.as_deref() != Some(line) {
                // Another session on this socket: a fresh start.
                self.header = Some(line.to_vec());
                self.started_ms = header_started(line);
                self.forwarded = 0;
                self.skip = 0;
            }
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.forwarded += 1;
            let (agent, thread) = super::super::speaks(line);
            self.agent = self.agent.or(agent);
            if let Some(id) = thread.filter(|id| !self.threads.contains(id)) {
                self.threads.insert(id);
            }
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out
    }
}

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
            Event::Connected { .. } => self.tees[i].first = true,
            // The history comes again on the new connection: what was forwarded is skipped.
            Event::Reset(_) => self.tees[i].skip = self.tees[i].forwarded,
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
            // A record over the bound takes its place in the stream's count, but there is nothing to forward.
            Event::Oversized { .. } => {
                let t = &mut self.tees[i];
                if t.skip > 0 {
                    t.skip -= 1;
                } else {
                    t.forwarded += 1;
                }
            }
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
            agent: t.agent.unwrap_or(&agents::tee::AGENT),
            id,
            project: t.pid.and_then(|p| self.opts.proc.cwd(p)).map(|p| p.display().to_string()),
            project_guessed: false,
            source: t.socket.clone(),
            files: Vec::new(),
            tee: Some(i),
            within: None,
            modified: SystemTime::UNIX_EPOCH,
            state: None,
            stopped: false,
        });
        self.tees[i].session = Some(index);
        true
    }
}

/// `startedMs` of a recording header line.
fn header_started(line: &[u8]) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Header {
        #[serde(rename = "startedMs")]
        started_ms: Option<i64>,
    }
    serde_json::from_slice::<Header>(line).ok()?.started_ms
}
