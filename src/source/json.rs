//! Is a line one JSON value that a recording can embed verbatim? The tee asks this of every line
//! it forwards, so it is the proxy's largest cost per byte: this checker only validates (it
//! builds nothing), scans string bodies eight bytes at a time, and never recurses.
//!
//! It also bounds nesting: an envelope adds one level around the line, and `serde_json` readers
//! refuse documents nested more than 128 deep, so a deeper line is kept as `rawB64` instead of
//! making its record unreadable.

/// Deepest nesting of arrays and objects embedded verbatim.
pub const MAX_DEPTH: usize = 100;

/// Whether `line` is exactly one JSON value (RFC 8259), optionally surrounded by whitespace,
/// in UTF-8, nested at most [`MAX_DEPTH`] deep.
pub fn is_json(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok() && value(line).is_some()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The whole line as one value; `None` when it is not.
fn value(b: &[u8]) -> Option<()> {
    // Whether each open container is an object (true) or an array.
    let mut stack = [false; MAX_DEPTH];
    let mut depth = 0;
    let mut i = skip_ws(b, 0);
    'value: loop {
        // A value starts at `i`.
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                let object = open == b'{';
                *stack.get_mut(depth)? = object;
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
        // A value ended before `i`: close containers until the next value or the end.
        loop {
            i = skip_ws(b, i);
            if depth == 0 {
                return (i == b.len()).then_some(());
            }
            let object = stack[depth - 1];
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

/// `"key"` `:` at `i`; returns where the member's value starts.
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

/// A string starting with its quote at `i`; returns the index after its closing quote.
fn string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += plain_run(&b[i..]);
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => {}
            // A raw control character: not allowed in a string.
            _ => return None,
        }
        i = match *b.get(i + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i + 2,
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

/// Length of the prefix of `s` without `"`, `\` or a control character, eight bytes at a time:
/// string bodies are most of what the tee reads, and escapes are frequent in them (JSON inside
/// JSON), so a search that costs a call per escape loses to this.
fn plain_run(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Each term flags the lowest byte that matches exactly (higher flags may be false, after a
    // borrow), so the lowest flag of their union is a true match.
    let flags = |x: u64| {
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | x.wrapping_sub(ONES * 0x20) & !x)
            & HIGH
    };
    let mut n = 0;
    for c in s.chunks_exact(8) {
        let x = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let f = flags(x);
        if f != 0 {
            return n + (f.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + s[n..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).unwrap_or(s.len() - n)
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` at `i`; returns its end.
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
    use super::*;
    use proptest::prelude::*;

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
            assert!(is_json(ok.as_bytes()), "{ok}");
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
            assert!(!is_json(bad.as_bytes()), "{bad:?}");
            assert!(!serde_says(bad), "{bad:?}");
        }
        assert!(!is_json(b"\"\xff\""));
    }

    #[test]
    fn plain_runs_stop_at_the_first_special_byte() {
        for (s, n) in [
            (&b"abcdefghijklmnop"[..], 16),
            (b"abcdefgh\"", 8),
            (b"abc\\defghijkl", 3),
            (b"abcdefghijk\x01", 11),
            (b"\x1f", 0),
            (b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", 8),
            (b"ab\x00\"\\", 2),
            (b"", 0),
        ] {
            assert_eq!(plain_run(s), n, "{s:?}");
        }
    }

    #[test]
    fn nesting_beyond_the_bound_is_not_embedded() {
        let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(is_json(nested(MAX_DEPTH).as_bytes()));
        assert!(!is_json(nested(MAX_DEPTH + 1).as_bytes()));
        let objects = |d: usize| format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d));
        assert!(is_json(objects(MAX_DEPTH).as_bytes()));
        assert!(!is_json(objects(MAX_DEPTH + 1).as_bytes()));
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
            prop_assert_eq!(is_json(s.as_bytes()), serde_says(&s));
        }

        #[test]
        fn accepts_everything_serde_writes(v in json_value(), pretty in any::<bool>()) {
            let s = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) };
            let s = s.expect("serialises");
            prop_assert!(is_json(s.as_bytes()), "{}", s);
        }

        #[test]
        fn a_broken_document_is_refused_like_serde_does(v in json_value(), cut in any::<prop::sample::Index>()) {
            let s = serde_json::to_string(&v).expect("serialises");
            let mut end = cut.index(s.len() + 1);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            let prefix = &s[..end];
            prop_assert_eq!(is_json(prefix.as_bytes()), serde_says(prefix), "{}", prefix);
        }
    }
}
