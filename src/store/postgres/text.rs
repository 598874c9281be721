//! Text as PostgreSQL takes it: a `TEXT` value holds no NUL character, and a path, a project or
//! a title is input like any other. A NUL becomes U+FFFD on the way in (SQLite keeps it), so that
//! one hostile line never fails a whole batch, sync after sync.

use std::borrow::Cow;
use std::error::Error;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, accepts, to_sql_checked};

#[derive(Debug, Clone, Copy)]
pub(super) struct Text<'a>(pub &'a str);

impl Text<'_> {
    pub(super) fn get(&self) -> Cow<'_, str> {
        if self.0.contains('\0') { Cow::Owned(self.0.replace('\0', "\u{fffd}")) } else { Cow::Borrowed(self.0) }
    }
}

/// An optional text parameter.
pub(super) fn opt(s: Option<&str>) -> Option<Text<'_>> {
    s.map(Text)
}

impl ToSql for Text<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        self.get().as_ref().to_sql(ty, out)
    }

    accepts!(TEXT, VARCHAR);
    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn a_nul_never_reaches_the_server() {
        assert_eq!(Text("a\0b").get(), "a\u{fffd}b");
        assert!(matches!(Text("plain").get(), std::borrow::Cow::Borrowed("plain")));
    }
}
