//! Every agent session on the machine as rows: discovery (`source::discover`), each session read
//! through its own pipeline exactly as `stats` reads it, liveness from `/proc`, and one row per
//! root session even when a Codex session is both behind a tee and in rollout files.
//!
//! One session, once: when a tee carries a thread whose rollout files were also found, the tee's
//! stream is the session (it is richer: deltas, client requests); the rollout lines written
//! before the tee started go first, to fill in what it never saw.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ingest::{ingest, nothing};
use crate::model::prices::Pico;
use crate::pipeline::{Config, Pipeline};
use crate::router::ThreadIdx;
pub use crate::source::discover::State;
pub use crate::source::discover::liveness::IDLE_AGE;
use crate::source::discover::liveness::{self, Subject};
use crate::source::discover::{self, Candidate, Env, Window, tee};
use crate::source::files::{self, Input, Record};
use crate::source::proc::{self, Proc, Usage};
use crate::wire::Origin;
use crate::wire::{Clean, decode, sanitize};

/// One root session, with the figures `stats` gives for its subtree.
#[derive(Debug, Clone)]
pub struct Row {
    /// `claude`, `codex`, … (for a tee: the command it runs).
    pub tool: Clean,
    pub id: Clean,
    /// What the machine view calls the session: its first prompt, else its project's folder.
    pub name: Clean,
    pub project: Option<Clean>,
    /// The session's file or the tee's socket.
    pub source: Clean,
    pub state: State,
    pub last_activity_ms: Option<i64>,
    pub pid: Option<u32>,
    pub usage: Option<Usage>,
    /// Threads in the tree, the root included.
    pub agents: u32,
    pub tokens: u64,
    pub cost: Option<Pico>,
}

/// What was looked at, for the screen that found nothing.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub tee_dir: PathBuf,
    /// Tees whose history could not be read whole (timeout, size, broken connection).
    pub partial_tees: usize,
}

pub struct Options {
    pub window: Window,
    pub env: Env,
    pub proc: Proc,
    pub tee_dir: PathBuf,
}

impl Options {
    /// This machine: the process environment, `/proc`, the user's socket folder.
    pub fn machine(window: Window) -> Self {
        Self { window, env: Env::from_process(), proc: Proc::default(), tee_dir: crate::source::socket::lookup_dir() }
    }
}

/// `--since D` / `--all` as a window ending now.
pub fn window(since_ms: u64, all: bool) -> Window {
    if all {
        return Window::all();
    }
    Window { since: SystemTime::now().checked_sub(Duration::from_millis(since_ms)) }
}

fn unix_ms(t: SystemTime) -> Option<i64> {
    t.duration_since(UNIX_EPOCH).ok().and_then(|d| i64::try_from(d.as_millis()).ok())
}

/// Routes whole records (as a live source delivers them) the way `stats` splits a file.
pub fn feed(pipeline: &mut Pipeline, bytes: &[u8]) {
    let nothing = &mut nothing();
    let _ = files::read_records(bytes, files::MAX_LINE, |record| pipeline.feed(record, &Origin::NONE, nothing));
}

/// The lines of `files` written before `before_ms` (by their own time), as `stats` would route them.
fn feed_before(pipeline: &mut Pipeline, files: &[PathBuf], before_ms: i64) -> usize {
    let mut fed = 0;
    for path in files {
        let input = Input::File(path.clone());
        let Ok(reader) = files::open(&input) else { continue };
        let origin = files::origin(&input);
        let nothing = &mut nothing();
        let _ = files::read_records(reader, files::MAX_LINE, |record| {
            if let Record::Line(line) = record {
                let time = decode(line).ok().and_then(|l| l.time());
                if time.is_some_and(|t| t < before_ms) {
                    pipeline.feed(record, &origin, nothing);
                    fed += 1;
                }
            }
        });
    }
    fed
}

fn roots(pipeline: &Pipeline) -> Vec<ThreadIdx> {
    pipeline.model.sessions.clone()
}

/// A tee, read: its history through a pipeline.
struct TeeSession {
    tee: tee::Tee,
    history: tee::History,
    pipeline: Pipeline,
    tool: String,
    project: Option<String>,
}

fn read_tee(t: tee::Tee, config: &Config) -> Option<TeeSession> {
    let history = tee::history(&t.socket, tee::HISTORY_TIMEOUT).ok()?;
    let mut pipeline = Pipeline::new(config.clone());
    feed(&mut pipeline, &history.records);
    // The agent is what the stream speaks; the command line (often a wrapper script) only
    // when the stream says nothing yet.
    let tool = match pipeline.format() {
        f if f.starts_with("codex") => "codex".to_owned(),
        f if f.starts_with("claude") => "claude".to_owned(),
        _ => history
            .command
            .first()
            .and_then(|c| std::path::Path::new(c).file_name())
            .map_or_else(|| "tee".to_owned(), |n| n.to_string_lossy().into_owned()),
    };
    Some(TeeSession { tee: t, history, pipeline, tool, project: None })
}

/// Everything within the window, newest activity first.
pub fn collect(opts: &Options, config: &Config) -> Report {
    let mut found = discover::scan(&opts.env, &opts.window);
    // One walk of `/proc` answers every question below: who runs what, who holds which file open.
    let wanted: HashSet<PathBuf> =
        found.candidates.iter().flat_map(|c| c.files.iter().map(|f| proc::canonical(f))).collect();
    let walk = opts.proc.walk_below(&wanted, &liveness::held_below(&opts.env));
    discover::add_running(&opts.env, &opts.window, &opts.proc, &walk, &mut found);
    let mut report = Report { looked_in: found.looked_in, tee_dir: opts.tee_dir.clone(), ..Report::default() };

    let mut tees: Vec<TeeSession> =
        tee::running_in(&opts.tee_dir).into_iter().filter_map(|t| read_tee(t, config)).collect();
    report.partial_tees = tees.iter().filter(|t| t.history.partial).count();

    // Liveness: which agent processes run, and who holds which session file open.
    let canonical: Vec<Vec<PathBuf>> =
        found.candidates.iter().map(|c| c.files.iter().map(|f| proc::canonical(f)).collect()).collect();
    let look = liveness::look(&opts.env, &opts.proc, &walk);
    let tee_pids: HashMap<u32, usize> = tees.iter().enumerate().filter_map(|(i, t)| Some((t.tee.pid?, i))).collect();

    // A candidate carried by a tee: by the thread ids the tee has seen, or by its file being held
    // by a process running under the tee.
    let mut by_tee: HashMap<usize, Vec<Candidate>> = HashMap::new();
    let mut on_disk = Vec::new();
    for (c, files) in found.candidates.into_iter().zip(canonical) {
        let by_id = tees.iter().position(|t| t.pipeline.find(&c.id).is_some());
        let by_process = || {
            files.iter().find_map(|f| {
                let pid = *look.held().get(f)?;
                ancestors(&opts.proc, pid).find_map(|a| tee_pids.get(&a).copied())
            })
        };
        match by_id.or_else(by_process) {
            Some(i) => by_tee.entry(i).or_default().push(c),
            None => on_disk.push((c, files)),
        }
    }

    for (i, candidates) in by_tee {
        let t = &mut tees[i];
        t.project = candidates.iter().find_map(|c| c.project.clone());
        let Some(started) = t.history.started_ms else { continue };
        let files: Vec<PathBuf> = candidates.iter().flat_map(|c| c.files.iter().cloned()).collect();
        let mut pipeline = Pipeline::new(config.clone());
        if feed_before(&mut pipeline, &files, started) > 0 {
            feed(&mut pipeline, &t.history.records);
            t.pipeline = pipeline;
        }
    }

    for mut t in tees {
        t.pipeline.finish();
        // Found by a successful connect; it has ended only if it said so.
        let live = t.history.exit_code.is_none();
        let pid = t.tee.pid;
        let usage = pid.and_then(|p| Usage::lifetime(&opts.proc, &walk, p));
        let project = t.project.clone().or_else(|| pid.and_then(|p| opts.proc.cwd(p)).map(|p| p.display().to_string()));
        let last = t.pipeline.model.stream_ms;
        for root in roots(&t.pipeline) {
            report.rows.push(row(
                &t.pipeline,
                root,
                &t.tool,
                project.as_deref(),
                &t.tee.socket.display().to_string(),
                if live { State::Live } else { State::Ended },
                last,
                pid,
                usage,
            ));
        }
    }

    let subjects: Vec<Subject<'_>> = on_disk
        .iter()
        .map(|(c, files)| Subject {
            tool: c.tool,
            id: &c.id,
            project: c.project.as_deref(),
            // Every process of its agent holds a store open: that says nothing of one session in it.
            files: if c.within.is_some() { &[] } else { files.as_slice() },
            modified: c.modified,
        })
        .collect();
    let verdicts = look.judge(&subjects, SystemTime::now());
    let opencode =
        discover::opencode::processes(&opts.proc, &walk, &discover::stores_of(on_disk.iter().map(|(c, _)| c)));
    let serving = discover::serving(&opencode, &on_disk.iter().map(|(c, _)| c).collect::<Vec<_>>());
    for ((c, _), verdict) in on_disk.iter().zip(verdicts) {
        let Some(pipeline) = read(c, config) else { continue };
        let (state, pid) = match c.within.as_ref().and(serving.get(&c.id)) {
            Some(&pid) => (State::Live, Some(pid)),
            None => (verdict.state, verdict.pid),
        };
        let usage = pid.and_then(|p| Usage::lifetime(&opts.proc, &walk, p));
        // A project named by a guess: the cwd its running process registered, when it did.
        let registered = match pid {
            Some(pid) if c.project_guessed && c.tool == discover::claude::PLACE.tool => {
                discover::claude::registered_cwd(&opts.env, pid)
            }
            _ => None,
        };
        for root in roots(&pipeline) {
            report.rows.push(row(
                &pipeline,
                root,
                c.tool,
                registered.as_deref().or(c.project.as_deref()),
                &c.location.display().to_string(),
                state,
                unix_ms(c.modified),
                pid,
                usage,
            ));
        }
    }
    report
        .rows
        .sort_by(|a, b| b.last_activity_ms.cmp(&a.last_activity_ms).then_with(|| a.id.as_str().cmp(b.id.as_str())));
    report
}

/// A candidate through its own pipeline, ended as `stats` ends it: its files, or its subtree of a
/// store (the figures `stats` gives for that session).
fn read(c: &Candidate, config: &Config) -> Option<Pipeline> {
    match discover::read_within(c) {
        Some(records) => {
            let mut pipeline = Pipeline::new(config.clone());
            feed(&mut pipeline, &records.ok()?.records);
            pipeline.finish();
            Some(pipeline)
        }
        None => ingest(&c.files, config.clone(), &mut nothing()).ok(),
    }
}

/// A pid and its parents, up to init (bounded by the pid space, in case `/proc` changes under us).
fn ancestors(proc: &Proc, pid: u32) -> impl Iterator<Item = u32> + '_ {
    let mut next = Some(pid);
    let mut guard = proc::MAX_PROCESSES;
    std::iter::from_fn(move || {
        let cur = next.filter(|&p| p > 1)?;
        guard = guard.checked_sub(1)?;
        next = proc.process(cur).map(|p| p.ppid);
        Some(cur)
    })
}

#[allow(clippy::too_many_arguments)]
fn row(
    pipeline: &Pipeline,
    root: ThreadIdx,
    tool: &str,
    project: Option<&str>,
    source: &str,
    state: State,
    last_activity_ms: Option<i64>,
    pid: Option<u32>,
    usage: Option<Usage>,
) -> Row {
    let t = pipeline.model.thread(root);
    let folder = project.and_then(|p| p.trim_end_matches('/').rsplit('/').next()).filter(|f| !f.is_empty());
    Row {
        tool: sanitize(tool),
        id: sanitize(&t.id),
        name: sanitize(&crate::ui::label::session(&pipeline.model, root, folder)),
        project: project.map(sanitize),
        source: sanitize(source),
        state,
        last_activity_ms: last_activity_ms.or(t.last_ms),
        pid,
        usage,
        agents: t.subtree.threads,
        tokens: t.subtree.tokens.total,
        cost: t.subtree.cost_usd(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live Claude Code session whose transcript names no cwd yet: its process registered one.
    #[test]
    fn a_running_session_before_its_first_cwd_takes_the_cwd_its_process_registered() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".claude");
        let project = config.join("projects/-nowhere-registered-app");
        let sessions = config.join("sessions");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&sessions).unwrap();
        let id = "5e6f7a8b-1c2d-4e3f-9a0b-c1d2e3f40777";
        let first = format!(r#"{{"type":"permission-mode","permissionMode":"default","sessionId":"{id}"}}"#);
        std::fs::write(project.join(format!("{id}.jsonl")), first + "\n").unwrap();
        let proc = Proc::default();
        // This test's own process stands for the running CLI (same pid, same start).
        let me = proc.process(std::process::id()).unwrap();
        let registry = format!(
            r#"{{"pid":{},"sessionId":"{id}","cwd":"/srv/registered_app","procStart":"{}"}}"#,
            me.pid, me.start_ticks
        );
        std::fs::write(sessions.join(format!("{}.json", me.pid)), registry).unwrap();
        let opts = Options {
            window: Window::all(),
            env: Env::default().with("CLAUDE_CONFIG_DIR", &config),
            proc,
            tee_dir: dir.path().join("run"),
        };
        let report = collect(&opts, &Config::default());
        let row = report.rows.iter().find(|r| r.id.as_str() == id).expect("the session listed");
        assert_eq!(row.pid, Some(me.pid));
        assert_eq!(row.project.as_ref().map(Clean::as_str), Some("/srv/registered_app"));
        std::fs::remove_file(sessions.join(format!("{}.json", me.pid))).unwrap();
        let report = collect(&opts, &Config::default());
        let row = report.rows.iter().find(|r| r.id.as_str() == id).expect("the session listed");
        assert_eq!(row.project.as_ref().map(Clean::as_str), Some("-nowhere-registered-app"), "the folder's name");
    }
}
