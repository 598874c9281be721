//! `swarmtop listen [--socket PATH] [--headless] [--record FILE]`: producers push NDJSON into a
//! socket (e.g. `… | nc -U PATH`), each connection its own stream.

use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr};
use tokio::sync::mpsc;

use super::cli::ListenArgs;
use super::live::{Ending, headless};
use super::monitor::{self, Watch};
use crate::pipeline::Config;
use crate::source::inbound;
use crate::source::live::CHANNEL_EVENTS;
use crate::source::recording::{self, Source};
use crate::source::socket::{self, SocketFile};
use crate::wire::Clean;

pub fn run(args: &ListenArgs, config: Config) -> Result<ExitCode> {
    let path = match &args.socket {
        Some(p) => p.clone(),
        None => socket::default_path("listen").wrap_err("creating the socket directory")?,
    };
    let started = recording::unix_ms();
    let header = recording::header_line(Source::Listen, None, started);
    let recorder = recording::open_requested(args.monitor.record.as_deref(), Source::Listen, started, &header)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let shown = Clean::path(&path);
        let listener = socket::bind(&path).wrap_err_with(|| format!("binding {shown}"))?;
        let _socket = SocketFile::new(path.clone());
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        tokio::spawn(inbound::listen(listener, header, recorder, tx));
        if args.headless {
            eprintln!("swarmtop listen: accepting producers on {shown}");
            headless(rx, config, Ending::Signal).await
        } else {
            let watch = Watch::Live { name: format!("listen {shown}"), events: rx };
            monitor::screen(watch, &args.monitor, config).await
        }
    })
}
