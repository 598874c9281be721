//! A whole session stopped by a signal to the process that runs it, for any agent: `SIGINT` (what
//! Ctrl-C in its terminal sends: Claude Code `-p` writes its interrupt down and exits), then
//! `SIGTERM` after a grace. Only a process of our own user is signalled, and only the one that was
//! found: a pid reused in between (another start time) is left alone.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::source::proc::Proc;

/// How often a signalled process is looked at.
const POLL: Duration = Duration::from_millis(50);

/// Which signal ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Interrupt,
    Terminate,
}

impl Ended {
    pub fn signal(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// The real user id of `pid`, from its `status`.
fn owner(proc: &Proc, pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(proc.dir(pid).join("status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Uid:")?.split_whitespace().next()?.parse().ok())
}

/// Whether the process that started at `start_ticks` is gone (exited, a zombie, or its pid reused).
fn gone(proc: &Proc, pid: u32, start_ticks: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(proc.dir(pid).join("stat")) else { return true };
    let zombie = stat.rfind(')').and_then(|i| stat.get(i + 2..i + 3)) == Some("Z");
    zombie || proc.process(pid).is_none_or(|p| p.start_ticks != start_ticks)
}

/// Signals `pid` to stop and waits, `grace` per signal, until it has.
pub fn stop(proc: &Proc, pid: u32, grace: Duration) -> Result<Ended, String> {
    let me = nix::unistd::getuid().as_raw();
    match owner(proc, pid) {
        None => return Err(format!("process {pid} is not running")),
        Some(uid) if uid != me => return Err(format!("process {pid} belongs to another user (uid {uid})")),
        Some(_) => {}
    }
    let start = proc.process(pid).ok_or_else(|| format!("process {pid} is not running"))?.start_ticks;
    let target = Pid::from_raw(i32::try_from(pid).map_err(|_| format!("no such process {pid}"))?);
    for (signal, ended) in [(Signal::SIGINT, Ended::Interrupt), (Signal::SIGTERM, Ended::Terminate)] {
        if gone(proc, pid, start) {
            return Ok(ended);
        }
        kill(target, signal).map_err(|e| format!("{signal} to {pid}: {e}"))?;
        let since = Instant::now();
        while since.elapsed() < grace {
            if gone(proc, pid, start) {
                return Ok(ended);
            }
            std::thread::sleep(POLL);
        }
    }
    if gone(proc, pid, start) {
        return Ok(Ended::Terminate);
    }
    Err(format!("process {pid} still runs after SIGINT and SIGTERM ({} s apart)", grace.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(script: &str) -> std::process::Child {
        let child = std::process::Command::new("sh").args(["-c", script]).spawn().expect("sh");
        // Until the shell has set its trap and become `sleep`.
        std::thread::sleep(Duration::from_millis(300));
        child
    }

    #[test]
    fn sigint_stops_what_listens_and_sigterm_what_does_not() {
        let proc = Proc::default();
        let mut plain = sleeper("exec sleep 30");
        assert_eq!(stop(&proc, plain.id(), Duration::from_secs(5)), Ok(Ended::Interrupt));
        let _ = plain.wait();
        let mut deaf = sleeper("trap '' INT; exec sleep 30");
        assert_eq!(stop(&proc, deaf.id(), Duration::from_millis(300)), Ok(Ended::Terminate));
        let _ = deaf.wait();
        assert_eq!(
            stop(&proc, deaf.id(), Duration::from_millis(10)),
            Err(format!("process {} is not running", deaf.id()))
        );
    }
}
