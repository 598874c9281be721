//! A thread's spend over time, for reports by day, week and month in any time zone.
//!
//! The model keeps each thread's totals, not when they were spent. Two kinds of usage reach it
//! (wire.md §4, §6): a running total per thread (Codex `tokenUsage.total`, merged by max), and one
//! statement per API response (Claude Code), which the model keeps with its time and model. The
//! first kind is followed here, as the router hands the model each line: the ledger is the sink
//! a source is read through, and notes the thread's running total at every quarter hour it
//! changes in. Quarter hours, because every time zone's offset is a whole number of them: a day
//! in any zone is a whole number of quarter hours, so daily sums are exact wherever they are
//! asked for.
//!
//! Every figure here must add up to what the model says of the thread (`stats`), to the token and
//! to the pico-dollar. When the ledger cannot show that it does (usage that reached the thread
//! some other way, a cost the table did not make), the thread's whole spend is put at its last
//! quarter hour instead: the totals stay exact, only the split in time is lost.

use crate::model::prices::{Pico, Prices};
use crate::model::{Rollup, Thread, Tokens};
use crate::router::{Class, Event, Sink};
use crate::wire::fact::{Fact, Usage};

use super::rows::UsageRow;

pub use crate::model::quarter;

/// The running totals of every thread, by quarter hour; a sink of the pipeline.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Largest line time seen: the time of a line that tells none.
    stream_ms: Option<i64>,
    /// By thread handle (dense, first-seen order).
    threads: Vec<Marks>,
    /// By thread handle: the quarter hour each model's session figure (a `cost-state` line,
    /// stream-json `result.modelUsage`) was last stated in: when the agent reported it.
    reported: Vec<Vec<(String, Option<i64>)>>,
}

/// A thread's running total after each quarter hour it changed in, in the order read.
#[derive(Debug, Default, Clone)]
struct Marks {
    now: Tokens,
    marks: Vec<(Option<i64>, Tokens)>,
}

impl Sink for Ledger {
    fn event(&mut self, event: &Event<'_, '_>) {
        let Event::Line(r) = event else { return };
        if matches!(r.class, Class::Global | Class::Malformed) {
            return;
        }
        let time = r.record.time;
        if let Some(t) = time {
            self.stream_ms = Some(self.stream_ms.map_or(t, |s| s.max(t)));
        }
        let Some(idx) = r.thread else { return };
        for fact in r.record.facts.iter() {
            if let Fact::ReportedUsage(u) = fact {
                self.reported_at(idx.index(), u.model.as_str(), time.or(self.stream_ms).map(quarter));
                continue;
            }
            let Fact::Usage(Usage::Cumulative { total: Some(total), .. }) = fact else { continue };
            if self.threads.len() <= idx.index() {
                self.threads.resize_with(idx.index() + 1, Marks::default);
            }
            let at = time.or(self.stream_ms).map(quarter);
            let m = &mut self.threads[idx.index()];
            m.now.merge_max(total);
            let now = m.now;
            match m.marks.last_mut() {
                Some((last, tokens)) if *last == at => *tokens = now,
                _ => m.marks.push((at, now)),
            }
        }
    }
}

impl Ledger {
    fn reported_at(&mut self, index: usize, model: &str, at: Option<i64>) {
        if self.reported.len() <= index {
            self.reported.resize_with(index + 1, Vec::new);
        }
        let marks = &mut self.reported[index];
        match marks.iter_mut().find(|(m, _)| m == model) {
            Some((_, last)) => *last = at.or(*last),
            None => marks.push((model.to_owned(), at)),
        }
    }

    /// A session's unattributed part (what its agent reported beyond its threads' own figures,
    /// [`crate::model::Model::unattributed_part`]) as usage rows, so that a report of the session
    /// adds up to `stats`: by model where the agent's figures by model less its threads' rows on
    /// that model add up to it (else all of it on the root's model), each at the quarter hour the
    /// agent last stated that model's figure in (else at the session's end). `seen`: the rows of
    /// every run of the session.
    pub fn unattributed(
        &self,
        index: usize,
        root: &Thread,
        part: &Rollup,
        end_ms: Option<i64>,
        seen: &[&UsageRow],
    ) -> Vec<UsageRow> {
        if part.tokens == Tokens::default() && part.cost == Pico::default() {
            return Vec::new();
        }
        let marks = self.reported.get(index).map_or(&[][..], Vec::as_slice);
        let at_of = |model: &str| marks.iter().find(|(m, _)| m == model).and_then(|(_, at)| *at);
        let end = end_ms.map(quarter);
        let on = |model: &str| {
            let mut sum = (Tokens::default(), Pico::default());
            for u in seen.iter().filter(|u| u.model.as_deref() == Some(model)) {
                sum.0.add(&u.tokens);
                sum.1 += u.cost;
            }
            sum
        };
        let mut rows: Vec<UsageRow> = Vec::new();
        let mut costs: Vec<Option<Pico>> = Vec::new();
        for (model, reported) in &root.reported_usage {
            let (tokens, cost) = on(model.as_str());
            let excess = reported.saturating_minus(&tokens);
            let figure = root.reported_cost.iter().find(|(m, _)| m == model).map(|(_, c)| *c);
            if excess == Tokens::default() && figure.is_none_or(|f| f <= cost) {
                continue;
            }
            costs.push(figure.filter(|f| *f >= cost).map(|f| f - cost));
            rows.push(UsageRow {
                at_ms: at_of(model.as_str()).or(end),
                model: Some(model.to_string()),
                tokens: excess,
                cost: Pico::default(),
            });
        }
        let mut sum = Tokens::default();
        for r in &rows {
            sum.add(&r.tokens);
        }
        if rows.is_empty() || sum != part.tokens {
            let last = marks.iter().filter_map(|(_, at)| *at).max().or(end);
            let model =
                root.model.as_ref().map(ToString::to_string).or_else(|| rows.first().and_then(|r| r.model.clone()));
            rows = vec![UsageRow { at_ms: last, model, tokens: part.tokens, cost: Pico::default() }];
            costs = vec![None];
        }
        // The cost by model where the agent's figures by model less the rows' say it exactly,
        // else all of it on the row with the most tokens.
        let split: Option<Vec<Pico>> = costs.into_iter().collect();
        match split.filter(|c| c.iter().fold(Pico::default(), |s, c| s + *c) == part.cost) {
            Some(split) => {
                for (r, c) in rows.iter_mut().zip(split) {
                    r.cost = c;
                }
            }
            None => {
                if let Some(r) = rows.iter_mut().max_by_key(|r| r.tokens.total) {
                    r.cost = part.cost;
                }
            }
        }
        rows
    }

    /// The spend of thread `index` (as the model ended it) by quarter hour and model, adding up to
    /// its tokens and cost exactly.
    pub fn usage(&self, index: usize, t: &Thread, prices: &Prices) -> Vec<UsageRow> {
        let rows = if t.responses_stated() == 0 {
            self.threads.get(index).and_then(|m| running(m, t, prices))
        } else {
            by_response(t, prices)
        };
        let rows = rows.unwrap_or_else(|| whole(t));
        merged(rows)
    }
}

/// Spend from the running total's marks: the tokens each quarter hour added, and what that cost
/// at the thread's price. `None` when the marks do not end at the thread's figures.
fn running(m: &Marks, t: &Thread, prices: &Prices) -> Option<Vec<UsageRow>> {
    if m.marks.last().map(|(_, tokens)| tokens) != Some(&t.tokens) {
        return None;
    }
    let price = t.model.as_ref().and_then(|model| prices.lookup(model.as_str()));
    let cost_of = |tokens: &Tokens| price.map_or(Pico::default(), |p| tokens.cost(&p));
    // The table made the thread's cost: each quarter hour's share is the difference of the costs
    // of the running totals, so the shares add up to it. Otherwise the cost goes at the end.
    let by_table = t.cost.is_some() && price.is_some_and(|p| Some(t.tokens.cost(&p)) == t.cost);
    let model = t.model.as_ref().map(ToString::to_string);
    let mut rows = Vec::with_capacity(m.marks.len());
    let mut before = Tokens::default();
    for (at, tokens) in &m.marks {
        let cost = if by_table { cost_of(tokens) - cost_of(&before) } else { Pico::default() };
        rows.push(UsageRow { at_ms: *at, model: model.clone(), tokens: tokens.minus(&before), cost });
        before = *tokens;
    }
    if !by_table {
        if let Some(last) = rows.last_mut() {
            last.cost = t.cost.unwrap_or_default();
        }
    }
    Some(rows)
}

/// Spend response by response, each priced by its own model as the model priced it (the settled
/// ones by quarter hour and model, priced so as they settled). `None` when the responses do not
/// add up to the thread's tokens.
fn by_response(t: &Thread, prices: &Prices) -> Option<Vec<UsageRow>> {
    let mut tokens = Tokens::default();
    let mut cost = Pico::default();
    let mut all_priced = true;
    let mut rows = Vec::with_capacity(t.settled_spend().len() + t.responses().len());
    // In the order of their last response: the row the cost goes on when it is not the table's
    // is the last of the latest quarter hour, as if each response were a row.
    let mut settled: Vec<_> = t.settled_spend().iter().collect();
    settled.sort_by_key(|s| s.last);
    for s in settled {
        tokens.add(&s.tokens);
        cost += s.cost;
        all_priced &= !s.unpriced;
        let model = s.model.as_ref().map(ToString::to_string);
        rows.push(UsageRow { at_ms: s.at_ms, model, tokens: s.tokens, cost: s.cost });
    }
    for r in t.responses() {
        tokens.add(&r.tokens);
        let share = r.share(prices);
        all_priced &= share.is_some();
        cost += share.unwrap_or_default();
        rows.push(UsageRow {
            at_ms: r.first_ms.map(quarter),
            model: r.model.as_ref().map(ToString::to_string),
            tokens: r.tokens,
            cost: share.unwrap_or_default(),
        });
    }
    if tokens != t.tokens {
        return None;
    }
    if !(all_priced && t.cost == Some(cost)) {
        // Not the table's cost (the agent's own figure, or unpriced): all of it at the end.
        for r in &mut rows {
            r.cost = Pico::default();
        }
        let last = rows.iter_mut().max_by_key(|r| r.at_ms)?;
        last.cost = t.cost.unwrap_or_default();
    }
    Some(rows)
}

/// The thread's whole spend at its last quarter hour.
fn whole(t: &Thread) -> Vec<UsageRow> {
    if t.tokens == Tokens::default() && t.cost.is_none_or(|c| c == Pico::default()) {
        return Vec::new();
    }
    vec![UsageRow {
        at_ms: t.last_ms.or(t.first_ms).map(quarter),
        model: t.model.as_ref().map(ToString::to_string),
        tokens: t.tokens,
        cost: t.cost.unwrap_or_default(),
    }]
}

/// One row per quarter hour and model, in time order (unknown times first).
pub fn merged(mut rows: Vec<UsageRow>) -> Vec<UsageRow> {
    rows.sort_by(|a, b| a.at_ms.cmp(&b.at_ms).then_with(|| a.model.cmp(&b.model)));
    let mut out: Vec<UsageRow> = Vec::with_capacity(rows.len());
    for r in rows {
        match out.last_mut() {
            Some(last) if last.at_ms == r.at_ms && last.model == r.model => {
                last.tokens.add(&r.tokens);
                last.cost += r.cost;
            }
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QUARTER_MS;
    use crate::pipeline::{Config, Pipeline};

    /// A Claude Code transcript: `n` responses a minute apart on three models (one the table does
    /// not price when `unknown`), each stated on two lines.
    fn transcript(n: u64, unknown: bool) -> Vec<String> {
        let models =
            ["claude-sonnet-4-5", "claude-opus-4-6", if unknown { "no-such-model" } else { "claude-haiku-4-5" }];
        let mut lines = Vec::new();
        for i in 0..n {
            let minute = i64::try_from(i).unwrap() * 60_000;
            let at = jiff::Timestamp::from_millisecond(1_700_000_000_000 + minute).unwrap();
            for output in [1, 2 + i] {
                lines.push(format!(
                    r#"{{"parentUuid":null,"isSidechain":false,"type":"assistant","sessionId":"s","uuid":"u{i}-{output}","timestamp":"{at}","requestId":"req{i}","message":{{"model":"{}","id":"msg{i}","type":"message","role":"assistant","content":[{{"type":"text","text":"x"}}],"usage":{{"input_tokens":{},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{output}}}}}}}"#,
                    models[(i % 3) as usize],
                    10 + i
                ));
            }
        }
        lines
    }

    /// The spend rows of every thread of `lines`, read with `config`, and the responses held.
    fn spend(lines: &[String], config: Config) -> (Vec<Vec<UsageRow>>, usize) {
        let prices = config.prices.clone();
        let (mut pipeline, mut ledger) = (Pipeline::new(config), Ledger::default());
        for l in lines {
            pipeline.push_with(l.as_bytes(), &mut ledger);
        }
        pipeline.finish_with(&mut ledger);
        let threads = &pipeline.model.threads;
        let held = threads.iter().map(|t| t.responses().len()).sum();
        (threads.iter().enumerate().map(|(i, t)| ledger.usage(i, t, &prices)).collect(), held)
    }

    #[test]
    fn a_thread_whose_oldest_responses_settled_has_the_spend_rows_of_one_that_holds_them_all() {
        for unknown in [false, true] {
            let lines = transcript(500, unknown);
            let mut bounded = Config::default();
            bounded.model.responses_per_thread = 4;
            let ((settled, held), (all, _)) = (spend(&lines, bounded), spend(&lines, Config::default()));
            assert!(held <= 5, "the oldest settled: {held} held");
            assert!(all.iter().flatten().count() > 30, "several quarter hours and models: {all:?}");
            assert_eq!(settled, all, "unknown model: {unknown}");
        }
    }

    #[test]
    fn quarters_hold_every_time_zone_s_midnight() {
        assert_eq!(quarter(0), 0);
        assert_eq!(quarter(QUARTER_MS - 1), 0);
        assert_eq!(quarter(-1), -QUARTER_MS);
        // Nepal is UTC+5:45: its midnight is a quarter hour of UTC.
        let kathmandu_midnight = -(5 * 60 + 45) * 60 * 1000;
        assert_eq!(quarter(kathmandu_midnight), kathmandu_midnight);
        // A hostile time past the representable quarter saturates instead of overflowing.
        assert_eq!(quarter(i64::MIN), i64::MIN);
        assert_eq!(quarter(i64::MAX), i64::MAX.div_euclid(QUARTER_MS) * QUARTER_MS);
    }
}
