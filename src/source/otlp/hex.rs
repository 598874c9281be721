//! Ids as OTLP/JSON writes them, shared by the records and the token.

/// Lower-case hex, as OTLP/JSON writes ids.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
