//! A stdio client of the Codex app-server protocol that keeps every byte it sent and received.
//!
//! It launches whatever command line it is given (`codex app-server` directly, or `swarmtop tee … --
//! codex app-server`: to the client both are the same pipe), starts one thread and one turn, waits until
//! every thread of the tree has finished, reads each child with `thread/read` (as real clients do, and
//! as the shared fixture `collab_v1.client.ndjson` shows), then closes stdin and waits for the exit.
//!
//! Requests are the ones of the fixture client: `initialize`, `initialized`, `thread/start`,
//! `turn/start`, `thread/read`. Lines are newline-terminated JSON without `"jsonrpc"` (wire.md §1).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

/// Which way a line went, in the terms of recording.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    C2s,
    S2c,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }
}

/// One line as the client saw it: when, which way, and its bytes without the newline.
#[derive(Clone, Debug)]
pub struct Captured {
    pub ts_ms: u64,
    pub dir: Dir,
    pub line: Vec<u8>,
    /// The stream ended without a newline after this line.
    pub partial: bool,
}

/// The command line that serves the protocol on its stdio.
pub struct ServerCommand {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    /// Variables to remove from the inherited environment (proxies: the mock is on loopback).
    pub env_remove: Vec<OsString>,
    pub cwd: PathBuf,
    pub stderr: PathBuf,
}

pub struct DriveOptions {
    pub prompt: String,
    /// The `cwd` of `thread/start`.
    pub thread_cwd: String,
    /// The run is over once every thread is finished and the server has been silent this long
    /// (children's last lines can trail their `turn/completed`).
    pub quiet: Duration,
    /// Give up (and fail) after this long.
    pub timeout: Duration,
    /// Fired when the first child is registered, so a test can act mid-run (attach a monitor).
    pub on_first_child: Option<oneshot::Sender<()>>,
}

/// Everything the client saw, in order.
#[derive(Debug)]
pub struct Session {
    pub started_ms: u64,
    pub transcript: Vec<Captured>,
    /// Exact bytes written to the server's stdin.
    pub sent: Vec<u8>,
    /// Exact bytes read from the server's stdout.
    pub received: Vec<u8>,
    pub root_thread: String,
    /// Children in registration order (from spawn items, any depth).
    pub children: Vec<String>,
    /// Requests the server made of the client (approvals, user input). This client declines them all.
    pub server_requests: Vec<Value>,
    pub exit_code: Option<i32>,
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

type Shared<T> = Arc<Mutex<T>>;

struct Io {
    stdin: Option<ChildStdin>,
    transcript: Shared<Vec<Captured>>,
    sent: Vec<u8>,
    rx: mpsc::UnboundedReceiver<Value>,
    next_id: u64,
}

/// What the client tracks to know when the tree is finished.
#[derive(Default)]
struct Progress {
    root: Option<String>,
    root_turn_done: bool,
    children: Vec<String>,
    /// threadId -> (turns started, turns completed)
    turns: Vec<(String, usize, usize)>,
    server_requests: Vec<Value>,
}

impl Progress {
    fn turn(&mut self, thread: &str) -> &mut (String, usize, usize) {
        if let Some(i) = self.turns.iter().position(|t| t.0 == thread) {
            &mut self.turns[i]
        } else {
            self.turns.push((thread.to_owned(), 0, 0));
            self.turns.last_mut().expect("just pushed")
        }
    }

    fn observe(&mut self, msg: &Value) {
        let params = msg.get("params");
        let thread = params.and_then(|p| p.get("threadId")).and_then(Value::as_str).unwrap_or_default();
        match msg.get("method").and_then(Value::as_str) {
            Some("turn/started") => self.turn(thread).1 += 1,
            Some("turn/completed") => {
                self.turn(thread).2 += 1;
                if self.root.as_deref() == Some(thread) {
                    self.root_turn_done = true;
                }
            }
            Some("item/started" | "item/completed") => {
                let item = params.and_then(|p| p.get("item"));
                let is_spawn = item.and_then(|i| i.get("type")).and_then(Value::as_str) == Some("collabAgentToolCall")
                    && item.and_then(|i| i.get("tool")).and_then(Value::as_str) == Some("spawnAgent");
                if is_spawn {
                    let receivers = item.and_then(|i| i.get("receiverThreadIds")).and_then(Value::as_array);
                    for id in receivers.into_iter().flatten().filter_map(Value::as_str) {
                        if !self.children.iter().any(|c| c == id) {
                            self.children.push(id.to_owned());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The root's turn is over, every child has completed a turn, and no turn is open.
    fn finished(&self) -> bool {
        self.root_turn_done
            && self.children.iter().all(|c| self.turns.iter().any(|t| &t.0 == c && t.2 > 0))
            && self.turns.iter().all(|t| t.2 >= t.1)
    }

    fn describe(&self) -> String {
        format!(
            "root={:?} root_turn_done={} children={} turns(started,completed)={:?}",
            self.root,
            self.root_turn_done,
            self.children.len(),
            self.turns.iter().map(|t| (t.1, t.2)).collect::<Vec<_>>()
        )
    }
}

impl Io {
    async fn send(&mut self, msg: &Value) -> Result<(), String> {
        let line = serde_json::to_vec(msg).expect("serialising a Value cannot fail");
        // Kept before it is written, like the tee: whatever reached the server is in the transcript.
        self.transcript.lock().expect("transcript poisoned").push(Captured {
            ts_ms: now_ms(),
            dir: Dir::C2s,
            line: line.clone(),
            partial: false,
        });
        self.sent.extend_from_slice(&line);
        self.sent.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        stdin.write_all(&line).await.map_err(|e| format!("writing to the server: {e}"))?;
        stdin.write_all(b"\n").await.map_err(|e| format!("writing to the server: {e}"))?;
        stdin.flush().await.map_err(|e| format!("writing to the server: {e}"))
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"method": method, "id": id, "params": params})).await?;
        Ok(id)
    }

    /// The next server message, handling server requests on the way.
    async fn next(&mut self, progress: &mut Progress, wait: Duration) -> Result<Option<Value>, String> {
        match tokio::time::timeout(wait, self.rx.recv()).await {
            Err(_) => Ok(None),
            Ok(None) => Err(format!("the server closed its stdout early ({})", progress.describe())),
            Ok(Some(msg)) => {
                progress.observe(&msg);
                if msg.get("method").is_some() {
                    if let Some(id) = msg.get("id").cloned() {
                        // Approvals and questions should not happen with `approvalPolicy: never`; decline
                        // rather than hang, and let the test see that it happened.
                        progress.server_requests.push(msg.clone());
                        self.send(&json!({"id": id, "error": {"code": -32601, "message": "not supported by the test client"}}))
                            .await?;
                    }
                }
                Ok(Some(msg))
            }
        }
    }

    async fn response(&mut self, id: u64, progress: &mut Progress, deadline: Instant) -> Result<Value, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no response to request {id} in time ({})", progress.describe()));
            }
            if let Some(msg) = self.next(progress, left).await? {
                if msg.get("method").is_none() && msg.get("id").and_then(Value::as_u64) == Some(id) {
                    if let Some(err) = msg.get("error") {
                        return Err(format!("request {id} failed: {err}"));
                    }
                    return Ok(msg);
                }
            }
        }
    }
}

fn spawn_reader(
    child: &mut Child,
    transcript: Shared<Vec<Captured>>,
    received: Shared<Vec<u8>>,
    tx: mpsc::UnboundedSender<Value>,
) -> tokio::task::JoinHandle<()> {
    let stdout = child.stdout.take().expect("stdout is piped");
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let ts_ms = now_ms();
            received.lock().expect("received poisoned").extend_from_slice(&buf);
            let partial = buf.last() != Some(&b'\n');
            let line = if partial { &buf[..] } else { &buf[..buf.len() - 1] };
            transcript.lock().expect("transcript poisoned").push(Captured {
                ts_ms,
                dir: Dir::S2c,
                line: line.to_vec(),
                partial,
            });
            // Lines that are not JSON stay in the transcript (the test counts them); they drive nothing.
            if let Ok(msg) = serde_json::from_slice::<Value>(line) {
                let _ = tx.send(msg);
            }
        }
    })
}

/// Runs one session to the end. On error the message says how far the run got.
pub async fn drive(cmd: ServerCommand, mut opts: DriveOptions) -> Result<Session, String> {
    let started_ms = now_ms();
    let stderr = std::fs::File::create(&cmd.stderr).map_err(|e| format!("creating {}: {e}", cmd.stderr.display()))?;
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .current_dir(&cmd.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true);
    for k in &cmd.env_remove {
        command.env_remove(k);
    }
    command.envs(cmd.env.iter().map(|(k, v)| (k, v)));
    let mut child = command.spawn().map_err(|e| format!("launching {:?}: {e}", cmd.program))?;

    let transcript: Shared<Vec<Captured>> = Arc::default();
    let received: Shared<Vec<u8>> = Arc::default();
    let (tx, rx) = mpsc::unbounded_channel();
    let reader = spawn_reader(&mut child, Arc::clone(&transcript), Arc::clone(&received), tx);
    let mut io =
        Io { stdin: child.stdin.take(), transcript: Arc::clone(&transcript), sent: Vec::new(), rx, next_id: 1 };
    let mut progress = Progress::default();
    let deadline = Instant::now() + opts.timeout;

    let init = io
        .request(
            "initialize",
            json!({"clientInfo": {"name": "swarmtop-e2e", "title": null, "version": env!("CARGO_PKG_VERSION")},
                   "capabilities": {"experimentalApi": true}}),
        )
        .await?;
    io.response(init, &mut progress, deadline).await?;
    io.send(&json!({"method": "initialized"})).await?;
    let start = io
        .request(
            "thread/start",
            json!({"cwd": opts.thread_cwd, "approvalPolicy": "never", "sandbox": "danger-full-access"}),
        )
        .await?;
    let started = io.response(start, &mut progress, deadline).await?;
    let root = started
        .pointer("/result/thread/id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("thread/start gave no thread id: {started}"))?
        .to_owned();
    progress.root = Some(root.clone());
    let turn =
        io.request("turn/start", json!({"threadId": root, "input": [{"type": "text", "text": opts.prompt}]})).await?;
    io.response(turn, &mut progress, deadline).await?;

    // Until the whole tree is done: every message counts, and silence only ends the run once finished.
    loop {
        if Instant::now() > deadline {
            return Err(format!("the session did not finish in {:?} ({})", opts.timeout, progress.describe()));
        }
        let msg = io.next(&mut progress, opts.quiet).await?;
        if !progress.children.is_empty() {
            if let Some(tx) = opts.on_first_child.take() {
                let _ = tx.send(());
            }
        }
        if msg.is_none() && progress.finished() {
            break;
        }
    }

    for child_id in progress.children.clone() {
        let read = io.request("thread/read", json!({"threadId": child_id, "includeTurns": false})).await?;
        io.response(read, &mut progress, deadline).await?;
    }

    // Closing stdin is how a client ends an app-server session.
    io.stdin = None;
    let exit_code = if let Ok(status) = tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        status.map_err(|e| format!("waiting for the server: {e}"))?.code()
    } else {
        let _ = child.kill().await;
        None
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    // Messages that arrived after the last response still update the progress (none are expected).
    while let Ok(msg) = io.rx.try_recv() {
        progress.observe(&msg);
    }

    let transcript = std::mem::take(&mut *transcript.lock().expect("transcript poisoned"));
    let received = std::mem::take(&mut *received.lock().expect("received poisoned"));
    Ok(Session {
        started_ms,
        transcript,
        sent: io.sent,
        received,
        root_thread: root,
        children: progress.children,
        server_requests: progress.server_requests,
        exit_code,
    })
}
