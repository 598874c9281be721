//! Where the store is: `--store PATH` (or `SWARMTOP_STORE`), else
//! `$XDG_DATA_HOME/swarmtop/history.db`, else `~/.local/share/swarmtop/history.db`.

use std::path::PathBuf;

use color_eyre::eyre::{Result, eyre};

use crate::source::agents::Env;

/// The store's file. A PostgreSQL URL is refused for now (issue 21 brings that backend).
pub fn resolve(explicit: Option<&str>, env: &Env) -> Result<PathBuf> {
    if let Some(given) = explicit.filter(|s| !s.is_empty()) {
        if given.starts_with("postgres://") || given.starts_with("postgresql://") {
            return Err(eyre!("a PostgreSQL run store is not supported yet: give --store a file path"));
        }
        return Ok(PathBuf::from(given));
    }
    let data = env
        .path("XDG_DATA_HOME")
        .or_else(|| Some(env.home()?.join(".local/share")))
        .ok_or_else(|| eyre!("no place for the run store: set HOME or XDG_DATA_HOME, or give --store"))?;
    Ok(data.join("swarmtop").join("history.db"))
}
