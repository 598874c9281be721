//! The machine view's rows: every session followed, judged by the census as `ps` judges it (a
//! process that exits is seen within a tick), with its process's CPU and memory since the last
//! census; and the servers beside the stores streamed as they are found.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::SystemTime;

use super::super::liveness::{Subject, Verdict};
use super::super::{Census, registered_project};
use super::{Machine, Session};
use crate::source::agents::modified;
use crate::source::recording::ms_of;
use crate::source::seen::{Seen, Snapshot, State};
use crate::wire::{Clean, sanitize_line};

/// What is said of a session no verdict was given for.
const ENDED: Verdict = Verdict { state: State::Ended, pid: None };

impl Machine {
    /// Every session as the screen lists it, judged by `census`.
    pub(super) fn sessions_now(&mut self, census: &Census) -> Snapshot {
        self.stream_servers(census);
        // A session a tee carries is listed as that tee's row; tees' own rows are judged by their tee.
        let listed: Vec<usize> = (0..self.sessions.len())
            .filter(|&i| self.sessions[i].tee.is_none() || self.sessions[i].files.is_empty())
            .collect();
        let on_disk: Vec<usize> = listed.iter().copied().filter(|&i| self.sessions[i].tee.is_none()).collect();
        let files: Vec<(Vec<PathBuf>, Option<PathBuf>, SystemTime)> =
            on_disk.iter().map(|&i| self.judged_by(&self.sessions[i])).collect();
        let subjects: Vec<Subject<'_>> = on_disk
            .iter()
            .zip(&files)
            .map(|(&i, (canonical, store, modified))| {
                let s = &self.sessions[i];
                Subject {
                    agent: s.agent.name,
                    id: &s.id,
                    project: s.project.as_deref(),
                    files: canonical,
                    store: store.as_deref(),
                    modified: *modified,
                }
            })
            .collect();
        let verdicts = census.judge(&subjects, SystemTime::now());
        let mut judged: HashMap<usize, (Verdict, SystemTime)> =
            on_disk.iter().copied().zip(verdicts.into_iter().zip(files.iter().map(|f| f.2))).collect();
        let mut seen = Vec::with_capacity(listed.len());
        for i in listed {
            let (state, pid, last_activity_ms) = if let Some(t) = self.sessions[i].tee.map(|t| &self.tees[t]) {
                (if t.ended { State::Ended } else { State::Live }, t.pid, t.last_ms)
            } else {
                let (verdict, modified) = judged.remove(&i).unwrap_or((ENDED, SystemTime::UNIX_EPOCH));
                let last = Some(modified).filter(|&m| m > SystemTime::UNIX_EPOCH).and_then(ms_of);
                (verdict.state, verdict.pid, last)
            };
            let usage = pid.and_then(|p| self.sampler.sample(&self.opts.proc, &census.walk, p, census.at));
            self.registered(i, pid);
            let s = &self.sessions[i];
            seen.push(Seen {
                tool: s.agent.name,
                id: s.id.clone(),
                project: s.project.as_deref().map(sanitize_line),
                source: Clean::path(&s.source),
                state,
                pid,
                usage,
                last_activity_ms,
            });
        }
        let mut trouble = self.trouble.clone();
        trouble.add(&self.read_trouble);
        Snapshot {
            sessions: seen,
            looked_in: self.looked_in.clone(),
            tee_dir: self.opts.tee_dir.clone(),
            home: self.opts.env.home(),
            trouble,
        }
    }

    /// What a session is judged by: its files (canonical), the store it is within, when it last
    /// changed.
    fn judged_by(&self, s: &Session) -> (Vec<PathBuf>, Option<PathBuf>, SystemTime) {
        if s.within.is_some() {
            let store = s.files.first().map(|&f| self.files[f].canonical.clone());
            return (Vec::new(), store, s.modified);
        }
        let canonical = s.files.iter().map(|&f| self.files[f].canonical.clone()).collect();
        let newest = s.files.iter().map(|&f| modified(&self.files[f].path)).max();
        (canonical, None, newest.unwrap_or(SystemTime::UNIX_EPOCH))
    }

    /// A session named by a guess takes the cwd its running process registered, when it did.
    fn registered(&mut self, i: usize, pid: Option<u32>) {
        let s = &self.sessions[i];
        let Some(pid) = pid.filter(|_| s.project_guessed) else { return };
        if let Some(cwd) = registered_project(&self.opts.env, s.agent, pid) {
            let s = &mut self.sessions[i];
            s.project = Some(cwd);
            s.project_guessed = false;
        }
    }

    /// Streams what each server beside a followed store says and the store never holds (text as
    /// it streams, retry statuses): its rows and figures come from the store, so a session on both
    /// is one row, counted once.
    fn stream_servers(&mut self, census: &Census) {
        for (agent, server) in census.servers() {
            let Some(store) = &agent.store else { continue };
            if !self.servers.insert(server.authority.clone()) {
                continue;
            }
            if (store.stream)(&server, self.opts.proc.clone(), self.server_tx.clone()).is_err() {
                self.servers.remove(&server.authority);
            }
        }
    }
}
