//! The model's rules, one per test, driven by facts (the vocabulary every format lowers into) and
//! router events, with no format's lines: what a thread's figures, status, items and lanes become.

use std::borrow::Cow;

use swarmtop::model::{self, ItemKind, ItemStatus, Model, Prices, Status};
use swarmtop::router::{Class, Event, Registry, Role, Routed, Sink, ThreadIdx, Via};
use swarmtop::wire::fact::{
    Answered, Breakdown, ContextFill, Delta, ErrorFact, Fact, ItemFact, Lowered, ModelChange, Parentage, ResponseUsage,
    SessionEnded, StatusChange, StatusFact, Subject, Target, TextRule, ThreadFact, TurnEnded, TurnOutcome, TurnRef,
    TurnStarted, Usage, Wait,
};
use swarmtop::wire::{CleanStr, sanitize};

/// A model fed by hand: threads placed by router events, lines made of facts.
struct World {
    model: Model,
    registry: Registry,
    line_no: u64,
}

impl World {
    fn new() -> Self {
        Self {
            model: Model::new(Prices::builtin(), model::Limits::default()),
            registry: Registry::default(),
            line_no: 0,
        }
    }

    fn thread(&mut self, id: &str) -> ThreadIdx {
        let (idx, new) = self.registry.insert(id);
        if new {
            self.model.event(&Event::Seen { thread: idx, id: self.registry.id(idx) });
        }
        idx
    }

    fn root(&mut self, id: &str) -> ThreadIdx {
        let t = self.thread(id);
        self.model.event(&Event::BecameRoot { thread: t });
        t
    }

    fn child(&mut self, id: &str, parent: &str, card: Option<&str>) -> ThreadIdx {
        let (c, p) = (self.thread(id), self.thread(parent));
        let depth = self.model.thread(p).depth + 1;
        self.model.event(&Event::Registered { child: c, parent: p, via: Via::CollabAgentToolCall, card, depth });
        c
    }

    /// One line of `id` stating `facts` at `time`.
    fn say(&mut self, id: &str, time: Option<i64>, facts: Vec<Fact<'_>>) {
        let t = self.thread(id);
        let mut record = Lowered { subject: Subject::Thread(Cow::Owned(id.to_owned())), time, ..Lowered::default() };
        for f in facts {
            record.facts.push(f);
        }
        self.line_no += 1;
        let class = if self.model.thread(t).role == Role::Root { Class::Root } else { Class::Rehomed };
        let routed = Routed {
            line_no: self.line_no,
            class,
            thread: Some(t),
            session: None,
            owner: None,
            replayed: false,
            record: &record,
            registry: &self.registry,
        };
        self.model.event(&Event::Line(routed));
    }

    fn get(&self, id: &str) -> &model::Thread {
        self.model.thread(self.registry.find(id).expect("a thread"))
    }
}

fn cumulative(input: u64, cached: u64, output: u64) -> Fact<'static> {
    Fact::Usage(Usage::Cumulative {
        total: Some(Breakdown {
            input_tokens: Some(input),
            cached_input_tokens: Some(cached),
            output_tokens: Some(output),
            total_tokens: Some(input.saturating_add(output)),
            ..Breakdown::default()
        }),
        context: None,
    })
}

fn model_is(model: &str) -> Fact<'_> {
    Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new(model) })
}

fn set(status: Status) -> Fact<'static> {
    Fact::Status(StatusFact { target: Target::Subject, change: StatusChange::Set(status) })
}

fn change(change: StatusChange) -> Fact<'static> {
    Fact::Status(StatusFact { target: Target::Subject, change })
}

fn item(id: &str, f: impl FnOnce(&mut ItemFact<'_>)) -> Fact<'_> {
    let mut fact = ItemFact { id: Some(Cow::Borrowed(id)), ..ItemFact::default() };
    f(&mut fact);
    Fact::Item(Box::new(fact))
}

fn delta<'a>(id: &'a str, text: &'a str, part: Option<i64>) -> Fact<'a> {
    Fact::Delta(Delta { item: Cow::Borrowed(id), turn: None, text: Some(CleanStr::new(text)), part })
}

// ---- tokens and cost ----

#[test]
fn cumulative_usage_merges_by_max_and_is_priced_by_the_thread_model() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![model_is("gpt-5.5"), cumulative(3300, 1024, 100)]);
    // A duplicated, then a late (smaller) frame change nothing.
    w.say("r", None, vec![cumulative(3300, 1024, 100), cumulative(1000, 0, 10)]);
    let t = w.get("r");
    assert_eq!((t.tokens.input, t.tokens.cached_input, t.tokens.output), (3300, 1024, 100));
    // (3300-1024)*5 + 1024*0.5 + 100*30 = 14892 USD per million tokens.
    assert_eq!(t.cost.unwrap().to_string(), "0.014892");
}

#[test]
fn a_thread_without_a_known_model_is_unpriced_not_free() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![cumulative(100, 0, 10)]);
    assert_eq!(w.get("r").cost, None);
    w.say("r", None, vec![model_is("no-such-model")]);
    assert_eq!(w.get("r").cost, None);
}

#[test]
fn context_fill_is_the_latest() {
    let mut w = World::new();
    w.root("r");
    let ctx =
        |used| Fact::Usage(Usage::Cumulative { total: None, context: Some(ContextFill { used, window: Some(1000) }) });
    w.say("r", None, vec![ctx(900), ctx(100)]);
    assert_eq!(w.get("r").context, Some(ContextFill { used: 100, window: Some(1000) }));
}

/// A Claude answer says the context it used, never the window; the session's report names the
/// window of each model, for every agent of the session on it (and for their later answers).
#[test]
fn a_claude_context_is_its_latest_answer_and_its_window_what_the_session_reports() {
    let mut w = World::new();
    w.root("r");
    w.child("c", "r", None);
    let answer = |id: &'static str, model: &'static str, input: u64, output: u64| {
        let Fact::Usage(Usage::Response(mut r)) = response(id, model, input, output) else { unreachable!() };
        r.context = ContextFill::of_response(&r.tokens);
        Fact::Usage(Usage::Response(r))
    };
    w.say("c", None, vec![model_is("claude-sonnet-4-5"), answer("m1", "claude-sonnet-4-5", 5000, 100)]);
    w.say("c", None, vec![answer("m2", "claude-sonnet-4-5", 7000, 200)]);
    assert_eq!(w.get("c").context, Some(ContextFill { used: 7200, window: None }), "the used size alone");
    let mut report = reported("claude-sonnet-4-5", 12_000, 300, "0.1");
    if let Fact::ReportedUsage(u) = &mut report[0] {
        u.context_window = Some(200_000);
    }
    w.say("r", None, report);
    assert_eq!(w.get("c").context, Some(ContextFill { used: 7200, window: Some(200_000) }));
    w.say("c", None, vec![answer("m3", "claude-sonnet-4-5", 9000, 50)]);
    assert_eq!(w.get("c").context, Some(ContextFill { used: 9050, window: Some(200_000) }), "the window stays");
    assert_eq!(w.get("r").context, None, "the session said nothing of its own");
    // One answer's later line with a smaller, stream-start figure, and an older answer told
    // again, leave the newest answer's full size.
    w.say("c", None, vec![answer("m3", "claude-sonnet-4-5", 9000, 1)]);
    w.say("c", None, vec![answer("m1", "claude-sonnet-4-5", 5000, 100)]);
    assert_eq!(w.get("c").context.map(|c| c.used), Some(9050));
}

fn response<'a>(id: &'a str, model: &'a str, input: u64, output: u64) -> Fact<'a> {
    Fact::Usage(Usage::Response(Box::new(ResponseUsage {
        key: (Cow::Borrowed(id), Cow::Borrowed("req")),
        tokens: Breakdown {
            input_tokens: Some(input),
            output_tokens: Some(output),
            total_tokens: Some(input + output),
            ..Breakdown::default()
        },
        model: Some(CleanStr::new(model)),
        context: None,
    })))
}

#[test]
fn a_response_stated_twice_counts_once_with_its_largest_figures() {
    let mut w = World::new();
    w.root("r");
    // One response written as two lines, the first with the stream-start output.
    w.say("r", None, vec![response("m1", "claude-sonnet-4-5", 1000, 1)]);
    w.say("r", None, vec![response("m1", "claude-sonnet-4-5", 1000, 200)]);
    w.say("r", None, vec![response("m2", "claude-sonnet-4-5", 10, 5)]);
    let t = w.get("r");
    assert_eq!((t.tokens.input, t.tokens.output), (1010, 205));
    // Sonnet 4.5: 1010 x 3 + 205 x 15 = 6105 USD per million.
    assert_eq!(t.cost.unwrap().to_string(), "0.006105");
}

#[test]
fn each_response_is_priced_by_its_own_model() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![response("m1", "claude-sonnet-4-5", 1000, 0), response("m2", "claude-haiku-4-5", 1000, 0)]);
    // 1000 x 3 + 1000 x 1 per million.
    assert_eq!(w.get("r").cost.unwrap().to_string(), "0.004");
    // A response of a model the table lacks makes the thread unpriced, never cheaper.
    w.say("r", None, vec![response("m3", "claude-next", 1000, 0)]);
    assert_eq!(w.get("r").cost, None);
}

#[test]
fn token_sums_saturate_instead_of_wrapping() {
    let mut w = World::new();
    w.root("r");
    w.child("a", "r", None);
    w.child("b", "r", None);
    w.say("a", None, vec![cumulative(u64::MAX, 0, 0)]);
    w.say("b", None, vec![cumulative(2, 0, 0)]);
    assert_eq!(w.get("r").subtree.tokens.input, u64::MAX);
    assert_eq!(w.model.totals().tokens.input, u64::MAX);
}

#[test]
fn a_cost_is_never_negative() {
    let mut w = World::new();
    w.root("r");
    // More cached input than input: the cached part counts as the whole input.
    w.say("r", None, vec![model_is("gpt-5.5"), cumulative(100, 5000, 0)]);
    let cost = w.get("r").cost.unwrap();
    assert!(cost.0 >= 0, "{cost}");
    // 100 cached at 0.5 per million.
    assert_eq!(cost.to_string(), "0.00005");
}

#[test]
fn a_huge_price_saturates_and_stays_positive() {
    let mut prices = Prices::builtin();
    prices.merge_toml("[models.\"dear\"]\ninput = 1e30\noutput = 1e30\n").unwrap();
    let mut w = World { model: Model::new(prices, model::Limits::default()), ..World::new() };
    w.root("r");
    w.say("r", None, vec![model_is("dear"), cumulative(u64::MAX, 0, u64::MAX)]);
    assert!(w.get("r").cost.unwrap().0 > 0);
}

// ---- roll-ups ----

#[test]
fn subtree_figures_follow_registration_and_detachment() {
    let mut w = World::new();
    w.root("r");
    w.say("c", None, vec![cumulative(50, 0, 5)]);
    w.child("c", "r", None);
    assert_eq!(w.get("r").subtree.tokens.input, 50, "a child's figures so far join its parent's on registration");
    assert_eq!(w.get("r").subtree.threads, 2);
    let c = w.registry.find("c").unwrap();
    w.model.event(&Event::Orphaned { thread: c, depth_limited: true });
    let r = w.get("r");
    assert_eq!((r.subtree.tokens.input, r.subtree.threads, r.children.len()), (0, 1, 0), "detached");
    assert_eq!(w.model.unattributed, vec![c]);
}

// ---- status ----

#[test]
fn reported_statuses_depend_on_the_one_before() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![change(StatusChange::Idle)]);
    assert_eq!(w.get("r").status, Status::Pending, "idle does not end what never ran");
    w.say("r", None, vec![set(Status::Running), change(StatusChange::Waiting(Wait::Approval))]);
    assert_eq!(w.get("r").status, Status::Waiting);
    w.say("r", None, vec![change(StatusChange::Active)]);
    assert_eq!(w.get("r").status, Status::Running, "active ends a wait");
    w.say("r", None, vec![change(StatusChange::Idle)]);
    assert_eq!(w.get("r").status, Status::Idle);
    w.say("r", None, vec![change(StatusChange::Active)]);
    assert_eq!(w.get("r").status, Status::Idle, "active alone does not restart an idle thread");
}

#[test]
fn a_retry_is_transient_and_a_final_error_fails() {
    let mut w = World::new();
    w.root("r");
    let error = |retrying| Fact::Error(ErrorFact { message: Some(sanitize("overloaded")), retrying, goes_on: false });
    w.say("r", None, vec![set(Status::Running), error(true)]);
    assert_eq!(w.get("r").status, Status::Retrying);
    w.say("r", None, vec![]);
    assert_eq!(w.get("r").status, Status::Running, "the next line puts back the status before the retry");
    w.say("r", None, vec![error(false)]);
    assert_eq!(w.get("r").status, Status::Failed);
    assert_eq!(w.get("r").last_error.as_ref().unwrap().as_str(), "overloaded");
}

#[test]
fn a_parents_answer_is_the_childs_end() {
    let mut w = World::new();
    w.root("r");
    w.child("c", "r", None);
    w.say("r", None, vec![Fact::Answered(Answered { child: Cow::Borrowed("c"), status: Status::Failed })]);
    // The child's own later lines (its file read after its parent's) do not undo it.
    w.say("c", None, vec![set(Status::Running)]);
    assert_eq!(w.get("c").status, Status::Failed);
}

#[test]
fn facts_about_another_thread_reach_it_and_unknown_ones_are_skipped() {
    let mut w = World::new();
    w.root("r");
    w.child("c", "r", None);
    let about = |id| {
        Fact::Status(StatusFact {
            target: Target::Thread(Cow::Borrowed(id)),
            change: StatusChange::Set(Status::Closed),
        })
    };
    w.say("r", None, vec![about("c"), about("nobody")]);
    assert_eq!(w.get("c").status, Status::Closed);
    assert!(w.registry.find("nobody").is_none(), "a fact never creates a thread");
}

#[test]
fn an_ended_session_leaves_nothing_running() {
    let mut w = World::new();
    w.root("r");
    w.child("c", "r", None);
    w.child("g", "c", None);
    w.child("d", "r", None);
    w.say("c", None, vec![set(Status::Running)]);
    w.say("g", None, vec![set(Status::Retrying)]);
    w.say("d", None, vec![set(Status::Idle)]);
    w.say("r", None, vec![set(Status::Running), Fact::SessionEnded(SessionEnded { interrupted: true })]);
    let statuses: Vec<Status> = ["r", "c", "g", "d"].iter().map(|t| w.get(t).status).collect();
    assert_eq!(statuses, [Status::Interrupted, Status::Interrupted, Status::Interrupted, Status::Idle]);
}

/// The machine view's source judged the session's process gone (no end line: a SIGKILL), then
/// found it running after all: what the stop cut short is as it was, and what the agent has said
/// since stands.
#[test]
fn a_stop_the_source_takes_back_restores_what_it_cut_short_and_only_that() {
    let mut w = World::new();
    let root = w.root("r");
    w.child("c", "r", None);
    w.child("d", "r", None);
    let started = |id| Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed(id)), ..TurnStarted::default() });
    let working = |id, turn| {
        item(id, move |i| {
            i.turn = Some(TurnRef::Known(Some(Cow::Borrowed(turn))));
            i.kind = Some(ItemKind::Command);
            i.status = Some(ItemStatus::InProgress);
        })
    };
    w.say("r", Some(10), vec![started("t1"), set(Status::Running), working("r-cmd", "t1")]);
    w.say("c", Some(11), vec![started("t2"), set(Status::Waiting), working("c-cmd", "t2")]);
    w.say("d", Some(12), vec![set(Status::Idle)]);
    w.model.stopped(root);
    let statuses = |w: &World| ["r", "c", "d"].map(|t| w.get(t).status);
    assert_eq!(statuses(&w), [Status::Interrupted, Status::Interrupted, Status::Idle]);
    assert_eq!(w.get("c").turns.get(0).unwrap().status, model::TurnStatus::Interrupted);
    assert_eq!(w.get("c").items.get(0).unwrap().status, ItemStatus::Interrupted);
    // The lead says its own turn ended before the source takes its word back.
    let end = Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Id(Cow::Borrowed("t1")),
        outcome: Some(TurnOutcome::Completed),
        error: None,
    });
    w.say("r", Some(13), vec![end]);
    w.model.resumed(root);
    assert_eq!(
        statuses(&w),
        [Status::Idle, Status::Waiting, Status::Idle],
        "the lead's own word stands; the child waits again"
    );
    let c = w.get("c");
    assert_eq!(
        (c.turns.get(0).unwrap().status, c.turns.get(0).unwrap().completed_ms),
        (model::TurnStatus::InProgress, None)
    );
    assert_eq!((c.items.get(0).unwrap().status, c.items.get(0).unwrap().completed_ms), (ItemStatus::InProgress, None));
    assert_eq!(w.get("r").turns.get(0).unwrap().status, model::TurnStatus::Completed);
    assert_eq!(w.get("r").items.get(0).unwrap().status, ItemStatus::Completed);
    // Taken back once: a second word of it changes nothing.
    w.model.resumed(root);
    assert_eq!(statuses(&w), [Status::Idle, Status::Waiting, Status::Idle]);
}

/// Stopped on a guess (no process seen, none seen exiting, as for a session whose process is
/// in a container): its lines stamped before the guess (a file read after it) leave it stopped,
/// one stamped after proves it running.
#[test]
fn a_guessed_stop_is_undone_by_a_line_written_after_it_and_only_by_such_a_line() {
    let mut w = World::new();
    let root = w.root("r");
    w.child("c", "r", None);
    let started = Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed("t1")), ..TurnStarted::default() });
    w.say("r", Some(1_000), vec![started, set(Status::Running)]);
    w.say("c", Some(1_500), vec![set(Status::Running)]);
    w.model.stopped_on_guess(root, 5_000);
    w.say("c", Some(4_000), vec![delta("c-msg", "written before the guess", None)]);
    assert_eq!([w.get("r").status, w.get("c").status], [Status::Interrupted, Status::Interrupted]);
    w.say("c", Some(6_000), vec![delta("c-msg", ", and after it", None)]);
    assert_eq!([w.get("r").status, w.get("c").status], [Status::Running, Status::Running]);
    assert_eq!(w.get("r").turns.get(0).unwrap().status, model::TurnStatus::InProgress);
    // A stop the source saw happen (the process exited) is no guess: no line undoes it.
    w.model.stopped(root);
    w.say("c", Some(9_000), vec![delta("c-msg", " late", None)]);
    assert_eq!(w.get("r").status, Status::Interrupted);
}

// ---- turns and items ----

#[test]
fn a_turn_that_ends_ends_its_items_still_in_progress() {
    let mut w = World::new();
    w.root("r");
    let started = Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed("u1")), ..TurnStarted::default() });
    w.say("r", Some(10), vec![started, set(Status::Running)]);
    w.say(
        "r",
        Some(11),
        vec![item("wait", |i| {
            i.turn = Some(TurnRef::Known(Some(Cow::Borrowed("u1"))));
            i.kind = Some(ItemKind::Collab);
            i.status = Some(ItemStatus::InProgress);
        })],
    );
    let end = Fact::TurnEnded(TurnEnded {
        turn: TurnRef::Id(Cow::Borrowed("u1")),
        outcome: Some(TurnOutcome::Interrupted),
        error: None,
    });
    w.say("r", Some(12), vec![end]);
    let t = w.get("r");
    assert_eq!(t.status, Status::Interrupted);
    assert_eq!(t.turns.get(0).unwrap().started_ms, Some(10));
    assert_eq!(t.items.get(0).unwrap().status, ItemStatus::Interrupted);
    assert_eq!(t.items.get(0).unwrap().completed_ms, Some(12));
    assert_eq!(t.turns.get(0).unwrap().items, vec![0]);
}

#[test]
fn a_new_turn_of_a_one_turn_agent_ends_the_previous_one() {
    let mut w = World::new();
    w.root("r");
    let prompt = |id| {
        Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed(id)), ends_previous: true, ..TurnStarted::default() })
    };
    w.say("r", Some(1), vec![prompt("p1")]);
    w.say("r", Some(2), vec![prompt("p2")]);
    let t = w.get("r");
    assert_eq!(t.turns.len(), 2);
    assert_eq!(t.turns.get(0).unwrap().status, model::TurnStatus::Completed);
    assert_eq!(t.turns.get(0).unwrap().completed_ms, Some(2));
    assert_eq!(t.turns.get(1).unwrap().status, model::TurnStatus::InProgress);
}

#[test]
fn a_turn_told_again_does_not_end_itself() {
    let mut w = World::new();
    w.root("r");
    let told = |ends_previous| {
        Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed("span")), ends_previous, ..TurnStarted::default() })
    };
    w.say("r", Some(1), vec![told(false), item("tool", |i| i.status = Some(ItemStatus::InProgress))]);
    w.say("r", Some(2), vec![told(true)]);
    let t = w.get("r");
    assert_eq!((t.turns.len(), t.turns.get(0).unwrap().status), (1, model::TurnStatus::InProgress));
    assert_eq!(t.items.get(0).unwrap().status, ItemStatus::InProgress);
}

#[test]
fn a_turn_ends_when_its_agent_went_idle_not_when_its_record_followed() {
    let mut w = World::new();
    w.root("r");
    let started = || Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed("u1")), ..TurnStarted::default() });
    let end = |outcome| {
        Fact::TurnEnded(TurnEnded { turn: TurnRef::Id(Cow::Borrowed("u1")), outcome: Some(outcome), error: None })
    };
    w.say("r", Some(10), vec![started(), set(Status::Running)]);
    // Codex: `thread/status/changed` idle, then `turn/completed` a millisecond later.
    w.say("r", Some(20), vec![change(StatusChange::Idle)]);
    assert_eq!(w.get("r").status, Status::Idle);
    assert_eq!(w.get("r").turns.get(0).unwrap().status, model::TurnStatus::InProgress, "its record is to come");
    w.say("r", Some(21), vec![end(TurnOutcome::Completed)]);
    assert_eq!(w.get("r").turns.get(0).unwrap().completed_ms, Some(20));
    // Idle, then at work again within the turn: it ends at its record.
    let mut w = World::new();
    w.root("r");
    w.say("r", Some(10), vec![started(), set(Status::Running)]);
    w.say("r", Some(20), vec![change(StatusChange::Idle)]);
    w.say("r", Some(25), vec![set(Status::Running)]);
    w.say("r", Some(30), vec![end(TurnOutcome::Completed)]);
    assert_eq!(w.get("r").turns.get(0).unwrap().completed_ms, Some(30));
}

#[test]
fn a_line_without_a_time_happened_at_the_stream_time_so_far() {
    let mut w = World::new();
    w.root("r");
    let started = Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed("u1")), ..TurnStarted::default() });
    w.say("r", Some(10), vec![started, set(Status::Running)]);
    w.say("r", Some(15), vec![item("m", |i| i.status = Some(ItemStatus::Completed))]);
    // Claude Code's stream-json `task_updated` ends a sub-agent's turn and carries no time.
    let end = Fact::TurnEnded(TurnEnded { turn: TurnRef::Latest, outcome: Some(TurnOutcome::Completed), error: None });
    w.say("r", None, vec![end]);
    assert_eq!(w.get("r").turns.get(0).unwrap().completed_ms, Some(15));
}

#[test]
fn deltas_accumulate_and_an_authoritative_text_replaces_them() {
    let mut w = World::new();
    w.root("r");
    w.say(
        "r",
        None,
        vec![item("m", |i| {
            i.kind = Some(ItemKind::AgentMessage);
            i.text = Some(sanitize("draft"));
            i.text_rule = TextRule::Provisional;
        })],
    );
    assert_eq!(w.get("r").items.get(0).unwrap().text.as_str(), "draft");
    // Deltas after a provisional text: the provisional text stays their start.
    w.say("r", None, vec![delta("m", " one", None), delta("m", " two", None)]);
    assert_eq!(w.get("r").items.get(0).unwrap().text.as_str(), "draft one two");
    w.say(
        "r",
        None,
        vec![item("m", |i| {
            i.text = Some(sanitize("final"));
            i.text_rule = TextRule::Provisional;
        })],
    );
    assert_eq!(w.get("r").items.get(0).unwrap().text.as_str(), "draft one two", "provisional text never replaces");
    w.say(
        "r",
        None,
        vec![item("m", |i| {
            i.text = Some(sanitize("final"));
            i.status = Some(ItemStatus::Completed);
        })],
    );
    let it = &w.get("r").items.get(0).unwrap();
    assert_eq!((it.text.as_str(), it.status), ("final", ItemStatus::Completed));
}

#[test]
fn a_new_part_starts_a_new_paragraph() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![delta("s", "a", Some(0)), delta("s", "b", Some(0)), delta("s", "c", Some(1))]);
    let it = &w.get("r").items.get(0).unwrap();
    assert_eq!(it.text.as_str(), "ab\n\nc");
    assert!(matches!(it.kind, ItemKind::Other(_)), "a delta names an item without its kind");
    w.say("r", None, vec![item("s", |i| i.kind = Some(ItemKind::Reasoning))]);
    assert_eq!(w.get("r").items.get(0).unwrap().kind, ItemKind::Reasoning, "the kind is learnt later");
}

#[test]
fn a_tool_output_never_replaces_a_cards_prompt_and_never_creates_an_item() {
    let mut w = World::new();
    w.root("r");
    w.say(
        "r",
        None,
        vec![item("card", |i| {
            i.kind = Some(ItemKind::Collab);
            i.text = Some(sanitize("the prompt"));
        })],
    );
    let output = |id| {
        item(id, |i| {
            i.update_only = true;
            i.text = Some(sanitize("the answer"));
            i.text_rule = TextRule::Output;
            i.status = Some(ItemStatus::Completed);
        })
    };
    w.say("r", None, vec![output("card"), output("unknown-call")]);
    let t = w.get("r");
    assert_eq!(t.items.len(), 1);
    assert_eq!(
        (t.items.get(0).unwrap().text.as_str(), t.items.get(0).unwrap().status),
        ("the prompt", ItemStatus::Completed)
    );
}

#[test]
fn items_without_an_id_are_told_apart_by_their_line() {
    let mut w = World::new();
    w.root("r");
    let anonymous = || Fact::Item(Box::new(ItemFact { kind: Some(ItemKind::UserMessage), ..ItemFact::default() }));
    w.say("r", None, vec![anonymous()]);
    w.say("r", None, vec![anonymous()]);
    assert_eq!(w.get("r").items.len(), 2);
}

// ---- cards and lanes ----

#[test]
fn a_child_registered_under_a_card_is_its_lane_and_takes_the_cards_names() {
    let mut w = World::new();
    w.root("r");
    w.say(
        "r",
        None,
        vec![item("task", |i| {
            i.kind = Some(ItemKind::Collab);
            i.lane_nickname = Some(sanitize("Explore the code"));
            i.lane_role = Some(sanitize("Explore"));
        })],
    );
    let c = w.child("c", "r", Some("task"));
    let r = w.get("r");
    assert_eq!(r.items.get(0).unwrap().lanes, vec![c]);
    let t = w.get("c");
    assert_eq!(t.name(), "Explore the code");
    assert_eq!(t.agent_role.as_ref().unwrap().as_str(), "Explore");
}

#[test]
fn receivers_named_before_their_thread_appears_join_the_item_when_it_does() {
    // A parent's rollout is read before its children's: its cards name threads not seen yet.
    let mut w = World::new();
    w.root("r");
    let close = |i: &mut ItemFact<'_>| {
        i.kind = Some(ItemKind::Collab);
        i.receivers = vec![Cow::Borrowed("k"), Cow::Borrowed("/root/part_2")];
    };
    w.say("r", None, vec![item("close", close)]);
    assert!(w.get("r").items.get(0).unwrap().receivers.is_empty(), "nobody to name yet");
    let k = w.child("k", "r", None);
    assert_eq!(w.get("r").items.get(0).unwrap().receivers, vec![k], "resolved by its id when it appears");
    let p = w.child("p", "r", None);
    assert_eq!(w.get("r").items.get(0).unwrap().receivers, vec![k], "a path names a thread once it has that path");
    let mut about = ThreadFact::new(Cow::Borrowed("p"), Parentage::Unknown);
    about.path = Some(sanitize("/root/part_2"));
    w.say("p", None, vec![Fact::Thread(Box::new(about))]);
    assert_eq!(w.get("r").items.get(0).unwrap().receivers, vec![k, p]);
    // Named again once known: resolved at once, never twice.
    w.say("r", None, vec![item("close", close)]);
    assert_eq!(w.get("r").items.get(0).unwrap().receivers, vec![k, p]);
    assert_eq!(w.model.diagnostics.dropped_receivers, 0);
}

#[test]
fn receivers_awaited_past_the_bound_are_counted() {
    let limits = model::Limits { awaited_receivers: 1, ..model::Limits::default() };
    let mut w = World { model: Model::new(Prices::builtin(), limits), ..World::new() };
    w.root("r");
    w.say(
        "r",
        None,
        vec![item("wait", |i| {
            i.kind = Some(ItemKind::Collab);
            i.receivers = vec![Cow::Borrowed("a"), Cow::Borrowed("b")];
        })],
    );
    assert_eq!(w.model.diagnostics.dropped_receivers, 1);
    let a = w.child("a", "r", None);
    w.child("b", "r", None);
    assert_eq!(w.get("r").items.get(0).unwrap().receivers, vec![a], "the one kept is resolved");
}

#[test]
fn a_card_applied_after_its_children_registered_still_gets_its_lanes() {
    let mut w = World::new();
    w.root("r");
    let c = w.child("c", "r", Some("spawn"));
    w.say(
        "r",
        None,
        vec![item("spawn", |i| {
            i.kind = Some(ItemKind::Collab);
            i.card = true;
        })],
    );
    assert_eq!(w.get("r").items.get(0).unwrap().lanes, vec![c]);
}

// ---- the structural generation ----

#[test]
fn the_structure_changes_with_the_tree_not_with_its_text() {
    let mut w = World::new();
    w.root("r");
    w.say("r", None, vec![delta("m", "a", None)]);
    let shape = w.model.structure;
    let generation = w.model.generation;
    w.say("r", None, vec![delta("m", "b", None), cumulative(5, 0, 1), set(Status::Running)]);
    assert_eq!(w.model.structure, shape, "text, figures and status leave the outline as it is");
    assert!(w.model.generation > generation, "but the screen must draw again");
    w.child("c", "r", None);
    assert!(w.model.structure > shape);
}

// ---- bounds ----

#[test]
fn the_oldest_items_past_the_bound_are_dropped_counted_and_still_counted_in_the_thread() {
    let limits = model::Limits { items_per_thread: 2, ..model::Limits::default() };
    let mut w = World { model: Model::new(Prices::builtin(), limits), ..World::new() };
    w.root("r");
    w.say("r", None, vec![delta("a", "1", None), delta("b", "2", None), delta("c", "3", None), delta("d", "4", None)]);
    w.say("r", None, vec![delta("c", "+", None)]);
    let t = w.get("r");
    assert_eq!((t.items.len(), t.items.kept()), (4, 2), "every item counts; the newest two are kept");
    assert!(t.items.get(0).is_none() && t.item("a").is_none(), "the oldest went");
    assert_eq!(t.items.get(2).unwrap().text.as_str(), "3+", "kept items keep their ordinal and still grow");
    assert_eq!(w.model.diagnostics.dropped_items, 2);
}

#[test]
fn the_oldest_responses_past_the_bound_settle_into_their_spend_and_the_figures_stay() {
    let limits = model::Limits { responses_per_thread: 8, ..model::Limits::default() };
    let mut bounded = World { model: Model::new(Prices::builtin(), limits), ..World::new() };
    let mut whole = World::new();
    let models = ["claude-sonnet-4-5", "claude-opus-4-6", "no-such-model"];
    for w in [&mut bounded, &mut whole] {
        w.root("r");
        for i in 0..1000i64 {
            let (id, on, at) = (format!("m{i}"), models[(i % 3) as usize], Some(i * 60_000));
            let input = 10 + i.unsigned_abs();
            w.say("r", at, vec![response(&id, on, input, 1)]);
            // Stated again on the next line, as Claude Code does: counted once.
            w.say("r", at, vec![response(&id, on, input, 2)]);
        }
    }
    let (b, w) = (bounded.get("r"), whole.get("r"));
    assert!(b.responses().len() <= 10, "the newest are held, not all: {}", b.responses().len());
    assert_eq!(w.responses().len(), 1000);
    assert_eq!((b.responses_stated(), b.tokens, b.cost), (1000, w.tokens, w.cost), "every response counts once");
    let mut settled = model::Tokens::default();
    b.settled_spend().iter().for_each(|s| settled.add(&s.tokens));
    b.responses().iter().for_each(|r| settled.add(&r.tokens));
    assert_eq!(settled, w.tokens, "what settled and what is held add up to the thread");
    // 1000 minutes: 67 quarter hours, each on up to 3 models.
    assert!(b.settled_spend().len() <= 67 * 3, "{}", b.settled_spend().len());
}

#[test]
fn the_first_turns_prompt_outlives_the_items_bound() {
    let limits = model::Limits { items_per_thread: 2, ..model::Limits::default() };
    let mut w = World { model: Model::new(Prices::builtin(), limits), ..World::new() };
    w.root("r");
    let started = |id| Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed(id)), ..TurnStarted::default() });
    let in_turn = |id: &'static str, turn: &'static str| {
        item(id, move |i| {
            i.turn = Some(TurnRef::Known(Some(Cow::Borrowed(turn))));
            i.kind = Some(ItemKind::AgentMessage);
        })
    };
    w.say("r", Some(1), vec![started("u1"), in_turn("prompt", "u1")]);
    w.say("r", Some(2), vec![started("u2"), in_turn("x", "u2"), in_turn("y", "u2"), in_turn("z", "u2")]);
    let t = w.get("r");
    assert!(t.item("prompt").is_some(), "the session's name stays");
    assert!(t.item("x").is_none());
    assert_eq!((t.items.len(), t.items.kept(), w.model.diagnostics.dropped_items), (4, 3, 1));
}

#[test]
fn the_oldest_turns_past_the_bound_are_dropped_counted_and_the_first_stays() {
    let limits = model::Limits { turns_per_thread: 2, ..model::Limits::default() };
    let mut w = World { model: Model::new(Prices::builtin(), limits), ..World::new() };
    w.root("r");
    for (ms, id) in [(1, "t1"), (2, "t2"), (3, "t3"), (4, "t4"), (5, "t5")] {
        w.say(
            "r",
            Some(ms),
            vec![Fact::TurnStarted(TurnStarted { turn: Some(Cow::Borrowed(id)), ..TurnStarted::default() })],
        );
    }
    let end = Fact::TurnEnded(TurnEnded { turn: TurnRef::Id(Cow::Borrowed("t4")), outcome: None, error: None });
    w.say("r", Some(6), vec![end]);
    let t = w.get("r");
    assert_eq!((t.turns.len(), t.turns.kept()), (5, 3), "every turn counts; the first and the newest two are kept");
    let kept: Vec<&str> = t.turns.iter().map(|turn| &*turn.id).collect();
    assert_eq!(kept, ["t1", "t4", "t5"]);
    assert_eq!(t.turns.get(3).unwrap().status, model::TurnStatus::Completed, "a kept turn is found by its ordinal");
    assert_eq!(w.model.diagnostics.dropped_turns, 2);
}

#[test]
fn the_structure_ignores_the_items_of_threads_without_children() {
    let mut w = World::new();
    w.root("r");
    w.child("c", "r", Some("spawn"));
    let shape = w.model.structure;
    w.say("c", None, vec![item("m", |i| i.kind = Some(ItemKind::AgentMessage))]);
    assert_eq!(w.model.structure, shape, "a leaf's items are not in the outline");
    w.say("r", None, vec![item("spawn", |i| i.kind = Some(ItemKind::Collab))]);
    assert!(w.model.structure > shape, "a parent's card is");
    let shape = w.model.structure;
    w.say("r", None, vec![item("spawn", |i| i.op = Some(swarmtop::wire::fact::AgentOp::Wait))]);
    assert!(w.model.structure > shape, "and so is what the card is");
}

#[test]
fn what_the_agent_reports_it_cost_is_kept_by_model() {
    use swarmtop::wire::fact::CostReported;
    let mut w = World::new();
    w.root("r");
    let cost = |model, usd, cumulative| {
        Fact::CostReported(CostReported {
            model: Some(CleanStr::new(model)),
            usd: Cow::Borrowed(usd),
            cumulative,
            own: false,
        })
    };
    w.say("r", None, vec![cost("claude-next", "0.5", true), cost("claude-next", "0.75", true)]);
    w.say("r", None, vec![cost("haiku", "0.001", false), cost("haiku", "0.002", false), cost("haiku", "-1", false)]);
    let figures: Vec<(String, String)> =
        w.get("r").reported_cost.iter().map(|(m, c)| (m.to_string(), c.to_string())).collect();
    assert_eq!(figures, [("claude-next".into(), "0.75".into()), ("haiku".into(), "0.003".into())]);
}

fn reported(model: &'static str, input: u64, output: u64, usd: &'static str) -> Vec<Fact<'static>> {
    vec![
        Fact::ReportedUsage(swarmtop::wire::fact::ReportedUsage {
            model: CleanStr::new(model),
            tokens: Breakdown {
                input_tokens: Some(input),
                output_tokens: Some(output),
                total_tokens: Some(input + output),
                ..Breakdown::default()
            },
            context_window: None,
        }),
        Fact::CostReported(swarmtop::wire::fact::CostReported {
            model: Some(CleanStr::new(model)),
            usd: Cow::Borrowed(usd),
            cumulative: true,
            own: false,
        }),
    ]
}

#[test]
fn what_the_agent_reported_beyond_its_threads_is_the_session_s_unattributed_part() {
    let mut w = World::new();
    let s = w.root("s");
    w.child("a", "s", Some("card"));
    w.say("s", None, vec![response("m1", "claude-sonnet-4-5", 1_000, 10)]);
    w.say("a", None, vec![response("m2", "claude-sonnet-4-5", 2_000, 20)]);
    // The agent's running totals replace each other: the last one counts, never their sum.
    w.say("s", None, reported("claude-sonnet-4-5", 2_500, 25, "0.01"));
    w.say("s", None, reported("claude-sonnet-4-5", 4_000, 40, "0.0126"));
    let r = w.model.reconciled(s).expect("reported");
    assert_eq!(r.reported.total, 4_040);
    assert_eq!(r.unattributed.total, 4_040 - 3_030, "reported, less what the threads account for");
    assert_eq!(w.model.thread(s).subtree.tokens.total + r.unattributed.total, r.reported.total);
    // 3,000 input at $3 and 30 output at $15 per million: $0.00945 seen, $0.0126 reported.
    assert_eq!(r.unattributed_cost.map(|c| c.to_string()).as_deref(), Some("0.00315"));
}

#[test]
fn a_model_the_table_lacks_shows_the_agent_s_own_figure() {
    let mut w = World::new();
    w.root("s");
    let a = w.child("a", "s", Some("card"));
    let nova = || Fact::Model(ModelChange { target: Target::Subject, model: CleanStr::new("claude-nova-9") });
    w.say("a", None, vec![nova(), response("m1", "claude-nova-9", 1_000, 10)]);
    assert_eq!(w.model.shown_cost(a), model::ShownCost::Unpriced);
    w.say("s", None, reported("claude-nova-9", 1_000, 10, "0.5"));
    assert_eq!(model::format_shown(w.model.shown_cost(a)), "$0.50 (agent)");
    // Two threads on that model: the figure is the session's, not one agent's.
    w.child("b", "s", Some("card2"));
    w.say("b", None, vec![nova(), response("m2", "claude-nova-9", 1_000, 10)]);
    assert_eq!(w.model.shown_cost(a), model::ShownCost::Unpriced);
}
