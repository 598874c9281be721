//! One census of this machine: the agents' sessions in their places (as the registry says where),
//! the agents' running processes, who holds which session file open, and the servers beside the
//! stores — all from one walk of `/proc`, each agent's processes looked for once and each server
//! asked once — shared by `ps` and the machine view, so both say the same of a session.
//!
//! - [`liveness`]: the rules that judge a session from what a census saw.
//! - [`list`]: every session once, with its state and what to read it from (`ps`).
//! - [`machine`]: the machine view's source, following what each census finds.

pub mod list;
pub mod liveness;
pub mod machine;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use self::liveness::{Look, Subject, Verdict};
use super::agents::{self, AGENTS, Agent, Candidate, Env, Host, Place, Served, Server, Sight, Window};
use super::proc::{self, Proc, Usage, Walk};
use super::seen::Trouble;
use crate::wire::decode;

/// Where and what a census looks at.
#[derive(Debug, Clone)]
pub struct Options {
    pub window: Window,
    pub env: Env,
    pub proc: Proc,
    /// The folder running tees publish their sockets in.
    pub tee_dir: PathBuf,
}

impl Options {
    /// This machine: the process environment, `/proc`, the user's socket folder.
    pub fn machine(window: Window) -> Self {
        let env = Env::from_process();
        Self { window, tee_dir: agents::tee::dir(&env), env, proc: Proc::default() }
    }
}

/// `--since D` / `--all` as a window ending now.
pub fn window(since_ms: u64, all: bool) -> Window {
    if all {
        return Window::all();
    }
    Window { since: SystemTime::now().checked_sub(Duration::from_millis(since_ms)) }
}

/// What one look at every place found.
#[derive(Debug, Default)]
pub struct Found {
    /// Newest first.
    pub candidates: Vec<Candidate>,
    /// Each place's folder, whether or not it exists (for "looked in …").
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub trouble: Trouble,
}

impl Found {
    fn sort(&mut self) {
        self.candidates.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.id.cmp(&b.id)));
    }
}

/// Lists the sessions of every agent's place active within the window, newest first.
///
/// Places on disk are scanned at once, all but one on a thread of their own: a scan is mostly
/// waiting on the disk (a directory read, a stat and a file's head for each session), and one
/// place after another made the machine view's first screen wait for the sum of them (50,000
/// sessions: 1.9 s). A place with no folder is looked at here: a thread costs more than that.
pub fn scan(env: &Env, window: &Window) -> Found {
    let places: Vec<(&'static str, &Place, PathBuf)> = AGENTS
        .iter()
        .filter_map(|agent| {
            let place = agent.place.as_ref()?;
            Some((agent.name, place, (place.root)(env)?))
        })
        .collect();
    let scan_one = |place: &Place, root: &Path| {
        let mut trouble = Trouble::default();
        ((place.scan)(root, window, &mut trouble), trouble)
    };
    let scanned: Vec<(Vec<Candidate>, Trouble)> = std::thread::scope(|scope| {
        let mut here_first = true;
        let running: Vec<_> = places
            .iter()
            .map(|(_, place, root)| {
                if root.is_dir() && !std::mem::take(&mut here_first) {
                    Scanning::Away(scope.spawn(move || scan_one(place, root)))
                } else {
                    Scanning::Here(place, root)
                }
            })
            .collect();
        running
            .into_iter()
            .map(|s| match s {
                Scanning::Here(place, root) => scan_one(place, root),
                Scanning::Away(h) => h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            })
            .collect()
    });
    let mut found = Found::default();
    for ((name, _, root), (candidates, trouble)) in places.into_iter().zip(scanned) {
        found.candidates.extend(candidates);
        found.trouble.add(&trouble);
        found.looked_in.push((name, root));
    }
    found.sort();
    found
}

/// A place being scanned: on this thread (when its turn comes) or on one of its own.
enum Scanning<'a, 'scope> {
    Here(&'a Place, &'a Path),
    Away(std::thread::ScopedJoinHandle<'scope, (Vec<Candidate>, Trouble)>),
}

/// What a census wants to know the holders of: session files and stores (canonical paths).
#[derive(Debug, Default, Clone)]
pub struct Wants {
    files: HashSet<PathBuf>,
    stores: HashMap<PathBuf, &'static Agent>,
}

impl Wants {
    /// The files of every candidate (a store's, as a store).
    pub fn of<'a>(candidates: impl IntoIterator<Item = &'a Candidate>) -> Self {
        let mut wants = Self::default();
        let mut canonical = proc::Canonical::default();
        for c in candidates {
            wants.candidate_in(c, &mut canonical);
        }
        wants
    }

    pub fn candidate(&mut self, c: &Candidate) {
        self.candidate_in(c, &mut proc::Canonical::default());
    }

    /// [`Wants::candidate`], its files made canonical through `canonical` (shared by a look's
    /// candidates).
    pub fn candidate_in(&mut self, c: &Candidate, canonical: &mut proc::Canonical) {
        for f in &c.files {
            let canonical = canonical.of(f);
            if c.within.is_some() {
                self.stores.insert(canonical.clone(), c.agent);
            }
            self.files.insert(canonical);
        }
    }

    /// A file (canonical) some session is read from.
    pub fn file(&mut self, canonical: PathBuf) {
        self.files.insert(canonical);
    }

    /// A store (canonical) of `agent`'s sessions.
    pub fn store(&mut self, canonical: PathBuf, agent: &'static Agent) {
        self.files.insert(canonical.clone());
        self.stores.insert(canonical, agent);
    }
}

/// What the machine runs now, from one walk of `/proc`.
#[derive(Debug)]
pub struct Census {
    pub walk: Walk,
    pub look: Look,
    /// The held files a holder runs (one that is no host, or a host at work on it).
    run_files: HashSet<PathBuf>,
    /// The stores looked at, with their agent.
    stores: HashMap<PathBuf, &'static Agent>,
    /// The processes holding the stores open, and their servers: asked the first time a verdict
    /// or a server is wanted, once (a rescan that finds nothing new asks no server).
    served: OnceLock<Served>,
    proc: Proc,
    /// When the walk was taken.
    pub at: Instant,
}

impl Census {
    /// One walk of `/proc` for everything `wants` names and the folders whose held files say a
    /// session runs; every agent's processes found once; every store's processes (and their
    /// servers) asked once.
    pub fn take(opts: &Options, wants: &Wants) -> Self {
        let below: Vec<PathBuf> = AGENTS
            .iter()
            .filter_map(|a| (a.runner.as_ref()?.held_below)(&opts.env))
            .map(|d| proc::canonical(&d))
            .collect();
        let walk = opts.proc.walk_commands(&wants.files, &below);
        let at = Instant::now();
        let running = AGENTS
            .iter()
            .filter_map(|a| a.runner.as_ref())
            .flat_map(|r| (r.find)(&opts.env, &opts.proc, &walk))
            .collect();
        let hosts = hosts(&opts.proc, &walk);
        let run_files = walk
            .holders
            .iter()
            .filter(|(path, pids)| pids.iter().any(|p| hosts.get(p).is_none_or(|h| (h.at_work)(path))))
            .map(|(path, _)| path.clone())
            .collect();
        let (scan, hosted) = held(&walk, &hosts);
        let look = Look { running, scan, hosted };
        let stores = wants.stores.clone();
        Self { walk, look, run_files, stores, served: OnceLock::new(), proc: opts.proc.clone(), at }
    }

    fn served(&self) -> &Served {
        self.served.get_or_init(|| serving(&self.proc, &self.walk, &self.stores))
    }

    /// Adds to `found` the sessions running processes run that the window left out (a running
    /// session is listed however long it has been quiet: an open Claude Code left waiting, a
    /// loaded app-server thread).
    pub fn add_running(&self, opts: &Options, found: &mut Found) {
        if opts.window.since.is_none() {
            return;
        }
        let sight =
            Sight { proc: &opts.proc, walk: &self.walk, running: &self.look.running, run_files: &self.run_files };
        let known: HashSet<(&str, String)> = found.candidates.iter().map(|c| (c.agent.name, c.id.clone())).collect();
        let mut extra: Vec<Candidate> = Vec::new();
        // What these scans meet again was counted by the window's scan.
        let mut again = Trouble::default();
        for runner in AGENTS.iter().filter_map(|a| a.runner.as_ref()) {
            for c in (runner.sessions)(&opts.env, &sight, &mut again) {
                let listed = |o: &Candidate| o.agent == c.agent && o.id == c.id;
                if !known.contains(&(c.agent.name, c.id.clone())) && !extra.iter().any(listed) {
                    extra.push(c);
                }
            }
        }
        if !extra.is_empty() {
            found.candidates.extend(extra);
            found.sort();
        }
    }

    /// The verdict on each of `subjects`, in their order ([`liveness`]).
    pub fn judge(&self, subjects: &[Subject<'_>], now: SystemTime) -> Vec<Verdict> {
        let served = if subjects.iter().any(|s| s.store.is_some()) { self.served() } else { &Served::default() };
        self.look.judge(subjects, served, now)
    }

    /// Whether `/proc` could be read at all: the walk always finds this process, so one that found
    /// none had nothing to read, and then "no process runs it" says nothing.
    pub fn saw_processes(&self) -> bool {
        !self.walk.processes.is_empty()
    }

    /// The tee (its index in `tees`, by pid) under which a process holding one of `files`
    /// (canonical) runs.
    pub fn under_tee(&self, proc: &Proc, files: &[PathBuf], tees: &HashMap<u32, usize>) -> Option<usize> {
        files.iter().find_map(|f| {
            let pid = *self.look.held().get(f)?;
            ancestors(proc, pid).find_map(|a| tees.get(&a).copied())
        })
    }

    /// CPU and memory of `pid`'s process tree over its whole life, as `ps` prints them.
    pub fn lifetime(&self, proc: &Proc, pid: u32) -> Option<Usage> {
        Usage::lifetime(proc, &self.walk, pid)
    }

    /// Every server that answered beside a store, with the store's agent, by address.
    pub fn servers(&self) -> Vec<(&'static Agent, Server)> {
        let mut out: Vec<(&'static Agent, Server)> = self
            .served()
            .by_store
            .iter()
            .filter_map(|(db, procs)| Some((*self.stores.get(db)?, db, procs)))
            .flat_map(|(agent, db, procs)| {
                procs.iter().flat_map(move |p| {
                    p.servers.iter().map(move |authority| {
                        (agent, Server { pid: p.pid, authority: authority.clone(), store: db.clone() })
                    })
                })
            })
            .collect();
        out.sort_by(|a, b| a.1.authority.cmp(&b.1.authority));
        out
    }
}

/// The working directory the running process `pid` of `agent` registered, for a session whose
/// project is a guess until its files name one.
pub fn registered_project(env: &Env, agent: &Agent, pid: u32) -> Option<String> {
    (agent.runner.as_ref()?.registered_cwd?)(env, pid)
}

/// The hosts among the processes holding the walk's wanted files, with the test of their work.
fn hosts(proc: &Proc, walk: &Walk) -> HashMap<u32, &'static Host> {
    let mut out = HashMap::new();
    let mut looked = HashSet::new();
    for &pid in walk.holders.values().flatten() {
        if !looked.insert(pid) {
            continue;
        }
        let Some(args) = walk.command_line(proc, pid) else { continue };
        let host = AGENTS.iter().filter_map(|a| a.runner.as_ref()?.host.as_ref()).find(|h| (h.is)(&args));
        if let Some(host) = host {
            out.insert(pid, host);
        }
    }
    out
}

/// Who holds each wanted file open, hosts left out, and the files hosts alone hold and work on.
fn held(walk: &Walk, hosts: &HashMap<u32, &'static Host>) -> (proc::Scan, HashMap<PathBuf, u32>) {
    let mut scan = walk.scan();
    let mut hosted = HashMap::new();
    if hosts.is_empty() {
        return (scan, hosted);
    }
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
    (scan, hosted)
}

/// The processes holding each store open, each agent's asked once for all of its stores.
fn serving(proc: &Proc, walk: &Walk, stores: &HashMap<PathBuf, &'static Agent>) -> Served {
    let mut served = Served::default();
    let mut agents: Vec<&'static Agent> = stores.values().copied().collect();
    agents.sort_by_key(|a| a.name);
    agents.dedup();
    for agent in agents {
        let Some(store) = &agent.store else { continue };
        let mine: HashSet<PathBuf> = stores.iter().filter(|(_, a)| **a == agent).map(|(p, _)| p.clone()).collect();
        served.by_store.extend((store.processes)(proc, walk, &mine).by_store);
    }
    served
}

/// A pid and its parents, up to init (bounded by the pid space, in case `/proc` changes under us).
pub fn ancestors(proc: &Proc, pid: u32) -> impl Iterator<Item = u32> + '_ {
    let mut next = Some(pid);
    let mut guard = proc::MAX_PROCESSES;
    std::iter::from_fn(move || {
        let cur = next.filter(|&p| p > 1)?;
        guard = guard.checked_sub(1)?;
        next = proc.process(cur).map(|p| p.ppid);
        Some(cur)
    })
}

/// The lines of a session's files that a tee carries too, kept only up to the tee's start: its
/// stream is the session from there on (richer: deltas, client requests), and the lines written
/// before fill in what it never saw. A line stamped at or after the start ends the keeping; a
/// line with no time of its own belongs with those around it.
#[derive(Debug, Clone, Copy)]
pub struct Before {
    ms: i64,
    done: bool,
}

impl Before {
    /// Lines older than `ms` (unix ms); `i64::MIN`: none at all.
    pub fn new(ms: i64) -> Self {
        Self { ms, done: false }
    }

    /// Whether `line` is kept; once one is not, none after it is.
    pub fn keeps(&mut self, line: &[u8]) -> bool {
        if self.done {
            return false;
        }
        let time = decode(line.strip_suffix(b"\n").unwrap_or(line)).ok().and_then(|l| l.time());
        self.done = time.is_some_and(|t| t >= self.ms);
        !self.done
    }

    /// A line at or after the start was seen: the rest is the tee's.
    pub fn done(&self) -> bool {
        self.done
    }

    /// The lines of `chunk` it keeps (whole lines, each with its `\n`).
    pub fn keep(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in chunk.split_inclusive(|&b| b == b'\n') {
            if !self.keeps(line) {
                break;
            }
            out.extend_from_slice(line);
        }
        out
    }
}

/// The agent a record of a thread is of (by its lowering's format) and the thread (both `None` for
/// control and global lines: headers, markers, client traffic).
pub fn speaks(record: &[u8]) -> (Option<&'static Agent>, Option<String>) {
    let Ok(line) = decode(record) else { return (None, None) };
    let lowered = crate::wire::lower(&line, &crate::wire::Origin::NONE, &mut crate::wire::Stream::default());
    let crate::wire::Subject::Thread(id) = lowered.subject else { return (None, None) };
    (AGENTS.iter().copied().find(|a| a.lowers.contains(&lowered.format)), Some(id.to_string()))
}

/// A candidate as liveness judges it: `files` are its files (canonical), `store` the store it is
/// within (canonical). A session within a store is judged by the store's processes, not by who
/// holds the file: every process of its agent holds the store open.
pub fn subject<'a>(c: &'a Candidate, files: &'a [PathBuf], store: Option<&'a Path>) -> Subject<'a> {
    Subject {
        agent: c.agent.name,
        id: &c.id,
        project: c.project.as_deref(),
        files: if c.within.is_some() { &[] } else { files },
        store,
        modified: c.modified,
    }
}

/// A HOME holding one Claude Code session of one line, written now.
#[cfg(test)]
pub(crate) fn one_session(home: &Path) {
    let project = home.join(".claude/projects/-home-dev-p");
    std::fs::create_dir_all(&project).unwrap();
    let line = r#"{"type":"user","uuid":"u","sessionId":"s1","cwd":"/home/dev/p","message":{"content":"hi"}}"#;
    std::fs::write(project.join("s1.jsonl"), format!("{line}\n")).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One census is one walk of `/proc`: the runners, the hosts, the sessions running outside
    /// the window, the stores' servers and the verdicts are all read off it.
    #[test]
    fn a_census_walks_proc_once() {
        let dir = tempfile::tempdir().unwrap();
        one_session(dir.path());
        let opts = Options {
            window: window(30 * 60 * 1000, false),
            env: Env::default().with("HOME", dir.path()),
            proc: Proc::default(),
            tee_dir: dir.path().join("run"),
        };
        let mut found = scan(&opts.env, &opts.window);
        assert_eq!(found.candidates.len(), 1);
        let census = Census::take(&opts, &Wants::of(&found.candidates));
        census.add_running(&opts, &mut found);
        let files: Vec<PathBuf> = found.candidates[0].files.iter().map(|f| proc::canonical(f)).collect();
        let verdicts = census.judge(&[subject(&found.candidates[0], &files, None)], SystemTime::now());
        assert_eq!(verdicts[0].state, crate::source::seen::State::Idle, "written just now, run by nobody");
        assert!(census.servers().is_empty());
        assert_eq!(opts.proc.walks(), 1, "one walk for the whole census");
    }

    #[test]
    fn only_lines_before_the_tee_are_kept() {
        let chunk = b"{\"timestamp\":\"2026-11-29T21:20:08.000Z\",\"type\":\"event_msg\",\"payload\":{}}\n\
{\"timestamp\":\"2026-11-29T21:20:09.000Z\",\"type\":\"event_msg\",\"payload\":{}}\n";
        let split = crate::wire::iso8601_ms("2026-11-29T21:20:08.500Z").unwrap();
        let mut before = Before::new(split);
        let kept = before.keep(chunk);
        assert!(before.done());
        assert_eq!(kept.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(!before.keeps(b"{}\n"), "nothing after the first line of the tee's time");
    }
}
