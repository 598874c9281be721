//! Reading recorded inputs through the pipeline, for the headless commands.

use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr};

use super::cli::GlobalOpts;
use crate::feed;
use crate::model::Prices;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Event, Sink};
use crate::source::files;

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
/// With more than one input and more than one core, records are decoded and lowered on all of
/// them while this thread routes ([`feed`]), with the same result. One input is read on this
/// thread alone: on the shared two-core machine it was measured, feeding one stream of Codex
/// traffic across threads cost more than it gained in every run.
pub fn ingest(paths: &[PathBuf], config: Config, also: &mut (impl Sink + ?Sized)) -> Result<Pipeline> {
    let inputs = files::expand(paths).wrap_err("listing inputs")?;
    let mut pipeline = Pipeline::new(config);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores > 1 && inputs.len() > 1 {
        if let Err(f) = feed::feed(inputs.as_slice(), cores, feed::CHUNK_BYTES, &mut pipeline, also) {
            return Err(f.error).wrap_err(format!("{} {}", f.doing, f.input));
        }
    } else {
        for input in &inputs {
            let reader = files::open(input).wrap_err_with(|| format!("opening {}", input.name()))?;
            let origin = files::origin(input);
            files::read_records(reader, files::MAX_LINE, |record| pipeline.feed(record, &origin, also))
                .wrap_err_with(|| format!("reading {}", input.name()))?;
        }
    }
    pipeline.finish_with(also);
    Ok(pipeline)
}

/// A sink for callers that need nothing beyond the model.
pub(super) fn nothing() -> impl FnMut(&Event<'_, '_>) {
    |_: &Event<'_, '_>| {}
}
