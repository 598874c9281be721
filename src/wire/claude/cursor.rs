//! A cursor over one record's JSON that walks objects and arrays by their structure: the values a
//! reader wants are decoded, the rest are stepped over with `memchr` — a string by its closing
//! quote, an object or array by its balanced brackets — without decoding them.
//!
//! Every method gives `None` when the text is not what it expects; the caller then gives up and
//! leaves the record to the full parse, which decides (and reports) what it is. Skipped values are
//! checked for their structure only (closed strings, balanced brackets), not for their grammar.

// The outer `None` is "give up, leave it to the full parse"; the inner one is JSON's null.
#![allow(clippy::option_option)]

use std::borrow::Cow;

use memchr::memchr;
use serde::Deserialize;

use crate::wire::json::{Str, short_escape};
use crate::wire::skip;

#[derive(Clone)]
pub struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.pos += 1)
    }

    /// Nothing but whitespace is left.
    pub fn end(&mut self) -> Option<()> {
        self.ws();
        (self.pos == self.text.len()).then_some(())
    }

    /// Where the string whose opening quote is at `start` ends (past its closing quote).
    fn string_end(&self, start: usize) -> Option<usize> {
        let b = self.bytes();
        // Most strings stepped over are short (ids, times, names): their closing quote is in the
        // first words, found faster so than a block is read.
        if let Ok(at) = probe(b.get(start + 1..)?, |x| maybe_equal(x, b'"')) {
            let quote = start + 1 + at;
            if !escaped(b, quote) {
                return Some(quote + 1);
            }
        }
        skip::string_end(b, start + 1)
    }

    /// Where the object or array opened at `start` ends.
    fn nested_end(&self, start: usize, open: u8, close: u8) -> Option<usize> {
        skip::nested_end(self.bytes(), start, open, close)
    }

    /// Steps over one value; its text.
    pub fn value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.pos;
        let b = self.bytes();
        let end = match *b.get(start)? {
            b'"' => self.string_end(start)?,
            b'{' => self.nested_end(start, b'{', b'}')?,
            b'[' => self.nested_end(start, b'[', b']')?,
            b'}' | b']' | b',' | b':' => return None,
            _ => {
                let len = b[start..]
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                    .unwrap_or(b.len() - start);
                start + len
            }
        };
        self.pos = end;
        Some(&self.text[start..end])
    }

    /// One value decoded by serde, as a full parse would decode it there.
    pub fn parse<T: Deserialize<'a>>(&mut self) -> Option<T> {
        serde_json::from_str(self.value()?).ok()
    }

    /// A string; borrowed when it holds no escape.
    pub fn string(&mut self) -> Option<Str<'a>> {
        if self.peek()? != b'"' {
            return None;
        }
        // Most strings read are ids, types and times, plain: their end is their first special byte.
        let start = self.pos + 1;
        let rest = &self.bytes()[start..];
        if let Some(len) = plain_len(rest)
            && rest[len] == b'"'
        {
            self.pos = start + len + 1;
            return Some(Cow::Borrowed(&self.text[start..start + len]));
        }
        let text = self.value()?;
        let inner = &text[1..text.len() - 1];
        // A raw control byte is not JSON: serde says so (and how) when it reads the string. The
        // fold, unlike `any`, does not stop early, and so is compiled to vector compares.
        #[allow(clippy::needless_bitwise_bool)]
        let plain = memchr(b'\\', inner.as_bytes()).is_none() && !inner.bytes().fold(false, |any, c| any | (c < 0x20));
        if plain {
            return Some(Cow::Borrowed(inner));
        }
        unescape(inner).map(Cow::Owned)
    }

    /// A non-negative integer written plainly (no sign, fraction, exponent or leading zero), or
    /// null; `None` for anything else, which serde may still read (`-0`, `1e3`): the caller
    /// leaves such a value to serde.
    pub fn opt_plain_u64(&mut self) -> Option<Option<u64>> {
        let b = self.bytes();
        let start = self.pos;
        match *b.get(start)? {
            b'n' => return self.null(),
            b'0' => {
                self.pos = start + 1;
                return self.ends_number().then_some(Some(0));
            }
            b'1'..=b'9' => {}
            _ => return None,
        }
        let len = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        let n =
            b[start..start + len].iter().try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))?;
        self.pos = start + len;
        self.ends_number().then_some(Some(n))
    }

    /// Whether a number may end here: at a delimiter or the end.
    fn ends_number(&self) -> bool {
        self.bytes().get(self.pos).is_none_or(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
    }

    /// A string or null.
    pub fn opt_str(&mut self) -> Option<Option<Str<'a>>> {
        match self.peek()? {
            b'"' => self.string().map(Some),
            _ => self.null(),
        }
    }

    /// `true`, `false` or null.
    pub fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b't' | b'f' => match self.value()? {
                "true" => Some(Some(true)),
                "false" => Some(Some(false)),
                _ => None,
            },
            _ => self.null(),
        }
    }

    /// `null`, or give up.
    pub fn null<T>(&mut self) -> Option<Option<T>> {
        (self.peek()? == b'n' && self.value()? == "null").then_some(None)
    }

    /// Enters an object.
    pub fn object(&mut self) -> Option<Members> {
        self.eat(b'{')?;
        Some(Members { first: true })
    }

    /// Enters an array.
    pub fn array(&mut self) -> Option<Elements> {
        self.eat(b'[')?;
        Some(Elements { first: true })
    }

    /// The key of the object's next member (the cursor then at its value), `Some(None)` past its
    /// last. A key with an escape gives up: no key a reader matches has one. Its bytes, which
    /// readers match against ASCII names (a `&str` would cost a char-boundary check per key).
    // Inlined into each reader's member loop: called for every key (two million on the bench's
    // Claude folder), its call and return were a fifth of its cost; callgrind 2,019 M -> 1,955 M.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn key(&mut self, members: &mut Members) -> Option<Option<&'a [u8]>> {
        let mut c = self.peek()?;
        if c == b'}' {
            self.pos += 1;
            return Some(None);
        }
        if !std::mem::take(&mut members.first) {
            if c != b',' {
                return None;
            }
            self.pos += 1;
            c = self.peek()?;
        }
        if c != b'"' {
            return None;
        }
        let b = self.bytes();
        let start = self.pos + 1;
        let end = start + plain_len(&b[start..])?;
        if b[end] != b'"' {
            return None;
        }
        // Transcripts write no space around the colon.
        if b.get(end + 1) == Some(&b':') {
            self.pos = end + 2;
        } else {
            self.pos = end + 1;
            self.eat(b':')?;
        }
        Some(Some(&b[start..end]))
    }

    /// Whether the array has another element (the cursor then at it).
    pub fn next(&mut self, elements: &mut Elements) -> Option<bool> {
        match self.peek()? {
            b']' => {
                self.pos += 1;
                return Some(false);
            }
            b',' if !elements.first => self.pos += 1,
            _ if elements.first => {}
            _ => return None,
        }
        elements.first = false;
        Some(true)
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// Words of a string looked at for its closing quote before a block is.
const PROBE_WORDS: usize = 4;

/// The high bit of every byte of `x` that may equal `v`; the lowest set one is exact (a byte
/// equal to `v` is zero after the xor, and the borrow runs only upwards from it).
fn maybe_equal(x: u64, v: u8) -> u64 {
    let t = x ^ (ONES * u64::from(v));
    t.wrapping_sub(ONES) & !t & HIGHS
}

/// The first byte `hits` flags in the first [`PROBE_WORDS`] words of `b`: `Ok(position)`, or
/// `Err(bytes looked at)`.
fn probe(b: &[u8], hits: impl Fn(u64) -> u64) -> Result<usize, usize> {
    let mut i = 0;
    while i < PROBE_WORDS * 8 {
        let Some(word) = b.get(i..i + 8) else { return Err(i) };
        let found = hits(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        if found != 0 {
            return Ok(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    Err(i)
}

/// Where the first quote, backslash or control byte of `b` is: eight bytes at a time, as short
/// strings (keys, ids) are read faster so than memchr sets up.
fn plain_len(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = x ^ (ONES * u64::from(b'"'));
        let slash = x ^ (ONES * u64::from(b'\\'));
        // A byte is zero (or below 0x20) where subtracting borrows into its clear high bit; the
        // lowest such byte is exact, which is the one wanted.
        let hits =
            (quote.wrapping_sub(ONES) & !quote | slash.wrapping_sub(ONES) & !slash | x.wrapping_sub(ONES * 0x20) & !x)
                & HIGHS;
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|k| i + k)
}

/// A string's text with escapes, as serde reads it (`None` where serde would fail: a raw control
/// byte, an unknown escape, a surrogate not in a pair), unescaped a run at a time straight into
/// the string it gives: serde's own way copies it through a scratch buffer first.
fn unescape(inner: &str) -> Option<String> {
    let b = inner.as_bytes();
    #[allow(clippy::needless_bitwise_bool)]
    if b.iter().fold(false, |any, &c| any | (c < 0x20)) {
        return None;
    }
    let mut out = String::with_capacity(b.len());
    let mut at = 0;
    while let Some(k) = memchr(b'\\', &b[at..]) {
        out.push_str(&inner[at..at + k]);
        at += k + 1;
        let c = match *b.get(at)? {
            b'u' => {
                let high = hex4(b.get(at + 1..at + 5)?)?;
                at += 4;
                match high {
                    0xd800..=0xdbff => {
                        if b.get(at + 1..at + 3)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(b.get(at + 3..at + 7)?)?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        at += 6;
                        char::from_u32(0x1_0000 + ((high - 0xd800) << 10 | (low - 0xdc00)))?
                    }
                    _ => char::from_u32(high)?,
                }
            }
            letter => short_escape(letter)?,
        };
        out.push(c);
        at += 1;
    }
    out.push_str(&inner[at..]);
    Some(out)
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |n, &d| Some(n << 4 | char::from(d).to_digit(16)?))
}

/// Whether the quote at `at`, inside a string, is escaped: after an odd run of backslashes.
fn escaped(b: &[u8], at: usize) -> bool {
    b[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// Where a walk through an object's members is.
pub struct Members {
    first: bool,
}

/// Where a walk through an array's elements is.
pub struct Elements {
    first: bool,
}

/// Which of a reader's keys it has met: a key met twice gives up (serde calls that an error).
#[derive(Default)]
pub struct Seen(u32);

impl Seen {
    pub fn once(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        (self.0 & mask == 0).then(|| self.0 |= mask)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn skipped(text: &str) -> Option<&str> {
        let mut c = Cursor::new(text);
        let v = c.value()?;
        c.end()?;
        Some(v)
    }

    #[test]
    fn values_are_stepped_over_by_their_structure() {
        for v in [
            r#""plain""#,
            r#""with \" quote and \\ slash \\\" end""#,
            r#""\\""#,
            r#"{"a":[1,{"b":"}]"}],"c":{}}"#,
            r#"[[],["]"],{"x":"[\""}]"#,
            "123",
            "-1.5e3",
            "null",
        ] {
            assert_eq!(skipped(v), Some(v), "{v}");
        }
        for bad in [r#""open"#, r#"{"a":"}"#, "[1,2", r#""ends in slash\""#] {
            assert_eq!(skipped(bad), None, "{bad}");
        }
    }

    #[test]
    fn members_and_strings() {
        let mut c = Cursor::new(r#" { "a" : "x\ny" , "b":null, "c":true,"d":[1] } "#);
        let mut m = c.object().unwrap();
        assert_eq!(c.key(&mut m), Some(Some(&b"a"[..])));
        assert_eq!(c.string().as_deref(), Some("x\ny"));
        assert_eq!(c.key(&mut m), Some(Some(&b"b"[..])));
        assert_eq!(c.opt_str(), Some(None));
        assert_eq!(c.key(&mut m), Some(Some(&b"c"[..])));
        assert_eq!(c.opt_bool(), Some(Some(true)));
        assert_eq!(c.key(&mut m), Some(Some(&b"d"[..])));
        let mut e = c.array().unwrap();
        assert_eq!(c.next(&mut e), Some(true));
        assert_eq!(c.parse::<u64>(), Some(1));
        assert_eq!(c.next(&mut e), Some(false));
        assert_eq!(c.key(&mut m), Some(None));
        assert_eq!(c.end(), Some(()));
        // A trailing comma, a raw control byte, an escaped key: not read here.
        let mut c = Cursor::new(r#"{"a":1,}"#);
        let mut m = c.object().unwrap();
        assert_eq!(c.key(&mut m), Some(Some(&b"a"[..])));
        c.value();
        assert_eq!(c.key(&mut m), None);
        assert_eq!(Cursor::new("\"a\u{1}\"").string(), None);
        for n in 0..20 {
            let plain = format!("\"{}\"", "x".repeat(n));
            assert_eq!(Cursor::new(&plain).string().as_deref(), Some(&plain[1..=n]));
            let escaped = format!("\"{}\\t\"", "é".repeat(n));
            assert_eq!(Cursor::new(&escaped).string().as_deref(), Some(format!("{}\t", "é".repeat(n)).as_str()));
        }
        for text in
            [r#""a\"b\\c\/d\be\ff\ng\rh\ti""#, r#""\u0041\u00e9\u65e5\uD83E\uDD80\ud83e\udd80x""#, r#""é\n日本\t🦀""#]
        {
            let serde: String = serde_json::from_str(text).unwrap();
            assert_eq!(Cursor::new(text).string().as_deref(), Some(serde.as_str()), "{text}");
        }
        // Where serde fails, so does this (and the full parse then decides).
        for text in
            [r#""\x""#, r#""\ud83e""#, r#""\ud83ex""#, r#""\ud83e\u0041""#, r#""\udd80""#, r#""\u12G4""#, r#""\u12""#]
        {
            assert!(serde_json::from_str::<String>(text).is_err(), "{text}");
            assert_eq!(Cursor::new(text).string(), None, "{text}");
        }
        let mut c = Cursor::new(r#"{"\u0061":1}"#);
        let mut m = c.object().unwrap();
        assert_eq!(c.key(&mut m), None);
    }

    proptest! {
        #[test]
        fn escaped_strings_read_as_serde_reads_them(parts in proptest::collection::vec(prop_oneof![
            Just(r"\n".to_owned()), Just(r#"\""#.to_owned()),
            Just(r"\\".to_owned()), Just(r"\/".to_owned()),
            Just(r"\u".to_owned()), Just(r"\uD83D".to_owned()),
            Just(r"\uDE00".to_owned()), Just(r"\x".to_owned()),
            Just("\u{1}".to_owned()), "[0-9a-fA-F]{1,4}", "[a-zé日 ]{0,6}",
            proptest::char::any().prop_filter("no quote or backslash", |c| !matches!(c, '"' | '\\')).prop_map(String::from),
        ], 0..12)) {
            let text = format!("\"{}\"", parts.concat());
            let serde = serde_json::from_str::<String>(&text).ok();
            // A string ending in an odd run of backslashes is not closed: not one to compare.
            if Cursor::new(&text).value() == Some(text.as_str()) {
                prop_assert_eq!(Cursor::new(&text).string().map(Cow::into_owned), serde);
            }
        }
    }
}
