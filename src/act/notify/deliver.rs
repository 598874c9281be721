//! How a notice reaches the person: the terminal's bell and a desktop notification (OSC 9, or
//! OSC 777 where the terminal takes that one instead), and the user's `--notify-cmd`, run with the
//! notice as JSON on stdin. The command runs on a thread of its own, one at a time, each for at most
//! [`COMMAND_TIMEOUT`], from a queue of [`QUEUE`]: the screen never waits for it, and what does
//! not fit, fails or hangs is counted, never lost silently.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use super::Notice;
use super::limit::Limiter;
use crate::wire::{Clean, sanitize_line};

/// Notices waiting for the command at most; one more is dropped (and counted).
pub const QUEUE: usize = 16;
/// How long one run of the command may take before it is killed (and counted as failed).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest text put in a desktop notification (terminals cut or refuse long ones).
const BODY_MAX: usize = 200;

/// Which desktop notification the terminal understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Osc {
    /// `ESC ] 9 ; text BEL`: iTerm2, WezTerm, kitty, Ghostty, Windows Terminal.
    Nine,
    /// `ESC ] 777 ; notify ; title ; body BEL`: rxvt-unicode, foot, VTE terminals.
    SevenSevenSeven,
}

impl Osc {
    /// From the terminal's variables (`TERM`, `VTE_VERSION`): OSC 777 only where a terminal is
    /// known to want it, so that one notice makes one pop-up.
    pub fn of_env(term: Option<&str>, vte: bool) -> Self {
        let term = term.unwrap_or_default();
        if vte || term.starts_with("rxvt") || term.starts_with("foot") { Self::SevenSevenSeven } else { Self::Nine }
    }
}

/// Text fit for a terminal's string sequence: no control characters (a BEL or ESC would end it or
/// start another) and, for OSC 777, no `;` (its separator).
fn osc_text(s: &str, max: usize) -> String {
    let clean: String = s.chars().map(|c| if c.is_control() || c == ';' { ' ' } else { c }).take(max).collect();
    clean.trim().to_owned()
}

/// The bytes that ring the bell and raise a desktop notification; inside tmux (`tmux`), the
/// notification is wrapped for its passthrough, which hands it to the outer terminal.
pub fn terminal_bytes(notice: &Notice, osc: Osc, tmux: bool) -> Vec<u8> {
    let title = osc_text(&format!("swarmtop: {}", notice.title()), BODY_MAX);
    let body = osc_text(&notice.detail, BODY_MAX);
    let seq = match osc {
        Osc::Nine if body.is_empty() => format!("\x1b]9;{title}\x07"),
        Osc::Nine => format!("\x1b]9;{title}: {body}\x07"),
        Osc::SevenSevenSeven => format!("\x1b]777;notify;{title};{body}\x07"),
    };
    let seq = if tmux { format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b")) } else { seq };
    let mut bytes = b"\x07".to_vec();
    bytes.extend_from_slice(seq.as_bytes());
    bytes
}

/// What notifying has done, for the diagnostics view.
#[derive(Debug, Default)]
pub struct Counters {
    /// Notices decided.
    pub notices: AtomicU64,
    /// Held back by the rate limit.
    pub limited: AtomicU64,
    /// Runs of the command that exited 0.
    pub ran: AtomicU64,
    /// Runs that could not start, exited non-zero or were killed at the timeout.
    pub failed: AtomicU64,
    /// Notices the command's queue had no room for.
    pub dropped: AtomicU64,
    /// Why the last failed run failed.
    pub last_failure: std::sync::Mutex<Option<Clean>>,
}

/// Where notices go, as the command line asked.
pub struct Outlet {
    /// Ring and raise on the terminal (`--notify`): which sequence, and whether inside tmux.
    pub terminal: Option<(Osc, bool)>,
    command: Option<SyncSender<String>>,
    pub counters: Arc<Counters>,
    limiter: Limiter,
    /// What the monitor watches, as the JSON's `source`.
    source: String,
}

impl Outlet {
    /// `terminal`: `--notify`; `command`: `--notify-cmd` (a shell command line).
    pub fn new(terminal: Option<(Osc, bool)>, command: Option<String>, source: String) -> std::io::Result<Self> {
        let counters = Arc::new(Counters::default());
        let command = match command {
            Some(cmd) => {
                let (tx, rx) = sync_channel(QUEUE);
                let c = Arc::clone(&counters);
                std::thread::Builder::new().name("swarmtop-notify".into()).spawn(move || runner(&cmd, &rx, &c))?;
                Some(tx)
            }
            None => None,
        };
        Ok(Self { terminal, command, counters, limiter: Limiter::default(), source })
    }

    /// Whether notices go to a command too.
    pub fn has_command(&self) -> bool {
        self.command.is_some()
    }

    /// Tells each notice (as the rate limit lets), writing the terminal's part into `out`;
    /// `now_ms`: a monotonic clock in ms.
    pub fn tell(&mut self, notices: Vec<Notice>, now_ms: u64, out: &mut impl std::io::Write) {
        for notice in notices {
            self.counters.notices.fetch_add(1, Relaxed);
            let Some(suppressed) = self.limiter.admit(now_ms) else {
                self.counters.limited.fetch_add(1, Relaxed);
                continue;
            };
            if let Some((osc, tmux)) = self.terminal {
                // A terminal that cannot be written to has gone; the screen finds out on its own.
                let _ = out.write_all(&terminal_bytes(&notice, osc, tmux));
                let _ = out.flush();
            }
            if let Some(tx) = &self.command {
                let line = notice.json(&self.source, suppressed).to_string();
                match tx.try_send(line) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        self.counters.dropped.fetch_add(1, Relaxed);
                    }
                }
            }
        }
    }
}

/// Runs the command once per notice, in order, until the monitor goes.
fn runner(cmd: &str, rx: &Receiver<String>, counters: &Counters) {
    while let Ok(json) = rx.recv() {
        match run_once(cmd, &json) {
            Ok(()) => {
                counters.ran.fetch_add(1, Relaxed);
            }
            Err(why) => {
                counters.failed.fetch_add(1, Relaxed);
                tracing::warn!(%why, "--notify-cmd failed");
                if let Ok(mut last) = counters.last_failure.lock() {
                    *last = Some(sanitize_line(&why));
                }
            }
        }
    }
}

/// One run: `sh -c CMD`, the JSON and a newline on stdin, its output thrown away (the screen is
/// the monitor's).
fn run_once(cmd: &str, json: &str) -> Result<(), String> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is not a failure.
        let _ = stdin.write_all(json.as_bytes()).and_then(|()| stdin.write_all(b"\n"));
    }
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("exited with {status}")),
            Ok(None) if started.elapsed() >= COMMAND_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {} s", COMMAND_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for it: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::*;

    fn notice(agent: &str, detail: &str) -> Notice {
        Notice {
            kind: Kind::Failed,
            session: "s".into(),
            thread: "t".into(),
            agent: agent.into(),
            detail: detail.into(),
            at_ms: Some(1),
        }
    }

    #[test]
    fn a_notice_rings_and_raises_one_notification_with_nothing_that_ends_it_early() {
        let n = notice("docs\x07\x1b]9;evil", "high demand; try later");
        let nine = String::from_utf8(terminal_bytes(&n, Osc::Nine, false)).unwrap();
        assert_eq!(nine, "\x07\x1b]9;swarmtop: docs  ]9 evil failed: high demand  try later\x07");
        let seven = String::from_utf8(terminal_bytes(&notice("docs", ""), Osc::SevenSevenSeven, false)).unwrap();
        assert_eq!(seven, "\x07\x1b]777;notify;swarmtop: docs failed;\x07");
        let wrapped = String::from_utf8(terminal_bytes(&notice("docs", ""), Osc::Nine, true)).unwrap();
        assert_eq!(wrapped, "\x07\x1bPtmux;\x1b\x1b]9;swarmtop: docs failed\x07\x1b\\");
        assert_eq!(Osc::of_env(Some("rxvt-unicode-256color"), false), Osc::SevenSevenSeven);
        assert_eq!(Osc::of_env(Some("xterm-256color"), true), Osc::SevenSevenSeven);
        assert_eq!(Osc::of_env(Some("xterm-kitty"), false), Osc::Nine);
        assert_eq!(Osc::of_env(None, false), Osc::Nine);
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_command_reads_the_notice_and_its_failures_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("got");
        let cmd = format!("cat >> '{}'", file.display());
        let mut outlet = Outlet::new(None, Some(cmd), "demo".into()).unwrap();
        let mut screen = Vec::new();
        outlet.tell(vec![notice("docs", "boom")], 0, &mut screen);
        assert!(screen.is_empty(), "no --notify: nothing on the terminal");
        wait_for("the command", || outlet.counters.ran.load(Relaxed) == 1);
        let got: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(got["event"], "failed");
        assert_eq!(got["agent"], "docs");
        assert_eq!(got["message"], "boom");
        assert_eq!(got["source"], "demo");

        // A command that hangs holds up nothing but its own queue.
        let mut hanging = Outlet::new(None, Some("sleep 30".into()), "x".into()).unwrap();
        let started = Instant::now();
        hanging.tell(vec![notice("a", ""), notice("b", "")], 0, &mut screen);
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());

        let mut failing = Outlet::new(Some((Osc::Nine, false)), Some("exit 3".into()), "x".into()).unwrap();
        failing.tell(vec![notice("a", ""), notice("b", ""), notice("c", ""), notice("d", "")], 0, &mut screen);
        assert_eq!(screen.iter().filter(|&&b| b == 0x07).count(), 6, "three told (bell and OSC each), one held");
        wait_for("three failures", || failing.counters.failed.load(Relaxed) == 3);
        assert_eq!(failing.counters.limited.load(Relaxed), 1);
        assert_eq!(failing.counters.notices.load(Relaxed), 4);
        assert_eq!(
            failing.counters.last_failure.lock().unwrap().as_ref().map(Clean::as_str),
            Some("exited with exit status: 3")
        );
    }
}
