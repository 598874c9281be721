//! Usage stated per API response ([`Usage::Response`](crate::wire::fact::Usage)): one response
//! may be stated several times (Claude Code writes one line per content block, repeating it, and
//! `output_tokens` can stay at its stream-start value on early lines), so figures are merged by max
//! per response key, then summed. Each response is priced by its own model.
//!
//! A thread holds its newest responses ([`super::Limits::responses_per_thread`]), as it holds its
//! newest items: one that falls out of them is *settled*, its figures added to the spend of its
//! quarter hour and model ([`Settled`]), which is all the store reads of it. A thread that states
//! 200 responses a second for an hour held 720,000 of them (some 130 MB), and a daemon holds such
//! a thread once for its live view and once for the store (`serve_soak`: its memory's floor
//! climbed all along). A response stated again after it settled is counted as a new one: Claude
//! Code repeats a response on the lines right after its first, thousands of responses sooner.

use std::hash::BuildHasher as _;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::prices::{Pico, Price, Prices};
use super::tokens::Tokens;
use crate::wire::Clean;

/// The responses of one thread, for deduplicating and pricing them.
///
/// The newest responses are held (the store's spend by quarter hour and `export`'s `chat` spans
/// read them), so each is kept small: its key once (the index holds positions, not a
/// second copy), its model shared with the responses before it, its price by its place in the
/// few the thread was billed at. A response held 370 bytes this way took some 180: a daemon
/// following a session that states 200 responses a second grew by half as much (`serve_soak`).
#[derive(Debug, Clone, Default)]
pub struct Account {
    /// Positions in `list`, by the hash of their response's key.
    index: HashTable<u32>,
    /// The newest responses in the order they were first stated (what `export` sends as `chat`
    /// spans); those before them settled.
    list: Vec<Response>,
    /// Responses settled so far: the ordinal of `list`'s first.
    settled: usize,
    /// The settled responses' spend by quarter hour and model, in the order each was begun.
    spend: Vec<Settled>,
    /// The prices responses were billed at, each once.
    prices: Vec<Price>,
    /// The model last stated, which the next response most likely shares.
    last_model: Option<Arc<Clean>>,
    cost: Pico,
    unpriced: u32,
}

/// One API response: its merged figures, its model, when it was first and last stated.
#[derive(Debug, Clone)]
pub struct Response {
    pub key: Box<str>,
    pub tokens: Tokens,
    /// Its place in [`Account::prices`].
    price: Option<u16>,
    pub model: Option<Arc<Clean>>,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

/// The spend of the settled responses first stated in one quarter hour on one model, each priced
/// as [`Response::share`] prices it.
#[derive(Debug, Clone)]
pub struct Settled {
    /// The quarter hour ([`quarter`]) its responses were first stated in.
    pub at_ms: Option<i64>,
    pub model: Option<Arc<Clean>>,
    pub tokens: Tokens,
    /// The priced responses' shares.
    pub cost: Pico,
    /// Some response in it had no price.
    pub unpriced: bool,
    /// The ordinal of the last response settled into it (what comes last in time order).
    pub last: usize,
}

/// A quarter hour, in ms: every time zone's offset is a whole number of them.
pub const QUARTER_MS: i64 = 15 * 60 * 1000;

/// The start of the quarter hour `ms` falls in.
pub fn quarter(ms: i64) -> i64 {
    ms.div_euclid(QUARTER_MS).saturating_mul(QUARTER_MS)
}

impl Response {
    /// Its cost at the table's price for its model and prompt; `None` when the table has none.
    pub fn share(&self, prices: &Prices) -> Option<Pico> {
        let price = self.model.as_ref().and_then(|m| prices.lookup_for_prompt(m.as_str(), self.tokens.input));
        price.map(|p| self.tokens.cost(&p))
    }

    pub fn model(&self) -> Option<&Clean> {
        self.model.as_deref()
    }
}

fn hash(key: &str) -> u64 {
    FxBuildHasher.hash_one(key)
}

impl Account {
    /// The thread's cost: `None` while any response has a model the table does not know.
    pub fn cost(&self) -> Option<Pico> {
        (self.unpriced == 0 && !self.list.is_empty()).then_some(self.cost)
    }

    /// The responses held (the newest), in the order they were first stated.
    pub fn responses(&self) -> &[Response] {
        &self.list
    }

    /// Responses settled: the ordinal of the first held.
    pub fn settled(&self) -> usize {
        self.settled
    }

    /// The settled responses' spend, by quarter hour and model.
    pub fn settled_spend(&self) -> &[Settled] {
        &self.spend
    }

    /// Settles the oldest responses once more than `most` are held, a quarter of `most` at a time
    /// (the index is rebuilt for each such step, not for each response).
    pub fn bound(&mut self, most: usize, prices: &Prices) {
        let most = most.max(1);
        let step = (most / 4).max(1);
        if self.list.len() >= most + step {
            self.settle(step, prices);
        }
    }

    /// Settles every response held but the newest `keep`, and gives back their room: a thread
    /// of a session that stopped states no more (one that goes on counts a response stated
    /// again as a new one, as past the bound).
    pub fn settle_all_but(&mut self, keep: usize, prices: &Prices) {
        let n = self.list.len().saturating_sub(keep);
        if n > 0 {
            self.settle(n, prices);
        }
        self.list.shrink_to_fit();
        let list = &self.list;
        self.index.shrink_to_fit(|&j| hash(&list[j as usize].key));
    }

    /// Settles the oldest `step` responses held and files the rest again.
    fn settle(&mut self, step: usize, prices: &Prices) {
        for (i, r) in self.list.drain(..step).enumerate() {
            let ordinal = self.settled + i;
            let at_ms = r.first_ms.map(quarter);
            let share = r.share(prices);
            let found = self.spend.iter().rposition(|s| s.at_ms == at_ms && s.model == r.model);
            let at = found.unwrap_or_else(|| {
                let (model, tokens) = (r.model.clone(), Tokens::default());
                self.spend.push(Settled { at_ms, model, tokens, cost: Pico::default(), unpriced: false, last: 0 });
                self.spend.len() - 1
            });
            let s = &mut self.spend[at];
            s.tokens.add(&r.tokens);
            s.cost += share.unwrap_or_default();
            s.unpriced |= share.is_none();
            s.last = ordinal;
        }
        self.settled += step;
        self.index.clear();
        let list = &self.list;
        for (i, r) in list.iter().enumerate() {
            let place = u32::try_from(i).unwrap_or(u32::MAX);
            self.index.insert_unique(hash(&r.key), place, |&j| hash(&list[j as usize].key));
        }
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
        let at = self.position(key);
        let before = at.map(|i| (self.list[i].tokens, self.price_of(i)));
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
        let price = price.and_then(|p| self.price_place(p));
        let model = model.map(|m| self.shared_model(m));
        let i = at.unwrap_or_else(|| self.add(key, time));
        let r = &mut self.list[i];
        r.tokens = merged;
        r.price = price;
        r.model = model.or(r.model.take());
        r.first_ms = r.first_ms.or(time);
        r.last_ms = time.max(r.last_ms);
        merged.minus(&before.map(|(t, _)| t).unwrap_or_default())
    }

    fn position(&self, key: &str) -> Option<usize> {
        let list = &self.list;
        self.index.find(hash(key), |&i| *list[i as usize].key == *key).map(|&i| i as usize)
    }

    /// A new response, last in the list; its position.
    fn add(&mut self, key: &str, time: Option<i64>) -> usize {
        let i = self.list.len();
        let list = &self.list;
        // Past 4 billion responses in one thread the index would wrap: such a thread is read no
        // further than its memory allows long before.
        let place = u32::try_from(i).unwrap_or(u32::MAX);
        self.index.insert_unique(hash(key), place, |&j| hash(&list[j as usize].key));
        super::kept::push_small(
            &mut self.list,
            Response {
                key: key.into(),
                tokens: Tokens::default(),
                price: None,
                model: None,
                first_ms: time,
                last_ms: time,
            },
        );
        i
    }

    fn price_of(&self, i: usize) -> Option<Price> {
        self.list[i].price.and_then(|p| self.prices.get(usize::from(p)).copied())
    }

    /// `price`'s place among the thread's prices (added if new); `None` past `u16::MAX` of them,
    /// which the price table cannot make.
    fn price_place(&mut self, price: Price) -> Option<u16> {
        let i = self.prices.iter().position(|p| *p == price).unwrap_or_else(|| {
            super::kept::push_small(&mut self.prices, price);
            self.prices.len() - 1
        });
        u16::try_from(i).ok()
    }

    /// `model`, shared with the response that last named it when it is the same.
    fn shared_model(&mut self, model: Clean) -> Arc<Clean> {
        match &self.last_model {
            Some(m) if **m == model => m.clone(),
            _ => self.last_model.insert(Arc::new(model)).clone(),
        }
    }
}
