//! `swarmtop export [--otlp URL | --otlp-file PATH] INPUT…`: recordings, transcripts and rollouts
//! as OpenTelemetry traces. Exits 1 when any span was not accepted.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use color_eyre::eyre::{Result, eyre};

use super::cli::ExportArgs;
use super::ingest::{ingest, nothing};
use crate::export::sender::Counters;
use crate::export::{self, Exporter, Live, Provider, Request, Summary, all_spans, sender};
use crate::model::Model;
use crate::pipeline::Config;
use crate::ui::ExportFeed;
use crate::ui::text::quiet;

pub fn run(args: &ExportArgs, config: Config) -> Result<ExitCode> {
    let request = Request { url: args.otlp.clone().filter(|u| !u.is_empty()), file: args.otlp_file.clone() };
    let settings = export::config::resolve(&request, &|k| std::env::var(k).ok()).map_err(|e| eyre!(e))?;
    super::traffic::folders_hold_recordings(&args.inputs)?;
    let pipeline = ingest(&args.inputs, config, &mut nothing())?;
    super::traffic::required(&args.inputs, &pipeline)?;
    let spans = all_spans(&pipeline.model, Provider::of_format(pipeline.format()));
    let traces = pipeline.model.threads.len() - pipeline.model.threads.iter().filter(|t| t.parent.is_some()).count();
    let exporter = Exporter::start(settings, sender::QUEUE_SPANS)?;
    let target = exporter.target().to_owned();
    for span in spans {
        exporter.send(span);
    }
    let (counters, done) = (exporter.counters(), AtomicBool::new(false));
    let summary = std::thread::scope(|s| {
        s.spawn(|| say_when_failing(&counters, &done, &target, args.wait));
        let summary = exporter.finish(args.wait);
        done.store(true, Ordering::Relaxed);
        summary
    });
    eprintln!("swarmtop export: {} ({traces} traces)", export::describe(&summary, &target));
    Ok(if summary.all_accepted() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Says once on stderr, while `finish` waits, that the collector is failing and for how long
/// swarmtop keeps retrying: a user at a terminal otherwise watches `--wait` pass in silence.
fn say_when_failing(counters: &Counters, done: &AtomicBool, target: &str, wait: Duration) {
    while !done.load(Ordering::Relaxed) {
        let now = counters.summary();
        if now.failing {
            let cause = now.cause.as_ref().map_or("no answer", |c| c.as_str());
            let wait = quiet(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
            eprintln!("swarmtop export: {target}: {cause}; retrying for up to {wait} (--wait)");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a live command's `--otlp` values ask to export to: a URL, or the environment's collector
/// for a bare `--otlp`. On `listen`, values without a scheme are addresses to receive on instead.
pub(super) fn live_request(values: &[String], listen: bool) -> Option<Request> {
    values
        .iter()
        .rfind(|v| !listen || v.contains("://"))
        .map(|v| Request { url: (!v.is_empty()).then(|| v.clone()), file: None })
}

/// Starts exporting for a live session, when asked to.
pub(super) fn start_live(request: Option<Request>) -> Result<Option<Live>> {
    let Some(request) = request else { return Ok(None) };
    if let Some(url) = request.url.as_deref().filter(|u| !u.contains("://") && std::path::Path::new(u).exists()) {
        return Err(eyre!(
            "--otlp took {url:?} as the collector's URL: put --otlp after the inputs, or write --otlp=URL"
        ));
    }
    let settings = export::config::resolve(&request, &|k| std::env::var(k).ok()).map_err(|e| eyre!(e))?;
    Ok(Some(Live::start(settings)?))
}

/// The exporter's counters for the diagnostics view.
pub(super) fn feed_of(live: &Live) -> ExportFeed {
    let s = live.summary();
    ExportFeed {
        target: live.target().to_owned(),
        queued: s.queued,
        sent: s.sent,
        retried: s.retried,
        dropped: s.dropped,
        rejected: s.rejected,
        failing: s.failing,
        cause: s.cause,
        forgotten: s.forgotten,
    }
}

/// Ends a live session's export and says on stderr what became of its spans.
pub(super) fn finish_live(live: Live, model: &Model, format: &str) -> Summary {
    let target = live.target().to_owned();
    let summary = live.finish(model, format);
    eprintln!("swarmtop: OTLP export: {}", export::describe(&summary, &target));
    summary
}
