//! Telling a follower that files changed, through the `notify` crate: the kernel's own watcher
//! (inotify) where it works, notify's polling watcher where it does not (a full watch table,
//! file systems without events). Followers still read the bytes themselves; this only wakes them
//! and says where to look.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{Event, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::Notify;

/// How often the polling fallback looks.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Changed paths remembered between two looks; past it the follower is told to look everywhere.
pub const MAX_CHANGED: usize = 4_096;

/// What changed since the last look.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    pub paths: HashSet<PathBuf>,
    /// More changed than [`MAX_CHANGED`], or the watcher lost events: look at everything.
    pub everything: bool,
}

#[derive(Default)]
struct Shared {
    changes: Mutex<Changes>,
    wake: Notify,
    /// For followers on a thread of their own.
    wake_thread: std::sync::Condvar,
}

impl Shared {
    fn note(&self, result: notify::Result<Event>) {
        let mut changes = self.changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match result {
            Ok(event) if event.need_rescan() => changes.everything = true,
            // Opening and reading files (our own reads among them) changes nothing.
            Ok(event) if event.kind.is_access() => return,
            Ok(event) => {
                for path in event.paths {
                    if changes.paths.len() >= MAX_CHANGED {
                        changes.everything = true;
                        break;
                    }
                    changes.paths.insert(path);
                }
            }
            Err(_) => changes.everything = true,
        }
        drop(changes);
        self.wake.notify_one();
        self.wake_thread.notify_all();
    }
}

/// Which mechanism delivers the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Native,
    Polling,
}

/// Watches files and folders (folders recursively) for changes.
pub struct Watcher {
    shared: Arc<Shared>,
    native: Option<RecommendedWatcher>,
    polling: Option<PollWatcher>,
    watched: HashSet<PathBuf>,
    /// The folders among them (watched with all below them).
    folders: HashSet<PathBuf>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").field("watched", &self.watched).field("kind", &self.kind()).finish_non_exhaustive()
    }
}

impl Watcher {
    pub fn new() -> Self {
        let shared = Arc::new(Shared::default());
        let handler = Arc::clone(&shared);
        let native = RecommendedWatcher::new(move |r| handler.note(r), notify::Config::default()).ok();
        Self { shared, native, polling: None, watched: HashSet::new(), folders: HashSet::new() }
    }

    /// Only the polling watcher (for file systems known to send no events, and for tests).
    pub fn polling() -> Self {
        let mut w = Self::new();
        w.native = None;
        w
    }

    pub fn kind(&self) -> Kind {
        if self.polling.is_some() || self.native.is_none() { Kind::Polling } else { Kind::Native }
    }

    /// Starts watching `path` if it exists and is not watched yet; a path that does not exist is
    /// left for a later call (after its parent reported it). Returns whether it is watched. A path
    /// below a folder watched already is watched through it: a watch of its own only doubled its
    /// events and took one of the kernel's watches a file (the machine view asked one for each of
    /// 50,000 session files; past `max_user_watches`, 8,192 on many systems, the rest fell to the
    /// polling watcher, a look at every file twice a second).
    pub fn watch(&mut self, path: &Path) -> bool {
        if self.watched.contains(path) {
            return true;
        }
        let Ok(meta) = std::fs::metadata(path) else { return false };
        if path.ancestors().skip(1).any(|a| self.folders.contains(a)) {
            return true;
        }
        let mode = if meta.is_dir() { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
        if !self.add(path, mode) {
            return false;
        }
        if meta.is_dir() {
            self.folders.insert(path.to_owned());
        }
        true
    }

    /// A watch of `path` by the kernel's watcher, else the polling one.
    fn add(&mut self, path: &Path, mode: RecursiveMode) -> bool {
        let native_ok = self.native.as_mut().is_some_and(|w| w.watch(path, mode).is_ok());
        if !native_ok {
            if self.polling.is_none() {
                let handler = Arc::clone(&self.shared);
                let config = notify::Config::default().with_poll_interval(POLL_INTERVAL).with_compare_contents(false);
                self.polling = PollWatcher::new(move |r| handler.note(r), config).ok();
            }
            if self.polling.as_mut().is_none_or(|p| p.watch(path, mode).is_err()) {
                return false;
            }
        }
        self.watched.insert(path.to_owned());
        true
    }

    /// Watches the folder `path` alone, not what is below it: where a folder to watch is still
    /// missing, its nearest parent tells when it appears (an agent's first run makes its folder).
    /// Returns whether it is watched.
    pub fn watch_shallow(&mut self, path: &Path) -> bool {
        if self.watched.contains(path) || path.ancestors().any(|a| self.folders.contains(a)) {
            return true;
        }
        self.add(path, RecursiveMode::NonRecursive)
    }

    /// Paths watched by a watch of their own (a path below a watched folder is not one).
    pub fn watches(&self) -> usize {
        self.watched.len()
    }

    pub fn is_watched(&self, path: &Path) -> bool {
        self.watched.contains(path)
    }

    /// Whether `path` is below a folder watched with all below it: its changes are told already,
    /// and [`Watcher::watch`] would add nothing but a look at the disk (one `statx` for each of
    /// 50,000 session files on the machine view's first screen, issue 22). The folders are the
    /// few the agents keep their sessions in.
    pub fn covers(&self, path: &Path) -> bool {
        self.folders.iter().any(|f| path != f && path.starts_with(f))
    }

    /// Waits until something changed, then takes what did.
    pub async fn changed(&self) -> Changes {
        loop {
            if let Some(c) = self.take() {
                return c;
            }
            self.shared.wake.notified().await;
        }
    }

    /// Blocks the calling thread until something changed or `timeout` passed; takes what changed.
    pub fn wait(&self, timeout: Duration) -> Changes {
        let changes = self.shared.changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (mut changes, _) = self
            .shared
            .wake_thread
            .wait_timeout_while(changes, timeout, |c| !c.everything && c.paths.is_empty())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *changes)
    }

    /// What changed since the last look, if anything.
    pub fn take(&self) -> Option<Changes> {
        let mut changes = self.shared.changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (changes.everything || !changes.paths.is_empty()).then(|| std::mem::take(&mut *changes))
    }
}

impl Default for Watcher {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn wait_for(w: &Watcher, path: &Path) -> Changes {
        let mut seen = Changes::default();
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let c = w.changed().await;
                seen.everything |= c.everything;
                seen.paths.extend(c.paths);
                if seen.everything || seen.paths.iter().any(|p| p.ends_with(path.file_name().unwrap())) {
                    return;
                }
            }
        })
        .await
        .expect("the change is reported");
        seen
    }

    /// A file below a watched folder takes no watch of its own, and its changes are still told.
    #[tokio::test]
    async fn a_file_below_a_watched_folder_is_watched_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("p/s1");
        std::fs::create_dir_all(&nested).unwrap();
        let file = nested.join("s1.jsonl");
        std::fs::write(&file, b"{}\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let alone = outside.path().join("store.db");
        std::fs::write(&alone, b"").unwrap();
        let mut watcher = Watcher::new();
        assert!(watcher.watch(dir.path()));
        assert!(watcher.watch(&file) && watcher.watch(&alone));
        assert_eq!(watcher.watches(), 2, "the folder and the file outside it");
        assert!(watcher.covers(&file) && !watcher.covers(&alone) && !watcher.covers(dir.path()));
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"more\":1}\n").unwrap();
        wait_for(&watcher, &file).await;
    }

    #[tokio::test]
    async fn native_and_polling_report_new_and_growing_files() {
        for mut watcher in [Watcher::new(), Watcher::polling()] {
            let dir = tempfile::tempdir().unwrap();
            let nested = dir.path().join("2026/12/01");
            std::fs::create_dir_all(&nested).unwrap();
            assert!(watcher.watch(dir.path()));
            assert!(!watcher.watch(&dir.path().join("missing")));
            // Let the polling watcher take its first look before anything changes.
            tokio::time::sleep(POLL_INTERVAL * 2).await;
            let file = nested.join("rollout.jsonl");
            std::fs::write(&file, b"{}\n").unwrap();
            wait_for(&watcher, &file).await;
            // The poller tells a change by the file's modification time, which it was seen to miss
            // for a write within the same second as the last one: a second apart, as real appends are.
            let settle =
                if watcher.kind() == Kind::Polling { Duration::from_millis(1100) } else { Duration::from_millis(50) };
            tokio::time::sleep(settle).await;
            let _ = watcher.take();
            std::fs::OpenOptions::new().append(true).open(&file).unwrap();
            use std::io::Write;
            std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"more\":1}\n").unwrap();
            wait_for(&watcher, &file).await;
        }
    }
}
