//! `swarmtop listen [--socket PATH] [--headless] [--record FILE]`: producers push NDJSON into a
//! socket (e.g. `… | nc -U PATH`), each connection its own stream.

use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr, bail};
use tokio::sync::mpsc;

use super::cli::ListenArgs;
use super::live::headless;
use crate::pipeline::Config;
use crate::source::inbound;
use crate::source::live::CHANNEL_EVENTS;
use crate::source::recording::{self, Recorder, Source};
use crate::source::socket::{self, SocketFile};

pub fn run(args: &ListenArgs, config: Config) -> Result<ExitCode> {
    if !args.headless {
        bail!("the monitor screen is not available in this build yet; use `swarmtop listen --headless`");
    }
    let path = match &args.socket {
        Some(p) => p.clone(),
        None => socket::default_path("listen").wrap_err("creating the socket directory")?,
    };
    let started = recording::unix_ms();
    let header = recording::header_line(Source::Listen, None, started);
    let recorder = match &args.monitor.record {
        Some(file) => {
            let path = recording::resolve_path(Some(file), Source::Listen, started)?;
            Some(
                Recorder::create(&path, &header)
                    .wrap_err_with(|| format!("creating the recording {}", path.display()))?,
            )
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = socket::bind(&path).wrap_err_with(|| format!("binding {}", path.display()))?;
        let _socket = SocketFile::new(path.clone());
        eprintln!("swarmtop listen: accepting producers on {}", path.display());
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        tokio::spawn(inbound::listen(listener, header, recorder, tx));
        headless(rx, config).await
    })
}
