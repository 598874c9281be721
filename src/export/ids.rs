//! Trace and span ids derived from what the agents themselves named: the root session's id and the
//! item ids. Exporting one session twice, or from two machines, gives the same ids, so a collector
//! files the spans in one trace instead of two.

use sha2::{Digest, Sha256};

pub type TraceId = [u8; 16];
pub type SpanId = [u8; 8];

/// Hashes `parts` with a purpose prefix, so no two kinds of id can collide by construction.
fn digest(purpose: &str, parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"swarmtop\0");
    h.update(purpose.as_bytes());
    for p in parts {
        // Length-prefixed: ("ab", "c") and ("a", "bc") differ.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().into()
}

/// OTLP treats all-zero ids as absent; a hash of all zeros is astronomically unlikely but not impossible.
fn nonzero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&b| b == 0) {
        id[N - 1] = 1;
    }
    id
}

/// The trace of a session: every agent under one root shares it.
pub fn trace_id(root_thread: &str) -> TraceId {
    let d = digest("trace", &[root_thread]);
    nonzero(d[..16].try_into().expect("16 of 32 bytes"))
}

/// The `invoke_agent` span of a thread.
pub fn agent_span_id(thread: &str) -> SpanId {
    let d = digest("agent", &[thread]);
    nonzero(d[..8].try_into().expect("8 of 32 bytes"))
}

/// The span of one item (a tool call or a model response) of a thread. Item ids are only unique
/// within their thread (Claude Code's tool-use ids are, Codex's `call_…` ids need not be).
pub fn item_span_id(thread: &str, item: &str) -> SpanId {
    let d = digest("item", &[thread, item]);
    nonzero(d[..8].try_into().expect("8 of 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(trace_id("s1"), trace_id("s1"));
        assert_ne!(trace_id("s1"), trace_id("s2"));
        assert_ne!(agent_span_id("t"), item_span_id("t", ""));
        assert_ne!(item_span_id("ab", "c"), item_span_id("a", "bc"));
    }
}
