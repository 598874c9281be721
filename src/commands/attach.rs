//! `swarmtop attach [SOCKET] [--headless] [--record FILE]`: find a running tee and follow it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr, bail};
use tokio::sync::mpsc;

use super::cli::{AttachArgs, GlobalOpts, MonitorOpts};
use super::export::{live_request, start_live};
use super::live::{Ending, headless};
use super::monitor::{self, Outlets, Watch};
use super::terminal::QuitSignals;
use crate::pipeline::Config;
use crate::source::attach::{self, Discovery, Options};
use crate::source::live::CHANNEL_EVENTS;
use crate::source::recording::{self, Source};
use crate::wire::{Clean, sanitize_line};

pub fn run(args: &AttachArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let path = match &args.socket {
        Some(p) => p.clone(),
        None => match pick()? {
            Some(p) => p,
            None => return Ok(ExitCode::from(2)),
        },
    };
    let started = recording::unix_ms();
    let header = recording::header_line(Source::Attach, None, started);
    let record = recording::open_requested(args.record.record.as_deref(), Source::Attach, started, &header)?;
    let export = start_live(live_request(&args.screen.otlp, false))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        // Headless, the handlers go in before the socket is bound (the screen installs its own).
        let headless_signals = if args.headless { Some(QuitSignals::new()?) } else { None };
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        let name = Clean::path(path.file_name().map_or(path.as_path(), std::path::Path::new));
        // Headless runs end with the stream; the screen stays, reconnects if the tee restarts and,
        // when the tee was found rather than named, follows a restarted tee to its new socket.
        let reconnect = !args.headless;
        let rediscover = (reconnect && args.socket.is_none()).then(|| path.parent().map(PathBuf::from)).flatten();
        tokio::spawn(attach::run(Options { path, reconnect, record, rediscover }, tx));
        if let Some(signals) = headless_signals {
            headless(rx, config, export, Ending::Marker, signals).await
        } else {
            let watch = Watch::Live { name: sanitize_line(&format!("attach {name}")), events: rx };
            let opts = MonitorOpts::live(&args.screen, &args.record);
            let past = Some(monitor::past_access(&opts, &config, global));
            monitor::screen(watch, &opts, config, Outlets { export, receive: None, past }).await
        }
    })
}

/// The socket to attach to when none was given: the only running tee, or the user's pick among
/// several (`None`: several and nobody to ask; they were listed and the exit status is 2).
fn pick() -> Result<Option<PathBuf>> {
    let discovered = attach::discover().wrap_err("looking for running tees")?;
    let mut err = std::io::stderr().lock();
    for why in &discovered.refused {
        writeln!(err, "swarmtop: ignoring {why}")?;
    }
    let found = match discovered.pick {
        Discovery::None { dir } => bail!("no running `swarmtop tee` found in {}", Clean::path(&dir)),
        Discovery::One(path) => return Ok(Some(path)),
        Discovery::Several(found) => found,
    };
    writeln!(err, "running tees (newest first):")?;
    for (i, f) in found.iter().enumerate() {
        writeln!(err, "  {}) {}", i + 1, attach::describe(f))?;
    }
    if !std::io::stdin().is_terminal() {
        writeln!(err, "swarmtop: several tees are running; name one: swarmtop attach SOCKET")?;
        return Ok(None);
    }
    loop {
        write!(err, "attach to [1-{}]: ", found.len())?;
        err.flush()?;
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer)? == 0 {
            return Ok(None);
        }
        match answer.trim().parse::<usize>() {
            Ok(n) if (1..=found.len()).contains(&n) => return Ok(Some(found[n - 1].path.clone())),
            _ => writeln!(err, "type a number from 1 to {}", found.len())?,
        }
    }
}
