//! Which process is behind a session, read from `/proc` (Linux): who holds a file open, and how
//! much CPU and memory a process uses, the way htop shows it.
//!
//! The scan is bounded: only processes of the current user are looked at (others' `fd` folders
//! cannot be read anyway), at most [`MAX_PROCESSES`] of them and [`MAX_FDS`] descriptors each;
//! what the bounds skip is counted in [`Scan`]. Without `/proc` everything here finds nothing,
//! and callers fall back on file age.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Processes looked at in one scan; the rest are counted in [`Scan::processes_skipped`].
pub const MAX_PROCESSES: usize = 32_768;
/// Descriptors read per process; the rest are counted in [`Scan::fds_skipped`].
pub const MAX_FDS: usize = 4_096;
/// Bytes of `/proc/<pid>/cmdline` read (an argument list can be as long as `ARG_MAX`).
pub const CMDLINE_MAX: u64 = 64 << 10;
/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, fixed at 100 in the Linux ABI).
const TICKS_PER_SEC: f64 = 100.0;

/// The root of the proc file system (a parameter so tests and odd mounts can name another).
#[derive(Debug, Clone)]
pub struct Proc {
    root: PathBuf,
    uid: u32,
    /// Walks taken through this `Proc` and its clones: a tick must take one.
    walks: Arc<AtomicUsize>,
}

impl Default for Proc {
    fn default() -> Self {
        Self::at("/proc")
    }
}

/// What one look at the open files found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// For each wanted path that some process holds open: the lowest such pid.
    pub holders: HashMap<PathBuf, u32>,
    pub processes_scanned: usize,
    /// Processes left out by [`MAX_PROCESSES`].
    pub processes_skipped: usize,
    /// Descriptors left out by [`MAX_FDS`].
    pub fds_skipped: usize,
}

/// One pass over `/proc`, shared by everything a tick asks of it: the current user's processes
/// (each `stat` and `status` read once), who holds which wanted file open, and the listening
/// sockets' inodes of those holders (a server found by the file it holds). Nothing else walks
/// `/proc` between two looks.
#[derive(Debug, Default, Clone)]
pub struct Walk {
    /// The current user's processes (this one included), at most [`MAX_PROCESSES`], by pid.
    pub processes: Vec<Process>,
    /// Every process of ours (not this one) holding each wanted path open, lowest pid first.
    pub holders: HashMap<PathBuf, Vec<u32>>,
    /// The socket inodes each holder of a wanted path has open.
    pub sockets: HashMap<u32, HashSet<u64>>,
    /// Processes left out by [`MAX_PROCESSES`].
    pub processes_skipped: usize,
    /// Descriptors left out by [`MAX_FDS`].
    pub fds_skipped: usize,
    /// Each process's argument list, when the walk read them ([`Proc::walk_commands`]).
    pub commands: HashMap<u32, Vec<String>>,
}

impl Walk {
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.processes.binary_search_by_key(&pid, |p| p.pid).ok().map(|i| &self.processes[i])
    }

    /// The argument list of `pid` as the walk read it; read now when it did not.
    pub fn command_line(&self, proc: &Proc, pid: u32) -> Option<Vec<String>> {
        match self.commands.get(&pid) {
            Some(args) => Some(args.clone()),
            None if self.commands.is_empty() => proc.command_line(pid),
            None => None,
        }
    }

    /// Who holds each wanted file open (the lowest pid), as [`Proc::open_files`] says it.
    pub fn scan(&self) -> Scan {
        let me = std::process::id();
        Scan {
            holders: self.holders.iter().filter_map(|(p, pids)| Some((p.clone(), *pids.first()?))).collect(),
            processes_scanned: self.processes.iter().filter(|p| p.pid != me).count(),
            processes_skipped: self.processes_skipped,
            fds_skipped: self.fds_skipped,
        }
    }

    /// `pid` and every process below it.
    pub fn tree(&self, pid: u32) -> Vec<&Process> {
        let mut out: Vec<&Process> = self.process(pid).into_iter().collect();
        let mut i = 0;
        while i < out.len() {
            let parent = out[i].pid;
            out.extend(self.processes.iter().filter(|p| p.ppid == parent && p.pid != parent));
            i += 1;
        }
        out
    }
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &Path) -> Option<u64> {
    link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// One process as `/proc/<pid>/stat` and `status` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// `utime + stime`, in clock ticks.
    pub cpu_ticks: u64,
    /// Start time after boot, in clock ticks.
    pub start_ticks: u64,
    pub rss_bytes: u64,
    /// The kernel's name of its program (`comm`, at most 15 bytes; lossy UTF-8).
    pub name: String,
}

impl Proc {
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), uid: nix::unistd::getuid().as_raw(), walks: Arc::default() }
    }

    /// Walks of `/proc` taken through this `Proc` and its clones so far.
    pub fn walks(&self) -> usize {
        self.walks.load(Ordering::Relaxed)
    }

    /// The folder of one process (`/proc/<pid>`), for readers of what this module does not parse.
    pub fn dir(&self, pid: u32) -> PathBuf {
        self.root.join(pid.to_string())
    }

    /// A file of the proc file system itself (`net/tcp`, `stat`).
    pub fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Pids of the current user's processes, in no particular order.
    pub fn own_pids(&self) -> impl Iterator<Item = u32> + '_ {
        fs::read_dir(&self.root).into_iter().flatten().flatten().filter_map(move |entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let meta = entry.metadata().ok()?;
            (meta.uid() == self.uid).then_some(pid)
        })
    }

    /// One look at the machine: every process of ours, and who holds which of `wanted`
    /// (canonical paths) open. Descriptors are read only when something is wanted.
    pub fn walk(&self, wanted: &HashSet<PathBuf>) -> Walk {
        self.walk_below(wanted, &[])
    }

    /// [`Proc::walk`], wanting also every file below the folders `below` (canonical).
    pub fn walk_below(&self, wanted: &HashSet<PathBuf>, below: &[PathBuf]) -> Walk {
        self.walk_with(wanted, below, false)
    }

    /// [`Proc::walk_below`], reading every process's argument list on the way: what finding the
    /// agents' processes needs, read once for all of them.
    pub fn walk_commands(&self, wanted: &HashSet<PathBuf>, below: &[PathBuf]) -> Walk {
        self.walk_with(wanted, below, true)
    }

    fn walk_with(&self, wanted: &HashSet<PathBuf>, below: &[PathBuf], commands: bool) -> Walk {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let wants = |target: &Path| wanted.contains(target) || below.iter().any(|d| target.starts_with(d));
        let mut walk = Walk::default();
        let me = std::process::id();
        for pid in self.own_pids() {
            if walk.processes.len() >= MAX_PROCESSES {
                walk.processes_skipped += 1;
                continue;
            }
            let Some(process) = self.process(pid) else { continue };
            walk.processes.push(process);
            if commands {
                walk.commands.insert(pid, self.command_line(pid).unwrap_or_default());
            }
            if pid == me || (wanted.is_empty() && below.is_empty()) {
                continue;
            }
            let Ok(fds) = fs::read_dir(self.dir(pid).join("fd")) else { continue };
            let (mut held, mut sockets) = (false, HashSet::new());
            for (n, fd) in fds.flatten().enumerate() {
                if n >= MAX_FDS {
                    walk.fds_skipped += 1;
                    continue;
                }
                let Ok(target) = fs::read_link(fd.path()) else { continue };
                if let Some(inode) = socket_inode(&target) {
                    sockets.insert(inode);
                } else if wants(&target) {
                    held = true;
                    walk.holders.entry(target).or_default().push(pid);
                }
            }
            if held && !sockets.is_empty() {
                walk.sockets.insert(pid, sockets);
            }
        }
        walk.processes.sort_by_key(|p| p.pid);
        for pids in walk.holders.values_mut() {
            pids.sort_unstable();
            pids.dedup();
        }
        walk
    }

    /// Which of `wanted` (absolute, canonical paths) some process of ours holds open.
    pub fn open_files(&self, wanted: &HashSet<PathBuf>) -> Scan {
        self.walk(wanted).scan()
    }

    /// This process's pid namespace as `/proc/self/ns/pid` names it (`pid:[4026531836]`): pids
    /// read here mean the processes of that namespace only.
    pub fn pid_namespace(&self) -> Option<String> {
        fs::read_link(self.root.join("self/ns/pid")).ok()?.to_str().map(str::to_owned)
    }

    pub fn process(&self, pid: u32) -> Option<Process> {
        let dir = self.root.join(pid.to_string());
        let stat = fs::read_to_string(dir.join("stat")).ok()?;
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split after the last `)`.
        let close = stat.rfind(')')?;
        let name = stat.get(stat.find('(')? + 1..close).unwrap_or("").to_owned();
        let rest = stat.get(close + 2..)?;
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        // Field numbers of proc(5), counted from `state` (field 3) as index 0.
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        let rss_kib = fs::read_to_string(dir.join("status")).ok().and_then(|status| {
            status.lines().find_map(|l| l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        });
        Some(Process {
            pid,
            ppid: u32::try_from(field(4)?).ok()?,
            cpu_ticks: field(14)?.saturating_add(field(15)?),
            start_ticks: field(22)?,
            rss_bytes: rss_kib.unwrap_or(0).saturating_mul(1024),
            name,
        })
    }

    /// The argument list of `pid` (lossy UTF-8; at most [`CMDLINE_MAX`] bytes of it).
    pub fn command_line(&self, pid: u32) -> Option<Vec<String>> {
        let file = fs::File::open(self.root.join(pid.to_string()).join("cmdline")).ok()?;
        let mut bytes = Vec::new();
        file.take(CMDLINE_MAX).read_to_end(&mut bytes).ok()?;
        Some(
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
        )
    }

    /// The working directory of `pid`.
    pub fn cwd(&self, pid: u32) -> Option<PathBuf> {
        fs::read_link(self.root.join(pid.to_string()).join("cwd")).ok()
    }

    /// Whether `pid` runs now.
    pub fn alive(&self, pid: u32) -> bool {
        self.root.join(pid.to_string()).join("stat").exists()
    }

    /// Seconds since boot, from `/proc/uptime`.
    fn uptime_secs(&self) -> Option<f64> {
        fs::read_to_string(self.root.join("uptime")).ok()?.split_ascii_whitespace().next()?.parse().ok()
    }

    /// When the process started, by the wall clock (from its start after boot and the uptime).
    pub fn started_at(&self, process: &Process) -> Option<std::time::SystemTime> {
        let ago = self.uptime_secs()? - process.start_ticks as f64 / TICKS_PER_SEC;
        std::time::SystemTime::now().checked_sub(std::time::Duration::try_from_secs_f64(ago.max(0.0)).ok()?)
    }

    /// CPU % over the process's whole life, as `ps` shows it (100 = one core busy).
    pub fn lifetime_cpu_percent(&self, process: &Process) -> Option<f64> {
        let alive_secs = self.uptime_secs()? - process.start_ticks as f64 / TICKS_PER_SEC;
        (alive_secs > 0.0).then(|| process.cpu_ticks as f64 / TICKS_PER_SEC / alive_secs * 100.0)
    }
}

/// CPU and memory of a process (and what runs under it), as one row shows them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// 100 = one core busy.
    pub cpu_percent: f64,
    pub rss_bytes: u64,
}

impl Usage {
    /// The lifetime figures of `pid`'s process tree (what `ps` prints), from a walk.
    pub fn lifetime(proc: &Proc, walk: &Walk, pid: u32) -> Option<Self> {
        let tree = walk.tree(pid);
        if tree.is_empty() {
            return None;
        }
        let cpu_percent = tree.iter().filter_map(|p| proc.lifetime_cpu_percent(p)).sum();
        Some(Self { cpu_percent, rss_bytes: tree.iter().map(|p| p.rss_bytes).sum() })
    }
}

/// CPU % between two looks, like htop's refresh: remembers each pid's ticks from the last sample.
#[derive(Debug, Default)]
pub struct Sampler {
    last: HashMap<u32, Sample>,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    ticks: u64,
    at: Instant,
    usage: Usage,
}

impl Sampler {
    /// The usage of `pid`'s process tree since the previous call for it (the first call gives
    /// the lifetime average), from a walk taken `now`. Asked again of the same walk (the same
    /// `now`), it answers what it answered.
    pub fn sample(&mut self, proc: &Proc, walk: &Walk, pid: u32, now: Instant) -> Option<Usage> {
        let tree = walk.tree(pid);
        if tree.is_empty() {
            self.last.remove(&pid);
            return None;
        }
        let ticks: u64 = tree.iter().map(|p| p.cpu_ticks).sum();
        let rss_bytes = tree.iter().map(|p| p.rss_bytes).sum();
        let cpu_percent = match self.last.get(&pid) {
            Some(last) if last.at == now && last.ticks == ticks => return Some(last.usage),
            Some(last) if now > last.at => {
                ticks.saturating_sub(last.ticks) as f64 / TICKS_PER_SEC / now.duration_since(last.at).as_secs_f64()
                    * 100.0
            }
            _ => tree.iter().filter_map(|p| proc.lifetime_cpu_percent(p)).sum(),
        };
        let usage = Usage { cpu_percent, rss_bytes };
        self.last.insert(pid, Sample { ticks, at: now, usage });
        Some(usage)
    }
}

/// The path as `/proc/<pid>/fd` links show it: absolute, symlinks resolved.
pub fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// [`canonical`] for many files in few folders: each folder is resolved once, and a file in it
/// that is no symlink is the folder's canonical path and its name (one `lstat`, where `realpath`
/// reads every component of the path: with 50,000 sessions, three of those a file were a sixth
/// of the machine view's start). Kept for one look only: a folder moved later is resolved again.
#[derive(Debug, Default)]
pub struct Canonical {
    dirs: HashMap<PathBuf, Option<PathBuf>>,
    /// Files resolved, until [`Canonical::take`]n (only when keeping).
    files: Option<HashMap<PathBuf, PathBuf>>,
}

impl Canonical {
    /// One that keeps each file's path until it is taken: asked twice in one look, a file is
    /// looked at once.
    pub fn keeping() -> Self {
        Self { dirs: HashMap::new(), files: Some(HashMap::new()) }
    }

    /// The path as `/proc/<pid>/fd` links show it, as [`canonical`] gives it.
    pub fn of(&mut self, path: &Path) -> PathBuf {
        if let Some(known) = self.files.as_ref().and_then(|f| f.get(path)) {
            return known.clone();
        }
        let resolved = self.resolve(path);
        if let Some(files) = &mut self.files {
            files.insert(path.to_owned(), resolved.clone());
        }
        resolved
    }

    /// [`Canonical::of`], for the last time.
    pub fn take(&mut self, path: &Path) -> PathBuf {
        self.files.as_mut().and_then(|f| f.remove(path)).unwrap_or_else(|| self.resolve(path))
    }

    fn resolve(&mut self, path: &Path) -> PathBuf {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return canonical(path) };
        let plain = path.is_absolute() && fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink());
        if !plain {
            return canonical(path);
        }
        let dir = self.dirs.entry(dir.to_owned()).or_insert_with(|| fs::canonicalize(dir).ok());
        dir.as_ref().map_or_else(|| canonical(path), |d| d.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folder cache gives what `realpath` gives: through a linked folder, for a linked file,
    /// for a `..` and for what is not there.
    #[test]
    fn canonical_paths_by_folder_are_realpaths() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir_all(real.join("sub")).unwrap();
        fs::write(real.join("a.jsonl"), b"").unwrap();
        fs::write(real.join("sub/b.jsonl"), b"").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("sub/b.jsonl"), real.join("c.jsonl")).unwrap();
        let (mut cache, mut keeping) = (Canonical::default(), Canonical::keeping());
        for p in [
            real.join("a.jsonl"),
            dir.path().join("link/a.jsonl"),
            dir.path().join("link/sub/b.jsonl"),
            dir.path().join("link/c.jsonl"),
            dir.path().join("link/sub/../a.jsonl"),
            dir.path().join("link/missing.jsonl"),
            PathBuf::from("relative.jsonl"),
        ] {
            assert_eq!(cache.of(&p), canonical(&p), "{}", p.display());
            assert_eq!(keeping.of(&p), canonical(&p), "{}", p.display());
            assert_eq!(keeping.take(&p), canonical(&p), "{}", p.display());
            assert_eq!(keeping.take(&p), canonical(&p), "{}", p.display());
        }
        assert!(keeping.files.as_ref().unwrap().is_empty(), "taken");
    }

    #[test]
    fn a_file_held_open_names_its_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held.jsonl");
        fs::write(&path, b"{}\n").unwrap();
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3<\"$1\"; sleep 30")
            .arg("sh")
            .arg(&path)
            .spawn()
            .unwrap();
        let wanted: HashSet<PathBuf> = [canonical(&path)].into();
        let proc = Proc::default();
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        let mut scan = proc.open_files(&wanted);
        while scan.holders.is_empty() && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            scan = proc.open_files(&wanted);
        }
        let holder = scan.holders.get(&canonical(&path)).copied();
        let process = holder.and_then(|pid| proc.process(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(holder, Some(child.id()));
        let process = process.unwrap();
        assert_eq!(process.ppid, std::process::id());
        assert!(process.rss_bytes > 0);
        assert!(!proc.alive(child.id()) || proc.process(child.id()).is_none_or(|p| p.ppid == std::process::id()));
    }

    #[test]
    fn our_own_tree_has_usage() {
        let proc = Proc::default();
        let walk = proc.walk(&HashSet::new());
        let usage = Usage::lifetime(&proc, &walk, std::process::id()).unwrap();
        assert!(usage.rss_bytes > 0 && usage.cpu_percent >= 0.0);
        let mut sampler = Sampler::default();
        let now = Instant::now();
        assert!(sampler.sample(&proc, &walk, std::process::id(), now).is_some());
        assert!(sampler.sample(&proc, &walk, std::process::id(), now + std::time::Duration::from_secs(1)).is_some());
        assert!(proc.process(u32::MAX).is_none());
    }
}
