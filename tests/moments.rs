//! What the model shows at every moment of every real capture, not only at its end: the inputs
//! read as `--until` reads them (one clock for all files of a session), and the model checked
//! after the last record of each stream time. At each moment every agent is absent before its
//! spawn, active while a turn of its own is open (its parent too, while the parent's turn that
//! spawned it is open), not active once its last turn ended, never back to active within the
//! same turn, and its tokens never fall; a child that tells no turn of its own is never pending
//! once a line of its own came. A running agent reads `◷ waiting on N` exactly while
//! it waits on N: its spawn calls still open or whose agent works, and its children at work (or
//! spawned and not started) that no call names. The header's total is its rows' sum (the
//! unattributed parts included) and never falls; an agent's cost never falls; an agent or a
//! subtree that used nothing costs $0, not unpriced.
//!
//! Read one file after another (the order before the merge, [`Order::Named`]), the same captures
//! break these rules: `each_moment_is_wrong_without_the_clock` shows that the checks see it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use swarmtop::commands::ingest_timed;
use swarmtop::commands::stats::render_json;
use swarmtop::model::prices::Pico;
use swarmtop::model::{AgentOp, ItemStatus, Model, Rollup, Status, Tokens};
use swarmtop::pipeline::Config;
use swarmtop::pipeline::Pipeline;
use swarmtop::router::Event;
use swarmtop::source::files;
use swarmtop::source::merge::{Merged, Order, Timing};
use swarmtop::ui::status::{Activity, Clock, Shown};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every real capture a user could hand `stats`: recordings of each agent's own output and each
/// folder that is one session (Claude projects, Codex rollout folders, OpenCode data folders).
fn captures() -> Vec<PathBuf> {
    let root = fixtures();
    let mut out = Vec::new();
    let listed = |dir: &str, keep: &dyn Fn(&Path) -> bool| {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .filter(|p| keep(p))
            .collect();
        paths.sort();
        paths
    };
    let recording = |p: &Path| {
        p.is_file() && p.extension().is_some_and(|e| e == "ndjson") && !p.to_string_lossy().contains(".client.")
    };
    for dir in ["codex-0.171.0", "claude-2.1.332", "claude-2.1.332-otlp", "opencode-1.18.33", "tee"] {
        out.extend(listed(dir, &recording));
    }
    for dir in ["codex-0.171.0/rollouts", "claude-2.1.332", "opencode-1.18.33"] {
        out.extend(listed(dir, &Path::is_dir));
    }
    out.push(root.join("claude-2.1.39"));
    // The built-in demo (a real Codex session, `demo/README.md`): where the issue saw `waiting on
    // 5` beside `⑂ spawn ×4`.
    out.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/demo.ndjson"));
    out
}

/// The whole capture, read to its end: what each moment is checked against.
fn at_end(input: &Path, order: Order) -> Pipeline {
    let inputs = files::expand(&[input.to_owned()]).expect("inputs");
    let mut pipeline = Pipeline::default();
    let mut merged = Merged::open(inputs.as_slice(), Timing { order, until: None }).expect("open");
    while let Some((record, origin)) = merged.next_record().expect("read") {
        pipeline.feed(record, origin, &mut |_: &Event<'_, '_>| {});
    }
    pipeline.finish();
    pipeline
}

/// What the end says of one agent.
struct Known {
    parent: Option<String>,
    /// When it was spawned: its parent's spawning call, else its own first line.
    spawned_ms: Option<i64>,
    /// Its turns: (started, completed).
    turns: Vec<(Option<i64>, Option<i64>)>,
    /// While this turn of its parent is open (started, completed), the parent works for it.
    parent_turn: Option<(Option<i64>, Option<i64>)>,
    /// The item that spawned it, when its parent has one.
    card: Option<String>,
    /// Its own spawn calls: (item id, started, completed, whether it failed or was stopped).
    spawns: Vec<(String, Option<i64>, Option<i64>, bool)>,
    /// For an agent that tells no turn of its own (a Claude stream-json or OTLP child: its prompt
    /// is not in the stream): when it ended, from the times of its call and its lines.
    ended_ms: Option<i64>,
}

impl Known {
    /// At work, or spawned and not started yet: what a parent waits on (status.md: waiting
    /// while it has live sub-agents).
    fn live(&self, t: i64) -> bool {
        let first = self.turns.first().and_then(|&(from, _)| from);
        let spawned = self.spawned_ms.is_some_and(|s| s <= t);
        self.turns.iter().any(|&turn| within(t, turn))
            || (spawned && first.is_some_and(|f| t < f))
            || (spawned && self.turns.is_empty() && self.ended_ms.is_none_or(|e| t < e))
    }
}

fn known(model: &Model) -> HashMap<String, Known> {
    let mut out = HashMap::new();
    for t in &model.threads {
        let parent = t.parent.map(|p| model.thread(p));
        let card = parent.zip(t.card.as_deref()).and_then(|(p, c)| p.item(c));
        let spawned_ms = match (card.and_then(|c| c.started_ms), t.first_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let parent_turn = parent
            .zip(card.and_then(|c| c.turn))
            .and_then(|(p, turn)| p.turns.get(turn))
            .map(|turn| (turn.started_ms, turn.completed_ms));
        out.insert(
            t.id.to_string(),
            Known {
                parent: parent.map(|p| p.id.to_string()),
                spawned_ms,
                turns: t.turns.iter().map(|turn| (turn.started_ms, turn.completed_ms)).collect(),
                parent_turn,
                card: t.card.as_deref().map(str::to_owned),
                spawns: t
                    .items
                    .iter()
                    .filter(|i| i.op == Some(AgentOp::Spawn))
                    .map(|i| {
                        let failed =
                            matches!(i.status, ItemStatus::Failed | ItemStatus::Interrupted | ItemStatus::Declined);
                        (i.id.to_string(), i.started_ms, i.completed_ms, failed)
                    })
                    .collect(),
                ended_ms: ended_ms(t, card),
            },
        );
    }
    out
}

/// When an agent that tells no turn of its own ended (`None`: it had not at the end). A call
/// answered before its agent's first line launched it in the background (Claude's
/// `async_launched`): the agent ends with its last line. Otherwise the call's answer is the
/// agent's (a foreground child; OTLP exports an agent's spans after it answered).
fn ended_ms(t: &swarmtop::model::Thread, card: Option<&swarmtop::model::Item>) -> Option<i64> {
    if t.status.is_active() {
        return None;
    }
    match (card.and_then(|c| c.completed_ms), t.first_ms) {
        (Some(answered), Some(first)) if answered < first => t.last_ms,
        (Some(answered), _) => Some(answered),
        (None, _) => t.last_ms,
    }
}

fn within(t: i64, (from, to): (Option<i64>, Option<i64>)) -> bool {
    from.is_some_and(|f| f <= t) && to.is_none_or(|e| t < e)
}

/// What was seen of one agent at the moments before.
#[derive(Default)]
struct Seen {
    tokens: u64,
    /// Its cost, once known.
    cost: Option<Pico>,
    /// The turn (by count) in which it ended, once it did.
    ended_in: Option<usize>,
}

/// The rules broken at moment `t`, each as one line.
fn check(model: &Model, t: i64, end: &HashMap<String, Known>, seen: &mut HashMap<String, Seen>) -> Vec<String> {
    let mut broken = Vec::new();
    let index: HashMap<&str, &swarmtop::model::Thread> = model.threads.iter().map(|th| (&*th.id, th)).collect();
    for th in &model.threads {
        let id = th.id.to_string();
        let s = seen.entry(id.clone()).or_default();
        if th.tokens.total < s.tokens {
            broken.push(format!("{id}: tokens fell from {} to {}", s.tokens, th.tokens.total));
        }
        s.tokens = th.tokens.total;
        if let (Some(before), Some(now)) = (s.cost, th.cost)
            && now < before
        {
            broken.push(format!("{id}: cost fell from {before:?} to {now:?}"));
        }
        s.cost = th.cost.or(s.cost);
        let active = th.status.is_active();
        if active && s.ended_in == Some(th.turns.len()) {
            broken.push(format!("{id}: {} again within the turn it ended", th.status.as_str()));
        }
        if active {
            s.ended_in = None;
        } else if matches!(th.status, Status::Idle | Status::Failed | Status::Interrupted | Status::Closed) {
            s.ended_in = Some(th.turns.len());
        }
        let Some(k) = end.get(&id) else { continue };
        if k.parent.is_some() && k.spawned_ms.is_some_and(|spawned| t < spawned) {
            broken.push(format!("{id}: shown before its spawn"));
        }
        if let Some(&(_, Some(done))) = k.turns.last()
            && t >= done
            && active
        {
            broken.push(format!("{id}: {} after its last turn ended", th.status.as_str()));
        }
        // A child that tells no turn of its own (its prompt is not in the stream) works from its
        // first line: only its work is told, so it is never pending once a line of it came.
        if k.parent.is_some() && k.turns.is_empty() && th.first_ms.is_some() && th.status == Status::Pending {
            broken.push(format!("{id}: pending after a line of its own"));
        }
    }
    for (id, k) in end {
        let open = k.turns.iter().any(|&turn| within(t, turn));
        if !open {
            continue;
        }
        let Some(&th) = index.get(id.as_str()) else {
            broken.push(format!("{id}: absent while its turn is open"));
            continue;
        };
        if !th.status.is_active() {
            broken.push(format!("{id}: {} while its turn is open", th.status.as_str()));
        }
        let parent = th.parent.map(|p| model.thread(p).id.to_string());
        if parent != k.parent {
            broken.push(format!("{id}: under {parent:?} while it works, not {:?}", k.parent));
        }
        if let (Some(p), Some(turn)) = (th.parent, k.parent_turn)
            && within(t, turn)
            && !model.thread(p).status.is_active()
        {
            let p = model.thread(p);
            broken.push(format!("{id}: its parent {} is {} while it works for it", p.id, p.status.as_str()));
        }
    }
    broken.extend(waiting(model, t, end));
    broken.extend(costs(model));
    // Nor does the header's total fall (an agent's own figure replacing the table's is not less).
    let total = model.totals();
    let s = seen.entry("(total)".to_owned()).or_default();
    if let (Some(before), Some(now)) = (s.cost, total.cost_usd())
        && now < before
    {
        broken.push(format!("the total fell from {before:?} to {now:?}"));
    }
    if total.tokens.total < s.tokens {
        broken.push(format!("the total's tokens fell from {} to {}", s.tokens, total.tokens.total));
    }
    (s.cost, s.tokens) = (total.cost_usd().or(s.cost), total.tokens.total);
    broken
}

/// The money at one moment (issue 19): the header's total is the sessions' rows plus what no
/// session holds (orphans, threads not placed yet), unattributed parts included; an agent that
/// used nothing costs $0 (not unpriced: `1 unpriced (—)` flickered until a child's model
/// came), and so does a subtree that used nothing (an OpenCode session at 0 tokens is $0, as
/// OpenCode says).
fn costs(model: &Model) -> Vec<String> {
    let mut broken = Vec::new();
    let total = model.totals();
    let mut rows = Rollup::default();
    for (i, th) in model.threads.iter().enumerate() {
        let idx = swarmtop::router::ThreadIdx(u32::try_from(i).expect("index"));
        if th.parent.is_none() {
            rows = rows.plus(&model.spent(idx));
        }
        if th.tokens == Tokens::default() && th.cost.is_none() {
            broken.push(format!("{}: unpriced with no usage", th.id));
        }
        let spent = model.spent(idx);
        if spent.tokens == Tokens::default() && spent.cost_usd().is_none() {
            broken.push(format!("{}: its rows read — with no usage", th.id));
        }
    }
    if (rows.tokens, rows.cost, rows.cost_usd()) != (total.tokens, total.cost, total.cost_usd()) {
        broken.push(format!(
            "the total {:?} {:?} is not its rows' {:?} {:?}",
            total.tokens.total,
            total.cost_usd(),
            rows.tokens.total,
            rows.cost_usd()
        ));
    }
    let unpriced = model.threads.iter().filter(|th| th.cost.is_none()).count();
    if unpriced != model.unpriced_threads() || total.threads - total.priced != u32::try_from(unpriced).expect("n") {
        broken.push(format!("{unpriced} unpriced, the total says {}", total.threads - total.priced));
    }
    broken
}

/// What a running parent waits on at `t`, from the end: each spawn call of its own still
/// unanswered or whose agent is live, and each live child no call of its own spawned; a call and
/// the child it spawned are one.
fn waited_on(model: &Model, parent: &str, t: i64, end: &HashMap<String, Known>) -> u32 {
    let Some(k) = end.get(parent) else { return 0 };
    let mine = model.threads.iter().find(|th| &*th.id == parent);
    let children: Vec<(&String, &Known)> = end.iter().filter(|(_, c)| c.parent.as_deref() == Some(parent)).collect();
    // A child is waited on once it is known as this parent's: its first line may come before the
    // item that spawns it (wire.md §3, `collab_v2` child 3), and nothing names its parent then.
    let under = |id: &str| {
        model.threads.iter().any(|th| &*th.id == id && th.parent.is_some_and(|p| &*model.thread(p).id == parent))
    };
    let live = |id: &str, c: &Known| under(id) && c.live(t);
    let mut n = 0;
    let mut unnamed_calls = Vec::new();
    for (id, _, completed, failed) in &k.spawns {
        // A call is open from the moment it is told, not from its start at the end: an OpenCode
        // store makes a `task` part (a pending tool) before its run starts (`state.time.start`,
        // the item's start at the end), and `opencode run --format json` tells a call only once
        // it finished (wire.md §9).
        let open = mine.is_some_and(|th| th.item(id).is_some()) && completed.is_none_or(|c| t < c);
        let mut its = children.iter().filter(|(_, c)| c.card.as_ref() == Some(id)).peekable();
        if its.peek().is_some() {
            n += u32::from(open || its.any(|(cid, c)| live(cid, c)));
        } else {
            unnamed_calls.push((open, *failed));
        }
    }
    // A child no call names even at the end is the next call no child names: one call starts
    // one agent, in order; a call that failed or was stopped started none.
    let calls: Vec<&String> = k.spawns.iter().map(|(id, ..)| id).collect();
    let mut unnamed: Vec<&(&String, &Known)> =
        children.iter().filter(|(_, c)| c.card.as_ref().is_none_or(|card| !calls.contains(&card))).collect();
    unnamed.sort_by_key(|(_, c)| c.spawned_ms);
    let mut unnamed = unnamed.into_iter();
    for (open, failed) in unnamed_calls {
        let agent = if failed { None } else { unnamed.next() };
        n += u32::from(open || agent.is_some_and(|(cid, c)| live(cid, c)));
    }
    n + u32::try_from(unnamed.filter(|(cid, c)| live(cid, c)).count()).expect("count")
}

/// A running agent shows `◷ waiting on N` exactly while it waits on N agents or calls (issue 19:
/// `waiting on 5` beside `⑂ spawn ×4`; a Claude parent with outstanding `Agent` calls `● running`).
fn waiting(model: &Model, t: i64, end: &HashMap<String, Known>) -> Vec<String> {
    let activity = Activity::of(model);
    let clock = Clock { now_ms: Some(t), stall_ms: 0, ended: false };
    let mut broken = Vec::new();
    for (i, th) in model.threads.iter().enumerate() {
        if th.status != Status::Running {
            continue;
        }
        let idx = swarmtop::router::ThreadIdx(u32::try_from(i).expect("index"));
        let shown = Shown::of(th, activity.subtree(idx), clock);
        let expected = waited_on(model, &th.id, t, end);
        let right =
            if expected == 0 { !matches!(shown, Shown::OnChildren(_)) } else { shown == Shown::OnChildren(expected) };
        if !right {
            broken.push(format!("{}: {} {} while it waits on {expected}", th.id, shown.glyph(), shown.word()));
        }
    }
    broken
}

/// `stats --json` of `input` as of `until`, read as the command reads it (on two cores, in chunks).
fn stats_until(input: &Path, until: i64) -> String {
    let timing = Timing { until: Some(until), ..Timing::default() };
    let (pipeline, error) =
        ingest_timed(&[input.to_owned()], Config::default(), timing, &mut |_: &Event<'_, '_>| {}, 2).expect("read");
    assert!(error.is_none(), "{error:?}");
    render_json(&pipeline)
}

/// Walks `input` read in `order`, showing `at` the model after the last record of each stream
/// time, as `--until` that time shows it. Without `until` a single input is read untimed, as
/// `stats` reads it: no moment at all.
fn walk(input: &Path, order: Order, until: Option<i64>, mut at: impl FnMut(&Pipeline, i64)) {
    let inputs = files::expand(&[input.to_owned()]).expect("inputs");
    let mut merged = Merged::open(inputs.as_slice(), Timing { order, until }).expect("open");
    let mut pipeline = Pipeline::default();
    let mut moment: Option<i64> = None;
    loop {
        let next = merged.peek().expect("read").is_some();
        let next_time = if next {
            merged.take();
            merged.time()
        } else {
            None
        };
        // The moment before this record's time is over: look at the model as `--until` shows it.
        if let Some(t) = moment
            && (!next || next_time != Some(t))
        {
            at(&pipeline, t);
        }
        if !next {
            break;
        }
        moment = next_time.or(moment);
        let (record, origin) = merged.current().expect("the record taken");
        pipeline.feed(record, origin, &mut |_: &Event<'_, '_>| {});
    }
}

/// Every rule broken at any moment of `input` read in `order`, and how many moments it had; with
/// `Order::Time`, some of the moments are also read as `--until` reads them, which must give the
/// same figures.
fn moments(input: &Path, order: Order) -> (Vec<String>, u32) {
    let end = known(&at_end(input, order).model);
    let mut seen = HashMap::new();
    let mut broken = Vec::new();
    let mut count = 0u32;
    // Every capture read timed, as `--until` reads it: a folder's files merged by time, and a
    // recording alone (one tee recording, stream-json file or rollout) at its own lines' times.
    walk(input, order, Some(i64::MAX), |pipeline, t| {
        for rule in check(&pipeline.model, t, &end, &mut seen) {
            broken.push(format!("{}: at {t}: {rule}", input.strip_prefix(fixtures()).unwrap_or(input).display()));
        }
        count += 1;
        if order == Order::Time && count % 37 == 1 {
            assert_eq!(stats_until(input, t), render_json(pipeline), "{}: --until {t}", input.display());
        }
    });
    (broken, count)
}

#[test]
fn each_moment_of_every_capture_is_true() {
    let mut broken = Vec::new();
    for input in captures() {
        if std::env::var("ONLY").is_ok_and(|o| !input.to_string_lossy().ends_with(&o)) {
            continue;
        }
        let (rules, count) = moments(&input, Order::Time);
        let name = input.strip_prefix(fixtures()).unwrap_or(&input).display().to_string();
        // Each is checked on its way, not only at its end (read untimed, a recording had none);
        // `codex exec --json` writes no time at all: only its end is known.
        assert!(count > 1 || name.ends_with("exec.ndjson"), "{name}: {count} moments");
        eprintln!("{name}: {count} moments");
        broken.extend(rules);
    }
    assert!(broken.is_empty(), "{} rules broken:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn each_moment_is_wrong_without_the_clock() {
    // The same checks on the files read one after another: children of Claude folders and Codex
    // rollouts appear only after their parent's whole file.
    for name in ["claude-2.1.332/parallel", "codex-0.171.0/rollouts/collab_v1"] {
        let (broken, _) = moments(&fixtures().join(name), Order::Named);
        assert!(!broken.is_empty(), "{name}: the checks see nothing wrong without the merge");
        eprintln!(
            "{name} read file after file: {} rules broken, as:\n{}",
            broken.len(),
            broken[..broken.len().min(4)].join("\n")
        );
    }
}

fn tree(args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("swarmtop").expect("binary").args(args).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn until_shows_each_agent_as_it_was_then() {
    let dir = fixtures().join("claude-2.1.332/parallel");
    let dir = dir.to_str().expect("utf-8 path");
    // 05:11:20: the lead has started both children; the grandchild is not spawned yet.
    let at = tree(&["tree", "--until", "2026-12-02T05:11:20Z", dir]);
    assert_eq!(at, tree(&["tree", "--until", "1796188280000", dir]), "RFC 3339 and unix ms name one moment");
    assert_eq!(at, tree(&["tree", "--until", "2026-12-02T06:11:20+01:00", dir]));
    let rows: Vec<(&str, &str)> = at
        .lines()
        .map(|l| (l.split("  ").next().unwrap_or_default(), l.split("  ").nth(2).unwrap_or_default()))
        .collect();
    assert_eq!(
        rows,
        [("● lead", "running"), ("├─ ● Survey the project", "running"), ("└─ ● Check the docs", "running")],
        "{at}"
    );
    // Before anything happened there is nothing; at the end, what `tree` says without it.
    assert_eq!(tree(&["tree", "--until", "0", dir]), "(no threads)\n");
    assert_eq!(tree(&["tree", "--until", "4102444800000", dir]), tree(&["tree", dir]));
    // `route` stops at the same moment.
    let routed = tree(&["route", "--until", "2026-12-02T05:11:20Z", dir]).lines().count();
    assert!(routed > 0 && routed < tree(&["route", dir]).lines().count(), "{routed} lines routed by then");
}

#[test]
fn until_takes_only_a_time() {
    for bad in ["yesterday", "2026-12-02", "12:00", "99999999999999999999", ""] {
        let out = assert_cmd::Command::cargo_bin("swarmtop")
            .expect("binary")
            .args(["stats", "--until", bad])
            .arg(fixtures().join("claude-2.1.39"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a time"), "{bad:?}");
    }
}

/// What an OpenCode store says itself, read with SQL rather than through swarmtop: when each
/// child's `task` call was made (its part's row) and by whom, and when each session answered
/// (an assistant message finished other than for tools) or failed (one with an error).
#[derive(Default)]
struct StoreTruth {
    spawned: HashMap<String, (String, i64)>,
    answered: HashMap<String, i64>,
    failed: HashMap<String, i64>,
}

fn store_truth(db: &Path) -> StoreTruth {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("store");
    let mut truth = StoreTruth::default();
    let mut st = conn
        .prepare(
            "SELECT json_extract(data, '$.state.metadata.sessionId'), session_id, time_created FROM part \
             WHERE json_extract(data, '$.tool') = 'task' AND json_extract(data, '$.state.metadata.sessionId') IS NOT NULL",
        )
        .expect("sql");
    for row in st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("sql") {
        let (child, parent, at): (String, String, i64) = row.expect("row");
        truth.spawned.insert(child, (parent, at));
    }
    let mut st = conn
        .prepare(
            "SELECT session_id, json_extract(data, '$.time.completed'), json_extract(data, '$.finish'), \
             json_extract(data, '$.error') IS NOT NULL FROM message \
             WHERE json_extract(data, '$.role') = 'assistant' AND json_extract(data, '$.time.completed') IS NOT NULL",
        )
        .expect("sql");
    for row in st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).expect("sql") {
        let (session, at, finish, error): (String, i64, Option<String>, bool) = row.expect("row");
        let first = |m: &mut HashMap<String, i64>| {
            let e = m.entry(session.clone()).or_insert(at);
            *e = (*e).min(at);
        };
        if error {
            first(&mut truth.failed);
        } else if finish.is_some_and(|f| f != "tool-calls") {
            first(&mut truth.answered);
        }
    }
    truth
}

/// A replayed OpenCode store at every moment (issue 19): its rows hold each session, message
/// and part as it ended, and read table by table every child existed from the start and every
/// agent was done from its first message. At each moment a child exists only once its parent's
/// `task` call was made, under that parent, and an agent is `✓` only once it answered (`✗` once
/// it failed); and the replay has moments in the middle, where some agent still works.
#[test]
fn each_moment_of_an_opencode_store_is_as_the_store_says() {
    for name in ["tree", "subfail", "badtype"] {
        let dir = fixtures().join("opencode-1.18.33").join(name);
        let truth = store_truth(&dir.join("opencode.db"));
        assert!(!truth.spawned.is_empty() && !truth.answered.is_empty(), "{name}: a store with sub-agents");
        let (mut broken, mut moments, mut working) = (Vec::new(), 0, 0);
        walk(&dir, Order::Time, Some(i64::MAX), |pipeline, t| {
            moments += 1;
            let model = &pipeline.model;
            let mut any_active = false;
            for th in &model.threads {
                let id = th.id.to_string();
                any_active |= th.status.is_active();
                if let Some((parent, made)) = truth.spawned.get(&id) {
                    if t < *made {
                        broken.push(format!("{name}: at {t}: {id} exists before its task call ({made})"));
                    }
                    let under = th.parent.map(|p| model.thread(p).id.to_string());
                    if under.as_ref() != Some(parent) {
                        broken.push(format!("{name}: at {t}: {id} under {under:?}, not {parent}"));
                    }
                }
                let since = |m: &HashMap<String, i64>| m.get(&id).is_some_and(|&at| at <= t);
                if th.status == Status::Idle && !since(&truth.answered) {
                    broken
                        .push(format!("{name}: at {t}: {id} done before it answered ({:?})", truth.answered.get(&id)));
                }
                if th.status == Status::Failed && !since(&truth.failed) {
                    broken.push(format!("{name}: at {t}: {id} failed before it failed ({:?})", truth.failed.get(&id)));
                }
            }
            working += u32::from(any_active && model.threads.len() > 1);
        });
        assert!(broken.is_empty(), "{} rules broken:\n{}", broken.len(), broken.join("\n"));
        // Read table by table, the whole store was one moment, at its end.
        assert!(moments > 20, "{name}: {moments} moments");
        assert!(working > 10, "{name}: {working} moments with sub-agents at work");
        eprintln!("{name}: {moments} moments, {working} with sub-agents at work");
    }
}

/// The first screen at `(w, h)` (the first session's transcript), at the model's stream time.
fn screen(pipeline: &Pipeline, (w, h): (u16, u16)) -> String {
    use ratatui::{Terminal, backend::TestBackend};
    use swarmtop::ui::{self, Feed, Theme, View};
    let model = &pipeline.model;
    let feed = Feed { source: swarmtop::wire::sanitize_line("moments"), now_ms: model.stream_ms, ..Feed::default() };
    let mut view = View::with_theme(Theme::no_color());
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let counters = pipeline.counters();
    term.draw(|f| ui::render(f, model, &counters, &feed, &mut view)).expect("draw");
    format!("{}", term.backend())
}

/// A spawn that fails starts no agent (issue 19), captured from the real CLIs: Claude Code
/// 2.1.332 and OpenCode 1.18.33 asked for an agent type they do not have, in one message with a
/// healthy spawn after it (`badtype`, tests/fixtures/README.md). At every moment: no agent for
/// the failed call (nothing under it, no third thread), the parent never failed by it and
/// `◷ waiting on 1` while the healthy helper works; once the call failed, its card reads `✗ Agent
/// failed` / `✗ task failed` with the CLI's own reason under it, on screens of 80×24 and 200×60.
#[test]
fn a_spawn_that_fails_starts_no_agent_and_says_why() {
    for (input, tool, why, mid) in [
        ("claude-2.1.332/badtype", "Agent", "Agent type 'no-such-agent' not found.", true),
        ("claude-2.1.332/badtype.ndjson", "Agent", "Agent type 'no-such-agent' not found.", true),
        ("opencode-1.18.33/badtype", "task", "Unknown agent type: no-such-agent", true),
        // `opencode run --format json` tells a task only once it finished: no moment has the
        // healthy helper at work.
        ("opencode-1.18.33/badtype.ndjson", "task", "Unknown agent type: no-such-agent", false),
    ] {
        let path = fixtures().join(input);
        let (mut broken, mut failed_moments, mut waiting_moments) = (Vec::new(), 0, 0);
        walk(&path, Order::Time, Some(i64::MAX), |pipeline, t| {
            let model = &pipeline.model;
            let root = model.thread(model.sessions[0]);
            let failed = root.items.iter().find(|i| i.op == Some(AgentOp::Spawn) && i.status == ItemStatus::Failed);
            if model.threads.len() > 2 {
                broken.push(format!("{input}: at {t}: {} threads, not 2 at most", model.threads.len()));
            }
            if root.status == Status::Failed {
                broken.push(format!("{input}: at {t}: the parent failed with its call"));
            }
            if let Some(card) = failed {
                failed_moments += 1;
                if !card.lanes.is_empty() || model.threads.iter().any(|th| th.card.as_deref() == Some(&*card.id)) {
                    broken.push(format!("{input}: at {t}: an agent under the failed call {}", card.id));
                }
                if !card.why.as_deref().is_some_and(|w| w.as_str().starts_with(why)) {
                    broken.push(format!("{input}: at {t}: the failed call says {:?}", card.why));
                }
            }
            let child = model.threads.iter().position(|th| th.parent.is_some());
            if let Some(c) = child.filter(|&c| model.threads[c].status.is_active()) {
                let activity = Activity::of(model);
                let clock = Clock { now_ms: Some(t), stall_ms: 0, ended: false };
                let shown = Shown::of(root, activity.subtree(model.sessions[0]), clock);
                if shown != Shown::OnChildren(1) {
                    broken.push(format!(
                        "{input}: at {t}: the parent {} {} while child {c} works",
                        shown.glyph(),
                        shown.word()
                    ));
                }
                if failed.is_some() {
                    waiting_moments += 1;
                    for size in [(80, 24), (200, 60)] {
                        let s = screen(pipeline, size);
                        for needle in [format!("✗ {tool} failed"), why.to_owned(), "waiting on 1".to_owned()] {
                            if !s.contains(&needle) {
                                broken.push(format!("{input}: at {t}: {needle:?} not on the {size:?} screen\n{s}"));
                            }
                        }
                    }
                }
            }
        });
        assert!(broken.is_empty(), "{} rules broken:\n{}", broken.len(), broken.join("\n"));
        assert!(failed_moments > 0, "{input}: the call never failed");
        assert!(!mid || waiting_moments > 0, "{input}: no moment with the failed call and the helper at work");
        // At the end: the two agents, done; the failed call in the agent's own words.
        let end = at_end(&path, Order::Time);
        let tree = swarmtop::commands::tree::render_tree(&end.model);
        assert_eq!(end.model.threads.len(), 2, "{input}:\n{tree}");
        assert!(end.model.threads.iter().all(|th| th.status == Status::Idle), "{input}:\n{tree}");
        for size in [(80, 24), (200, 60)] {
            let s = screen(&end, size);
            assert!(s.contains(&format!("✗ {tool} failed")) && s.contains(why), "{input}:\n{s}");
        }
        eprintln!("{input}: {failed_moments} moments after the call failed, {waiting_moments} with the helper at work");
    }
}

/// A Claude Code sub-agent seen through its telemetry (2.1.332) is named from its first
/// response's span as it stays (issue 19, seen with `tree --until`): its name went from its id
/// (`38568903`) to `general-purpose` once a log came.
#[test]
fn otlp_sub_agents_are_named_from_their_first_response() {
    let path = fixtures().join("claude-2.1.332-otlp/parallel.ndjson");
    let end = at_end(&path, Order::Time);
    let names: HashMap<String, String> = (0..end.model.threads.len())
        .map(|i| {
            let idx = swarmtop::router::ThreadIdx(u32::try_from(i).expect("index"));
            (end.model.thread(idx).id.to_string(), swarmtop::ui::label::text(&end.model, idx))
        })
        .collect();
    let mut broken = Vec::new();
    let mut children_seen = 0;
    walk(&path, Order::Time, Some(i64::MAX), |pipeline, t| {
        let model = &pipeline.model;
        for (i, th) in model.threads.iter().enumerate().filter(|(_, th)| th.parent.is_some()) {
            children_seen += 1;
            let idx = swarmtop::router::ThreadIdx(u32::try_from(i).expect("index"));
            let name = swarmtop::ui::label::text(model, idx);
            if names.get(&*th.id) != Some(&name) {
                broken.push(format!("at {t}: {} named {name:?}, at the end {:?}", th.id, names.get(&*th.id)));
            }
        }
    });
    assert!(children_seen > 10, "{children_seen}");
    assert!(broken.is_empty(), "{} rules broken:\n{}", broken.len(), broken.join("\n"));
}

/// What a recorded OTLP record says of Claude Code's sub-agents.
enum OtlpSays {
    /// A record of the agent's work (`agent_id`, as Claude Code writes it on each span and log
    /// of a sub-agent).
    Works(String),
    /// The agent's `subagent_completed` log.
    Completed(String),
    /// The receiver's join of an agent to the call that started it.
    Link {
        child: String,
        card: String,
    },
    /// The span of an `Agent` call: it ended, its agent answered.
    Answered(String),
    Nothing,
}

fn otlp_says(record: &[u8]) -> OtlpSays {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(record) else { return OtlpSays::Nothing };
    let msg = &v["msg"];
    if let (Some(child), Some(card)) = (msg["child"].as_str(), msg["card"].as_str()) {
        return OtlpSays::Link { child: child.to_owned(), card: card.to_owned() };
    }
    let attrs = msg["span"]["attributes"].as_array().or_else(|| msg["log"]["attributes"].as_array());
    let attr = |key: &str| {
        attrs?.iter().find(|a| a["key"] == key).and_then(|a| a["value"]["stringValue"].as_str()).map(str::to_owned)
    };
    if msg["span"]["name"] == "claude_code.tool"
        && attr("tool_name").as_deref() == Some("Agent")
        && let Some(call) = attr("tool_use_id")
    {
        return OtlpSays::Answered(call);
    }
    match (attr("agent_id"), attr("event.name").as_deref() == Some("subagent_completed")) {
        (Some(agent), true) => OtlpSays::Completed(agent),
        (Some(agent), false) => OtlpSays::Works(agent),
        (None, _) => OtlpSays::Nothing,
    }
}

/// Claude Code's telemetry (2.1.332) never exports a sub-agent's prompt, only its work: each
/// sub-agent is at work from the first record that names it (a response or tool span, a tool or
/// request log) until it ended: its `subagent_completed` log, or the span of the `Agent` call
/// that started it (the call ends with its answer; the log may come a batch later). It shows so
/// after every record, whatever order the export batches came in (issue 19: the children read
/// `○ pending` until their first tool log came, the grandchild for all of its life but its last
/// half second).
#[test]
fn otlp_sub_agents_run_from_their_first_record() {
    use std::collections::HashSet;
    let path = fixtures().join("claude-2.1.332-otlp/parallel.ndjson");
    let inputs = files::expand(&[path]).expect("inputs");
    let mut merged = Merged::open(inputs.as_slice(), Timing { order: Order::Time, until: None }).expect("open");
    let mut pipeline = Pipeline::default();
    let (mut named, mut ended) = (Vec::<String>::new(), HashSet::<String>::new());
    let mut cards = HashMap::<String, String>::new();
    let (mut broken, mut at_work, mut n) = (Vec::new(), 0, 0);
    while let Some((record, origin)) = merged.next_record().expect("read") {
        n += 1;
        if let files::Record::Line(bytes) = record {
            match otlp_says(bytes) {
                OtlpSays::Works(agent) if !named.contains(&agent) => named.push(agent),
                OtlpSays::Completed(agent) => _ = ended.insert(agent),
                OtlpSays::Link { child, card } => _ = cards.insert(card, child),
                OtlpSays::Answered(call) => ended.extend(cards.get(&call).cloned()),
                _ => {}
            }
        }
        pipeline.feed(record, origin, &mut |_: &Event<'_, '_>| {});
        let model = &pipeline.model;
        for agent in &named {
            let Some(th) = model.threads.iter().find(|th| &*th.id == agent) else {
                broken.push(format!("record {n}: {agent} named and absent"));
                continue;
            };
            let done = ended.contains(agent);
            if done && th.status != Status::Idle {
                broken.push(format!("record {n}: {agent} {} after it answered", th.status.as_str()));
            } else if !done && !th.status.is_active() {
                broken.push(format!("record {n}: {agent} {} while it works", th.status.as_str()));
            } else if !done {
                at_work += 1;
            }
        }
    }
    assert_eq!(named.len(), 3, "two children and a grandchild: {named:?}");
    assert!(broken.is_empty(), "{} rules broken:\n{}", broken.len(), broken.join("\n"));
    eprintln!("{n} records, {at_work} (agent, record) pairs at work");
}
