//! The store file itself: how it is recognised and how it is opened (read-only, never locking
//! OpenCode out, wire.md §9).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
/// The store's name in OpenCode's data directory.
pub const STORE_NAME: &str = "opencode.db";
/// How long a read waits for a lock SQLite needs briefly (a checkpoint), before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_millis(500);

/// The store a path names: an SQLite file, or a data directory holding `opencode.db`.
pub fn store_at(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        let db = path.join(STORE_NAME);
        return is_sqlite(&db).then_some(db);
    }
    is_sqlite(path).then(|| path.to_path_buf())
}

/// Whether a file starts like an SQLite database.
pub fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == SQLITE_MAGIC
}

/// An SQLite error as an I/O error naming the store.
pub(super) fn sql_error(db: &Path, e: &rusqlite::Error) -> io::Error {
    io::Error::other(format!("{}: {e}", db.display()))
}

/// Opens the store read-only: never created, never written, never locking OpenCode out.
pub fn open(db: &Path) -> io::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags).map_err(|e| sql_error(db, &e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_error(db, &e))?;
    Ok(conn)
}
