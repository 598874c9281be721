//! How often a person is told: a burst of [`BURST`] notices at once, then one per [`EVERY_MS`]. A
//! swarm of twenty children failing together is one burst and a count, not twenty pop-ups; what is
//! held back is counted, and the next notice told says how many were.

/// Notices told at once after a quiet spell.
pub const BURST: u32 = 3;
/// Then one per this long (ms).
pub const EVERY_MS: u64 = 10_000;

/// A token bucket on a monotonic clock in ms (handed in: the decision is the caller's time).
#[derive(Debug, Clone)]
pub struct Limiter {
    tokens: u32,
    /// When the bucket last gained a token (or started).
    since_ms: Option<u64>,
    /// Held back since the last notice told.
    pub held: u64,
}

impl Default for Limiter {
    fn default() -> Self {
        Self { tokens: BURST, since_ms: None, held: 0 }
    }
}

impl Limiter {
    /// Whether a notice at `now_ms` may be told; if so, how many were held back before it.
    pub fn admit(&mut self, now_ms: u64) -> Option<u64> {
        let since = *self.since_ms.get_or_insert(now_ms);
        let gained = now_ms.saturating_sub(since) / EVERY_MS;
        if gained > 0 {
            self.tokens = self.tokens.saturating_add(u32::try_from(gained).unwrap_or(u32::MAX)).min(BURST);
            self.since_ms = Some(since.saturating_add(gained.saturating_mul(EVERY_MS)));
        }
        if self.tokens == 0 {
            self.held = self.held.saturating_add(1);
            return None;
        }
        self.tokens -= 1;
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_period_and_the_held_ones_counted() {
        let mut l = Limiter::default();
        let told: Vec<Option<u64>> = (0..5).map(|_| l.admit(1_000)).collect();
        assert_eq!(told, [Some(0), Some(0), Some(0), None, None]);
        assert_eq!(l.admit(1_000 + EVERY_MS - 1), None, "not a whole period yet");
        assert_eq!(l.admit(1_000 + EVERY_MS), Some(3), "the three held back are said with the next");
        assert_eq!(l.admit(1_000 + EVERY_MS), None);
        // A long quiet spell refills the burst, no more.
        let later = 1_000 + 100 * EVERY_MS;
        let told: Vec<Option<u64>> = (0..4).map(|_| l.admit(later)).collect();
        assert_eq!(told, [Some(1), Some(0), Some(0), None]);
    }

    #[test]
    fn a_clock_that_goes_back_gives_nothing() {
        let mut l = Limiter::default();
        for _ in 0..3 {
            assert!(l.admit(50_000).is_some());
        }
        assert_eq!(l.admit(0), None);
        assert_eq!(l.admit(u64::MAX), Some(1));
    }
}
