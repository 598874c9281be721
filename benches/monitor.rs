//! Ingest while rendering, as the monitor runs a replay at `--speed max`: records applied in the
//! runtime's ingest slices and chunks, a frame (200×60, `TestBackend`) drawn when the monitor's
//! own frame clock (`ui::frame::FrameClock`, 60 fps) says so. Reported as lines per second next
//! to plain `stats` ingest of the same corpus, in the same run.
//!
//! `cargo bench --bench monitor` (SWARMTOP_BENCH_MIB sets the corpus size, default 100).

#[path = "support/corpus.rs"]
mod corpus;

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::pipeline::Pipeline;
use swarmtop::ui::frame::{FrameClock, INGEST_CHUNK, INGEST_SLICE};
use swarmtop::ui::{self, Feed, View};

const FPS: u32 = 60;

/// The corpus's records (it has no blank or oversized lines).
fn records(corpus: &[u8]) -> Vec<&[u8]> {
    corpus.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect()
}

fn plain(lines: &[&[u8]]) -> Duration {
    let start = Instant::now();
    let mut p = Pipeline::default();
    for l in lines {
        p.push(l);
    }
    p.finish();
    start.elapsed()
}

fn monitor(lines: &[&[u8]]) -> (Duration, u32) {
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut view = View::with_theme(swarmtop::ui::Theme::dark());
    let mut p = Pipeline::default();
    let total = lines.len() as u64;
    let start = Instant::now();
    let mut clock = FrameClock::new(FPS, Duration::from_secs(1), start);
    let mut frames = 0;
    let mut next = 0;
    while next < lines.len() {
        let slice = Instant::now();
        while next < lines.len() && slice.elapsed() < INGEST_SLICE {
            let end = (next + INGEST_CHUNK).min(lines.len());
            for l in &lines[next..end] {
                p.push(l);
            }
            next = end;
        }
        let now = Instant::now();
        if clock.due(true, now) || next == lines.len() {
            let counters = p.counters();
            let feed = Feed {
                source: swarmtop::wire::sanitize_line("bench"),
                speed: "max".into(),
                position: Some((next as u64, total)),
                now_ms: p.model.stream_ms,
                ..Feed::default()
            };
            terminal.draw(|f| ui::render(f, &p.model, &counters, &feed, &mut view)).unwrap();
            frames += 1;
            clock.drawn(now);
        }
    }
    p.finish();
    (start.elapsed(), frames)
}

fn main() {
    let mib: usize = std::env::var("SWARMTOP_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let corpus = corpus::generate(mib << 20);
    let lines = records(&corpus);
    let size = corpus.len() as f64 / f64::from(1 << 20);
    println!("corpus: {size:.1} MiB, {} lines, {:.0} % deltas", lines.len(), corpus::delta_share(&corpus) * 100.0);
    let mut ratios = Vec::new();
    for round in 1..=3 {
        let stats = plain(&lines);
        let (shown, frames) = monitor(&lines);
        let rate = |d: Duration| lines.len() as f64 / d.as_secs_f64();
        let ratio = rate(shown) / rate(stats);
        println!(
            "round {round}: stats ingest {:.0} lines/s; monitor at --speed max {:.0} lines/s with {frames} frames ({:.0} fps) → {ratio:.2}× of stats",
            rate(stats),
            rate(shown),
            f64::from(frames) / shown.as_secs_f64()
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    println!("ingest while rendering / stats ingest (median of 3): {:.2}×", ratios[1]);
}
