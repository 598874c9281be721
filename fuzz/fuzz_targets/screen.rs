//! The screen: fuzzed input through the pipeline, then key actions chosen by the input's last
//! bytes, drawn to a ratatui `TestBackend` at a few sizes through the public `ui::render`. Never a
//! panic, and no control character (an escape sequence's start) ever reaches a cell.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files::{MAX_LINE, read_records};
use swarmtop::wire::Origin;
use swarmtop::ui::{self, BINDINGS, Feed, Theme, View};

/// Bytes at the end of the input (after its last newline) that pick actions, at most this many.
const ACTIONS: usize = 16;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (input, keys) = data.split_at(split);
    let mut p = Pipeline::default();
    let _ = read_records(input, MAX_LINE, |record| {
        p.feed(record, &Origin::NONE, &mut |_: &Event<'_, '_>| {});
    });
    if keys.first().is_some_and(|k| k & 1 == 1) {
        p.finish();
    }
    let counters = p.counters();
    let feed = Feed { source: "fuzz".into(), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut view = View::with_theme(Theme::dark());
    for &k in keys.iter().take(ACTIONS) {
        let binding = &BINDINGS[usize::from(k) % BINDINGS.len()];
        let _ = ui::update(&mut view, &p.model, binding.action);
    }
    for (w, h) in [(80, 24), (200, 60), (20, 5)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        term.draw(|f| ui::render(f, &p.model, &counters, &feed, &mut view)).expect("draw");
        for cell in term.backend().buffer().content() {
            assert!(!cell.symbol().chars().any(char::is_control), "control character in a cell: {:?}", cell.symbol());
        }
    }
});
