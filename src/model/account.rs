//! Usage stated per API response ([`Usage::Response`](crate::wire::fact::Usage)): one response
//! may be stated several times (Claude Code writes one line per content block, repeating it, and
//! `output_tokens` can stay at its stream-start value on early lines), so figures are merged by max
//! per response key, then summed. Each response is priced by its own model.

use rustc_hash::FxHashMap;

use super::prices::{Pico, Price};
use super::tokens::Tokens;
use crate::wire::Clean;

/// The responses of one thread, for deduplicating and pricing them.
#[derive(Debug, Clone, Default)]
pub struct Account {
    /// Index into `list` by response key.
    responses: FxHashMap<Box<str>, usize>,
    /// The responses in the order they were first stated (what `export` sends as `chat` spans).
    list: Vec<Response>,
    cost: Pico,
    unpriced: u32,
}

/// One API response: its merged figures, its model, when it was first and last stated.
#[derive(Debug, Clone)]
pub struct Response {
    pub key: Box<str>,
    pub tokens: Tokens,
    price: Option<Price>,
    pub model: Option<Clean>,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

impl Account {
    /// The thread's cost: `None` while any response has a model the table does not know.
    pub fn cost(&self) -> Option<Pico> {
        (self.unpriced == 0 && !self.responses.is_empty()).then_some(self.cost)
    }

    /// The responses, in the order they were first stated.
    pub fn responses(&self) -> &[Response] {
        &self.list
    }

    /// Adds one statement of a response's usage (its model, the statement's time); returns what the
    /// thread's figures gain.
    pub fn state(
        &mut self,
        key: &str,
        usage: &Tokens,
        price: Option<Price>,
        model: Option<Clean>,
        time: Option<i64>,
    ) -> Tokens {
        let at = self.responses.get(key).copied();
        let before = at.map(|i| (self.list[i].tokens, self.list[i].price));
        let merged = before.map_or(*usage, |(t, _)| t.max(usage));
        let price = price.or(before.and_then(|(_, p)| p));
        if let Some((tokens, p)) = before {
            match p {
                Some(p) => self.cost = self.cost - tokens.cost(&p),
                None => self.unpriced = self.unpriced.saturating_sub(1),
            }
        }
        match price {
            Some(p) => self.cost += merged.cost(&p),
            None => self.unpriced += 1,
        }
        let i = *self.responses.entry(key.into()).or_insert_with(|| {
            self.list.push(Response {
                key: key.into(),
                tokens: merged,
                price,
                model: None,
                first_ms: time,
                last_ms: time,
            });
            self.list.len() - 1
        });
        let r = &mut self.list[i];
        r.tokens = merged;
        r.price = price;
        r.model = model.or(r.model.take());
        r.first_ms = r.first_ms.or(time);
        r.last_ms = time.max(r.last_ms);
        merged.minus(&before.map(|(t, _)| t).unwrap_or_default())
    }
}
