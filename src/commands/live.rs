//! Headless consumption of a live source: the `stats` pipeline fed from [`Event`]s instead of
//! files, printing what `stats --json` would print when the stream ends or on Ctrl-C.

use std::io::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::export::finish_live;
use super::stats::render_json;
use crate::export::Live;
use crate::pipeline::{Config, Pipeline};
use crate::source::files;
use crate::source::live::{End, Event, Records};
use crate::wire::Origin;

/// Applies events until the stream ends, the consumer is interrupted (SIGINT or SIGTERM), or the
/// source goes away; then prints the figures.
pub async fn headless(events: mpsc::Receiver<Event>, config: Config, export: Option<Live>) -> Result<ExitCode> {
    let pipeline = consume(events, config, export, true).await?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(render_json(&pipeline).as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Applies events to a pipeline (exporting spans as they end, when asked) until the stream ends
/// or, with `signals`, the consumer is interrupted; then settles the pipeline and the export.
pub async fn consume(
    mut events: mpsc::Receiver<Event>,
    config: Config,
    mut export: Option<Live>,
    signals: bool,
) -> Result<Pipeline> {
    let mut pipeline = Pipeline::new(config.clone());
    let mut interrupt = signals.then(|| signal(SignalKind::interrupt())).transpose()?;
    let mut terminate = signals.then(|| signal(SignalKind::terminate())).transpose()?;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            Some(()) = async { interrupt.as_mut()?.recv().await } => { interrupted = true; break }
            Some(()) = async { terminate.as_mut()?.recv().await } => { interrupted = true; break }
        };
        match event {
            None | Some(Event::Ended(End::Exited(_) | End::Closed)) => break,
            Some(Event::Ended(End::Failed(reason))) => return Err(eyre!(reason)),
            Some(event) => apply(event, &mut pipeline, &config, &mut export),
        }
    }
    if interrupted {
        // What the source had already taken in (an acknowledged OTLP request, a line read) still
        // counts: apply what arrives until the source has been quiet a moment.
        let until = tokio::time::Instant::now() + SETTLE_MAX;
        while let Ok(Some(event)) = tokio::time::timeout(SETTLE_QUIET, events.recv()).await {
            match event {
                Event::Ended(_) => break,
                event => apply(event, &mut pipeline, &config, &mut export),
            }
            if tokio::time::Instant::now() >= until {
                break;
            }
        }
    }
    pipeline.finish();
    if let Some(x) = export {
        finish_live(x, &pipeline.model, pipeline.format());
    }
    Ok(pipeline)
}

/// After Ctrl-C, how long the source may be quiet before the figures are final, and at most how
/// long to wait for it.
const SETTLE_QUIET: std::time::Duration = std::time::Duration::from_millis(150);
const SETTLE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

fn apply(event: Event, pipeline: &mut Pipeline, config: &Config, export: &mut Option<Live>) {
    match event {
        // The history that follows rebuilds the same model from scratch.
        Event::Reset(_) => {
            *pipeline = Pipeline::new(config.clone());
            if let Some(x) = export {
                x.reset();
            }
        }
        Event::Records(records) => {
            feed(pipeline, &records);
            if let Some(x) = export {
                x.update(&pipeline.model, pipeline.format());
            }
        }
        // Origins and machine snapshots come only from the machine view's source.
        Event::Ended(_)
        | Event::Connected { .. }
        | Event::Live
        | Event::Disconnected { .. }
        | Event::Followed(_)
        | Event::Origin(_)
        | Event::Sessions(_) => {}
    }
}

/// The same record splitting as for files (blank lines, the length bound), so that a live view
/// and `stats` on its recording agree.
fn feed(pipeline: &mut Pipeline, records: &Records) {
    let bytes = records.as_bytes();
    // Reading from memory cannot fail.
    let _ = files::read_records(bytes, files::MAX_LINE, |record| {
        pipeline.feed(record, &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
    });
}
