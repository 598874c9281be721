//! The run store: every agent run kept, reported and searchable after the agents' own files are
//! gone (issue 20; the schema and its versions are in docs/store.md).
//!
//! A sync ([`sync`]) finds every session the agents' places hold ([`places`]), reads the ones
//! whose files changed through the same pipeline `stats` uses, and writes each as rows — its root
//! sessions, one run per thread with its spend by quarter hour, its items' text (capped, each
//! distinct text once, searchable) — in one transaction per session. Queries read those rows:
//! `history` (sessions, one session's tree), `report` (spend by period, session, project, model
//! or kind of agent, [`report`]) and `search`. Runs outlive their files: a session whose files
//! are deleted keeps what was read of it.
//!
//! The store is behind a small trait ([`Backend`]): one SQLite file of this machine's, or the team
//! store on PostgreSQL that many machines write into, each under its name ([`postgres`], issue 21).

pub mod backend;
pub mod capture;
pub mod carry;
mod identity;
mod ledger;
pub mod location;
pub mod places;
pub mod postgres;
pub mod query;
pub mod report;
pub mod rows;
mod schema;
mod sqlite;
pub mod sync;
mod text;

use std::path::Path;

use color_eyre::eyre::Result;

pub use self::backend::{Backend, Lookup, Pruned, Totals, Written};
pub use self::carry::Carry;
pub use self::location::Location;
pub use self::query::Filter;
pub use self::sqlite::FutureSchema;
pub use self::sync::{Reader, Synced};

/// An open store.
pub struct Store {
    backend: Box<dyn Backend>,
    location: Location,
}

impl Store {
    /// Opens (creating if need be) the SQLite store at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self { backend: Box::new(sqlite::Sqlite::open(path)?), location: Location::File(path.to_owned()) })
    }

    /// Opens the store `location` names; a team store is written under `machine`'s name.
    pub fn open_at(location: &Location, machine: &str) -> Result<Self> {
        match location {
            Location::File(path) => Self::open(path),
            Location::Team(url) => {
                Ok(Self { backend: Box::new(postgres::Postgres::open(url, machine)?), location: location.clone() })
            }
        }
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    pub fn backend_mut(&mut self) -> &mut dyn Backend {
        self.backend.as_mut()
    }
}

/// The schema version this swarmtop writes.
pub const SCHEMA_VERSION: usize = schema::LATEST;

/// What a read keeps, where the schema did not change: 2, a session's unattributed part (what its
/// agent reported and no thread accounts for) is with its root's usage. A store read by an
/// earlier one reads again every source whose files are still there (the sync's fingerprint).
pub const READING: usize = 2;

/// The schema whose columns a read fills, as the sync's fingerprint names it: 6 (a failed call's
/// reason), so a store upgraded to it reads again every source whose files are still there.
/// Version 5 only filled what older rows tell of 4's columns, and read nothing again.
pub const READ_SCHEMA: usize = 6;
