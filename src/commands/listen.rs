//! `swarmtop listen [--socket PATH] [--headless] [--record FILE]`: producers push NDJSON into a
//! socket (e.g. `… | nc -U PATH`), each connection its own stream.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr};
use tokio::sync::mpsc;

use super::cli::{GlobalOpts, ListenArgs, MonitorOpts};
use super::export::{live_request, start_live};
use super::live::{Ending, headless};
use super::monitor::{self, Outlets, Watch};
use super::terminal::QuitSignals;
use crate::pipeline::Config;
use crate::source::live::CHANNEL_EVENTS;
use crate::source::recording::{self, Source};
use crate::source::socket::{self, SocketFile};
use crate::source::{inbound, otlp};
use crate::wire::{Clean, sanitize_line};

pub fn run(args: &ListenArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let path = match &args.socket {
        Some(p) => p.clone(),
        None => socket::default_path("listen").wrap_err("creating the socket directory")?,
    };
    let started = recording::unix_ms();
    let header = recording::header_line(Source::Listen, None, started);
    let recorder = recording::open_requested(args.record.record.as_deref(), Source::Listen, started, &header)?;
    let export = start_live(live_request(&args.screen.otlp, true))?;
    // `--otlp` values without a scheme (or none) are where to receive OTLP; URLs are where to send.
    let receive = args.screen.otlp.iter().rfind(|v| !v.contains("://")).map(|v| {
        let addr = if v.is_empty() { otlp::DEFAULT_ADDR } else { v.as_str() };
        addr.parse::<SocketAddr>().wrap_err_with(|| format!("--otlp {addr}: not an address (try 127.0.0.1:4318)"))
    });
    let receive = receive.transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        // Headless, the handlers go in before the socket is bound (the screen installs its own).
        let headless_signals = if args.headless { Some(QuitSignals::new()?) } else { None };
        let shown = Clean::path(&path);
        let listener = socket::bind(&path).wrap_err_with(|| format!("binding {shown}"))?;
        let _socket = SocketFile::new(path.clone());
        let (tx, rx) = mpsc::channel(CHANNEL_EVENTS);
        let mut name = format!("listen {shown}");
        let otlp = match receive {
            Some(addr) => {
                let tcp =
                    tokio::net::TcpListener::bind(addr).await.wrap_err_with(|| format!("binding {addr} for OTLP"))?;
                let bound = tcp.local_addr().unwrap_or(addr);
                let token = otlp_token();
                if !otlp::is_loopback(&bound) {
                    eprintln!(
                        "swarmtop listen: WARNING: receiving OTLP on {bound}, which other machines can reach: \
                         they must send the token (bind 127.0.0.1 to keep it local)"
                    );
                }
                eprintln!("swarmtop listen: receiving OTLP/HTTP traces and logs at http://{bound}");
                name = format!("{name} + otlp {bound}");
                Some(otlp::Receiver { listener: tcp, counters: Arc::new(otlp::Counters::default()), token })
            }
            None => None,
        };
        let receive = otlp.as_ref().map(|r| r.counters.clone());
        tokio::spawn(inbound::listen(listener, otlp, header, recorder, tx));
        if let Some(signals) = headless_signals {
            eprintln!("swarmtop listen: accepting producers on {shown}");
            let code = headless(rx, config, export, Ending::Signal, signals).await;
            if let Some(c) = &receive {
                eprintln!("swarmtop listen: OTLP received: {}", c.describe());
            }
            code
        } else {
            let watch = Watch::Live { name: sanitize_line(&name), events: rx };
            let opts = MonitorOpts::live(&args.screen, &args.record);
            let past = Some(monitor::past_access(&opts, &config, global));
            monitor::screen(watch, &opts, config, Outlets { export, receive, past }).await
        }
    })
}

/// The token senders other than us must present: made (and shown, this once) the first time.
/// Without one (no data folder, or a token file others can read) only our own processes can send.
fn otlp_token() -> Option<Arc<otlp::trust::Token>> {
    let Some(path) = otlp::trust::default_token_path() else {
        eprintln!("swarmtop listen: no HOME or XDG_DATA_HOME to keep an OTLP token in: only you can send");
        return None;
    };
    let shown = Clean::path(&path);
    let token = match otlp::trust::Token::load_or_create(&path) {
        Ok((token, true)) => {
            eprintln!(
                "swarmtop listen: OTLP senders other than you (another user, another machine) must send \
                 `Authorization: Bearer {}`; it is kept in {shown} and not shown again",
                token.secret()
            );
            token
        }
        Ok((token, false)) => {
            eprintln!("swarmtop listen: OTLP senders other than you must send the bearer token kept in {shown}");
            token
        }
        Err(e) => {
            let e = crate::wire::sanitize_line(&e.to_string());
            eprintln!("swarmtop listen: WARNING: no OTLP token ({}): only you can send", e.as_str());
            return None;
        }
    };
    Some(Arc::new(token))
}
