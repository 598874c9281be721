//! Reading recorded inputs through the pipeline, for the headless commands.

use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr};

use super::cli::GlobalOpts;
use crate::feed;
use crate::model::Prices;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Event, Sink};
use crate::source::files;
use crate::source::merge::Timing;

/// The pipeline's configuration from the global options (`--pricing`).
pub fn config(global: &GlobalOpts) -> Result<Config> {
    let mut prices = Prices::builtin();
    if let Some(path) = &global.pricing {
        let text = std::fs::read_to_string(path).wrap_err_with(|| format!("reading {}", path.display()))?;
        prices.merge_toml(&text).wrap_err_with(|| format!("in {}", path.display()))?;
    }
    Ok(Config { prices, ..Config::default() })
}

/// Reads every input, in order, as one stream through a new pipeline, then ends the stream.
/// With more than one core, records are decoded and lowered on all of them, this thread routing
/// in between ([`feed`]), with the same result as one record at a time — one input too: since the
/// reader thread is gone and the router decodes while it would wait, one stream of Codex traffic
/// fed on two cores beat one core (`benches/ingest`, capture corpus: 0.8× the parse floor against
/// 0.47×).
pub fn ingest(paths: &[PathBuf], config: Config, also: &mut (impl Sink + ?Sized)) -> Result<Pipeline> {
    let (pipeline, error) = ingest_partial(paths, config, also)?;
    match error {
        Some(e) => Err(e),
        None => Ok(pipeline),
    }
}

/// [`ingest`], but an input that cannot be read to its end (a truncated `.gz`, a file that
/// vanished) stops the stream there and still gives the pipeline of what was read, with the
/// error: the figures of a damaged recording are worth printing. An input that cannot be opened
/// (or listed) gives no pipeline, only the error.
pub fn ingest_partial(
    paths: &[PathBuf],
    config: Config,
    also: &mut (impl Sink + ?Sized),
) -> Result<(Pipeline, Option<color_eyre::Report>)> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    ingest_partial_on(paths, config, also, cores)
}

/// [`ingest_partial`] as of stream time `until` (`--until`; `None`: to the end).
pub fn ingest_until(
    paths: &[PathBuf],
    config: Config,
    until: Option<i64>,
    also: &mut (impl Sink + ?Sized),
) -> Result<(Pipeline, Option<color_eyre::Report>)> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    ingest_timed(paths, config, Timing { until, ..Timing::default() }, also, cores)
}

/// [`ingest_partial`] on `cores` cores: one when the caller reads several streams at once, each
/// on a core of its own (`sync` reads sessions so).
pub fn ingest_partial_on(
    paths: &[PathBuf],
    config: Config,
    also: &mut (impl Sink + ?Sized),
    cores: usize,
) -> Result<(Pipeline, Option<color_eyre::Report>)> {
    ingest_timed(paths, config, Timing::default(), also, cores)
}

/// [`ingest_partial_on`], the inputs merged as `timing` says. Read up to a time (`--until`), the
/// stream is not ended: the model is what a live view showed then, its pending threads still
/// pending.
pub fn ingest_timed(
    paths: &[PathBuf],
    config: Config,
    timing: Timing,
    also: &mut (impl Sink + ?Sized),
    cores: usize,
) -> Result<(Pipeline, Option<color_eyre::Report>)> {
    let inputs = files::expand(paths).wrap_err("listing inputs")?;
    ingest_inputs(inputs.as_slice(), config, timing, also, cores)
}

/// [`ingest_timed`] of inputs already listed (a batch of an OpenCode store's sessions).
pub fn ingest_inputs(
    inputs: &(impl feed::Inputs + ?Sized),
    config: Config,
    timing: Timing,
    also: &mut (impl Sink + ?Sized),
    cores: usize,
) -> Result<(Pipeline, Option<color_eyre::Report>)> {
    let mut pipeline = Pipeline::new(config);
    let mut error = None;
    // What was read before a failure has been routed: the figures so far stand.
    if let Err(f) = feed::feed(inputs, timing, cores.max(1), feed::CHUNK_BYTES, &mut pipeline, also) {
        let e = color_eyre::Report::new(f.error).wrap_err(format!("{} {}", f.doing, f.input));
        if f.doing == "opening" {
            return Err(e);
        }
        error = Some(e);
    }
    if timing.until.is_none() {
        pipeline.finish_with(also);
    }
    Ok((pipeline, error))
}

/// A sink for callers that need nothing beyond the model.
pub(super) fn nothing() -> impl FnMut(&Event<'_, '_>) {
    |_: &Event<'_, '_>| {}
}
