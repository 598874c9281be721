//! Replay pacing: when each recorded line is due, at a speed, with idle gaps capped, paused,
//! stepped and sought. Pure: the caller passes the lines' recorded times (once, and again a block
//! at a time when asked: [`LineTimes`]) and the wall-clock instants, so pacing is tested without
//! sleeping.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::time::{Duration, Instant};

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

/// The longest idle gap replayed as it was, unless told otherwise (`--max-gap`).
pub const DEFAULT_MAX_GAP_MS: u64 = 2_000;

/// Lines of one block of the schedule: a mark a block is kept, and the offsets of a block are
/// worked out again from its lines' times when pacing reaches it (a recording's own marks,
/// [`super::recorded`], are as far apart: reading a block back starts at one).
const BLOCK: usize = 1024;
/// Blocks whose offsets are held at once: the lines about the position (the last applied, the
/// next), where the clock has got to, and where a seek looks.
const HELD_BLOCKS: usize = 4;

/// Where the times of a replay's lines are read back from (unix ms, `None` for a line without
/// one): the recording, its records read again.
pub trait LineTimes {
    /// Calls `visit` with the time of each line of `lines`, in order.
    fn each_time(&self, lines: Range<usize>, visit: &mut dyn FnMut(Option<i64>));
}

impl LineTimes for [Option<i64>] {
    fn each_time(&self, lines: Range<usize>, visit: &mut dyn FnMut(Option<i64>)) {
        let end = lines.end.min(self.len());
        for &t in &self[lines.start.min(end)..end] {
            visit(t);
        }
    }
}

/// The schedule where a block starts: its first line's offset, and the latest time known by then.
#[derive(Debug, Clone, Copy)]
struct Mark {
    offset: u64,
    last: Option<i64>,
}

/// The offsets of one block, worked out.
#[derive(Debug)]
struct Block {
    index: usize,
    offsets: Vec<u64>,
    /// When it was last used, to put the least recently used out.
    used: u64,
}

/// The schedule of a recording: line `i` is due `offset_of(i)` after the first, in replay time.
/// Nothing is held per line (issue 22: a byte a line for the offsets grew the monitor's memory
/// with the recording): a mark a [`BLOCK`] of lines, and the offsets of the few blocks pacing is
/// at, worked out again from the lines' times ([`LineTimes`]) as it reaches them.
#[derive(Debug)]
pub struct Replay {
    marks: Vec<Mark>,
    /// Lines scheduled by their times; lines appended after them are due at `duration`.
    timed: usize,
    len: usize,
    /// The last line's offset.
    duration: u64,
    max_gap_ms: u64,
    held: RefCell<Vec<Block>>,
    uses: Cell<u64>,
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

/// Replay time after a line at `t`, from `offset` with `last` the latest time before it; a gap
/// between two known times longer than `max_gap_ms` is shortened to it.
fn step(offset: u64, last: &mut Option<i64>, t: Option<i64>, max_gap_ms: u64) -> u64 {
    let mut offset = offset;
    if let (Some(t), Some(prev)) = (t, *last) {
        // Time can go backwards between interleaved sources: never pace backwards.
        let gap = u64::try_from(t - prev).unwrap_or(0);
        offset += gap.min(max_gap_ms);
    }
    if t.is_some() {
        *last = (*last).max(t);
    }
    offset
}

/// A replay's schedule as its lines' times come, one at a time: a mark a [`BLOCK`] of lines, and
/// where the last line falls. A recording builds it while it loads (issue 22: a times log of a
/// byte a record, held until the schedule was made of it, grew the monitor with the recording).
#[derive(Debug)]
pub struct Schedule {
    marks: Vec<Mark>,
    offset: u64,
    last: Option<i64>,
    len: usize,
    max_gap_ms: u64,
}

impl Schedule {
    /// A gap between two known times longer than `max_gap_ms` is shortened to it.
    pub fn new(max_gap_ms: u64) -> Self {
        Self { marks: Vec::new(), offset: 0, last: None, len: 0, max_gap_ms }
    }

    /// The next line, at `t` (unix ms; `None` when it has none).
    pub fn push(&mut self, t: Option<i64>) {
        self.offset = step(self.offset, &mut self.last, t, self.max_gap_ms);
        if self.len % BLOCK == 0 {
            self.marks.push(Mark { offset: self.offset, last: self.last });
        }
        self.len += 1;
    }

    pub fn max_gap_ms(&self) -> u64 {
        self.max_gap_ms
    }
}

impl Replay {
    /// `times` are the lines' recorded times (unix ms; `None` when a line has none), the same as
    /// `LineTimes` reads back later; a gap between two known times longer than `max_gap_ms` is
    /// shortened to it.
    pub fn new(times: impl IntoIterator<Item = Option<i64>>, max_gap_ms: u64, pace: Pace, now: Instant) -> Self {
        let mut schedule = Schedule::new(max_gap_ms);
        for t in times {
            schedule.push(t);
        }
        Self::from_schedule(schedule, pace, now)
    }

    /// The replay of the lines `schedule` was given, their times read back as the same
    /// `LineTimes` later.
    pub fn from_schedule(schedule: Schedule, pace: Pace, now: Instant) -> Self {
        let Schedule { mut marks, offset, len, max_gap_ms, .. } = schedule;
        // Pushed one by one, they would be held at up to twice their room for the whole replay.
        marks.shrink_to_fit();
        Self {
            marks,
            timed: len,
            len,
            duration: offset,
            max_gap_ms,
            held: RefCell::new(Vec::new()),
            uses: Cell::new(0),
            position: 0,
            pace,
            paused: false,
            anchor: (0, now),
            seek: None,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn position(&self) -> usize {
        self.position
    }

    pub fn is_done(&self) -> bool {
        self.position >= self.len
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// Total replay time (ms at 1×), gaps capped.
    pub fn duration_ms(&self) -> u64 {
        self.duration
    }

    /// Replay time of line `i` (ms at 1×, gaps capped); the last line's past the end.
    pub fn offset_of(&self, i: usize, times: &(impl LineTimes + ?Sized)) -> u64 {
        if i >= self.timed {
            return self.duration;
        }
        self.with_block(i / BLOCK, times, |offsets| offsets.get(i % BLOCK).copied().unwrap_or(self.duration))
    }

    /// Runs `f` on the offsets of block `index`, worked out from its lines' times unless held.
    fn with_block<T>(&self, index: usize, times: &(impl LineTimes + ?Sized), f: impl FnOnce(&[u64]) -> T) -> T {
        let used = self.uses.get() + 1;
        self.uses.set(used);
        let mut held = self.held.borrow_mut();
        if let Some(b) = held.iter_mut().find(|b| b.index == index) {
            b.used = used;
            return f(&b.offsets);
        }
        let offsets = self.work_out(index, times);
        if held.len() >= HELD_BLOCKS
            && let Some(oldest) = held.iter().enumerate().min_by_key(|(_, b)| b.used).map(|(i, _)| i)
        {
            held.swap_remove(oldest);
        }
        held.push(Block { index, offsets, used });
        f(&held.last().expect("just pushed").offsets)
    }

    /// The offsets of the timed lines of block `index`, from its mark and its lines' times.
    fn work_out(&self, index: usize, times: &(impl LineTimes + ?Sized)) -> Vec<u64> {
        let Some(&Mark { offset, mut last }) = self.marks.get(index) else { return Vec::new() };
        let lines = index * BLOCK..((index + 1) * BLOCK).min(self.timed);
        let mut offsets = Vec::with_capacity(lines.len());
        offsets.push(offset);
        let mut at = offset;
        let mut first = true;
        times.each_time(lines.clone(), &mut |t| {
            // The mark holds the first line's offset and time already.
            if std::mem::take(&mut first) {
                return;
            }
            if offsets.len() < lines.len() {
                at = step(at, &mut last, t, self.max_gap_ms);
                offsets.push(at);
            }
        });
        // Lines that could not be read back again (the file changed under the replay) are due
        // with the last one read.
        offsets.resize(lines.len(), at);
        offsets
    }

    /// The first line whose offset is not `below` (offsets never go back): as
    /// `slice::partition_point` over the offsets.
    fn partition(&self, times: &(impl LineTimes + ?Sized), below: impl Fn(u64) -> bool) -> usize {
        if self.timed < self.len && below(self.duration) {
            return self.len;
        }
        // The first mark past the bound ends the search; the block before holds the line.
        let Some(index) = self.marks.partition_point(|m| below(m.offset)).checked_sub(1) else { return 0 };
        let start = index * BLOCK;
        start + self.with_block(index, times, |offsets| offsets.partition_point(|&o| below(o)))
    }

    /// Replay time reached (ms at 1×).
    pub fn elapsed_ms(&self, times: &(impl LineTimes + ?Sized)) -> u64 {
        self.position.checked_sub(1).map_or(0, |i| self.offset_of(i, times))
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
    fn current_ms(&self, now: Instant, times: &(impl LineTimes + ?Sized)) -> u64 {
        let next = self.offset_of(self.position, times);
        self.clock_ms(now).min(next).max(self.elapsed_ms(times))
    }

    /// Replay time gone since the last line applied, held at the next line's: a replay's clock
    /// moves on between lines as a live view's does (at 1×, one second a second).
    pub fn since_last_ms(&self, now: Instant, times: &(impl LineTimes + ?Sized)) -> u64 {
        self.current_ms(now, times).saturating_sub(self.elapsed_ms(times))
    }

    fn reanchor(&mut self, now: Instant, times: &(impl LineTimes + ?Sized)) {
        self.anchor = (self.current_ms(now, times), now);
    }

    /// How many lines are due now (to be applied by the caller, who then calls `advance`).
    pub fn due(&self, now: Instant, times: &(impl LineTimes + ?Sized)) -> usize {
        if let Some(target) = self.seek {
            return target.saturating_sub(self.position);
        }
        if self.paused || self.is_done() {
            return 0;
        }
        if self.pace == Pace::Max {
            return self.len - self.position;
        }
        let clock = self.clock_ms(now);
        // Offsets never go back: the lines due from here are those due at all, less those applied.
        self.partition(times, |o| o <= clock).saturating_sub(self.position)
    }

    /// Marks `n` lines as applied.
    pub fn advance(&mut self, n: usize) {
        self.position = (self.position + n).min(self.len);
        if self.seek.is_some_and(|t| self.position >= t) {
            self.seek = None;
        }
    }

    /// Starts a seek to an absolute position at or after the current one: the lines between
    /// fall due at once (see [`Self::due`]); playback goes on from there at its pace.
    pub fn seek_to(&mut self, target: usize, now: Instant, times: &(impl LineTimes + ?Sized)) {
        let target = target.min(self.len);
        if target <= self.position {
            return;
        }
        self.seek = Some(target);
        self.anchor = (self.offset_of(target - 1, times), now);
    }

    /// Whether a seek is still being applied.
    pub fn seeking(&self) -> bool {
        self.seek.is_some()
    }

    /// The first line at or after a replay time.
    pub fn position_at(&self, ms: u64, times: &(impl LineTimes + ?Sized)) -> usize {
        self.partition(times, |o| o < ms)
    }

    /// When the next line falls due, if it is not due already (none while paused, done or at max).
    pub fn next_deadline(&self, times: &(impl LineTimes + ?Sized)) -> Option<Instant> {
        if self.seek.is_some() {
            return Some(self.anchor.1);
        }
        if self.paused || self.is_done() {
            return None;
        }
        match self.pace {
            Pace::Max => None,
            Pace::Times(n) => {
                let wait = self.offset_of(self.position, times).saturating_sub(self.anchor.0) / u64::from(n);
                Some(self.anchor.1 + Duration::from_millis(wait))
            }
        }
    }

    pub fn toggle_pause(&mut self, now: Instant, times: &(impl LineTimes + ?Sized)) {
        self.reanchor(now, times);
        self.paused = !self.paused;
    }

    pub fn set_pace(&mut self, pace: Pace, now: Instant, times: &(impl LineTimes + ?Sized)) {
        self.pace = pace;
        self.reanchor(now, times);
    }

    /// The position `delta_ms` of replay time away from here (for `[` / `]`). A seek backwards
    /// means the caller rebuilds its model from the start: the reducer is deterministic.
    pub fn seek_target(&self, delta_ms: i64, times: &(impl LineTimes + ?Sized)) -> usize {
        let here = self.elapsed_ms(times);
        let target = if delta_ms < 0 { here.saturating_sub(delta_ms.unsigned_abs()) } else { here + delta_ms as u64 };
        if delta_ms < 0 {
            // Land on the first line at or after the target time, but always move back.
            self.partition(times, |o| o < target).min(self.position.saturating_sub(1))
        } else {
            self.partition(times, |o| o <= target).max((self.position + 1).min(self.len()))
        }
    }

    /// Lines appended to a followed file and applied at once: they are due the moment they exist.
    pub fn append_applied(&mut self, n: usize, now: Instant) {
        self.len += n;
        self.position = self.len;
        self.anchor = (self.duration, now);
    }

    /// Moves to an absolute position (the caller has applied exactly that many lines).
    pub fn jump(&mut self, position: usize, now: Instant, times: &(impl LineTimes + ?Sized)) {
        self.seek = None;
        self.position = position.min(self.len);
        self.anchor = (self.elapsed_ms(times), now);
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
        let times = [Some(1000), Some(1000), Some(1500), None, Some(3000)];
        let t = &times[..];
        let r = Replay::new(times, 60_000, Pace::Times(1), t0);
        assert_eq!(r.due(t0, t), 2);
        assert_eq!(r.due(t0 + ms(499), t), 2);
        assert_eq!(r.due(t0 + ms(500), t), 4, "a line without time follows the one before");
        assert_eq!(r.due(t0 + ms(2000), t), 5);
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
        let times = [Some(0), Some(10_000)];
        let t = &times[..];
        let mut r = Replay::new(times, 60_000, Pace::Times(10), t0);
        r.advance(r.due(t0, t));
        assert_eq!(r.next_deadline(t), Some(t0 + ms(1000)));
        assert_eq!(r.due(t0 + ms(1000), t), 1);
        r.set_pace(Pace::Max, t0, t);
        assert_eq!(r.due(t0, t), 1);
        assert_eq!(r.next_deadline(t), None);
    }

    #[test]
    fn pause_stops_the_clock() {
        let t0 = Instant::now();
        let times = [Some(0), Some(1000)];
        let t = &times[..];
        let mut r = Replay::new(times, 60_000, Pace::Times(1), t0);
        r.advance(r.due(t0, t));
        r.toggle_pause(t0 + ms(500), t);
        assert_eq!(r.due(t0 + ms(5000), t), 0);
        r.toggle_pause(t0 + ms(5000), t);
        // 500 ms had passed before the pause, so 500 remain.
        assert_eq!(r.next_deadline(t), Some(t0 + ms(5500)));
        assert_eq!(r.due(t0 + ms(5499), t), 0);
        assert_eq!(r.due(t0 + ms(5500), t), 1);
    }

    #[test]
    fn seeking_moves_by_replay_time() {
        let t0 = Instant::now();
        let times: Vec<Option<i64>> = (0..100).map(|i| Some(i * 1000)).collect();
        let t = times.as_slice();
        let mut r = Replay::new(times.iter().copied(), 60_000, Pace::Times(1), t0);
        r.jump(50, t0, t);
        assert_eq!(r.elapsed_ms(t), 49_000);
        assert_eq!(r.seek_target(10_000, t), 60);
        assert_eq!(r.seek_target(-10_000, t), 39);
        r.jump(100, t0, t);
        assert!(r.is_done());
        assert_eq!(r.seek_target(10_000, t), 100);
    }

    #[test]
    fn followed_lines_are_applied_as_they_come() {
        let t0 = Instant::now();
        let times = [Some(0), Some(500)];
        let t = &times[..];
        let mut r = Replay::new(times, 60_000, Pace::Times(1), t0);
        r.advance(r.due(t0 + ms(500), t));
        r.append_applied(3, t0 + ms(900));
        assert_eq!((r.position(), r.len(), r.is_done()), (5, 5, true));
        assert_eq!(r.elapsed_ms(t), 500);
        assert_eq!((r.position_at(500, t), r.position_at(501, t)), (1, 5));
    }

    #[test]
    fn a_seek_is_due_at_once_even_paused_then_playback_resumes() {
        let t0 = Instant::now();
        let times: Vec<Option<i64>> = (0..100).map(|i| Some(i * 1000)).collect();
        let t = times.as_slice();
        let mut r = Replay::new(times.iter().copied(), 60_000, Pace::Times(1), t0);
        r.toggle_pause(t0, t);
        r.seek_to(40, t0, t);
        assert_eq!(r.due(t0, t), 40, "paused, the seek's lines are due anyway");
        r.advance(16);
        assert!(r.seeking());
        assert_eq!(r.due(t0, t), 24, "a seek goes in slices: what is left stays due");
        r.advance(24);
        assert!(!r.seeking());
        assert_eq!(r.due(t0 + ms(5000), t), 0, "paused again once the seek is done");
        assert_eq!(r.elapsed_ms(t), 39_000);
        assert_eq!((r.position_at(10_000, t), r.offset_of(10, t)), (10, 10_000));
    }

    /// Offsets as a list held whole works them out: every line's, in order.
    fn offsets_whole(times: &[Option<i64>], max_gap_ms: u64) -> Vec<u64> {
        let (mut offset, mut last) = (0, None);
        times
            .iter()
            .map(|&t| {
                offset = step(offset, &mut last, t, max_gap_ms);
                offset
            })
            .collect()
    }

    proptest::proptest! {
        /// Blocks worked out again from their marks give every line the offset a schedule held
        /// whole gives it, whichever blocks are held, and seeking by time lands where a search of
        /// that list lands.
        #[test]
        fn blocks_worked_out_again_are_the_schedule(
            steps in proptest::collection::vec(proptest::option::of(-3_000i64..5_000), 0..5_000),
            probes in proptest::collection::vec(0usize..6_000, 1..40),
        ) {
            let mut now = 1_700_000_000_000i64;
            let times: Vec<Option<i64>> = steps.iter().map(|s| s.map(|s| { now += s; now })).collect();
            let whole = offsets_whole(&times, 2_000);
            let r = Replay::new(times.iter().copied(), 2_000, Pace::Times(1), Instant::now());
            let t = times.as_slice();
            proptest::prop_assert_eq!(r.len(), whole.len());
            proptest::prop_assert_eq!(r.duration_ms(), whole.last().copied().unwrap_or(0));
            for &p in &probes {
                let expected = whole.get(p).or(whole.last()).copied().unwrap_or(0);
                proptest::prop_assert_eq!(r.offset_of(p, t), expected);
                let ms = p as u64 * 700;
                proptest::prop_assert_eq!(r.position_at(ms, t), whole.partition_point(|&o| o < ms));
            }
        }
    }

    #[test]
    fn pace_ladder() {
        assert_eq!(Pace::Times(1).faster(), Pace::Times(2));
        assert_eq!(Pace::Max.faster(), Pace::Max);
        assert_eq!(Pace::Times(1).slower(), Pace::Times(1));
        assert_eq!(Pace::Times(10).slower().label(), "5×");
    }
}
