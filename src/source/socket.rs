//! Where live sockets live (`recording.md`, "Live socket protocol"), binding them privately,
//! finding the running ones, and deciding whether to trust one.
//!
//! Trust is one rule, applied wherever a socket is found or a peer connects: the socket directory
//! is a real directory of ours that no one else can enter or write, the socket is a socket of ours
//! that no one else can use, and the process at the other end runs as us (`SO_PEERCRED`). In a
//! shared `/tmp` another local user could otherwise serve a fake session to our monitor, or plant
//! socket names that carry escape sequences to our terminal.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio::net::UnixListener;

use crate::wire::{Clean, sanitize_line};

/// `$XDG_RUNTIME_DIR/swarmtop` (else `/tmp/swarmtop-<uid>`), created mode 0700.
pub fn default_dir() -> io::Result<PathBuf> {
    let dir = lookup_dir();
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// The directory without creating it (listing must not leave directories behind).
pub fn lookup_dir() -> PathBuf {
    lookup_dir_in(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from))
}

/// [`lookup_dir`] for this value of `XDG_RUNTIME_DIR` (a relative one is ignored).
pub fn lookup_dir_in(runtime: Option<PathBuf>) -> PathBuf {
    runtime
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
    owned_dir(dir, &meta)?;
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn our_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

fn untrusted(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, what)
}

/// A real directory (not a link to one) that we own.
fn owned_dir(dir: &Path, meta: &fs::Metadata) -> io::Result<()> {
    if !meta.is_dir() {
        return Err(untrusted(format!("{} is not a directory", Clean::path(dir))));
    }
    if meta.uid() != our_uid() {
        return Err(untrusted(format!("{} belongs to another user (uid {})", Clean::path(dir), meta.uid())));
    }
    Ok(())
}

/// Whether the socket directory `dir` may be searched for sockets: ours, and no one else can add,
/// rename or remove entries in it.
pub fn check_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    owned_dir(dir, &meta)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(untrusted(format!(
            "{} is open to other users (mode {mode:03o}; `chmod 700` it)",
            Clean::path(dir)
        )));
    }
    Ok(())
}

/// Whether the file at `path` is a socket of ours that no one else can connect to (connecting
/// takes write permission).
pub fn check_socket(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    check_socket_meta(path, &meta)
}

fn check_socket_meta(path: &Path, meta: &fs::Metadata) -> io::Result<()> {
    if !meta.file_type().is_socket() {
        return Err(untrusted(format!("{} is not a socket", Clean::path(path))));
    }
    if meta.uid() != our_uid() {
        return Err(untrusted(format!("{} belongs to another user (uid {})", Clean::path(path), meta.uid())));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(untrusted(format!("{} is open to other users (mode {mode:03o})", Clean::path(path))));
    }
    Ok(())
}

/// Whether the process at the other end of a connected Unix socket runs as us (`SO_PEERCRED`):
/// the only check that holds whatever the file system says (a socket file can be renamed into
/// our directory by whoever bound it).
pub fn check_peer(stream: &impl AsFd) -> io::Result<()> {
    let cred =
        nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials).map_err(io::Error::from)?;
    let uid = cred.uid();
    if uid != our_uid() {
        return Err(untrusted(format!("the peer runs as another user (uid {uid})")));
    }
    Ok(())
}

/// The pid of the process at the other end of a connected socket.
pub fn peer_pid(stream: &impl AsFd) -> Option<u32> {
    let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    u32::try_from(cred.pid()).ok()
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
    // bind() makes the file a moment before listen(): a peer that connects in between is refused
    // (seen as a flaky "Connection refused" by monitors and tests that wait for the file). Bound and
    // listening under a hidden name first, the socket then appears at `path` ready, by rename.
    let staging = staging_name(path);
    let Ok(listener) = UnixListener::bind(&staging) else {
        // A path too long for the hidden name still binds as it is.
        let listener = UnixListener::bind(path)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        return Ok(listener);
    };
    let placed =
        fs::set_permissions(&staging, fs::Permissions::from_mode(0o600)).and_then(|()| fs::rename(&staging, path));
    if let Err(e) = placed {
        let _ = fs::remove_file(&staging);
        return Err(e);
    }
    Ok(listener)
}

/// `.<name>.<pid>.binding` beside `path`: hidden, so discovery never lists it.
fn staging_name(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "socket".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.binding", std::process::id()))
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

/// What a look into the socket directory found.
#[derive(Debug, Default)]
pub struct Listing {
    /// Live tee sockets that pass every check, newest first.
    pub found: Vec<Found>,
    /// Sockets left alone, each with why (sanitised: names come from the file system).
    pub refused: Vec<Clean>,
}

/// The live tee sockets in `dir` that we can trust, newest first; stale ones of ours are removed
/// on the way. `listen` sockets are skipped: they accept producers and never send anything to a
/// monitor. An untrusted directory is an error (nothing in it is looked at); an untrusted socket
/// is left alone and reported in [`Listing::refused`]. A missing directory lists nothing.
pub fn list(dir: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    match check_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
        Err(e) => return Err(e),
    }
    for entry in fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".sock") || name.starts_with("listen-") {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if let Err(e) = check_socket_meta(&path, &meta) {
            listing.refused.push(sanitize_line(&e.to_string()));
            continue;
        }
        match std::os::unix::net::UnixStream::connect(&path) {
            Ok(stream) => match check_peer(&stream) {
                Ok(()) => {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    listing.found.push(Found { path, modified });
                }
                Err(e) => listing.refused.push(sanitize_line(&format!("{}: {e}", Clean::path(&path)))),
            },
            // Ours, and nobody listens: its tee died without removing it.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                let _ = fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
    listing.found.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.path.cmp(&b.path)));
    Ok(listing)
}
