//! Records the demo session that `swarmtop demo` plays: the end-to-end scenario (`tests/support/`) at
//! human pace, run through the real `codex app-server` against the scripted mock model, written as a
//! recording bundle (recording.md). Run it through `demo/record.sh`, which documents the options.
//!
//! ```text
//! usage: record_demo --codex PATH --out FILE [--speed N]
//!   --speed N   N times faster than the shipped demo (default 1: about two minutes)
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use support::codex_driver::Captured;
use support::harness::run_scenario;
use support::recording;
use support::scenario::Pacing;

struct Args {
    codex: PathBuf,
    out: PathBuf,
    speed: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut codex = None;
    let mut out = None;
    let mut speed = 1.0;
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{} needs a value", arg.to_string_lossy()))
        };
        match arg.to_str() {
            Some("--codex") => codex = Some(PathBuf::from(value()?)),
            Some("--out") => out = Some(PathBuf::from(value()?)),
            Some("--speed") => {
                speed = value()?
                    .to_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| *s > 0.0)
                    .ok_or("--speed takes a positive number")?;
            }
            _ => return Err(format!("unknown argument {}", arg.to_string_lossy())),
        }
    }
    Ok(Args {
        codex: codex.ok_or("--codex PATH is required")?,
        out: out.ok_or("--out FILE is required")?,
        speed,
    })
}

/// The demo ships in the repository, so what identifies the recording machine is replaced by neutral
/// values (the shared fixtures were treated the same way): the temporary workspace becomes
/// `/home/dev/acme-auth`, `CODEX_HOME` `/home/dev/.codex`, and the host name codex reports in
/// `remoteControl/status/changed` becomes `devbox`. These are plain JSON string contents, so every line
/// stays valid JSON.
fn neutral_paths(transcript: &mut [Captured], root: &str) {
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut replacements = vec![
        (format!("{root}/codex-home"), "/home/dev/.codex".to_owned()),
        (root.to_owned(), "/home/dev".to_owned()),
    ];
    if !host.is_empty() {
        replacements.push((
            format!("\"serverName\":\"{host}\""),
            "\"serverName\":\"devbox\"".to_owned(),
        ));
    }
    for c in transcript {
        let mut text = String::from_utf8_lossy(&c.line).into_owned();
        for (from, to) in &replacements {
            text = text.replace(from.as_str(), to);
        }
        c.line = text.into_bytes();
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("record_demo: {e}\nusage: record_demo --codex PATH --out FILE [--speed N]");
            return ExitCode::from(2);
        }
    };
    let pacing = Pacing {
        scale: Pacing::DEMO.scale / args.speed,
    };
    let codex = args.codex.clone();
    let run = run_scenario(
        Box::new(move |_| (codex.into_os_string(), vec!["app-server".into()])),
        pacing,
        Duration::from_secs(600),
        None,
    )
    .await;
    let mut run = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("record_demo: the session failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let root = run.world.root.path().to_string_lossy().into_owned();
    neutral_paths(&mut run.session.transcript, &root);
    // INTEGRATION(tee): once `swarmtop tee --record` lands, launch the server through it instead and ship
    // its recording (then with the same path rewrite); the bytes are the same, the tee is the real thing.
    let header = recording::header(run.session.started_ms, &["codex", "app-server"], "demo");
    if let Err(e) = recording::write_bundle(&args.out, &header, &run.session.transcript) {
        eprintln!("record_demo: writing {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let first = run.session.transcript.first().map_or(0, |c| c.ts_ms);
    let last = run.session.transcript.last().map_or(0, |c| c.ts_ms);
    let size = std::fs::metadata(&args.out).map_or(0, |m| m.len());
    eprintln!(
        "record_demo: {} lines, {} threads, {:.1} s, {} bytes -> {}",
        run.session.transcript.len(),
        run.observed.threads.len(),
        (last - first) as f64 / 1000.0,
        size,
        args.out.display()
    );
    ExitCode::SUCCESS
}
