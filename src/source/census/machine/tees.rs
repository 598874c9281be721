//! A running tee the machine view attaches to: what of its stream to forward (a resync's
//! history is skipped), and the threads and the agent its stream names, under which it is listed
//! as one session.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::source::agents::Agent;
use crate::source::live::Records;

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
    pub fn new(socket: PathBuf, pid: Option<u32>) -> Self {
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
    pub fn take(&mut self, records: &Records) -> Vec<u8> {
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

    /// The agent its stream speaks, once a line said.
    pub fn agent(&self) -> Option<&'static Agent> {
        self.agent
    }

    /// A new connection: its first record says whether the session is the same.
    pub fn connected(&mut self) {
        self.first = true;
    }

    /// The history comes again on the new connection: what was forwarded is skipped.
    pub fn reset(&mut self) {
        self.skip = self.forwarded;
    }

    /// A record over the bound takes its place in the stream's count, with nothing to forward.
    pub fn oversized(&mut self) {
        if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.forwarded += 1;
        }
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
