//! How `ps` orders its rows: by the `--sort` keys, each column's natural order (oldest, cheapest,
//! `a` first) or its reverse.

use std::cmp::Ordering;

use super::super::sessions::Row;
use super::columns::{Column, SortKey};
use crate::source::seen::State;

/// Rows in this column's natural order (ascending: oldest, cheapest, `a` first).
pub fn compare(column: Column, a: &Row, b: &Row) -> Ordering {
    match column {
        Column::Agent => a.tool.as_str().cmp(b.tool.as_str()),
        Column::Id => a.id.as_str().cmp(b.id.as_str()),
        Column::Project => a.project.cmp(&b.project),
        Column::Source => a.source.cmp(&b.source),
        Column::State => state_rank(a.state).cmp(&state_rank(b.state)),
        Column::Last => a.last_activity_ms.cmp(&b.last_activity_ms),
        Column::Pid => a.pid.cmp(&b.pid),
        Column::Cpu => {
            a.usage.map(|u| u.cpu_percent).partial_cmp(&b.usage.map(|u| u.cpu_percent)).unwrap_or(Ordering::Equal)
        }
        Column::Mem => a.usage.map(|u| u.rss_bytes).cmp(&b.usage.map(|u| u.rss_bytes)),
        Column::Agents => a.agents.cmp(&b.agents),
        Column::Tokens => a.tokens.cmp(&b.tokens),
        Column::Cost => a.cost.cmp(&b.cost),
        Column::Name => a.name.as_str().to_lowercase().cmp(&b.name.as_str().to_lowercase()),
    }
}

/// Live sessions before idle ones before ended ones.
fn state_rank(s: State) -> u8 {
    match s {
        State::Live => 0,
        State::Idle => 1,
        State::Ended => 2,
    }
}

/// Orders `rows` by `keys`, then newest first, then by id (a stable, total order).
pub fn sort(rows: &mut [Row], keys: &[SortKey]) {
    rows.sort_by(|a, b| {
        keys.iter()
            .map(|k| if k.descending { compare(k.column, b, a) } else { compare(k.column, a, b) })
            .find(|o| o.is_ne())
            .unwrap_or_else(|| b.last_activity_ms.cmp(&a.last_activity_ms))
            .then_with(|| a.id.as_str().cmp(b.id.as_str()))
    });
}
