//! Every session on the machine once, as `ps` lists it: one census, the places' sessions judged
//! by it, and the running tees with their history. A Codex session both behind a tee and in
//! rollout files is listed once, as the tee's: its stream is richer (deltas, client requests),
//! and the rollout lines written before the tee started go first, to fill in what it never saw.
//! What to read each session from is said, not read: its figures are the headless pipeline's.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use super::{Before, Census, Options, Wants, registered_project, scan, speaks, subject};
use crate::source::agents::{Agent, Candidate, Window, tee};
use crate::source::files::{self, Input, Record};
use crate::source::proc::{self, Usage};
use crate::source::recording;
use crate::source::seen::{State, Trouble};

/// What one look at the machine found.
#[derive(Debug, Default)]
pub struct Listing {
    pub sessions: Vec<Listed>,
    /// Each agent's folder, whether or not it exists (for "looked in …").
    pub looked_in: Vec<(&'static str, PathBuf)>,
    pub tee_dir: PathBuf,
    pub trouble: Trouble,
    /// Tees whose history could not be read whole (timeout, size, broken connection).
    pub partial_tees: usize,
    /// Sessions the window left out: what `--all` would add.
    pub older: usize,
}

/// One session (a tee's stream may hold several root sessions).
#[derive(Debug)]
pub struct Listed {
    /// The agent, when the registry knows it (a tee's is told by its stream, once read).
    pub agent: Option<&'static Agent>,
    /// What a tee runs (its command's name), for a stream that says nothing of its agent yet.
    pub command: Option<String>,
    /// The working directory it ran in (unsanitised).
    pub project: Option<String>,
    /// Its file or its tee's socket.
    pub source: PathBuf,
    pub state: State,
    pub pid: Option<u32>,
    pub usage: Option<Usage>,
    /// Its newest file's modification (a tee's: its stream's last time, once read).
    pub last_activity_ms: Option<i64>,
    pub read: Read,
}

/// What a session is read from.
#[derive(Debug)]
pub enum Read {
    /// Files, as `stats` reads them.
    Files(Vec<PathBuf>),
    /// Records already read: a session within a store (its subtree), or a tee's history after
    /// the lines of its session's files written before it started. Empty when nothing could be.
    Records(Vec<u8>),
}

/// A tee found running, read.
struct TeeRead {
    tee: tee::Tee,
    history: tee::History,
    threads: HashSet<String>,
    carried: Vec<Candidate>,
}

/// Everything within the window (and everything running), newest activity first among files.
pub fn list(opts: &Options) -> Listing {
    let mut found = scan(&opts.env, &opts.window);
    let census = Census::take(opts, &Wants::of(&found.candidates));
    census.add_running(opts, &mut found);
    let older = older(opts, &found.candidates);
    let mut listing =
        Listing { looked_in: found.looked_in, tee_dir: opts.tee_dir.clone(), older, ..Listing::default() };
    listing.trouble = found.trouble;

    let mut tees: Vec<TeeRead> = tee::running_in(&opts.tee_dir).into_iter().filter_map(read_tee).collect();
    listing.partial_tees = tees.iter().filter(|t| t.history.partial).count();
    let tee_pids: HashMap<u32, usize> = tees.iter().enumerate().filter_map(|(i, t)| Some((t.tee.pid?, i))).collect();
    let mut on_disk = Vec::new();
    for c in found.candidates {
        let files: Vec<PathBuf> = c.files.iter().map(|f| proc::canonical(f)).collect();
        let by_id = tees.iter().position(|t| t.threads.contains(&c.id));
        match by_id.or_else(|| census.under_tee(&opts.proc, &files, &tee_pids)) {
            Some(i) => tees[i].carried.push(c),
            None => on_disk.push((c, files)),
        }
    }
    for t in tees {
        listing.sessions.push(tee_session(opts, &census, t, &mut listing.trouble));
    }
    listing.sessions.extend(judged(opts, &census, &on_disk, &mut listing.trouble));
    listing
}

/// How many sessions a look with no window finds that `listed` does not hold (none with no
/// window): a listing that is empty because everything is older says so, not "nothing found".
fn older(opts: &Options, listed: &[Candidate]) -> usize {
    if opts.window.since.is_none() {
        return 0;
    }
    let known: HashSet<(&str, &str)> = listed.iter().map(|c| (c.agent.name, c.id.as_str())).collect();
    let everything = scan(&opts.env, &Window::all());
    everything.candidates.iter().filter(|c| !known.contains(&(c.agent.name, c.id.as_str()))).count()
}

fn read_tee(tee: tee::Tee) -> Option<TeeRead> {
    let history = tee::history(&tee.socket, tee::HISTORY_TIMEOUT).ok()?;
    let mut threads = HashSet::new();
    let _ = files::read_records(history.records.as_slice(), files::MAX_LINE, |record| {
        if let Record::Line(line) = record {
            threads.extend(speaks(line).1);
        }
    });
    Some(TeeRead { tee, history, threads, carried: Vec::new() })
}

/// A tee's row: live until it said its command ended; its records those of the session's files
/// written before it started, then its history.
fn tee_session(opts: &Options, census: &Census, t: TeeRead, trouble: &mut Trouble) -> Listed {
    let pid = t.tee.pid;
    let project = t.carried.iter().find_map(|c| c.project.clone());
    let project = project.or_else(|| pid.and_then(|p| opts.proc.cwd(p)).map(|p| p.display().to_string()));
    let mut records = Vec::new();
    if let Some(started) = t.history.started_ms {
        let files: Vec<PathBuf> = t.carried.iter().flat_map(|c| c.files.iter().cloned()).collect();
        records = before(&files, started, trouble);
    }
    records.extend_from_slice(&t.history.records);
    // The agent is what the stream speaks; the command line (often a wrapper script) only
    // when the stream says nothing yet.
    let command = t.history.command.first().and_then(|c| std::path::Path::new(c).file_name());
    Listed {
        agent: None,
        command: command.map(|n| n.to_string_lossy().into_owned()),
        project,
        source: t.tee.socket,
        // Found by a successful connect; it has ended only if it said so.
        state: if t.history.exit_code.is_none() { State::Live } else { State::Ended },
        pid,
        usage: pid.and_then(|p| census.lifetime(&opts.proc, p)),
        last_activity_ms: None,
        read: Read::Records(records),
    }
}

/// The lines of `files` written before `before_ms` (by their own time), as records.
fn before(files: &[PathBuf], before_ms: i64, trouble: &mut Trouble) -> Vec<u8> {
    let mut out = Vec::new();
    for path in files {
        let input = Input::File(path.clone());
        let reader = match files::open(&input) {
            Ok(r) => r,
            Err(e) => {
                trouble.unreadable(&format!("{}: {e}", path.display()));
                continue;
            }
        };
        let mut keep = Before::new(before_ms);
        let _ = files::read_records(reader, files::MAX_LINE, |record| {
            if let Record::Line(line) = record {
                if keep.keeps(line) {
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            }
        });
    }
    out
}

/// The sessions no tee carries, judged by the census.
fn judged(
    opts: &Options,
    census: &Census,
    on_disk: &[(Candidate, Vec<PathBuf>)],
    trouble: &mut Trouble,
) -> Vec<Listed> {
    let stores: Vec<Option<PathBuf>> =
        on_disk.iter().map(|(c, _)| c.within.as_ref().map(|_| proc::canonical(&c.location))).collect();
    let subjects: Vec<_> =
        on_disk.iter().zip(&stores).map(|((c, files), store)| subject(c, files, store.as_deref())).collect();
    let verdicts = census.judge(&subjects, SystemTime::now());
    on_disk
        .iter()
        .zip(verdicts)
        .map(|((c, _), verdict)| {
            let read = match c.read_within() {
                Some(Ok(records)) => Read::Records(records),
                Some(Err(e)) => {
                    trouble.unreadable(&e.to_string());
                    Read::Records(Vec::new())
                }
                None => Read::Files(c.files.clone()),
            };
            // A project named by a guess: the cwd its running process registered, when it did.
            let registered =
                verdict.pid.filter(|_| c.project_guessed).and_then(|pid| registered_project(&opts.env, c.agent, pid));
            Listed {
                agent: Some(c.agent),
                command: None,
                project: registered.or_else(|| c.project.clone()),
                source: c.location.clone(),
                state: verdict.state,
                pid: verdict.pid,
                usage: verdict.pid.and_then(|p| census.lifetime(&opts.proc, p)),
                last_activity_ms: recording::ms_of(c.modified),
                read,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::agents::{Env, Window};
    use crate::source::proc::Proc;

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
        let file = project.join(format!("{id}.jsonl"));
        std::fs::write(&file, first + "\n").unwrap();
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
        let listed = |opts: &Options| list(opts).sessions.into_iter().find(|l| l.source == file).expect("listed");
        let session = listed(&opts);
        assert_eq!(session.pid, Some(me.pid));
        assert_eq!(session.project.as_deref(), Some("/srv/registered_app"));
        std::fs::remove_file(sessions.join(format!("{}.json", me.pid))).unwrap();
        assert_eq!(listed(&opts).project.as_deref(), Some("-nowhere-registered-app"), "the folder's name");
    }
}
