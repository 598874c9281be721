//! Headless consumption of a live source: the `stats` pipeline fed from [`Event`]s instead of
//! files, printing what `stats --json` would print when the stream ends or on Ctrl-C.

use std::io::Write as _;
use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::stats::render_json;
use crate::pipeline::{Config, Pipeline};
use crate::source::files;
use crate::source::live::{End, Event, Records};
use crate::wire::Origin;

/// Applies events until the stream ends, the consumer is interrupted (SIGINT or SIGTERM), or the
/// source goes away; then prints the figures.
pub async fn headless(mut events: mpsc::Receiver<Event>, config: Config) -> Result<ExitCode> {
    let mut pipeline = Pipeline::new(config.clone());
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        };
        match event {
            None | Some(Event::Ended(End::Exited(_) | End::Closed)) => break,
            Some(Event::Ended(End::Failed(reason))) => return Err(eyre!(reason)),
            // The history that follows rebuilds the same model from scratch.
            Some(Event::Reset(_)) => pipeline = Pipeline::new(config.clone()),
            Some(Event::Records(records)) => feed(&mut pipeline, &records),
            // Origins and machine snapshots come only from the machine view's source.
            Some(
                Event::Connected { .. }
                | Event::Live
                | Event::Disconnected { .. }
                | Event::Origin(_)
                | Event::Sessions(_),
            ) => {}
        }
    }
    pipeline.finish();
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(render_json(&pipeline).as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
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
