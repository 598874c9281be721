//! The store behind a small trait: what a sync and the queries need of a backend, and nothing of
//! how it keeps it: one SQLite file of this machine's (`sqlite`), or a team's PostgreSQL database
//! (`postgres`, issue 21), where this machine writes under its name and reads the whole fleet.

use std::path::PathBuf;

use color_eyre::eyre::Result;

use super::query::Filter;
use super::rows::{ActRow, Hit, ItemRow, Known, SessionInfo, SessionView, SourceRows, UsageFact};
use crate::wire::Clean;

pub trait Backend {
    /// A stored source, with the state of its files when it was read.
    fn known(&self, key: &str) -> Result<Option<Known>>;
    /// Replaces each source (by its key) with its rows, all in one transaction.
    fn write(&mut self, batch: &[SourceRows]) -> Result<Written>;
    /// Notes files of a stored source that are gone (its runs stay).
    fn mark_missing(&mut self, key: &str, missing: &[PathBuf]) -> Result<()>;
    /// Every file of this machine's sources that the last look found there, with its source's key.
    fn present(&self) -> Result<Vec<(String, PathBuf)>>;
    /// The folders those files are in, each once (with its trailing `/`).
    fn folders(&self) -> Result<Vec<PathBuf>>;
    fn meta(&self, key: &str) -> Result<Option<String>>;
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;
    /// Root sessions active in the filter's range, newest first.
    fn sessions(&self, filter: &Filter) -> Result<Vec<SessionInfo>>;
    /// One session by its id, or a unique prefix of it (four characters at least).
    fn session(&self, id: &str) -> Result<Lookup>;
    /// The items of one run of a session, in order (what its lane showed).
    fn items(&self, session: &str, thread: &str) -> Result<Vec<ItemRow>>;
    /// Every quarter hour of spend in the filter's range, as reports group it.
    fn usage(&self, filter: &Filter, each: &mut dyn FnMut(UsageFact)) -> Result<()>;
    /// Items whose text holds every one of `words` (each a phrase of its own tokens: what a person
    /// types is words to find, never query syntax), best first.
    fn search(&self, words: &[String], filter: &Filter, limit: usize) -> Result<Vec<Hit>>;
    /// Removes the sessions that ended before `before_ms`, their runs and the acts on them, and
    /// the acts older than `before_ms` on no session it keeps (an act on a kept session stays with
    /// it: its audit trail is whole or gone, never an act on a session that is not there).
    fn prune(&mut self, before_ms: i64) -> Result<Pruned>;
    /// After every sync: what it wrote, if it `wrote`, is folded into the store proper (SQLite's
    /// write-ahead log), and a new store is synced to disk from then on.
    fn settle(&mut self, wrote: bool) -> Result<()>;
    /// Bytes the store takes on disk.
    fn size(&self) -> Result<u64>;
    /// What the store holds: sessions, runs, and the bytes of the agents' files it indexed.
    fn totals(&self) -> Result<Totals>;
    /// The files a session was read from (a session's source's), and whether each was still there
    /// at the last sync.
    fn files(&self, session: &str) -> Result<Vec<(PathBuf, bool)>>;
    /// The sessions read from any of the files at `paths` (this machine's), each once, in id order.
    fn sessions_of(&self, paths: &[PathBuf]) -> Result<Vec<String>>;
    /// Everything stored, as text that two stores holding the same runs print alike (tests).
    fn dump(&self) -> Result<String>;
    /// Only one sync at a time: the lock, or `None` when another holds it and `wait` is false.
    fn lock(&self, wait: bool) -> Result<Option<SyncLock>>;
    /// Keeps one act (an interrupt, a guard's decision).
    fn record_act(&mut self, act: &ActRow) -> Result<()>;
    /// The acts done in the root session `session` (its full id), oldest first.
    fn acts(&self, session: &str) -> Result<Vec<ActRow>>;
}

/// What one source's write stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub sessions: usize,
    /// Sessions another source already held (a recording of a session indexed from its rollouts).
    pub duplicates: usize,
    pub runs: usize,
    /// Rows of sessions, runs, usage and items it inserted, changed or deleted (what a write cost,
    /// counted alike by both backends; a source read again writes only what changed).
    pub rows: u64,
}

/// What the store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub sessions: u64,
    pub runs: u64,
    /// Bytes of the agents' files read into it (each source's as last read).
    pub indexed: u64,
}

/// What a prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub sessions: usize,
    pub runs: usize,
    /// Acts on the sessions removed, and acts older than the date on no session the store keeps.
    pub acts: usize,
}

/// A session looked up by id.
#[derive(Debug)]
pub enum Lookup {
    Found(Box<SessionView>),
    Missing,
    /// A prefix that several sessions share: their ids.
    Ambiguous(Vec<Clean>),
}

/// Held while a sync runs; released when dropped (or when its process dies).
pub struct SyncLock(#[allow(dead_code)] Box<dyn std::any::Any + Send>);

impl SyncLock {
    pub fn new(guard: impl std::any::Any + Send) -> Self {
        Self(Box::new(guard))
    }
}
