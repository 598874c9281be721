//! Token figures of a thread and of a subtree, and what they cost.

use super::prices::{Pico, Price};
use crate::wire::fact::Breakdown;

/// Cumulative usage of one thread (`tokenUsage.total`), OpenAI semantics: input includes cached
/// and cache-written input, output includes reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cached_input: u64,
    pub cache_write: u64,
    /// The part of `cache_write` written for an hour (Anthropic), priced higher.
    pub cache_write_1h: u64,
    pub output: u64,
    pub reasoning_output: u64,
    pub total: u64,
}

impl Tokens {
    /// Field-wise max: idempotent under duplicated and late frames (wire.md §4). Never add up.
    pub fn merge_max(&mut self, b: &Breakdown) {
        let m = |field: &mut u64, v: Option<u64>| *field = (*field).max(v.unwrap_or(0));
        m(&mut self.input, b.input_tokens);
        m(&mut self.cached_input, b.cached_input_tokens);
        m(&mut self.cache_write, b.cache_write_input_tokens);
        m(&mut self.cache_write_1h, b.cache_write_1h_input_tokens);
        m(&mut self.output, b.output_tokens);
        m(&mut self.reasoning_output, b.reasoning_output_tokens);
        m(&mut self.total, b.total_tokens);
    }

    /// One breakdown as figures (a missing figure is zero).
    pub fn of(b: &Breakdown) -> Self {
        let mut t = Self::default();
        t.merge_max(b);
        t
    }

    /// Field-wise max of two sets of figures.
    #[must_use]
    pub fn max(&self, o: &Self) -> Self {
        Self {
            input: self.input.max(o.input),
            cached_input: self.cached_input.max(o.cached_input),
            cache_write: self.cache_write.max(o.cache_write),
            cache_write_1h: self.cache_write_1h.max(o.cache_write_1h),
            output: self.output.max(o.output),
            reasoning_output: self.reasoning_output.max(o.reasoning_output),
            total: self.total.max(o.total),
        }
    }

    /// routing.md §6: uncached input at the input price, cached and cache-written input at their
    /// own, output (reasoning included) at the output price.
    ///
    /// Figures are the input's: a part larger than its whole (`cachedInputTokens` above
    /// `inputTokens`) counts as the whole, and a cost never goes below zero nor wraps.
    pub fn cost(&self, price: &Price) -> Pico {
        let t = |v: u64| i128::from(v);
        let cached = self.cached_input.min(self.input);
        let written = self.cache_write.min(self.input - cached);
        let written_1h = self.cache_write_1h.min(written);
        let uncached = self.input - cached - written;
        let part = |tokens: u64, price: i128| t(tokens).saturating_mul(price.max(0));
        Pico(
            part(uncached, price.input)
                .saturating_add(part(cached, price.cached_input))
                .saturating_add(part(written - written_1h, price.cache_write))
                .saturating_add(part(written_1h, price.cache_write_1h))
                .saturating_add(part(self.output, price.output)),
        )
    }

    /// Adds `o`, saturating: sums of input-derived figures never wrap.
    pub fn add(&mut self, o: &Self) {
        self.input = self.input.saturating_add(o.input);
        self.cached_input = self.cached_input.saturating_add(o.cached_input);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
        self.cache_write_1h = self.cache_write_1h.saturating_add(o.cache_write_1h);
        self.output = self.output.saturating_add(o.output);
        self.reasoning_output = self.reasoning_output.saturating_add(o.reasoning_output);
        self.total = self.total.saturating_add(o.total);
    }

    /// `self - o`, field-wise, each figure at least zero.
    #[must_use]
    pub fn saturating_minus(&self, o: &Self) -> Self {
        Self {
            input: self.input.saturating_sub(o.input),
            cached_input: self.cached_input.saturating_sub(o.cached_input),
            cache_write: self.cache_write.saturating_sub(o.cache_write),
            cache_write_1h: self.cache_write_1h.saturating_sub(o.cache_write_1h),
            output: self.output.saturating_sub(o.output),
            reasoning_output: self.reasoning_output.saturating_sub(o.reasoning_output),
            total: self.total.saturating_sub(o.total),
        }
    }

    /// `self - o`, field-wise; used for roll-up deltas, where `o` never exceeds `self`.
    #[must_use]
    pub fn minus(&self, o: &Self) -> Self {
        Self {
            input: self.input.saturating_sub(o.input),
            cached_input: self.cached_input.saturating_sub(o.cached_input),
            cache_write: self.cache_write.saturating_sub(o.cache_write),
            cache_write_1h: self.cache_write_1h.saturating_sub(o.cache_write_1h),
            output: self.output.saturating_sub(o.output),
            reasoning_output: self.reasoning_output.saturating_sub(o.reasoning_output),
            total: self.total.saturating_sub(o.total),
        }
    }
}

/// Figures of a thread plus all its descendants, kept up to date incrementally as figures change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rollup {
    pub threads: u32,
    pub tokens: Tokens,
    /// Sum over the threads whose cost is known (a thread that used nothing is known: $0).
    pub cost: Pico,
    pub priced: u32,
    /// Threads that used something, costed by the price table.
    pub by_table: u32,
    /// Threads (or a session's unattributed part) costed by the agent's own figure.
    pub by_agent: u32,
}

impl Rollup {
    /// `None` when nothing in the set is known to have cost anything while a thread of it is
    /// unpriced: a sum of nothing known is not $0 (threads that used nothing are $0, known).
    pub fn cost_usd(&self) -> Option<Pico> {
        let all_known = self.priced >= self.threads;
        let some_spend = self.by_table > 0 || self.by_agent > 0;
        (self.priced > 0 && (all_known || some_spend)).then_some(self.cost)
    }

    /// Where the sum's money came from.
    pub fn source(&self) -> CostSource {
        match (self.by_table, self.by_agent) {
            (0, 0) => CostSource::NoUsage,
            (_, 0) => CostSource::Table,
            (0, _) => CostSource::Agent,
            _ => CostSource::Mixed,
        }
    }
}

/// Where a cost came from (`costSource` in `stats --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CostSource {
    /// Nothing was used: $0 whatever the model.
    #[default]
    NoUsage,
    /// The price table, from the tokens.
    Table,
    /// The agent's own figure (a model the table does not know, a session's unattributed part).
    Agent,
    /// Both, in a sum.
    Mixed,
    /// Tokens with no price and no figure from the agent.
    Unpriced,
}

impl CostSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoUsage => "none",
            Self::Table => "table",
            Self::Agent => "agent",
            Self::Mixed => "mixed",
            Self::Unpriced => "unpriced",
        }
    }

    /// How a thread of this source counts in a roll-up: (by table, by agent).
    pub(super) fn counts(self) -> (i64, i64) {
        match self {
            Self::Table => (1, 0),
            Self::Agent => (0, 1),
            Self::Mixed => (1, 1),
            Self::NoUsage | Self::Unpriced => (0, 0),
        }
    }
}

/// A change to a subtree's figures, applied to every ancestor.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Delta {
    pub threads: i64,
    pub tokens: Tokens,
    pub cost: Pico,
    pub priced: i64,
    pub by_table: i64,
    pub by_agent: i64,
}

impl Rollup {
    pub(super) fn apply(&mut self, d: &Delta) {
        self.threads = (i64::from(self.threads) + d.threads).clamp(0, i64::from(u32::MAX)) as u32;
        self.tokens.add(&d.tokens);
        self.cost += d.cost;
        self.priced = (i64::from(self.priced) + d.priced).clamp(0, i64::from(u32::MAX)) as u32;
        self.by_table = (i64::from(self.by_table) + d.by_table).clamp(0, i64::from(u32::MAX)) as u32;
        self.by_agent = (i64::from(self.by_agent) + d.by_agent).clamp(0, i64::from(u32::MAX)) as u32;
    }

    /// This roll-up and another set's figures together.
    #[must_use]
    pub fn plus(mut self, o: &Rollup) -> Rollup {
        self.apply(&o.as_delta());
        self
    }

    /// Takes a whole subtree's figures out (a child detached from its parent).
    pub(super) fn remove(&mut self, o: &Rollup) {
        self.threads = self.threads.saturating_sub(o.threads);
        self.tokens = self.tokens.minus(&o.tokens);
        self.cost = self.cost - o.cost;
        self.priced = self.priced.saturating_sub(o.priced);
        self.by_table = self.by_table.saturating_sub(o.by_table);
        self.by_agent = self.by_agent.saturating_sub(o.by_agent);
    }

    pub(super) fn as_delta(&self) -> Delta {
        Delta {
            threads: i64::from(self.threads),
            tokens: self.tokens,
            cost: self.cost,
            priced: i64::from(self.priced),
            by_table: i64::from(self.by_table),
            by_agent: i64::from(self.by_agent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_merge_is_idempotent_and_order_free() {
        let a = Breakdown { input_tokens: Some(100), output_tokens: Some(10), ..Breakdown::default() };
        let b = Breakdown { input_tokens: Some(50), output_tokens: Some(20), ..Breakdown::default() };
        let mut x = Tokens::default();
        x.merge_max(&a);
        x.merge_max(&b);
        x.merge_max(&a);
        let mut y = Tokens::default();
        y.merge_max(&b);
        y.merge_max(&a);
        assert_eq!(x, y);
        assert_eq!((x.input, x.output), (100, 20));
    }

    #[test]
    fn cost_follows_the_formula() {
        let t = Tokens {
            input: 3300,
            cached_input: 1024,
            cache_write: 0,
            cache_write_1h: 0,
            output: 100,
            reasoning_output: 32,
            total: 3400,
        };
        let gpt55 = Price {
            input: 5_000_000,
            cached_input: 500_000,
            cache_write: 5_000_000,
            cache_write_1h: 5_000_000,
            output: 30_000_000,
        };
        // (3300-1024)*5 + 1024*0.5 + 100*30 = 11380 + 512 + 3000 = 14892 USD per million tokens.
        assert_eq!(t.cost(&gpt55).to_string(), "0.014892");
    }
}
