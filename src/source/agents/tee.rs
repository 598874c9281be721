//! `swarmtop tee`, the proxy that carries another agent's stream: its sockets (only those the user
//! owns are trusted) in the user's runtime folder, the pid in the socket's name, and its history
//! read once (header, records, up to the `live` marker). A session behind a tee is listed as the
//! agent its stream speaks (`census::tee_agent`), or as the tee's command when it says nothing yet.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Agent, Control, Env, Reported, Spend, Tools};
use crate::source::socket;

pub static AGENT: Agent = Agent {
    name: "tee",
    // Its sessions are its sockets' streams, found in [`dir`]; it keeps no files to list.
    place: None,
    runner: None,
    store: None,
    live: None,
    // The agent's own request, injected into the stream the tee carries (for the issue that acts).
    // What a tee carries is acted on as its agent is (the format of its traffic says which).
    control: Control::NONE,
    spend: Spend { provider: None, reported: Reported::Tokens, tools: Tools::DEFAULT },
    lowers: &[],
    spawned_via: &[],
};

/// The folder running tees publish their sockets in: `$XDG_RUNTIME_DIR/swarmtop`, else
/// `/tmp/swarmtop-<uid>`.
pub fn dir(env: &Env) -> PathBuf {
    socket::lookup_dir_in(env.path("XDG_RUNTIME_DIR"))
}

/// Longest wait for a tee to send its history.
pub const HISTORY_TIMEOUT: Duration = Duration::from_secs(3);
/// Most history bytes taken from one tee (a session's recording; beyond it the rest is dropped
/// and the read reports itself partial).
pub const HISTORY_MAX: usize = 512 << 20;

/// A tee found running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tee {
    pub socket: PathBuf,
    /// From `tee-<pid>.sock`.
    pub pid: Option<u32>,
}

/// The tees whose sockets pass the one trust rule of [`socket::list`] (folder and socket ours
/// and private, the listening process ours by `SO_PEERCRED`).
pub fn running_in(dir: &Path) -> Vec<Tee> {
    socket::list(dir)
        .map(|l| l.found)
        .unwrap_or_default()
        .into_iter()
        .map(|f| Tee { pid: pid_of(&f.path), socket: f.path })
        .collect()
}

fn pid_of(path: &Path) -> Option<u32> {
    path.file_name()?.to_str()?.strip_prefix("tee-")?.strip_suffix(".sock")?.parse().ok()
}

/// What a tee sent before going live.
#[derive(Debug, Default)]
pub struct History {
    /// Whole records (header first), each ending in `\n`.
    pub records: Vec<u8>,
    /// `startedMs` of the recording header.
    pub started_ms: Option<i64>,
    /// The command had exited already (the tee's `end` marker).
    pub exit_code: Option<i32>,
    /// The history did not arrive whole (timeout, size bound, or the connection broke).
    pub partial: bool,
    /// The proxied command line, from the header (unsanitised).
    pub command: Vec<String>,
}

#[derive(Deserialize)]
struct Marker {
    swarmtop: String,
    #[serde(rename = "startedMs")]
    started_ms: Option<i64>,
    #[serde(rename = "exitCode")]
    exit_code: Option<i64>,
    command: Option<Vec<String>>,
}

/// Connects and reads the history, until `live`, `end`, the connection closing or `timeout`.
pub fn history(path: &Path, timeout: Duration) -> io::Result<History> {
    let mut stream = UnixStream::connect(path)?;
    // The socket may have been replaced since it was listed: the peer is checked on this connection.
    socket::check_peer(&stream)?;
    let deadline = Instant::now() + timeout;
    let mut out = History::default();
    let mut buf = vec![0u8; 256 << 10];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || out.records.len() > HISTORY_MAX {
            out.partial = true;
            return Ok(out);
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut buf) {
            Ok(0) => {
                out.partial = out.exit_code.is_none();
                return Ok(out);
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted) => continue,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                out.partial = true;
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        pending.extend_from_slice(&buf[..n]);
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &pending[start..]) {
            let line = &pending[start..start + i];
            start += i + 1;
            if line.starts_with(b"{\"swarmtop\":") {
                if let Ok(marker) = serde_json::from_slice::<Marker>(line) {
                    match marker.swarmtop.as_str() {
                        "live" => return Ok(out),
                        "end" => {
                            // A hostile number saturates rather than wraps into another status.
                            let code = marker.exit_code.unwrap_or(0).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
                            out.exit_code = Some(i32::try_from(code).unwrap_or_default());
                            return Ok(out);
                        }
                        "recording" => {
                            out.started_ms = marker.started_ms;
                            out.command = marker.command.unwrap_or_default();
                        }
                        _ => {}
                    }
                    if marker.swarmtop != "recording" {
                        continue;
                    }
                }
            }
            out.records.extend_from_slice(line);
            out.records.push(b'\n');
        }
        pending.drain(..start);
    }
}
