//! A table read a page at a time, in the order of its key, each page's query starting after the
//! last key the previous page read (keyset pagination: the ids sort by time, wire.md §9, and each
//! is indexed). Memory stays flat in the store's size: a 300 MB store of 1M sessions, read whole,
//! took 1.51 GB (issue 22).
//!
//! A page ends after [`PAGE_ROWS`] rows or once its rows hold [`PAGE_BYTES`], whichever comes
//! first. Rows whose key is NULL sort outside every range and are never reached: the reads count
//! them apart.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, Row, ToSql};

/// Rows one query fetches at most.
pub const PAGE_ROWS: usize = 512;
/// Bytes of rows a page holds before it ends (a row larger than this is a page of its own).
pub const PAGE_BYTES: usize = 1 << 20;

/// How large a page is: [`PAGE_ROWS`] and [`PAGE_BYTES`] unless a test or a fuzz target wants
/// small pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBounds {
    pub rows: usize,
    pub bytes: usize,
}

impl Default for PageBounds {
    fn default() -> Self {
        Self { rows: PAGE_ROWS, bytes: PAGE_BYTES }
    }
}

/// One value of a page's last key, as SQLite holds it. Not a `rusqlite` value: that insists on
/// UTF-8, and a TEXT id that is not (a hostile store) panicked there (found by the
/// `opencode_store` fuzz target). Bound back as the same type and bytes, it compares as SQLite
/// compared it.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl From<ValueRef<'_>> for Key {
    fn from(v: ValueRef<'_>) -> Self {
        match v {
            ValueRef::Null => Self::Null,
            ValueRef::Integer(i) => Self::Integer(i),
            ValueRef::Real(r) => Self::Real(r),
            ValueRef::Text(t) => Self::Text(t.to_vec()),
            ValueRef::Blob(b) => Self::Blob(b.to_vec()),
        }
    }
}

impl ToSql for Key {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Integer(i) => ValueRef::Integer(*i),
            Self::Real(r) => ValueRef::Real(*r),
            Self::Text(t) => ValueRef::Text(t),
            Self::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// The sessions a scoped read covers: the roots named in `?1` (a JSON array) and their
/// descendants, by `session_parent_idx`.
const SUBTREE: &str = "WITH RECURSIVE tree(id) AS (SELECT value FROM json_each(?1) \
     UNION SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id) ";

/// The two queries of a paged read: the first page, and every page after a key.
pub struct PageSql {
    first: String,
    next: String,
    keys: usize,
}

/// What a paged read selects.
pub struct Query<'a> {
    /// `SELECT <columns, the key columns first> FROM <table>`.
    pub select: &'a str,
    /// The key, in order.
    pub keys: &'a [&'a str],
    /// Newest first (session ids sort newest first, wire.md §9).
    pub descending: bool,
    /// A condition every row meets, or "".
    pub filter: &'a str,
    /// With a scope: the column that must name a session of the scoped subtrees.
    pub scope_column: &'a str,
}

impl PageSql {
    pub fn new(q: &Query<'_>, scoped: bool) -> Self {
        let (cte, scope, first_param) =
            if scoped { (SUBTREE, format!(" AND {} IN tree", q.scope_column), 2) } else { ("", String::new(), 1) };
        let filter = if q.filter.is_empty() { String::new() } else { format!(" AND ({})", q.filter) };
        let dir = if q.descending { " DESC" } else { "" };
        let order = q.keys.iter().map(|k| format!("{k}{dir}")).collect::<Vec<_>>().join(", ");
        let not_null = q.keys.iter().map(|k| format!("{k} IS NOT NULL")).collect::<Vec<_>>().join(" AND ");
        let placeholders = (0..q.keys.len()).map(|i| format!("?{}", first_param + i)).collect::<Vec<_>>().join(", ");
        let after = format!("({}) {} ({placeholders})", q.keys.join(", "), if q.descending { "<" } else { ">" });
        let limit_first = first_param;
        let limit_next = first_param + q.keys.len();
        let query = |key: &str, limit: usize| {
            if !scoped {
                return format!("{cte}{} WHERE {key}{filter}{scope} ORDER BY {order} LIMIT ?{limit}", q.select);
            }
            // SQLite finds a scope's rows through the scope column's index and sorts them all for
            // every page: the keys alone are sorted here, and only the page's rows read whole
            // (a part's `data` is most of the store).
            let (_, table) = q.select.rsplit_once(" FROM ").expect("a query selects from a table");
            let keys = q.keys.join(", ");
            format!(
                "{cte}{} WHERE ({keys}) IN (SELECT {keys} FROM {table} WHERE {key}{filter}{scope} \
                 ORDER BY {order} LIMIT ?{limit}) ORDER BY {order}",
                q.select
            )
        };
        Self { first: query(&not_null, limit_first), next: query(&after, limit_next), keys: q.keys.len() }
    }

    /// Reads the page after `after` (the first page when `None`), handing each row to `take`,
    /// which says about how many bytes it kept; `after` moves to the last row read. Returns
    /// whether the table may hold more.
    pub fn page(
        &self,
        conn: &Connection,
        (scope, bounds): (Option<&str>, PageBounds),
        after: &mut Option<Vec<Key>>,
        mut take: impl FnMut(&Row<'_>) -> usize,
    ) -> rusqlite::Result<bool> {
        let from = after.clone();
        let limit = i64::try_from(bounds.rows).unwrap_or(i64::MAX);
        let mut params: Vec<&dyn ToSql> = Vec::with_capacity(self.keys + 2);
        if let Some(s) = &scope {
            params.push(s);
        }
        if let Some(keys) = &from {
            params.extend(keys.iter().map(|k| k as &dyn ToSql));
        }
        params.push(&limit);
        let mut st = conn.prepare_cached(if from.is_some() { &self.next } else { &self.first })?;
        let mut rows = st.query(params.as_slice())?;
        let (mut n, mut bytes) = (0usize, 0usize);
        while let Some(r) = rows.next()? {
            n += 1;
            let key = (0..self.keys).map(|i| r.get_ref(i).map(Key::from)).collect::<rusqlite::Result<Vec<_>>>()?;
            bytes = bytes.saturating_add(take(r));
            *after = Some(key);
            if bytes >= bounds.bytes {
                return Ok(true);
            }
        }
        Ok(n == bounds.rows)
    }
}

/// [`SUBTREE`] before a query of one's own, for the counts a scoped read makes.
pub fn with_scope(scoped: bool, query: &str) -> String {
    if scoped { format!("{SUBTREE}{query}") } else { query.to_owned() }
}
