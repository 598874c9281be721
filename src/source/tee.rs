//! `swarmtop tee -- CMD`: a transparent stdio proxy in front of a server such as `codex
//! app-server`. Each direction is pumped by its own thread with blocking reads and writes: what
//! one `read` brings is encoded and written to the recording, then forwarded, so a line waits only
//! for its own recording (a write to the page cache). Monitors are served on a small tokio runtime
//! and can never block a pump (`recording.md`, "Tee ordering guarantee" and "Live socket
//! protocol").
//!
//! The child runs in its own process group: a Ctrl-C typed in a terminal then reaches it once,
//! forwarded by the tee, instead of twice (once from the terminal, once from us).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::fcntl::{FcntlArg, fcntl};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::hub::{self, Batch, Control, Hub};
use super::inject::{Deferred, Injector, Outbound};
use super::recording::{self, Dir, Encoder, Recorder, Source, Wrap};
use super::socket::{self, SocketFile};

/// Capacity asked for the four pipes the tee reads and writes (its stdio and the command's). The
/// default 64 KiB makes every hop a wake-up per 64 KiB, and each `read` a batch of that size to
/// validate, record, forward and offer; 1 MiB (the unprivileged maximum by default) cuts the
/// wake-ups, syscalls and hub hand-offs per byte about 16-fold under load, and costs nothing when
/// lines are few.
const PIPE_BYTES: i32 = 1 << 20;

/// Bytes asked for per `read`: as much as a widened pipe holds, so that a full pipe drains in one
/// call.
const READ_BYTES: usize = PIPE_BYTES as usize;

/// After the command exits, how long its stdout may stay open (held by a process it left
/// behind) before the tee stops waiting for the last bytes.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordTo {
    /// `$XDG_STATE_HOME/swarmtop/recordings/…`
    Default,
    /// A file, or a directory to put a default-named file in.
    Path(PathBuf),
    Off,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub command: Vec<OsString>,
    pub socket: Option<PathBuf>,
    pub record: RecordTo,
    /// Per-monitor queue bound; `None` is [`hub::SUBSCRIBER_QUEUE_BYTES`].
    pub queue_bytes: Option<usize>,
    /// Wait up to this long for a first monitor before starting the command (`--otlp`: the
    /// exporting monitor must see the session even when the command is over in a millisecond).
    pub first_monitor: Option<Duration>,
}

/// Why the tee could not run the command at all.
#[derive(Debug)]
pub enum Failure {
    /// Recording or socket setup failed (exit 1).
    Setup(String),
    /// The command could not be started; `code` follows the shell (127 not found, 126 not
    /// executable).
    Spawn { message: String, code: u8 },
}

/// Runs the proxy until the command exits; returns the exit status to exit with.
pub fn run(opts: Options) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Setup(format!("starting the runtime: {e}")))?;
    let result = runtime.block_on(run_async(opts));
    // A monitor's history read may still be in flight; the session is over, do not wait for it.
    runtime.shutdown_background();
    result
}

/// Removes a recording that never got past its header, when the command could not be run.
struct Discard(Option<PathBuf>);

impl Drop for Discard {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn setup<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, Failure> {
    r.map_err(|e| Failure::Setup(format!("{what}: {e}")))
}

async fn run_async(opts: Options) -> Result<u8, Failure> {
    let Some(program) = opts.command.first() else {
        return Err(Failure::Setup("no command to run".into()));
    };
    // Handlers first: from here on a Ctrl-C is the command's to act on, not ours to die of.
    let mut int = setup("installing signal handlers", signal(SignalKind::interrupt()))?;
    let mut term = setup("installing signal handlers", signal(SignalKind::terminate()))?;
    let mut hup = setup("installing signal handlers", signal(SignalKind::hangup()))?;
    let our_in = setup("taking over stdin", dup(&io::stdin()))?;
    let our_out = setup("taking over stdout", dup(&io::stdout()))?;

    let socket_path = match opts.socket.clone() {
        Some(p) => p,
        None => setup("creating the socket directory", socket::default_path("tee"))?,
    };
    let listener = setup(&format!("binding {}", socket_path.display()), socket::bind(&socket_path))?;
    let socket_file = SocketFile::new(socket_path);

    let (hub, mut discard) = open_hub(&opts)?;
    let mut monitors = JoinSet::new();
    // Every monitor may act once the command runs (a guard watching its own tee among them).
    let deferred = Arc::new(Deferred::default());
    let control: Option<Arc<dyn Control>> = Some(deferred.clone());
    if let Some(wait) = opts.first_monitor {
        if let Ok(Ok((stream, _))) = tokio::time::timeout(wait, listener.accept()).await {
            monitors.spawn(hub::serve(hub.clone(), stream, control.clone()));
        }
    }

    let (mut child, child_in, child_out, pid) = spawn_command(program, &opts.command[1..])?;
    discard.0 = None;

    for fd in [our_in.as_fd(), our_out.as_fd(), child_in.as_fd(), child_out.as_fd()] {
        widen_pipe(fd);
    }

    let c2s = Arc::new(Mutex::new(Encoder::new(Dir::ClientToServer, Wrap::Always)));
    let s2c = Arc::new(Mutex::new(Encoder::new(Dir::ServerToClient, Wrap::Always)));
    let (s2c_done_tx, s2c_done) = oneshot::channel::<()>();
    let injector = Arc::new(Injector::new(hub.clone(), Box::new(child_in)));
    deferred.set(injector.clone());
    let to_command = ToCommand(injector.clone());
    spawn_pump("tee-c2s", our_in, to_command, Keep::All, c2s.clone(), hub.clone(), None);
    let keep = Keep::ForClient(injector, Outbound::default());
    spawn_pump("tee-s2c", child_out, our_out, keep, s2c.clone(), hub.clone(), Some(s2c_done_tx));

    let (status_tx, mut status_rx) = oneshot::channel::<io::Result<ExitStatus>>();
    let waiter = std::thread::Builder::new().name("tee-wait".into()).spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    if let Err(e) = waiter {
        // Without a waiter the command's exit would go unnoticed; stop it rather than hang.
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        return Err(Failure::Setup(format!("starting a thread: {e}")));
    }

    let status = loop {
        tokio::select! {
            status = &mut status_rx => break status,
            Some(()) = int.recv() => forward(pid, Signal::SIGINT),
            Some(()) = term.recv() => forward(pid, Signal::SIGTERM),
            Some(()) = hup.recv() => forward(pid, Signal::SIGHUP),
            conn = listener.accept() => match conn {
                // Only our own processes watch the session (the socket's mode says so too, but
                // root and a socket passed on are not bound by it).
                Ok((stream, _)) if socket::check_peer(&stream).is_err() => drop(stream),
                Ok((stream, _)) => {
                    monitors.spawn(hub::serve(hub.clone(), stream, control.clone()));
                }
                // Out of file descriptors, typically: monitors wait, the session does not, and
                // the loop must not spin on an error that persists.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
            Some(_) = monitors.join_next(), if !monitors.is_empty() => {}
        }
    };
    let code = match status {
        Ok(Ok(s)) => exit_code(s),
        Ok(Err(e)) => {
            eprintln!("swarmtop tee: waiting for the command: {e}");
            1
        }
        Err(_) => 1,
    };

    let _ = tokio::time::timeout(DRAIN_GRACE, s2c_done).await;
    finish(&s2c, &hub);
    finish(&c2s, &hub);
    hub.end(i32::from(code));
    drop(listener);
    drop(socket_file);
    let _ = tokio::time::timeout(hub::CLOSE_GRACE + Duration::from_millis(500), async {
        while monitors.join_next().await.is_some() {}
    })
    .await;
    Ok(code)
}

/// The command, in a process group of its own, its stdio piped, and its pid.
fn spawn_command(
    program: &std::ffi::OsStr,
    args: &[OsString],
) -> Result<(std::process::Child, std::process::ChildStdin, std::process::ChildStdout, i32), Failure> {
    let spawned = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == io::ErrorKind::NotFound { 127 } else { 126 };
            let message = format!("cannot run {}: {e}", crate::wire::sanitize_line(&program.to_string_lossy()));
            return Err(Failure::Spawn { message, code });
        }
    };
    // std hands out both pipes for `Stdio::piped()`, and pids fit in an i32.
    let (Some(child_in), Some(child_out), Ok(pid)) =
        (child.stdin.take(), child.stdout.take(), i32::try_from(child.id()))
    else {
        let _ = child.kill();
        return Err(Failure::Setup("the command's stdio pipes are missing".into()));
    };
    Ok((child, child_in, child_out, pid))
}

/// The hub that records and publishes the session, with the recording to remove should the
/// command never start.
fn open_hub(opts: &Options) -> Result<(Arc<Hub>, Discard), Failure> {
    let started = recording::unix_ms();
    let header = recording::header_line(Source::Tee, Some(&opts.command), started);
    let (hub, discard) = match &opts.record {
        RecordTo::Off => (Hub::in_memory(header), Discard(None)),
        RecordTo::Default | RecordTo::Path(_) => {
            let explicit = match &opts.record {
                RecordTo::Path(p) => Some(p.as_path()),
                _ => None,
            };
            let path =
                setup("finding the recordings directory", recording::resolve_path(explicit, Source::Tee, started))?;
            let what = format!("creating the recording {}", path.display());
            let recorder = setup(&what, Recorder::create(&path, &header))?;
            let discard = Discard(Some(path));
            (setup(&what, Hub::recorded(recorder, header))?, discard)
        }
    };
    let hub = match opts.queue_bytes {
        Some(n) => hub.with_queue_bytes(n),
        None => hub,
    };
    Ok((Arc::new(hub), discard))
}

fn dup(fd: &impl AsFd) -> io::Result<File> {
    Ok(File::from(fd.as_fd().try_clone_to_owned()?))
}

/// Best effort: stdio may be a terminal, a file or a socket (nothing to widen), and an unprivileged
/// user past `/proc/sys/fs/pipe-user-pages-soft` keeps the default size; either way the tee works
/// the same, only with more wake-ups.
fn widen_pipe(fd: BorrowedFd<'_>) {
    let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(PIPE_BYTES));
}

fn forward(pid: i32, sig: Signal) {
    // The child may have exited between the signal and now; there is nothing left to tell.
    let _ = kill(Pid::from_raw(pid), sig);
}

/// The shell's convention: the code, or 128 + the signal that killed the command.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}

/// The command's stdin as the client's pump sees it: the injector forwards the client's bytes and
/// puts requests of ours in between its lines. Dropped, it closes the command's stdin.
struct ToCommand(Arc<Injector>);

impl Write for ToCommand {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.forward(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ToCommand {
    fn drop(&mut self) {
        self.0.close_inbound();
    }
}

/// What of a pump's input is forwarded.
enum Keep {
    /// Every byte (the client's side).
    All,
    /// All but the answers to the tee's own requests (the command's side), which go to whoever
    /// asked. When its destination stops taking bytes, the pump stops reading the command's
    /// stdout, so that the command sees the broken pipe just as it would without the tee; the
    /// client's pump keeps recording what the client says after the command closed its stdin.
    ForClient(Arc<Injector>, Outbound),
}

fn spawn_pump<R, W>(
    name: &str,
    from: R,
    to: W,
    keep: Keep,
    encoder: Arc<Mutex<Encoder>>,
    hub: Arc<Hub>,
    done: Option<oneshot::Sender<()>>,
) where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
        pump(from, to, keep, &encoder, &hub);
        if let Some(done) = done {
            let _ = done.send(());
        }
    });
    if let Err(e) = spawned {
        eprintln!("swarmtop tee: starting the {name} thread: {e}");
    }
}

/// Record, then forward, then offer: in that order for every `read`.
fn pump<R: Read, W: Write>(mut from: R, to: W, mut keep: Keep, encoder: &Mutex<Encoder>, hub: &Hub) {
    let mut to = Some(to);
    let mut buf = vec![0u8; READ_BYTES];
    // The records of one read, encoded into the same allocation every time: a fresh buffer per
    // batch of this size would be mapped and faulted in anew for every read.
    let mut records = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let batch = record(encoder, hub, &mut records, |enc, ts, out| enc.encode(ts, chunk, out));
        let forward = match &mut keep {
            Keep::All => std::borrow::Cow::Borrowed(chunk),
            Keep::ForClient(injector, out) => injector.keep_from_client(out, chunk),
        };
        if let Some(w) = to.as_mut() {
            if w.write_all(&forward).is_err() {
                to = None;
                if matches!(keep, Keep::ForClient(..)) {
                    if let Some(b) = &batch {
                        hub.offer(b);
                    }
                    break;
                }
            }
        }
        if let Some(b) = &batch {
            hub.offer(b);
        }
    }
    if let (Keep::ForClient(injector, out), Some(w)) = (&mut keep, to.as_mut()) {
        let _ = w.write_all(&injector.release(out));
    }
    // Closing the command's stdin is how it learns that the client has gone.
    drop(to);
    drop(from);
    finish(encoder, hub);
}

/// Encodes and appends under the encoder's lock, so that the final `finish` cannot slip a
/// partial line in between a pump's encode and its append.
fn record(
    encoder: &Mutex<Encoder>,
    hub: &Hub,
    out: &mut Vec<u8>,
    encode: impl FnOnce(&mut Encoder, i64, &mut Vec<u8>),
) -> Option<Batch> {
    let mut enc = encoder.lock().unwrap_or_else(PoisonError::into_inner);
    let ts = recording::unix_ms();
    out.clear();
    encode(&mut enc, ts, out);
    if out.is_empty() {
        return None;
    }
    let (batch, failed) = hub.append(out, ts);
    if let Some((path, e)) = failed {
        let path = crate::wire::Clean::path(&path);
        eprintln!("swarmtop tee: cannot write the recording {path}: {e}; going on without it");
    }
    Some(batch)
}

fn finish(encoder: &Mutex<Encoder>, hub: &Hub) {
    if let Some(b) = record(encoder, hub, &mut Vec::new(), Encoder::finish) {
        hub.offer(&b);
    }
}
