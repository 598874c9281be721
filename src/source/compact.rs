//! A replay's per-record numbers, held in a byte or two each (issue 22): a 2 GB recording has
//! millions of records, and eight or sixteen bytes a record for its time and its pacing offset
//! made the monitor's memory grow with the recording. Both are stored as LEB128 varints of the
//! step from the record before: records a few milliseconds apart take one byte.

/// Values a [`Steps`] keeps the running value of, for reading one back without decoding from
/// the start: the cost of reading a value, against 16 bytes of mark per this many values.
const MARK_EVERY: usize = 128;

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

/// A step of a [`Steps`]: pushed as a `u64`, so it fits.
fn step(bytes: &[u8], at: &mut usize) -> u64 {
    u64::try_from(take(bytes, at)).unwrap_or(u64::MAX)
}

/// Non-decreasing values (a replay's offsets), any one read back by its index.
#[derive(Debug, Default, Clone)]
pub struct Steps {
    bytes: Vec<u8>,
    /// Every [`MARK_EVERY`]th value's byte position and value.
    marks: Vec<(usize, u64)>,
    len: usize,
    last: u64,
}

impl Steps {
    /// Appends `v`; a value below the last is taken as the last (the sequence never goes back).
    pub fn push(&mut self, v: u64) {
        let v = v.max(self.last);
        if self.len % MARK_EVERY == 0 {
            self.marks.push((self.bytes.len(), self.last));
        }
        put(&mut self.bytes, u128::from(v - self.last));
        self.last = v;
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last value (0 when empty).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Value `i`, or the last when `i` is past the end.
    pub fn get(&self, i: usize) -> u64 {
        if i >= self.len {
            return self.last;
        }
        let (mut at, mut v) = self.marks[i / MARK_EVERY];
        for _ in 0..=i % MARK_EVERY {
            v += step(&self.bytes, &mut at);
        }
        v
    }

    /// The first index whose value is not `below` (all values are before it): as
    /// `slice::partition_point`, values being sorted.
    pub fn partition(&self, below: impl Fn(u64) -> bool) -> usize {
        // The first mark's first value past the bound ends the search; the block before holds it.
        let block = self.marks.partition_point(|&(at, v)| {
            let mut at = at;
            below(v + step(&self.bytes, &mut at))
        });
        let Some(block) = block.checked_sub(1) else { return 0 };
        let (mut at, mut v) = self.marks[block];
        let start = block * MARK_EVERY;
        for i in start..self.len.min(start + MARK_EVERY) {
            v += step(&self.bytes, &mut at);
            if !below(v) {
                return i;
            }
        }
        self.len.min(start + MARK_EVERY)
    }
}

/// Record times (unix ms, or none) in order, read back in order: zig-zag steps from the last
/// known time, 0 for none.
#[derive(Debug, Default, Clone)]
pub struct Times {
    bytes: Vec<u8>,
    len: usize,
    last: i64,
}

impl Times {
    pub fn push(&mut self, t: Option<i64>) {
        self.len += 1;
        let Some(t) = t else {
            self.bytes.push(0);
            return;
        };
        let step = t.wrapping_sub(self.last);
        // Zig-zag: small steps either way take few bytes; 0 is kept for "none" (so the step is
        // widened: every `u64` is some step).
        let zigzag = u64::from_ne_bytes(((step << 1) ^ (step >> 63)).to_ne_bytes());
        put(&mut self.bytes, u128::from(zigzag) + 1);
        self.last = t;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        let mut at = 0;
        let mut last = 0i64;
        (0..self.len).map(move |_| {
            let v = take(&self.bytes, &mut at);
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
        fn steps_read_back_and_partition_as_a_slice(steps in proptest::collection::vec(0u64..5000, 0..700), probe in 0u64..2_000_000) {
            let mut log = Steps::default();
            let mut values = Vec::new();
            let mut v = 0;
            for s in steps {
                v += s;
                values.push(v);
                log.push(v);
            }
            for (i, &want) in values.iter().enumerate() {
                prop_assert_eq!(log.get(i), want);
            }
            prop_assert_eq!(log.get(values.len()), values.last().copied().unwrap_or(0));
            prop_assert_eq!(log.partition(|o| o <= probe), values.partition_point(|&o| o <= probe));
            prop_assert_eq!(log.partition(|o| o < probe), values.partition_point(|&o| o < probe));
        }
    }

    #[test]
    fn steps_of_a_few_milliseconds_take_a_byte() {
        let mut log = Steps::default();
        for i in 0..10_000 {
            log.push(i * 37);
        }
        assert!(log.bytes.len() <= 10_000);
    }
}
