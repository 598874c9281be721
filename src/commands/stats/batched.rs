//! `stats --json` of one store of many sessions, a batch of root sessions at a time: each batch through a
//! pipeline of its own, its threads written out and the pipeline dropped before the next, so
//! memory holds one batch, not the store (issue 22: an OpenCode store of 100,000 sessions took 302
//! MiB read at once, one of 10,000 64 MiB). The threads wait in a temporary file until the figures that come before
//! them in the object (`input`, `routing`) are known.
//!
//! A session's figures depend only on its own subtree's rows, so they are those of a whole read;
//! the threads come batch by batch, oldest root first, each batch in the order its rows were
//! made (a whole read interleaves sessions that ran at once). A store a batch cannot read exactly
//! (a row no root reaches, an odd value counted once for the store) is read whole instead.

use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use color_eyre::eyre::{Report, Result, WrapErr};

use super::{DroppedJson, InputJson, RoutingJson, TotalsJson, money, thread_json};
use crate::commands::ingest::{ingest_inputs, nothing};
use crate::commands::traffic;
use crate::model::Rollup;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Counters, ThreadIdx};
use crate::source::batches::Batches;
use crate::source::merge::Timing;

/// A store read in batches: the figures of every batch, its threads' JSON in a temporary file.
pub struct Batched {
    counters: Counters,
    bytes: u64,
    format: &'static str,
    dropped: DroppedJson,
    totals: Rollup,
    unpriced: usize,
    threads: u64,
    first_malformed: Option<(u64, String)>,
    spill: BufWriter<File>,
    /// Why reading stopped early, with the figures of what was read.
    pub error: Option<Report>,
}

/// Reads the store `db` in batches of `per_batch` root sessions, as of `until` (`--until`);
/// `None` when the store must be read whole (see the module's doc).
pub fn read(db: &Path, config: &Config, until: Option<i64>, per_batch: usize) -> Result<Option<Batched>> {
    let mut batches = Batches::start(db, per_batch).wrap_err_with(|| format!("opening {}", db.display()))?;
    let spill = tempfile::tempfile().wrap_err("making a temporary file for the threads")?;
    let mut read = Batched {
        counters: Counters::default(),
        bytes: 0,
        // What a stream with no line says (`--until` before the first).
        format: crate::wire::fact::Formats::default().name(),
        dropped: DroppedJson::default(),
        totals: Rollup::default(),
        unpriced: 0,
        threads: 0,
        first_malformed: None,
        spill: BufWriter::with_capacity(1 << 16, spill),
        error: None,
    };
    let timing = Timing { until, ..Timing::default() };
    while batches.next_batch() {
        // On this thread only: the batches are read on another.
        let (pipeline, error) = ingest_inputs(&batches, config.clone(), timing, &mut nothing(), 1)?;
        read.add(&pipeline).wrap_err("writing the threads to a temporary file")?;
        if error.is_some() {
            read.error = error;
            return Ok(Some(read));
        }
    }
    Ok(batches.read_all().then_some(read))
}

impl Batched {
    fn add(&mut self, pipeline: &Pipeline) -> io::Result<()> {
        let model = &pipeline.model;
        for i in 0..model.threads.len() {
            if self.threads > 0 {
                self.spill.write_all(b",")?;
            }
            serde_json::to_writer(&mut self.spill, &thread_json(model, ThreadIdx(i as u32)))?;
            self.threads += 1;
        }
        let c = pipeline.counters();
        if self.first_malformed.is_none() {
            // Numbered in the whole stream: after the lines of the batches before.
            self.first_malformed = model
                .diagnostics
                .malformed
                .front()
                .map(|m| (m.line_no.saturating_add(self.counters.lines), m.reason.clone()));
        }
        self.counters = self.counters.plus(&c);
        self.bytes = self.bytes.saturating_add(pipeline.bytes);
        if c.lines > 0 {
            self.format = pipeline.format();
        }
        self.dropped = self.dropped.plus(&DroppedJson::counted(pipeline));
        self.totals = self.totals.plus(&model.totals());
        self.unpriced = self.unpriced.saturating_add(model.unpriced_threads());
        Ok(())
    }

    /// As [`traffic::required`] says of a stream read whole.
    pub fn required(&self, paths: &[PathBuf]) -> Result<()> {
        let c = &self.counters;
        traffic::required_of(paths, (c.lines, c.malformed), self.threads > 0, || self.first_malformed.clone())
    }

    /// The object `stats --json` prints, as `super::write_json` writes it for a whole read.
    pub fn write(self, out: &mut impl Write) -> io::Result<()> {
        let mut spill = self.spill.into_inner().map_err(io::IntoInnerError::into_error)?;
        spill.rewind()?;
        let input = InputJson { lines: self.counters.lines, bytes: self.bytes, format: self.format, reopened: 0 };
        out.write_all(b"{\"input\":")?;
        serde_json::to_writer(&mut *out, &input)?;
        out.write_all(b",\"routing\":")?;
        serde_json::to_writer(&mut *out, &RoutingJson::from(self.counters))?;
        out.write_all(b",\"threads\":[")?;
        io::copy(&mut spill, out)?;
        out.write_all(b"],\"totals\":")?;
        let totals = TotalsJson {
            threads: self.totals.threads,
            tokens: (&self.totals.tokens).into(),
            cost_usd: money(self.totals.cost_usd()),
            cost_source: self.totals.source().as_str(),
            unpriced_threads: self.unpriced,
        };
        serde_json::to_writer(&mut *out, &totals)?;
        if self.dropped != DroppedJson::default() {
            out.write_all(b",\"dropped\":")?;
            serde_json::to_writer(&mut *out, &self.dropped)?;
        }
        out.write_all(b"}\n")
    }
}

/// What `stats --json` prints for the store `db` read in batches of `per_batch` roots; `None`
/// when it is read whole (for tests: the same object either way).
pub fn store_json(db: &Path, config: &Config, per_batch: usize) -> Result<Option<String>> {
    let Some(mut read) = read(db, config, None, per_batch)? else { return Ok(None) };
    if let Some(e) = read.error.take() {
        return Err(e);
    }
    let mut out = Vec::new();
    read.write(&mut out)?;
    Ok(Some(String::from_utf8(out).expect("serde_json writes UTF-8")))
}
