//! The export stage: spawn trees out as OpenTelemetry traces. It reads the model (never the other
//! way round) and turns it into GenAI-convention spans ([`spans`]), which a thread sends to an
//! OTLP/HTTP collector or writes as OTLP/JSON lines ([`sender`]).

pub mod config;
pub mod ids;
pub mod sender;
pub mod spans;

use std::fmt::Write as _;
use std::time::Duration;

pub use self::config::{Request, Settings, Target};
pub use self::sender::{Exporter, Summary};
pub use self::spans::{Provider, Tracker, all_spans};
use crate::model::Model;

/// How long a live session keeps retrying at exit while the collector is down.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Export from a live session: spans leave as agents and tool calls end, the rest at [`Live::finish`].
pub struct Live {
    tracker: Tracker,
    exporter: Exporter,
    scratch: Vec<opentelemetry_proto::tonic::trace::v1::Span>,
}

impl Live {
    pub fn start(settings: Settings) -> std::io::Result<Self> {
        Ok(Self {
            tracker: Tracker::default(),
            exporter: Exporter::start(settings, sender::QUEUE_SPANS)?,
            scratch: Vec::new(),
        })
    }

    /// The model changed: queue the spans that ended since the last call.
    pub fn update(&mut self, model: &Model, format: &str) {
        self.tracker.fallback = Provider::of_format(format).or(self.tracker.fallback);
        self.tracker.ended(model, &mut self.scratch);
        for span in self.scratch.drain(..) {
            self.exporter.offer(span);
        }
    }

    /// The model is being rebuilt from a source's history; what was sent stays sent.
    pub fn reset(&mut self) {
        self.tracker.reset();
    }

    pub fn summary(&self) -> Summary {
        Summary { forgotten: self.tracker.forgotten(), ..self.exporter.counters().summary() }
    }

    pub fn target(&self) -> &str {
        self.exporter.target()
    }

    /// Swarmtop is exiting: everything not sent yet goes, what is still open marked unfinished.
    pub fn finish(mut self, model: &Model, format: &str) -> Summary {
        self.tracker.fallback = Provider::of_format(format).or(self.tracker.fallback);
        self.tracker.remaining(model, &mut self.scratch);
        for span in self.scratch.drain(..) {
            self.exporter.offer(span);
        }
        let forgotten = self.tracker.forgotten();
        Summary { forgotten, ..self.exporter.finish(EXIT_GRACE) }
    }
}

/// One line for people: `12 spans to URL: 12 sent, 0 retried, 0 dropped, 0 rejected`, and why
/// the last attempt that failed did: `…; last failure: connection refused`.
pub fn describe(summary: &Summary, target: &str) -> String {
    let mut line = format!(
        "{} spans to {target}: {} sent, {} retried, {} dropped, {} rejected",
        summary.queued, summary.sent, summary.retried, summary.dropped, summary.rejected
    );
    if summary.forgotten > 0 {
        let _ = write!(line, ", {} ids forgotten", summary.forgotten);
    }
    if let Some(cause) = &summary.cause {
        line.push_str("; last failure: ");
        line.push_str(cause.as_str());
    }
    line
}
