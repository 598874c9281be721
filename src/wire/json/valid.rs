//! Whether text is JSON, checked against the grammar (RFC 8259) as serde checks what it steps
//! over, building nothing and never recursing: the tee asks it of every line it forwards (its
//! largest cost per byte), and the Codex reader of every value it steps over.

use super::swar;

/// The deepest nesting of arrays and objects [`value_end`] can follow (its stack is one word).
pub const DEEPEST: usize = 128;

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Where the one JSON value at `start` (whitespace before it allowed) ends; `None` when it is not
/// one, or nests deeper than `max_depth` (at most [`DEEPEST`]).
pub fn value_end(b: &[u8], start: usize, max_depth: usize) -> Option<usize> {
    debug_assert!(max_depth <= DEEPEST);
    // Bit `d` says whether the container open at depth `d` is an object (else an array).
    let mut objects = 0u128;
    let mut depth = 0;
    let mut i = skip_ws(b, start);
    'value: loop {
        // A value starts at `i`.
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                if depth == max_depth {
                    return None;
                }
                let object = open == b'{';
                objects = objects & !(1 << depth) | u128::from(object) << depth;
                depth += 1;
                i = skip_ws(b, i + 1);
                let close = if object { b'}' } else { b']' };
                if b.get(i) == Some(&close) {
                    i += 1;
                    depth -= 1;
                } else {
                    if object {
                        i = member_key(b, i)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = string(b, i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            _ => return None,
        }
        // A value ended before `i`: close containers until the next value or the end of this one.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(b, i);
            let object = objects >> (depth - 1) & 1 == 1;
            match (*b.get(i)?, object) {
                (b',', _) => {
                    i = skip_ws(b, i + 1);
                    if object {
                        i = member_key(b, i)?;
                    }
                    continue 'value;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

/// Whether `b` is exactly one JSON value, optionally surrounded by whitespace, in UTF-8, nested
/// at most `max_depth` deep.
pub fn is_document(b: &[u8], max_depth: usize) -> bool {
    simdutf8::basic::from_utf8(b).is_ok() && value_end(b, 0, max_depth).is_some_and(|end| skip_ws(b, end) == b.len())
}

/// `"key"` `:` at `i`; where the member's value starts.
fn member_key(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = skip_ws(b, string(b, i)?);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

/// The string whose quote is at `i`; the index after its closing quote.
fn string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += swar::plain_len(&b[i..])?;
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => {}
            // A raw control byte: not allowed in a string.
            _ => return None,
        }
        i = match *b.get(i + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i + 2,
            // Any four hex digits: serde steps over a lone surrogate too (only a typed string
            // refuses one).
            b'u' => {
                let hex = b.get(i + 2..i + 6)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                i + 6
            }
            _ => return None,
        };
    }
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` at `i`; its end.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], i: usize| -> usize { b[i..].iter().take_while(|c| c.is_ascii_digit()).count() };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i += digits(b, i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let n = digits(b, i + 1);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let n = digits(b, i);
        if n == 0 {
            return None;
        }
        i += n;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The tee's question: one value, at most 100 deep.
    const MAX_DEPTH: usize = 100;

    fn is_json_line(line: &[u8]) -> bool {
        is_document(line, MAX_DEPTH)
    }

    fn serde_says(s: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
    }

    #[test]
    fn accepts_json_and_rejects_the_rest() {
        for ok in [
            "{}",
            "[]",
            " {\"a\" : [1, -2.50, 1e3, 1E+2, 0.5e-3, true, false, null, \"x\"]} \r",
            "\"\\u00e9\\n\\\"\\\\\\/\\b\\f\\r\\t\"",
            "0",
            "-0",
            "\"é ünïcödé\"",
            "[[],[{}],{\"\":{}}]",
        ] {
            assert!(is_json_line(ok.as_bytes()), "{ok}");
            assert!(serde_says(ok), "{ok}");
        }
        for bad in [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{1:2}",
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "--1",
            "tru",
            "nul",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"a\tb\"",
            "[1 2]",
            "{} {}",
            "1 2",
            "[}",
            "{]",
            "'a'",
            "NaN",
        ] {
            assert!(!is_json_line(bad.as_bytes()), "{bad:?}");
            assert!(!serde_says(bad), "{bad:?}");
        }
        assert!(!is_json_line(b"\"\xff\""));
    }

    #[test]
    fn nesting_beyond_the_bound_is_not_embedded() {
        let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(is_json_line(nested(MAX_DEPTH).as_bytes()));
        assert!(!is_json_line(nested(MAX_DEPTH + 1).as_bytes()));
        let objects = |d: usize| format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d));
        assert!(is_json_line(objects(MAX_DEPTH).as_bytes()));
        assert!(!is_json_line(objects(MAX_DEPTH + 1).as_bytes()));
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn agrees_with_serde_on_json_ish_noise(s in "[\\[\\]{}\",:0-9.eE+\\- tfrunlsa\\\\/u\t\u{1}é]{0,24}") {
            prop_assert_eq!(is_json_line(s.as_bytes()), serde_says(&s));
        }

        #[test]
        fn accepts_everything_serde_writes(v in json_value(), pretty in any::<bool>()) {
            let s = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) };
            let s = s.expect("serialises");
            prop_assert!(is_json_line(s.as_bytes()), "{}", s);
        }

        #[test]
        fn a_broken_document_is_refused_like_serde_does(v in json_value(), cut in any::<prop::sample::Index>()) {
            let s = serde_json::to_string(&v).expect("serialises");
            let mut end = cut.index(s.len() + 1);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            let prefix = &s[..end];
            prop_assert_eq!(is_json_line(prefix.as_bytes()), serde_says(prefix), "{}", prefix);
        }
    }
}
