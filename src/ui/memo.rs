//! One remembered result per cache, kept while its key holds: what a frame asks for many times
//! (a card's groups, the cost table's order, a search's matches) is computed once per change of
//! the model, not once per question. Drawing stays a function of the model and the view: a memo
//! only saves work, it never changes an answer.

use std::sync::{Arc, Mutex, PoisonError};

#[derive(Debug)]
pub struct Memo<K, V>(Mutex<Option<(K, Arc<V>)>>);

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<K: PartialEq, V> Memo<K, V> {
    /// The value remembered for `key`, or `make()` remembered in its place.
    pub fn get(&self, key: K, make: impl FnOnce() -> V) -> Arc<V> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, v)) = slot.as_ref()
            && *k == key
        {
            return Arc::clone(v);
        }
        let v = Arc::new(make());
        *slot = Some((key, Arc::clone(&v)));
        v
    }
}
