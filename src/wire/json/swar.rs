//! Eight bytes at a time, as one word (SWAR): the masks every byte-scanning loop of `wire` (and
//! the tee's validator) is made of. Most strings in agent traffic are keys and ids of 8 to 52
//! bytes, where a word loop is done before a vector search has set up (measured on the Codex
//! scanner: memchr cost +9 % instructions on the capture corpus).
//!
//! A mask has the high bit of a byte set where the byte matches. Masks built on a borrow
//! ([`zero`], [`below`]) are exact in their lowest set byte only (a borrow runs upwards from a
//! match), which is the one a search wants; [`equal_exact`] is exact in every byte.

/// `0x01` in every byte.
pub const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub const HIGHS: u64 = 0x8080_8080_8080_8080;
/// The low seven bits of every byte.
pub const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The eight bytes at the start of `b` as a little-endian word (the first byte lowest).
pub fn word(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("eight bytes"))
}

/// Bytes that are zero: a byte is zero where subtracting one borrows into its clear high bit.
pub fn zero(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Bytes equal to `v` (the lowest exactly).
pub fn equal(x: u64, v: u8) -> u64 {
    zero(x ^ (ONES * u64::from(v)))
}

/// Bytes below `n` (at most 0x80; the lowest exactly).
pub fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS
}

/// Bytes equal to `v`, every one exactly: no borrow runs into the next byte.
pub fn equal_exact(x: u64, v: u8) -> u64 {
    let t = x ^ (ONES * u64::from(v));
    !(((t & LOWS) + LOWS) | t) & HIGHS
}

/// Bytes that end a plain run inside a JSON string: a quote, a backslash, or a control byte
/// (which JSON forbids raw).
pub fn string_stop(x: u64) -> u64 {
    equal(x, b'"') | equal(x, b'\\') | below(x, 0x20)
}

/// The index of the byte a mask's lowest set bit marks.
pub fn first(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// How many bytes of `b` come before its first quote, backslash or control byte; `None` when it
/// has none (an unterminated string).
#[inline]
pub fn plain_len(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let hits = string_stop(word(chunk));
        if hits != 0 {
            return Some(i + first(hits));
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_runs_stop_at_the_first_special_byte() {
        for (s, n) in [
            (&b"abcdefghijklmnop"[..], None),
            (b"abcdefgh\"", Some(8)),
            (b"abc\\defghijkl", Some(3)),
            (b"abcdefghijk\x01", Some(11)),
            (b"\x1f", Some(0)),
            (b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", Some(8)),
            (b"ab\x00\"\\", Some(2)),
            (b"", None),
        ] {
            assert_eq!(plain_len(s), n, "{s:?}");
        }
    }

    #[test]
    fn masks_flag_the_bytes_they_name() {
        let x = word(b"a\"\\\x1fz\x80\x7f ");
        assert_eq!(first(equal(x, b'"')), 1);
        assert_eq!(first(equal(x, b'\\')), 2);
        assert_eq!(first(below(x, 0x20)), 3);
        assert_eq!(equal_exact(x, 0x7f), 0x80 << (8 * 6));
        assert_eq!(zero(word(b"abcdefgh")), 0);
    }
}
