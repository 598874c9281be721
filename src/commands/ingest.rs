//! Reading recorded inputs through the pipeline, for the headless commands.

use std::path::PathBuf;

use color_eyre::eyre::{Result, WrapErr};

use super::cli::GlobalOpts;
use crate::model::Prices;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Event, Sink};
use crate::source::files::{self, Record};

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
pub fn ingest(paths: &[PathBuf], config: Config, also: &mut (impl Sink + ?Sized)) -> Result<Pipeline> {
    let inputs = files::expand(paths).wrap_err("listing inputs")?;
    let mut pipeline = Pipeline::new(config);
    for input in &inputs {
        let reader = files::open(input).wrap_err_with(|| format!("opening {}", input.name()))?;
        pipeline.set_rollout_thread(files::rollout_thread(input).as_deref());
        let bytes = files::read_records(reader, files::MAX_LINE, |record| match record {
            Record::Line(line) => pipeline.push_with(line, also),
            Record::TooLong { len, head } => pipeline.push_oversized(len, head, also),
        })
        .wrap_err_with(|| format!("reading {}", input.name()))?;
        pipeline.add_bytes(bytes);
    }
    pipeline.finish_with(also);
    Ok(pipeline)
}

/// A sink for callers that need nothing beyond the model.
pub(super) fn nothing() -> impl FnMut(&Event<'_, '_>) {
    |_: &Event<'_, '_>| {}
}
