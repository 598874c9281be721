//! `swarmtop tee [--socket PATH] [--record FILE | --no-record] [--otlp [URL]] [GUARDS] -- CMD [ARGS…]`.
//!
//! Exporting and guarding watch the session like any monitor, through the tee's own socket, each on
//! a thread of its own, so the pumps never wait for them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, WrapErr, eyre};
use tokio::sync::mpsc;

use super::cli::TeeArgs;
use super::export::{live_request, start_live};
use super::live::consume;
use crate::act::Limits;
use crate::export::Live;
use crate::pipeline::Config;
use crate::source::attach;
use crate::source::live::CHANNEL_EVENTS;
use crate::source::socket;
use crate::source::tee::{self, Failure, Options, RecordTo};

/// How long the exporting monitor waits for the tee's socket to appear.
const SOCKET_WAIT: Duration = Duration::from_secs(10);

pub fn run(args: &TeeArgs, config: Config) -> Result<ExitCode> {
    let record = match (&args.record, args.no_record) {
        (_, true) => RecordTo::Off,
        (Some(path), false) => RecordTo::Path(path.clone()),
        (None, false) => RecordTo::Default,
    };
    let export = start_live(args.otlp.as_ref().and_then(|v| live_request(std::slice::from_ref(v), false)))?;
    let limits = args.guards.limits();
    // A lagging watcher is dropped and resyncs; the session goes on.
    let socket = match (&args.socket, export.is_some() || !limits.is_empty()) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => Some(socket::default_path("tee").wrap_err("creating the socket directory")?),
        (None, false) => None,
    };
    let done = Arc::new(AtomicBool::new(false));
    let watcher = match (export, &socket) {
        (Some(x), Some(path)) => Some(watch(path.clone(), config.clone(), x, done.clone())?),
        _ => None,
    };
    let guard = match (&socket, limits.is_empty()) {
        (Some(path), false) => Some(guard(path.clone(), config, limits, done.clone())?),
        _ => None,
    };
    let opts = Options {
        command: args.command.clone(),
        socket,
        record,
        queue_bytes: args.monitor_queue_bytes,
        first_monitor: watcher.is_some().then_some(SOCKET_WAIT),
    };
    let result = tee::run(opts);
    done.store(true, Ordering::Relaxed);
    for w in [watcher, guard].into_iter().flatten() {
        let _ = w.join();
    }
    match result {
        Ok(code) => Ok(ExitCode::from(code)),
        Err(Failure::Setup(message)) => Err(eyre!(message)),
        Err(Failure::Spawn { message, code }) => {
            eprintln!("swarmtop tee: {message}");
            Ok(ExitCode::from(code))
        }
    }
}

/// Waits for the tee's socket to appear; `false` when the tee is over or the socket never came.
async fn socket_up(path: &std::path::Path, done: &AtomicBool, what: &str) -> bool {
    let since = Instant::now();
    while !path.exists() {
        if done.load(Ordering::Relaxed) || since.elapsed() > SOCKET_WAIT {
            eprintln!("swarmtop tee: {what}: the session's socket never appeared");
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// The tee's guards, on their own thread (`act::watch`).
fn guard(path: PathBuf, config: Config, limits: Limits, done: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let thread = std::thread::Builder::new().name("tee-guard".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async move {
            if !socket_up(&path, &done, "guard").await {
                return;
            }
            if let Err(e) = crate::act::watch::guard(&path, config, limits).await {
                eprintln!("swarmtop tee: guard: {e}");
            }
        });
    })?;
    Ok(thread)
}

/// A headless monitor of the tee's own socket, on its own thread, that exports what it sees.
fn watch(path: PathBuf, config: Config, export: Live, done: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let thread = std::thread::Builder::new().name("tee-otlp".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async move {
            if !socket_up(&path, &done, "OTLP export").await {
                return;
            }
            let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
            let opts = attach::Options { path, reconnect: false, record: None, rediscover: None };
            tokio::spawn(attach::run(opts, tx));
            if let Err(e) = consume(rx, config, Some(export), false).await {
                eprintln!("swarmtop tee: OTLP export: {e}");
            }
        });
    })?;
    Ok(thread)
}
