//! The one cursor every fast reader of `wire` walks a record with: whitespace, strings and their
//! escapes, numbers, member names, and values stepped over — either checked against the grammar
//! ([`Cursor::value`], as serde checks what it steps over) or by their structure alone
//! ([`Cursor::skip`], a string by its closing quote, an object or array by its balanced brackets,
//! 64 bytes at a time: what a transcript reader steps over is most of its bytes).
//!
//! A reader is a table over it: [`Cursor::fields`] walks an object and hands each member name to
//! the reader, which says what to do with its value ([`Fields::set`] it into a slot, read it
//! with a reader of its own, or step over it). Every method gives `None` when the text is not
//! what it expects: the reader then gives up and leaves the record to the full parse (serde),
//! which decides — and reports — what it is. So a reader built on it never reads a member other
//! than serde would.

use std::borrow::Cow;

use serde::Deserialize;

use super::{Raw, Str, skip, swar, valid};

/// What a step of a reader gives: `None` is "give up, leave the record to the full parse" (an
/// `Option` inside it is JSON's null).
pub type Scan<T> = Option<T>;

/// How deep a value stepped over with [`Cursor::value`] may nest below the reader: readers stand
/// at most a few levels down, and serde refuses documents nested deeper than 128.
const VALUE_DEPTH: usize = 100;

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

    #[inline]
    fn ws(&mut self) {
        // Agents write no whitespace between tokens: one compare settles the usual case.
        if self.bytes().get(self.pos).is_some_and(|&b| b > b' ') {
            return;
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    pub fn peek(&mut self) -> Scan<u8> {
        self.ws();
        self.bytes().get(self.pos).copied()
    }

    pub fn eat(&mut self, b: u8) -> Scan<()> {
        (self.peek()? == b).then(|| self.pos += 1)
    }

    /// Nothing but whitespace is left.
    pub fn end(&mut self) -> Scan<()> {
        self.ws();
        (self.pos == self.text.len()).then_some(())
    }

    /// Moves past `word` when the cursor is right at it (no whitespace before). Always inlined:
    /// the words are constants, and compared in place they need no `memcmp` call.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn literal(&mut self, word: &[u8]) -> Scan<()> {
        self.bytes()[self.pos..].starts_with(word).then(|| self.pos += word.len())
    }

    /// Moves past a `null`, if that is next.
    pub fn is_null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal(b"null").is_some()
    }

    /// `null`, or give up.
    pub fn null<T>(&mut self) -> Scan<Option<T>> {
        self.literal_null().then_some(None)
    }

    fn literal_null(&mut self) -> bool {
        self.is_null()
    }

    /// A string; borrowed from the record when it holds no escape. Escapes are unescaped as serde
    /// does (a lone surrogate or a raw control byte gives up: serde refuses them).
    #[inline]
    pub fn string(&mut self) -> Scan<Str<'a>> {
        self.eat(b'"')?;
        let start = self.pos;
        self.pos += swar::plain_len(&self.bytes()[start..])?;
        match self.bytes()[self.pos] {
            b'"' => {
                self.pos += 1;
                Some(Cow::Borrowed(&self.text[start..self.pos - 1]))
            }
            b'\\' => self.escaped(start),
            _ => None,
        }
    }

    /// The rest of a string from its first escape (at the cursor) on, unescaped a run at a time
    /// straight into the string it gives. Apart from [`Cursor::string`], which stays small for
    /// the plain ids and names that are most strings.
    #[inline(never)]
    fn escaped(&mut self, start: usize) -> Scan<Str<'a>> {
        let b = self.bytes();
        // Room for the rest of a usual string at once: growing from nothing reallocated on most
        // escaped texts.
        let mut owned = String::with_capacity((b.len() - start).min(4096));
        let mut run = start;
        loop {
            match b[self.pos] {
                b'"' => {
                    owned.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    return Some(Cow::Owned(owned));
                }
                b'\\' => {
                    owned.push_str(&self.text[run..self.pos]);
                    owned.push(self.escape()?);
                    run = self.pos;
                }
                _ => return None,
            }
            self.pos += swar::plain_len(&b[self.pos..])?;
        }
    }

    /// The escape at the cursor (its backslash), as the char it stands for.
    fn escape(&mut self) -> Scan<char> {
        let b = self.bytes();
        let letter = *b.get(self.pos + 1)?;
        if letter != b'u' {
            self.pos += 2;
            return short_escape(letter);
        }
        let high = hex4(b.get(self.pos + 2..self.pos + 6)?)?;
        self.pos += 6;
        if !(0xd800..=0xdbff).contains(&high) {
            return char::from_u32(high);
        }
        // A high surrogate stands only before a low one.
        if b.get(self.pos..self.pos + 2)? != b"\\u" {
            return None;
        }
        let low = hex4(b.get(self.pos + 2..self.pos + 6)?)?;
        if !(0xdc00..=0xdfff).contains(&low) {
            return None;
        }
        self.pos += 6;
        char::from_u32(0x1_0000 + ((high - 0xd800) << 10 | (low - 0xdc00)))
    }

    /// A string or null.
    pub fn opt_str(&mut self) -> Scan<Option<Str<'a>>> {
        if self.is_null() { Some(None) } else { self.string().map(Some) }
    }

    /// A member's name, and the colon after it: its bytes, which readers match against ASCII
    /// names. A name with an escape gives up: no name a reader matches has one.
    // Inlined into each reader's member loop: called for every key (two million on the bench's
    // Claude folder), its call and return were a fifth of its cost; callgrind 2,019 M -> 1,955 M.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn key(&mut self) -> Scan<&'a [u8]> {
        self.eat(b'"')?;
        let b = self.bytes();
        let start = self.pos;
        let end = start + swar::plain_len(&b[start..])?;
        if b[end] != b'"' {
            return None;
        }
        // Agents write no space around the colon.
        if b.get(end + 1) == Some(&b':') {
            self.pos = end + 2;
        } else {
            self.pos = end + 1;
            self.eat(b':')?;
        }
        Some(&b[start..end])
    }

    /// The digits of a plain whole number at the cursor (no sign), read while they are scanned:
    /// its value (wrapped past 19 digits) and how many digits it has. A leading zero before more
    /// digits, a fraction or an exponent gives up, as the grammar or a typed integer would.
    #[inline]
    fn whole_digits(&mut self) -> Scan<(u64, usize)> {
        let b = self.bytes();
        let start = self.pos;
        let mut v: u64 = 0;
        while let Some(&d) = b.get(self.pos).filter(|d| d.is_ascii_digit()) {
            v = v.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            self.pos += 1;
        }
        let digits = self.pos - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') || matches!(b.get(self.pos), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some((v, digits))
    }

    /// A plain integer (no fraction or exponent) that fits an i64, or null, read while it is
    /// scanned (times are on every line); anything else gives up, as a typed integer refuses it.
    pub fn opt_i64(&mut self) -> Scan<Option<i64>> {
        if self.is_null() {
            return Some(None);
        }
        let negative = self.bytes().get(self.pos) == Some(&b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        let (v, digits) = self.whole_digits()?;
        // serde reads `-0` as the float -0.0, which a typed integer refuses.
        if negative && v == 0 {
            return None;
        }
        if digits > 18 {
            // Past 18 digits the sum above may have wrapped: let the standard parser judge.
            return self.text[start - usize::from(negative)..self.pos].parse().ok().map(Some);
        }
        // At most 18 digits: below 10^18, so it fits either sign.
        let v = i64::try_from(v).ok()?;
        Some(Some(if negative { -v } else { v }))
    }

    /// A whole number that fits a u64, or null, as serde reads one; anything else (a sign, a
    /// fraction, an overflow) gives up. Read while it is scanned: token figures are on every
    /// usage line.
    pub fn opt_u64(&mut self) -> Scan<Option<u64>> {
        if self.is_null() {
            return Some(None);
        }
        let start = self.pos;
        let (v, digits) = self.whole_digits()?;
        if digits > 19 {
            // Below 10^19 the sum cannot have wrapped; past it, the standard parser judges.
            return self.text[start..self.pos].parse().ok().map(Some);
        }
        Some(Some(v))
    }

    /// `true`, `false` or null.
    pub fn opt_bool(&mut self) -> Scan<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }

    /// Steps over one value, checking it against the grammar as serde checks what it steps over;
    /// its text.
    pub fn value(&mut self) -> Scan<&'a str> {
        self.ws();
        let start = self.pos;
        self.pos = valid::value_end(self.bytes(), start, VALUE_DEPTH)?;
        Some(&self.text[start..self.pos])
    }

    /// A value as raw text a consumer parses when it knows what it means, or null.
    pub fn opt_raw(&mut self) -> Scan<Option<Raw<'a>>> {
        if self.is_null() { Some(None) } else { Some(Some(Raw::validated(self.value()?))) }
    }

    /// Steps over one value by its structure alone (a closed string, balanced brackets), not its
    /// grammar; its text.
    pub fn skip(&mut self) -> Scan<&'a str> {
        self.ws();
        let start = self.pos;
        let b = self.bytes();
        let end = match *b.get(start)? {
            b'"' => skip::string_end(b, start + 1)?,
            b'{' => skip::nested_end(b, start, b'{', b'}')?,
            b'[' => skip::nested_end(b, start, b'[', b']')?,
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
    pub fn parse<T: Deserialize<'a>>(&mut self) -> Scan<T> {
        serde_json::from_str(self.skip()?).ok()
    }

    /// Whether an object is next (not entered), or null (stepped over); anything else gives up
    /// (serde's derive also reads a struct from an array, by position: that is left to it).
    pub fn opt_object(&mut self) -> Scan<bool> {
        if self.is_null() {
            return Some(false);
        }
        (self.peek()? == b'{').then_some(true)
    }

    /// Walks an object: `read` is given each member's name and says what to do with its value
    /// (which it must consume).
    #[inline]
    pub fn fields(&mut self, mut read: impl FnMut(&mut Fields<'_, 'a>, &'a [u8]) -> Scan<()>) -> Scan<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut fields = Fields { cursor: self, seen: 0 };
        loop {
            let key = fields.cursor.key()?;
            read(&mut fields, key)?;
            if fields.cursor.eat(b',').is_none() {
                return fields.cursor.eat(b'}');
            }
        }
    }

    /// Walks an array: `read` consumes each element.
    pub fn elements(&mut self, mut read: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            read(self)?;
            if self.eat(b',').is_none() {
                return self.eat(b']');
            }
        }
    }

    /// An array of strings, or null.
    pub fn opt_strs(&mut self) -> Scan<Option<Vec<Str<'a>>>> {
        if self.is_null() {
            return Some(None);
        }
        let mut v = Vec::new();
        self.elements(|c| {
            v.push(c.string()?);
            Some(())
        })?;
        Some(Some(v))
    }
}

/// A value a member's slot takes, read as serde's derive reads such a field.
pub trait Slot<'a>: Sized {
    fn read(c: &mut Cursor<'a>) -> Scan<Self>;
}

impl<'a> Slot<'a> for Str<'a> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.string()
    }
}

impl<'a> Slot<'a> for Option<Str<'a>> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_str()
    }
}

impl<'a> Slot<'a> for Option<bool> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_bool()
    }
}

impl<'a> Slot<'a> for Option<u64> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_u64()
    }
}

impl<'a> Slot<'a> for Option<i64> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_i64()
    }
}

impl<'a> Slot<'a> for Option<Raw<'a>> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_raw()
    }
}

impl<'a> Slot<'a> for Option<Vec<Str<'a>>> {
    fn read(c: &mut Cursor<'a>) -> Scan<Self> {
        c.opt_strs()
    }
}

/// An object's members as [`Cursor::fields`] walks them, with the ones met so far.
pub struct Fields<'c, 'a> {
    cursor: &'c mut Cursor<'a>,
    seen: u64,
}

impl<'a> Fields<'_, 'a> {
    /// The cursor at the value of the member `bit` stands for, the first time it is met: serde's
    /// derive refuses a member given twice, and so this gives up.
    #[inline]
    pub fn once(&mut self, bit: u32) -> Scan<&mut Cursor<'a>> {
        let mask = 1 << bit;
        (self.seen & mask == 0).then(|| {
            self.seen |= mask;
            &mut *self.cursor
        })
    }

    /// The value of the member `bit` stands for, read into `slot` (once).
    #[inline]
    pub fn set<T: Slot<'a>>(&mut self, bit: u32, slot: &mut T) -> Scan<()> {
        *slot = T::read(self.once(bit)?)?;
        Some(())
    }

    /// The cursor at the value, for a member any number of which may come (the last one wins).
    pub fn cursor(&mut self) -> &mut Cursor<'a> {
        self.cursor
    }

    /// Steps over the value, checking it as serde checks what it steps over.
    pub fn value(&mut self) -> Scan<()> {
        self.cursor.value().map(drop)
    }

    /// Steps over the value by its structure alone.
    pub fn skip(&mut self) -> Scan<()> {
        self.cursor.skip().map(drop)
    }
}

/// The character a one-letter JSON escape (`\n`, `\"` …) stands for, by the byte after its
/// backslash; `None` for `\u` and for what is no escape.
fn short_escape(letter: u8) -> Option<char> {
    Some(match letter {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |n, &d| Some(n << 4 | char::from(d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn skipped(text: &str) -> Option<&str> {
        let mut c = Cursor::new(text);
        let v = c.skip()?;
        c.end()?;
        Some(v)
    }

    fn checked(text: &str) -> Option<&str> {
        let mut c = Cursor::new(text);
        let v = c.value()?;
        c.end()?;
        Some(v)
    }

    #[test]
    fn values_are_stepped_over_by_their_structure_or_their_grammar() {
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
            assert_eq!(checked(v), Some(v), "{v}");
        }
        for bad in [r#""open"#, r#"{"a":"}"#, "[1,2", r#""ends in slash\""#] {
            assert_eq!(skipped(bad), None, "{bad}");
            assert_eq!(checked(bad), None, "{bad}");
        }
        // Structure alone does not look at the grammar; the check does.
        for odd in [r#"{"a":tru}"#, "[01]", r#""\x""#] {
            assert_eq!(skipped(odd), Some(odd), "{odd}");
            assert_eq!(checked(odd), None, "{odd}");
        }
    }

    #[test]
    fn members_are_read_by_a_table_and_each_once() {
        let text = r#" { "a" : "x\ny" , "b":null, "c":true,"d":[1] , "e": 7} "#;
        let (mut a, mut b): (Option<Str<'_>>, Option<Str<'_>>) = (None, Some(Cow::Borrowed("-")));
        let (mut c_, mut e): (Option<bool>, Option<u64>) = (None, None);
        let mut c = Cursor::new(text);
        let read = c.fields(|f, key| match key {
            b"a" => f.set(0, &mut a),
            b"b" => f.set(1, &mut b),
            b"c" => f.set(2, &mut c_),
            b"e" => f.set(3, &mut e),
            _ => f.value(),
        });
        assert_eq!(read, Some(()));
        assert_eq!(c.end(), Some(()));
        assert_eq!((a.as_deref(), b, c_, e), (Some("x\ny"), None, Some(true), Some(7)));
        // A member twice, a trailing comma, an escaped name: not read here.
        for text in [r#"{"a":"x","a":"y"}"#, r#"{"a":1,}"#, r#"{"\u0061":"x"}"#] {
            let mut a: Option<Str<'_>> = None;
            let read = Cursor::new(text).fields(|f, key| if key == b"a" { f.set(0, &mut a) } else { f.skip() });
            assert_eq!(read, None, "{text}");
        }
        // A member any number of which may come: the last one wins.
        let mut a: Option<Str<'_>> = None;
        let mut c = Cursor::new(r#"{"a":"x","a":"y"}"#);
        c.fields(|f, _| f.cursor().opt_str().map(|v| a = v)).unwrap();
        assert_eq!(a.as_deref(), Some("y"));
    }

    #[test]
    fn strings_are_unescaped_as_serde_unescapes_them() {
        assert_eq!(Cursor::new("\"a\u{1}\"").string(), None);
        for n in 0..20 {
            let plain = format!("\"{}\"", "x".repeat(n));
            assert!(matches!(Cursor::new(&plain).string(), Some(Cow::Borrowed(s)) if s == &plain[1..=n]));
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
    }

    #[test]
    fn numbers_are_read_as_a_typed_field_reads_them() {
        let u = |t: &str| Cursor::new(t).opt_u64();
        assert_eq!(u("0"), Some(Some(0)));
        assert_eq!(u("null"), Some(None));
        assert_eq!(u("18446744073709551615"), Some(Some(u64::MAX)));
        for refused in ["-1", "1.5", "1e3", "01", "18446744073709551616", "x"] {
            assert_eq!(u(refused), None, "{refused}");
        }
        let i = |t: &str| Cursor::new(t).opt_i64();
        assert_eq!(i("-9223372036854775808"), Some(Some(i64::MIN)));
        assert_eq!(i("1795987208996"), Some(Some(1_795_987_208_996)));
        for refused in ["-0", "9223372036854775808", "1.0", "--1"] {
            assert_eq!(i(refused), None, "{refused}");
        }
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
            if Cursor::new(&text).skip() == Some(text.as_str()) {
                prop_assert_eq!(Cursor::new(&text).string().map(Cow::into_owned), serde);
            }
        }
    }
}
