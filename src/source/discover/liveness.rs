//! Whether a session runs, known from `/proc` rather than guessed from file age.
//!
//! The rules, most specific first (the first that names a process decides):
//! 1. A process says which session it runs: a file the agent keeps per process naming both
//!    (Claude Code's `sessions/<pid>.json`), or the session id on its command line. See each
//!    agent's [`Runner`].
//! 2. A process holds one of the session's files open (Codex keeps its rollout open from the
//!    first turn until it exits, `codex exec` and the app-server alike).
//! 3. An agent's process runs in the session's project: it runs the newest session there that
//!    was written since it started (each process takes one session).
//! 4. Nothing in `/proc` names the session: file age decides between idle and ended.
//!
//! The same judgement serves `ps` and the machine view, so both say the same of a session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Candidate, Env, State, claude, codex};
use crate::source::proc::{self, Proc, Scan, Walk};

/// A session nobody is seen running counts as possibly still running (`idle`) this long after
/// its files last changed; older ones have `ended`.
pub const IDLE_AGE: Duration = Duration::from_secs(5 * 60);

/// What a running agent process says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// It runs this session (the root session's id).
    Session(String),
    /// It runs some session of the project in this folder (its working directory).
    Project(PathBuf),
}

/// One running process of an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub tool: &'static str,
    pub pid: u32,
    pub claim: Claim,
    /// When it started (a session last written before that is not its own).
    pub started: Option<SystemTime>,
}

/// How to find an agent's running processes, and the sessions they run.
pub struct Runner {
    pub tool: &'static str,
    /// Its processes that say what they run (agents whose open files say it all find none),
    /// among those of the tick's walk.
    pub find: fn(&Env, &Proc, &Walk) -> Vec<Running>,
    /// The sessions its running processes run (given what `find` found), outside any window.
    pub sessions: fn(&Env, &Walk, &[Running]) -> Vec<Candidate>,
    /// The folder whose files its processes hold open while they run a session (for a walk to want).
    pub held_below: fn(&Env) -> Option<PathBuf>,
}

/// The folders (canonical) whose held files say a session runs: what a walk wants besides the
/// files of the sessions known.
pub fn held_below(env: &Env) -> Vec<PathBuf> {
    RUNNERS.iter().filter_map(|r| (r.held_below)(env)).map(|d| proc::canonical(&d)).collect()
}

/// Every agent whose processes are looked for.
pub const RUNNERS: &[Runner] = &[claude::RUNNER, codex::RUNNER];

/// The sessions some process runs that `found` lacks: a session quiet for longer than the window
/// is listed all the same while it runs (an open Claude Code left waiting, a loaded app-server
/// thread). The walk must want [`held_below`].
pub fn running_outside(env: &Env, proc: &Proc, walk: &Walk, found: &[Candidate]) -> Vec<Candidate> {
    let known: HashSet<(&str, &str)> = found.iter().map(|c| (c.tool, c.id.as_str())).collect();
    let mut out: Vec<Candidate> = Vec::new();
    for runner in RUNNERS {
        let running = (runner.find)(env, proc, walk);
        for c in (runner.sessions)(env, walk, &running) {
            if !known.contains(&(c.tool, c.id.as_str())) && !out.iter().any(|o| o.tool == c.tool && o.id == c.id) {
                out.push(c);
            }
        }
    }
    out
}

/// One look at the machine's processes.
#[derive(Debug, Default)]
pub struct Look {
    pub running: Vec<Running>,
    /// The open-file scan of the wanted session files (with what its bounds skipped).
    pub scan: Scan,
}

/// The agents' processes and who holds which of the walk's wanted files open.
pub fn look(env: &Env, proc: &Proc, walk: &Walk) -> Look {
    let running = RUNNERS.iter().flat_map(|r| (r.find)(env, proc, walk)).collect();
    Look { running, scan: walk.scan() }
}

/// A session to judge.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub tool: &'a str,
    pub id: &'a str,
    /// Its working directory, as its files say.
    pub project: Option<&'a str>,
    /// Its files, canonical (as `/proc/<pid>/fd` shows them).
    pub files: &'a [PathBuf],
    /// Newest modification time among its files.
    pub modified: SystemTime,
}

/// What the machine says of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub state: State,
    /// The process running it, when one is known.
    pub pid: Option<u32>,
}

impl Look {
    /// For each file some process holds open: the lowest such pid.
    pub fn held(&self) -> &HashMap<PathBuf, u32> {
        &self.scan.holders
    }

    /// The verdict on each of `subjects`, in their order.
    pub fn judge(&self, subjects: &[Subject<'_>], now: SystemTime) -> Vec<Verdict> {
        let mut pids: Vec<Option<u32>> = vec![None; subjects.len()];
        // 1. Processes that name their session (the lowest pid when several do).
        for r in &self.running {
            let Claim::Session(id) = &r.claim else { continue };
            for (i, s) in subjects.iter().enumerate() {
                if s.tool == r.tool && s.id == id {
                    pids[i] = Some(pids[i].map_or(r.pid, |p| p.min(r.pid)));
                }
            }
        }
        // 2. Processes holding a file of the session open.
        for (i, s) in subjects.iter().enumerate() {
            if pids[i].is_none() {
                pids[i] = s.files.iter().filter_map(|f| self.scan.holders.get(f).copied()).min();
            }
        }
        // 3. Processes in the session's project, each taking the newest session there that is
        // not known to run already.
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
                .filter(|(i, s)| pids[*i].is_none() && s.tool == r.tool)
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
        // 4. File age.
        subjects
            .iter()
            .zip(pids)
            .map(|(s, pid)| {
                let state = match pid {
                    Some(_) => State::Live,
                    None if now.duration_since(s.modified).unwrap_or_default() <= IDLE_AGE => State::Idle,
                    None => State::Ended,
                };
                Verdict { state, pid }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject<'a>(tool: &'a str, id: &'a str, project: &'a str, files: &'a [PathBuf], ago: u64) -> Subject<'a> {
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 - ago);
        Subject { tool, id, project: Some(project), files, modified }
    }

    fn running(pid: u32, claim: Claim) -> Running {
        Running { tool: "claude", pid, claim, started: None }
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
        };
        look.scan.holders.insert(held_file[0].clone(), 7);
        let verdicts = look.judge(&subjects, now);
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
            running: vec![Running { tool: "claude", pid: 9, claim: Claim::Project("/p/a".into()), started }],
            scan: Scan::default(),
        };
        assert_eq!(look.judge(&subjects, now)[0], Verdict { state: State::Ended, pid: None });
    }
}
