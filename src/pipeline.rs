//! The one pipeline every consumer shares: records → router → model. Headless commands and the
//! monitor differ only in where the events also go and what they print.

use crate::model::{self, Model, Prices};
use crate::router::{self, Counters, Event, Router, Sink};
use crate::wire::{Malformed, Shape};

#[derive(Debug, Clone)]
pub struct Config {
    pub prices: Prices,
    pub router: router::Limits,
    pub model: model::Limits,
}

impl Default for Config {
    fn default() -> Self {
        Self { prices: Prices::builtin(), router: router::Limits::default(), model: model::Limits::default() }
    }
}

/// Which kinds of line the input held, for `input.format`.
#[derive(Debug, Default, Clone, Copy)]
struct Formats {
    app_server: bool,
    rollout: bool,
    claude: bool,
}

#[derive(Debug)]
pub struct Pipeline {
    pub router: Router,
    pub model: Model,
    /// Decompressed bytes read.
    pub bytes: u64,
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
            Event::Line(r) if !r.replayed && r.line.msg.claude.is_some() => self.formats.claude = true,
            Event::Line(r) if !r.replayed && r.line.msg.rollout.is_some() => self.formats.rollout = true,
            Event::Line(r) if !r.replayed && r.line.msg.swarmtop.is_none() => self.formats.app_server = true,
            Event::Malformed { reason: Malformed::NotAMessage(Shape::CodexRollout), .. } => self.formats.rollout = true,
            Event::Malformed { reason: Malformed::NotAMessage(Shape::ClaudeTranscript), .. } => {
                self.formats.claude = true;
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
            router: Router::new(config.router),
            model: Model::new(config.prices, config.model),
            bytes: 0,
            formats: Formats::default(),
        }
    }

    /// Routes one record (a line without its `\n`).
    pub fn push(&mut self, record: &[u8]) {
        self.push_with(record, &mut |_: &Event<'_, '_>| {});
    }

    /// Routes one record, showing every event to `also` after the model has applied it.
    pub fn push_with(&mut self, record: &[u8], also: &mut (impl Sink + ?Sized)) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.router.push(record, &mut tap);
    }

    /// Counts a record over the length bound (it is malformed, and never held whole).
    pub fn push_oversized(&mut self, len: usize, head: &[u8], also: &mut (impl Sink + ?Sized)) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.router.push_oversized(len, head, &mut tap);
    }

    /// The thread whose rollout file the next records come from (see [`Router::set_rollout_thread`]).
    pub fn set_rollout_thread(&mut self, thread: Option<&str>) {
        self.router.set_rollout_thread(thread);
    }

    pub fn add_bytes(&mut self, n: u64) {
        self.bytes += n;
    }

    /// End of input: every pending thread is settled.
    pub fn finish(&mut self) {
        self.finish_with(&mut |_: &Event<'_, '_>| {});
    }

    pub fn finish_with(&mut self, also: &mut (impl Sink + ?Sized)) {
        let mut tap = Tap { model: &mut self.model, formats: &mut self.formats, also };
        self.router.finish(&mut tap);
    }

    pub fn counters(&self) -> Counters {
        self.router.counters()
    }

    /// `input.format` of routing.md §7.
    pub fn format(&self) -> &'static str {
        let f = self.formats;
        match (f.app_server, f.rollout, f.claude) {
            (_, false, false) => "codex-app-server",
            (false, true, false) => "codex-rollout",
            (false, false, true) => "claude-transcript",
            _ => "mixed",
        }
    }
}
