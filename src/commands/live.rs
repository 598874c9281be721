//! Headless consumption of a live source: the `stats` pipeline fed from [`Event`]s instead of
//! files, printing what `stats --json` would print when the stream ends or on Ctrl-C.

use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use tokio::sync::mpsc;

use super::export::finish_live;
use super::stats::render_json;
use super::terminal::{Quit, QuitSignals};
use crate::export::Live;
use crate::pipeline::{Config, Pipeline};
use crate::source::files;
use crate::source::live::{End, Event, Records};
use crate::wire::Origin;

/// What ends a live source's stream when all is well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The tee's `end` marker (attach): anything else — the tee closing the connection first, a
    /// signal to us — leaves the figures partial, which is said, with a non-zero exit.
    Marker,
    /// Only a signal to us (listen): producers come and go, the stream never ends by itself.
    Signal,
}

/// How a consumed stream stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The proxied command's end marker.
    Exited,
    /// The source closed without one.
    Closed,
    Signal(Quit),
}

/// Applies events until the stream ends, the consumer is interrupted (SIGINT, SIGQUIT, SIGTERM,
/// SIGHUP), or the source goes away; then prints the figures, and says so (exit non-zero) when
/// they are only part of a session that should have ended by itself (`ending`). The caller installs
/// `signals` before it makes itself known (binds a socket, says it is ready): a signal sent from then
/// on must find the handlers in place.
pub async fn headless(
    events: mpsc::Receiver<Event>,
    config: Config,
    export: Option<Live>,
    ending: Ending,
    signals: QuitSignals,
) -> Result<ExitCode> {
    let (pipeline, stop) = consume_until(events, config, export, Some(signals)).await?;
    super::print(render_json(&pipeline).as_bytes())?;
    let partial = match (ending, stop) {
        (Ending::Signal, _) | (Ending::Marker, Stop::Exited) => None,
        (Ending::Marker, Stop::Closed) => Some("the tee closed the connection before the session ended".to_owned()),
        (Ending::Marker, Stop::Signal(quit)) => {
            Some(format!("stopped by a signal ({quit:?}) before the session ended"))
        }
    };
    match partial {
        None => Ok(ExitCode::SUCCESS),
        Some(why) => Err(eyre!("the figures above are partial: {why}")),
    }
}

/// Applies events to a pipeline (exporting spans as they end, when asked) until the stream ends
/// or, with `signals`, the consumer is interrupted; then settles the pipeline and the export.
pub async fn consume(
    events: mpsc::Receiver<Event>,
    config: Config,
    export: Option<Live>,
    signals: bool,
) -> Result<Pipeline> {
    let signals = if signals { Some(QuitSignals::new()?) } else { None };
    Ok(consume_until(events, config, export, signals).await?.0)
}

async fn consume_until(
    mut events: mpsc::Receiver<Event>,
    config: Config,
    mut export: Option<Live>,
    mut quit: Option<QuitSignals>,
) -> Result<(Pipeline, Stop)> {
    let mut pipeline = Pipeline::new(config.clone());
    let stop = loop {
        let event = tokio::select! {
            event = events.recv() => event,
            Some(q) = async { Some(quit.as_mut()?.recv().await) } => break Stop::Signal(q),
        };
        match event {
            Some(Event::Ended(End::Exited(_))) => break Stop::Exited,
            None | Some(Event::Ended(End::Closed)) => break Stop::Closed,
            Some(Event::Ended(End::Failed(reason))) => return Err(eyre!(reason.to_string())),
            Some(event) => apply(event, &mut pipeline, &config, &mut export),
        }
    };
    if matches!(stop, Stop::Signal(_)) {
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
    Ok((pipeline, stop))
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
        Event::Oversized { len, head } => {
            let record = files::Record::TooLong { len, head: &head };
            pipeline.feed(record, &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
        }
        Event::Notice(notice) => eprintln!("swarmtop: {notice}"),
        Event::Ended(_)
        | Event::Connected { .. }
        | Event::Live
        | Event::Disconnected { .. }
        | Event::Followed(_)
        | Event::Origin(_)
        | Event::Sessions(_)
        | Event::Stopped { .. }
        | Event::Resumed(_) => {}
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
