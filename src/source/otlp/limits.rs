//! The receiver's bounds, what each refuses, and the counters the diagnostics view shows: a leaf
//! the receiver's parts share, so none of them reaches back into the module that holds them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Largest request body accepted as sent (an SDK batch of 512 spans is well under 1 MiB).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Largest body once inflated.
pub const MAX_INFLATED_BYTES: usize = 8 << 20;
/// Most a gzip body may inflate, as a multiple of its size: real OTLP compresses some 5–25 times;
/// a body of zeros, 1,000 times.
pub const MAX_INFLATE_RATIO: usize = 100;
/// Messages decoded from one request (spans, attributes, values, …): what bounds its memory, as
/// two bytes of protobuf are a message of up to some 300 bytes once decoded.
pub const MAX_MESSAGES: usize = 1 << 18;
/// Spans and log records in one request (an SDK batch is 512; a collector's, 8,192).
pub const MAX_RECORDS: usize = 8192;
/// Bytes of records one request may become (a resource's attributes are repeated in each).
pub const MAX_RECORDED_BYTES: usize = 32 << 20;
/// How deep attribute values may nest (arrays and maps): a record then nests at most 8 + 4 × 16
/// levels with its envelope, within what the recording embeds and its reader reads back.
pub const MAX_VALUE_DEPTH: usize = 16;
/// Connections served at once; one more closes the one that has waited longest.
pub const MAX_CONNECTIONS: usize = 64;
/// Time to send a request's headers, counted from the end of the previous request: also how long
/// an idle connection stays open.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(20);
/// Requests decoded at once, each on the blocking pool.
pub const MAX_DECODERS: usize = 2;

/// What the receiver did, for diagnostics.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub spans: AtomicU64,
    pub logs: AtomicU64,
    /// Requests refused, for any reason (the figures below say which, where one is counted).
    pub refused: AtomicU64,
    /// Refused: past a size bound (body, inflated, ratio, values, records, recorded bytes).
    pub too_large: AtomicU64,
    /// Refused: not OTLP, or gzip that does not inflate.
    pub undecodable: AtomicU64,
    /// Refused: trace or span ids of the wrong size.
    pub bad_ids: AtomicU64,
    /// Refused: values nested deeper than [`MAX_VALUE_DEPTH`].
    pub too_deep: AtomicU64,
    /// Refused: neither our own process nor holding the token.
    pub untrusted: AtomicU64,
    /// Connections closed for sending headers or a body too slowly.
    pub timed_out: AtomicU64,
    /// Connections closed to make room for a new one at [`MAX_CONNECTIONS`].
    pub connections_closed: AtomicU64,
    /// Connections refused at [`MAX_CONNECTIONS`] because every one was answering.
    pub connections_refused: AtomicU64,
    /// Conversations forgotten by the join's bounds while waiting for their parent span.
    pub forgotten: AtomicU64,
    /// Spans the join's index let go to stay within its bounds.
    pub index_evicted: AtomicU64,
    /// Spans never joined: their conversation or tool-call id is longer than any real one.
    pub unjoinable: AtomicU64,
}

impl Counters {
    /// Each bound's figure, by name, in the order the diagnostics view shows them.
    pub fn limits(&self) -> Vec<(&'static str, u64)> {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("too large", n(&self.too_large)),
            ("undecodable", n(&self.undecodable)),
            ("bad ids", n(&self.bad_ids)),
            ("too deep", n(&self.too_deep)),
            ("untrusted", n(&self.untrusted)),
            ("timed out", n(&self.timed_out)),
            ("closed for room", n(&self.connections_closed)),
            ("conns refused", n(&self.connections_refused)),
            ("index evicted", n(&self.index_evicted)),
            ("unjoinable", n(&self.unjoinable)),
        ]
    }

    /// `12 requests, 340 spans, 61 log records, 0 refused, 0 unjoined`, then the bounds that
    /// refused or dropped something: `; too large 2, untrusted 1`.
    pub fn describe(&self) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut line = format!(
            "{} requests, {} spans, {} log records, {} refused, {} unjoined",
            n(&self.requests),
            n(&self.spans),
            n(&self.logs),
            n(&self.refused),
            n(&self.forgotten)
        );
        let hit: Vec<String> =
            self.limits().into_iter().filter(|&(_, v)| v > 0).map(|(k, v)| format!("{k} {v}")).collect();
        if !hit.is_empty() {
            line.push_str("; ");
            line.push_str(&hit.join(", "));
        }
        line
    }
}

/// Why a request is refused; each is counted where the user sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Past a size bound: inflated bytes, the expansion ratio, values, records, recorded bytes.
    TooLarge(String),
    /// Not an OTLP request of the path's kind, or gzip that does not inflate.
    Undecodable(&'static str),
    /// An id of another size than OTLP's (trace 16 bytes, span 8).
    BadId(&'static str),
    /// Attribute values nested deeper than [`MAX_VALUE_DEPTH`].
    TooDeep,
}

impl Refusal {
    /// 413 for what is too large, 400 for what is wrong.
    pub fn status(&self) -> u16 {
        if matches!(self, Self::TooLarge(_)) { 413 } else { 400 }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge(what) => write!(f, "request too large: {what}"),
            Self::Undecodable(what) => f.write_str(what),
            Self::BadId(what) => write!(f, "{what} (OTLP ids: trace 16 bytes, span 8)"),
            Self::TooDeep => write!(f, "attribute values nested deeper than {MAX_VALUE_DEPTH} levels"),
        }
    }
}
