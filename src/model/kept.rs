//! A thread's turns or items as far as a bound keeps them: the newest ones, and older ones the
//! caller pins (the first turn, which names a session; a card with lanes, which holds the tree).
//! Entries keep the ordinal they were given when they arrived, so handles into the list (an
//! item's turn, a turn's items, a view's selection) stay true when older entries are dropped,
//! and `len` still counts every entry there ever was: the figures of dropped entries stay.

use std::collections::VecDeque;
use std::hash::BuildHasher as _;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use rustc_hash::FxBuildHasher;

#[derive(Debug, Clone)]
pub struct Kept<T> {
    /// Entries older than the window, kept because they were pinned when they left it; in
    /// ordinal order (they leave the window oldest first).
    pinned: Vec<(usize, T)>,
    /// The newest entries, in ordinal order.
    window: VecDeque<T>,
    /// Ordinal of the window's first entry.
    start: usize,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self { pinned: Vec::new(), window: VecDeque::new(), start: 0 }
    }
}

impl<T> Kept<T> {
    /// Entries there ever were (the next entry's ordinal), dropped ones included.
    pub fn len(&self) -> usize {
        self.start + self.window.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries held now.
    pub fn kept(&self) -> usize {
        self.pinned.len() + self.window.len()
    }

    /// Entries in the window: what the bound counts (pinned ones are bounded by what pins them).
    pub(super) fn in_window(&self) -> usize {
        self.window.len()
    }

    /// Adds an entry; returns its ordinal.
    #[cfg(test)]
    pub(super) fn push(&mut self, entry: T) -> usize {
        self.push_within(entry, usize::MAX)
    }

    /// Adds an entry to a window its caller keeps to `bound` entries (one more until the caller
    /// drops the oldest); returns its ordinal. The window's buffer grows to that and no further:
    /// by doubling, the 2,049th item took room for 4,096 in every thread for good, half of the
    /// model's memory on a long session (issue 22). It starts at one: most threads of a large
    /// store hold a turn or two, and room for four items each was a fifth of `stats`' model there.
    pub(super) fn push_within(&mut self, entry: T, bound: usize) -> usize {
        let len = self.window.len();
        if len == self.window.capacity() && len <= bound {
            let room = len.saturating_mul(2).max(1).min(bound.saturating_add(1));
            self.window.reserve_exact(room - len);
        }
        self.window.push_back(entry);
        self.len() - 1
    }

    pub fn get(&self, ordinal: usize) -> Option<&T> {
        match ordinal.checked_sub(self.start) {
            Some(i) => self.window.get(i),
            None => self.pinned.binary_search_by_key(&ordinal, |(o, _)| *o).ok().map(|i| &self.pinned[i].1),
        }
    }

    pub fn get_mut(&mut self, ordinal: usize) -> Option<&mut T> {
        match ordinal.checked_sub(self.start) {
            Some(i) => self.window.get_mut(i),
            None => self.pinned.binary_search_by_key(&ordinal, |(o, _)| *o).ok().map(|i| &mut self.pinned[i].1),
        }
    }

    /// The oldest entry held.
    pub fn first(&self) -> Option<&T> {
        self.pinned.first().map(|(_, e)| e).or_else(|| self.window.front())
    }

    /// The newest entry.
    pub fn last(&self) -> Option<&T> {
        self.window.back().or_else(|| self.pinned.last().map(|(_, e)| e))
    }

    /// The entries held, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.pinned.iter().map(|(_, e)| e).chain(&self.window)
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> + '_ {
        self.pinned.iter_mut().map(|(_, e)| e).chain(&mut self.window)
    }

    /// The entries held with their ordinals, oldest first, to change.
    pub(super) fn iter_mut_entries(&mut self) -> impl Iterator<Item = (usize, &mut T)> + '_ {
        let start = self.start;
        self.pinned
            .iter_mut()
            .map(|(o, e)| (*o, e))
            .chain(self.window.iter_mut().enumerate().map(move |(i, e)| (start + i, e)))
    }

    /// The entries held with their ordinals, oldest first.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = (usize, &T)> + '_ {
        let start = self.start;
        self.pinned.iter().map(|(o, e)| (*o, e)).chain(self.window.iter().enumerate().map(move |(i, e)| (start + i, e)))
    }

    /// The entries held from ordinal `from` on, with their ordinals.
    pub fn entries_from(&self, from: usize) -> impl DoubleEndedIterator<Item = (usize, &T)> + '_ {
        let pinned = self.pinned.partition_point(|(o, _)| *o < from);
        let start = self.start;
        let skip = from.saturating_sub(start).min(self.window.len());
        self.pinned[pinned..]
            .iter()
            .map(|(o, e)| (*o, e))
            .chain(self.window.range(skip..).enumerate().map(move |(i, e)| (start + skip + i, e)))
    }

    /// The first ordinal held whose entry is not `before` (entries held must be partitioned by
    /// it, as items are by their start time); `len()` when there is none.
    pub fn partition_point(&self, before: impl Fn(&T) -> bool) -> usize {
        let p = self.pinned.partition_point(|(_, e)| before(e));
        if p < self.pinned.len() {
            return self.pinned[p].0;
        }
        self.start + self.window.partition_point(|e| before(e))
    }

    /// Drops the oldest entry of the window that `pin` does not keep, moving the pinned ones
    /// before it out of the window; returns it with its ordinal. `None` when the window holds
    /// only pinned entries (they have all left it then).
    pub(super) fn drop_oldest(&mut self, pin: impl Fn(usize, &T) -> bool) -> Option<(usize, T)> {
        while let Some(entry) = self.window.pop_front() {
            let ordinal = self.start;
            self.start += 1;
            if pin(ordinal, &entry) {
                self.pinned.push((ordinal, entry));
            } else {
                return Some((ordinal, entry));
            }
        }
        None
    }

    /// Gives back the room of the entries dropped: a list that takes no more for a while (a
    /// session that stopped) keeps what it holds, not the room its window once had.
    pub(super) fn fit(&mut self) {
        self.window.shrink_to_fit();
        self.pinned.shrink_to_fit();
    }
}

/// Pushes onto a list most threads hold one or two of (a thread's responses, the models its
/// agent reported), growing it from one: a first push takes room for four, and a large store's
/// hundred thousand threads held three empty slots each (issue 22).
pub(super) fn push_small<T>(list: &mut Vec<T>, entry: T) {
    if list.len() == list.capacity() {
        list.reserve_exact(list.len().max(1));
    }
    list.push(entry);
}

/// An entry known by an id of its own (an item's, a turn's).
pub(super) trait Named {
    fn name(&self) -> &str;
}

/// The ordinals of a [`Kept`]'s entries by their ids. The table holds ordinals only and reads the
/// ids from the entries: a map keyed by a copy of each id took an allocation an entry, a tenth of
/// a long session's model (issue 22).
#[derive(Debug, Clone, Default)]
pub struct Ids {
    table: HashTable<usize>,
}

fn hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

impl Ids {
    /// The ordinal of the entry of `kept` named `id`.
    pub(super) fn get<T: Named>(&self, id: &str, kept: &Kept<T>) -> Option<usize> {
        self.table.find(hash(id), |&o| kept.get(o).is_some_and(|e| e.name() == id)).copied()
    }

    /// Files the entry of `kept` at `ordinal` under its id (in place of one named so before).
    pub(super) fn insert<T: Named>(&mut self, ordinal: usize, kept: &Kept<T>) {
        let Some(id) = kept.get(ordinal).map(Named::name) else { return };
        let same = |&o: &usize| kept.get(o).is_some_and(|e| e.name() == id);
        // Every ordinal filed is held in `kept` (a dropped entry is forgotten as it goes).
        let rehash = |&o: &usize| kept.get(o).map_or(0, |e| hash(e.name()));
        if self.table.len() == self.table.capacity() && self.table.find(hash(id), same).is_none() {
            self.refile(rehash);
        }
        match self.table.entry(hash(id), same, rehash) {
            Entry::Occupied(mut e) => *e.get_mut() = ordinal,
            Entry::Vacant(e) => {
                e.insert(ordinal);
            }
        }
    }

    /// Files the ordinals again in a table of the room they need, one more than held. A bounded
    /// list drops an entry for each it takes, and each id forgotten leaves a tombstone: once they
    /// fill the table's room, hashbrown doubles a table more than half full rather than sweep it,
    /// and a thread's 1,025 item ids took 4,096 slots for good where 2,048 hold them (issue 22:
    /// the item and turn tables of a long session's 15 threads grew by 0.3 MB from 200 MB of it
    /// to 2 GB).
    fn refile(&mut self, rehash: impl Fn(&usize) -> u64) {
        let old = std::mem::take(&mut self.table);
        self.table = HashTable::with_capacity(old.len() + 1);
        for o in old {
            self.table.insert_unique(rehash(&o), o, &rehash);
        }
    }

    /// Files the ordinals of `kept` again in a table of the room they need (after many were
    /// dropped at once).
    pub(super) fn fit<T: Named>(&mut self, kept: &Kept<T>) {
        self.refile(|&o| kept.get(o).map_or(0, |e| hash(e.name())));
    }

    /// Forgets `entry`, dropped from its kept at `ordinal`.
    pub(super) fn remove<T: Named>(&mut self, ordinal: usize, entry: &T) {
        if let Ok(e) = self.table.find_entry(hash(entry.name()), |&o| o == ordinal) {
            e.remove();
        }
    }
}

impl<'a, T> IntoIterator for &'a Kept<T> {
    type Item = &'a T;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a T> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<'a, T> IntoIterator for &'a mut Kept<T> {
    type Item = &'a mut T;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a mut T> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::{Ids, Kept, Named};

    impl Named for String {
        fn name(&self) -> &str {
            self
        }
    }

    #[test]
    fn ids_find_the_entries_held_and_forget_the_dropped_ones() {
        let (mut k, mut ids) = (Kept::default(), Ids::default());
        // Past the table's first sizes, so that its growth hashes the ids again from the entries.
        for i in 0..5_000 {
            let o = k.push_within(format!("item-{i}"), 1_000);
            ids.insert(o, &k);
            if k.in_window() > 1_000 {
                let pinned = |o: usize, _: &String| o == 7;
                let (o, gone) = k.drop_oldest(pinned).unwrap();
                ids.remove(o, &gone);
            }
        }
        assert_eq!(ids.get("item-4999", &k), Some(4_999));
        assert_eq!(ids.get("item-4000", &k), Some(4_000));
        assert_eq!(ids.get("item-7", &k), Some(7), "a pinned entry stays known");
        assert_eq!(ids.get("item-3999", &k), None, "dropped");
        assert_eq!(ids.get("item-5000", &k), None);
        assert_eq!(ids.table.len(), k.kept());
        // 1,002 ids (the window, one more, the pinned one) need 2,048 slots (7/8 of them usable).
        assert!(ids.table.capacity() < 2_048, "the table grew past its need: {}", ids.table.capacity());
    }

    fn filled(n: usize) -> Kept<usize> {
        let mut k = Kept::default();
        for i in 0..n {
            assert_eq!(k.push(i * 10), i);
        }
        k
    }

    #[test]
    fn a_bounded_window_takes_room_for_its_bound_not_the_next_power_of_two() {
        let mut k = Kept::default();
        for i in 0..10_000 {
            k.push_within(i, 2_048);
            if k.in_window() > 2_048 {
                k.drop_oldest(|_, _| false);
            }
        }
        assert_eq!((k.len(), k.in_window()), (10_000, 2_048));
        assert_eq!(k.window.capacity(), 2_049, "doubling took room for 4,096");
    }

    #[test]
    fn dropped_entries_keep_their_count_and_the_rest_their_ordinals() {
        let mut k = filled(5);
        assert_eq!(k.drop_oldest(|_, _| false), Some((0, 0)));
        assert_eq!(k.drop_oldest(|_, _| false), Some((1, 10)));
        assert_eq!((k.len(), k.kept()), (5, 3));
        assert_eq!(k.get(1), None);
        assert_eq!(k.get(3), Some(&30));
        assert_eq!(k.push(50), 5);
        assert_eq!(k.entries().map(|(o, _)| o).collect::<Vec<_>>(), [2, 3, 4, 5]);
    }

    #[test]
    fn pinned_entries_stay_in_order_and_are_found() {
        let mut k = filled(6);
        // Keep even ordinals: 0 and 2 are pinned on the way to 1 and 3.
        assert_eq!(k.drop_oldest(|o, _| o % 2 == 0), Some((1, 10)));
        assert_eq!(k.drop_oldest(|o, _| o % 2 == 0), Some((3, 30)));
        assert_eq!(k.get(0), Some(&0));
        assert_eq!(k.get(2), Some(&20));
        assert_eq!(k.first(), Some(&0));
        assert_eq!(k.get(3), None);
        assert_eq!(k.iter().copied().collect::<Vec<_>>(), [0, 20, 40, 50]);
        assert_eq!(k.iter().next_back(), Some(&50));
        assert_eq!(k.entries_from(1).map(|(o, _)| o).collect::<Vec<_>>(), [2, 4, 5]);
        assert_eq!(k.entries_from(5).map(|(o, _)| o).collect::<Vec<_>>(), [5]);
        assert_eq!(k.partition_point(|&v| v < 20), 2);
        assert_eq!(k.partition_point(|&v| v < 45), 5);
        assert_eq!(k.partition_point(|_| true), 6);
        *k.get_mut(2).unwrap() = 21;
        assert_eq!(k.get(2), Some(&21));
    }

    #[test]
    fn a_window_of_pinned_entries_drops_nothing() {
        let mut k = filled(3);
        assert_eq!(k.drop_oldest(|_, _| true), None);
        assert_eq!((k.len(), k.kept(), k.in_window()), (3, 3, 0));
        assert_eq!(k.last(), Some(&20));
    }
}
