//! Where the store is, and which machine this is.
//!
//! `--store` (or `SWARMTOP_STORE`) names a file, or a PostgreSQL database (`postgres://…`, the
//! team store); without it the store is `$XDG_DATA_HOME/swarmtop/history.db`, else
//! `~/.local/share/swarmtop/history.db`. A machine's sessions are written under its name:
//! `--machine` where a command takes it, else `SWARMTOP_MACHINE`, else the host name.

use std::path::PathBuf;

use color_eyre::eyre::{Result, eyre};

use crate::source::agents::Env;
use crate::wire::sanitize_line;

/// A store: a file of this machine's, or a database many machines share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Team(String),
}

impl Location {
    /// As messages show it: a file's path; a database's URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Self::File(path) => sanitize_line(&path.display().to_string()).to_string(),
            Self::Team(url) => sanitize_line(&redact(url)).to_string(),
        }
    }
}

/// Whether `store` names a PostgreSQL database rather than a file.
pub fn is_url(store: &str) -> bool {
    store.starts_with("postgres://") || store.starts_with("postgresql://")
}

/// The URL with any password replaced (`postgres://user:***@host/db`), also one given as a
/// `password=` parameter.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = rest.find(['/', '?']).map_or((rest, ""), |i| rest.split_at(i));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail: Vec<String> = tail
        .split('&')
        .map(|part| match part.split_once("password=") {
            Some((before, _)) if before.is_empty() || before.ends_with('?') => format!("{before}password=***"),
            _ => part.to_owned(),
        })
        .collect();
    format!("{scheme}://{authority}{}", tail.join("&"))
}

/// The store `explicit` (or the default place) names.
pub fn resolve(explicit: Option<&str>, env: &Env) -> Result<Location> {
    if let Some(given) = explicit.filter(|s| !s.is_empty()) {
        if is_url(given) {
            return Ok(Location::Team(given.to_owned()));
        }
        return Ok(Location::File(PathBuf::from(given)));
    }
    local(env).map(Location::File)
}

/// This machine's own store file, whatever `--store` says (the daemon keeps it beside a team store).
pub fn local(env: &Env) -> Result<PathBuf> {
    let data = env
        .path("XDG_DATA_HOME")
        .or_else(|| Some(env.home()?.join(".local/share")))
        .ok_or_else(|| eyre!("no place for the run store: set HOME or XDG_DATA_HOME, or give --store"))?;
    Ok(data.join("swarmtop").join("history.db"))
}

/// Longest machine name kept.
const MACHINE_MAX: usize = 128;

/// This machine's name in a team store: `explicit`, else `SWARMTOP_MACHINE`, else the host name.
/// A name is one line of at most 128 bytes (what is not is cut or refused).
pub fn machine(explicit: Option<&str>, env: &Env) -> Result<String> {
    let given = explicit
        .map(str::to_owned)
        .or_else(|| env.var("SWARMTOP_MACHINE"))
        .filter(|s| !s.trim().is_empty())
        .or_else(|| nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()))
        .ok_or_else(|| eyre!("this machine has no host name: give it one with --machine or SWARMTOP_MACHINE"))?;
    let clean = sanitize_line(given.trim()).to_string();
    let mut end = clean.len().min(MACHINE_MAX);
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    let name = clean[..end].trim().to_owned();
    if name.is_empty() {
        return Err(eyre!("a machine name must have something printable in it"));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact("postgres://me:secret@db:5432/fleet"), "postgres://me:***@db:5432/fleet");
        assert_eq!(redact("postgres://me@db/fleet"), "postgres://me@db/fleet");
        assert_eq!(
            redact("postgresql://db/fleet?user=me&password=secret"),
            "postgresql://db/fleet?user=me&password=***"
        );
        assert_eq!(redact("postgres://a:b@c/d?password=x"), "postgres://a:***@c/d?password=***");
        assert_eq!(redact("postgres://a:p@ss@c/d"), "postgres://a:***@c/d");
    }

    #[test]
    fn a_machine_is_named_once_clean() {
        let env = Env::default();
        assert_eq!(machine(Some("  build-1 "), &env).unwrap(), "build-1");
        assert_eq!(machine(Some("a\nb"), &env).unwrap(), "a b");
        assert_eq!(machine(Some(&"x".repeat(300)), &env).unwrap().len(), MACHINE_MAX);
        assert!(machine(Some("\u{1b}[2J"), &env).is_err(), "nothing printable");
        assert!(!machine(None, &env).unwrap().is_empty(), "the host name");
    }
}
