//! What every end-to-end test reads its recordings through: the files a run wrote, ingested as
//! `stats` would, with every line counted once and none malformed.

use std::path::Path;

use swarmtop::pipeline::{Config, Pipeline};

pub fn ingest(path: &Path) -> Pipeline {
    let p = swarmtop::commands::ingest(&[path.to_path_buf()], Config::default(), &mut |_: &swarmtop::router::Event<
        '_,
        '_,
    >| {})
    .unwrap_or_else(|e| panic!("ingesting {}: {e}", path.display()));
    assert!(p.counters().conserved(), "every line counted once");
    assert_eq!(p.counters().malformed, 0, "no malformed lines in {}", path.display());
    p
}
