//! Columns read as what SQLite holds, not as what the schema declares. SQLite is dynamically
//! typed: a declared type is an affinity, so `tokens_output` can hold the REAL 2.5, `cost` the
//! TEXT "a lot", a NOT NULL column NULL in a store built another way. Read strictly, one such
//! value made the whole store unreadable (issue 22 item 8). Here a value of an odd type is
//! skipped (read as absent) and counted; a row that cannot be handed on without it (no id, no
//! data) is skipped and counted; the counts reach the diagnostics log as one notice per read.

use rusqlite::Row;
use rusqlite::types::ValueRef;
use serde_json::Value;

/// Longest text or JSON value read from a column: a record must fit the line bound the pipeline
/// reads records with (`files::MAX_LINE`, equal by a test), so a longer one would be counted
/// malformed anyway, after being built. Written out rather than named: `files` opens stores
/// through this folder, and naming it here made an import circle.
pub const MAX_VALUE: usize = 16 << 20;

/// What a read found odd.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Values skipped for their type (or their size).
    pub values: u64,
    /// Rows skipped.
    pub rows: u64,
    /// One of them, for the notice: `session.cost holds text`.
    first: Option<String>,
}

fn type_name(v: ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Null => "null",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

/// A column's value; a column the statement lacks reads as NULL (the SQL is ours: it has them).
fn cell<'r>(row: &'r Row<'_>, i: usize) -> ValueRef<'r> {
    row.get_ref(i).unwrap_or(ValueRef::Null)
}

impl Tally {
    pub fn is_empty(&self) -> bool {
        self.values == 0 && self.rows == 0
    }

    /// Keeps the note that sorts first, not the first met: the tables are read merged, and pages
    /// of another size meet their odd values in another order (the notice must not change).
    fn note(&mut self, what: impl FnOnce() -> String) {
        let what = what();
        if self.first.as_ref().is_none_or(|first| what < *first) {
            self.first = Some(what);
        }
    }

    fn odd(&mut self, column: &str, found: &str) {
        self.values = self.values.saturating_add(1);
        self.note(|| format!("{column} holds {found}"));
    }

    /// A row skipped: `why` names what it lacked.
    pub fn skip_row(&mut self, table: &str, why: &str) {
        self.rows = self.rows.saturating_add(1);
        self.note(|| format!("a {table} row {why}"));
    }

    /// Rows skipped that were never read (their key is NULL, so no page reaches them).
    pub fn skip_rows(&mut self, n: u64, table: &str, why: &str) {
        if n > 0 {
            self.rows = self.rows.saturating_add(n);
            self.note(|| format!("a {table} row {why}"));
        }
    }

    /// A text column; NULL is absent, anything else odd.
    pub fn text(&mut self, row: &Row<'_>, i: usize, column: &str) -> Option<String> {
        match cell(row, i) {
            ValueRef::Null => None,
            ValueRef::Text(t) if t.len() > MAX_VALUE => {
                self.odd(column, "text over the line bound");
                None
            }
            ValueRef::Text(t) => Some(if let Ok(s) = std::str::from_utf8(t) {
                s.to_owned()
            } else {
                // Read with its bad bytes replaced: the rest of the text is still the value.
                self.odd(column, "text that is not UTF-8");
                String::from_utf8_lossy(t).into_owned()
            }),
            v => {
                self.odd(column, type_name(v));
                None
            }
        }
    }

    /// An integer column (a time, a sequence number).
    pub fn int(&mut self, row: &Row<'_>, i: usize, column: &str) -> Option<i64> {
        match cell(row, i) {
            ValueRef::Null => None,
            ValueRef::Integer(n) => Some(n),
            v => {
                // INTEGER affinity keeps a REAL only when it is not a whole number, and TEXT only
                // when it is not a number at all: either is no integer to read.
                self.odd(column, type_name(v));
                None
            }
        }
    }

    /// A count that cannot be negative (tokens).
    pub fn count(&mut self, row: &Row<'_>, i: usize, column: &str) -> Option<i64> {
        match self.int(row, i, column) {
            Some(n) if n < 0 => {
                self.odd(column, "a negative count");
                None
            }
            n => n,
        }
    }

    /// A REAL column (a cost in US dollars).
    pub fn real(&mut self, row: &Row<'_>, i: usize, column: &str) -> Option<f64> {
        match cell(row, i) {
            ValueRef::Null => None,
            ValueRef::Real(x) if x.is_finite() => Some(x),
            ValueRef::Integer(n) => Some(n as f64),
            v => {
                self.odd(column, if matches!(v, ValueRef::Real(_)) { "an infinite real" } else { type_name(v) });
                None
            }
        }
    }

    /// A column of JSON text as a value; text that is not JSON is kept as a string (the lowering
    /// finds nothing in it), counted. `None`: no JSON text there at all.
    pub fn json(&mut self, row: &Row<'_>, i: usize, column: &str) -> Option<Value> {
        let text = self.text(row, i, column)?;
        Some(serde_json::from_str(&text).unwrap_or_else(|_| {
            self.odd(column, "text that is not JSON");
            Value::String(text)
        }))
    }

    /// What was skipped, in words, and the tally emptied: `None` when nothing was.
    pub fn take_notice(&mut self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let t = std::mem::take(self);
        let first = t.first.unwrap_or_default();
        Some(format!("{} odd value(s) read as absent, {} row(s) skipped (first: {first})", t.values, t.rows))
    }
}
