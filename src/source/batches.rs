//! Inputs whose sessions are read a batch at a time: a store of many sessions (OpenCode's), where
//! each root session with everything under it depends on nothing outside it. A command that needs
//! each session's figures once (`stats --json`) then holds a batch, not the store.

use std::path::PathBuf;

use super::files::{self, Input};
pub use super::opencode::{BATCH_ROOTS as SESSIONS_PER_BATCH, ReadAhead as Batches};

/// The store that is the only input of `paths`, if it is one read so.
pub fn store_in(paths: &[PathBuf]) -> Option<PathBuf> {
    match files::expand(paths).ok()?.as_slice() {
        [Input::File(p)] if super::opencode::is_sqlite(p) => Some(p.clone()),
        _ => None,
    }
}
