//! `swarmtop tee [--socket PATH] [--record FILE | --no-record] [--otlp [URL]] -- CMD [ARGS…]`.

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
    // The exporter watches the session like any monitor, through the socket, so the pumps never
    // wait for it: a lagging monitor is dropped and resyncs, the session goes on.
    let socket = match (&args.socket, &export) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(_)) => Some(socket::default_path("tee").wrap_err("creating the socket directory")?),
        (None, None) => None,
    };
    let done = Arc::new(AtomicBool::new(false));
    let watcher = match (export, &socket) {
        (Some(x), Some(path)) => Some(watch(path.clone(), config, x, done.clone())?),
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
    if let Some(w) = watcher {
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

/// A headless monitor of the tee's own socket, on its own thread, that exports what it sees.
fn watch(path: PathBuf, config: Config, export: Live, done: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let thread = std::thread::Builder::new().name("tee-otlp".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async move {
            let since = Instant::now();
            while !path.exists() {
                if done.load(Ordering::Relaxed) || since.elapsed() > SOCKET_WAIT {
                    eprintln!("swarmtop tee: OTLP export: the session's socket never appeared");
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
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
