//! Render cost of the monitor screen: the median frame (refresh + draw into a `TestBackend`) of a
//! swarm of 1,000 threads and 50,000 items, everything expanded, at 200×60, as ratios against
//! floors measured in the same run (style.md: ratios, not absolute times):
//!
//! - one full-screen `Paragraph` of the same size (target ≤ 5×);
//! - the same screen over a swarm of 10 threads (target ≤ 1.5×: cost follows what is visible).
//!
//! A third figure, "live", pushes a new item on a session between frames: the tree's shape changes,
//! so every frame rebuilds the tree rows (most lines of a live stream do not, and cost as "static").
//!
//! The same three figures for the timeline (`t`) in the lanes' place: it must draw at frame rate
//! for 1,000 agents.
//!
//! For reference it also times the agents pane alone drawn by `tui_tree_widget` over the same rows.
//!
//! `cargo bench --bench render`

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use swarmtop::model::{Model, format_usd};
use swarmtop::pipeline::Pipeline;
use swarmtop::ui::outline::{NodeId, Row, flatten};
use swarmtop::ui::{self, Action, Feed, Theme, View};
use tui_tree_widget::{Tree, TreeItem, TreeState};

const W: u16 = 200;
const H: u16 = 60;
const FRAMES: usize = 300;

fn id(n: usize) -> String {
    format!("01a2292d-0000-7000-8000-{n:012x}")
}

/// One thread's lines: its turn, the spawns of its `kids`, its items, its token usage.
fn thread(out: &mut Vec<String>, me: usize, items: usize, kids: &[usize], now: &mut dyn FnMut() -> i64) {
    let tid = id(me);
    let turn = format!("turn-{me}");
    out.push(format!(
        r#"{{"method":"turn/started","params":{{"threadId":"{tid}","turn":{{"id":"{turn}","status":"inProgress"}}}},"emittedAtMs":{}}}"#,
        now()
    ));
    for &k in kids {
        out.push(format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"collabAgentToolCall","id":"spawn-{k}","tool":"spawnAgent","status":"completed","senderThreadId":"{tid}","receiverThreadIds":["{}"],"prompt":"sub-task {k}: look at module {k} and report","model":"gpt-5.5"}},"threadId":"{tid}","turnId":"{turn}"}},"emittedAtMs":{}}}"#,
            id(k),
            now()
        ));
    }
    for i in 0..items {
        let item = match i % 3 {
            0 => format!(
                r#"{{"type":"agentMessage","id":"m{me}-{i}","text":"Agent {me} step {i}: looked at the call sites of verify_token and found that three of them pass an expired clock; the fix is to thread the clock through."}}"#
            ),
            1 => format!(
                r#"{{"type":"reasoning","id":"r{me}-{i}","summary":["Thinking about step {i} of agent {me}: which module to read next, and whether the tests cover the expired-token path."]}}"#
            ),
            _ => format!(
                r#"{{"type":"commandExecution","id":"c{me}-{i}","command":"/bin/bash -lc 'cargo test -p auth --lib verify'","status":"completed","aggregatedOutput":"running 41 tests\ntest verify::ok ... ok\ntest result: ok. 41 passed; 0 failed\n","exitCode":0}}"#
            ),
        };
        out.push(format!(
            r#"{{"method":"item/completed","params":{{"item":{item},"threadId":"{tid}","turnId":"{turn}"}},"emittedAtMs":{}}}"#,
            now()
        ));
    }
    out.push(format!(
        r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"{tid}","turnId":"{turn}","tokenUsage":{{"total":{{"totalTokens":{},"inputTokens":{},"cachedInputTokens":0,"outputTokens":{}}},"last":{{"totalTokens":9000}},"modelContextWindow":258400}}}},"emittedAtMs":{}}}"#,
        1000 + me * 37,
        900 + me * 30,
        100 + me * 7,
        now()
    ));
}

/// NDJSON of a swarm: `roots` sessions, each spawning `fan` children, each of which spawns
/// `fan2` grandchildren; every thread gets `items` items (messages, reasoning, commands).
fn swarm(roots: usize, fan: usize, fan2: usize, items: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = 0;
    let mut t = 1_795_987_208_000_i64;
    let mut clock = || {
        t += 7;
        t
    };
    for _ in 0..roots {
        let root = next;
        next += 1;
        out.push(format!(
            r#"{{"method":"thread/started","params":{{"thread":{{"id":"{}","model":"gpt-5.5","parentThreadId":null,"status":{{"type":"idle"}}}}}},"emittedAtMs":{}}}"#,
            id(root),
            clock()
        ));
        let children: Vec<usize> = (0..fan).map(|k| next + k).collect();
        next += fan;
        thread(&mut out, root, items, &children, &mut clock);
        for &c in &children {
            let grand: Vec<usize> = (0..fan2).map(|k| next + k).collect();
            next += fan2;
            thread(&mut out, c, items, &grand, &mut clock);
            for &g in &grand {
                thread(&mut out, g, items, &[], &mut clock);
            }
        }
    }
    out
}

fn build(lines: &[String]) -> Pipeline {
    let mut p = Pipeline::default();
    for l in lines {
        p.push(l.as_bytes());
    }
    p
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn feed(p: &Pipeline) -> Feed {
    Feed {
        source: swarmtop::wire::sanitize_line("bench"),
        position: Some((p.counters().lines, p.counters().lines)),
        now_ms: p.model.stream_ms,
        ..Feed::default()
    }
}

/// Median frame of the monitor over `p`, the first card selected (its lanes stacked), or the
/// timeline (`t`) in the lanes' place.
fn screen(p: &mut Pipeline, live: bool, timeline: bool) -> Duration {
    let mut term = Terminal::new(TestBackend::new(W, H)).expect("terminal");
    let mut view = View::with_theme(Theme::dark());
    let f = feed(p);
    let counters = p.counters();
    term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut view)).expect("draw");
    for a in [Action::MoveDown, Action::MoveDown] {
        ui::update(&mut view, &p.model, a);
    }
    if timeline {
        ui::update(&mut view, &p.model, Action::Timeline);
    }
    // A new item on the first session: it has children, so the tree's shape changes and the rows
    // are rebuilt, the worst case of a live stream.
    let tick = |n: usize| {
        format!(
            r#"{{"method":"item/completed","params":{{"item":{{"type":"agentMessage","id":"tick-{n}","text":"tick {n}"}},"threadId":"{}","turnId":"turn-0"}},"emittedAtMs":1}}"#,
            id(0)
        )
    };
    let mut times = Vec::with_capacity(FRAMES);
    for n in 0..FRAMES {
        if live {
            p.push(tick(n).as_bytes());
        }
        let start = Instant::now();
        term.draw(|fr| ui::render(fr, &p.model, &counters, &f, &mut view)).expect("draw");
        times.push(start.elapsed());
        black_box(term.backend());
    }
    median(times)
}

/// Median frame of one full-screen paragraph: the floor of any screen this size.
fn paragraph() -> Duration {
    let mut term = Terminal::new(TestBackend::new(W, H)).expect("terminal");
    let mut text = String::new();
    for row in 0..H {
        let _ = writeln!(text, "{}", format!("{row:>3} the quick brown fox jumps over the lazy dog ").repeat(5));
    }
    let mut times = Vec::with_capacity(FRAMES);
    for _ in 0..FRAMES {
        let start = Instant::now();
        term.draw(|fr| {
            let lines: Vec<Line<'_>> = text.lines().map(Line::raw).collect();
            fr.render_widget(Paragraph::new(lines), fr.area());
        })
        .expect("draw");
        times.push(start.elapsed());
        black_box(term.backend());
    }
    median(times)
}

/// The same open tree as `tui_tree_widget` items (what the agents pane would cost through that
/// widget, which wants every open row built and flattens them all on each render).
fn items(
    model: &Model,
    rows: &[Row],
    at: &mut usize,
    depth: u16,
    path: &mut Vec<usize>,
    open: &mut Vec<Vec<usize>>,
) -> Vec<TreeItem<'static, usize>> {
    let mut out = Vec::new();
    while *at < rows.len() && rows[*at].depth == depth {
        let i = *at;
        *at += 1;
        let text = match rows[i].id {
            NodeId::Thread(t) => {
                let th = model.thread(t);
                let m = th.model.as_ref().map_or("?", |m| m.as_str());
                format!("● {}  {m}  {}  {}", th.name(), th.tokens.total, format_usd(th.cost))
            }
            NodeId::Turn(_, k) => format!("turn {}", k + 1),
            _ => "⑂ spawn".to_owned(),
        };
        path.push(i);
        let kids = items(model, rows, at, depth + 1, path, open);
        if !kids.is_empty() {
            open.push(path.clone());
        }
        path.pop();
        out.push(TreeItem::new(i, text, kids).expect("unique ids"));
    }
    out
}

/// Median frame of the agents pane alone (60 columns) drawn by `tui_tree_widget`.
fn tree_widget(p: &Pipeline) -> Duration {
    let mut term = Terminal::new(TestBackend::new(60, H)).expect("terminal");
    let rows =
        flatten(&p.model, &std::collections::HashSet::<NodeId>::new(), None, swarmtop::ui::TreeSort::Arrival, None);
    let mut times = Vec::with_capacity(FRAMES);
    for _ in 0..FRAMES {
        let start = Instant::now();
        let mut open = Vec::new();
        let tree = items(&p.model, &rows, &mut 0, 0, &mut Vec::new(), &mut open);
        let mut state = TreeState::default();
        for path in open {
            state.open(path);
        }
        term.draw(|fr| fr.render_stateful_widget(Tree::new(&tree).expect("tree"), fr.area(), &mut state))
            .expect("draw");
        times.push(start.elapsed());
        black_box(term.backend());
    }
    median(times)
}

fn main() {
    // 10 sessions × (1 + 9 children × (1 + 10 grandchildren)) = 1,000 threads × 50 items.
    let big_lines = swarm(10, 9, 10, 50);
    let mut big = build(&big_lines);
    let items: usize = big.model.threads.iter().map(|t| t.items.len()).sum();
    // One session with 9 children: 10 threads.
    let mut small = build(&swarm(1, 9, 0, 50));
    let floor = paragraph();
    let small_t = screen(&mut small, false, false);
    let big_t = screen(&mut big, false, false);
    let big_live = screen(&mut big, true, false);
    let small_timeline = screen(&mut small, false, true);
    let big_timeline = screen(&mut big, false, true);
    let big_timeline_live = screen(&mut big, true, true);
    let widget = tree_widget(&big);
    println!("render 200x60: {} threads, {items} items, all expanded", big.model.threads.len());
    println!("  paragraph floor       {floor:>10.1?}");
    println!("  10 threads            {small_t:>10.1?}  {:.2}x paragraph", ratio(small_t, floor));
    println!(
        "  1,000 threads         {big_t:>10.1?}  {:.2}x paragraph (target <= 5)  {:.2}x 10 threads (target <= 1.5)",
        ratio(big_t, floor),
        ratio(big_t, small_t)
    );
    println!(
        "  1,000 threads, live   {big_live:>10.1?}  {:.2}x paragraph  {:.2}x 10 threads (rows rebuilt every frame)",
        ratio(big_live, floor),
        ratio(big_live, small_t)
    );
    println!("  timeline, 10 threads  {small_timeline:>10.1?}  {:.2}x paragraph", ratio(small_timeline, floor));
    println!(
        "  timeline, 1,000       {big_timeline:>10.1?}  {:.2}x paragraph  {:.2}x timeline of 10 threads  ({:.0} frames/s possible)",
        ratio(big_timeline, floor),
        ratio(big_timeline, small_timeline),
        1.0 / big_timeline.as_secs_f64().max(1e-12)
    );
    println!(
        "  timeline, 1,000, live {big_timeline_live:>10.1?}  {:.2}x paragraph (rows rebuilt every frame)",
        ratio(big_timeline_live, floor)
    );
    println!(
        "  reference: the agents pane alone through tui-tree-widget, same 1,000 threads: {widget:.1?} ({:.2}x our whole screen)",
        ratio(widget, big_t)
    );
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}
