//! Whether a session runs, known from `/proc` rather than guessed from file age.
//!
//! The rules, most specific first (the first that names a process decides):
//! 1. A process says which session it runs: a file the agent keeps per process naming both
//!    (Claude Code's `sessions/<pid>.json`), or the session id on its command line. See each
//!    agent's runner in the registry.
//! 2. A process holds one of the session's files open (Codex keeps its rollout open from the
//!    first turn until it exits, `codex exec` and the app-server alike), unless it is a host; for
//!    a session within a store, a process holding the store serves it (its server lists it busy,
//!    or it runs in the session's directory and started before the session last changed).
//! 3. An agent's process runs in the session's project: it runs the newest session there that
//!    was written since it started (each process takes one session).
//! 4. A host holds a file of the session and works on it (a turn nobody watches).
//! 5. Nothing in `/proc` names the session: file age decides between idle and ended.
//!
//! The same judgement serves `ps` and the machine view, so both say the same of a session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::source::agents::{Claim, Running, Served};
use crate::source::proc::{self, Scan};
use crate::source::seen::State;

/// A session nobody is seen running counts as possibly still running (`idle`) this long after
/// its files last changed; older ones have `ended`.
pub const IDLE_AGE: Duration = Duration::from_secs(5 * 60);

/// One look at the machine's processes.
#[derive(Debug, Default)]
pub struct Look {
    pub running: Vec<Running>,
    /// The open-file scan of the wanted session files (with what its bounds skipped), hosts left
    /// out of its holders.
    pub scan: Scan,
    /// Files held by hosts alone that they work on: the host's pid.
    pub hosted: HashMap<PathBuf, u32>,
}

/// A session to judge.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub agent: &'a str,
    pub id: &'a str,
    /// Its working directory, as its files say.
    pub project: Option<&'a str>,
    /// Its files, canonical (as `/proc/<pid>/fd` shows them); none for a session within a store
    /// (every process of its agent holds the store open: that says nothing of one session).
    pub files: &'a [PathBuf],
    /// The store it is within (canonical).
    pub store: Option<&'a Path>,
    /// Newest modification time among its files (of its rows, within a store).
    pub modified: SystemTime,
}

/// What the machine says of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub state: State,
    /// The process running it, when one is known.
    pub pid: Option<u32>,
}

fn unix_ms(t: SystemTime) -> i64 {
    crate::source::recording::ms_of(t).unwrap_or(0)
}

impl Look {
    /// For each file some process holds open: the lowest such pid.
    pub fn held(&self) -> &HashMap<PathBuf, u32> {
        &self.scan.holders
    }

    /// The verdict on each of `subjects`, in their order; `served`: the processes holding the
    /// stores of those within one.
    pub fn judge(&self, subjects: &[Subject<'_>], served: &Served, now: SystemTime) -> Vec<Verdict> {
        let mut pids = self.named(subjects);
        for (i, s) in subjects.iter().enumerate() {
            if pids[i].is_none() {
                pids[i] = self.holding(s, served);
            }
        }
        self.in_projects(subjects, &mut pids);
        // 4. A host at work on a file of the session.
        for (i, s) in subjects.iter().enumerate() {
            if pids[i].is_none() {
                pids[i] = s.files.iter().filter_map(|f| self.hosted.get(f).copied()).min();
            }
        }
        // 5. A process that ran it is known to be gone; else file age.
        let gone: HashSet<(&str, &str)> = self
            .running
            .iter()
            .filter_map(|r| match &r.claim {
                Claim::Gone(id) => Some((r.agent, id.as_str())),
                _ => None,
            })
            .collect();
        subjects
            .iter()
            .zip(pids)
            .map(|(s, pid)| {
                let state = match pid {
                    Some(_) => State::Live,
                    None if gone.contains(&(s.agent, s.id)) => State::Ended,
                    None if now.duration_since(s.modified).unwrap_or_default() <= IDLE_AGE => State::Idle,
                    None => State::Ended,
                };
                Verdict { state, pid }
            })
            .collect()
    }

    /// Rule 1: processes that name their session (the lowest pid when several do).
    fn named(&self, subjects: &[Subject<'_>]) -> Vec<Option<u32>> {
        let mut pids: Vec<Option<u32>> = vec![None; subjects.len()];
        for r in &self.running {
            let Claim::Session(id) = &r.claim else { continue };
            for (i, s) in subjects.iter().enumerate() {
                if s.agent == r.agent && s.id == id {
                    pids[i] = Some(pids[i].map_or(r.pid, |p| p.min(r.pid)));
                }
            }
        }
        pids
    }

    /// Rule 2: a process holding a file of the session open; within a store, the store's process
    /// that serves it: one whose server lists it busy, else one running in its directory that
    /// started before it last changed (the lowest pid of those).
    fn holding(&self, s: &Subject<'_>, served: &Served) -> Option<u32> {
        let Some(store) = s.store else {
            return s.files.iter().filter_map(|f| self.scan.holders.get(f).copied()).min();
        };
        let procs = served.by_store.get(store)?;
        let by_server = procs.iter().filter(|p| p.busy.contains(s.id)).map(|p| p.pid).min();
        let project = s.project.map(|p| proc::canonical(Path::new(p)));
        let by_place = || {
            procs
                .iter()
                .filter(|p| project.is_some() && p.cwd == project && p.started_ms <= unix_ms(s.modified))
                .map(|p| p.pid)
                .min()
        };
        by_server.or_else(by_place)
    }

    /// Rule 3: processes in the session's project, each taking the newest session there that is
    /// not known to run already.
    fn in_projects(&self, subjects: &[Subject<'_>], pids: &mut [Option<u32>]) {
        let mut taken: HashSet<u32> = pids.iter().flatten().copied().collect();
        let mut in_projects: Vec<&Running> =
            self.running.iter().filter(|r| matches!(r.claim, Claim::Project(_))).collect();
        in_projects.sort_by_key(|r| r.pid);
        let mut canonical: HashMap<usize, Option<PathBuf>> = HashMap::new();
        for r in in_projects {
            let Claim::Project(cwd) = &r.claim else { continue };
            if !taken.insert(r.pid) {
                continue;
            }
            let newest = subjects
                .iter()
                .enumerate()
                .filter(|(i, s)| pids[*i].is_none() && s.agent == r.agent)
                .filter(|(_, s)| r.started.is_none_or(|t| s.modified >= t))
                .filter(|(i, s)| {
                    let project =
                        canonical.entry(*i).or_insert_with(|| s.project.map(|p| proc::canonical(Path::new(p))));
                    project.as_deref() == Some(cwd.as_path())
                })
                .max_by(|(_, a), (_, b)| a.modified.cmp(&b.modified).then_with(|| b.id.cmp(a.id)))
                .map(|(i, _)| i);
            if let Some(i) = newest {
                pids[i] = Some(r.pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject<'a>(agent: &'a str, id: &'a str, project: &'a str, files: &'a [PathBuf], ago: u64) -> Subject<'a> {
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 - ago);
        Subject { agent, id, project: Some(project), files, store: None, modified }
    }

    fn running(pid: u32, claim: Claim) -> Running {
        Running { agent: "claude", pid, claim, started: None }
    }

    #[test]
    fn the_most_specific_rule_decides_and_age_is_the_fallback() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let held_file = [PathBuf::from("/h/held.jsonl")];
        let none: [PathBuf; 0] = [];
        let subjects = [
            subject("claude", "named", "/p/a", &none, 3600),
            subject("codex", "held", "/p/a", &held_file, 3600),
            subject("claude", "older-in-b", "/p/b", &none, 120),
            subject("claude", "newest-in-b", "/p/b", &none, 60),
            subject("claude", "quiet", "/p/c", &none, 60),
            subject("claude", "old", "/p/c", &none, 3600),
        ];
        let mut look = Look {
            running: vec![
                running(40, Claim::Session("named".into())),
                // The process that names its session does not also take one by its folder.
                running(40, Claim::Project("/p/b".into())),
                running(50, Claim::Project("/p/b".into())),
            ],
            scan: Scan::default(),
            hosted: HashMap::new(),
        };
        look.scan.holders.insert(held_file[0].clone(), 7);
        let verdicts = look.judge(&subjects, &Served::default(), now);
        let got: Vec<(State, Option<u32>)> = verdicts.iter().map(|v| (v.state, v.pid)).collect();
        assert_eq!(
            got,
            [
                (State::Live, Some(40)),
                (State::Live, Some(7)),
                (State::Idle, None),
                (State::Live, Some(50)),
                (State::Idle, None),
                (State::Ended, None),
            ]
        );
    }

    #[test]
    fn a_process_does_not_run_a_session_last_written_before_it_started() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let none: [PathBuf; 0] = [];
        let subjects = [subject("claude", "before", "/p/a", &none, 600)];
        let started = Some(now - Duration::from_secs(60));
        let look = Look {
            running: vec![Running { agent: "claude", pid: 9, claim: Claim::Project("/p/a".into()), started }],
            scan: Scan::default(),
            hosted: HashMap::new(),
        };
        assert_eq!(look.judge(&subjects, &Served::default(), now)[0], Verdict { state: State::Ended, pid: None });
    }

    #[test]
    fn a_host_runs_only_what_it_works_on_and_a_client_in_the_project_comes_first() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let (idle, busy, watched) =
            ([PathBuf::from("/h/idle.jsonl")], [PathBuf::from("/h/busy.jsonl")], [PathBuf::from("/h/watched.jsonl")]);
        let subjects = [
            subject("codex", "quit", "/p/a", &idle, 60),
            subject("codex", "detached", "/p/a", &busy, 30),
            subject("codex", "in-tui", "/p/b", &watched, 10),
        ];
        // The daemon (pid 7) holds all three; the file scan left it out, and it works on one.
        let look = Look {
            running: vec![Running { agent: "codex", pid: 50, claim: Claim::Project("/p/b".into()), started: None }],
            scan: Scan::default(),
            hosted: [(busy[0].clone(), 7), (watched[0].clone(), 7)].into_iter().collect(),
        };
        let got: Vec<(State, Option<u32>)> =
            look.judge(&subjects, &Served::default(), now).iter().map(|v| (v.state, v.pid)).collect();
        assert_eq!(got, [(State::Idle, None), (State::Live, Some(7)), (State::Live, Some(50))]);
    }

    /// Within a store every process of the agent holds the store open: a session is served by the
    /// one whose server lists it busy, else by one running in its directory that started before it
    /// last changed.
    #[test]
    fn a_session_within_a_store_is_run_by_the_process_that_serves_it() {
        use crate::source::agents::StoreProcess;
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let store = PathBuf::from("/h/opencode.db");
        let none: [PathBuf; 0] = [];
        let within = |id: &'static str, project: &'static str| Subject {
            agent: "opencode",
            id,
            project: Some(project),
            files: &none,
            store: Some(store.as_path()),
            modified: now - Duration::from_secs(60),
        };
        let process = |pid: u32, cwd: &str, busy: &[&str]| StoreProcess {
            pid,
            cwd: Some(PathBuf::from(cwd)),
            started_ms: 0,
            servers: Vec::new(),
            busy: busy.iter().map(|b| (*b).to_owned()).collect(),
        };
        let mut served = Served::default();
        served.by_store.insert(store.clone(), vec![process(30, "/p/a", &[]), process(20, "/p/z", &["ses_busy"])]);
        let subjects = [within("ses_busy", "/p/q"), within("ses_here", "/p/a"), within("ses_quiet", "/p/q")];
        let verdicts = Look::default().judge(&subjects, &served, now);
        let got: Vec<(State, Option<u32>)> = verdicts.iter().map(|v| (v.state, v.pid)).collect();
        assert_eq!(got, [(State::Live, Some(20)), (State::Live, Some(30)), (State::Idle, None)]);
    }
}
