//! Every act kept in the run store (issue 23), where `history SESSION` shows it beside the
//! session's tree: an interrupt from the command or the monitor, a guard's refusal or stop. The
//! store is the user's own (`SWARMTOP_STORE`, else this machine's file, as `history` finds it).
//! A store that cannot be written leaves the act standing (it happened): the caller says so.

use crate::source::agents::Env;
use crate::source::recording;
use crate::store::rows::ActRow;
use crate::store::{Store, location};

/// One act, now.
pub fn act(kind: &str, by: &str, via: &str, session: Option<&str>, target: &str) -> ActRow {
    ActRow {
        at_ms: recording::unix_ms(),
        kind: kind.to_owned(),
        by: by.to_owned(),
        via: via.to_owned(),
        session: session.map(str::to_owned),
        target: target.to_owned(),
        detail: String::new(),
        outcome: String::new(),
    }
}

/// Keeps `act` in the user's run store; why not, when it could not.
pub fn keep(act: &ActRow) -> Result<(), String> {
    let env = Env::from_process();
    let kept = location::resolve(env.var("SWARMTOP_STORE").as_deref(), &env).and_then(|at| {
        let machine = location::machine(None, &env)?;
        Store::open_at(&at, &machine)?.backend_mut().record_act(act)
    });
    kept.map_err(|e| crate::wire::sanitize_line(&format!("{e:#}")).to_string())
}
