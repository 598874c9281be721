//! Usage stated per API response ([`Usage::Response`](crate::wire::fact::Usage)): one response
//! may be stated several times (Claude Code writes one line per content block, repeating it, and
//! `output_tokens` can stay at its stream-start value on early lines), so figures are merged by max
//! per response key, then summed. Each response is priced by its own model.

use rustc_hash::FxHashMap;

use super::prices::{Pico, Price};
use super::tokens::Tokens;

/// The responses of one thread, for deduplicating and pricing them.
#[derive(Debug, Clone, Default)]
pub struct Account {
    responses: FxHashMap<Box<str>, Response>,
    cost: Pico,
    unpriced: u32,
}

#[derive(Debug, Clone, Copy)]
struct Response {
    tokens: Tokens,
    price: Option<Price>,
}

impl Account {
    /// The thread's cost: `None` while any response has a model the table does not know.
    pub fn cost(&self) -> Option<Pico> {
        (self.unpriced == 0 && !self.responses.is_empty()).then_some(self.cost)
    }

    /// Adds one statement of a response's usage; returns what the thread's figures gain.
    pub fn state(&mut self, key: &str, usage: &Tokens, price: Option<Price>) -> Tokens {
        let before = self.responses.get(key).copied();
        let merged = before.map_or(*usage, |b| b.tokens.max(usage));
        let price = price.or(before.and_then(|b| b.price));
        if let Some(b) = before {
            match b.price {
                Some(p) => self.cost = self.cost - b.tokens.cost(&p),
                None => self.unpriced = self.unpriced.saturating_sub(1),
            }
        }
        match price {
            Some(p) => self.cost += merged.cost(&p),
            None => self.unpriced += 1,
        }
        self.responses.insert(key.into(), Response { tokens: merged, price });
        merged.minus(&before.map(|b| b.tokens).unwrap_or_default())
    }
}
