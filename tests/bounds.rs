//! Every bound says what it forgot where the user looks: the `d` view and `stats --json`.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::commands::stats;
use swarmtop::pipeline::Pipeline;
use swarmtop::ui::{self, Feed, Overlay, Theme, View};
use swarmtop::wire::claude::partial::OPEN_RESPONSES;

/// A `--include-partial-messages` response that starts streaming and never ends.
fn started(message: usize) -> String {
    let start = format!(
        r#"{{"type":"message_start","message":{{"id":"msg_{message}","model":"claude-sonnet-4-5","content":[],"usage":{{"input_tokens":10,"output_tokens":1}}}}}}"#
    );
    format!(
        r#"{{"type":"stream_event","event":{start},"session_id":"s","parent_tool_use_id":null,"uuid":"e{message}","api_message_id":"msg_{message}"}}"#
    )
}

#[test]
fn responses_forgotten_by_the_stream_bound_are_counted_in_d_and_stats() {
    let mut p = Pipeline::default();
    for m in 0..=OPEN_RESPONSES {
        p.push(started(m).as_bytes());
    }
    p.finish();
    assert_eq!(p.counters().forgotten.responses, 1, "one more open than the bound");
    let json: serde_json::Value = serde_json::from_str(&stats::render_json(&p)).expect("JSON");
    assert_eq!(json["dropped"]["openResponses"], 1, "{json}");
    assert_eq!(json["dropped"]["spawningTasks"], 0, "{json}");
    assert!(stats::render_text(&p).contains("1 open responses"));

    let mut view = View::with_theme(Theme::dark());
    view.panes.overlay = Some(Overlay::Diagnostics);
    let feed = Feed { source: swarmtop::wire::sanitize_line("bounds"), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let counters = p.counters();
    term.draw(|f| ui::render(f, &p.model, &counters, &feed, &mut view)).expect("draw");
    let screen = format!("{}", term.backend());
    let row = screen.lines().find(|l| l.contains("open responses")).unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains("open responses 1 "), "{row}");
}
