//! What went wrong or was dropped, kept where the user can see it (the `d` view, `stats`).

use std::collections::VecDeque;

use crate::wire::fact::Notice;
use crate::wire::{Clean, Malformed, sanitize};

/// How many samples of each kind are kept (the newest).
const KEEP: usize = 200;
/// Bytes of a malformed line kept in its sample (routing.md §3).
const SAMPLE_BYTES: usize = 200;

#[derive(Debug, Clone)]
pub struct MalformedSample {
    pub line_no: u64,
    pub reason: String,
    pub head: Clean,
}

#[derive(Debug, Clone)]
pub struct LogEntry {
    pub line_no: u64,
    pub method: Clean,
    pub message: Clean,
}

#[derive(Debug, Default)]
pub struct Diagnostics {
    pub malformed: VecDeque<MalformedSample>,
    pub globals: VecDeque<LogEntry>,
    pub global_count: u64,
    /// Text bytes dropped by the per-item and per-thread scrollback bounds.
    pub dropped_text_bytes: u64,
    /// Items dropped by the items-per-thread bound (still counted in their thread's items).
    pub dropped_items: u64,
    /// Turns dropped by the turns-per-thread bound (still counted in their thread's turns).
    pub dropped_turns: u64,
    /// Receivers an item named that were dropped by the awaited-receivers bound before their
    /// thread appeared.
    pub dropped_receivers: u64,
}

impl Diagnostics {
    pub(super) fn malformed(&mut self, line_no: u64, reason: &Malformed, record: &[u8]) {
        let head = &record[..record.len().min(SAMPLE_BYTES)];
        let sample =
            MalformedSample { line_no, reason: reason.to_string(), head: sanitize(&String::from_utf8_lossy(head)) };
        push_bounded(&mut self.malformed, sample);
    }

    pub(super) fn global(&mut self, line_no: u64, notice: &Notice<'_>) {
        self.global_count += 1;
        let method = notice.method.to_clean();
        let message = notice.message.clone().unwrap_or_default();
        push_bounded(&mut self.globals, LogEntry { line_no, method, message });
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T) {
    if q.len() == KEEP {
        q.pop_front();
    }
    q.push_back(v);
}
