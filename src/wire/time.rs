//! Times as the file formats write them.

/// `2026-02-12T16:02:27.718Z` (or with an offset) to unix ms; `None` when it is not that shape.
/// Read once or more per line of every recording: its fields are read in place, not allocated.
pub fn iso8601_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| int(b.get(r)?);
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let digit = |i: usize| i64::from(b[i].wrapping_sub(b'0'));
    let two = |i: usize| digit(i) * 10 + digit(i + 1);
    // Nearly always every field is digits: read so at once; a sign in a field goes the long way.
    let (year, month, day, hour, minute, second) = if DIGITS.iter().all(|&i| b[i].is_ascii_digit()) {
        (two(0) * 100 + two(2), two(5), two(8), two(11), two(14), two(17))
    } else {
        (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?)
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    // Byte 19 follows two ASCII digits, so it is on a char boundary.
    let mut rest = s.get(19..)?;
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        // The first three digits, as milliseconds (`.7` is 700).
        millis = frac.bytes().take(digits.min(3)).fold(0, |ms, d| ms * 10 + i64::from(d - b'0'));
        for _ in digits..3 {
            millis *= 10;
        }
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = rest[1..].replace(':', "");
            let h: i64 = hm.get(0..2)?.parse().ok()?;
            let m: i64 = hm.get(2..4).map_or(Some(0), |m| m.parse().ok())?;
            sign * (h * 60 + m)
        }
    };
    // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute - offset_min) * 60_000 + second * 1000 + millis)
}

/// Where the digits of `YYYY-MM-DDTHH:MM:SS` are.
const DIGITS: [usize; 14] = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];

/// A field of at most four bytes read as `str::parse::<i64>` reads it: an optional sign, then
/// nothing but (at least one) ASCII digits.
fn int(field: &[u8]) -> Option<i64> {
    let (negative, digits) = match field {
        [b'+', rest @ ..] => (false, rest),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, field),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso8601_ms("2026-02-12T16:02:27.718Z"), Some(1_770_912_147_718));
        assert_eq!(iso8601_ms("2026-02-12T17:02:27.7+01:00"), Some(1_770_912_147_700));
        assert_eq!(iso8601_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(iso8601_ms("yesterday"), None);
    }

    /// The reading before fields were read in place: what the fast one must agree with.
    fn by_parse(s: &str) -> Option<i64> {
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
        if b.len() < 19
            || b[4] != b'-'
            || b[7] != b'-'
            || !matches!(b[10], b'T' | b' ')
            || b[13] != b':'
            || b[16] != b':'
        {
            return None;
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let mut rest = &s[19..];
        let mut millis = 0;
        if let Some(frac) = rest.strip_prefix('.') {
            let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
            let ms: String = frac[..digits].chars().chain("000".chars()).take(3).collect();
            millis = ms.parse().ok()?;
            rest = &frac[digits..];
        }
        let offset_min = match rest {
            "" | "Z" | "z" => 0,
            _ => {
                let sign = match rest.as_bytes()[0] {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let hm = rest[1..].replace(':', "");
                let h: i64 = hm.get(0..2)?.parse().ok()?;
                let m: i64 = hm.get(2..4).map_or(Some(0), |m| m.parse().ok())?;
                sign * (h * 60 + m)
            }
        };
        let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * m + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(((days * 24 + hour) * 60 + minute - offset_min) * 60_000 + second * 1000 + millis)
    }

    proptest::proptest! {
        #[test]
        fn fields_read_in_place_agree_with_parsing_them(
            s in "[0-9+-]{4}-[0-9+-é]{2}-[0-9+-]{2}[T ][0-9+-]{2}:[0-9+-]{2}:[0-9+-]{2}(\\.[0-9]{0,5})?(Z|z|[+-][0-9:]{0,6}|é|x)?"
        ) {
            proptest::prop_assert_eq!(iso8601_ms(&s), by_parse(&s));
        }
    }
}
