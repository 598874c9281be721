//! A recording's record times, held in a byte or two each until the replay's schedule is made
//! of them (issue 22): a 2 GB recording has millions of records, and sixteen bytes a record for
//! its time made the monitor's memory grow with the recording. They are stored as LEB128 varints
//! of the step from the record before: records a few milliseconds apart take one byte.

fn put(bytes: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        bytes.push((v as u8) | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
}

/// Reads the varint at `*at`, moving `*at` past it (0 past the end: never panics).
fn take(bytes: &[u8], at: &mut usize) -> u128 {
    let mut v = 0u128;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        if shift < 128 {
            v |= u128::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    v
}

/// Bytes of one chunk of a [`Times`]: the log grows a chunk at a time. Grown as one buffer, it
/// was copied into one twice its size now and then, both held at once, and the allocator kept the
/// room given back after (the 2 GB long session's load peaked at twice its times' size).
const CHUNK: usize = 64 << 10;
/// The longest varint [`put`] writes (a `u128`'s): a value is never split between chunks.
const LONGEST: usize = 19;

/// Record times (unix ms, or none) in order, read back in order: zig-zag steps from the last
/// known time, 0 for none.
#[derive(Debug, Default, Clone)]
pub struct Times {
    chunks: Vec<Vec<u8>>,
    len: usize,
    last: i64,
}

impl Times {
    pub fn push(&mut self, t: Option<i64>) {
        self.len += 1;
        if self.chunks.last().is_none_or(|c| c.len() + LONGEST > CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let Some(bytes) = self.chunks.last_mut() else { return };
        let Some(t) = t else {
            bytes.push(0);
            return;
        };
        let step = t.wrapping_sub(self.last);
        // Zig-zag: small steps either way take few bytes; 0 is kept for "none" (so the step is
        // widened: every `u64` is some step).
        let zigzag = u64::from_ne_bytes(((step << 1) ^ (step >> 63)).to_ne_bytes());
        put(bytes, u128::from(zigzag) + 1);
        self.last = t;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        let (mut chunk, mut at) = (0, 0);
        let mut last = 0i64;
        (0..self.len).map(move |_| {
            while self.chunks.get(chunk).is_some_and(|c| at >= c.len()) {
                (chunk, at) = (chunk + 1, 0);
            }
            let v = self.chunks.get(chunk).map_or(0, |c| take(c, &mut at));
            let zigzag = u64::try_from(v.checked_sub(1)?).unwrap_or(u64::MAX);
            let step = i64::try_from(zigzag >> 1).unwrap_or(0) ^ -i64::from(zigzag & 1 == 1);
            last = last.wrapping_add(step);
            Some(last)
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn times_read_back_as_pushed(times in proptest::collection::vec(proptest::option::of(any::<i64>()), 0..600)) {
            let mut log = Times::default();
            for &t in &times {
                log.push(t);
            }
            prop_assert_eq!(log.len(), times.len());
            prop_assert_eq!(log.iter().collect::<Vec<_>>(), times);
        }

        #[test]
        fn times_read_back_across_chunks(steps in proptest::collection::vec(proptest::option::of(-40i64..100_000), 0..40_000)) {
            let mut now = 0i64;
            let times: Vec<Option<i64>> = steps.iter().map(|s| s.map(|s| { now += s; now })).collect();
            let mut log = Times::default();
            for &t in &times {
                log.push(t);
            }
            prop_assert_eq!(log.iter().collect::<Vec<_>>(), times);
        }
    }
}
