//! `stats` ingest throughput against a parse-only floor, in one run over the same corpus.
//!
//! Floor: every line parsed by serde_json into `IgnoredAny` (the least any JSON consumer does).
//! Ingest: the whole headless pipeline (records → decode → route → model), as `stats` runs it.
//! Target: ingest ≥ 0.5 × the floor's throughput; memory bounded by the caps, not the input.
//!
//! `cargo bench --bench ingest` (SWARMTOP_BENCH_MIB sets the corpus size, default 100).

#[path = "support/corpus.rs"]
mod corpus;

use std::time::{Duration, Instant};

use swarmtop::pipeline::Pipeline;
use swarmtop::source::files::{MAX_LINE, Record, read_records};
use swarmtop::wire::Origin;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn floor(corpus: &[u8]) -> Duration {
    let start = Instant::now();
    let mut n = 0u64;
    read_records(corpus, MAX_LINE, |r| {
        if let Record::Line(l) = r {
            if serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok() {
                n += 1;
            }
        }
    })
    .unwrap();
    std::hint::black_box(n);
    start.elapsed()
}

/// Decoding alone, to see where ingest time goes.
fn decode_only(corpus: &[u8]) -> Duration {
    let start = Instant::now();
    let mut n = 0u64;
    read_records(corpus, MAX_LINE, |r| {
        if let Record::Line(l) = r {
            if let swarmtop::wire::Decoded::Line(line) = swarmtop::wire::decode(l) {
                n += u64::from(line.msg.thread_id().is_some());
            }
        }
    })
    .unwrap();
    std::hint::black_box(n);
    start.elapsed()
}

fn ingest(corpus: &[u8]) -> (Duration, Pipeline) {
    let start = Instant::now();
    let mut p = Pipeline::default();
    read_records(corpus, MAX_LINE, |r| p.feed(r, &Origin::NONE, &mut |_: &swarmtop::router::Event<'_, '_>| {}))
        .unwrap();
    p.finish();
    (start.elapsed(), p)
}

fn main() {
    let mib: usize = std::env::var("SWARMTOP_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let corpus = corpus::generate(mib << 20);
    let size = corpus.len() as f64 / f64::from(1 << 20);
    let lines = corpus.iter().filter(|&&b| b == b'\n').count();
    println!("corpus: {size:.1} MiB, {lines} lines, {:.0} % deltas", corpus::delta_share(&corpus) * 100.0);

    let rss_before = rss_kib();
    let mut ratios = Vec::new();
    for round in 1..=3 {
        let floor_time = floor(&corpus);
        let (ingest_time, p) = ingest(&corpus);
        let c = p.counters();
        assert!(c.conserved());
        let decode_time = decode_only(&corpus);
        let ratio = floor_time.as_secs_f64() / ingest_time.as_secs_f64();
        println!(
            "  decode only: {:.0} MiB/s ({:.0} % of ingest time)",
            size / decode_time.as_secs_f64(),
            decode_time.as_secs_f64() / ingest_time.as_secs_f64() * 100.0
        );
        println!(
            "round {round}: floor {:.0} MiB/s, ingest {:.0} MiB/s ({} threads, {} rehomed) → ingest/floor = {ratio:.2}",
            size / floor_time.as_secs_f64(),
            size / ingest_time.as_secs_f64(),
            p.model.threads.len(),
            c.rehomed
        );
        ratios.push(ratio);
        if round == 3 {
            println!(
                "memory: RSS grew by {} MiB while ingesting {size:.0} MiB",
                rss_kib().saturating_sub(rss_before) / 1024
            );
        }
    }
    ratios.sort_by(f64::total_cmp);
    println!("ingest / parse-only floor (median of 3): {:.2}× (target ≥ 0.5×)", ratios[1]);
}
