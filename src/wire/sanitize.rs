//! Untrusted text (model output, command output, file names) made safe for a terminal, once, where
//! it enters the model. Only [`Clean`] reaches a widget, so raw text cannot get there by accident.

use std::borrow::Cow;
use std::fmt;

use super::json::swar::{self, HIGHS, LOWS, ONES};

/// Text with no escape sequences, no C0/C1 controls but `\n` and `\t`, no bidi overrides, no
/// zero-width controls, no line or paragraph separators and no tag characters. Build it with
/// [`sanitize`], [`sanitize_line`], [`Clean::path`] or [`Clean::push`].
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Clean(String);

impl Clean {
    pub fn new() -> Self {
        Self(String::new())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A file or socket name as it may be shown (not UTF-8 parts as U+FFFD), on one line.
    pub fn path(path: &std::path::Path) -> Self {
        sanitize_line(&path.to_string_lossy())
    }

    /// Appends `raw`, sanitised. A sequence split across two pushes (a stream delta ending in
    /// `ESC`) loses its introducer here and shows its tail as plain text: harmless on screen.
    pub fn push(&mut self, raw: &str) {
        push_sanitized(&mut self.0, raw);
    }

    /// Room for at least `additional` more bytes.
    pub fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Gives back room well past its text (a streamed text grew by doubling and held it after);
    /// room within twice its length stays, so more text after is still pushed in amortised time.
    pub fn fit(&mut self) {
        if self.0.capacity() > 2 * self.0.len() + 64 {
            self.0.shrink_to_fit();
        }
    }

    /// Keeps the last `keep` bytes (on a char boundary): bounded scrollback keeps what is newest.
    pub fn keep_tail(&mut self, keep: usize) -> usize {
        if self.0.len() <= keep {
            return 0;
        }
        let mut cut = self.0.len() - keep;
        while !self.0.is_char_boundary(cut) {
            cut += 1;
        }
        self.0.drain(..cut);
        if self.0.capacity() > 2 * self.0.len() + 64 {
            self.0.shrink_to_fit();
        }
        cut
    }
}

impl AsRef<str> for Clean {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Clean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Clean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn sanitize(raw: &str) -> Clean {
    let mut out = String::with_capacity(raw.len());
    push_sanitized(&mut out, raw);
    Clean(out)
}

/// [`sanitize`], then newlines and tabs as spaces: for what is printed as one line (an error
/// message on stderr, a name in a header or a picker), where a planted newline could forge a
/// second line.
pub fn sanitize_line(raw: &str) -> Clean {
    let mut clean = sanitize(raw);
    if clean.0.contains(['\n', '\t']) {
        clean.0 = clean.0.replace(['\n', '\t'], " ");
    }
    clean
}

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
/// Longest string body (OSC, DCS, …) swallowed when its terminator never comes: an unterminated
/// sequence must not hide the rest of a long output.
const MAX_STRING_BODY: usize = 4096;

fn is_plain_ascii(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t'
}

/// Format characters that reorder or hide text: bidi embeddings, overrides and isolates, and the
/// zero-width controls (Trojan Source, CVE-2021-42574); the line and paragraph separators, which
/// some terminals and most JSON-consuming scripts take as line breaks (a forged line); and the tag
/// characters, invisible yet read by language models (hidden instructions, "ASCII smuggling").
fn is_invisible_control(c: char) -> bool {
    matches!(c,
        '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}')
}

/// The high bit of every byte of a word that may be below 0x20 or at 0x7f and above: a byte below
/// 0x20 borrows into its clear high bit; one at 0x7f or above has its high bit set once 1 is
/// added. Never misses such a byte; may flag a plain one.
fn suspects(x: u64) -> u64 {
    (x.wrapping_sub(ONES * 0x20) & !x | x.wrapping_add(ONES) | x) & HIGHS
}

/// Whether every byte is printable ASCII, newline or tab: the text of nearly every delta.
fn is_plain(raw: &[u8]) -> bool {
    plain_prefix(raw) == raw.len()
}

/// How many leading bytes are printable ASCII, newline or tab, in whole words but the last:
/// eight bytes at a time (SWAR); a word that may hold anything else is checked byte by byte.
fn plain_prefix(raw: &[u8]) -> usize {
    let mut words = raw.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let x = swar::word(word);
        if suspects(x) != 0 && !word.iter().copied().all(is_plain_ascii) {
            return at;
        }
        at += 8;
    }
    if words.remainder().iter().copied().all(is_plain_ascii) { raw.len() } else { at }
}

/// A byte that may begin what the sanitiser drops: a C0 control but `\n` and `\t`, DEL, or the
/// lead byte of a C1 control (0xC2), U+061C (0xD8), U+180E (0xE1), a bidi or zero-width control
/// or a line or paragraph separator (0xE2), U+FEFF (0xEF) or a tag character (0xF3). Never a UTF-8
/// continuation byte, so always on a char boundary.
fn may_drop(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') || matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef | 0xf3)
}

/// Whether the char at `at` may be dropped (a control but `\n` and `\t`, DEL, or a char the
/// rules drop), by its second byte too: a lead byte shared with common text (0xE2 begins
/// punctuation, arrows and box drawing as well as the bidi controls; 0xC2 the Latin-1 signs as
/// well as the C1 controls) only begins a dropped char when its next byte is in that char's range.
fn drops_here(raw: &[u8], at: usize) -> bool {
    let second = raw.get(at + 1).copied().unwrap_or(0);
    match raw[at] {
        b'\n' | b'\t' => false,
        0..0x20 | 0x7f => true,
        // C1 controls, U+0080..=U+009F.
        0xc2 => second <= 0x9f,
        // U+061C.
        0xd8 => second == 0x9c,
        // U+180E; U+E0000..=U+E0FFF, the tag characters.
        0xe1 | 0xf3 => second == 0xa0,
        // U+2000..=U+207F: the zero-width, separator, bidi and invisible-operator controls.
        0xe2 => matches!(second, 0x80 | 0x81),
        // U+FEFF.
        0xef => second == 0xbb,
        _ => false,
    }
}

/// The high bit of every byte of `x` that [`drops_here`] has to look at: every byte below 0x20
/// (newlines too: they are rare enough to be turned down one by one), DEL, and every lead byte
/// of a char of two or more bytes (0xC0 and up; continuation bytes never begin a dropped char).
/// Where [`suspects`] flags every byte of a word with a newline or a non-ASCII char, this flags
/// only the bytes that begin one.
fn may_drop_bytes(x: u64) -> u64 {
    // Below 0x20: adding 0x60 to the low seven bits carries into the high bit from 0x20 up.
    let below_space = !(((x & LOWS) + ONES * 0x60) | x) & HIGHS;
    // 0xC0 and up: the two top bits set.
    let leads = x & (x << 1) & HIGHS;
    below_space | swar::equal_exact(x, 0x7f) | leads
}

/// The first byte at or after `from` that begins what may be dropped, else the end; eight bytes
/// at a time.
fn next_suspect(raw: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(word) = raw.get(i..i + 8) {
        let x = swar::word(word);
        if suspects(x) != 0 {
            let mut hits = may_drop_bytes(x);
            while hits != 0 {
                let k = i + (hits.trailing_zeros() / 8) as usize;
                if drops_here(raw, k) {
                    return k;
                }
                hits &= hits - 1;
            }
        }
        i += 8;
    }
    (i..raw.len()).find(|&k| may_drop(raw[k]) && drops_here(raw, k)).unwrap_or(raw.len())
}

fn push_sanitized(out: &mut String, raw: &str) {
    // The plain start is not looked at twice. A word boundary inside it is ASCII, so a char
    // boundary.
    let mut at = plain_prefix(raw.as_bytes());
    out.push_str(&raw[..at]);
    // Text that cannot hold a control (accents, CJK, emoji) is copied a run at a time; only a
    // char that may be one, and the sequence it may introduce, goes through the rules.
    while at < raw.len() {
        let next = next_suspect(raw.as_bytes(), at);
        out.push_str(&raw[at..next]);
        let mut chars = Cursor { text: raw, at: next };
        if let Some(c) = chars.next() {
            one_char(out, c, &mut chars);
        }
        at = chars.at;
    }
}

/// A position in a text, read a char at a time.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn next_if(&mut self, f: impl FnOnce(char) -> bool) -> Option<char> {
        let c = self.peek().filter(|&c| f(c))?;
        self.at += c.len_utf8();
        Some(c)
    }
}

/// One char of text that is not plain, with what it introduces.
fn one_char(out: &mut String, c: char, chars: &mut Cursor<'_>) {
    match c {
        '\n' | '\t' => out.push(c),
        ESC => match chars.next() {
            Some('[') => skip_csi(chars),
            Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
            // Two-character escapes (ESC 7, ESC c, ESC ( B …): the intermediate bytes and
            // the final byte go together.
            Some(' '..='/') => {
                while chars.next_if(|c| (' '..='/').contains(&c)).is_some() {}
                chars.next();
            }
            _ => {}
        },
        '\u{9b}' => skip_csi(chars),
        '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(chars),
        c if c.is_control() => {}
        c if is_invisible_control(c) => {}
        c => out.push(c),
    }
}

/// CSI: parameter and intermediate bytes, then one final byte in `@`..=`~`.
fn skip_csi(chars: &mut Cursor<'_>) {
    while let Some(c) = chars.next() {
        if ('\u{40}'..='\u{7e}').contains(&c) || c.is_control() && c != '\u{7f}' {
            return;
        }
    }
}

/// OSC, DCS, SOS, PM, APC: a body ended by BEL, ST (`ESC \`) or the 8-bit ST.
fn skip_string(chars: &mut Cursor<'_>) {
    let mut taken = 0;
    while let Some(c) = chars.peek() {
        if taken >= MAX_STRING_BODY {
            return;
        }
        chars.next();
        taken += 1;
        match c {
            BEL | '\u{9c}' => return,
            ESC => {
                chars.next_if(|c| c == '\\');
                return;
            }
            _ => {}
        }
    }
}

/// Text through the sanitiser that borrows its input when that was clean already (nearly every
/// stream delta): what a lowered fact carries, so clean text is not copied twice.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CleanStr<'a>(Cow<'a, str>);

impl<'a> CleanStr<'a> {
    pub fn new(raw: &'a str) -> Self {
        if is_plain(raw.as_bytes()) { Self(Cow::Borrowed(raw)) } else { Self(Cow::Owned(sanitize(raw).0)) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_clean(self) -> Clean {
        Clean(self.0.into_owned())
    }

    pub fn to_clean(&self) -> Clean {
        Clean(self.0.as_ref().to_owned())
    }
}

impl From<Clean> for CleanStr<'_> {
    fn from(c: Clean) -> Self {
        Self(Cow::Owned(c.0))
    }
}

impl fmt::Debug for CleanStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Clean {
    /// Appends text that is clean already.
    pub fn push_clean(&mut self, text: &CleanStr<'_>) {
        self.0.push_str(&text.0);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn has_unsafe(s: &str) -> bool {
        s.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || is_invisible_control(c))
    }

    #[test]
    fn strips_sequences_and_controls() {
        assert_eq!(sanitize("\x1b[31mred\x1b[0m").as_str(), "red");
        assert_eq!(sanitize("a\x1b]0;title\x07b").as_str(), "ab");
        assert_eq!(sanitize("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b").as_str(), "alinkb");
        assert_eq!(sanitize("a\x1bP1;2|xyz\x1b\\b").as_str(), "ab");
        assert_eq!(sanitize("a\u{9b}2Jb").as_str(), "ab");
        assert_eq!(sanitize("a\u{9d}0;t\u{9c}b").as_str(), "ab");
        assert_eq!(sanitize("line\r\nnext\x08\x00").as_str(), "line\nnext");
        assert_eq!(sanitize("abc\u{202e}fed\u{2066}x\u{200b}y").as_str(), "abcfedxy");
        assert_eq!(sanitize("tab\there\x7f").as_str(), "tab\there");
        assert_eq!(sanitize("\x1b(Bplain").as_str(), "plain");
        assert_eq!(sanitize("a\u{2028}b\u{2029}c").as_str(), "abc");
        // "hi" spelled in tag characters, then the cancel tag: invisible, and dropped.
        assert_eq!(sanitize("ok\u{e0068}\u{e0069}\u{e007f}!").as_str(), "ok!");
        assert_eq!(sanitize("flag \u{1f3f4}\u{e0067}\u{e0062}\u{e007f}").as_str(), "flag \u{1f3f4}");
    }

    #[test]
    fn one_line_names_cannot_forge_lines() {
        assert_eq!(sanitize_line("a\nb\tc\x1b]0;x\x07d").as_str(), "a b cd");
        let path = std::path::Path::new("/tmp/tee-\x1b]52;c;aGk=\x07\n1.sock");
        assert_eq!(Clean::path(path).as_str(), "/tmp/tee- 1.sock");
    }

    #[test]
    fn plain_and_unicode_text_is_unchanged() {
        for s in ["hello", "naïve café — ✓ ● ▸", "日本語\nx\ty", "emoji 🦀"] {
            assert_eq!(sanitize(s).as_str(), s);
        }
    }

    #[test]
    fn unterminated_string_does_not_hide_everything() {
        let long = format!("\x1b]0;{}", "x".repeat(MAX_STRING_BODY + 10));
        assert_eq!(sanitize(&long).len(), 12, "the body is swallowed up to its bound, then text shows again");
    }

    /// The rules one char at a time, as the sanitiser applied them before it copied runs.
    fn char_by_char(raw: &str) -> String {
        let mut out = String::new();
        let mut chars = Cursor { text: raw, at: 0 };
        while let Some(c) = chars.next() {
            one_char(&mut out, c, &mut chars);
        }
        out
    }

    proptest! {
        #[test]
        fn runs_copied_whole_give_what_the_rules_give(parts in proptest::collection::vec(
            prop_oneof![Just("\x1b"), Just("["), Just("]"), Just("\x07"), Just("\u{9b}"), Just("\u{9c}"),
                        Just("\\"), Just("P"), Just("("), Just("a"), Just("0;"), Just("\u{202e}"), Just("\u{2066}"),
                        Just("\u{200b}"), Just("\u{feff}"), Just("\u{61c}"), Just("\u{180e}"), Just("\u{85}"),
                        Just("\u{a9}"), Just("\u{2014}"), Just("\u{2192}"), Just("\u{2500}"), Just("\u{2066}x"),
                        Just("\u{2060}"), Just("\u{2070}"), Just("\u{1800}"), Just("\u{600}"), Just("\u{fe0f}"),
                        Just("\u{e0100}"), Just("\u{a0}"), Just("\u{9f}"), Just("é"), Just("日本"), Just("🦀"), Just("\r"), Just("\n"),
                        Just("\u{2028}"), Just("\u{2029}"), Just("\u{e0041}"), Just("\u{e007f}"), Just("\u{f3000}"),
                        Just("\t"), Just("\x7f"), Just("\x01"), Just("plain text ")], 0..60)) {
            let s: String = parts.concat();
            let clean = sanitize(&s);
            prop_assert_eq!(clean.as_str(), char_by_char(&s));
        }

        #[test]
        fn any_text_gives_what_the_rules_give(s in any::<String>()) {
            let clean = sanitize(&s);
            prop_assert_eq!(clean.as_str(), char_by_char(&s));
        }

        #[test]
        fn word_check_agrees_with_bytes(s in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(is_plain(&s), s.iter().copied().all(is_plain_ascii));
        }

        #[test]
        fn word_masks_flag_every_byte_that_may_drop(s in proptest::collection::vec(prop_oneof![
            any::<u8>(), Just(b'\n'), Just(b'\t'), Just(0x7f), Just(0xc2), Just(0xd8), Just(0xe1), Just(0xe2),
            Just(0xef), Just(0xf3), Just(0x1f), Just(0x20), Just(0x80),
        ], 8)) {
            let x = swar::word(&s);
            let flagged = may_drop_bytes(x);
            for k in 0..8 {
                // Every byte that may begin a dropped char is looked at.
                prop_assert!(!may_drop(s[k]) || flagged & (0x80 << (8 * k)) != 0, "{:x?} byte {}", s, k);
            }
        }

        #[test]
        fn word_check_on_near_plain_text(s in r"[\x00-\x7f\u{80}-\u{a0}]{0,40}") {
            prop_assert_eq!(is_plain(s.as_bytes()), s.bytes().all(is_plain_ascii));
        }

        #[test]
        fn no_control_chars_out(s in any::<String>()) {
            prop_assert!(!has_unsafe(sanitize(&s).as_str()));
        }

        #[test]
        fn no_separators_or_tags_out(s in proptest::collection::vec(prop_oneof![
            any::<char>(),
            Just('\u{2028}'), Just('\u{2029}'),
            (0xe0000u32..=0xe007f).prop_map(|c| char::from_u32(c).expect("a tag character")),
        ], 0..40)) {
            let s: String = s.into_iter().collect();
            let clean = sanitize(&s);
            let forbidden = |c: char| matches!(c, '\u{2028}' | '\u{2029}' | '\u{e0000}'..='\u{e007f}');
            prop_assert!(!clean.as_str().chars().any(forbidden), "{:?}", clean);
            let line = sanitize_line(&s);
            prop_assert!(!line.as_str().contains(['\n', '\t']) && !has_unsafe(line.as_str()));
        }

        #[test]
        fn idempotent(s in any::<String>()) {
            let once = sanitize(&s);
            prop_assert_eq!(sanitize(once.as_str()), once);
        }

        #[test]
        fn plain_text_unchanged(s in "[ -~\n\t\u{a0}-\u{2000}]*".prop_filter("no invisible controls", |s| !s.chars().any(is_invisible_control))) {
            let clean = sanitize(&s);
            prop_assert_eq!(clean.as_str(), s.as_str());
        }

        #[test]
        fn escape_heavy_text_is_safe(parts in proptest::collection::vec(
            prop_oneof![Just("\x1b"), Just("["), Just("]"), Just("\x07"), Just("\u{9b}"), Just("m"),
                        Just("\\"), Just("P"), Just("a"), Just("\u{202e}"), Just("\r")], 0..40)) {
            let s: String = parts.concat();
            prop_assert!(!has_unsafe(sanitize(&s).as_str()));
        }
    }
}
