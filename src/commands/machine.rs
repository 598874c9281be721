//! The machine view's source: every session `ps` finds, read from the start and followed live, as
//! one stream of [`Event`]s for the monitor. Session files are followed through the notify
//! watcher; new sessions and new sub-agent files are found when their folders change; running
//! tees are attached and new ones picked up from the socket folder. Every few seconds the
//! sessions' liveness (from `/proc`) goes out as a [`Snapshot`].
//!
//! One session, once, as in `ps`: a rollout file of a thread a tee carries (by the ids the tee's
//! stream names, or because a process under the tee holds the file) gives only the lines written
//! before that tee started.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use super::sessions::Options;
use crate::source::attach;
use crate::source::discover::liveness::{self, Subject};
use crate::source::discover::{self, Candidate, Seen, Snapshot, State, tee};
use crate::source::files::{self, Input};
use crate::source::live::{CHANNEL_EVENTS, Event, Records};
use crate::source::opencode;
use crate::source::proc::{self, Sampler, Walk};
use crate::source::watch::Watcher;
use crate::wire::Origin;
use crate::wire::decode;

/// How often liveness is sampled and folders that did not exist yet are looked for.
const TICK: Duration = Duration::from_secs(2);
/// Longest wait at start for the running tees' history before the files are read (so that a
/// tee's rollouts are known to be its own).
const TEE_HISTORY_WAIT: Duration = Duration::from_secs(2);
/// Fewest time between two scans of the agents' folders.
const RESCAN_EVERY: Duration = Duration::from_millis(300);
/// Bytes read from one file before the others get their turn.
const READ_CHUNK: u64 = 4 << 20;

/// The machine view's events; the source runs on the current runtime until the receiver goes.
pub fn spawn(opts: Options) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
    tokio::spawn(async move {
        let _ = Machine::new(opts, tx).run().await;
    });
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

struct Followed {
    path: PathBuf,
    canonical: PathBuf,
    origin: Origin,
    /// Bytes consumed (whole lines only); a sidecar's length when it was last sent.
    read: u64,
    /// A sidecar's modification time when it was last sent (plain files: `None`).
    modified: Option<SystemTime>,
    /// Only lines older than this (a tee carries the rest); `Some(i64::MIN)`: none at all.
    before_ms: Option<i64>,
    /// A line at or after `before_ms` was seen: the rest of the file is the tee's.
    done: bool,
    /// A store of many sessions: followed by its event log, never read as bytes.
    /// (In a mutex only so the machine's future may be sent: SQLite connections are not `Sync`.)
    store: Option<std::sync::Mutex<opencode::Follower>>,
}

struct Session {
    tool: String,
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

struct TeeFeed {
    socket: PathBuf,
    pid: Option<u32>,
    started_ms: Option<i64>,
    threads: HashSet<String>,
    /// Records of this tee forwarded, and to skip after a resync (its history comes again).
    forwarded: u64,
    skip: u64,
    first: bool,
    header: Option<Vec<u8>>,
    live: bool,
    ended: bool,
    session: Option<usize>,
    /// Wall time of the last record it sent (unix ms).
    last_ms: Option<i64>,
}

struct Machine {
    opts: Options,
    tx: mpsc::Sender<Event>,
    watcher: Watcher,
    files: Vec<Followed>,
    by_path: HashMap<PathBuf, usize>,
    sessions: Vec<Session>,
    by_key: HashMap<(String, String), usize>,
    tees: Vec<TeeFeed>,
    tee_tx: mpsc::Sender<(usize, Event)>,
    tee_rx: mpsc::Receiver<(usize, Event)>,
    /// The origin last announced to the consumer; `None` before the first.
    told: Told,
    sampler: Sampler,
    looked_in: Vec<(&'static str, PathBuf)>,
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
        // The first look finds the files; the first snapshot looks again, wanting them.
        self.rescan().await?;
        self.snapshot(None).await?;
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
                    for i in grown {
                        // A store that changed may hold a new session: looked for on the next tick.
                        self.stores_changed |= self.files[i].store.is_some();
                        self.read_file(i).await?;
                    }
                    if unknown && rescan_due.is_none() {
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
                _ = tick.tick() => {
                    // A store's commit the watcher missed (a `-wal` file made after it looked).
                    for i in 0..self.files.len() {
                        if self.files[i].store.is_some() {
                            self.read_file(i).await?;
                        }
                    }
                    // One walk of `/proc` per tick, the rescan's when there is one.
                    let walk =
                        if std::mem::take(&mut self.stores_changed) { Some(self.rescan().await?) } else { None };
                    self.snapshot(walk).await?;
                }
                () = self.tx.closed() => return Err(Gone),
            }
        }
    }

    /// Attaches to every trusted tee not attached yet.
    fn find_tees(&mut self) {
        for t in tee::running_in(&self.opts.tee_dir) {
            if self.tees.iter().any(|known| known.socket == t.socket && !known.ended) {
                continue;
            }
            let index = self.tees.len();
            self.tees.push(TeeFeed {
                socket: t.socket.clone(),
                pid: t.pid,
                started_ms: None,
                threads: HashSet::new(),
                forwarded: 0,
                skip: 0,
                first: true,
                header: None,
                live: false,
                ended: false,
                session: None,
                last_ms: None,
            });
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

    async fn tee_event(&mut self, i: usize, event: Event) -> Result<(), Gone> {
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
                let mut out = Vec::new();
                for line in records.iter() {
                    let t = &mut self.tees[i];
                    if std::mem::take(&mut t.first) && t.header.as_deref() != Some(line) {
                        // Another session on this socket: a fresh start.
                        t.header = Some(line.to_vec());
                        t.started_ms = header_started(line);
                        t.forwarded = 0;
                        t.skip = 0;
                    }
                    if t.skip > 0 {
                        t.skip -= 1;
                        continue;
                    }
                    t.forwarded += 1;
                    if let Ok(l) = decode(line) {
                        if let Some(id) = l.thread() {
                            if !t.threads.contains(id) {
                                t.threads.insert(id.to_owned());
                            }
                        }
                    }
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
                if self.tee_session(i) {
                    // Its row's group is known before its threads arrive.
                    let walk = self.walk();
                    let snapshot = self.sessions_now(&walk);
                    self.send(Event::Sessions(Box::new(snapshot))).await?;
                }
                if !out.is_empty() {
                    self.tees[i].last_ms = unix_ms(SystemTime::now());
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

    /// A tee is listed as one session, under the first root thread its stream names; whether
    /// this call listed it.
    fn tee_session(&mut self, i: usize) -> bool {
        if self.tees[i].session.is_some() {
            return false;
        }
        let Some(id) = self.tees[i].threads.iter().min().cloned() else { return false };
        let index = self.sessions.len();
        self.sessions.push(Session {
            tool: "codex".to_owned(),
            id,
            project: self.tees[i].pid.and_then(|p| self.opts.proc.cwd(p)).map(|p| p.display().to_string()),
            project_guessed: false,
            source: self.tees[i].socket.clone(),
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

    async fn forward(&mut self, origin: Origin, bytes: Vec<u8>) -> Result<(), Gone> {
        if !matches!(&self.told, Told::Origin(o) if *o == origin) {
            self.told = Told::Origin(origin.clone());
            self.send(Event::Origin(origin)).await?;
        }
        self.send(Event::Records(Records::new(bytes))).await
    }

    /// Looks at every place again (and the socket folder): new sessions, new files of known ones.
    /// Returns the walk of `/proc` it took, for the tick's snapshot to judge by.
    async fn rescan(&mut self) -> Result<Walk, Gone> {
        self.find_tees();
        let mut found = discover::scan(&self.opts.env, &self.opts.window);
        // One walk for the whole tick: the files known and found, and the folders whose held files
        // say a session runs.
        let mut wanted = self.wanted();
        wanted.extend(found.candidates.iter().flat_map(|c| c.files.iter().map(|f| proc::canonical(f))));
        let walk = self.opts.proc.walk_below(&wanted, &liveness::held_below(&self.opts.env));
        discover::add_running(&self.opts.env, &self.opts.window, &self.opts.proc, &walk, &mut found);
        self.looked_in.clone_from(&found.looked_in);
        for (_, root) in &found.looked_in {
            self.watcher.watch(root);
        }
        self.watcher.watch(&self.opts.tee_dir);
        let mut fresh = Vec::new();
        let sessions_before = self.sessions.len();
        // Which candidate file some process holds open, and that process (a tee's child, say).
        let held = if self.tees.is_empty() { HashMap::new() } else { walk.scan().holders };
        // Oldest first, so the first screen fills in the order things happened.
        for c in found.candidates.into_iter().rev() {
            let key = (c.tool.to_owned(), c.id.clone());
            let mut store_cursor = None;
            let session = if let Some(&s) = self.by_key.get(&key) {
                self.sessions[s].modified = self.sessions[s].modified.max(c.modified);
                if self.sessions[s].project_guessed && !c.project_guessed && c.project.is_some() {
                    self.sessions[s].project.clone_from(&c.project);
                    self.sessions[s].project_guessed = false;
                }
                s
            } else {
                let s = self.sessions.len();
                let tee = self.tee_of(&c, &held);
                self.sessions.push(Session {
                    tool: c.tool.to_owned(),
                    id: c.id.clone(),
                    project: c.project.clone(),
                    project_guessed: c.project_guessed,
                    source: c.location.clone(),
                    files: Vec::new(),
                    tee,
                    within: c.within.clone(),
                    modified: c.modified,
                    state: None,
                    stopped: false,
                });
                if let Some(Ok(snap)) = discover::read_within(&c) {
                    // A session of a store: its subtree as the store holds it now; what follows
                    // comes from the store's event log (one follower per store, from here on).
                    store_cursor = Some(snap.cursor);
                    self.forward(Origin::NONE, snap.records).await?;
                }
                if let Some(t) = tee {
                    if let Some(ts) = self.tees[t].session {
                        // The tee's row takes the project its rollouts name.
                        if self.sessions[ts].project.is_none() {
                            self.sessions[ts].project.clone_from(&c.project);
                        }
                    }
                }
                self.by_key.insert(key, s);
                s
            };
            let before_ms = self.sessions[session].tee.map(|t| self.tees[t].started_ms.unwrap_or(i64::MIN));
            for path in c.files {
                if let Some(&i) = self.by_path.get(&path) {
                    // One store, many sessions: each lists the store's follower as its file.
                    if c.within.is_some() && !self.sessions[session].files.contains(&i) {
                        self.sessions[session].files.push(i);
                    }
                    continue;
                }
                let store = match (&c.within, store_cursor) {
                    (Some(_), Some(cursor)) => match opencode::Follower::new(&path, cursor) {
                        Ok(f) => Some(std::sync::Mutex::new(f)),
                        Err(_) => continue,
                    },
                    (Some(_), None) => continue,
                    (None, _) => None,
                };
                let input = Input::File(path.clone());
                let i = self.files.len();
                if store.is_some() {
                    // SQLite in WAL mode commits into the `-wal` file, not the database.
                    let wal = PathBuf::from(format!("{}-wal", path.display()));
                    self.by_path.insert(wal.clone(), i);
                    self.watcher.watch(&wal);
                }
                self.files.push(Followed {
                    canonical: proc::canonical(&path),
                    origin: files::origin(&input),
                    path: path.clone(),
                    read: 0,
                    modified: None,
                    before_ms,
                    done: false,
                    store,
                });
                self.by_path.insert(path.clone(), i);
                self.sessions[session].files.push(i);
                self.watcher.watch(&path);
                if self.files[i].store.is_none() {
                    fresh.push(i);
                }
            }
        }
        if self.sessions.len() > sessions_before {
            // The screen learns whose a new session's threads are before they arrive, so they
            // land in their agent's group at once, not two seconds later.
            let snapshot = self.sessions_now(&walk);
            self.send(Event::Sessions(Box::new(snapshot))).await?;
        }
        for i in fresh {
            self.read_file(i).await?;
        }
        Ok(walk)
    }

    /// The followed files (canonical): what a walk of `/proc` wants to know the holders of.
    fn wanted(&self) -> HashSet<PathBuf> {
        self.files.iter().map(|f| f.canonical.clone()).collect()
    }

    /// One look at `/proc` for a tick.
    fn walk(&self) -> Walk {
        self.opts.proc.walk_below(&self.wanted(), &liveness::held_below(&self.opts.env))
    }

    /// The followed OpenCode stores (canonical).
    fn stores(&self) -> HashSet<PathBuf> {
        self.files.iter().filter(|f| f.store.is_some()).map(|f| f.canonical.clone()).collect()
    }

    /// Streams the deltas of each OpenCode server of `found` not streamed yet: its rows and
    /// figures come from the store, what the store never holds (text as it streams, retry
    /// statuses) from the server, so a session on both is one row, counted once.
    fn stream_servers(&mut self, found: &discover::opencode::Processes) {
        for server in discover::opencode::servers(found) {
            if !self.servers.insert(server.authority.clone()) {
                continue;
            }
            if discover::opencode::stream_deltas(&server, self.opts.proc.clone(), self.server_tx.clone()).is_err() {
                self.servers.remove(&server.authority);
            }
        }
    }

    /// The tee carrying a candidate: by the threads its stream named, or by the process under it
    /// that holds the candidate's file.
    fn tee_of(&self, c: &Candidate, held: &HashMap<PathBuf, u32>) -> Option<usize> {
        if let Some(i) = self.tees.iter().position(|t| t.threads.contains(&c.id)) {
            return Some(i);
        }
        let pids: HashMap<u32, usize> = self.tees.iter().enumerate().filter_map(|(i, t)| Some((t.pid?, i))).collect();
        c.files.iter().find_map(|f| {
            let mut pid = *held.get(&proc::canonical(f))?;
            for _ in 0..proc::MAX_PROCESSES {
                if let Some(&i) = pids.get(&pid) {
                    return Some(i);
                }
                pid = self.opts.proc.process(pid)?.ppid;
                if pid <= 1 {
                    return None;
                }
            }
            None
        })
    }

    /// A session named by a guess takes the cwd the first of its lines that carries one says (the
    /// next snapshot regroups it): the lines are read here anyway, the file is not read again.
    fn learn_project(&mut self, file: usize, chunk: &[u8]) {
        let Some(s) = self.sessions.iter_mut().find(|s| s.project_guessed && s.files.contains(&file)) else { return };
        if let Some(cwd) = discover::claude::cwd_in(chunk) {
            s.project = Some(cwd);
            s.project_guessed = false;
        }
    }

    /// Sends what a followed file gained since the last read (whole lines only).
    async fn read_file(&mut self, i: usize) -> Result<(), Gone> {
        if let Some(follower) = &self.files[i].store {
            let records = follower.lock().map(|mut f| f.poll().unwrap_or_default()).unwrap_or_default();
            if !records.is_empty() {
                self.forward(Origin::NONE, records).await?;
            }
            return Ok(());
        }
        if files::is_sidecar(&self.files[i].path) {
            return self.read_sidecar(i).await;
        }
        loop {
            let f = &mut self.files[i];
            if f.done {
                return Ok(());
            }
            let Some(mut chunk) = grow(&f.path, &mut f.read) else { return Ok(()) };
            if let Some(before) = f.before_ms {
                chunk = keep_before(&chunk, before, &mut f.done);
            }
            let more = chunk.len() as u64 >= READ_CHUNK;
            let origin = f.origin.clone();
            self.learn_project(i, &chunk);
            if !chunk.is_empty() {
                self.forward(origin, chunk).await?;
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// A sidecar (Claude Code's `agent-<id>.meta.json`, wire.md §6) is one JSON object with no
    /// line break at its end, rewritten whole (`finished: true` once its agent ends): read as
    /// lines it never gave one, so a child at depth 2 (linked by its sidecar alone) stayed
    /// pending for good and every child was pending until its parent's tool result. It is sent
    /// whole whenever it changed, once it parses: a rewrite caught half-way is read again on the
    /// change that completes it.
    async fn read_sidecar(&mut self, i: usize) -> Result<(), Gone> {
        let f = &mut self.files[i];
        let Ok(meta) = std::fs::metadata(&f.path) else { return Ok(()) };
        let modified = meta.modified().ok();
        if (meta.len(), modified) == (f.read, f.modified) {
            return Ok(());
        }
        let Ok(text) = files::read_sidecar(&f.path) else { return Ok(()) };
        if serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_err() {
            return Ok(());
        }
        (f.read, f.modified) = (meta.len(), modified);
        let origin = f.origin.clone();
        self.forward(origin, text).await
    }

    /// Liveness of every session, sent to the screen; judged by `walk` when the tick took one
    /// already (a rescan's), else by a walk of its own.
    async fn snapshot(&mut self, walk: Option<Walk>) -> Result<(), Gone> {
        // A folder that appeared since (the agent's first run): what it holds already sent no events.
        let roots = self.looked_in.iter().map(|(_, r)| r.clone()).chain([self.opts.tee_dir.clone()]);
        let appeared = roots.filter(|r| !self.watcher.is_watched(r)).collect::<Vec<_>>();
        let walk = if appeared.into_iter().any(|r| self.watcher.watch(&r)) { Some(self.rescan().await?) } else { walk };
        let walk = walk.unwrap_or_else(|| self.walk());
        let snapshot = self.sessions_now(&walk);
        // The walk always finds this process: one that found none had no `/proc` to read, and
        // then "no process runs it" says nothing.
        let changes = self.stopped(&snapshot, !walk.processes.is_empty());
        self.send(Event::Sessions(Box::new(snapshot))).await?;
        let now_ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
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
            let Some(&i) = self.by_key.get(&(seen.tool.clone(), seen.id.clone())) else { continue };
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

    /// Every session as the screen lists it, liveness sampled now.
    /// The same judgement as `ps`, every tick (a process that exits is seen within one), from one
    /// walk of `/proc`: liveness, OpenCode's servers and CPU/memory alike.
    fn sessions_now(&mut self, walk: &Walk) -> Snapshot {
        let look = liveness::look(&self.opts.env, &self.opts.proc, walk);
        let stored: Vec<Candidate> = self
            .sessions
            .iter()
            .filter(|s| s.within.is_some())
            .map(|s| Candidate {
                tool: "",
                id: s.id.clone(),
                project: s.project.clone(),
                project_guessed: s.project_guessed,
                location: s.source.clone(),
                files: Vec::new(),
                modified: s.modified,
                within: s.within.clone(),
            })
            .collect();
        let opencode = if stored.is_empty() {
            discover::opencode::Processes::default()
        } else {
            discover::opencode::processes(&self.opts.proc, walk, &self.stores())
        };
        let serving = discover::serving(&opencode, &stored.iter().collect::<Vec<_>>());
        self.stream_servers(&opencode);
        // A session a tee carries is listed as that tee's row.
        let listed: Vec<&Session> = self.sessions.iter().filter(|s| s.tee.is_none() || s.files.is_empty()).collect();
        // Tees' own rows are judged by their tee.
        let on_disk: Vec<&Session> = listed.iter().copied().filter(|s| s.tee.is_none()).collect();
        // Every process of its agent holds a store open: that says nothing of one session in it.
        let files: Vec<Vec<PathBuf>> = on_disk
            .iter()
            .map(|s| match &s.within {
                Some(_) => Vec::new(),
                None => s.files.iter().map(|&f| self.files[f].canonical.clone()).collect(),
            })
            .collect();
        let subjects: Vec<Subject<'_>> = on_disk
            .iter()
            .zip(&files)
            .map(|(s, canonical)| Subject {
                tool: &s.tool,
                id: &s.id,
                project: s.project.as_deref(),
                files: canonical,
                modified: match &s.within {
                    Some(_) => s.modified,
                    None => s
                        .files
                        .iter()
                        .map(|&f| discover::modified(&self.files[f].path))
                        .max()
                        .unwrap_or(SystemTime::UNIX_EPOCH),
                },
            })
            .collect();
        let mut verdicts = look.judge(&subjects, SystemTime::now()).into_iter();
        let at = Instant::now();
        let mut seen = Vec::with_capacity(listed.len());
        // Sessions named by a guess whose running process registered its cwd.
        let mut registered = Vec::new();
        // The on-disk sessions' newest file times, in the verdicts' order.
        let mut modified = subjects.iter().map(|s| s.modified).collect::<Vec<_>>().into_iter();
        for s in listed {
            let (state, pid, last_activity_ms) = if let Some(t) = s.tee.map(|t| &self.tees[t]) {
                (if t.ended { State::Ended } else { State::Live }, t.pid, t.last_ms)
            } else {
                let last = modified.next().filter(|&m| m > SystemTime::UNIX_EPOCH).and_then(unix_ms);
                let (state, pid) = verdicts.next().map_or((State::Ended, None), |v| (v.state, v.pid));
                match s.within.as_ref().and(serving.get(&s.id)) {
                    Some(&pid) => (State::Live, Some(pid), last),
                    None => (state, pid, last),
                }
            };
            let usage = pid.and_then(|p| self.sampler.sample(&self.opts.proc, walk, p, at));
            let cwd = match pid {
                Some(pid) if s.project_guessed && s.tool == discover::claude::PLACE.tool => {
                    discover::claude::registered_cwd(&self.opts.env, pid)
                }
                _ => None,
            };
            if let Some(cwd) = &cwd {
                registered.push((s.id.clone(), cwd.clone()));
            }
            seen.push(Seen {
                tool: s.tool.clone(),
                id: s.id.clone(),
                project: cwd.or_else(|| s.project.clone()),
                source: s.source.clone(),
                state,
                pid,
                usage,
                last_activity_ms,
            });
        }
        for (id, cwd) in registered {
            if let Some(&i) = self.by_key.get(&(discover::claude::PLACE.tool.to_owned(), id)) {
                self.sessions[i].project = Some(cwd);
                self.sessions[i].project_guessed = false;
            }
        }
        Snapshot { sessions: seen, looked_in: self.looked_in.clone(), tee_dir: self.opts.tee_dir.clone() }
    }
}

fn unix_ms(t: SystemTime) -> Option<i64> {
    t.duration_since(std::time::UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok())
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

/// Up to [`READ_CHUNK`] new bytes of `path` from `read` on, cut after the last newline; `read`
/// moves past them. A file that shrank (rewritten) is read again from its start.
fn grow(path: &Path, read: &mut u64) -> Option<Vec<u8>> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len < *read {
        *read = 0;
    }
    if len == *read {
        return None;
    }
    file.seek(SeekFrom::Start(*read)).ok()?;
    let mut buf = Vec::new();
    file.take((len - *read).min(READ_CHUNK)).read_to_end(&mut buf).ok()?;
    let end = memchr::memrchr(b'\n', &buf)?;
    buf.truncate(end + 1);
    *read += buf.len() as u64;
    Some(buf)
}

/// The lines of `chunk` older than `before_ms`, up to the first that is not (then `done`).
fn keep_before(chunk: &[u8], before_ms: i64, done: &mut bool) -> Vec<u8> {
    let mut out = Vec::new();
    for line in chunk.split_inclusive(|&b| b == b'\n') {
        let time = decode(line.strip_suffix(b"\n").unwrap_or(line)).ok().and_then(|l| l.time());
        if time.is_some_and(|t| t >= before_ms) {
            *done = true;
            break;
        }
        out.extend_from_slice(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_before_the_tee_are_kept() {
        let chunk = b"{\"timestamp\":\"2026-11-29T21:20:08.000Z\",\"type\":\"event_msg\",\"payload\":{}}\n\
{\"timestamp\":\"2026-11-29T21:20:09.000Z\",\"type\":\"event_msg\",\"payload\":{}}\n";
        let mut done = false;
        let split = crate::wire::iso8601_ms("2026-11-29T21:20:08.500Z").unwrap();
        let kept = keep_before(chunk, split, &mut done);
        assert!(done);
        assert_eq!(kept.iter().filter(|&&b| b == b'\n').count(), 1);
    }
}
