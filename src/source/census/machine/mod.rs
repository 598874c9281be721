//! The machine view's source: every session the census finds, read from the start and followed
//! live, as one stream of [`Event`]s for the monitor. Session files are followed through the
//! notify watcher; new sessions and new sub-agent files are found when their folders change;
//! running tees are attached and new ones picked up from the socket folder. Every tick one census
//! is taken (one walk of `/proc`) and the sessions' liveness goes out as a [`Snapshot`].
//!
//! It runs on a thread of its own, so that nothing it reads (a slow disk, a store busy with a
//! checkpoint) ever holds up the screen that draws and answers keys.
//!
//! One session, once, as in `ps`: a rollout file of a thread a tee carries (by the ids the tee's
//! stream names, or because a process under the tee holds the file) gives only the lines written
//! before that tee started.

mod attaching;
mod followed;
mod reading;
mod rows;
mod sessions;
mod tees;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use self::followed::Followed;
use self::tees::TeeFeed;
use super::{Census, Options, Wants};
use crate::source::agents::Agent;
use crate::source::live::{CHANNEL_EVENTS, Event, Records};
use crate::source::proc::Sampler;
use crate::source::seen::{Snapshot, State, Trouble};
use crate::source::watch::Watcher;
use crate::wire::Origin;

/// How often liveness is sampled and folders that did not exist yet are looked for.
const TICK: Duration = Duration::from_secs(2);
/// Longest wait at start for the running tees' history before the files are read (so that a
/// tee's rollouts are known to be its own).
const TEE_HISTORY_WAIT: Duration = Duration::from_secs(2);
/// Fewest time between two scans of the agents' folders.
const RESCAN_EVERY: Duration = Duration::from_millis(300);

/// The machine view's events; the source runs on a thread of its own until the receiver goes.
pub fn spawn(opts: Options) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
    let started = std::thread::Builder::new().name("source-machine".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async move {
            let _ = Machine::new(opts, tx).run().await;
        });
    });
    if let Err(e) = started {
        tracing::error!(%e, "the machine view's source did not start");
    }
    rx
}

/// The consumer is gone.
struct Gone;

/// Which origin the consumer was last told of.
#[derive(PartialEq, Eq)]
enum Told {
    Nothing,
    Origin(Origin),
}

/// A session followed.
struct Session {
    agent: &'static Agent,
    id: String,
    project: Option<String>,
    /// `project` is discovery's best name, not a cwd its files said: the first line read that
    /// carries one replaces it.
    project_guessed: bool,
    source: PathBuf,
    files: Vec<usize>,
    tee: Option<usize>,
    /// A session within a store: its root's id there.
    within: Option<String>,
    /// When it last changed, as discovery saw it (a store's rows are not files to stat).
    modified: SystemTime,
    /// Its liveness at the last snapshot, and whether the consumer was told it stopped since
    /// it was last live.
    state: Option<State>,
    stopped: bool,
}

/// A change in whether a session runs, as one snapshot tells it after the one before.
enum Run {
    Stopped,
    Guessed,
    Resumed,
}

struct Machine {
    opts: Options,
    tx: mpsc::Sender<Event>,
    watcher: Watcher,
    files: Vec<Followed>,
    by_path: HashMap<PathBuf, usize>,
    sessions: Vec<Session>,
    by_key: HashMap<(&'static str, String), usize>,
    tees: Vec<TeeFeed>,
    tee_tx: mpsc::Sender<(usize, Event)>,
    tee_rx: mpsc::Receiver<(usize, Event)>,
    /// The origin last announced to the consumer; `None` before the first.
    told: Told,
    sampler: Sampler,
    looked_in: Vec<(&'static str, PathBuf)>,
    /// What the last scan of the places met, and what reading the sessions met since.
    trouble: Trouble,
    read_trouble: Trouble,
    /// The last census taken: a snapshot between two ticks is judged by it, with no walk of its own.
    census: Option<Census>,
    /// Servers streaming deltas beside a followed store, by address.
    servers: HashSet<String>,
    stores_changed: bool,
    server_tx: mpsc::Sender<(String, Vec<u8>)>,
    server_rx: mpsc::Receiver<(String, Vec<u8>)>,
}

impl Machine {
    fn new(opts: Options, tx: mpsc::Sender<Event>) -> Self {
        let (tee_tx, tee_rx) = mpsc::channel(CHANNEL_EVENTS);
        let (server_tx, server_rx) = mpsc::channel(CHANNEL_EVENTS);
        Self {
            opts,
            tx,
            watcher: Watcher::new(),
            files: Vec::new(),
            by_path: HashMap::new(),
            sessions: Vec::new(),
            by_key: HashMap::new(),
            tees: Vec::new(),
            tee_tx,
            tee_rx,
            told: Told::Nothing,
            sampler: Sampler::default(),
            looked_in: Vec::new(),
            trouble: Trouble::default(),
            read_trouble: Trouble::default(),
            census: None,
            servers: HashSet::new(),
            stores_changed: false,
            server_tx,
            server_rx,
        }
    }

    async fn send(&self, event: Event) -> Result<(), Gone> {
        self.tx.send(event).await.map_err(|_| Gone)
    }

    async fn run(mut self) -> Result<(), Gone> {
        self.find_tees();
        // The tees' history first, so their threads are known before rollouts are read.
        let deadline = tokio::time::Instant::now() + TEE_HISTORY_WAIT;
        while self.tees.iter().any(|t| !t.live && !t.ended) {
            match tokio::time::timeout_at(deadline, self.tee_rx.recv()).await {
                Ok(Some((i, event))) => self.tee_event(i, event).await?,
                _ => break,
            }
        }
        // The first look finds the files, and its census judges the first snapshot.
        self.rescan().await?;
        self.snapshot(false).await?;
        // What was on disk at start is in: from here on, what arrives is new (the burn rate
        // counts from this point).
        self.send(Event::Live).await?;
        let mut tick = tokio::time::interval(TICK);
        tick.tick().await;
        let mut rescan_due: Option<Instant> = None;
        loop {
            let rescan_sleep = rescan_due.map(|at| tokio::time::sleep_until(at.into()));
            tokio::select! {
                changes = self.watcher.changed() => {
                    if self.changed(changes).await? && rescan_due.is_none() {
                        rescan_due = Some(Instant::now() + RESCAN_EVERY);
                    }
                }
                Some((i, event)) = self.tee_rx.recv() => self.tee_event(i, event).await?,
                Some((authority, records)) = self.server_rx.recv() => {
                    if records.is_empty() {
                        // Its stream is over: a server started again is found again.
                        self.servers.remove(&authority);
                    } else {
                        self.forward(Origin::NONE, records).await?;
                    }
                }
                () = async { rescan_sleep.expect("guarded").await }, if rescan_due.is_some() => {
                    rescan_due = None;
                    self.rescan().await?;
                }
                _ = tick.tick() => self.tick().await?,
                () = self.tx.closed() => return Err(Gone),
            }
        }
    }

    /// Reads what the watcher says changed; whether something unknown changed (a new session or
    /// file, for a rescan to find).
    async fn changed(&mut self, changes: crate::source::watch::Changes) -> Result<bool, Gone> {
        let mut unknown = changes.everything;
        let mut grown = Vec::new();
        for path in &changes.paths {
            match self.by_path.get(path) {
                Some(&i) => grown.push(i),
                None => unknown = true,
            }
        }
        if changes.everything {
            grown = (0..self.files.len()).collect();
        }
        grown.sort_unstable();
        grown.dedup();
        // A store that changed may hold a new session: looked for on the next tick.
        self.stores_changed |= grown.iter().any(|&i| self.files[i].is_store());
        self.read_files(&grown).await?;
        Ok(unknown)
    }

    /// One tick: stores read (a commit the watcher missed: a `-wal` made after it looked), one
    /// census (the rescan's when there is one), the snapshot it says.
    async fn tick(&mut self) -> Result<(), Gone> {
        for i in 0..self.files.len() {
            if self.files[i].is_store() {
                self.read_file(i).await?;
            }
        }
        let rescanned = std::mem::take(&mut self.stores_changed);
        if rescanned {
            self.rescan().await?;
        }
        self.snapshot(!rescanned).await
    }

    async fn forward(&mut self, origin: Origin, bytes: Vec<u8>) -> Result<(), Gone> {
        if !matches!(&self.told, Told::Origin(o) if *o == origin) {
            self.told = Told::Origin(origin.clone());
            self.send(Event::Origin(origin)).await?;
        }
        self.send(Event::Records(Records::new(bytes))).await
    }

    /// What a census wants: the followed files, and the stores among them.
    fn wants(&self) -> Wants {
        let mut wants = Wants::default();
        for s in &self.sessions {
            for &f in &s.files {
                match s.within {
                    Some(_) => wants.store(self.files[f].canonical.clone(), s.agent),
                    None => wants.file(self.files[f].canonical.clone()),
                }
            }
        }
        wants
    }

    /// A census of what is followed now.
    fn take(&self) -> Census {
        Census::take(&self.opts, &self.wants())
    }

    /// Liveness of every session, sent to the screen; `fresh`: by a census of its own, else by the
    /// rescan's taken this tick.
    async fn snapshot(&mut self, fresh: bool) -> Result<(), Gone> {
        // A folder that appeared since (the agent's first run): what it holds already sent no events.
        let roots = self.looked_in.iter().map(|(_, r)| r.clone()).chain([self.opts.tee_dir.clone()]);
        let appeared = roots.filter(|r| !self.watcher.is_watched(r)).collect::<Vec<_>>();
        if appeared.into_iter().any(|r| self.watcher.watch(&r)) {
            self.rescan().await?;
        } else if fresh || self.census.is_none() {
            self.census = Some(self.take());
        }
        let Some(census) = self.census.take() else { return Ok(()) };
        let snapshot = self.sessions_now(&census);
        let changes = self.stopped(&snapshot, census.saw_processes());
        self.census = Some(census);
        self.send(Event::Sessions(Box::new(snapshot))).await?;
        let now_ms = crate::source::recording::unix_ms();
        for (id, change) in changes {
            self.send(match change {
                Run::Stopped => Event::Stopped { id, guessed_at_ms: None },
                Run::Guessed => Event::Stopped { id, guessed_at_ms: Some(now_ms) },
                Run::Resumed => Event::Resumed(id),
            })
            .await?;
        }
        Ok(())
    }

    /// Sends the sessions as the last census judged them (a new session's row, so that its
    /// threads land in their agent's group at once, not a tick later).
    async fn announce(&mut self) -> Result<(), Gone> {
        if self.census.is_none() {
            self.census = Some(self.take());
        }
        let Some(census) = self.census.take() else { return Ok(()) };
        let snapshot = self.sessions_now(&census);
        self.census = Some(census);
        self.send(Event::Sessions(Box::new(snapshot))).await
    }

    /// What `snapshot` says of each session's run since the last one, each once until it is live
    /// again:
    /// - stopped: live before and no longer (the process exited: a Claude Code killed mid-answer
    ///   left its turn and its children running on screen for good);
    /// - stopped on a guess: no process seen running it, none seen exiting: idle when first seen
    ///   (`looked`: `/proc` was read; a `codex exec` killed before the view opened showed its
    ///   agents running until it aged into `ended` five minutes on), or aged into ended. A process
    ///   the source cannot see (in a container) would write on: its next line undoes the guess;
    /// - resumed: live again after a stop (judged gone a moment too soon, or taken up by another).
    fn stopped(&mut self, snapshot: &Snapshot, looked: bool) -> Vec<(String, Run)> {
        let mut out = Vec::new();
        for seen in &snapshot.sessions {
            let Some(&i) = self.by_key.get(&(seen.tool, seen.id.clone())) else { continue };
            let s = &mut self.sessions[i];
            let was = s.state.replace(seen.state);
            let idle_from_the_start = looked && was.is_none() && seen.state == State::Idle;
            if seen.state == State::Live {
                if std::mem::take(&mut s.stopped) {
                    out.push((seen.id.clone(), Run::Resumed));
                }
            } else if !s.stopped && was == Some(State::Live) {
                s.stopped = true;
                out.push((seen.id.clone(), Run::Stopped));
            } else if !s.stopped && (idle_from_the_start || seen.state == State::Ended) {
                s.stopped = true;
                out.push((seen.id.clone(), Run::Guessed));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::agents::{Env, Window};
    use crate::source::proc::Proc;

    /// A session's files are read together at start, by time: the sub-agent's line written
    /// between two of its parent's comes between them (read file by file, the child came only
    /// after its parent's whole file, finished before it was seen to start).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_sessions_backlog_comes_in_stream_time() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
        let line = |uuid: &str, second: u32, side: bool| {
            format!(
                r#"{{"type":"user","uuid":"{uuid}","sessionId":"s1","isSidechain":{side},"cwd":"/home/dev/p","timestamp":"2026-12-01T10:00:0{second}.000Z","message":{{"role":"user","content":"{uuid}"}}}}"#
            ) + "\n"
        };
        std::fs::write(project.join("s1.jsonl"), line("p1", 1, false) + &line("p2", 3, false)).unwrap();
        std::fs::write(project.join("s1/subagents/agent-a1.jsonl"), line("c1", 2, true)).unwrap();
        let opts = Options {
            window: Window::all(),
            env: Env::default().with("HOME", dir.path()),
            proc: Proc::default(),
            tee_dir: dir.path().join("run"),
        };
        let mut events = spawn(opts);
        let mut order = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(Event::Records(r))) => {
                    for l in r.iter() {
                        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                        order.push(v["uuid"].as_str().unwrap_or_default().to_owned());
                    }
                }
                Ok(Some(Event::Live)) => break,
                Ok(Some(_)) => {}
                _ => panic!("the backlog never ended: {order:?}"),
            }
        }
        assert_eq!(order, ["p1", "c1", "p2"]);
    }

    /// Each snapshot the screen gets is judged by one walk of `/proc` at most: the first by the
    /// walk that found the sessions, each tick's by its own, a new session's by the last.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn every_snapshot_takes_one_walk_of_proc_at_most() {
        let dir = tempfile::tempdir().unwrap();
        super::super::one_session(dir.path());
        let proc = Proc::default();
        let opts = Options {
            window: Window::all(),
            env: Env::default().with("HOME", dir.path()),
            proc: proc.clone(),
            tee_dir: dir.path().join("run"),
        };
        let mut events = spawn(opts);
        let mut snapshots = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while snapshots < 4 {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(Event::Sessions(s))) => {
                    assert_eq!(s.sessions.len(), 1, "{s:?}");
                    snapshots += 1;
                    assert!(proc.walks() <= snapshots, "{} walks for {snapshots} snapshots", proc.walks());
                }
                Ok(Some(_)) => {}
                _ => panic!("no snapshot came"),
            }
        }
    }
}
