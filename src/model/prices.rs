//! The price table (prices.md): embedded default, overridable per model with `--pricing FILE`.
//!
//! Prices are held as whole micro-dollars per million tokens, so a token count times a price is
//! an exact count of pico-dollars (1e-12 USD): costs are summed exactly and rounded only when
//! printed, to 12 decimal places (routing.md §6).

use std::fmt;

use rustc_hash::FxHashMap;
use serde::Deserialize;

/// Per-token prices in pico-dollars (= micro-dollars per million tokens), OpenAI semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    pub input: i128,
    pub cached_input: i128,
    /// Cache writes (Anthropic: the 5-minute ones).
    pub cache_write: i128,
    /// Anthropic's 1-hour cache writes (2x input); for OpenAI the same as `cache_write`.
    pub cache_write_1h: i128,
    pub output: i128,
}

#[derive(Debug, Clone, Default)]
pub struct Prices {
    models: FxHashMap<String, Price>,
    /// Models billed at other rates when a request's prompt is long (Claude Haiku 5.5 above 100,000
    /// prompt tokens): the threshold and the rates above it.
    long_prompt: FxHashMap<String, (u64, Price)>,
}

#[derive(Debug)]
pub struct PriceError(String);

impl fmt::Display for PriceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PriceError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    models: FxHashMap<String, Entry>,
}

/// One model's entry, in either vendor's vocabulary.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
    cache_write_5m: Option<f64>,
    cache_write_1h: Option<f64>,
    long_prompt: Option<LongPrompt>,
}

/// Rates for requests whose prompt (input, cache reads and cache writes) exceeds a threshold; they
/// apply to every token of such a request, output included. Keys as in [`Entry`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LongPrompt {
    above_prompt_tokens: u64,
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
    cache_write_5m: Option<f64>,
    cache_write_1h: Option<f64>,
}

impl LongPrompt {
    fn entry(&self) -> Entry {
        Entry {
            input: self.input,
            output: self.output,
            cached_input: self.cached_input,
            cache_write: self.cache_write,
            cache_read: self.cache_read,
            cache_write_5m: self.cache_write_5m,
            cache_write_1h: self.cache_write_1h,
            long_prompt: None,
        }
    }
}

fn micro(usd_per_million: f64, model: &str) -> Result<i128, PriceError> {
    if !usd_per_million.is_finite() || usd_per_million < 0.0 {
        return Err(PriceError(format!("price of {model:?} must be a non-negative number")));
    }
    Ok((usd_per_million * 1e6).round() as i128)
}

impl Entry {
    fn price(&self, model: &str) -> Result<Price, PriceError> {
        let input = micro(self.input, model)?;
        // Codex reports cache reads and writes inside input (wire.md §4); an Anthropic entry maps
        // its cache read and 5-minute write onto those roles.
        let cached = self.cached_input.or(self.cache_read).map_or(Ok(input), |p| micro(p, model))?;
        let write = self.cache_write.or(self.cache_write_5m).map_or(Ok(input), |p| micro(p, model))?;
        let write_1h = self.cache_write_1h.map_or(Ok(write), |p| micro(p, model))?;
        Ok(Price {
            input,
            cached_input: cached,
            cache_write: write,
            cache_write_1h: write_1h,
            output: micro(self.output, model)?,
        })
    }
}

impl Prices {
    /// The table shipped in `assets/prices.toml`.
    pub fn builtin() -> Self {
        let mut prices = Self::default();
        prices.merge_toml(include_str!("../../assets/prices.toml")).expect("the embedded price table is valid");
        prices
    }

    /// Adds or replaces whole model entries from a price file's text.
    pub fn merge_toml(&mut self, text: &str) -> Result<(), PriceError> {
        let file: File = toml::from_str(text).map_err(|e| PriceError(format!("price table: {e}")))?;
        for (name, entry) in file.models {
            let price = entry.price(&name)?;
            // A user entry replaces the model as a whole, its long-prompt rates included.
            match &entry.long_prompt {
                Some(long) => {
                    let rates = long.entry().price(&name)?;
                    self.long_prompt.insert(name.clone(), (long.above_prompt_tokens, rates));
                }
                None => {
                    self.long_prompt.remove(&name);
                }
            }
            self.models.insert(name, price);
        }
        Ok(())
    }

    /// The rates one request is billed at, given its prompt size (input + cache reads + cache
    /// writes): a model's long-prompt rates above its threshold, else [`Prices::lookup`].
    pub fn lookup_for_prompt(&self, model: &str, prompt_tokens: u64) -> Option<Price> {
        let long = self.long_prompt.get(model).or_else(|| self.long_prompt.get(strip_date(model)?));
        match long {
            Some(&(above, rates)) if prompt_tokens > above => Some(rates),
            _ => self.lookup(model),
        }
    }

    /// Exact name, else the name without a trailing date (`-2025-09-29`, `-20250929`).
    pub fn lookup(&self, model: &str) -> Option<Price> {
        self.models.get(model).or_else(|| self.models.get(strip_date(model)?)).copied()
    }
}

/// The model's name without a trailing date (`-2025-09-29`, `-20250929`), when it has one.
pub fn strip_date(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if model.len() > 11 && model.is_char_boundary(model.len() - 11) {
        let (head, tail) = model.split_at(model.len() - 11);
        let parts: Vec<&str> = tail.split('-').collect();
        if parts.len() == 4
            && parts[0].is_empty()
            && parts[1].len() == 4
            && parts[2].len() == 2
            && parts[3].len() == 2
            && parts[1..].iter().all(|p| digits(p))
        {
            return Some(head);
        }
    }
    if model.len() > 9 && model.is_char_boundary(model.len() - 9) {
        let (head, tail) = model.split_at(model.len() - 9);
        if tail.starts_with('-') && digits(&tail[1..]) {
            return Some(head);
        }
    }
    None
}

/// An exact amount of money in pico-dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pico(pub i128);

impl Pico {
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e12
    }

    /// A decimal number of US dollars as an agent writes it (`0.0123`, `1e-3`), exactly when it
    /// has at most 12 decimals; `None` when it is not a finite, non-negative number.
    pub fn parse_usd(text: &str) -> Option<Self> {
        let t = text.trim();
        if let Some((whole, frac)) = t.split_once('.').filter(|_| !t.contains(['e', 'E'])) {
            let whole: i128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
            if whole < 0 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Past 12 decimals (a float printed in full, `0.0005234950000000001`): rounded to the
            // pico-dollar, half up.
            let (kept, rest) = frac.split_at(frac.len().min(12));
            let up = i128::from(rest.as_bytes().first().is_some_and(|&d| d >= b'5'));
            let frac: i128 = format!("{kept:0<12}").parse::<i128>().ok()? + up;
            return Some(Self(whole.checked_mul(1_000_000_000_000)?.checked_add(frac)?));
        }
        if let Ok(whole) = t.parse::<i128>() {
            return (whole >= 0).then(|| whole.checked_mul(1_000_000_000_000).map(Self))?;
        }
        let v: f64 = t.parse().ok()?;
        (0.0..1e20).contains(&v).then(|| Self((v * 1e12).round() as i128))
    }
}

// Money from input-derived figures never wraps: sums saturate.
impl std::ops::Add for Pico {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        Self(self.0.saturating_add(rhs.0))
    }
}

impl std::ops::AddAssign for Pico {
    fn add_assign(&mut self, rhs: Self) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl std::ops::Sub for Pico {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        Self(self.0.saturating_sub(rhs.0))
    }
}

/// The exact decimal, 12 places at most, trailing zeros trimmed: `0.0123`, `3.0`.
impl fmt::Display for Pico {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let whole = abs / 1_000_000_000_000;
        let frac = format!("{:012}", abs % 1_000_000_000_000);
        let frac = frac.trim_end_matches('0');
        write!(f, "{sign}{whole}.{}", if frac.is_empty() { "0" } else { frac })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_has_the_table() {
        let p = Prices::builtin();
        let luna = p.lookup("gpt-5.6-luna").unwrap();
        assert_eq!(
            luna,
            Price {
                input: 200_000,
                cached_input: 20_000,
                cache_write: 250_000,
                cache_write_1h: 250_000,
                output: 1_200_000
            }
        );
        let mini = p.lookup("gpt-5.4-mini").unwrap();
        assert_eq!(mini.cached_input, 75_000);
        // No cache-write price: it defaults to input.
        assert_eq!(p.lookup("gpt-5.5").unwrap().cache_write, 5_000_000);
        assert_eq!(p.lookup("<synthetic>").unwrap().output, 0);
        assert!(p.lookup("acme-1").is_none());
    }

    #[test]
    fn date_suffixes_match() {
        let p = Prices::builtin();
        assert!(p.lookup("claude-sonnet-4-5-20250929").is_some());
        assert!(p.lookup("gpt-5.5-2025-09-29").is_some());
        assert!(p.lookup("gpt-5.5-20250929x").is_none());
        assert!(p.lookup("gpt-5.5-2025-9-29").is_none());
    }

    #[test]
    fn user_entries_replace_whole_models() {
        let mut p = Prices::builtin();
        p.merge_toml(
            "[models.\"gpt-5.5\"]\ninput = 1.0\noutput = 2.0\n[models.\"acme-1\"]\ninput = 0.1\noutput = 0.2\n",
        )
        .unwrap();
        assert_eq!(
            p.lookup("gpt-5.5").unwrap(),
            Price {
                input: 1_000_000,
                cached_input: 1_000_000,
                cache_write: 1_000_000,
                cache_write_1h: 1_000_000,
                output: 2_000_000
            }
        );
        assert!(p.lookup("acme-1").is_some());
        assert!(p.merge_toml("[models.x]\ninput = -1.0\noutput = 1.0").is_err());
        assert!(p.merge_toml("[models.x]\ninptu = 1.0\noutput = 1.0").is_err());
    }

    #[test]
    fn current_claude_models_are_priced_as_the_cli_prices_them() {
        let p = Prices::builtin();
        // The CLI's own figure for the haiku child of the e2e run: 2,061 input, 261 output, 10,427 cache
        // reads, 661 5-minute writes cost $0.000523495.
        let haiku = p.lookup_for_prompt("claude-haiku-5-5", 2_061 + 10_427 + 661).unwrap();
        let pico = 2_061 * haiku.input + 261 * haiku.output + 10_427 * haiku.cached_input + 661 * haiku.cache_write;
        assert_eq!(Pico(pico).to_string(), "0.000523495");
        // Above 100,000 prompt tokens every token of the request is billed 5x.
        let long = p.lookup_for_prompt("claude-haiku-5-5", 100_001).unwrap();
        assert_eq!((long.input, long.output, long.cached_input), (500_000, 2_500_000, 50_000));
        assert_eq!(p.lookup_for_prompt("claude-haiku-5-5", 100_000).unwrap(), haiku);
        assert_eq!(p.lookup_for_prompt("claude-sonnet-4-5", 1_000_000), p.lookup("claude-sonnet-4-5"));
        assert_eq!(p.lookup("claude-sonnet-5-5").unwrap().cached_input, 100_000);
        assert_eq!(p.lookup("claude-opus-5-5").unwrap().cache_write_1h, 8_000_000);
    }

    #[test]
    fn a_user_entry_without_long_prompt_rates_drops_them() {
        let mut p = Prices::builtin();
        p.merge_toml("[models.\"claude-haiku-5-5\"]\ninput = 1.0\noutput = 2.0\n").unwrap();
        assert_eq!(p.lookup_for_prompt("claude-haiku-5-5", 500_000).unwrap().input, 1_000_000);
        assert!(
            p.merge_toml("[models.x]\ninput = 1.0\noutput = 1.0\nlong_prompt = { input = 1.0, output = 1.0 }").is_err()
        );
    }

    #[test]
    fn agents_figures_parse_to_the_pico_dollar() {
        assert_eq!(Pico::parse_usd("0.0005234950000000001").map(|p| p.to_string()).as_deref(), Some("0.000523495"));
        assert_eq!(Pico::parse_usd("0.0000000000015").map(|p| p.0), Some(2));
        assert_eq!(Pico::parse_usd("0.07751535").map(|p| p.to_string()).as_deref(), Some("0.07751535"));
    }

    #[test]
    fn pico_prints_exactly() {
        assert_eq!(Pico(0).to_string(), "0.0");
        assert_eq!(Pico(12_300_000_000).to_string(), "0.0123");
        assert_eq!(Pico(3_000_000_000_000).to_string(), "3.0");
        assert_eq!(Pico(1).to_string(), "0.000000000001");
    }
}
