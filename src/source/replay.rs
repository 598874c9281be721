//! Replay pacing: when each recorded line is due, at a speed, with idle gaps capped, paused,
//! stepped and sought. Pure: the caller passes each line's recorded time and the wall-clock
//! instants, so pacing is tested without sleeping.

use std::time::{Duration, Instant};

use super::compact::Steps;

/// Replay speed: a multiple of recorded time, or as fast as ingest allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    Times(u32),
    Max,
}

impl Pace {
    /// The speeds `+`/`-` move between.
    const LADDER: [Pace; 6] =
        [Pace::Times(1), Pace::Times(2), Pace::Times(5), Pace::Times(10), Pace::Times(50), Pace::Max];

    #[must_use]
    pub fn faster(self) -> Self {
        let i = Self::LADDER.iter().position(|&p| p == self).unwrap_or(0);
        Self::LADDER[(i + 1).min(Self::LADDER.len() - 1)]
    }

    #[must_use]
    pub fn slower(self) -> Self {
        let i = Self::LADDER.iter().position(|&p| p == self).unwrap_or(0);
        Self::LADDER[i.saturating_sub(1)]
    }

    pub fn label(self) -> String {
        match self {
            Self::Times(n) => format!("{n}×"),
            Self::Max => "max".to_owned(),
        }
    }
}

/// The schedule of a recording: line `i` is due `offset_ms.get(i)` after the first, in replay
/// time. The offsets are held as steps of a byte or so a line ([`Steps`]): a long recording's
/// schedule would otherwise grow the monitor's memory by eight bytes a line.
#[derive(Debug)]
pub struct Replay {
    offset_ms: Steps,
    /// Lines applied so far (the next line to apply is `position`).
    position: usize,
    pace: Pace,
    paused: bool,
    /// Replay time and wall time at the last (re)anchoring: after a pause, a seek or a speed change.
    anchor: (u64, Instant),
    /// A seek under way: every line before this position is due at once, paused or not, and is
    /// applied through the same bounded slices as playback.
    seek: Option<usize>,
}

impl Replay {
    /// `times` are the lines' recorded times (unix ms; `None` when a line has none); a gap between
    /// two known times longer than `max_gap_ms` is shortened to it.
    pub fn new(times: impl IntoIterator<Item = Option<i64>>, max_gap_ms: u64, pace: Pace, now: Instant) -> Self {
        let mut offset_ms = Steps::default();
        let (mut offset, mut last): (u64, Option<i64>) = (0, None);
        for t in times {
            if let (Some(t), Some(prev)) = (t, last) {
                // Time can go backwards between interleaved sources: never pace backwards.
                let gap = u64::try_from(t - prev).unwrap_or(0);
                offset += gap.min(max_gap_ms);
            }
            if t.is_some() {
                last = last.max(t);
            }
            offset_ms.push(offset);
        }
        Self { offset_ms, position: 0, pace, paused: false, anchor: (0, now), seek: None }
    }

    pub fn len(&self) -> usize {
        self.offset_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offset_ms.is_empty()
    }

    pub fn position(&self) -> usize {
        self.position
    }

    pub fn is_done(&self) -> bool {
        self.position >= self.offset_ms.len()
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// Total replay time (ms at 1×), gaps capped.
    pub fn duration_ms(&self) -> u64 {
        self.offset_ms.last()
    }

    /// Replay time reached (ms at 1×).
    pub fn elapsed_ms(&self) -> u64 {
        self.position.checked_sub(1).map_or(0, |i| self.offset_ms.get(i))
    }

    fn clock_ms(&self, now: Instant) -> u64 {
        if self.paused {
            return self.anchor.0;
        }
        let wall = now.saturating_duration_since(self.anchor.1).as_millis() as u64;
        match self.pace {
            Pace::Times(n) => self.anchor.0 + wall * u64::from(n),
            Pace::Max => u64::MAX,
        }
    }

    /// Replay time now, held between the last applied line and the next one, so a pause or a
    /// speed change keeps the progress made towards the next line.
    fn current_ms(&self, now: Instant) -> u64 {
        let next = self.offset_ms.get(self.position);
        self.clock_ms(now).min(next).max(self.elapsed_ms())
    }

    /// Replay time gone since the last line applied, held at the next line's: a replay's clock
    /// moves on between lines as a live view's does (at 1×, one second a second).
    pub fn since_last_ms(&self, now: Instant) -> u64 {
        self.current_ms(now).saturating_sub(self.elapsed_ms())
    }

    fn reanchor(&mut self, now: Instant) {
        self.anchor = (self.current_ms(now), now);
    }

    /// How many lines are due now (to be applied by the caller, who then calls `advance`).
    pub fn due(&self, now: Instant) -> usize {
        if let Some(target) = self.seek {
            return target.saturating_sub(self.position);
        }
        if self.paused || self.is_done() {
            return 0;
        }
        let clock = self.clock_ms(now);
        // Offsets never go back: the lines due from here are those due at all, less those applied.
        self.offset_ms.partition(|o| o <= clock).saturating_sub(self.position)
    }

    /// Marks `n` lines as applied.
    pub fn advance(&mut self, n: usize) {
        self.position = (self.position + n).min(self.offset_ms.len());
        if self.seek.is_some_and(|t| self.position >= t) {
            self.seek = None;
        }
    }

    /// Starts a seek to an absolute position at or after the current one: the lines between
    /// fall due at once (see [`Self::due`]); playback goes on from there at its pace.
    pub fn seek_to(&mut self, target: usize, now: Instant) {
        let target = target.min(self.offset_ms.len());
        if target <= self.position {
            return;
        }
        self.seek = Some(target);
        self.anchor = (self.offset_ms.get(target - 1), now);
    }

    /// Whether a seek is still being applied.
    pub fn seeking(&self) -> bool {
        self.seek.is_some()
    }

    /// Replay time of line `i` (ms at 1×, gaps capped).
    pub fn offset_of(&self, i: usize) -> u64 {
        self.offset_ms.get(i)
    }

    /// The first line at or after a replay time.
    pub fn position_at(&self, ms: u64) -> usize {
        self.offset_ms.partition(|o| o < ms)
    }

    /// When the next line falls due, if it is not due already (none while paused, done or at max).
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.seek.is_some() {
            return Some(self.anchor.1);
        }
        if self.paused || self.is_done() {
            return None;
        }
        match self.pace {
            Pace::Max => None,
            Pace::Times(n) => {
                let wait = self.offset_ms.get(self.position).saturating_sub(self.anchor.0) / u64::from(n);
                Some(self.anchor.1 + Duration::from_millis(wait))
            }
        }
    }

    pub fn toggle_pause(&mut self, now: Instant) {
        self.reanchor(now);
        self.paused = !self.paused;
    }

    pub fn set_pace(&mut self, pace: Pace, now: Instant) {
        self.pace = pace;
        self.reanchor(now);
    }

    /// The position `delta_ms` of replay time away from here (for `[` / `]`). A seek backwards
    /// means the caller rebuilds its model from the start: the reducer is deterministic.
    pub fn seek_target(&self, delta_ms: i64) -> usize {
        let here = self.elapsed_ms();
        let target = if delta_ms < 0 { here.saturating_sub(delta_ms.unsigned_abs()) } else { here + delta_ms as u64 };
        if delta_ms < 0 {
            // Land on the first line at or after the target time, but always move back.
            self.offset_ms.partition(|o| o < target).min(self.position.saturating_sub(1))
        } else {
            self.offset_ms.partition(|o| o <= target).max((self.position + 1).min(self.len()))
        }
    }

    /// Lines appended to a followed file and applied at once: they are due the moment they exist.
    pub fn append_applied(&mut self, n: usize, now: Instant) {
        let end = self.duration_ms();
        for _ in 0..n {
            self.offset_ms.push(end);
        }
        self.position = self.offset_ms.len();
        self.anchor = (end, now);
    }

    /// Moves to an absolute position (the caller has applied exactly that many lines).
    pub fn jump(&mut self, position: usize, now: Instant) {
        self.seek = None;
        self.position = position.min(self.offset_ms.len());
        self.anchor = (self.elapsed_ms(), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn lines_fall_due_at_their_recorded_offsets() {
        let t0 = Instant::now();
        let r = Replay::new([Some(1000), Some(1000), Some(1500), None, Some(3000)], 60_000, Pace::Times(1), t0);
        assert_eq!(r.due(t0), 2);
        assert_eq!(r.due(t0 + ms(499)), 2);
        assert_eq!(r.due(t0 + ms(500)), 4, "a line without time follows the one before");
        assert_eq!(r.due(t0 + ms(2000)), 5);
    }

    #[test]
    fn idle_gaps_are_capped() {
        let t0 = Instant::now();
        let r = Replay::new([Some(0), Some(3_600_000), Some(3_600_100)], 2000, Pace::Times(1), t0);
        assert_eq!(r.duration_ms(), 2100);
    }

    #[test]
    fn speed_divides_waiting() {
        let t0 = Instant::now();
        let mut r = Replay::new([Some(0), Some(10_000)], 60_000, Pace::Times(10), t0);
        r.advance(r.due(t0));
        assert_eq!(r.next_deadline(), Some(t0 + ms(1000)));
        assert_eq!(r.due(t0 + ms(1000)), 1);
        r.set_pace(Pace::Max, t0);
        assert_eq!(r.due(t0), 1);
        assert_eq!(r.next_deadline(), None);
    }

    #[test]
    fn pause_stops_the_clock() {
        let t0 = Instant::now();
        let mut r = Replay::new([Some(0), Some(1000)], 60_000, Pace::Times(1), t0);
        r.advance(r.due(t0));
        r.toggle_pause(t0 + ms(500));
        assert_eq!(r.due(t0 + ms(5000)), 0);
        r.toggle_pause(t0 + ms(5000));
        // 500 ms had passed before the pause, so 500 remain.
        assert_eq!(r.next_deadline(), Some(t0 + ms(5500)));
        assert_eq!(r.due(t0 + ms(5499)), 0);
        assert_eq!(r.due(t0 + ms(5500)), 1);
    }

    #[test]
    fn seeking_moves_by_replay_time() {
        let t0 = Instant::now();
        let times: Vec<Option<i64>> = (0..100).map(|i| Some(i * 1000)).collect();
        let mut r = Replay::new(times.iter().copied(), 60_000, Pace::Times(1), t0);
        r.jump(50, t0);
        assert_eq!(r.elapsed_ms(), 49_000);
        assert_eq!(r.seek_target(10_000), 60);
        assert_eq!(r.seek_target(-10_000), 39);
        r.jump(100, t0);
        assert!(r.is_done());
        assert_eq!(r.seek_target(10_000), 100);
    }

    #[test]
    fn followed_lines_are_applied_as_they_come() {
        let t0 = Instant::now();
        let mut r = Replay::new([Some(0), Some(500)], 60_000, Pace::Times(1), t0);
        r.advance(r.due(t0 + ms(500)));
        r.append_applied(3, t0 + ms(900));
        assert_eq!((r.position(), r.len(), r.is_done()), (5, 5, true));
        assert_eq!(r.elapsed_ms(), 500);
    }

    #[test]
    fn a_seek_is_due_at_once_even_paused_then_playback_resumes() {
        let t0 = Instant::now();
        let times: Vec<Option<i64>> = (0..100).map(|i| Some(i * 1000)).collect();
        let mut r = Replay::new(times.iter().copied(), 60_000, Pace::Times(1), t0);
        r.toggle_pause(t0);
        r.seek_to(40, t0);
        assert_eq!(r.due(t0), 40, "paused, the seek's lines are due anyway");
        r.advance(16);
        assert!(r.seeking());
        assert_eq!(r.due(t0), 24, "a seek goes in slices: what is left stays due");
        r.advance(24);
        assert!(!r.seeking());
        assert_eq!(r.due(t0 + ms(5000)), 0, "paused again once the seek is done");
        assert_eq!(r.elapsed_ms(), 39_000);
        assert_eq!((r.position_at(10_000), r.offset_of(10)), (10, 10_000));
    }

    #[test]
    fn pace_ladder() {
        assert_eq!(Pace::Times(1).faster(), Pace::Times(2));
        assert_eq!(Pace::Max.faster(), Pace::Max);
        assert_eq!(Pace::Times(1).slower(), Pace::Times(1));
        assert_eq!(Pace::Times(10).slower().label(), "5×");
    }
}
