//! Headless consumption of a live source: the `stats` pipeline fed from [`Event`]s instead of
//! files, printing what `stats --json` would print when the stream ends or on Ctrl-C.

use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};
use tokio::sync::mpsc;

use super::stats::render_json;
use super::terminal::QuitSignals;
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

/// Applies events until the stream ends, the consumer is interrupted (SIGINT, SIGQUIT, SIGTERM,
/// SIGHUP), or the source goes away; then prints the figures.
pub async fn headless(mut events: mpsc::Receiver<Event>, config: Config, ending: Ending) -> Result<ExitCode> {
    let mut pipeline = Pipeline::new(config.clone());
    let mut signals = QuitSignals::new()?;
    let partial = loop {
        let event = tokio::select! {
            event = events.recv() => event,
            quit = signals.recv() => break match ending {
                Ending::Marker => Some(format!("stopped by a signal ({quit:?}) before the session ended")),
                Ending::Signal => None,
            },
        };
        match event {
            Some(Event::Ended(End::Exited(_))) => break None,
            None | Some(Event::Ended(End::Closed)) => {
                break (ending == Ending::Marker)
                    .then(|| "the tee closed the connection before the session ended".to_owned());
            }
            Some(Event::Ended(End::Failed(reason))) => return Err(eyre!(reason)),
            // The history that follows rebuilds the same model from scratch.
            Some(Event::Reset(_)) => pipeline = Pipeline::new(config.clone()),
            Some(Event::Records(records)) => feed(&mut pipeline, &records),
            Some(Event::Oversized { len, head }) => {
                let record = files::Record::TooLong { len, head: &head };
                pipeline.feed(record, &Origin::NONE, &mut |_: &crate::router::Event<'_, '_>| {});
            }
            Some(Event::Notice(notice)) => eprintln!("swarmtop: {}", crate::wire::sanitize_line(&notice)),
            Some(Event::Connected { .. } | Event::Live | Event::Disconnected { .. }) => {}
        }
    };
    pipeline.finish();
    super::print(render_json(&pipeline).as_bytes())?;
    match partial {
        None => Ok(ExitCode::SUCCESS),
        Some(why) => Err(eyre!("the figures above are partial: {why}")),
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
