//! The machine view's rows: every session followed, judged by the census as `ps` judges it (a
//! process that exits is seen within a tick), with its process's CPU and memory since the last
//! census; and the servers beside the stores streamed as they are found.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::liveness::{Subject, Verdict};
use super::super::{Census, registered_project};
use super::Machine;
use crate::source::recording::ms_of;
use crate::source::seen::{Seen, State};
use crate::wire::{Clean, sanitize_line};

/// What is said of a session no verdict was given for.
const ENDED: Verdict = Verdict { state: State::Ended, pid: None };

impl Machine {
    /// Every session's row as the screen lists it, judged by `census`: only the rows whose
    /// figures changed are built again (and then `rows_changed` is set).
    pub(super) fn sessions_now(&mut self, census: &Census) {
        self.stream_servers(census);
        // A session a tee carries is listed as that tee's row; tees' own rows are judged by their tee.
        let on_disk: Vec<usize> = (0..self.sessions.len()).filter(|&i| self.sessions[i].tee.is_none()).collect();
        let verdicts = {
            let subjects: Vec<Subject<'_>> = on_disk.iter().map(|&i| self.subject(i)).collect();
            census.judge(&subjects, SystemTime::now())
        };
        let mut judged: Vec<Option<Verdict>> = vec![None; self.sessions.len()];
        for (&i, verdict) in on_disk.iter().zip(verdicts) {
            judged[i] = Some(verdict);
        }
        self.rows.resize(self.sessions.len(), None);
        self.pace.live = false;
        for (i, verdict) in judged.into_iter().enumerate() {
            let s = &self.sessions[i];
            if s.tee.is_some() && !s.files.is_empty() {
                self.rows_changed |= self.rows[i].take().is_some();
                continue;
            }
            let (state, pid, last_activity_ms) = if let Some(t) = s.tee.map(|t| &self.tees[t]) {
                (if t.ended { State::Ended } else { State::Live }, t.pid, t.last_ms)
            } else {
                let verdict = verdict.unwrap_or(ENDED);
                let modified = self.newest(i);
                let last = Some(modified).filter(|&m| m > SystemTime::UNIX_EPOCH).and_then(ms_of);
                (verdict.state, verdict.pid, last)
            };
            self.pace.live |= state == State::Live;
            let usage = pid.and_then(|p| self.sampler.sample(&self.opts.proc, &census.walk, p, census.at));
            self.registered(i, pid);
            let s = &self.sessions[i];
            let same = self.rows[i].as_ref().is_some_and(|(seen, project)| {
                (seen.state, seen.pid, seen.usage, seen.last_activity_ms) == (state, pid, usage, last_activity_ms)
                    && *project == s.project
            });
            if same {
                continue;
            }
            let seen = Seen {
                tool: s.agent.name,
                id: s.id.clone(),
                project: s.project.as_deref().map(sanitize_line),
                source: Clean::path(&s.source),
                state,
                pid,
                usage,
                last_activity_ms,
            };
            self.rows[i] = Some((seen, s.project.clone()));
            self.rows_changed = true;
        }
    }

    /// Session `i` as liveness judges it (not one a tee carries).
    fn subject(&self, i: usize) -> Subject<'_> {
        let s = &self.sessions[i];
        let (files, store): (&[PathBuf], Option<&Path>) = match s.within {
            Some(_) => (&[], s.files.first().map(|&f| self.files[f].canonical.as_path())),
            None => (&s.canonical, None),
        };
        Subject {
            agent: s.agent.name,
            id: &s.id,
            project: s.project.as_deref(),
            files,
            store,
            modified: self.newest(i),
        }
    }

    /// When session `i` last changed: its newest file's modification time as last seen (a store's
    /// rows: as discovery saw them).
    fn newest(&self, i: usize) -> SystemTime {
        let s = &self.sessions[i];
        if s.within.is_some() {
            return s.modified;
        }
        s.files.iter().map(|&f| self.files[f].written).max().unwrap_or(SystemTime::UNIX_EPOCH)
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
