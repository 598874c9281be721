//! Where live sockets live (`recording.md`, "Live socket protocol"), binding them privately, and
//! finding the running ones.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio::net::UnixListener;

/// `$XDG_RUNTIME_DIR/swarmtop` (else `/tmp/swarmtop-<uid>`), created mode 0700.
pub fn default_dir() -> io::Result<PathBuf> {
    let dir = lookup_dir();
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// The directory without creating it (listing must not leave directories behind).
pub fn lookup_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map_or_else(|| PathBuf::from(format!("/tmp/swarmtop-{}", nix::unistd::getuid())), |p| p.join("swarmtop"))
}

/// `<dir>/<kind>-<pid>.sock`.
pub fn default_path(kind: &str) -> io::Result<PathBuf> {
    Ok(default_dir()?.join(format!("{kind}-{}.sock", std::process::id())))
}

/// Creates `dir` mode 0700, or checks an existing one: in a shared `/tmp` another user could have
/// made it first and would then see (or replace) our sockets.
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a directory", dir.display())));
    }
    if meta.uid() != nix::unistd::getuid().as_raw() {
        return Err(io::Error::other(format!("{} belongs to another user", dir.display())));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// What is behind a socket path.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe {
    /// Something accepts connections.
    Live,
    /// A socket file nobody listens on (its owner died without removing it).
    Stale,
    Missing,
    Unusable(String),
}

pub fn probe(path: &Path) -> Probe {
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Probe::Live,
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Probe::Stale,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Probe::Missing,
        Err(e) => Probe::Unusable(e.to_string()),
    }
}

/// Binds `path` (parent created 0700 when it is ours to create), replacing a stale socket, and
/// makes the socket 0600. Must run inside a tokio runtime.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
    }
    match probe(path) {
        Probe::Live => {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{} is in use by another process", path.display()),
            ));
        }
        Probe::Stale => fs::remove_file(path)?,
        Probe::Missing | Probe::Unusable(_) => {}
    }
    let listener = UnixListener::bind(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Removes the socket file when the server stops.
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl SocketFile {
    pub fn new(path: PathBuf) -> Self {
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// A running tee found in the socket directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub modified: SystemTime,
}

/// The live tee sockets in `dir`, newest first; stale ones are removed on the way. `listen`
/// sockets are skipped: they accept producers and never send anything to a monitor.
pub fn list(dir: &Path) -> Vec<Found> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".sock") || name.starts_with("listen-") {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
            continue;
        }
        match probe(&path) {
            Probe::Live => found.push(Found { path, modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH) }),
            Probe::Stale => {
                let _ = fs::remove_file(&path);
            }
            Probe::Missing | Probe::Unusable(_) => {}
        }
    }
    found.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    found
}
