//! When to draw and when to wake, as a pure function of instants passed in: handlers only mark
//! the screen dirty; a frame is drawn when something is dirty and the last frame is at least one
//! interval old; and with nothing dirty the loop sleeps until the next tick (clocks, elapsed
//! times and `stalled` move on their own). No clock is read here, so the schedule is tested by
//! handing it instants.

use std::time::{Duration, Instant};

/// Longest stretch of ingest between two looks at the keyboard and the frame clock: a key is
/// answered within a frame however fast lines come (replay at `max`, a burst on a pipe).
pub const INGEST_SLICE: Duration = Duration::from_millis(8);
/// Lines applied between two looks at the slice's clock (and two burn-rate samples).
pub const INGEST_CHUNK: usize = 256;

/// At most this share of the time goes to drawing: a frame that took long (the machine view
/// regrouping 50,000 sessions while they load) waits this many times its cost before the next,
/// so that ingest goes on between frames instead of drawing without end.
pub const DRAW_SHARE: u32 = 4;

#[derive(Debug, Clone)]
pub struct FrameClock {
    interval: Duration,
    tick: Duration,
    last_draw: Option<Instant>,
    /// What the last frame cost.
    last_cost: Duration,
    next_tick: Instant,
}

impl FrameClock {
    /// At most `fps` frames a second; a redraw every `tick` with nothing new.
    pub fn new(fps: u32, tick: Duration, now: Instant) -> Self {
        let interval = Duration::from_secs_f64(1.0 / f64::from(fps.max(1)));
        Self { interval, tick, last_draw: None, last_cost: Duration::ZERO, next_tick: now + tick }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The earliest instant the next frame may be drawn: an interval after the last one, or
    /// [`DRAW_SHARE`] times its cost when that is longer.
    pub fn frame_at(&self) -> Option<Instant> {
        self.last_draw.map(|t| t + self.interval.max(self.last_cost * DRAW_SHARE))
    }

    /// Whether a tick is due: time-driven parts of the screen need a new frame.
    pub fn tick_due(&self, now: Instant) -> bool {
        now >= self.next_tick
    }

    /// Notes a tick taken; the next one is a tick from now.
    pub fn ticked(&mut self, now: Instant) {
        self.next_tick = now + self.tick;
    }

    /// Whether to draw now: something changed and the frame interval has passed.
    pub fn due(&self, dirty: bool, now: Instant) -> bool {
        dirty && self.frame_at().is_none_or(|at| now >= at)
    }

    pub fn drawn(&mut self, now: Instant) {
        self.last_draw = Some(now);
    }

    /// A frame drawn at `now` that took `cost`.
    pub fn drawn_in(&mut self, now: Instant, cost: Duration) {
        self.last_draw = Some(now);
        self.last_cost = cost;
    }

    /// When the loop must wake by itself: the next frame if something waits to be drawn, else
    /// the next tick; `other` is the sources' own deadline (a replay line falling due).
    pub fn next_wake(&self, dirty: bool, now: Instant, other: Option<Instant>) -> Instant {
        let mut wake = self.next_tick;
        if dirty {
            wake = wake.min(self.frame_at().map_or(now, |at| at.max(now)));
        }
        if let Some(other) = other {
            wake = wake.min(other.max(now));
        }
        wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn draws_at_most_once_per_interval() {
        let t0 = Instant::now();
        let mut c = FrameClock::new(50, ms(1000), t0);
        assert_eq!(c.interval(), ms(20));
        assert!(c.due(true, t0), "the first frame is due at once");
        assert!(!c.due(false, t0), "nothing dirty: nothing to draw");
        c.drawn(t0);
        assert!(!c.due(true, t0 + ms(19)));
        assert!(c.due(true, t0 + ms(20)));
        assert_eq!(c.next_wake(true, t0 + ms(5), None), t0 + ms(20), "dirty: wake for the next frame");
    }

    #[test]
    fn a_costly_frame_leaves_time_for_the_rest() {
        let t0 = Instant::now();
        let mut c = FrameClock::new(50, ms(1000), t0);
        c.drawn_in(t0, ms(30));
        assert!(!c.due(true, t0 + ms(119)), "a 30 ms frame waits 4 × 30 ms, not 20 ms");
        assert!(c.due(true, t0 + ms(120)));
        c.drawn_in(t0 + ms(120), ms(1));
        assert!(c.due(true, t0 + ms(140)), "cheap again: the interval rules");
    }

    #[test]
    fn sleeps_until_the_tick_with_nothing_to_do() {
        let t0 = Instant::now();
        let mut c = FrameClock::new(30, ms(1000), t0);
        c.drawn(t0);
        assert_eq!(c.next_wake(false, t0 + ms(100), None), t0 + ms(1000));
        assert!(!c.tick_due(t0 + ms(999)));
        assert!(c.tick_due(t0 + ms(1000)));
        c.ticked(t0 + ms(1000));
        assert_eq!(c.next_wake(false, t0 + ms(1000), None), t0 + ms(2000));
    }

    #[test]
    fn a_source_deadline_wakes_earlier_never_in_the_past() {
        let t0 = Instant::now();
        let mut c = FrameClock::new(30, ms(1000), t0);
        c.drawn(t0);
        assert_eq!(c.next_wake(false, t0 + ms(10), Some(t0 + ms(300))), t0 + ms(300));
        assert_eq!(c.next_wake(false, t0 + ms(10), Some(t0)), t0 + ms(10), "an overdue line: wake now");
        // Dirty long after the last frame: draw at once, not at an instant already past.
        assert_eq!(c.next_wake(true, t0 + ms(500), None), t0 + ms(500));
    }
}
