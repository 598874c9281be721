//! Whether an OpenCode process still writes the store: the writer is the `opencode` process that
//! holds `opencode.db` open, not the pid its lock names (issue stops, session 5).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::source::proc::{self, Proc};

/// Whether an OpenCode process still writes the store.
///
/// Its locks (`locks/<sha>.lock/meta.json`) do not say: they are the lock OpenCode takes to
/// install its plugins (discover::opencode), written late in a run (real 1.18.33: about 4.5 s into
/// a 6.5 s `opencode run`) and left naming the previous, dead process until then. Read as the
/// writer, they ended every session of a second run as interrupted while it ran. A running
/// `opencode` holds the store open (`opencode.db`, `-wal`, `-shm`) from before its first session
/// until it exits, so its open files say it; a lock of another host still says nothing can be
/// known (a store shared over the network).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// An `opencode` process of this user holds the store open.
    Alive,
    /// None does.
    Dead,
    /// No `/proc` to look in, or the store is written from another host too.
    Unknown,
}

/// The state directories whose `locks/` may belong to the store at `db`.
fn lock_dirs(db: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // `<home>/.local/share/opencode/opencode.db` ↔ `<home>/.local/state/opencode/locks`.
    if let Some(share) = db.parent().and_then(Path::parent) {
        if let Some(base) = share.parent() {
            dirs.push(base.join("state").join("opencode").join("locks"));
        }
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        let d = PathBuf::from(state).join("opencode").join("locks");
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

#[derive(serde::Deserialize)]
struct LockMeta {
    hostname: Option<String>,
}

/// Whether a lock of the store names another host.
fn locked_elsewhere(db: &Path) -> bool {
    let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    lock_dirs(db).iter().filter_map(|dir| std::fs::read_dir(dir).ok()).flatten().flatten().any(|entry| {
        std::fs::read_to_string(entry.path().join("meta.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<LockMeta>(&text).ok())
            .and_then(|meta| meta.hostname)
            .is_some_and(|h| h != host)
    })
}

/// Whether a process is OpenCode's (its name or its executable's), not a reader such as swarmtop.
pub fn is_opencode(proc: &Proc, pid: u32) -> bool {
    let comm = std::fs::read_to_string(proc.dir(pid).join("comm")).unwrap_or_default();
    let exe = std::fs::read_link(proc.dir(pid).join("exe")).ok();
    let exe_name = exe.as_ref().and_then(|e| e.file_name()).and_then(|n| n.to_str()).unwrap_or("");
    comm.trim_end().starts_with("opencode") || exe_name.starts_with("opencode")
}

/// [`Writer`] of the store at `db`, from this machine's `/proc`.
pub fn writer(db: &Path) -> Writer {
    writer_in(&Proc::default(), db)
}

fn writer_in(proc: &Proc, db: &Path) -> Writer {
    if locked_elsewhere(db) {
        return Writer::Unknown;
    }
    let store = proc::canonical(db);
    let mut wanted: HashSet<PathBuf> = HashSet::new();
    for suffix in ["", "-wal"] {
        let mut name = store.clone().into_os_string();
        name.push(suffix);
        wanted.insert(PathBuf::from(name));
    }
    let walk = proc.walk(&wanted);
    // The walk always finds this process: none at all means there is no `/proc` to read.
    if walk.processes.is_empty() {
        return Writer::Unknown;
    }
    if walk.holders.values().flatten().any(|&pid| is_opencode(proc, pid)) { Writer::Alive } else { Writer::Dead }
}
