//! Which Codex process runs a session, from what the real 0.171.0 interactive CLI shows (run
//! offline in tmux against the mock, quit with `/quit` while idle and while a turn ran):
//! - The TUI is a client of an app-server daemon (`codex app-server --listen unix://
//!   --managed-daemon`, started by the first TUI, its pid in `$CODEX_HOME/app-server-daemon/
//!   daemon.pid`). The **daemon** holds the rollouts of every thread it has loaded, and keeps them
//!   open after the TUI quits ("Disconnected from this task. Any running work continues."): it
//!   outlives the TUI and never unloads the thread. The TUI holds no rollout.
//! - So a rollout held by such a host says the thread is loaded, not that anyone runs it. It runs
//!   while a TUI runs it (its working directory is the session's project; `codex resume <id>`
//!   names it), or while the daemon works on a turn nobody watches (the rollout's last turn has
//!   begun and not ended: a turn left running at `/quit` goes on and ends `task_complete`).
//! - `codex --no-daemon`, `codex exec` and a stdio `codex app-server` hold their own rollouts
//!   and exit with their session: holding is running there.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Claim, Running};
use crate::source::proc::{Proc, Walk};
use crate::source::regular;

/// Bytes read from a rollout's end to find its last turn boundary. A turn whose start lies
/// further back is one still under way (its items fill the tail): counted as at work.
pub const TAIL_MAX: u64 = 256 << 10;

/// Subcommands of `codex` that run no interactive session (0.171.0's `codex --help`); `resume`
/// and `fork` are the TUI's own.
const NOT_TUI: &[&str] = &[
    "agents",
    "exec",
    "e",
    "review",
    "login",
    "logout",
    "mcp",
    "mcp-server",
    "plugin",
    "app-server",
    "remote-control",
    "completion",
    "update",
    "doctor",
    "sandbox",
    "debug",
    "apply",
    "a",
    "queue",
    "archive",
    "delete",
    "migrate-rollouts",
    "migrate-nfs-db",
    "unarchive",
    "cloud",
    "exec-server",
    "features",
    "help",
];

/// Options of the TUI that take a value (the value is not the subcommand or prompt).
const VALUED: &[&str] = &[
    "-c",
    "--config",
    "--enable",
    "--disable",
    "--remote",
    "--remote-auth-token-env",
    "-i",
    "--image",
    "-m",
    "--model",
    "--local-provider",
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-C",
    "--cd",
    "--add-dir",
    "-a",
    "--ask-for-approval",
];

/// What a TUI's command line says it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tui {
    /// `codex resume <uuid>`.
    pub session: Option<String>,
    /// `-C DIR` / `--cd DIR`: the project, when not the process's working directory.
    pub cd: Option<PathBuf>,
}

fn is_codex(program: &str) -> bool {
    Path::new(program).file_name().is_some_and(|n| n == "codex")
}

/// The interactive CLI's command line, read: `codex [OPTIONS] [PROMPT]`, `codex resume [ID]`,
/// `codex fork [ID]`.
pub fn tui(args: &[String]) -> Option<Tui> {
    if !args.first().is_some_and(|a| is_codex(a)) {
        return None;
    }
    let mut cd = None;
    let mut positional = Vec::new();
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        if arg == "--" {
            positional.extend(it.by_ref());
            break;
        }
        if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            if flag == "--cd" {
                cd = Some(PathBuf::from(value));
            }
            continue;
        }
        if VALUED.contains(&arg.as_str()) {
            let value = it.next();
            if matches!(arg.as_str(), "-C" | "--cd") {
                cd = value.map(PathBuf::from);
            }
            continue;
        }
        if !arg.starts_with('-') {
            positional.push(arg);
        }
    }
    let session = match positional.first().map(|s| s.as_str()) {
        Some(sub) if NOT_TUI.contains(&sub) => return None,
        Some("resume") => positional.get(1).filter(|id| is_uuid(id)).map(|id| (*id).clone()),
        _ => None,
    };
    Some(Tui { session, cd })
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The running interactive CLIs and what they run (as `agent`'s).
pub fn running(agent: &'static str, proc: &Proc, walk: &Walk) -> Vec<Running> {
    let mut out = Vec::new();
    for process in &walk.processes {
        let Some(args) = walk.command_line(proc, process.pid) else { continue };
        let Some(tui) = tui(&args) else { continue };
        let claim = if let Some(id) = tui.session {
            Claim::Session(id)
        } else {
            let Some(cwd) = proc.cwd(process.pid) else { continue };
            Claim::Project(match tui.cd {
                Some(cd) => crate::source::proc::canonical(&cwd.join(cd)),
                None => cwd,
            })
        };
        out.push(Running { agent, pid: process.pid, claim, started: proc.started_at(process) });
    }
    out
}

/// Whether a command line is an app-server that serves clients over a socket (the TUI's managed
/// daemon, or one listening on a socket of the user's): it outlives them and keeps their threads
/// loaded. A stdio app-server ends with its one client.
pub fn is_host(args: &[String]) -> bool {
    if !args.first().is_some_and(|a| is_codex(a)) || !args.iter().any(|a| a == "app-server") {
        return false;
    }
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let listen = match arg.split_once('=') {
            Some(("--listen", value)) => Some(value),
            _ if arg == "--listen" => it.next().map(String::as_str),
            _ => None,
        };
        if arg == "--managed-daemon" || listen.is_some_and(|l| l != "stdio://" && l != "off") {
            return true;
        }
    }
    false
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
    #[serde(borrow)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a str>,
}

/// Whether a rollout's last turn has begun and not ended (`task_started` after the last
/// `task_complete` / `turn_aborted`), read from its last [`TAIL_MAX`] bytes.
pub fn at_work(path: &Path) -> bool {
    let Ok(mut file) = regular::open(path) else { return false };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return false };
    let start = len.saturating_sub(TAIL_MAX);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return false;
    }
    let mut tail = Vec::new();
    if file.take(TAIL_MAX).read_to_end(&mut tail).is_err() {
        return false;
    }
    turn_open(&tail, start > 0)
}

/// The tail's verdict; `cut`: the tail does not start at the file's start (its first line is
/// partial, and a boundary may lie before it).
fn turn_open(tail: &[u8], cut: bool) -> bool {
    let mut lines = tail.split(|&b| b == b'\n');
    if cut {
        lines.next();
    }
    let lines: Vec<&[u8]> = lines.collect();
    for line in lines.into_iter().rev() {
        if memchr::memmem::find(line, b"\"event_msg\"").is_none() {
            continue;
        }
        let Ok(parsed) = serde_json::from_slice::<Line<'_>>(line) else { continue };
        if parsed.kind != Some("event_msg") {
            continue;
        }
        match parsed.payload.and_then(|p| p.kind) {
            Some("task_started") => return true,
            Some("task_complete" | "turn_aborted") => return false,
            _ => {}
        }
    }
    // No boundary in view: a cut tail is the middle of a long turn; a whole file never began one.
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_interactive_cli_is_told_from_its_subcommands() {
        let bin = "/x/vendor/x86_64-unknown-linux-musl/bin/codex";
        assert_eq!(tui(&args(bin)), Some(Tui { session: None, cd: None }));
        assert_eq!(tui(&args(&format!("{bin} -m gpt-5.5 fix the build"))), Some(Tui { session: None, cd: None }));
        assert_eq!(
            tui(&args(&format!("{bin} resume 01a23344-0128-7f70-b9d1-c58ef1c65e4b"))),
            Some(Tui { session: Some("01a23344-0128-7f70-b9d1-c58ef1c65e4b".into()), cd: None })
        );
        assert_eq!(tui(&args(&format!("{bin} resume --last"))), Some(Tui { session: None, cd: None }));
        assert_eq!(tui(&args(&format!("{bin} -C /p/q"))), Some(Tui { session: None, cd: Some("/p/q".into()) }));
        // A value is not the subcommand.
        assert_eq!(tui(&args(&format!("{bin} -m exec"))), Some(Tui { session: None, cd: None }));
        for not in ["exec say hi", "e hi", "app-server --listen unix://", "app-server daemon pid-update-loop", "login"]
        {
            assert_eq!(tui(&args(&format!("{bin} {not}"))), None, "{not}");
        }
        assert_eq!(tui(&args("/usr/bin/node /x/bin/codex.js")), None);
    }

    #[test]
    fn only_an_app_server_on_a_socket_outlives_its_clients() {
        let daemon = "/h/packages/app-server-daemon/releases/0.171.0/bin/codex app-server --listen unix:// --analytics-default-enabled --managed-daemon";
        assert!(is_host(&args(daemon)));
        assert!(is_host(&args("codex app-server --listen ws://127.0.0.1:4500")));
        assert!(is_host(&args("codex app-server --listen=unix:///tmp/s")));
        assert!(!is_host(&args("codex app-server")));
        assert!(!is_host(&args("codex app-server --listen stdio://")));
        assert!(!is_host(&args("codex exec --json hi")));
        assert!(!is_host(&args("codex")));
    }

    const STARTED: &str = r#"{"timestamp":"2026-12-01T20:21:52.700Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#;
    const ITEM: &str = r#"{"timestamp":"2026-12-01T20:21:53.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"\"event_msg\" task_complete"}]}}"#;
    const USAGE: &str =
        r#"{"timestamp":"2026-12-01T20:21:53.100Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#;
    const COMPLETE: &str = r#"{"timestamp":"2026-12-01T20:22:00.811Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}}"#;
    const ABORTED: &str = r#"{"timestamp":"2026-12-01T20:22:00.811Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}"#;

    fn tail(lines: &[&str]) -> Vec<u8> {
        lines.iter().flat_map(|l| l.bytes().chain([b'\n'])).collect()
    }

    #[test]
    fn a_turn_is_under_way_from_its_task_started_until_it_completes_or_aborts() {
        assert!(turn_open(&tail(&[STARTED, ITEM, USAGE]), false));
        assert!(!turn_open(&tail(&[STARTED, ITEM, USAGE, COMPLETE]), false));
        assert!(!turn_open(&tail(&[STARTED, ABORTED]), false));
        assert!(turn_open(&tail(&[STARTED, COMPLETE, STARTED, ITEM]), false));
        // A message quoting the words is no boundary.
        assert!(!turn_open(&tail(&[STARTED, COMPLETE, ITEM]), false));
    }

    #[test]
    fn a_tail_cut_mid_turn_is_at_work_and_its_partial_first_line_is_not_read() {
        let whole = tail(&[STARTED, ITEM, ITEM]);
        assert!(turn_open(&whole[10..], true));
        // The cut first piece would parse as a completion if it were read.
        let cut = tail(&[COMPLETE, ITEM]);
        assert!(turn_open(&cut, true));
        assert!(!turn_open(&tail(&[ITEM]), false));
    }
}
