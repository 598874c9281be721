//! The monitor's interrupt keys (`i`, `I`), carried out off the screen's thread: what carries the
//! selected agent is found as `swarmtop interrupt` finds it (a tee of ours, an agent server, the
//! session's process), what stopping it takes is shown in the dialog, and only on `y` is it done —
//! found again then, since the swarm moved on while the question was open. Each answer goes back
//! to the screen that asked, tagged with its dialog's number.

use std::time::Duration;

use tokio::sync::mpsc;

use super::cli::InterruptArgs;
use super::interrupt::{self, Carrier};
use crate::pipeline::Config;
use crate::ui::acting::{Answer, Ask, Reply};
use crate::wire::sanitize_line;

/// Who acts, as the act is recorded.
pub const BY_MONITOR: &str = "swarmtop monitor";
/// How long the agents have to confirm they stopped (as `interrupt --timeout`'s default).
const TIMEOUT: Duration = Duration::from_secs(30);
/// A whole session's process: SIGINT, then SIGTERM after this (as `interrupt --grace`'s default).
const GRACE: Duration = Duration::from_secs(5);

/// An answer for the screen at `depth` (0: the first).
pub type Answered = (usize, Reply);

/// Runs the screens' asks, each on a thread of its own.
pub struct Acts {
    config: Config,
    tx: mpsc::Sender<Answered>,
    /// Why nothing can be acted on from this screen (a server's machine view: its agents run there).
    elsewhere: Option<String>,
}

impl Acts {
    pub fn new(config: Config) -> (Self, mpsc::Receiver<Answered>) {
        let (tx, rx) = mpsc::channel(4);
        (Self { config, tx, elsewhere: None }, rx)
    }

    /// Every ask answered at once with `why` it cannot be done from here.
    #[must_use]
    pub fn elsewhere(self, why: String) -> Self {
        Self { elsewhere: Some(why), ..self }
    }

    /// Finds what stopping `ask`'s agent takes (`stop`: does it), for the screen at `depth`.
    pub fn start(&self, depth: usize, ask: &Ask, stop: bool) {
        let seq = ask.seq;
        if let Some(why) = &self.elsewhere {
            let answer = if stop { Answer::Done(Err(why.clone())) } else { Answer::Planned(Err(why.clone())) };
            let _ = self.tx.try_send((depth, Reply { seq, answer }));
            return;
        }
        let (config, tx, ask) = (self.config.clone(), self.tx.clone(), ask.clone());
        let spawned = std::thread::Builder::new().name("swarmtop-act".into()).spawn(move || {
            let answer = answer(&ask, config, stop);
            // The screen may be gone: then nobody waits for it.
            let _ = tx.blocking_send((depth, Reply { seq, answer }));
        });
        if let Err(e) = spawned {
            let fail = format!("cannot start a thread: {e}");
            let answer = if stop { Answer::Done(Err(fail)) } else { Answer::Planned(Err(fail)) };
            let _ = self.tx.try_send((depth, Reply { seq, answer }));
        }
    }
}

fn args(ask: &Ask) -> InterruptArgs {
    InterruptArgs {
        target: ask.target.clone(),
        subtree: ask.subtree,
        socket: None,
        server: None,
        timeout: TIMEOUT,
        grace: GRACE,
        yes: true,
    }
}

/// What the dialog is told: the plan, or how the stop went.
fn answer(ask: &Ask, config: Config, stop: bool) -> Answer {
    let said = |e: &color_eyre::Report| sanitize_line(&e.to_string()).to_string();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let fail = format!("cannot start: {e}");
            return if stop { Answer::Done(Err(fail)) } else { Answer::Planned(Err(fail)) };
        }
    };
    runtime.block_on(async {
        let args = args(ask);
        let carrier: Carrier = match interrupt::locate(&args, config).await {
            Ok(c) => c,
            Err(e) if stop => return Answer::Done(Err(said(&e))),
            Err(e) => return Answer::Planned(Err(said(&e))),
        };
        if !stop {
            return Answer::Planned(interrupt::plan(&args, &carrier).map_err(|e| said(&e)));
        }
        let mut done = Vec::new();
        let carried = interrupt::carry(&args, carrier, BY_MONITOR, &mut |line| done.push(line)).await;
        Answer::Done(match carried {
            Ok(()) => Ok(done),
            Err(e) if done.is_empty() => Err(said(&e)),
            Err(e) => Err(format!("{} (after: {})", said(&e), done.join("; "))),
        })
    })
}
