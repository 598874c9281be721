//! Notifying beside a running monitor: a look at the model whenever it changed (and once a second,
//! for what time alone changes: stalls), the notices told through the outlet.

use std::time::{Duration, Instant};

use super::Watch;
use super::deliver::{Osc, Outlet};
use crate::model::Model;
use crate::ui::status::Clock;
use crate::ui::{Feed, NotifyFeed};

/// How often the model is looked at again when nothing changed in it.
const QUIET_LOOK: Duration = Duration::from_secs(1);

pub struct Notifier {
    watch: Watch,
    outlet: Outlet,
    started: Instant,
    /// The model generation and the time of the last look.
    looked: Option<(u64, Instant)>,
}

impl Notifier {
    /// As the command line asks (`terminal`: `--notify`; `command`: `--notify-cmd`); `None` when
    /// it asks for neither. The terminal is described by the process's environment.
    pub fn new(terminal: bool, command: Option<String>, source: &str) -> std::io::Result<Option<Self>> {
        if !terminal && command.is_none() {
            return Ok(None);
        }
        let term = std::env::var("TERM").ok();
        let osc = Osc::of_env(term.as_deref(), std::env::var_os("VTE_VERSION").is_some());
        let tmux = std::env::var_os("TMUX").is_some_and(|v| !v.is_empty());
        let outlet = Outlet::new(terminal.then_some((osc, tmux)), command, source.to_owned())?;
        Ok(Some(Self { watch: Watch::default(), outlet, started: Instant::now(), looked: None }))
    }

    /// Looks at the model if it changed or a second passed, and tells what is new; the terminal's
    /// part is written to `out`.
    pub fn look(&mut self, model: &Model, feed: &Feed, now: Instant, out: &mut impl std::io::Write) {
        let due = self.looked.is_none_or(|(generation, at)| {
            generation != model.generation || now.saturating_duration_since(at) >= QUIET_LOOK
        });
        if !due {
            return;
        }
        self.looked = Some((model.generation, now));
        let clock = Clock { now_ms: feed.now_ms, stall_ms: feed.stall_ms, ended: feed.ended.is_some() };
        let notices = self.watch.observe(model, clock);
        if !notices.is_empty() {
            let ms = u64::try_from(now.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX);
            self.outlet.tell(notices, ms, out);
        }
    }

    /// Its counters, for the diagnostics view.
    pub fn feed(&self) -> NotifyFeed {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.outlet.counters;
        let to = match (self.outlet.terminal.is_some(), self.outlet.has_command()) {
            (true, true) => "terminal and --notify-cmd",
            (true, false) => "terminal (bell, desktop notification)",
            _ => "--notify-cmd",
        };
        NotifyFeed {
            to: to.to_owned(),
            notices: c.notices.load(Relaxed),
            limited: c.limited.load(Relaxed),
            ran: c.ran.load(Relaxed),
            failed: c.failed.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
            cause: c.last_failure.lock().ok().and_then(|l| l.clone()),
        }
    }
}
