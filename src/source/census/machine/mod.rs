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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use self::followed::Followed;
use self::tees::TeeFeed;
use super::{Census, Options, Wants};
use crate::source::agents::Agent;
use crate::source::live::{CHANNEL_EVENTS, Event, Records};
use crate::source::proc::Sampler;
use crate::source::seen::{Seen, Snapshot, State, Trouble};
use crate::source::watch::Watcher;
use crate::wire::Origin;

/// How often liveness is sampled and folders that did not exist yet are looked for, while a
/// session runs (its process exiting is seen within a tick).
const TICK: Duration = Duration::from_secs(2);
/// The same while no session runs: nothing can exit, and what starts writes its files, which the
/// watcher reports at once (a census of 50,000 sessions every 2 s was a third of an idle machine
/// view's work).
const QUIET_TICK: Duration = Duration::from_secs(10);
/// Longest wait at start for the running tees' history before the files are read (so that a
/// tee's rollouts are known to be its own).
const TEE_HISTORY_WAIT: Duration = Duration::from_secs(2);
/// Fewest time between two scans of the agents' folders.
const RESCAN_EVERY: Duration = Duration::from_millis(300);
/// How long a scan waits after the first sign of something new, so that what comes with it (a
/// session's folder, its file, its first line) is found by the same scan.
const RESCAN_SETTLE: Duration = Duration::from_millis(20);

/// The machine view's events; the source runs on a thread of its own until the receiver goes.
pub fn spawn(opts: Options) -> mpsc::Receiver<Event> {
    spawn_holding(opts, CHANNEL_EVENTS)
}

/// [`spawn`], with at most `events` read ahead of the receiver. An event holds up to a chunk of
/// a file (a MiB): a consumer that reads a long history slower than the source reads it holds
/// that many of them.
pub fn spawn_holding(opts: Options, events: usize) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(events.max(1));
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
    /// Its own files' canonical paths (none for a session within a store), as liveness wants them.
    canonical: Vec<PathBuf>,
    tee: Option<usize>,
    /// A session within a store: its root's id there.
    within: Option<String>,
    /// When it last changed, as discovery saw it (a store's rows are not files to stat).
    modified: SystemTime,
    run: RunState,
}

/// What the snapshots said of a session's run so far.
#[derive(Debug, Default)]
struct RunState {
    /// Its liveness at the last snapshot.
    state: Option<State>,
    /// The consumer was told it stopped since it was last live.
    stopped: bool,
    /// Idle at the first look that read `/proc`, never live since, nothing written since (its
    /// last activity then): one more such look, and it is taken as stopped.
    unproven: Option<Unproven>,
}

/// A session's last activity at the look that found it idle with no process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unproven {
    activity_ms: Option<i64>,
}

impl RunState {
    /// What this look says of the run since the last one, each once until it is live again:
    /// - stopped: live before and no longer (the process exited: a Claude Code killed mid-answer
    ///   left its turn and its children running on screen for good);
    /// - stopped on a guess: no process seen running it and none seen exiting, at two looks that
    ///   read `/proc` with nothing written between (`looked`; a `codex exec` killed before the
    ///   view opened showed its agents running until it aged into `ended` five minutes on), or
    ///   aged into ended. One look is no evidence: a session just written to (a new one, its
    ///   process not found yet) was shown stopped in its first frame. Written to after the first
    ///   look, something runs it: no guess (a process the source cannot see, in a container). A
    ///   wrong guess is undone by the session's next line;
    /// - resumed: live again after a stop (judged gone a moment too soon, or taken up by another).
    fn look(&mut self, seen: &Seen, looked: bool) -> Option<Run> {
        let was = self.state.replace(seen.state);
        if seen.state == State::Live {
            self.unproven = None;
            return std::mem::take(&mut self.stopped).then_some(Run::Resumed);
        }
        if self.stopped {
            return None;
        }
        if was == Some(State::Live) {
            self.stopped = true;
            return Some(Run::Stopped);
        }
        let quiet_again = match self.unproven.take() {
            // A look that did not read `/proc` says nothing either way.
            Some(then) if !looked => {
                self.unproven = Some(then);
                false
            }
            Some(then) => seen.state == State::Idle && then.activity_ms == seen.last_activity_ms,
            None => {
                if looked && was.is_none() && seen.state == State::Idle {
                    self.unproven = Some(Unproven { activity_ms: seen.last_activity_ms });
                }
                false
            }
        };
        if quiet_again || seen.state == State::Ended {
            self.stopped = true;
            return Some(Run::Guessed);
        }
        None
    }
}

/// When the next census comes.
#[derive(Default)]
struct Pace {
    /// Some session was live at the last census: the next comes a [`TICK`] later, else a
    /// [`QUIET_TICK`].
    live: bool,
    /// A file of a session not live at the last census grew (it runs again, or runs where no
    /// process is seen): judged again within a [`TICK`], however quiet the machine was.
    quiet_grew: bool,
}

/// A change in whether a session runs, as one snapshot tells it after the one before.
enum Run {
    Stopped,
    Guessed,
    Resumed,
}

impl Run {
    /// What the consumer is told of session `id`; a guess is dated `now_ms`.
    fn event(self, id: String, now_ms: i64) -> Event {
        match self {
            Run::Stopped => Event::Stopped { id, guessed_at_ms: None },
            Run::Guessed => Event::Stopped { id, guessed_at_ms: Some(now_ms) },
            Run::Resumed => Event::Resumed(id),
        }
    }
}

struct Machine {
    opts: Options,
    tx: mpsc::Sender<Event>,
    watcher: Watcher,
    files: Vec<Followed>,
    /// Files that held more than the chunk last read of them: read on, a chunk a turn.
    pending: BTreeSet<usize>,
    by_path: HashMap<PathBuf, usize>,
    /// What a census wants: the followed files (canonical), and the stores among them; kept as
    /// files are followed (built afresh every tick, it cost a copy of every path).
    wanted: Wants,
    sessions: Vec<Session>,
    /// Each session's row as last built (`None`: not listed), with the project it was built
    /// from: a tick rebuilds only the rows whose figures changed, and sends nothing when none did.
    rows: Vec<Option<(Seen, Option<String>)>>,
    /// A row changed since the last snapshot sent; what else it carried.
    rows_changed: bool,
    sent: Option<(Trouble, Vec<(&'static str, PathBuf)>)>,
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
    /// A store's log grew (it may hold a new session): looked for on the next tick. Only rows read
    /// say so, not the watcher: reading a store touches its files (SQLite's `-wal` and `-shm`),
    /// and each look then asked for another, a rescan of every place every tick for good.
    stores_changed: bool,
    /// When the next census comes.
    pace: Pace,
    server_tx: mpsc::Sender<(String, Vec<u8>)>,
    server_rx: mpsc::Receiver<(String, Vec<u8>)>,
    /// The folders a rescan resolved, for the canonical paths of the files it finds.
    canonical: crate::source::proc::Canonical,
    /// What was on disk at start is being read: each session to its end before the next (see
    /// [`Machine::read_session`]).
    history: bool,
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
            pending: BTreeSet::new(),
            by_path: HashMap::new(),
            wanted: Wants::default(),
            sessions: Vec::new(),
            rows: Vec::new(),
            rows_changed: false,
            sent: None,
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
            pace: Pace::default(),
            server_tx,
            server_rx,
            canonical: crate::source::proc::Canonical::keeping(),
            history: true,
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
        while !self.pending.is_empty() {
            self.read_pending().await?;
        }
        self.history = false;
        self.snapshot(false).await?;
        // What was on disk at start is in: from here on, what arrives is new (the burn rate
        // counts from this point).
        self.send(Event::Live).await?;
        let mut rescan_due: Option<Instant> = None;
        let mut rescanned = Instant::now();
        let mut ticked = Instant::now();
        let mut next_tick = ticked + if self.pace.live { TICK } else { QUIET_TICK };
        loop {
            if std::mem::take(&mut self.pace.quiet_grew) || self.stores_changed {
                next_tick = next_tick.min(ticked + TICK);
            }
            let rescan_sleep = rescan_due.map(|at| tokio::time::sleep_until(at.into()));
            tokio::select! {
                changes = self.watcher.changed() => {
                    if self.changed(changes).await? && rescan_due.is_none() {
                        // At once (a new session shows as its first line is written), but at most
                        // one scan every RESCAN_EVERY: a scan waited that long after the change,
                        // and every new session took 300 ms and more to show.
                        let now = Instant::now();
                        rescan_due = Some((now + RESCAN_SETTLE).max(rescanned + RESCAN_EVERY));
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
                    rescanned = Instant::now();
                }
                () = tokio::time::sleep_until(next_tick.into()) => {
                    self.tick().await?;
                    ticked = Instant::now();
                    next_tick = ticked + if self.pace.live { TICK } else { QUIET_TICK };
                }
                // Ready at once; the other branches' turns come between two chunks.
                () = std::future::ready(()), if !self.pending.is_empty() => self.read_pending().await?,
                () = self.tx.closed() => return Err(Gone),
            }
        }
    }

    /// Watches every folder looked in; one still missing, through its nearest parent (an agent's
    /// first run on the machine makes its folder: seen at once, not at the next census, 10 s on
    /// while nothing runs). Returns whether a folder missing before is watched now.
    fn watch_roots(&mut self) -> bool {
        let roots = self.looked_in.iter().map(|(_, r)| r.clone()).chain([self.opts.tee_dir.clone()]);
        let mut appeared = false;
        for root in roots.collect::<Vec<_>>() {
            if self.watcher.is_watched(&root) {
                continue;
            }
            if self.watcher.watch(&root) {
                appeared = true;
            } else if let Some(parent) = root.ancestors().skip(1).find(|a| a.is_dir()) {
                self.watcher.watch_shallow(parent);
            }
        }
        appeared
    }

    /// Whether `path`, changed, is news: a path in a folder looked in that no file followed is
    /// (a new session or file); one beside a missing folder's parent only if it is on the way to
    /// that folder (`~/.codex` for `~/.codex/sessions`; not `~/.bash_history`).
    fn is_news(&self, path: &std::path::Path) -> bool {
        let roots = || self.looked_in.iter().map(|(_, r)| r.as_path()).chain([self.opts.tee_dir.as_path()]);
        roots().any(|r| path.starts_with(r) || r.starts_with(path))
    }

    /// Reads what the watcher says changed; whether something unknown changed (a new session or
    /// file, for a rescan to find).
    async fn changed(&mut self, changes: crate::source::watch::Changes) -> Result<bool, Gone> {
        let mut unknown = changes.everything;
        let mut grown = Vec::new();
        for path in &changes.paths {
            match self.by_path.get(path) {
                Some(&i) => grown.push(i),
                None => unknown |= self.is_news(path),
            }
        }
        if changes.everything {
            grown = (0..self.files.len()).collect();
        }
        let quiet = |i: &usize| self.sessions[self.files[*i].session].run.state != Some(State::Live);
        self.pace.quiet_grew |= grown.iter().any(quiet);
        // Files still being read go on with these (a session's files are read together).
        grown.extend(std::mem::take(&mut self.pending));
        grown.sort_unstable();
        grown.dedup();
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

    /// A census of what is followed now.
    fn take(&self) -> Census {
        Census::take(&self.opts, &self.wanted)
    }

    /// Liveness of every session, sent to the screen; `fresh`: by a census of its own, else by the
    /// rescan's taken this tick.
    async fn snapshot(&mut self, fresh: bool) -> Result<(), Gone> {
        // A folder that appeared since (the agent's first run): what it holds already sent no events.
        if self.watch_roots() {
            self.rescan().await?;
        } else if fresh || self.census.is_none() {
            self.census = Some(self.take());
        }
        let Some(census) = self.census.take() else { return Ok(()) };
        self.sessions_now(&census);
        let changes = self.stopped(census.saw_processes());
        self.census = Some(census);
        self.send_rows().await?;
        let now_ms = crate::source::recording::unix_ms();
        for (id, change) in changes {
            self.send(change.event(id, now_ms)).await?;
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
        self.sessions_now(&census);
        self.census = Some(census);
        self.send_rows().await
    }

    /// The rows as a snapshot, when they or what it says beside them changed since the last one
    /// sent (with tens of thousands of sessions, a copy of every row every tick was most of an
    /// idle view's work, here and on the screen that compared it).
    async fn send_rows(&mut self) -> Result<(), Gone> {
        let mut trouble = self.trouble.clone();
        trouble.add(&self.read_trouble);
        let same = self.sent.as_ref().is_some_and(|(t, l)| *t == trouble && *l == self.looked_in);
        if same && !self.rows_changed {
            return Ok(());
        }
        self.rows_changed = false;
        self.sent = Some((trouble.clone(), self.looked_in.clone()));
        let snapshot = Snapshot {
            sessions: self.rows.iter().flatten().map(|(seen, _)| seen.clone()).collect(),
            looked_in: self.looked_in.clone(),
            tee_dir: self.opts.tee_dir.clone(),
            home: self.opts.env.home(),
            trouble,
        };
        self.send(Event::Sessions(Box::new(snapshot))).await
    }

    /// While history is read: a session the start's census found ended is told stopped as soon
    /// as its files are read, as the first snapshot would tell it (its look is that one). Told
    /// once every session was read, the agents its files leave mid-work showed running until
    /// then: 18,902 at once on the 50k HOME, with none live.
    async fn stopped_once_read(&mut self, session: usize) -> Result<(), Gone> {
        let Some(Some((seen, _))) = self.rows.get(session) else { return Ok(()) };
        if seen.state != State::Ended {
            return Ok(());
        }
        let seen = seen.clone();
        let Some(change) = self.sessions[session].run.look(&seen, true) else { return Ok(()) };
        self.send(change.event(seen.id, crate::source::recording::unix_ms())).await
    }

    /// What `snapshot` says of each session's run since the last one ([`RunState::look`]).
    fn stopped(&mut self, looked: bool) -> Vec<(String, Run)> {
        let mut out = Vec::new();
        for (s, row) in self.sessions.iter_mut().zip(&self.rows) {
            let Some((seen, _)) = row else { continue };
            if let Some(change) = s.run.look(seen, looked) {
                out.push((seen.id.clone(), change));
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

    /// History on disk at start: each ended session is told stopped once its own files are read,
    /// before the next session's lines (told once every session was read, the agents its files
    /// left mid-work showed running on a machine where nothing ran, for most of a minute).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_ended_session_is_stopped_as_soon_as_its_history_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(&project).unwrap();
        let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 86_400);
        for (n, id) in ["s1", "s2", "s3"].iter().enumerate() {
            let line = format!(
                r#"{{"type":"user","uuid":"u-{id}","sessionId":"{id}","isSidechain":false,"cwd":"/home/dev/p","timestamp":"2026-12-01T10:00:0{n}.000Z","message":{{"role":"user","content":"go"}}}}"#
            ) + "\n";
            let file = project.join(format!("{id}.jsonl"));
            std::fs::write(&file, line).unwrap();
            let written = two_days_ago + Duration::from_secs(60 * n as u64);
            std::fs::File::options().write(true).open(&file).unwrap().set_modified(written).unwrap();
        }
        let mut events = spawn(home_opts(dir.path()));
        let mut seen: Vec<String> = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let label = match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(Event::Records(r))) => {
                    let v: serde_json::Value = serde_json::from_slice(r.iter().next().unwrap()).unwrap();
                    format!("lines {}", v["sessionId"].as_str().unwrap())
                }
                Ok(Some(Event::Stopped { id, guessed_at_ms })) => {
                    assert!(guessed_at_ms.is_some(), "no process was seen: a guess");
                    format!("stopped {id}")
                }
                Ok(Some(Event::Live)) => break,
                Ok(Some(_)) => continue,
                _ => panic!("the history never ended: {seen:?}"),
            };
            if seen.last() != Some(&label) {
                seen.push(label);
            }
        }
        // Newest first.
        let want = ["lines s3", "stopped s3", "lines s2", "stopped s2", "lines s1", "stopped s1"];
        assert_eq!(seen, want);
    }

    /// The source's events until `until` (or `secs` seconds pass): whether a stop came, and when.
    async fn stops_until(events: &mut mpsc::Receiver<Event>, secs: u64, until: impl Fn(&Event) -> bool) -> Vec<bool> {
        let mut stops = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.recv()).await {
            if let Event::Stopped { guessed_at_ms, .. } = &event {
                stops.push(guessed_at_ms.is_some());
            }
            if until(&event) {
                break;
            }
        }
        stops
    }

    /// A session just written to, no process seen running it: its first frame does not call it
    /// stopped (it showed `◼ interrupted` beside `idle now`); the next look, nothing written
    /// between, takes it as stopped (a guess); one written to after the first look never.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_session_just_written_is_not_stopped_at_the_first_look() {
        // The file's modification says it was just written; its lines' own times do not matter.
        let prompt = |uuid: &str| {
            format!(
                r#"{{"type":"user","uuid":"{uuid}","sessionId":"SID","isSidechain":false,"cwd":"/home/dev/p","timestamp":"2026-12-01T10:00:01.000Z","message":{{"role":"user","content":"go"}}}}"#
            ) + "\n"
        };
        for written_on in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().join(".claude/projects/-home-dev-p");
            std::fs::create_dir_all(&project).unwrap();
            let file = project.join("s1.jsonl");
            std::fs::write(&file, prompt("p1").replace("SID", "s1")).unwrap();
            let mut events = spawn(home_opts(dir.path()));
            let first = stops_until(&mut events, 30, |e| matches!(e, Event::Live)).await;
            assert!(first.is_empty(), "stopped in its first frame: {first:?}");
            if written_on {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
                f.write_all(prompt("p2").replace("SID", "s1").as_bytes()).unwrap();
                let later = stops_until(&mut events, QUIET_TICK.as_secs() + 2 * TICK.as_secs(), |_| false).await;
                assert!(later.is_empty(), "written to after the first look: not stopped ({later:?})");
            } else {
                let later = stops_until(&mut events, QUIET_TICK.as_secs() + 2 * TICK.as_secs(), |e| {
                    matches!(e, Event::Stopped { .. })
                })
                .await;
                assert_eq!(later, [true], "a look on, nothing written: stopped on a guess");
            }
        }
    }

    /// A Claude Code line of session `s1` at `ms` past ten, some 650 bytes long.
    fn padded_line(uuid: &str, ms: u64, side: bool) -> String {
        let (m, sec, milli) = (ms / 60_000, ms / 1000 % 60, ms % 1000);
        let pad = "x".repeat(600);
        format!(
            r#"{{"type":"user","uuid":"{uuid}","sessionId":"s1","isSidechain":{side},"cwd":"/home/dev/p","timestamp":"2026-12-01T10:{m:02}:{sec:02}.{milli:03}Z","message":{{"role":"user","content":"{uuid} {pad}"}}}}"#
        ) + "\n"
    }

    /// The uuids of the records the source sends, until `want` of them came (or 30 s passed).
    async fn uuids(events: &mut mpsc::Receiver<Event>, want: usize) -> Vec<String> {
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while got.len() < want {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(Event::Records(r))) => {
                    for l in r.iter() {
                        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
                        got.push(v["uuid"].as_str().unwrap_or_default().to_owned());
                    }
                }
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        got
    }

    fn home_opts(home: &std::path::Path) -> Options {
        Options {
            window: Window::all(),
            env: Env::default().with("HOME", home),
            proc: Proc::default(),
            tee_dir: home.join("run"),
        }
    }

    /// A file over the chunk read at a turn is read to its end with no change to it: a chunk cut
    /// at its last whole line was taken for the end, and a 10 MB transcript stayed at 6,707 of
    /// its 16,001 records until it was written again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_file_over_the_chunk_is_read_to_its_end_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(&project).unwrap();
        let n = 16_001;
        let text: String = (0..n).map(|k| padded_line(&format!("p{k}"), k, false)).collect();
        assert!(text.len() as u64 > 2 * followed::READ_CHUNK, "{} bytes", text.len());
        std::fs::write(project.join("s1.jsonl"), text).unwrap();
        let mut events = spawn(home_opts(dir.path()));
        let got = uuids(&mut events, n as usize).await;
        assert_eq!(got.len(), n as usize, "records read of the file");
        assert!(got.iter().enumerate().all(|(k, u)| *u == format!("p{k}")), "in the file's order");
    }

    /// A session whose files are both over the chunk: read to their ends, a chunk of each a turn,
    /// their lines still in stream time across turns (what was read and not sent is read again).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_sessions_files_over_the_chunk_come_whole_in_stream_time() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
        let n = 8_000;
        let parent: String = (0..n).map(|k| padded_line(&format!("p{k}"), 2 * k, false)).collect();
        let child: String = (0..n).map(|k| padded_line(&format!("c{k}"), 2 * k + 1, true)).collect();
        assert!(parent.len() as u64 > followed::READ_CHUNK && child.len() as u64 > followed::READ_CHUNK);
        std::fs::write(project.join("s1.jsonl"), parent).unwrap();
        std::fs::write(project.join("s1/subagents/agent-a1.jsonl"), child).unwrap();
        let mut events = spawn(home_opts(dir.path()));
        let got = uuids(&mut events, 2 * n as usize).await;
        let want: Vec<String> = (0..n).flat_map(|k| [format!("p{k}"), format!("c{k}")]).collect();
        assert_eq!(got.len(), want.len(), "records read of the two files");
        assert!(got == want, "in stream time");
    }

    /// With no session running, a census comes every QUIET_TICK, not every TICK; a file of a
    /// session not seen running that grows brings one within a TICK.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_quiet_machine_is_looked_at_seldom_and_at_once_when_a_session_writes() {
        let dir = tempfile::tempdir().unwrap();
        super::super::one_session(dir.path());
        let proc = Proc::default();
        let opts = Options { proc: proc.clone(), ..home_opts(dir.path()) };
        let mut events = spawn(opts);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !matches!(tokio::time::timeout_at(deadline, events.recv()).await, Ok(Some(Event::Live))) {}
        let at_live = proc.walks();
        // Three ticks' time: three walks of `/proc` before.
        let quiet = TICK * 3 + Duration::from_millis(500);
        let until = tokio::time::Instant::now() + quiet;
        while tokio::time::timeout_at(until, events.recv()).await.is_ok() {}
        assert_eq!(proc.walks(), at_live, "no census in {quiet:?} of a quiet machine");
        let file = dir.path().join(".claude/projects/-home-dev-p/s1.jsonl");
        let line = r#"{"type":"user","uuid":"u2","sessionId":"s1","cwd":"/home/dev/p","message":{"content":"again"}}"#;
        std::io::Write::write_all(
            &mut std::fs::OpenOptions::new().append(true).open(&file).unwrap(),
            format!("{line}\n").as_bytes(),
        )
        .unwrap();
        let wrote = Instant::now();
        let until = tokio::time::Instant::now() + TICK * 2;
        while proc.walks() == at_live && tokio::time::Instant::now() < until {
            let _ = tokio::time::timeout(Duration::from_millis(50), events.recv()).await;
        }
        assert!(proc.walks() > at_live, "a census within a tick of the write");
        assert!(wrote.elapsed() <= TICK + Duration::from_millis(500), "after {:?}", wrote.elapsed());
    }

    /// A session started while the view is open is listed as soon as its first line is written,
    /// whether in a project folder seen before or a new one: the watcher wakes the scan at once
    /// (it waited RESCAN_EVERY after the change, and each new session took 300 ms and more).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_new_session_shows_as_soon_as_its_first_line_is_written() {
        let dir = tempfile::tempdir().unwrap();
        super::super::one_session(dir.path());
        let mut events = spawn(home_opts(dir.path()));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !matches!(tokio::time::timeout_at(deadline, events.recv()).await, Ok(Some(Event::Live))) {}
        let mut took = Vec::new();
        for k in 0..6 {
            // Past the fewest time between two scans: each session is a first sign of news.
            tokio::time::sleep(RESCAN_EVERY + Duration::from_millis(100)).await;
            let folder = if k % 2 == 0 { "p".to_owned() } else { format!("q{k}") };
            let project = dir.path().join(format!(".claude/projects/-home-dev-{folder}"));
            let id = format!("new-{k}");
            std::fs::create_dir_all(&project).unwrap();
            let line = format!(
                r#"{{"type":"user","uuid":"u{k}","sessionId":"{id}","cwd":"/home/dev/p","message":{{"content":"hi"}}}}"#
            );
            let written = Instant::now();
            std::fs::write(project.join(format!("{id}.jsonl")), line + "\n").unwrap();
            loop {
                match tokio::time::timeout_at(deadline, events.recv()).await {
                    Ok(Some(Event::Sessions(s))) if s.sessions.iter().any(|r| r.id == id) => break,
                    Ok(Some(_)) => {}
                    _ => panic!("{id} never showed"),
                }
            }
            took.push(written.elapsed());
        }
        eprintln!("a new session showed after {took:?}");
        took.sort();
        // The median, on a machine shared with builds: one late wake is the scheduler's.
        let median = took[took.len() / 2];
        assert!(median < RESCAN_EVERY, "a new session showed after {median:?} (median): {took:?}");
    }

    /// An agent's first session on the machine shows as soon as it is written, though its folder
    /// did not exist when the view opened (seen in tmux: a `codex exec` run in a fresh
    /// `CODEX_HOME`, six seconds long, never showed while it ran: the folder was watched only from
    /// the next census, 10 s on while nothing runs). A file written beside the missing folder's
    /// parent is no news.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_agent_s_first_session_on_the_machine_shows_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut events = spawn(home_opts(dir.path()));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !matches!(tokio::time::timeout_at(deadline, events.recv()).await, Ok(Some(Event::Live))) {}
        std::fs::write(dir.path().join(".bash_history"), "ls\n").unwrap();
        tokio::time::sleep(RESCAN_EVERY).await;
        let project = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(&project).unwrap();
        let line = r#"{"type":"user","uuid":"u1","sessionId":"first","cwd":"/home/dev/p","message":{"content":"hi"}}"#;
        let written = Instant::now();
        std::fs::write(project.join("first.jsonl"), format!("{line}\n")).unwrap();
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(Event::Sessions(s))) if s.sessions.iter().any(|r| r.id == "first") => break,
                Ok(Some(_)) => {}
                _ => panic!("the first session never showed"),
            }
        }
        let took = written.elapsed();
        eprintln!("the first session showed after {took:?}");
        assert!(took < TICK, "the first session showed after {took:?}");
    }

    /// Each tick takes one walk of `/proc` at most (the first snapshot by the walk that found the
    /// sessions), and a machine where nothing changed sends no snapshot after the first: with tens
    /// of thousands of sessions, a copy of every row every tick was most of an idle view's work.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_tick_takes_one_walk_and_an_unchanged_machine_sends_nothing() {
        let dir = tempfile::tempdir().unwrap();
        super::super::one_session(dir.path());
        let proc = Proc::default();
        let opts = Options {
            window: Window::all(),
            env: Env::default().with("HOME", dir.path()),
            proc: proc.clone(),
            tee_dir: dir.path().join("run"),
        };
        let started = Instant::now();
        let mut events = spawn(opts);
        let mut snapshots = 0;
        let watch = tokio::time::Instant::now() + TICK * 3 + Duration::from_millis(500);
        loop {
            match tokio::time::timeout_at(watch, events.recv()).await {
                Ok(Some(Event::Sessions(s))) => {
                    assert_eq!(s.sessions.len(), 1, "{s:?}");
                    snapshots += 1;
                }
                Ok(Some(_)) => {}
                Ok(None) => panic!("the source ended"),
                Err(_) => break,
            }
        }
        assert_eq!(snapshots, 1, "the first snapshot, then nothing changed");
        let ticks = (started.elapsed().as_secs_f64() / TICK.as_secs_f64()).ceil() as usize;
        assert!(proc.walks() <= 1 + ticks, "{} walks in {ticks} ticks", proc.walks());
    }
}
