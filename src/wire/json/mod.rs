//! JSON as `wire` reads it. Every fast path walks a record with the one [`Cursor`] (whitespace,
//! strings and escapes, numbers, member names, values stepped over), built on the word masks of
//! [`swar`], the structural skip of [`skip`] and the grammar check of [`valid`]; each format's
//! reader is a table over it. Behind every fast path is a full parse by serde, with the helpers
//! below: strings that borrow from the record, and raw values kept as text.

mod cursor;
mod skip;
pub mod swar;
pub mod valid;

pub use cursor::{Cursor, Fields, Scan, Slot};

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

pub type Str<'a> = Cow<'a, str>;

/// Deserializes a string borrowed from the record when it holds no escapes. (serde's own
/// `Cow<str>` impl always allocates outside a derive's bare `#[serde(borrow)]` field.)
pub(crate) struct BStr<'a>(pub Str<'a>);

impl<'de> Deserialize<'de> for BStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<BStr<'de>, E> {
                Ok(BStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

pub(crate) fn opt_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Str<'de>>, D::Error> {
    Ok(Option::<BStr<'de>>::deserialize(d)?.map(|b| b.0))
}

pub(crate) fn req_str<'de, D: Deserializer<'de>>(d: D) -> Result<Str<'de>, D::Error> {
    Ok(BStr::deserialize(d)?.0)
}

pub(crate) fn opt_vec_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Str<'de>>>, D::Error> {
    Ok(Option::<Vec<BStr<'de>>>::deserialize(d)?.map(|v| v.into_iter().map(|b| b.0).collect()))
}

/// The text of one JSON value, validated once where it was read: what a `&RawValue` is, but made
/// by the Codex scanner without serde validating the same bytes a second time (that re-check was
/// 7 % of ingest on real traffic). Built only from text a validating reader has accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// `text` is exactly one JSON value that a validating reader (the scanner, serde) accepted.
    pub(crate) fn validated(text: &'a str) -> Self {
        Self(text)
    }

    pub fn get(self) -> &'a str {
        self.0
    }

    /// The value as `T`; `None` when it is of another shape.
    pub fn parse<T: Deserialize<'a>>(self) -> Option<T> {
        serde_json::from_str(self.0).ok()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|r| Raw(r.get()))
    }
}

/// Parses an optional raw field as `T`; `None` when absent, null or of another shape.
pub fn parse_raw<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}

/// Generators shared by the serde-agreement tests of each format's fast reader.
#[cfg(test)]
pub(crate) mod arbitrary {
    use proptest::prelude::*;

    /// JSON text of `leaf` values nested in arrays and objects (up to three deep), with member names
    /// drawn from `key`: each reader's test supplies the values and names its records hold.
    pub(crate) fn nested<K>(
        leaf: impl Strategy<Value = String> + 'static,
        key: fn() -> K,
    ) -> impl Strategy<Value = String>
    where
        K: Strategy<Value = &'static str> + 'static,
    {
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key(), inner), 0..4).prop_map(|kv| format!(
                    "{{{}}}",
                    kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",")
                )),
            ]
        })
    }
}
