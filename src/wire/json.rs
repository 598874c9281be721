//! serde helpers every format's decoder shares: strings that borrow from the record.

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

/// Parses an optional raw field as `T`; `None` when absent, null or of another shape.
pub fn parse_raw<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}
