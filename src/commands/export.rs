//! `swarmtop export [--otlp URL | --otlp-file PATH] INPUT…`: recordings, transcripts and rollouts
//! as OpenTelemetry traces. Exits 1 when any span was not accepted.

use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};

use super::cli::ExportArgs;
use super::ingest::{ingest, nothing};
use crate::export::{self, Exporter, Provider, Request, all_spans, sender};
use crate::pipeline::Config;

pub fn run(args: &ExportArgs, config: Config) -> Result<ExitCode> {
    let request = Request { url: args.otlp.clone().filter(|u| !u.is_empty()), file: args.otlp_file.clone() };
    let settings = export::config::resolve(&request, &|k| std::env::var(k).ok()).map_err(|e| eyre!(e))?;
    let pipeline = ingest(&args.inputs, config, &mut nothing())?;
    let spans = all_spans(&pipeline.model, Provider::of_format(pipeline.format()));
    let traces = pipeline.model.threads.len() - pipeline.model.threads.iter().filter(|t| t.parent.is_some()).count();
    let exporter = Exporter::start(settings, sender::QUEUE_SPANS)?;
    let target = exporter.target().to_owned();
    for span in spans {
        exporter.send(span);
    }
    let summary = exporter.finish(args.wait);
    eprintln!("swarmtop export: {} ({traces} traces)", export::describe(&summary, &target));
    Ok(if summary.all_accepted() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
