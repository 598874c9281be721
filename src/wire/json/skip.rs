//! Where a JSON string, object or array ends, 64 bytes at a time: what a one-pass reader steps
//! over unread (a transcript's tool outputs, a progress line's nested message) is most of its
//! bytes, and stopping at every quote inside it cost more than reading what it wanted.
//!
//! Each block of 64 bytes gives four bit masks (quotes, backslashes, the opening and the closing
//! bracket) from 16-byte compares (`wide`, portable SIMD without `unsafe`). A quote after an odd
//! run of backslashes is escaped; the unescaped quotes' running parity is what lies inside
//! strings; brackets outside strings are counted. The state carried from block to block is one
//! bit each: whether the block starts inside a string, and whether its first byte is escaped.
//!
//! Only the structure is checked, not the grammar: on text that is not JSON (a backslash outside
//! a string) the end found may differ from a parser's, and the reader's next step, not this,
//! fails. `tests` checks it against the one-stop-at-a-time walk it replaces.

use wide::u8x16;

use super::swar;

const BLOCK: usize = 64;
/// Every other bit, from bit 0.
const EVEN: u64 = 0x5555_5555_5555_5555;

/// Bits of the bytes of `block` equal to each of `needles`, 16 bytes at a time (each loaded once).
fn equal<const N: usize>(block: &[u8; BLOCK], needles: [u8; N]) -> [u64; N] {
    let mut bits = [0; N];
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let lane = u8x16::new(lane.try_into().expect("sixteen bytes"));
        for (bits, &c) in bits.iter_mut().zip(&needles) {
            // `move_mask` sets one bit per lane: the low 16 bits.
            let mask = lane.cmp_eq(u8x16::splat(c)).move_mask() & 0xffff;
            *bits |= u64::from(u16::try_from(mask).expect("sixteen bits")) << (16 * k);
        }
    }
    bits
}

/// The 64 bytes at `pos`, padded with spaces past the end (a space is none of the bytes looked for).
fn block_at(b: &[u8], pos: usize) -> [u8; BLOCK] {
    if let Some(full) = b.get(pos..pos + BLOCK) {
        full.try_into().expect("a whole block")
    } else {
        let mut block = [b' '; BLOCK];
        let tail = b.get(pos..).unwrap_or_default();
        block[..tail.len()].copy_from_slice(tail);
        block
    }
}

/// Bits of the bytes a backslash escapes, given the backslashes' bits; `carry` says whether the
/// first byte is escaped (by the previous block's last backslash) and is set for the next block.
/// A run of backslashes escapes the byte after it when its length is odd: a run that starts on an
/// odd bit, added to the backslashes, carries out of the run onto an even bit exactly then.
fn escaped(backslashes: u64, carry: &mut u64) -> u64 {
    let backslashes = backslashes & !*carry;
    let follows_backslash = (backslashes << 1) | *carry;
    let odd_starts = backslashes & !EVEN & !follows_backslash;
    let (even_ends, overflow) = odd_starts.overflowing_add(backslashes);
    *carry = u64::from(overflow);
    (EVEN ^ (even_ends << 1)) & follows_backslash
}

/// Each bit set where an odd number of the bits up to and including it are set: with the
/// unescaped quotes, the bytes inside strings (opening quote included, closing quote not).
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Words of a string looked at for its closing quote before a block is.
const PROBE_WORDS: usize = 4;

/// Where the string whose content starts at `from` (just past its opening quote) ends: past its
/// closing quote.
pub fn string_end(b: &[u8], from: usize) -> Option<usize> {
    // Most strings stepped over are short (ids, times, names): their closing quote is in the
    // first words, found faster so than a block is read.
    let mut i = from;
    while i < from + PROBE_WORDS * 8 {
        let Some(word) = b.get(i..i + 8) else { break };
        let quotes = swar::equal(swar::word(word), b'"');
        if quotes != 0 {
            let quote = i + swar::first(quotes);
            if !after_odd_backslashes(b, quote) {
                return Some(quote + 1);
            }
            break;
        }
        i += 8;
    }
    block_string_end(b, from)
}

/// Whether the quote at `at`, inside a string, is escaped: after an odd run of backslashes.
fn after_odd_backslashes(b: &[u8], at: usize) -> bool {
    b[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// [`string_end`] a block at a time.
fn block_string_end(b: &[u8], from: usize) -> Option<usize> {
    let mut carry = 0;
    let mut pos = from;
    while pos < b.len() {
        let block = block_at(b, pos);
        let [quotes, backslashes] = equal(&block, [b'"', b'\\']);
        let quotes = quotes & !escaped(backslashes, &mut carry);
        if quotes != 0 {
            return Some(pos + quotes.trailing_zeros() as usize + 1);
        }
        pos += BLOCK;
    }
    None
}

/// Where the object or array whose `open` bracket is at `start` ends: past its `close` bracket.
pub fn nested_end(b: &[u8], start: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0u32;
    let mut in_string = 0u64;
    let mut carry = 0;
    let mut pos = start;
    while pos < b.len() {
        let block = block_at(b, pos);
        let [quotes, backslashes, opens, closes] = equal(&block, [b'"', b'\\', open, close]);
        let quotes = quotes & !escaped(backslashes, &mut carry);
        let inside = prefix_xor(quotes) ^ in_string;
        // All ones when the block ends inside a string.
        in_string = 0u64.wrapping_sub(inside >> 63);
        let (opens, closes) = (opens & !inside, closes & !inside);
        if depth > closes.count_ones() {
            // This block cannot close it: only the count matters.
            depth = depth + opens.count_ones() - closes.count_ones();
        } else {
            let mut brackets = opens | closes;
            while brackets != 0 {
                let at = brackets.trailing_zeros();
                if opens >> at & 1 == 1 {
                    depth += 1;
                } else {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(pos + at as usize + 1);
                    }
                }
                brackets &= brackets - 1;
            }
        }
        pos += BLOCK;
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The walk this replaces: one stop at each quote and bracket.
    fn nested_end_walk(b: &[u8], start: usize, open: u8, close: u8) -> Option<usize> {
        let escaped = |at: usize| b[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1;
        let mut depth = 0usize;
        let mut at = start;
        while at < b.len() {
            match b[at] {
                b'"' => {
                    at += 1;
                    while b.get(at) != Some(&b'"') || escaped(at) {
                        b.get(at)?;
                        at += 1;
                    }
                }
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(at + 1);
                    }
                }
                _ => {}
            }
            at += 1;
        }
        None
    }

    /// JSON values whose strings hold quotes, runs of backslashes and brackets, so that escapes
    /// and strings fall across block boundaries.
    fn json() -> impl Strategy<Value = String> {
        let text = proptest::collection::vec(
            prop_oneof![
                Just(r#"\""#),
                Just(r"\\"),
                Just(r#"\\\""#),
                Just(r"\n"),
                Just("{"),
                Just("}"),
                Just("["),
                Just("]"),
                Just("a"),
                Just("日本"),
            ],
            0..24,
        )
        .prop_map(|parts| format!("\"{}\"", parts.concat()));
        let leaf = prop_oneof![text.clone(), Just("12".to_owned()), Just("null".to_owned())];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((text.clone(), inner), 0..6).prop_map(|v| {
                    let members: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn ends_where_the_walk_ends(value in json(), pad in 0usize..70, tail in "[a\"}\\]\\\\ ]{0,70}") {
            let text = format!("{}{value}{tail}", " ".repeat(pad));
            let b = text.as_bytes();
            match b[pad] {
                b'{' => prop_assert_eq!(nested_end(b, pad, b'{', b'}'), nested_end_walk(b, pad, b'{', b'}')),
                b'[' => prop_assert_eq!(nested_end(b, pad, b'[', b']'), nested_end_walk(b, pad, b'[', b']')),
                _ => {}
            }
            if b[pad] == b'"' {
                prop_assert_eq!(string_end(b, pad + 1), Some(pad + value.len()));
            }
            // A value cut short has no end.
            let cut = &b[..pad + value.len() - 1];
            if b[pad] == b'{' {
                prop_assert_eq!(nested_end(cut, pad, b'{', b'}'), None);
            }
        }
    }

    #[test]
    fn runs_of_backslashes_across_blocks() {
        // A run of backslashes ending on the last byte of a block escapes the next block's first.
        for run in 0..130 {
            for at in 50..70 {
                let mut text = vec![b'"'];
                text.extend(std::iter::repeat_n(b'a', at));
                text.extend(std::iter::repeat_n(b'\\', run));
                text.extend_from_slice(br#""x""#);
                let end = string_end(&text, 1).unwrap();
                let first_quote = 1 + at + run;
                assert_eq!(end, if run % 2 == 0 { first_quote + 1 } else { first_quote + 3 }, "run {run} at {at}");
            }
        }
    }

    #[test]
    fn real_lines_end_where_the_walk_ends() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.39/");
        let text = std::fs::read_to_string(format!("{root}4d5611e5-241a-462a-8d15-5122611a9569.jsonl")).unwrap();
        for line in text.lines() {
            let b = line.as_bytes();
            assert_eq!(nested_end(b, 0, b'{', b'}'), Some(b.len()));
            assert_eq!(nested_end_walk(b, 0, b'{', b'}'), Some(b.len()));
        }
    }
}
