//! OpenCode: one SQLite store for every session, `$XDG_DATA_HOME/opencode/opencode.db` (default
//! `~/.local/share/opencode/opencode.db`, wire.md §9). A store holds many root sessions, so each
//! candidate is one root *within* the store; the window is an SQL `WHERE time_updated >= ?`, and
//! no row of a session outside it is read.
//!
//! Who serves a session: OpenCode's locks (`state/opencode/locks/<sha>.lock/meta.json`) name no
//! session. `<sha>` is the SHA-1 of `npm-install:<config dir>`, the lock OpenCode takes while it
//! installs its plugins into `~/.config/opencode` (or a project's `.opencode`), checked with the
//! real 1.18.33; it is left behind when the process is killed. So a session is matched to the
//! process itself: an `opencode` process that holds this store open, and either lists the session
//! as busy on its server (`GET /session/status`) or runs in the session's directory and started
//! before the session last changed.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::control::{Http, Outcome, ServedSession, ServerApi};

use super::{
    Agent, Candidate, Control, Env, LiveInput, Place, Poll, Reported, Served, Server, Spend, Store, StoreProcess,
    Tools, Window,
};
use crate::source::live;
use crate::source::opencode as store;
use crate::source::proc::{Proc, Walk};
use crate::source::recording;
use crate::source::regular;
use crate::source::seen::Trouble;
use crate::wire::fact::Format;

pub static AGENT: Agent = Agent {
    name: "opencode",
    place: Some(Place {
        root,
        scan,
        hint: "OpenCode sessions appear here as `opencode` writes its store; a running `opencode serve` streams live",
        cwd_in: None,
    }),
    // Its processes name no session: the store's processes serve them.
    runner: None,
    store: Some(Store { read, follow, processes, stream: stream_deltas, companions: &["-wal", "-shm"] }),
    live: Some(open_live),
    control: Control {
        tee: None,
        server: Some(ServerApi {
            via: "opencode serve",
            how: "POST /session/{id}/abort (its running message ends aborted; a parent's task call fails)",
            sessions,
            busy,
            abort,
            ended,
        }),
        hook: None,
    },
    // Any provider's models; OpenCode prices each message itself (wire.md §9).
    spend: Spend {
        provider: None,
        reported: Reported::StoreRows,
        tools: Tools { calls_as_written: true, spawn: "task", shell: "bash", named_by_title: false },
    },
    lowers: &[Format::OpenCode],
    spawned_via: &[],
};

/// `GET /session`: every session the server has (`id`, `parentID`, `title`; a child's title is
/// `"<description> (@<agent> subagent)"`, so its description names it too). `docs/acting.md` §5.
fn sessions(http: &dyn Http) -> Result<Vec<ServedSession>, String> {
    #[derive(Deserialize)]
    struct Listed {
        id: String,
        #[serde(rename = "parentID", default)]
        parent: Option<String>,
        #[serde(default)]
        title: Option<String>,
    }
    let listed: Vec<Listed> =
        serde_json::from_value(http.get("/session")?).map_err(|e| format!("GET /session: {e}"))?;
    Ok(listed
        .into_iter()
        .map(|l| {
            let title = l.title.unwrap_or_default();
            let short = title.split(" (@").next().unwrap_or_default().to_owned();
            ServedSession { id: l.id, parent: l.parent, names: vec![title, short] }
        })
        .collect())
}

/// `GET /session/status`: each busy session maps to `{type: "busy"}` (`retry` while it retries);
/// an idle one is absent (or `idle`).
fn busy(http: &dyn Http) -> Result<HashSet<String>, String> {
    let Value::Object(statuses) = http.get("/session/status")? else {
        return Err("/session/status is not an object".to_owned());
    };
    Ok(statuses
        .into_iter()
        .filter(|(_, s)| s.get("type").and_then(Value::as_str).is_some_and(|t| t != "idle"))
        .map(|(id, _)| id)
        .collect())
}

/// `POST /session/{id}/abort`, what its TUI's Esc does: answered `true`.
fn abort(http: &dyn Http, id: &str) -> Result<(), String> {
    match http.post(&format!("/session/{}/abort", segment(id)))? {
        Value::Bool(true) => Ok(()),
        other => Err(format!("the server did not abort {id}: {other}")),
    }
}

/// An aborted session's running assistant message ends with `error.name: "MessageAbortedError"`.
fn ended(http: &dyn Http, id: &str) -> Result<Outcome, String> {
    let messages = http.get(&format!("/session/{}/message", segment(id)))?;
    let last = messages
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m.pointer("/info/role").and_then(Value::as_str) == Some("assistant"));
    let error = last.and_then(|m| m.pointer("/info/error/name")).and_then(Value::as_str);
    Ok(match error {
        Some("MessageAbortedError") => Outcome::Aborted,
        other => Outcome::Finished(other.map(str::to_owned)),
    })
}

/// A session id as one path segment.
fn segment(id: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-').remove(b'.').remove(b'~');
    percent_encoding::utf8_percent_encode(id, SEGMENT).to_string()
}

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, fixed in the Linux ABI).
const TICKS_PER_SEC: u64 = 100;
/// Listening sockets probed per process (a server listens on one or two).
const MAX_LISTENERS: usize = 8;

fn root(env: &Env) -> Option<PathBuf> {
    env.path("XDG_DATA_HOME").or_else(|| Some(env.home()?.join(".local/share"))).map(|d| d.join("opencode"))
}

fn unix_ms(t: SystemTime) -> i64 {
    recording::ms_of(t).unwrap_or(0)
}

fn at_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The store of a data folder, if it is there and a regular file (a FIFO in its place is never
/// opened: SQLite would wait on it for ever).
fn store_in(root: &Path, trouble: &mut Trouble) -> Option<PathBuf> {
    let db = root.join(store::STORE_NAME);
    if let Some(why) = regular::refusal(&db) {
        trouble.not_regular(&why);
        return None;
    }
    store::store_at(root)
}

fn scan(root: &Path, window: &Window, trouble: &mut Trouble) -> Vec<Candidate> {
    let Some(db) = store_in(root, trouble) else { return Vec::new() };
    let since = window.since.map(unix_ms);
    let Ok(roots) = store::roots(&db, since) else { return Vec::new() };
    roots
        .into_iter()
        .map(|r| Candidate {
            agent: &AGENT,
            project: r.directory.filter(|d| !d.is_empty()),
            project_guessed: false,
            location: db.clone(),
            files: vec![db.clone()],
            modified: at_ms(r.updated_ms),
            within: Some(r.id.clone()),
            id: r.id,
        })
        .collect()
}

/// One root session's subtree, as `stats` on the store gives it, and where the event log ends.
fn read(db: &Path, root: &str) -> io::Result<(Vec<u8>, i64)> {
    let snap = store::snapshot_of(db, &[root.to_owned()])?;
    Ok((snap.records, snap.cursor))
}

impl Poll for store::Follower {
    fn poll(&mut self) -> io::Result<Vec<u8>> {
        store::Follower::poll(self)
    }
}

fn follow(db: &Path, cursor: i64) -> io::Result<Box<dyn Poll + Send>> {
    Ok(Box::new(store::Follower::new(db, cursor)?))
}

/// `swarmtop http://HOST:PORT` watches a running `opencode serve`; `swarmtop --follow STORE`
/// follows a store's event log.
fn open_live(input: &Path, follow: bool, tx: &mpsc::Sender<live::Event>) -> Option<io::Result<LiveInput>> {
    let source = recording::Source::OpenCode;
    if let Some(server) = input.to_str().and_then(store::server_of) {
        let link = store::link_events(tx.clone());
        let reader = store::server_reader(&server, store::Serve::All, link)
            .map_err(|e| io::Error::new(e.kind(), format!("connecting to {server}: {e}")));
        let name = crate::wire::sanitize_line(&format!("http://{server}"));
        return Some(reader.map(|r| LiveInput { reader: Box::new(r), name, source }));
    }
    let db = follow.then(|| store_named(input)).flatten()?;
    let reader =
        store::follow_reader(&db).map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", db.display())));
    let name = crate::wire::Clean::path(&db);
    Some(reader.map(|r| LiveInput { reader: Box::new(r), name, source }))
}

/// The store a path names (a store, or a data folder holding one), never opening what is no
/// regular file.
fn store_named(path: &Path) -> Option<PathBuf> {
    let file = if path.is_dir() { path.join(store::STORE_NAME) } else { path.to_owned() };
    regular::is_regular(&file).then(|| store::store_at(path)).flatten()
}

/// Boot time, unix seconds (`btime` of `/proc/stat`).
fn boot_secs(proc: &Proc) -> Option<u64> {
    let stat = fs::read_to_string(proc.file("stat")).ok()?;
    stat.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
}

/// The `opencode` processes of this user, by the store (canonical path, among `stores`) each holds
/// open, found in the tick's walk (which must have wanted the stores), with their servers: each
/// listening socket is asked once, and that one answer both finds a server and says who is busy.
fn processes(proc: &Proc, walk: &Walk, stores: &HashSet<PathBuf>) -> Served {
    let mut out: HashMap<PathBuf, Vec<StoreProcess>> = HashMap::new();
    let boot = boot_secs(proc).unwrap_or(0);
    let no_sockets = HashSet::new();
    for db in stores {
        for &pid in walk.holders.get(db).into_iter().flatten() {
            if !store::is_opencode(proc, pid) || out.values().flatten().any(|p| p.pid == pid) {
                continue;
            }
            let Some(p) = walk.process(pid) else { continue };
            let started_ms = i64::try_from((boot * TICKS_PER_SEC + p.start_ticks) * 1000 / TICKS_PER_SEC).unwrap_or(0);
            let (mut servers, mut busy) = (Vec::new(), HashSet::new());
            let sockets = walk.sockets.get(&pid).unwrap_or(&no_sockets);
            for addr in listening(proc, pid, sockets).into_iter().take(MAX_LISTENERS) {
                let authority = addr.to_string();
                if let Some(sessions) = store::session_status(&authority) {
                    busy.extend(sessions);
                    servers.push(authority);
                }
            }
            out.entry(db.clone()).or_default().push(StoreProcess {
                pid,
                cwd: proc.cwd(pid),
                started_ms,
                servers,
                busy,
            });
        }
    }
    Served { by_store: out }
}

/// The loopback addresses to reach `pid`'s listening TCP sockets at (`/proc/<pid>/net/tcp{,6}`,
/// in the process's own network namespace, matched to its descriptors by inode).
fn listening(proc: &Proc, pid: u32, inodes: &HashSet<u64>) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for (file, v6) in [("tcp", false), ("tcp6", true)] {
        let Ok(table) = fs::read_to_string(proc.dir(pid).join("net").join(file)) else { continue };
        for line in table.lines().skip(1) {
            let cols: Vec<&str> = line.split_ascii_whitespace().collect();
            // sl local rem st tx:rx tr:tm retrnsmt uid timeout inode
            let (Some(local), Some(&"0A"), Some(inode)) = (cols.get(1), cols.get(3), cols.get(9)) else { continue };
            if !inode.parse::<u64>().is_ok_and(|i| inodes.contains(&i)) {
                continue;
            }
            if let Some(addr) = reachable(local, v6) {
                out.push(addr);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A listening address from `/proc/net/tcp{,6}` (`0100007F:1F90`), as the loopback address to
/// connect to; `None` for one bound to another interface only.
fn reachable(local: &str, v6: bool) -> Option<SocketAddr> {
    let (ip, port) = local.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    if !v6 {
        let ip = Ipv4Addr::from(u32::from_str_radix(ip, 16).ok()?.swap_bytes());
        return (ip.is_loopback() || ip.is_unspecified()).then(|| SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if ip.len() != 32 {
        return None;
    }
    // Four 32-bit words, each in host (little-endian) order.
    let mut bytes = [0u8; 16];
    for (w, chunk) in bytes.chunks_mut(4).enumerate() {
        let word = u32::from_str_radix(ip.get(w * 8..w * 8 + 8)?, 16).ok()?.swap_bytes();
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    let ip = Ipv6Addr::from(bytes);
    match ip.to_ipv4_mapped() {
        Some(v4) if v4.is_loopback() || v4.is_unspecified() => Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
        None if ip.is_loopback() || ip.is_unspecified() => Some(SocketAddr::from((Ipv6Addr::LOCALHOST, port))),
        Some(_) | None => None,
    }
}

/// Streams a server's text deltas and statuses ([`store::Serve::Deltas`]) on a thread of its
/// own, as whole records into `tx` under the server's address; the store, followed beside it,
/// gives the rows and figures, so a session on both is one row, counted once. It reconnects while
/// the server's process lives; an empty batch says the stream is over.
fn stream_deltas(server: &Server, proc: Proc, tx: mpsc::Sender<(String, Vec<u8>)>) -> io::Result<()> {
    use crate::source::files::{self, Record};
    let pid = server.pid;
    let reader = store::server_reader(&server.authority, store::Serve::Deltas, move |_| proc.alive(pid))?;
    let authority = server.authority.clone();
    std::thread::Builder::new().name("source-opencode-deltas".into()).spawn(move || {
        let _ = files::read_records(std::io::BufReader::new(reader), files::MAX_LINE, |record| {
            if let Record::Line(line) = record {
                let mut bytes = line.to_vec();
                bytes.push(b'\n');
                let _ = tx.blocking_send((authority.clone(), bytes));
            }
        });
        let _ = tx.blocking_send((authority, Vec::new()));
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_addresses_read_like_the_kernel_writes_them() {
        assert_eq!(reachable("0100007F:1F90", false), Some("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(reachable("00000000:1000", false), Some("127.0.0.1:4096".parse().unwrap()));
        assert_eq!(reachable("0101A8C0:1000", false), None, "192.168.1.1 only");
        assert_eq!(reachable("00000000000000000000000001000000:1000", true), Some("[::1]:4096".parse().unwrap()));
        assert_eq!(
            reachable("0000000000000000FFFF00000100007F:1000", true),
            Some("127.0.0.1:4096".parse().unwrap()),
            "v4-mapped loopback"
        );
        assert_eq!(reachable("00000000000000000000000000000000:1000", true), Some("[::1]:4096".parse().unwrap()));
    }

    /// A `/proc` with one `opencode` process holding `store` open and listening on `port`.
    fn fake_proc(root: &Path, pid: u32, store: &Path, cwd: &Path, port: u16) {
        let dir = root.join(pid.to_string());
        fs::create_dir_all(dir.join("fd")).unwrap();
        fs::create_dir_all(dir.join("net")).unwrap();
        fs::write(root.join("stat"), "cpu 0 0 0 0\nbtime 1796126000\n").unwrap();
        fs::write(dir.join("stat"), format!("{pid} (opencode) S 1 1 1 0 0 0 0 0 0 0 10 5 0 0 20 0 1 0 4200 0 0"))
            .unwrap();
        fs::write(dir.join("status"), "Name:\topencode\nVmRSS:\t2048 kB\n").unwrap();
        fs::write(dir.join("comm"), "opencode\n").unwrap();
        std::os::unix::fs::symlink(store, dir.join("fd/3")).unwrap();
        std::os::unix::fs::symlink("socket:[777]", dir.join("fd/4")).unwrap();
        std::os::unix::fs::symlink(cwd, dir.join("cwd")).unwrap();
        let head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        let row = format!(
            "   0: 0100007F:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1\n"
        );
        fs::write(dir.join("net/tcp"), format!("{head}{row}")).unwrap();
    }

    #[test]
    fn one_walk_and_one_request_per_server_answer_a_tick() {
        use std::io::{Read as _, Write as _};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("opencode.db");
        fs::write(&store, b"").unwrap();
        let store = crate::source::proc::canonical(&store);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&requests);
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                // The whole request is read before answering: closing with part of it unread
                // resets the connection, and the client then saw no answer (a flaky test).
                let (mut request, mut buf) = (Vec::new(), [0u8; 1024]);
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = r#"{"ses_busy":{"type":"busy"},"ses_quiet":{"type":"idle"}}"#;
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        let root = tmp.path().join("proc");
        fake_proc(&root, 4242, &store, tmp.path(), port);
        let proc = Proc::at(&root);
        let stores: HashSet<PathBuf> = [store.clone()].into();
        let walk = proc.walk(&stores);
        assert_eq!(walk.holders.get(&store), Some(&vec![4242]), "{walk:?}");
        let found = processes(&proc, &walk, &stores);
        let held = &found.by_store[&store];
        assert_eq!(held.len(), 1, "{found:?}");
        assert_eq!((held[0].pid, held[0].cwd.as_deref()), (4242, Some(tmp.path())));
        assert_eq!(held[0].servers, [format!("127.0.0.1:{port}")]);
        assert_eq!(held[0].busy, ["ses_busy".to_owned()].into(), "the idle session is not busy");
        assert_eq!(requests.load(Ordering::SeqCst), 1, "one request found the server and read who is busy");
    }
}
