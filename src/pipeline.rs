//! The one pipeline every consumer shares: records → router (which decodes and lowers them) →
//! model. Headless commands and the monitor differ only in where the events also go and what they
//! print; every one of them feeds records through [`Pipeline::feed`].

use crate::model::{self, Model, Prices};
use crate::router::{self, Counters, Event, Router, Sink, ThreadIdx};
use crate::source::files::Record;
use crate::wire::fact::Formats;
use crate::wire::{Decoded, Lowered, Malformed, Origin, Reading};

#[derive(Debug, Clone)]
pub struct Config {
    pub prices: Prices,
    pub router: router::Limits,
    pub model: model::Limits,
    /// How much of each record is decoded: a command that shows no item text reads
    /// [`Reading::Figures`].
    pub reading: Reading,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            prices: Prices::builtin(),
            router: router::Limits::default(),
            model: model::Limits::default(),
            reading: Reading::Whole,
        }
    }
}

impl Config {
    /// This configuration for a command that prints figures, the tree and names, never an item's
    /// text (`stats`, `tree`, `ps`): the same figures, read faster.
    #[must_use]
    pub fn figures(self) -> Self {
        Self { reading: Reading::Figures, ..self }
    }
}

#[derive(Debug)]
pub struct Pipeline {
    pub router: Router,
    pub model: Model,
    /// Bytes of the records fed, each with its newline (decompressed).
    pub bytes: u64,
    /// Inputs of a merge by time closed to stay under its bound of open files and opened again
    /// ([`crate::source::merge::OPEN_MAX`]).
    pub reopened: u64,
    formats: Formats,
}

/// Forwards events to the model (and to a second consumer), noting the input's format.
struct Tap<'a, S: Sink + ?Sized> {
    model: &'a mut Model,
    formats: &'a mut Formats,
    also: &'a mut S,
}

impl<S: Sink + ?Sized> Sink for Tap<'_, S> {
    fn event(&mut self, event: &Event<'_, '_>) {
        match event {
            Event::Line(r) if !r.replayed => self.formats.note(r.record.format),
            Event::Malformed { reason, .. } => {
                if let Some(format) = reason.format() {
                    self.formats.note(format);
                }
            }
            _ => {}
        }
        self.model.event(event);
        self.also.event(event);
    }
}

impl Default for Pipeline {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl Pipeline {
    pub fn new(config: Config) -> Self {
        Self {
            router: Router::reading(config.router, config.reading),
            model: Model::new(config.prices, config.model),
            bytes: 0,
            reopened: 0,
            formats: Formats::default(),
        }
    }

    /// Routes one record from `origin` into the model, showing every event to `also` after the
    /// model has applied it. A record over the length bound is malformed, and never held whole.
    pub fn feed(&mut self, record: Record<'_>, origin: &Origin, also: &mut (impl Sink + ?Sized)) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        match record {
            Record::Line(line) => {
                if origin.counted() {
                    self.bytes = self.bytes.saturating_add(line.len() as u64 + 1);
                }
                self.router.push(line, origin, &mut tap);
            }
            // Applied ahead of where it lies, it is applied and counted there.
            Record::TooLong { .. } if !origin.counted() => {}
            Record::TooLong { len, head } => {
                self.bytes = self.bytes.saturating_add(len as u64 + 1);
                self.router.push_oversized(len, head, &mut tap);
            }
        }
    }

    /// [`Pipeline::feed`] of a whole line decoded elsewhere.
    pub fn feed_line(&mut self, record: &[u8], line: &Decoded<'_>, origin: &Origin, also: &mut (impl Sink + ?Sized)) {
        // Only a sidecar is applied ahead of where it lies; what does not lower as one is applied there.
        if !origin.counted() {
            return;
        }
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.bytes = self.bytes.saturating_add(record.len() as u64 + 1);
        self.router.push_line(record, line, origin, &mut tap);
    }

    /// [`Pipeline::feed`] of a whole line decoded and lowered elsewhere (one that
    /// [`Decoded::lowers_alone`]).
    pub fn feed_lowered(
        &mut self,
        record: &[u8],
        lowered: &Lowered<'_>,
        origin: &Origin,
        also: &mut (impl Sink + ?Sized),
    ) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        if !lowered.ahead {
            self.bytes = self.bytes.saturating_add(record.len() as u64 + 1);
        }
        self.router.push_lowered(record, lowered, origin, &mut tap);
    }

    /// [`Pipeline::feed`] of a whole line that did not decode.
    pub fn feed_malformed(
        &mut self,
        record: &[u8],
        reason: &Malformed,
        origin: &Origin,
        also: &mut (impl Sink + ?Sized),
    ) {
        if !origin.counted() {
            return;
        }
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.bytes = self.bytes.saturating_add(record.len() as u64 + 1);
        self.router.push_malformed(record, reason, &mut tap);
    }

    /// [`Pipeline::feed`] of one whole line from no particular origin (tests, tools).
    pub fn push(&mut self, line: &[u8]) {
        self.feed(Record::Line(line), &Origin::NONE, &mut |_: &Event<'_, '_>| {});
    }

    /// [`Pipeline::push`], showing every event to `also`.
    pub fn push_with(&mut self, line: &[u8], also: &mut (impl Sink + ?Sized)) {
        self.feed(Record::Line(line), &Origin::NONE, also);
    }

    /// End of input: every pending thread is settled.
    pub fn finish(&mut self) {
        self.finish_with(&mut |_: &Event<'_, '_>| {});
    }

    pub fn finish_with(&mut self, also: &mut (impl Sink + ?Sized)) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.router.finish(&mut tap);
    }

    /// The process running session `id` (its root thread) is gone: what of its tree was still
    /// running was cut short (see [`crate::model::Model::stopped`]).
    /// `guessed_at_ms`: the stop is a guess made then (see [`crate::model::Model::stopped_on_guess`]).
    pub fn stopped(&mut self, id: &str, guessed_at_ms: Option<i64>) {
        if let Some(root) = self.router.find(id) {
            match guessed_at_ms {
                Some(at) => self.model.stopped_on_guess(root, at),
                None => self.model.stopped(root),
            }
        }
    }

    /// The session `id` runs after all: what [`Pipeline::stopped`] cut short is not over (see
    /// [`crate::model::Model::resumed`]).
    pub fn resumed(&mut self, id: &str) {
        if let Some(root) = self.router.find(id) {
            self.model.resumed(root);
        }
    }

    pub fn counters(&self) -> Counters {
        self.router.counters()
    }

    /// A thread's handle by its id (the router's registry is the one index of ids).
    pub fn find(&self, id: &str) -> Option<ThreadIdx> {
        self.router.find(id)
    }

    /// `input.format` of routing.md §7.
    pub fn format(&self) -> &'static str {
        self.formats.name()
    }
}
