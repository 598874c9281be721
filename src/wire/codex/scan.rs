//! The fast path of decoding: one pass over a record that validates it as JSON and pulls out the
//! fields the reducer reads, without serde's per-token dispatch or large intermediate structs.
//!
//! It is deliberately partial. Anything unusual — a `\u` escape, a typed number that is not a
//! plain integer, deep nesting, any syntax error — makes it give up (`None`), and the serde path
//! decides instead. So it never accepts a line serde would reject, and it never has to reproduce
//! serde's error messages. The nested objects the reducer reads in depth (`item`, `thread`,
//! `turn`, `tokenUsage`, a response's `result`) are read here too, as their derived types read
//! them: on real traffic they are a third of the bytes, and a second pass by serde cost more than
//! the scan itself. Only `threadSettings`, rare, is parsed by serde from its slice.

use std::borrow::Cow;

use super::message::{Item, Message, Params, ResultBody, ThreadInfo, TokenUsage, TopRest, TurnInfo, wants_full_params};
use crate::wire::fact::Breakdown;
use crate::wire::json::{Raw, Str, short_escape};
use crate::wire::malformed::ShapeKeys;

/// Deeper nesting than this goes to serde (whose own limit is 128).
const MAX_DEPTH: usize = 100;

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

type Scan<T> = Option<T>;

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, bytes: text.as_bytes(), pos: 0 }
    }

    #[inline]
    fn ws(&mut self) {
        // Codex writes no whitespace between tokens: one compare settles the usual case.
        if self.bytes.get(self.pos).is_some_and(|&b| b > b' ') {
            return;
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Scan<u8> {
        self.ws();
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Scan<()> {
        (self.peek()? == b).then(|| self.pos += 1)
    }

    /// Moves the cursor to the next byte that ends a plain run inside a string: `"`, `\\` or a
    /// control byte (which JSON forbids raw). Eight bytes at a time, as a word (SWAR): most
    /// strings here are keys and ids of 8 to 52 bytes, where memchr's vector setup cost more
    /// (measured: +9 % instructions on the capture corpus).
    #[inline(always)]
    fn skip_plain(&mut self) -> Scan<u8> {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let b = self.bytes;
        while let Some(chunk) = b.get(self.pos..self.pos + 8) {
            let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            let quote = x ^ (ONES * u64::from(b'"'));
            let slash = x ^ (ONES * u64::from(b'\\'));
            // A byte is zero (or below 0x20) exactly where (v - k) borrows into its high bit while
            // its own high bit is clear.
            let hits = (quote.wrapping_sub(ONES) & !quote
                | slash.wrapping_sub(ONES) & !slash
                | x.wrapping_sub(ONES * 0x20) & !x)
                & HIGHS;
            if hits != 0 {
                self.pos += (hits.trailing_zeros() / 8) as usize;
                return Some(b[self.pos]);
            }
            self.pos += 8;
        }
        while let Some(&c) = b.get(self.pos) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                return Some(c);
            }
            self.pos += 1;
        }
        None
    }

    /// One escape after a backslash at the cursor; `\\u` and invalid escapes give up.
    fn escape(&mut self) -> Scan<char> {
        let c = short_escape(*self.bytes.get(self.pos + 1)?)?;
        self.pos += 2;
        Some(c)
    }

    /// A string at the cursor. Escapes other than `\\u` are unescaped; `\\u` gives up.
    fn string(&mut self) -> Scan<Str<'a>> {
        self.eat(b'"')?;
        let start = self.pos;
        match self.skip_plain()? {
            b'"' => {
                let end = self.pos;
                self.pos += 1;
                Some(Cow::Borrowed(&self.text[start..end]))
            }
            b'\\' => self.escaped_string(start),
            _ => None,
        }
    }

    /// The rest of a string from its first escape (at the cursor) on, unescaped. Apart from
    /// [`Scanner::string`], which stays small for the plain ids and names that are most strings.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize) -> Scan<Str<'a>> {
        // Room for the rest of a usual string at once: growing from nothing reallocated on most
        // escaped texts.
        let mut owned = String::with_capacity((self.bytes.len() - start).min(4096));
        let mut run = start;
        loop {
            match self.skip_plain()? {
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
        }
    }

    /// Skips a string, validating it the same way.
    fn skip_string(&mut self) -> Scan<()> {
        self.eat(b'"')?;
        loop {
            match self.skip_plain()? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => {
                    self.escape()?;
                }
                _ => return None,
            }
        }
    }

    /// A JSON number's text, validated against the grammar.
    fn number(&mut self) -> Scan<&'a str> {
        self.ws();
        let start = self.pos;
        let b = self.bytes;
        if b.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match b.get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while b.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = b.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = b.get(self.pos) {
                self.pos += 1;
            }
            self.digits()?;
        }
        Some(&self.text[start..self.pos])
    }

    fn digits(&mut self) -> Scan<()> {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        (self.pos > start).then_some(())
    }

    /// Moves past `word` when the cursor is at it. Always inlined: the words are constants, and
    /// compared in place they need no `memcmp` call.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        self.bytes[self.pos..].starts_with(word).then(|| self.pos += word.len())
    }

    /// Skips any value; returns its text.
    fn value(&mut self, depth: usize) -> Scan<&'a str> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = {
            self.ws();
            self.pos
        };
        match self.peek()? {
            b'"' => self.skip_string()?,
            b'{' => {
                self.pos += 1;
                if self.eat(b'}').is_none() {
                    loop {
                        self.skip_string()?;
                        self.eat(b':')?;
                        self.value(depth + 1)?;
                        if self.eat(b',').is_none() {
                            self.eat(b'}')?;
                            break;
                        }
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                if self.eat(b']').is_none() {
                    loop {
                        self.value(depth + 1)?;
                        if self.eat(b',').is_none() {
                            self.eat(b']')?;
                            break;
                        }
                    }
                }
            }
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => {
                self.number()?;
            }
        }
        Some(&self.text[start..self.pos])
    }

    fn is_null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.bytes[self.pos..].starts_with(b"null") {
            self.pos += 4;
            true
        } else {
            false
        }
    }

    fn opt_string(&mut self) -> Scan<Option<Str<'a>>> {
        if self.is_null() { Some(None) } else { self.string().map(Some) }
    }

    /// The digits of a plain whole number at the cursor (no sign), read while they are scanned:
    /// its value (wrapped past 19 digits) and how many digits it has. A leading zero before more
    /// digits, a fraction or an exponent gives up, as the grammar or a typed integer would.
    #[inline]
    fn whole_digits(&mut self) -> Scan<(u64, usize)> {
        let b = self.bytes;
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

    /// A plain integer (no fraction or exponent) that fits an i64.
    /// Read while it is scanned (times are on every line); a fraction, an exponent, a leading
    /// zero before more digits or an overflow gives up, as `number` then `parse` would.
    fn opt_int(&mut self) -> Scan<Option<i64>> {
        if self.is_null() {
            return Some(None);
        }
        let negative = self.bytes.get(self.pos) == Some(&b'-');
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

    fn opt_bool(&mut self) -> Scan<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }

    /// A whole number that fits a u64, as serde reads one; anything else (a sign, a fraction, an
    /// overflow) gives up. Read while it is scanned: token figures are on every usage line.
    fn opt_u64(&mut self) -> Scan<Option<u64>> {
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

    fn opt_raw(&mut self, depth: usize) -> Scan<Option<Raw<'a>>> {
        if self.is_null() { Some(None) } else { Some(Some(Raw::validated(self.value(depth)?))) }
    }

    /// An array of strings, or null.
    fn opt_strings(&mut self) -> Scan<Option<Vec<Str<'a>>>> {
        if self.is_null() {
            return Some(None);
        }
        self.eat(b'[')?;
        let mut v = Vec::new();
        if self.eat(b']').is_some() {
            return Some(Some(v));
        }
        loop {
            v.push(self.string()?);
            if self.eat(b',').is_none() {
                self.eat(b']')?;
                return Some(Some(v));
            }
        }
    }

    /// A member name. Every name the reducer reads is plain, so a name with an escape gives up
    /// rather than paying for unescaping on every key.
    fn key(&mut self) -> Scan<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        if self.skip_plain()? != b'"' {
            return None;
        }
        let key = &self.text[start..self.pos];
        self.pos += 1;
        Some(key)
    }

    /// Iterates an object's members: `f` must consume each value.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a str) -> Scan<()>) -> Scan<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.eat(b':')?;
            f(self, key)?;
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    fn end(&mut self) -> Scan<()> {
        self.ws();
        (self.pos == self.bytes.len()).then_some(())
    }
}

/// A raw value as a string, when it is one: unescaped by the scanner, by serde where the scanner
/// gives up (`\u` escapes). Item texts hold escapes (`\n`, `\"`) more often than not, and serde's
/// `Cow<str>` always copies them out of its scratch buffer once more.
pub(super) fn string_of(raw: Raw<'_>) -> Option<Str<'_>> {
    if !raw.get().starts_with('"') {
        return None;
    }
    let mut s = Scanner::new(raw.get());
    s.string().filter(|_| s.end().is_some()).or_else(|| raw.parse())
}

/// A raw array of strings as serde reads a `Vec<Str>` (by serde where the scanner gives up): a
/// reasoning item's summary and content, read once per completed item.
pub(super) fn strings_of(raw: Raw<'_>) -> Option<Vec<Str<'_>>> {
    let mut s = Scanner::new(raw.get());
    match s.opt_strings() {
        Some(Some(v)) if s.end().is_some() => Some(v),
        _ => raw.parse(),
    }
}

/// The `text` of each part of a raw array of objects, as serde reads a `Vec` of a derived
/// struct whose one field is `text: Option<Str>` (a user message's content): `None` when it is
/// not such an array.
pub(super) fn texts_of(raw: Raw<'_>) -> Option<Vec<Option<Str<'_>>>> {
    fn scan<'a>(s: &mut Scanner<'a>) -> Scan<Vec<Option<Str<'a>>>> {
        s.eat(b'[')?;
        let mut parts = Vec::new();
        if s.eat(b']').is_some() {
            return Some(parts);
        }
        loop {
            // A part given as an array (by position) is left to serde.
            if s.peek()? != b'{' {
                return None;
            }
            let mut text = None;
            let mut seen = 0;
            s.object(|s, key| {
                if key == "text" {
                    once(&mut seen, 1)?;
                    text = s.opt_string()?;
                } else {
                    s.value(3)?;
                }
                Some(())
            })?;
            parts.push(text);
            if s.eat(b',').is_none() {
                s.eat(b']')?;
                return Some(parts);
            }
        }
    }
    #[derive(serde::Deserialize)]
    struct Part<'a> {
        #[serde(borrow)]
        text: Option<Str<'a>>,
    }
    let mut s = Scanner::new(raw.get());
    match scan(&mut s) {
        Some(parts) if s.end().is_some() => Some(parts),
        _ => raw.parse::<Vec<Part<'_>>>().map(|parts| parts.into_iter().map(|p| p.text).collect()),
    }
}

/// Notes a field of a derived struct; serde refuses a field given twice, so the scan gives up.
fn once(seen: &mut u32, bit: u32) -> Scan<()> {
    let first = *seen & bit == 0;
    *seen |= bit;
    first.then_some(())
}

/// A struct member at the cursor: `null`, or an object (serde's derive also takes an array, by
/// position; that is left to serde).
fn opt_struct(s: &mut Scanner<'_>) -> Scan<bool> {
    if s.is_null() {
        return Some(false);
    }
    (s.peek()? == b'{').then_some(true)
}

/// `params.tokenUsage` as the derived [`TokenUsage`] reads it. Parsed here rather than validated
/// here and parsed again by serde: one such line follows every model response.
fn token_usage(s: &mut Scanner<'_>) -> Scan<Option<TokenUsage>> {
    if !opt_struct(s)? {
        return Some(None);
    }
    let mut u = TokenUsage::default();
    let mut seen = 0;
    s.object(|s, key| {
        match key {
            "total" => {
                once(&mut seen, 1)?;
                u.total = breakdown(s)?;
            }
            "last" => {
                once(&mut seen, 2)?;
                u.last = breakdown(s)?;
            }
            "modelContextWindow" => {
                once(&mut seen, 4)?;
                u.model_context_window = s.opt_u64()?;
            }
            _ => {
                s.value(3)?;
            }
        }
        Some(())
    })?;
    Some(Some(u))
}

fn breakdown(s: &mut Scanner<'_>) -> Scan<Option<Breakdown>> {
    if !opt_struct(s)? {
        return Some(None);
    }
    let at = s.pos;
    if let Some(b) = breakdown_as_written(s) {
        return Some(Some(b));
    }
    s.pos = at;
    let mut b = Breakdown::default();
    let mut seen = 0;
    s.object(|s, key| {
        let (bit, field) = match key {
            "totalTokens" => (1, &mut b.total_tokens),
            "inputTokens" => (2, &mut b.input_tokens),
            "cachedInputTokens" => (4, &mut b.cached_input_tokens),
            "cacheWriteInputTokens" => (8, &mut b.cache_write_input_tokens),
            "outputTokens" => (16, &mut b.output_tokens),
            "reasoningOutputTokens" => (32, &mut b.reasoning_output_tokens),
            _ => {
                s.value(4)?;
                return Some(());
            }
        };
        once(&mut seen, bit)?;
        *field = s.opt_u64()?;
        Some(())
    })?;
    Some(Some(b))
}

/// A breakdown with its six figures in the order Codex writes them (two per usage line), read by
/// their literal names; any other shape gives up, for the general object scan. What it reads
/// agrees with that scan.
fn breakdown_as_written(s: &mut Scanner<'_>) -> Scan<Breakdown> {
    s.literal(b"{\"totalTokens\":")?;
    let total_tokens = s.opt_u64()?;
    s.literal(b",\"inputTokens\":")?;
    let input_tokens = s.opt_u64()?;
    s.literal(b",\"cachedInputTokens\":")?;
    let cached_input_tokens = s.opt_u64()?;
    s.literal(b",\"cacheWriteInputTokens\":")?;
    let cache_write_input_tokens = s.opt_u64()?;
    s.literal(b",\"outputTokens\":")?;
    let output_tokens = s.opt_u64()?;
    s.literal(b",\"reasoningOutputTokens\":")?;
    let reasoning_output_tokens = s.opt_u64()?;
    s.literal(b"}")?;
    Some(Breakdown {
        total_tokens,
        input_tokens,
        cached_input_tokens,
        cache_write_input_tokens,
        output_tokens,
        reasoning_output_tokens,
        ..Breakdown::default()
    })
}

/// `params.item` as the derived [`Item`] reads it: strings typed, display fields raw. Two of
/// every dozen lines carry an item (`item/started`, `item/completed`).
fn item<'a>(s: &mut Scanner<'a>) -> Scan<Option<Item<'a>>> {
    if !opt_struct(s)? {
        return Some(None);
    }
    let mut it = Item::default();
    let mut seen = 0;
    s.object(|s, key| {
        let (bit, slot) = match key {
            "type" => (0, &mut it.kind),
            "id" => (1, &mut it.id),
            "status" => (2, &mut it.status),
            "model" => (3, &mut it.model),
            "kind" => (4, &mut it.activity),
            "agentThreadId" => (5, &mut it.agent_thread_id),
            "agentPath" => (6, &mut it.agent_path),
            "receiverThreadIds" => {
                once(&mut seen, 1 << 7)?;
                it.receiver_thread_ids = s.opt_strings()?;
                return Some(());
            }
            _ => {
                let (bit, raw) = match key {
                    "tool" => (8, &mut it.tool),
                    "prompt" => (9, &mut it.prompt),
                    "text" => (10, &mut it.text),
                    "summary" => (11, &mut it.summary),
                    "content" => (12, &mut it.content),
                    "command" => (13, &mut it.command),
                    "aggregatedOutput" => (14, &mut it.aggregated_output),
                    "exitCode" => (15, &mut it.exit_code),
                    "changes" => (16, &mut it.changes),
                    "server" => (17, &mut it.server),
                    "query" => (18, &mut it.query),
                    "error" => (19, &mut it.error),
                    "agentsStates" => (20, &mut it.agents_states),
                    _ => {
                        s.value(3)?;
                        return Some(());
                    }
                };
                once(&mut seen, 1 << bit)?;
                *raw = s.opt_raw(3)?;
                return Some(());
            }
        };
        once(&mut seen, 1 << bit)?;
        *slot = s.opt_string()?;
        Some(())
    })?;
    Some(Some(it))
}

/// A thread's description (`params.thread`, `result.thread`) as the derived [`ThreadInfo`] reads
/// it: every `thread/start` response and `thread/started` carries one of some 1 KiB, which serde
/// would otherwise walk a second time.
fn thread_info<'a>(s: &mut Scanner<'a>) -> Scan<Option<ThreadInfo<'a>>> {
    if !opt_struct(s)? {
        return Some(None);
    }
    let mut t = ThreadInfo::default();
    let mut seen = 0;
    s.object(|s, key| {
        let (bit, slot) = match key {
            "id" => {
                once(&mut seen, 1)?;
                // Required, and a string (serde refuses the line otherwise).
                t.id = s.string()?;
                return Some(());
            }
            "source" => {
                once(&mut seen, 2)?;
                t.source = s.opt_raw(3)?;
                return Some(());
            }
            "parentThreadId" => (4, &mut t.parent_thread_id),
            "model" => (8, &mut t.model),
            "agentNickname" => (16, &mut t.agent_nickname),
            "agentRole" => (32, &mut t.agent_role),
            _ => {
                s.value(3)?;
                return Some(());
            }
        };
        once(&mut seen, bit)?;
        *slot = s.opt_string()?;
        Some(())
    })?;
    // No `id`: serde names the missing field.
    (seen & 1 != 0).then_some(Some(t))
}

/// `params.turn` as the derived [`TurnInfo`] reads it (`turn/completed` carries the turn's items,
/// skipped here once).
fn turn_info<'a>(s: &mut Scanner<'a>) -> Scan<Option<TurnInfo<'a>>> {
    if !opt_struct(s)? {
        return Some(None);
    }
    let mut t = TurnInfo::default();
    let mut seen = 0;
    s.object(|s, key| {
        let (bit, slot) = match key {
            "id" => (1, &mut t.id),
            "rootTurnId" => (2, &mut t.root_turn_id),
            "status" => (4, &mut t.status),
            "error" => {
                once(&mut seen, 8)?;
                t.error = s.opt_raw(3)?;
                return Some(());
            }
            _ => {
                s.value(3)?;
                return Some(());
            }
        };
        once(&mut seen, bit)?;
        *slot = s.opt_string()?;
        Some(())
    })?;
    Some(Some(t))
}

/// A response's `result` object as the derived [`ResultBody`] reads it.
fn result_body<'a>(s: &mut Scanner<'a>) -> Scan<ResultBody<'a>> {
    let mut r = ResultBody::default();
    let mut seen = 0;
    s.object(|s, key| {
        match key {
            "thread" => {
                once(&mut seen, 1)?;
                r.thread = thread_info(s)?;
            }
            "model" => {
                once(&mut seen, 2)?;
                r.model = s.opt_string()?;
            }
            "modelProvider" => {
                once(&mut seen, 4)?;
                r.model_provider = s.opt_string()?;
            }
            _ => {
                s.value(2)?;
            }
        }
        Some(())
    })?;
    Some(r)
}

/// Parses a validated slice with serde; any disagreement sends the line to the serde path.
fn serde_part<'a, T: serde::Deserialize<'a>>(text: &'a str) -> Scan<T> {
    serde_json::from_str(text).ok()
}

/// Params into `p` (in place, see `decode_into`), replacing what it held.
fn params<'a>(s: &mut Scanner<'a>, full: bool, p: &mut Params<'a>) -> Scan<()> {
    *p = Params::default();
    match s.peek()? {
        b'{' => {}
        b'n' => {
            s.literal(b"null")?;
            return Some(());
        }
        // Arrays and scalars carry no thread (see ParamsSeed).
        _ => {
            s.value(1)?;
            return Some(());
        }
    }
    s.object(|s, key| {
        if !full {
            if key == "threadId" {
                p.thread_id = s.opt_string()?;
            } else {
                s.value(2)?;
            }
            return Some(());
        }
        match key {
            "threadId" => p.thread_id = s.opt_string()?,
            "turnId" => p.turn_id = s.opt_string()?,
            "itemId" => p.item_id = s.opt_string()?,
            "delta" => p.delta = s.opt_string()?,
            "summaryIndex" => p.summary_index = s.opt_int()?,
            "contentIndex" => p.content_index = s.opt_int()?,
            "willRetry" => p.rest_mut().will_retry = s.opt_bool()?,
            "toModel" => p.rest_mut().to_model = s.opt_string()?,
            "thread" => p.rest_mut().thread = thread_info(s)?,
            "turn" => p.rest_mut().turn = turn_info(s)?,
            "item" => p.rest_mut().item = item(s)?,
            "tokenUsage" => p.rest_mut().token_usage = token_usage(s)?,
            "threadSettings" => {
                #[derive(serde::Deserialize)]
                struct Settings<'a> {
                    #[serde(borrow, default, deserialize_with = "crate::wire::json::opt_str")]
                    model: Option<Str<'a>>,
                }
                p.rest_mut().settings_model = serde_part::<Option<Settings<'a>>>(s.value(2)?)?.and_then(|x| x.model);
            }
            "status" => p.rest_mut().status = Some(Raw::validated(s.value(2)?)),
            "error" => p.rest_mut().error = Some(Raw::validated(s.value(2)?)),
            "message" => p.rest_mut().message = Some(Raw::validated(s.value(2)?)),
            "name" => p.rest_mut().name = Some(Raw::validated(s.value(2)?)),
            _ => {
                s.value(2)?;
            }
        }
        Some(())
    })
}

/// A unix-ms time as the serde path reads it; unusual numbers give up.
fn millis(s: &mut Scanner<'_>) -> Scan<Option<i64>> {
    s.opt_int()
}

/// A stream delta in the exact shape Codex writes it (seven lines in ten):
/// `{"method":"item/…","params":{"threadId":…,"turnId":…,"itemId":…,"delta":…[,"summaryIndex":…|
/// ,"contentIndex":…]},"emittedAtMs":…}`. Its member names are compared as the literals they
/// always are, in their order, instead of each being scanned and dispatched on. Any other shape
/// gives up and leaves `msg` as it was, for the general scan; what is read agrees with it.
fn delta_into<'a>(text: &'a str, msg: &mut Message<'a>) -> Scan<()> {
    if !text.starts_with("{\"method\":\"item/") {
        return None;
    }
    let mut s = Scanner::new(text);
    s.pos = "{\"method\":".len();
    let method = s.string()?;
    s.literal(b",\"params\":{\"threadId\":")?;
    let thread_id = s.string()?;
    s.literal(b",\"turnId\":")?;
    let turn_id = s.string()?;
    s.literal(b",\"itemId\":")?;
    let item_id = s.string()?;
    s.literal(b",\"delta\":")?;
    let delta = s.string()?;
    let (mut summary_index, mut content_index) = (None, None);
    if s.literal(b",\"summaryIndex\":").is_some() {
        summary_index = s.opt_int()?;
    } else if s.literal(b",\"contentIndex\":").is_some() {
        content_index = s.opt_int()?;
    }
    s.literal(b"},\"emittedAtMs\":")?;
    let emitted_at_ms = s.opt_int()?;
    s.literal(b"}")?;
    s.end()?;
    msg.method = Some(method);
    msg.emitted_at_ms = emitted_at_ms;
    let p = &mut msg.params;
    p.thread_id = Some(thread_id);
    p.turn_id = Some(turn_id);
    p.item_id = Some(item_id);
    p.delta = Some(delta);
    p.summary_index = summary_index;
    p.content_index = content_index;
    Some(())
}

/// Any other notification in the shape Codex writes it, `{"method":…,"params":…[,
/// "emittedAtMs":…]}`: its member names compared as literals, its params read as usual.
/// Any other shape gives up, with `msg` back as it was.
fn notification_into<'a>(text: &'a str, msg: &mut Message<'a>) -> Scan<()> {
    if !text.starts_with("{\"method\":") {
        return None;
    }
    let mut s = Scanner::new(text);
    s.pos = "{\"method\":".len();
    let read = (|| {
        let method = s.string()?;
        s.literal(b",\"params\":")?;
        params(&mut s, wants_full_params(&method), &mut msg.params)?;
        msg.method = Some(method);
        // Servers before `emittedAtMs` write none.
        if s.literal(b",\"emittedAtMs\":").is_some() {
            msg.emitted_at_ms = s.opt_int()?;
        }
        s.literal(b"}")?;
        s.end()
    })();
    if read.is_none() {
        *msg = Message::default();
    }
    read
}

/// The top level of a record, as [`super::message::Top`]: the message's own members into `msg`,
/// the rest into `top`. Both start empty.
pub(super) fn top_into<'a>(text: &'a str, msg: &mut Message<'a>, top: &mut TopRest<'a>) -> Scan<()> {
    if delta_into(text, msg).is_some() || notification_into(text, msg).is_some() {
        top.parts.shape = ShapeKeys::default().shape();
        return Some(());
    }
    let mut s = Scanner::new(text);
    let mut late_params: Option<&str> = None;
    let mut keys = ShapeKeys::default();
    s.object(|s, key| {
        let m = &mut *msg;
        match key {
            "method" => m.method = Some(s.string()?),
            "params" => match m.method.as_deref() {
                Some(method) => params(s, wants_full_params(method), &mut m.params)?,
                None => late_params = Some(s.value(1)?),
            },
            "id" => {
                s.value(1)?;
                m.has_id = true;
            }
            // Only an object result carries what the reducer reads (the last one, as serde keeps it).
            "result" => {
                m.result = if s.peek()? == b'{' {
                    Some(Box::new(result_body(s)?))
                } else {
                    s.value(1)?;
                    None
                };
            }
            "error" => {
                s.value(1)?;
            }
            "emittedAtMs" => m.emitted_at_ms = millis(s)?,
            "swarmtop" => {
                m.swarmtop = Some(if s.peek()? == b'"' {
                    s.string()?
                } else {
                    s.value(1)?;
                    Cow::Borrowed("")
                });
            }
            "ts" => top.ts = millis(s)?,
            "dir" => top.dir = s.opt_string()?,
            "msg" => top.envelope_msg = Some(Raw::validated(s.value(1)?)),
            "act" => top.act = Some(Raw::validated(s.value(1)?)),
            "rawB64" => {
                s.value(1)?;
                top.raw_b64 = true;
            }
            other => {
                keys.note(other);
                s.value(1)?;
            }
        }
        Some(())
    })?;
    s.end()?;
    if let Some(text) = late_params {
        let full = msg.method.as_deref().is_some_and(wants_full_params);
        let mut inner = Scanner::new(text);
        params(&mut inner, full, &mut msg.params)?;
    }
    top.parts.shape = keys.shape();
    Some(())
}

/// [`top_into`] by value, for the tests.
#[cfg(test)]
fn top(text: &str) -> Scan<super::message::Top<'_>> {
    let mut t = super::message::Top::default();
    top_into(text, &mut t.message, &mut t.rest)?;
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_lines_take_the_fast_path() {
        let lines = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a \n b","summaryIndex":0},"emittedAtMs":1795987208996}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0},"last":null,"modelContextWindow":258400}},"emittedAtMs":1}"#,
            r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"x","summary":[],"content":[],"phase":null},"threadId":"t","turnId":"u","completedAtMs":5},"emittedAtMs":5}"#,
            r#"{"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex","primary":null}},"emittedAtMs":5}"#,
            r#"{"id":2,"result":{"thread":{"id":"t"},"model":"gpt-5.5","modelProvider":"openai"}}"#,
        ];
        for l in lines {
            assert!(top(l).is_some(), "fell back: {l}");
        }
    }
}

#[cfg(test)]
mod agreement {
    use proptest::prelude::*;

    use super::super::message::{Top, finish, is_message, serde_only};
    use super::*;
    use crate::wire::malformed::Malformed;

    /// What the reducer reads of a line, for comparing the two paths.
    fn summary(t: Top<'_>) -> String {
        let Top { message: mut m, rest: t } = t;
        let envelope = format!("{:?}|{:?}|{:?}|{}", t.ts, t.dir, t.envelope_msg.map(Raw::get), t.raw_b64);
        if let Err(e) = finish(&mut m, t.parts) {
            return format!("malformed {e:?}|{envelope}");
        }
        if !is_message(&m) {
            return format!("malformed {:?}|{envelope}", Malformed::NotAMessage(t.parts.shape));
        }
        let p = &m.params;
        let r = p.rest();
        format!(
            "{:?}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{envelope}",
            m.method,
            m.has_id,
            m.emitted_at_ms,
            m.swarmtop,
            p.thread_id,
            p.turn_id,
            p.item_id,
            p.delta,
            p.summary_index,
            r.will_retry,
            r.item,
            r.token_usage,
            r.thread,
            r.turn,
            r.status.map(Raw::get),
            r.error.map(Raw::get),
            r.settings_model,
            m.result,
        )
    }

    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("7".to_owned()),
            Just("-1.5e3".to_owned()),
            Just("1795987208996".to_owned()),
            Just("\"t1\"".to_owned()),
            Just("\"a\\nb\\\"c\"".to_owned()),
            Just("\"\\u00e9\"".to_owned()),
            Just("\"x\\q\"".to_owned()),
            Just("01".to_owned()),
            Just("-0".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("-9223372036854775808".to_owned()),
            Just("9223372036854775808".to_owned()),
            Just("\"caf\u{e9}\"".to_owned()),
            Just("{\"id\":\"u\",\"rootTurnId\":\"u\",\"status\":\"completed\",\"items\":[{\"type\":\"x\"}],\"error\":null}".to_owned()),
            Just("{\"id\":\"c\",\"parentThreadId\":\"p\",\"source\":{\"subAgent\":{}},\"agentNickname\":\"Ada\",\"turns\":[]}".to_owned()),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key(), inner), 0..4).prop_map(|kv| format!(
                    "{{{}}}",
                    kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",")
                )),
            ]
        })
    }

    /// A value for one of a delta's slots: mostly of the kind it holds, sometimes anything.
    fn slot(usual: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop_oneof![9 => proptest::sample::select(usual).prop_map(str::to_owned), 1 => value()]
    }

    const TEXTS: &[&str] =
        &["\"019a0000-000f-7101-a963-a7441a91b9f1\"", "\"a \\n \\\"b\\\" \\\\ \\t\"", "\"caf\u{e9} \\/\"", "\"\""];
    const NUMBERS: &[&str] = &["0", "1795987208996", "-3", "null"];

    fn key() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("method"),
            Just("params"),
            Just("id"),
            Just("result"),
            Just("error"),
            Just("emittedAtMs"),
            Just("threadId"),
            Just("turnId"),
            Just("itemId"),
            Just("delta"),
            Just("summaryIndex"),
            Just("willRetry"),
            Just("item"),
            Just("thread"),
            Just("status"),
            Just("type"),
            Just("receiverThreadIds"),
            Just("kind"),
            Just("agentThreadId"),
            Just("text"),
            Just("tool"),
            Just("tokenUsage"),
            Just("total"),
            Just("totalTokens"),
            Just("modelContextWindow"),
            Just("ts"),
            Just("dir"),
            Just("msg"),
            Just("swarmtop"),
            Just("turn"),
            Just("rootTurnId"),
            Just("parentThreadId"),
            Just("source"),
            Just("model"),
            Just("modelProvider"),
            Just("agentNickname"),
            Just("agentRole"),
            Just("items"),
            Just("other"),
        ]
    }

    fn method() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\"item/agentMessage/delta\""),
            Just("\"item/completed\""),
            Just("\"thread/status/changed\""),
            Just("\"error\""),
            Just("\"brand/new\""),
            Just("5"),
        ]
        .prop_map(str::to_owned)
    }

    #[test]
    fn strings_of_raw_values_read_as_serde_reads_them() {
        let texts =
            [r#""plain""#, r#""a\nb \"c\" \\ d\t\/""#, r#""caf\u00e9 \ud83e\udd80""#, "\"\"", "7", "null", r#"["a"]"#];
        for text in texts {
            let raw = Raw::validated(text);
            assert_eq!(string_of(raw), raw.parse::<Str<'_>>(), "{text}");
        }
    }

    /// Arrays read by lowering (summaries, content parts) as serde reads them.
    #[test]
    fn arrays_of_raw_values_read_as_serde_reads_them() {
        #[derive(serde::Deserialize)]
        struct Part<'a> {
            #[serde(borrow)]
            text: Option<Str<'a>>,
        }
        let texts = [
            r#"["a","b\nc"]"#,
            "[]",
            r#"[ "x" , "caf\u00e9" ]"#,
            r#"["a",1]"#,
            "null",
            "7",
            r#""s""#,
            r#"[{"type":"text","text":"PARENT \"TASK\"","text_elements":[]},{"type":"image"}]"#,
            r#"[{"text":null},{"text":"a","text":"b"}]"#,
            r#"[["positional"]]"#,
            r#"[{"text":5}]"#,
            "[null]",
        ];
        for text in texts {
            let raw = Raw::validated(text);
            assert_eq!(strings_of(raw), raw.parse::<Vec<Str<'_>>>(), "{text}");
            let serde = raw.parse::<Vec<Part<'_>>>().map(|v| v.into_iter().map(|p| p.text).collect::<Vec<_>>());
            assert_eq!(texts_of(raw), serde, "{text}");
        }
    }

    /// The typed nested objects the scanner reads itself, on lines shaped like real ones.
    #[test]
    fn items_and_token_usage_agree_with_serde() {
        let lines = [
            r#"{"method":"item/completed","params":{"item":{"type":"collabAgentToolCall","id":"call_1","tool":"spawnAgent","status":"completed","senderThreadId":"p","receiverThreadIds":["c1","c\"2"],"prompt":"do \n it","model":"gpt-5.6-luna","agentsStates":{}},"threadId":"p","turnId":"u"},"emittedAtMs":5}"#,
            r#"{"method":"item/started","params":{"item":{"type":"subAgentActivity","id":"a","kind":"started","agentThreadId":"c","agentPath":"/root/x","text":null,"exitCode":0},"threadId":"p"}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","tokenUsage":{"total":{"totalTokens":10,"inputTokens":9,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":1,"reasoningOutputTokens":0,"extra":[1]},"last":null,"modelContextWindow":258400}}}"#,
            r#"{"method":"item/completed","params":{"item":null,"threadId":"p"}}"#,
            r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","rootTurnId":"r","items":[{"type":"agentMessage","id":"m","text":"a\"b"}],"status":"failed","error":{"message":"x"},"durationMs":5}}}"#,
            r#"{"method":"turn/started","params":{"threadId":"t","turn":null}}"#,
            r#"{"method":"thread/started","params":{"thread":{"id":"c","source":{"subAgent":{"thread_spawn":{"parent_thread_id":"p"}}},"parentThreadId":null,"model":"gpt-5.5","agentNickname":"Kant","agentRole":null,"turns":[]}}}"#,
            r#"{"id":4,"result":{"thread":{"id":"t","status":{"type":"idle"},"turns":[]},"model":"gpt-5.5","modelProvider":"openai","sandbox":{"type":"x"}}}"#,
            r#"{"id":5,"result":{"thread":null,"model":null}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":0,"outputTokens":9999999999999999999},"modelContextWindow":18446744073709551615}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":1580,"inputTokens":1500,"cachedInputTokens":0,"cacheWriteInputTokens":null,"outputTokens":80,"reasoningOutputTokens":32},"last":{"totalTokens":7,"inputTokens":1,"cachedInputTokens":2,"cacheWriteInputTokens":3,"outputTokens":4,"reasoningOutputTokens":5,"x":1},"modelContextWindow":258400}},"emittedAtMs":1}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":1,"totalTokens":2,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0},"last":{ "totalTokens":7,"inputTokens":1,"cachedInputTokens":2,"cacheWriteInputTokens":3,"outputTokens":4,"reasoningOutputTokens":5}}}}"#,
            r#"{"id":6,"result":{"model":"a"},"result":7}"#,
            r#"{"id":6,"result":3,"result":{"model":"b"}}"#,
        ];
        for l in lines {
            let fast = top(l).unwrap_or_else(|| panic!("fell back: {l}"));
            assert_eq!(summary(fast), summary(serde_only(l).unwrap()), "{l}");
        }
        // What serde refuses, the scanner leaves to serde.
        for l in [
            r#"{"method":"item/completed","params":{"item":{"id":"a","id":"b"}}}"#,
            r#"{"method":"item/completed","params":{"item":["agentMessage","a"]}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1.0}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":-1}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0.5}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":1,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0,"totalTokens":2}}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":-0}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":18446744073709551616}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"modelContextWindow":1e3}}}"#,
            r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":07}}}}"#,
            // serde reads `-0` as a float.
            r#"{"method":"item/agentMessage/delta","params":{"summaryIndex":-0}}"#,
            r#"{"method":"thread/started","params":{"thread":{"parentThreadId":"p"}}}"#,
            r#"{"method":"thread/started","params":{"thread":{"id":null}}}"#,
            r#"{"method":"turn/completed","params":{"turn":{"id":"a","id":"b"}}}"#,
            r#"{"method":"turn/completed","params":{"turn":{"status":{"type":"x"}}}}"#,
            r#"{"id":4,"result":{"model":"a","model":"b"}}"#,
            r#"{"id":4,"result":{"thread":{"id":"t","agentRole":5}}}"#,
        ] {
            assert!(top(l).is_none(), "fast path took: {l}");
        }
    }

    /// Notifications in the shape Codex writes them, and near it, agree with serde; a line the
    /// literal path leaves is read whole by the general scan.
    #[test]
    fn notification_shaped_lines_agree_with_serde() {
        let lines = [
            r#"{"method":"thread/status/changed","params":{"threadId":"t","status":{"type":"idle"}},"emittedAtMs":5}"#,
            r#"{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u","rootTurnId":"u"}}}"#,
            r#"{"method":"account/rateLimits/updated","params":null,"emittedAtMs":null}"#,
            r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"a\nb"},"threadId":"t"},"emittedAtMs":1} "#,
            r#"{"method":"x\"y","params":{"threadId":"t"}}"#,
            r#"{"method":"error","params":{"threadId":"t","willRetry":true},"emittedAtMs":1,"id":4}"#,
            r#"{"method":"error","params":{"threadId":"t"},"emittedAtMs":1.5}"#,
            r#"{"method":"error","params":{"threadId":"t"},"ts":1}"#,
            r#"{"method":"turn/started","params":{"threadId":"t"},"params":{"threadId":"u"}}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            let taken = notification_into(l, &mut Message::default()).is_some();
            assert_eq!(taken, i < 5, "{l}");
            // The fast path gives up on a fraction, as serde's typed read refuses it.
            if let Some(fast) = top(l) {
                assert_eq!(summary(fast), summary(serde_only(l).unwrap()), "{l}");
            }
        }
        let mut m = Message::default();
        assert!(notification_into(lines[5], &mut m).is_none());
        assert!(m.method.is_none() && m.params.thread_id.is_none(), "left as it was");
    }

    /// Lines in the delta shape, and near it: what the delta path reads is what serde reads.
    #[test]
    fn delta_shaped_lines_agree_with_serde() {
        let taken = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a \n \"b\""},"emittedAtMs":1795987208996}"#,
            r#"{"method":"item/reasoning/summaryTextDelta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"x","summaryIndex":2},"emittedAtMs":5} "#,
            r#"{"method":"item/commandExecution/outputDelta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"","contentIndex":0},"emittedAtMs":null}"#,
        ];
        for l in taken {
            let mut m = Message::default();
            assert!(delta_into(l, &mut m).is_some(), "not taken: {l}");
            assert_eq!(summary(top(l).unwrap()), summary(serde_only(l).unwrap()), "{l}");
        }
        let left = [
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"\u00e9"},"emittedAtMs":1}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":null},"emittedAtMs":1}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a","extra":1},"emittedAtMs":1}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1,"id":3}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1.5}"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}x"#,
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}"#,
            r#"{"method":"thread/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"m","delta":"a"},"emittedAtMs":1}"#,
        ];
        for l in left {
            let mut m = Message::default();
            assert!(delta_into(l, &mut m).is_none(), "taken: {l}");
            assert!(m.method.is_none() && m.params.thread_id.is_none(), "written to: {l}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The delta path, on delta-shaped lines with any values in its slots.
        #[test]
        fn delta_path_agrees_with_serde(
            m in slot(&["\"item/agentMessage/delta\"", "\"item/reasoning/summaryTextDelta\"", "\"item/x\\\"y\""]),
            ids in proptest::collection::vec(slot(TEXTS), 4),
            index in prop_oneof![Just(""), Just(",\"summaryIndex\":"), Just(",\"contentIndex\":")],
            n in slot(NUMBERS),
            at in slot(NUMBERS),
        ) {
            let index = if index.is_empty() { String::new() } else { format!("{index}{n}") };
            let line = format!(
                "{{\"method\":{m},\"params\":{{\"threadId\":{},\"turnId\":{},\"itemId\":{},\"delta\":{}{index}}},\"emittedAtMs\":{at}}}",
                ids[0], ids[1], ids[2], ids[3]
            );
            if delta_into(&line, &mut Message::default()).is_some() {
                let fast = top(&line).unwrap();
                let slow = serde_only(&line);
                prop_assert!(slow.is_ok(), "delta path accepted what serde rejects: {line}");
                prop_assert_eq!(summary(fast), summary(slow.unwrap()), "{}", line);
            }
        }

        /// Whenever the fast path accepts a line, serde accepts it too and reads the same fields.
        #[test]
        fn fast_path_agrees_with_serde(
            m in method(),
            members in proptest::collection::vec((key(), value()), 0..6),
            order in any::<bool>(),
            junk in prop_oneof![Just(""), Just(" "), Just("x"), Just("}")],
        ) {
            let mut parts: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let method = format!("\"method\":{m}");
            if order { parts.insert(0, method) } else { parts.push(method) }
            let line = format!("{{{}}}{junk}", parts.join(","));
            if let Some(fast) = top(&line) {
                let slow = serde_only(&line);
                prop_assert!(slow.is_ok(), "fast path accepted what serde rejects: {line}");
                prop_assert_eq!(summary(fast), summary(slow.unwrap()), "{}", line);
            }
        }
    }
}
