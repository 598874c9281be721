//! The root sessions of a store as discovery lists them, found from the sessions updated in a
//! window and their ancestors only.

use std::io;
use std::path::Path;

use super::cells::Tally;
use super::store::{open, sql_error};

/// A root session as discovery lists it: where it ran and when its subtree last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub id: String,
    pub directory: Option<String>,
    pub created_ms: i64,
    /// The newest `time_updated` in its subtree.
    pub updated_ms: i64,
    /// Its last assistant message has finished (or failed): nothing of the root's own runs.
    pub settled: bool,
}

/// The root sessions with anything in their subtree updated at or after `since_ms` (`None`: all).
/// A row with an odd value is read without it (a root with no id is left out): discovery lists
/// what it can, and the store's read counts what is odd.
pub fn roots(db: &Path, since_ms: Option<i64>) -> io::Result<Vec<Root>> {
    let conn = open(db)?;
    let err = |e: rusqlite::Error| sql_error(db, &e);
    let mut st = conn
        .prepare_cached(
            "WITH RECURSIVE up(id, parent_id, updated) AS ( \
               SELECT id, parent_id, time_updated FROM session WHERE time_updated >= ?1 \
               UNION SELECT s.id, s.parent_id, u.updated FROM session s JOIN up u ON s.id = u.parent_id) \
             SELECT u.id, s.directory, s.time_created, MAX(u.updated), \
               (SELECT CASE WHEN json_valid(m.data) THEN json_extract(m.data, '$.time.completed') IS NOT NULL \
                       OR json_extract(m.data, '$.error') IS NOT NULL ELSE 0 END \
                  FROM message m WHERE m.session_id = u.id ORDER BY m.id DESC LIMIT 1) \
             FROM up u JOIN session s ON s.id = u.id WHERE u.parent_id IS NULL GROUP BY u.id",
        )
        .map_err(err)?;
    let mut rows = st.query([since_ms.unwrap_or(i64::MIN)]).map_err(err)?;
    let mut tally = Tally::default();
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(err)? {
        let Some(id) = tally.text(r, 0, "session.id") else { continue };
        out.push(Root {
            id,
            directory: tally.text(r, 1, "session.directory"),
            created_ms: tally.int(r, 2, "session.time_created").unwrap_or(0),
            updated_ms: tally.int(r, 3, "session.time_updated").unwrap_or(0),
            settled: tally.int(r, 4, "settled").is_some_and(|s| s != 0),
        });
    }
    Ok(out)
}
