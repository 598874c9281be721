//! Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<threadId>.jsonl`, one file per thread,
//! written by the command line and the app-server alike; `CODEX_HOME` moves `~/.codex`. A child
//! thread's first line (`session_meta`) names the root session (`session_id`) and its parent.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Value, json};

use super::control::{TeeControl, TeeRequest, Turn};
use super::{
    Agent, Candidate, Control, Env, Host, OPENAI, Place, Reported, Runner, Sight, Spend, Tools, Window,
    codex_processes, first_line, modified,
};
use crate::source::files::{self, Input};
use crate::source::proc;
use crate::source::regular;
use crate::source::seen::Trouble;
use crate::wire::fact::Format;

/// The real 0.171.0 keeps a thread's rollout open from its first turn until the process exits
/// (`codex exec`, `codex exec resume`, which appends to the same file, and the app-server, which
/// keeps it open while the thread is loaded), beside `thread-writer-locks/<threadId>.lock`. So
/// liveness is the held rollout (rule 2 of `census::liveness`), and a held rollout is listed
/// however old it is, except where the holder is the TUI's daemon, which keeps threads loaded
/// after their TUI has quit: there the TUI's process says it (see [`codex_processes`]).
pub static AGENT: Agent = Agent {
    name: "codex",
    place: Some(Place {
        root,
        scan,
        hint: "Codex sessions appear here as `codex` writes them; for the live stream, run `swarmtop tee -- codex app-server`",
        cwd_in: None,
    }),
    runner: Some(Runner {
        find: |_, proc, walk| codex_processes::running(AGENT.name, proc, walk),
        sessions: held_sessions,
        held_below: root,
        host: Some(Host { is: codex_processes::is_host, at_work: codex_processes::at_work }),
        registered_cwd: None,
    }),
    store: None,
    live: None,
    // Through its tee, the app-server's own request; else Ctrl-C to the process.
    control: Control {
        tee: Some(TeeControl {
            how: "turn/interrupt of its running turn (the client sees an interrupted turn)",
            interrupt: interrupt_turn,
            refusal: rpc_refusal,
        }),
        server: None,
        hook: None,
    },
    spend: Spend { provider: Some(&OPENAI), reported: Reported::Tokens, tools: Tools::DEFAULT },
    lowers: &[Format::CodexAppServer, Format::CodexRollout, Format::CodexExec],
    spawned_via: &[],
};

/// App-server 0.171.0: `turn/interrupt {threadId, turnId}` (both required), answered by a JSON-RPC
/// response with the request's id; the turn then ends with `turn/completed` `status: interrupted`
/// (`docs/acting.md` §2).
fn interrupt_turn(t: Turn<'_>) -> TeeRequest {
    TeeRequest {
        send: json!({"method": "turn/interrupt", "params": {"threadId": t.thread, "turnId": t.turn}}),
        id_at: &["id"],
        answer_at: &["id"],
    }
}

/// A JSON-RPC `error` answer, and its message.
fn rpc_refusal(answer: &Value) -> Option<String> {
    let e = answer.get("error")?;
    Some(e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned))
}

/// Folder levels below `sessions/` (year, month, day).
const MAX_DEPTH: usize = 4;

fn root(env: &Env) -> Option<PathBuf> {
    env.path("CODEX_HOME").or_else(|| Some(env.home()?.join(".codex"))).map(|d| d.join("sessions"))
}

/// A rollout file, known from its name and metadata alone.
struct Rollout {
    path: PathBuf,
    thread: String,
    /// `YYYY-MM-DDTHH-MM-SS` from the name: when the thread started.
    started: String,
    modified: SystemTime,
}

#[derive(Deserialize)]
struct MetaLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    id: Option<String>,
    session_id: Option<String>,
    parent_thread_id: Option<String>,
    cwd: Option<String>,
}

/// What a rollout's first line says about its thread.
struct Opened {
    root: String,
    /// Told for a root's own thread (a child's may be left out: its session's cwd is its root's).
    cwd: Option<String>,
}

/// Bytes of a rollout read first: its `session_meta` names the session and the cwd in its first
/// few hundred bytes, before the model's whole instructions (some 20 kB in 0.171.0). With 26,000
/// rollouts, reading and parsing each first line whole was a fifth of the machine view's start.
const META_HEAD: usize = 4 << 10;

/// What a rollout's first line says about its thread: from the line's head when that says enough
/// ([`meta_in_head`]), else from the whole line.
fn open_meta(rollout: &Rollout) -> Opened {
    let mut head = Vec::with_capacity(META_HEAD);
    // `list` found it regular.
    let read = regular::open_listed(&rollout.path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, META_HEAD as u64), &mut head));
    if read.is_ok() {
        if let Some(end) = memchr::memchr(b'\n', &head) {
            return meta_of(Some(&head[..end]), &rollout.thread);
        }
        if head.len() == META_HEAD {
            if let Some(opened) = meta_in_head(&head, &rollout.thread) {
                return opened;
            }
        }
    }
    meta_of(first_line(&rollout.path).as_deref(), &rollout.thread)
}

/// What a whole first line says about thread `thread` (none: it is its own session).
fn meta_of(line: Option<&[u8]>, thread: &str) -> Opened {
    let meta = line
        .and_then(|line| serde_json::from_slice::<MetaLine>(line).ok())
        .filter(|l| l.kind.as_deref() == Some("session_meta"))
        .and_then(|l| l.payload);
    let Some(meta) = meta else { return Opened { root: thread.to_owned(), cwd: None } };
    let root = meta.session_id.or(meta.parent_thread_id).or(meta.id).unwrap_or_else(|| thread.to_owned());
    Opened { root, cwd: meta.cwd }
}

/// What the head of a first line longer than it says, when it says all that is needed: a
/// `session_meta` whose payload names its `session_id` (which the line's other ids only stand in
/// for) and, for the root's own thread, its `cwd`. `None`: the whole line is read (a value of
/// another type, a field missing from the head, anything unexpected).
fn meta_in_head(head: &[u8], thread: &str) -> Option<Opened> {
    let mut at = Head { bytes: head, pos: 0 };
    at.byte(b'{')?;
    let mut is_meta = false;
    loop {
        match at.key()?.as_str() {
            "type" => {
                is_meta = at.value::<Option<String>>()?.as_deref() == Some("session_meta");
                if !is_meta {
                    return None;
                }
            }
            "payload" if is_meta => return payload_in_head(&mut at, thread),
            _ => at.value::<serde::de::IgnoredAny>().map(drop)?,
        }
        at.next()?;
    }
}

/// The payload's part of [`meta_in_head`].
fn payload_in_head(at: &mut Head<'_>, thread: &str) -> Option<Opened> {
    at.byte(b'{')?;
    let (mut session, mut cwd): (Option<String>, Option<Option<String>>) = (None, None);
    loop {
        match at.key()?.as_str() {
            // Null: the parent's id or the thread's own stands in, once known there is no other.
            "session_id" => session = Some(at.value::<Option<String>>()??),
            "cwd" => cwd = Some(at.value::<Option<String>>()?),
            _ => at.value::<serde::de::IgnoredAny>().map(drop)?,
        }
        if let Some(root) = &session {
            if root != thread || cwd.is_some() {
                return Some(Opened { root: root.clone(), cwd: cwd.flatten() });
            }
        }
        at.next()?;
    }
}

/// A JSON object's head, read a token at a time (every `None`: cut short, or not as expected).
struct Head<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Head<'_> {
    fn skip_space(&mut self) {
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn byte(&mut self, b: u8) -> Option<()> {
        self.skip_space();
        (self.bytes.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }

    /// One whole value (a number the head cuts may parse short: only a `,` or `}` after it is
    /// taken as its end, by [`Head::next`]).
    fn value<T: serde::de::DeserializeOwned>(&mut self) -> Option<T> {
        let rest = self.bytes.get(self.pos..)?;
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<T>();
        let value = values.next()?.ok()?;
        self.pos += values.byte_offset();
        Some(value)
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Option<String> {
        self.skip_space();
        if self.bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let key = self.value::<String>()?;
        self.byte(b':')?;
        Some(key)
    }

    /// The comma before the next member (`None` at the object's end too: what was wanted was not
    /// in it).
    fn next(&mut self) -> Option<()> {
        self.byte(b',')
    }
}

fn scan(root: &Path, window: &Window, trouble: &mut Trouble) -> Vec<Candidate> {
    let mut rollouts = Vec::new();
    list(root, 0, &mut rollouts, trouble);
    // Sessions with any thread written in the window: only those files are opened.
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    let mut cwd: HashMap<String, String> = HashMap::new();
    let mut opened: HashSet<usize> = HashSet::new();
    for (i, r) in rollouts.iter().enumerate() {
        if window.contains(r.modified) {
            let meta = open_meta(r);
            opened.insert(i);
            if meta.root == r.thread {
                if let Some(c) = meta.cwd.clone() {
                    cwd.insert(meta.root.clone(), c);
                }
            }
            groups.entry(meta.root).or_default().push(i);
        }
    }
    if groups.is_empty() {
        return Vec::new();
    }
    // Threads of those sessions that went quiet before the window: a root's file (named by its
    // id), and children, which start after their root (so only files named later are opened).
    let by_thread: HashMap<&str, usize> = rollouts.iter().enumerate().map(|(i, r)| (r.thread.as_str(), i)).collect();
    let mut earliest: Option<&str> = None;
    for (root_id, members) in &mut groups {
        if let Some(&i) = by_thread.get(root_id.as_str()) {
            if opened.insert(i) {
                let meta = open_meta(&rollouts[i]);
                if let Some(c) = meta.cwd {
                    cwd.insert(root_id.clone(), c);
                }
                members.push(i);
            }
        }
        let start = members.iter().map(|&i| rollouts[i].started.as_str()).min().unwrap_or("");
        earliest = Some(earliest.map_or(start, |e| e.min(start)));
    }
    let earliest = earliest.unwrap_or("").to_owned();
    for (i, r) in rollouts.iter().enumerate() {
        if r.started >= earliest && !opened.contains(&i) {
            let meta = open_meta(r);
            if let Some(members) = groups.get_mut(&meta.root) {
                members.push(i);
            }
        }
    }
    groups
        .into_iter()
        .map(|(id, members)| {
            let mut files: Vec<PathBuf> = members.iter().map(|&i| rollouts[i].path.clone()).collect();
            // The order `stats` reads a folder in: by path.
            files.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
            files.dedup();
            let newest = members.iter().map(|&i| rollouts[i].modified).max().unwrap_or(SystemTime::UNIX_EPOCH);
            let location = by_thread.get(id.as_str()).map_or_else(|| files[0].clone(), |&i| rollouts[i].path.clone());
            Candidate {
                agent: &AGENT,
                project: cwd.remove(&id),
                project_guessed: false,
                id,
                location,
                files,
                modified: newest,
                within: None,
            }
        })
        .collect()
}

/// Every rollout file below `dir`, by name and metadata only (a name that is not UTF-8 names no
/// thread, and one that is no regular file is never opened: both are counted).
fn list(dir: &Path, depth: usize, out: &mut Vec<Rollout>, trouble: &mut Trouble) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                list(&path, depth + 1, out, trouble);
            }
            continue;
        }
        let input = Input::File(path);
        let Some(thread) = files::rollout_thread(&input) else {
            let Input::File(path) = input else { continue };
            if path.file_name().is_some_and(|n| n.to_str().is_none()) {
                trouble.name_not_utf8();
            }
            continue;
        };
        let Input::File(path) = input else { continue };
        let modified = match regular::stat(&path) {
            Ok(Some(meta)) => meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            Ok(None) => SystemTime::UNIX_EPOCH,
            Err(why) => {
                trouble.not_regular(&why);
                continue;
            }
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let started = name.strip_prefix("rollout-").and_then(|s| s.get(..19)).unwrap_or("").to_owned();
        out.push(Rollout { path, thread, started, modified });
    }
}

/// The sessions whose rollouts some process runs, however long ago they were written.
fn held_sessions(env: &Env, sight: &Sight<'_>, trouble: &mut Trouble) -> Vec<Candidate> {
    let Some(root) = root(env) else { return Vec::new() };
    let root = proc::canonical(&root);
    let held: HashSet<&PathBuf> = sight.run_files.iter().filter(|p| p.starts_with(&root)).collect();
    let Some(oldest) = held.iter().map(|p| modified(p)).min() else { return Vec::new() };
    scan(&root, &Window { since: Some(oldest) }, trouble)
        .into_iter()
        .filter(|c| c.files.iter().any(|f| held.contains(&proc::canonical(f))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each real first line's head (0.171.0 rollouts: roots and children) says what the whole
    /// line says, cwd included for a root's own thread.
    #[test]
    fn a_first_lines_head_says_what_the_line_says() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0/rollouts");
        let mut rollouts = Vec::new();
        list(&dir, 0, &mut rollouts, &mut Trouble::default());
        assert!(rollouts.len() >= 10, "{} rollouts", rollouts.len());
        let mut children = 0;
        // Compressed ones are read as bytes, as before: their head is no JSON, nor their whole line.
        rollouts.retain(|r| r.path.extension().is_some_and(|e| e == "jsonl"));
        for r in &rollouts {
            let line = first_line(&r.path).unwrap();
            assert!(line.len() > META_HEAD, "{}: a first line longer than the head", r.path.display());
            let whole = meta_of(Some(&line), &r.thread);
            let head = meta_in_head(&line[..META_HEAD], &r.thread).expect("the head says enough");
            assert_eq!(head.root, whole.root, "{}", r.path.display());
            if whole.root == r.thread {
                assert_eq!(head.cwd, whole.cwd, "{}", r.path.display());
            } else {
                children += 1;
            }
            let opened = open_meta(r);
            assert_eq!((opened.root, opened.cwd), (head.root, head.cwd));
        }
        assert!(children > 0, "children among them");
    }

    /// A head that does not say enough is no answer: the whole line is read.
    #[test]
    fn a_head_that_says_too_little_is_no_answer() {
        let pad = "x".repeat(META_HEAD);
        let cases = [
            // The cwd after the instructions, for the root's own thread.
            format!(r#"{{"type":"session_meta","payload":{{"session_id":"t1","text":"{pad}","cwd":"/w"}}}}"#),
            // No session_id before the cut: its parent or id may stand in only once it is known absent.
            format!(r#"{{"type":"session_meta","payload":{{"id":"t1","text":"{pad}"}}}}"#),
            // A session_id of another type makes the whole line unreadable as a meta.
            format!(r#"{{"type":"session_meta","payload":{{"session_id":7,"cwd":"/w","text":"{pad}"}}}}"#),
            // Not a session_meta, or the payload before the type.
            format!(r#"{{"type":"response_item","payload":{{"session_id":"s","cwd":"/w","text":"{pad}"}}}}"#),
            format!(r#"{{"payload":{{"session_id":"s","cwd":"/w","text":"{pad}"}},"type":"session_meta"}}"#),
            format!(r#"{{"type":"session_meta","text":"{pad}","payload":{{"session_id":"s","cwd":"/w"}}}}"#),
        ];
        for line in &cases {
            assert!(meta_in_head(&line.as_bytes()[..META_HEAD], "t1").is_none(), "{}", &line[..120]);
        }
        let child = format!(r#"{{"type":"session_meta","payload":{{"session_id":"root","text":"{pad}","cwd":"/w"}}}}"#);
        let opened = meta_in_head(&child.as_bytes()[..META_HEAD], "t1").expect("a child's session");
        assert_eq!((opened.root.as_str(), opened.cwd), ("root", None));
        let escaped = format!(
            r#"{{ "type" : "session_meta" , "payload" : {{ "session_id" : "t\u0031", "cwd" : "/h\"w" , "text":"{pad}"}}}}"#
        );
        let opened = meta_in_head(&escaped.as_bytes()[..META_HEAD], "t1").expect("spaces and escapes");
        assert_eq!((opened.root.as_str(), opened.cwd.as_deref()), ("t1", Some("/h\"w")));
    }
}
