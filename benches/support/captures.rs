//! A corpus made of the real `codex app-server` 0.171.0 capture lines of `tests/fixtures/` (the
//! same bytes, key order and envelope), re-stamped so that it looks like a long day of real traffic:
//!
//! - each root session replays one capture with fresh ids (threads, turns, items, calls), each of
//!   its children cloned two to six times (every clone its own spawn item, turns and items);
//! - item ids as the Responses API makes them (`msg_` + 48 hex digits), not the mock's `msg_6`;
//! - every streamed item becomes two to seven responses (item, deltas, completed item, the token and
//!   rate-limit updates after it), each re-streamed as 4 to 15 small deltas whose full text then
//!   appears wherever the capture had it: `item/completed`, `turn/completed`'s items, `wait` states;
//! - JSON-RPC response ids counted up as on one connection, times shifted per session;
//! - four sessions live at once, their lines interleaved.
//!
//! Everything else (`thread/start`, `thread/read` and `thread/list` responses, status changes,
//! errors) comes as the server wrote it. Shape per GiB: about 25,000 threads and 2,600 root
//! sessions, line p50 ~275 B and p99 ~0.9 KiB, ~72 % deltas (the bench prints it as measured).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

const CAPTURES: [(&str, &str, u32); 5] = [
    ("collab_v1", include_str!("../../tests/fixtures/codex-0.171.0/collab_v1.server.ndjson"), 40),
    ("collab_v2", include_str!("../../tests/fixtures/codex-0.171.0/collab_v2.server.ndjson"), 40),
    ("probe", include_str!("../../tests/fixtures/codex-0.171.0/probe.server.ndjson"), 8),
    ("retry", include_str!("../../tests/fixtures/codex-0.171.0/retry.server.ndjson"), 6),
    ("fail", include_str!("../../tests/fixtures/codex-0.171.0/fail.server.ndjson"), 6),
];
/// Sessions whose lines are interleaved at any moment.
const LIVE_SESSIONS: usize = 4;
/// Deltas per streamed item: `MIN_DELTAS..MIN_DELTAS + DELTA_SPREAD`.
const MIN_DELTAS: u64 = 4;
const DELTA_SPREAD: u64 = 12;
/// Items streamed per captured one (a turn answers in several): `MIN_REPS..MIN_REPS + REP_SPREAD`.
const MIN_REPS: usize = 2;
const REP_SPREAD: u64 = 6;
/// Clones of each captured child: `MIN_CLONES..MIN_CLONES + CLONE_SPREAD`.
const MIN_CLONES: usize = 2;
const CLONE_SPREAD: u64 = 5;

const WORDS: &[&str] = &[
    "the",
    "parser",
    "returns",
    "an",
    "error",
    "when",
    "the",
    "token",
    "is",
    "expired;",
    "I'll",
    "refactor",
    "`auth::verify`",
    "so",
    "it",
    "checks",
    "the",
    "signature",
    "first.",
    "Running",
    "`cargo",
    "test",
    "-p",
    "auth`",
    "now",
    "—",
    "all",
    "green.",
    "\n\n",
    "Next,",
    "the",
    "café",
    "handler",
    "\"retry\"",
    "path",
    "and",
    "its",
    "tests",
    "(3",
    "of",
    "them)",
    "in",
    "src/http/retry.rs",
    "\n- ",
    "done",
    "ok",
    "{\"status\":",
    "200}",
];

use super::corpus::Rng;

/// A piece of a template line.
#[derive(Debug, Clone)]
enum Piece {
    Lit(String),
    /// An id of the capture (an index into [`Template::ids`]), written without its quotes.
    Id(usize),
    /// The full text of a streamed item (index into [`Template::streams`]), JSON-escaped.
    Text(usize),
    /// The text of one delta of the line's stream.
    Delta,
    /// A time in ms since the epoch, as an offset from the capture's first time.
    Ms(i64),
    /// A time in seconds, as an offset.
    Secs(i64),
    /// A JSON-RPC response id.
    RpcId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdShape {
    Uuid,
    /// `msg_6`, `rs_1`: a Responses API item id (`msg_` + 48 hex digits in real traffic).
    Item,
    /// `call_spawn_1`: a tool call id (`call_` + 24 characters).
    Call,
}

#[derive(Debug)]
struct Line {
    pieces: Vec<Piece>,
    /// Written once per clone of this child, or once.
    cloned_for: Option<usize>,
    /// A delta of this stream: the first delta line of a stream carries all its deltas, the others
    /// are dropped.
    delta_of: Option<(usize, bool)>,
}

#[derive(Debug)]
struct Template {
    lines: Vec<Line>,
    ids: Vec<(IdShape, String)>,
    /// Per id: the child whose clones each get their own copy of it.
    clonable: Vec<Option<usize>>,
    streams: Vec<Stream>,
    children: usize,
}

/// An item the capture streamed with deltas.
#[derive(Debug)]
struct Stream {
    /// The child it belongs to (its clones stream their own text), if not the root.
    owner: Option<usize>,
    /// Its item id (an index into [`Template::ids`]).
    item: usize,
    /// The lines from its `item/started` to its `item/completed`, and on to the end of the token and
    /// rate-limit updates that follow it: the block a session repeats, as a model answers with
    /// several responses per turn.
    block: Option<(usize, usize, usize)>,
}

fn uuid_shaped(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(
            |(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_hexdigit() }
            },
        )
}

fn collect_ids(v: &Value, key: Option<&str>, out: &mut Vec<(IdShape, String)>) {
    match v {
        Value::String(s) => {
            let shape = if uuid_shaped(s) {
                Some(IdShape::Uuid)
            } else if matches!(key, Some("id" | "itemId")) && s.starts_with("call_") {
                Some(IdShape::Call)
            } else if matches!(key, Some("id" | "itemId")) && (s.starts_with("msg_") || s.starts_with("rs_")) {
                Some(IdShape::Item)
            } else {
                None
            };
            if let Some(shape) = shape {
                if !out.iter().any(|(_, x)| x == s) {
                    out.push((shape, s.clone()));
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_ids(x, key, out)),
        Value::Object(m) => {
            for (k, x) in m {
                // Object keys can be ids too (`agentsStates`).
                if uuid_shaped(k) && !out.iter().any(|(_, y)| y == k) {
                    out.push((IdShape::Uuid, k.clone()));
                }
                collect_ids(x, Some(k), out);
            }
        }
        _ => {}
    }
}

fn is_delta(method: &str) -> bool {
    method.ends_with("Delta") || method.ends_with("/delta")
}

fn compile(capture: &str) -> Template {
    let values: Vec<Value> = capture.lines().map(|l| serde_json::from_str(l).expect("captures are JSON")).collect();
    let mut ids = Vec::new();
    for v in &values {
        collect_ids(v, None, &mut ids);
    }
    // Threads: the first `thread/started` is the root; every other thread id a line is about is a child.
    let thread_of = |v: &Value| -> Option<String> {
        let p = v.get("params")?;
        p.get("threadId").or_else(|| p.get("thread")?.get("id"))?.as_str().map(str::to_owned)
    };
    let root = values.iter().find(|v| v["method"] == "thread/started").and_then(thread_of).expect("a root");
    let mut children: Vec<String> = Vec::new();
    for t in values.iter().filter_map(thread_of) {
        if t != root && !children.contains(&t) {
            children.push(t);
        }
    }
    // Streams: the deltas of each item, concatenated, are the text the capture shows for it.
    let mut streams: Vec<(String, String, Option<usize>)> = Vec::new(); // (item id, text, child)
    for v in &values {
        if let (Some(m), Some(item)) = (v["method"].as_str(), v["params"]["itemId"].as_str()) {
            if is_delta(m) {
                let delta = v["params"]["delta"].as_str().unwrap_or("");
                let owner = thread_of(v).and_then(|t| children.iter().position(|c| *c == t));
                match streams.iter_mut().find(|(i, _, _)| i == item) {
                    Some(s) => s.1.push_str(delta),
                    None => streams.push((item.to_owned(), delta.to_owned(), owner)),
                }
            }
        }
    }
    let quoted_texts: Vec<String> = streams.iter().map(|(_, t, _)| serde_json::to_string(t).unwrap()).collect();

    // Which children each line names, and so which ids only ever appear with one child.
    let raw: Vec<&str> = capture.lines().collect();
    let mentions: Vec<Vec<usize>> = raw
        .iter()
        .map(|l| (0..children.len()).filter(|&c| l.contains(&format!("\"{}\"", children[c]))).collect())
        .collect();
    // An id follows one child's clones when every line naming it is about that child alone or about
    // several children (those lines are written once, with the first clone's ids).
    let clonable: Vec<Option<usize>> = ids
        .iter()
        .map(|(_, id)| {
            let quoted = format!("\"{id}\"");
            let mut only: Option<usize> = None;
            for (l, m) in raw.iter().zip(&mentions) {
                if l.contains(&quoted) {
                    match (m.as_slice(), only) {
                        ([], _) => return None,
                        ([c], None) => only = Some(*c),
                        ([c], Some(o)) if *c != o => return None,
                        _ => {}
                    }
                }
            }
            only
        })
        .collect();

    let index: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, (_, s))| (s.as_str(), i)).collect();
    let t0 = first_ms(capture);
    let mut seen_stream = vec![false; streams.len()];
    let mut lines = Vec::new();
    for ((l, v), m) in raw.iter().zip(&values).zip(&mentions) {
        let method = v["method"].as_str().unwrap_or("");
        let delta_of = if is_delta(method) {
            let item = v["params"]["itemId"].as_str().unwrap_or("");
            streams.iter().position(|(i, _, _)| i == item).map(|s| {
                let first = !seen_stream[s];
                seen_stream[s] = true;
                (s, first)
            })
        } else {
            None
        };
        let pieces = tokenise(l, &index, &quoted_texts, delta_of.is_some(), t0);
        // A line about one child is written once per clone of it.
        let cloned_for = match m.as_slice() {
            [c] => Some(*c),
            _ => None,
        };
        lines.push(Line { pieces, cloned_for, delta_of });
    }
    let streams = streams
        .iter()
        .map(|(item, _, owner)| {
            let quoted = format!("\"{item}\"");
            let has = |l: usize, method: &str| values[l]["method"] == method && raw[l].contains(&quoted);
            let start = (0..raw.len()).find(|&l| has(l, "item/started"));
            let block =
                start.and_then(|a| (a..raw.len()).find(|&l| has(l, "item/completed")).map(|b| (a, b))).map(|(a, b)| {
                    let updates = values[b + 1..]
                        .iter()
                        .take_while(|v| {
                            v["method"] == "thread/tokenUsage/updated" || v["method"] == "account/rateLimits/updated"
                        })
                        .count();
                    (a, b, b + updates)
                });
            Stream { owner: *owner, item: index[item.as_str()], block }
        })
        .collect();
    Template { lines, ids, clonable, streams, children: children.len() }
}

fn first_ms(capture: &str) -> i64 {
    capture
        .lines()
        .find_map(|l| {
            let at = l.find("\"emittedAtMs\":")? + 14;
            l[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        })
        .expect("captures carry emittedAtMs")
}

/// Splits a line into literal text and slots: ids, texts, the delta, times, the response id.
fn tokenise(line: &str, ids: &HashMap<&str, usize>, texts: &[String], delta_line: bool, t0: i64) -> Vec<Piece> {
    let b = line.as_bytes();
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    let flush = |lit: &mut String, pieces: &mut Vec<Piece>| {
        if !lit.is_empty() {
            pieces.push(Piece::Lit(std::mem::take(lit)));
        }
    };
    if let Some(rest) = line.strip_prefix("{\"id\":") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            pieces.push(Piece::Lit("{\"id\":".into()));
            pieces.push(Piece::RpcId);
            i = 6 + digits;
        }
    }
    while i < b.len() {
        if b[i] == b'"' {
            let mut j = i + 1;
            while b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let quoted = &line[i..=j];
            let inner = &line[i + 1..j];
            if let Some(&id) = ids.get(inner) {
                lit.push('"');
                flush(&mut lit, &mut pieces);
                pieces.push(Piece::Id(id));
                lit.push('"');
            } else if delta_line && lit.ends_with("\"delta\":") {
                lit.push('"');
                flush(&mut lit, &mut pieces);
                pieces.push(Piece::Delta);
                lit.push('"');
            } else if let Some(s) = texts.iter().position(|t| t == quoted && t.len() > 2) {
                lit.push('"');
                flush(&mut lit, &mut pieces);
                pieces.push(Piece::Text(s));
                lit.push('"');
            } else {
                lit.push_str(quoted);
            }
            i = j + 1;
        } else if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let n = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let number = &line[i..i + n];
            match (n, number.parse::<i64>()) {
                (13, Ok(ms)) if (ms - t0).abs() < 3_600_000 => {
                    flush(&mut lit, &mut pieces);
                    pieces.push(Piece::Ms(ms - t0));
                }
                (10, Ok(s)) if (s * 1000 - t0).abs() < 3_600_000 => {
                    flush(&mut lit, &mut pieces);
                    pieces.push(Piece::Secs(s - t0 / 1000));
                }
                _ => lit.push_str(number),
            }
            i += n;
        } else {
            let ch = line[i..].chars().next().unwrap();
            lit.push(ch);
            i += ch.len_utf8();
        }
    }
    flush(&mut lit, &mut pieces);
    pieces
}

/// One line to write: (template line, clone, repetition, delta number).
type Step = (usize, usize, usize, Option<usize>);

/// One session being written: its template, fresh ids and texts, and the order of its lines.
struct Session<'t> {
    template: &'t Template,
    /// Fresh ids per (id, clone, repetition), made when first written.
    ids: HashMap<(usize, usize, usize), String>,
    /// Per (stream, clone, repetition): the deltas, JSON-escaped without quotes.
    deltas: HashMap<(usize, usize, usize), Vec<String>>,
    /// Repetitions of each stream's block.
    reps: Vec<usize>,
    /// Per id: the stream whose repetitions each get their own copy of it.
    repeated: Vec<Option<usize>>,
    t0: i64,
    plan: std::vec::IntoIter<Step>,
}

fn escaped(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap();
    q[1..q.len() - 1].to_owned()
}

impl<'t> Session<'t> {
    fn new(template: &'t Template, rng: &mut Rng, t0: i64) -> Self {
        let clones = if template.children > 0 { MIN_CLONES + rng.below(CLONE_SPREAD) as usize } else { 1 };
        let reps: Vec<usize> = template
            .streams
            .iter()
            .map(|s| if s.block.is_some() { MIN_REPS + rng.below(REP_SPREAD) as usize } else { 1 })
            .collect();
        let mut repeated = vec![None; template.ids.len()];
        for (k, s) in template.streams.iter().enumerate() {
            repeated[s.item] = Some(k);
        }
        let mut deltas = HashMap::new();
        for (k, s) in template.streams.iter().enumerate() {
            for clone in 0..if s.owner.is_some() { clones } else { 1 } {
                for rep in 0..reps[k] {
                    let count = MIN_DELTAS + rng.below(DELTA_SPREAD);
                    let chunks = (0..count)
                        .map(|_| {
                            let mut d = String::new();
                            for _ in 0..=rng.below(5) {
                                d.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
                                d.push(' ');
                            }
                            escaped(&d)
                        })
                        .collect();
                    deltas.insert((k, clone, rep), chunks);
                }
            }
        }
        let mut session =
            Self { template, ids: HashMap::new(), deltas, reps, repeated, t0, plan: Vec::new().into_iter() };
        session.plan = session.plan(clones).into_iter();
        session
    }

    /// The order of the session's lines: the capture's, with each child's lines once per clone,
    /// each stream's block repeated, each stream's deltas where its first delta was.
    fn plan(&self, clones: usize) -> Vec<Step> {
        let t = self.template;
        let mut plan = Vec::new();
        let emit = |plan: &mut Vec<Step>, l: usize, rep: usize| {
            let line = &t.lines[l];
            let clones = if line.cloned_for.is_some() { clones } else { 1 };
            match line.delta_of {
                Some((_, false)) => {}
                Some((s, true)) => {
                    let rounds =
                        (0..clones).filter_map(|c| self.deltas.get(&(s, c, rep))).map(Vec::len).max().unwrap_or(0);
                    for j in 0..rounds {
                        plan.extend((0..clones).map(|c| (l, c, rep, Some(j))));
                    }
                }
                None => plan.extend((0..clones).map(|c| (l, c, rep, None))),
            }
        };
        let mut l = 0;
        while l < t.lines.len() {
            let block =
                t.streams.iter().enumerate().find_map(|(k, s)| s.block.filter(|b| b.0 == l).map(|b| (k, b.1, b.2)));
            if let Some((k, completed, end)) = block {
                let item = t.streams[k].item;
                for rep in 0..self.reps[k] {
                    for m in l..=end {
                        // Other threads' lines inside the block are written once.
                        let mine =
                            m > completed || t.lines[m].pieces.iter().any(|p| matches!(p, Piece::Id(i) if *i == item));
                        if mine || rep == 0 {
                            emit(&mut plan, m, rep);
                        }
                    }
                }
                l = end + 1;
            } else {
                emit(&mut plan, l, usize::MAX);
                l += 1;
            }
        }
        plan
    }

    /// Writes the session's next line; false when it has none left.
    fn write_next(&mut self, out: &mut String, rpc: &mut u64, serial: &mut u64, rng: &mut Rng) -> bool {
        let Some((l, clone, rep, delta)) = self.plan.next() else { return false };
        let line = &self.template.lines[l];
        for p in &line.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Id(i) => {
                    let c = if self.template.clonable[*i].is_some() { clone } else { 0 };
                    // Outside a stream's block its item is the last repetition (what the agent said last).
                    let r = self.repeated[*i].map_or(0, |k| rep.min(self.reps[k] - 1));
                    let (shape, _) = self.template.ids[*i];
                    out.push_str(self.ids.entry((*i, c, r)).or_insert_with(|| {
                        *serial += 1;
                        fresh(shape, *serial, rng)
                    }));
                }
                Piece::Text(s) => {
                    let c = if self.template.streams[*s].owner.is_some() { clone } else { 0 };
                    let r = rep.min(self.reps[*s] - 1);
                    if let Some(chunks) = self.deltas.get(&(*s, c, r)) {
                        for d in chunks {
                            out.push_str(d);
                        }
                    }
                }
                Piece::Delta => {
                    let c = if line.cloned_for.is_some() { clone } else { 0 };
                    let s = line.delta_of.map_or(0, |(s, _)| s);
                    let chunk = self.deltas.get(&(s, c, rep)).and_then(|d| d.get(delta.unwrap_or(0)));
                    out.push_str(chunk.map_or("", String::as_str));
                }
                Piece::Ms(d) => {
                    let _ = write!(out, "{}", self.t0 + d);
                }
                Piece::Secs(d) => {
                    let _ = write!(out, "{}", self.t0 / 1000 + d);
                }
                Piece::RpcId => {
                    *rpc += 1;
                    let _ = write!(out, "{rpc}");
                }
            }
        }
        out.push('\n');
        true
    }
}

fn fresh(shape: IdShape, serial: u64, rng: &mut Rng) -> String {
    match shape {
        // UUIDv7-shaped: time-ordered prefix, random tail.
        IdShape::Uuid => format!(
            "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
            0x019a_0000 + (serial >> 16),
            serial & 0xffff,
            rng.below(0x1000),
            0x8000 | rng.below(0x4000),
            rng.next() & 0xffff_ffff_ffff
        ),
        IdShape::Item => format!("msg_{:016x}{:016x}{:016x}", serial, rng.next(), rng.next()),
        IdShape::Call => format!("call_{:08x}{:016x}", serial as u32, rng.next()),
    }
}

/// At least `target_bytes` of NDJSON (each line ends in `\n`).
pub fn generate(target_bytes: usize) -> Vec<u8> {
    let templates: Vec<(Template, u32)> = CAPTURES.iter().map(|(_, text, w)| (compile(text), *w)).collect();
    let total_weight: u32 = templates.iter().map(|(_, w)| w).sum();
    let mut rng = Rng(0x0c0d_ec5e_55e5_1017);
    let mut out = String::with_capacity(target_bytes + (1 << 20));
    let (mut serial, mut rpc) = (0u64, 0u64);
    let mut clock: i64 = 1_795_987_208_000;
    let mut live: Vec<Session<'_>> = Vec::new();
    let start = |rng: &mut Rng, clock: &mut i64| {
        let mut pick = rng.below(u64::from(total_weight)) as u32;
        let template = &templates
            .iter()
            .find(|(_, w)| {
                if pick < *w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .expect("weights cover the range")
            .0;
        *clock += 1_000 + i64::from(rng.below(20_000) as u32);
        Session::new(template, rng, *clock)
    };
    while out.len() < target_bytes || !live.is_empty() {
        while out.len() < target_bytes && live.len() < LIVE_SESSIONS {
            live.push(start(&mut rng, &mut clock));
        }
        let k = rng.below(live.len() as u64) as usize;
        if !live[k].write_next(&mut out, &mut rpc, &mut serial, &mut rng) {
            live.swap_remove(k);
        }
    }
    out.into_bytes()
}

/// What the corpus looks like, for the bench to print next to its figures.
pub struct Shape {
    pub lines: usize,
    pub p50: usize,
    pub p99: usize,
    pub delta_share: f64,
    pub roots: usize,
    pub threads: usize,
}

pub fn shape(corpus: &[u8]) -> Shape {
    let mut lens = Vec::new();
    let (mut deltas, mut roots) = (0usize, 0usize);
    let mut threads = std::collections::HashSet::new();
    for l in corpus.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        lens.push(l.len() + 1);
        let head = &l[..l.len().min(60)];
        if memchr::memmem::find(head, b"elta\"").is_some() || memchr::memmem::find(head, b"Delta\"").is_some() {
            deltas += 1;
        }
        if l.starts_with(b"{\"method\":\"thread/started\"") {
            roots += 1;
        }
        if let Some(at) = memchr::memmem::find(l, b"\"threadId\":\"") {
            threads.insert(l[at + 12..at + 48].to_vec());
        }
    }
    lens.sort_unstable();
    Shape {
        lines: lens.len(),
        p50: lens[lens.len() / 2],
        p99: lens[lens.len() * 99 / 100],
        delta_share: deltas as f64 / lens.len().max(1) as f64,
        roots,
        threads: threads.len(),
    }
}
