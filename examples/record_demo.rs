//! Records the demo session that `swarmtop demo` plays: the end-to-end scenario (`tests/support/`) at
//! human pace, run through the real `codex app-server` against the scripted mock model, written as a
//! recording bundle (recording.md). Run it through `demo/record.sh`, which documents the options.
//!
//! ```text
//! usage: record_demo --codex PATH --out FILE [--speed N] [--tee SWARMTOP]
//!   --speed N         N times faster than the shipped demo (default 1: about two minutes)
//!   --tee SWARMTOP    run the server through `SWARMTOP tee --record` and ship the tee's recording;
//!                     without it the client writes the same envelopes from the bytes it saw
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use support::codex_driver::Dir;
use support::harness::run_scenario;
use support::recording;
use support::scenario::Pacing;

struct Args {
    codex: PathBuf,
    out: PathBuf,
    speed: f64,
    tee: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut codex = None;
    let mut out = None;
    let mut speed = 1.0;
    let mut tee = None;
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{} needs a value", arg.to_string_lossy()));
        match arg.to_str() {
            Some("--codex") => codex = Some(absolute(&value()?)?),
            Some("--out") => out = Some(PathBuf::from(value()?)),
            Some("--tee") => tee = Some(absolute(&value()?)?),
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
    Ok(Args { codex: codex.ok_or("--codex PATH is required")?, out: out.ok_or("--out FILE is required")?, speed, tee })
}

/// Programs are launched from the scenario's workspace, so relative paths would not resolve there.
fn absolute(path: &std::ffi::OsStr) -> Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.to_string_lossy()))
}

/// The demo ships in the repository, so what identifies the recording machine is replaced by neutral
/// values (the shared fixtures were treated the same way): the temporary workspace becomes
/// `/home/dev/acme-auth`, `CODEX_HOME` `/home/dev/.codex`, and the host name codex reports in
/// `remoteControl/status/changed` becomes `devbox`. These are plain JSON string contents, so every line
/// stays valid JSON.
fn neutraliser(root: &str) -> impl Fn(&[u8]) -> Vec<u8> + use<> {
    let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    let mut replacements =
        vec![(format!("{root}/codex-home"), "/home/dev/.codex".to_owned()), (root.to_owned(), "/home/dev".to_owned())];
    if !host.is_empty() {
        replacements.push((format!("\"serverName\":\"{host}\""), "\"serverName\":\"devbox\"".to_owned()));
    }
    move |line| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        for (from, to) in &replacements {
            text = text.replace(from.as_str(), to);
        }
        text.into_bytes()
    }
}

/// The shipped file from the tee's own recording: its records as they are (after the path rewrite), under
/// a header that names the command as `codex app-server` rather than the recording machine's path to it.
fn from_tee_recording(tee_rec: &Path, neutral: &dyn Fn(&[u8]) -> Vec<u8>) -> Result<Vec<u8>, String> {
    let text = std::fs::read(tee_rec).map_err(|e| format!("reading {}: {e}", tee_rec.display()))?;
    let mut lines = text.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let header: serde_json::Value =
        lines.next().and_then(|h| serde_json::from_slice(h).ok()).ok_or("the tee's recording has no header")?;
    let started = header["startedMs"].as_u64().ok_or("the tee's header has no startedMs")?;
    let mut out = recording::header(started, &["codex", "app-server"], "demo");
    for line in lines {
        out.extend_from_slice(&neutral(line));
        out.push(b'\n');
    }
    Ok(out)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("record_demo: {e}\nusage: record_demo --codex PATH --out FILE [--speed N] [--tee SWARMTOP]");
            return ExitCode::from(2);
        }
    };
    let pacing = Pacing { scale: Pacing::DEMO.scale / args.speed };
    let (codex, tee) = (args.codex.clone(), args.tee.clone());
    let launch = move |world: &support::harness::World| -> (OsString, Vec<OsString>) {
        match tee {
            None => (codex.into_os_string(), vec!["app-server".into()]),
            Some(swarmtop) => {
                let root = world.root.path();
                let args = vec![
                    "tee".into(),
                    "--socket".into(),
                    root.join("tee.sock").into(),
                    "--record".into(),
                    root.join("tee.ndjson").into(),
                    "--".into(),
                    codex.into_os_string(),
                    "app-server".into(),
                ];
                (swarmtop.into_os_string(), args)
            }
        }
    };
    let run = match run_scenario(Box::new(launch), pacing, Duration::from_secs(600), None).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("record_demo: the session failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let neutral = neutraliser(&run.world.root.path().to_string_lossy());
    let bundle = if args.tee.is_some() {
        let tee_rec = run.world.root.path().join("tee.ndjson");
        // The tee must have recorded exactly what the client received; a demo from a lossy tee would
        // hide the bug it shows.
        match recording::read_bundle(&tee_rec) {
            Ok(b) if b.s2c == run.session.received && b.c2s == run.session.sent => {}
            Ok(_) => {
                eprintln!("record_demo: the tee's recording differs from the bytes on the pipe");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("record_demo: {e}");
                return ExitCode::FAILURE;
            }
        }
        match from_tee_recording(&tee_rec, &neutral) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("record_demo: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        let mut b = recording::header(run.session.started_ms, &["codex", "app-server"], "demo");
        for c in &run.session.transcript {
            let mut c = c.clone();
            c.line = neutral(&c.line);
            b.extend_from_slice(&recording::envelope(&c));
        }
        b
    };
    if let Err(e) = std::fs::write(&args.out, &bundle) {
        eprintln!("record_demo: writing {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    // From the first request to the server's last line (the closing of stdin is not part of the show).
    let first = run.session.transcript.first().map_or(0, |c| c.ts_ms);
    let last = run.session.transcript.iter().rev().find(|c| c.dir == Dir::S2c).map_or(0, |c| c.ts_ms);
    eprintln!(
        "record_demo: {} lines, {} threads, {:.1} s, {} bytes -> {}",
        run.session.transcript.len(),
        run.observed.threads.len(),
        (last - first) as f64 / 1000.0,
        bundle.len(),
        args.out.display()
    );
    ExitCode::SUCCESS
}
