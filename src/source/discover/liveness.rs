//! Whether a session runs, known from `/proc` rather than guessed from file age.
//!
//! The rules, most specific first (the first that names a process decides):
//! 1. A process says which session it runs: a file the agent keeps per process naming both
//!    (Claude Code's `sessions/<pid>.json`), or the session id on its command line. See each
//!    agent's [`Runner`].
//! 2. A process holds one of the session's files open (Codex keeps its rollout open from the
//!    first turn until it exits, `codex exec` and the app-server alike), unless it is a [`Host`].
//! 3. An agent's process runs in the session's project: it runs the newest session there that
//!    was written since it started (each process takes one session).
//! 4. A host holds a file of the session and works on it (a turn nobody watches).
//! 5. Nothing in `/proc` names the session: file age decides between idle and ended.
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
    /// It ran this session and is gone without the leave it takes on a clean exit (Claude Code's
    /// `sessions/<pid>.json` left behind by a SIGKILL): unless another process runs the session
    /// now, it has ended, however recently its files changed. `pid` is the dead one.
    Gone(String),
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
    pub sessions: fn(&Env, &Proc, &Walk, &[Running]) -> Vec<Candidate>,
    /// The folder whose files its processes hold open while they run a session (for a walk to want).
    pub held_below: fn(&Env) -> Option<PathBuf>,
    /// Its processes that keep sessions loaded for clients that come and go.
    pub host: Option<Host>,
}

/// A process that keeps sessions loaded for clients that come and go (Codex's app-server
/// daemon): that it holds a session's files says the session is loaded, not that it runs.
pub struct Host {
    /// Whether a command line is such a host.
    pub is: fn(&[String]) -> bool,
    /// Whether a file it holds shows work under way that no client needs to watch.
    pub at_work: fn(&Path) -> bool,
}

/// The hosts among the processes holding the walk's wanted files, with the test of their work.
fn hosts(proc: &Proc, walk: &Walk) -> HashMap<u32, &'static Host> {
    let mut out = HashMap::new();
    let mut looked = HashSet::new();
    for &pid in walk.holders.values().flatten() {
        if !looked.insert(pid) {
            continue;
        }
        let Some(args) = proc.command_line(pid) else { continue };
        if let Some(host) = RUNNERS.iter().filter_map(|r| r.host.as_ref()).find(|h| (h.is)(&args)) {
            out.insert(pid, host);
        }
    }
    out
}

/// The walk's held files that a holder runs: one that is no host, or a host at work on it.
pub fn run_files<'w>(proc: &Proc, walk: &'w Walk) -> HashSet<&'w Path> {
    let hosts = hosts(proc, walk);
    walk.holders
        .iter()
        .filter(|(path, pids)| pids.iter().any(|p| hosts.get(p).is_none_or(|h| (h.at_work)(path))))
        .map(|(path, _)| path.as_path())
        .collect()
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
        for c in (runner.sessions)(env, proc, walk, &running) {
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
    /// The open-file scan of the wanted session files (with what its bounds skipped), hosts left
    /// out of its holders.
    pub scan: Scan,
    /// Files held by hosts alone that they work on: the host's pid.
    pub hosted: HashMap<PathBuf, u32>,
}

/// The agents' processes and who holds which of the walk's wanted files open.
pub fn look(env: &Env, proc: &Proc, walk: &Walk) -> Look {
    let running = RUNNERS.iter().flat_map(|r| (r.find)(env, proc, walk)).collect();
    let mut scan = walk.scan();
    let mut hosted = HashMap::new();
    let hosts = hosts(proc, walk);
    if !hosts.is_empty() {
        for (path, pids) in &walk.holders {
            if let Some(&pid) = pids.iter().find(|p| !hosts.contains_key(p)) {
                scan.holders.insert(path.clone(), pid);
            } else {
                scan.holders.remove(path);
                if let Some(&pid) = pids.iter().find(|p| (hosts[p].at_work)(path)) {
                    hosted.insert(path.clone(), pid);
                }
            }
        }
    }
    Look { running, scan, hosted }
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
                Claim::Gone(id) => Some((r.tool, id.as_str())),
                _ => None,
            })
            .collect();
        subjects
            .iter()
            .zip(pids)
            .map(|(s, pid)| {
                let state = match pid {
                    Some(_) => State::Live,
                    None if gone.contains(&(s.tool, s.id)) => State::Ended,
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
            hosted: HashMap::new(),
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
            hosted: HashMap::new(),
        };
        assert_eq!(look.judge(&subjects, now)[0], Verdict { state: State::Ended, pid: None });
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
            running: vec![Running { tool: "codex", pid: 50, claim: Claim::Project("/p/b".into()), started: None }],
            scan: Scan::default(),
            hosted: [(busy[0].clone(), 7), (watched[0].clone(), 7)].into_iter().collect(),
        };
        let got: Vec<(State, Option<u32>)> = look.judge(&subjects, now).iter().map(|v| (v.state, v.pid)).collect();
        assert_eq!(got, [(State::Idle, None), (State::Live, Some(7)), (State::Live, Some(50))]);
    }
}
