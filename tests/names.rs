//! What a person reads names agents by their names (nickname, agent path, role, prompt), never by
//! their thread ids: the screens and the text outputs, over the real captures and rollouts. A
//! parent's rollout is read before its children's, so its cards name threads that appear later.

use std::path::{Path, PathBuf};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::commands::{self, stats, tree};
use swarmtop::model::short_id;
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::router::Role;
use swarmtop::ui::{self, Feed, Theme, View};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

fn ingest(input: &Path) -> Pipeline {
    commands::ingest(&[input.to_path_buf()], Config::default(), &mut |_: &swarmtop::router::Event<'_, '_>| {})
        .expect("input read")
}

/// The first screen (the first session's transcript), stream ended.
fn screen(p: &Pipeline, (w, h): (u16, u16)) -> String {
    let feed = Feed { source: swarmtop::wire::sanitize_line("names"), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut view = View::with_theme(Theme::dark());
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let counters = p.counters();
    term.draw(|f| ui::render(f, &p.model, &counters, &feed, &mut view)).expect("draw");
    format!("{}", term.backend())
}

/// No child's thread id, whole or short, is on the screen.
fn no_child_ids(p: &Pipeline, screen: &str, what: &str) {
    for t in p.model.threads.iter().filter(|t| t.role == Role::Child) {
        assert!(!screen.contains(&*t.id), "{what}: {} on screen\n{screen}", t.id);
        assert!(!screen.contains(&short_id(&t.id)), "{what}: {} on screen\n{screen}", short_id(&t.id));
    }
}

#[test]
fn v1_rollout_cards_and_reports_name_the_children_read_after_them() {
    let p = ingest(&fixture("codex-0.171.0/rollouts/collab_v1"));
    let s = screen(&p, (200, 60));
    no_child_ids(&p, &s, "collab_v1 rollouts");
    // Each child is its spawn call's from its first line (the call's `item_completed` names it),
    // so it reads as on the app-server's screen: its nickname and its task.
    for shown in [
        "spawnAgent → Kant (CHILD-TASK-1)",
        "wait → Kant (CHILD-TASK-1), Feynman (CHILD-TASK-2), Anscombe (CHILD-TASK-3)",
        "sendInput → Anscombe (CHILD-TASK-3)",
        "closeAgent → Kant (CHILD-TASK-1)",
        "agent reported: Kant (CHILD-TASK-1)",
        "completed: Child 1 finished: result-1",
        "agent reported: Feynman (CHILD-TASK-2)",
        "agent reported: Anscombe (CHILD-TASK-3)",
    ] {
        assert!(s.contains(shown), "{shown:?} missing\n{s}");
    }
    assert_eq!(p.model.diagnostics.dropped_receivers, 0);
    insta::assert_snapshot!("rollout_v1_transcript_120x40", screen(&p, (120, 40)));
}

#[test]
fn v2_rollout_spawn_cards_name_their_children_by_agent_path() {
    let p = ingest(&fixture("codex-0.171.0/rollouts/collab_v2"));
    let s = screen(&p, (200, 60));
    no_child_ids(&p, &s, "collab_v2 rollouts");
    for shown in ["spawnAgent → Arendt", "spawnAgent → Avicenna", "spawnAgent → Schrodinger"] {
        assert!(s.contains(shown), "{shown:?} missing\n{s}");
    }
}

#[test]
fn captures_and_transcripts_show_no_child_ids() {
    for input in [
        "codex-0.171.0/collab_v1.server.ndjson",
        "codex-0.171.0/collab_v2.server.ndjson",
        "claude-2.1.39",
        "claude-2.1.332-otlp/parallel.ndjson",
    ] {
        let p = ingest(&fixture(input));
        for size in [(80, 24), (200, 60)] {
            no_child_ids(&p, &screen(&p, size), input);
        }
    }
}

/// Each agent's calls are shown in its own words (issue 19): Claude Code spawns with `Task`
/// (2.1.39) and `Agent` (2.1.332, here as its own OTLP tells it), Codex with `spawnAgent`; no card
/// of one agent borrows another's tool name, and every one is a spawn to the tree.
#[test]
fn spawn_cards_are_in_each_agent_s_own_words() {
    use swarmtop::model::{AgentOp, ItemKind};
    for (input, own) in [
        ("claude-2.1.39", "Task"),
        ("claude-2.1.332-otlp/parallel.ndjson", "Agent"),
        ("codex-0.171.0/collab_v1.server.ndjson", "spawnAgent"),
    ] {
        let p = ingest(&fixture(input));
        let cards: Vec<_> = p.model.threads.iter().flat_map(|t| &t.items).filter(|i| !i.lanes.is_empty()).collect();
        assert!(!cards.is_empty(), "{input}");
        for card in cards {
            assert_eq!(
                (&card.kind, card.op, card.tool.as_deref()),
                (&ItemKind::Collab, Some(AgentOp::Spawn), Some(own))
            );
        }
    }
}

/// A Claude Code spawn that failed (2.1.332 writes the failure as a string result) reads as the
/// `Agent` call that failed, in Claude Code's words.
#[test]
fn a_failed_claude_spawn_is_its_own_tool_that_failed() {
    let lines = [
        r#"{"type":"user","sessionId":"s","uuid":"u1","isSidechain":false,"timestamp":"2026-12-01T12:00:00.000Z","message":{"role":"user","content":"go"}}"#,
        r#"{"type":"assistant","sessionId":"s","uuid":"u2","isSidechain":false,"requestId":"r1","timestamp":"2026-12-01T12:00:01.000Z","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Agent","input":{"description":"Survey","prompt":"look","subagent_type":"Explore"}}],"usage":{"input_tokens":10,"output_tokens":5}}}"#,
        r#"{"type":"user","sessionId":"s","uuid":"u3","isSidechain":false,"timestamp":"2026-12-01T12:00:09.000Z","message":{"role":"user","content":[{"type":"tool_result","content":"Error: Agent terminated early due to an API error","is_error":true,"tool_use_id":"toolu_1"}]},"toolUseResult":"Error: Agent terminated early due to an API error"}"#,
    ];
    let mut p = Pipeline::new(Config::default());
    for line in lines {
        p.push(line.as_bytes());
    }
    p.finish();
    let s = screen(&p, (200, 60));
    assert!(s.contains("✗ Agent failed"), "{s}");
    // Why, in Claude Code's words, under the card; the card keeps its prompt.
    assert!(s.contains("Error: Agent terminated early due to an API error"), "{s}");
    assert!(!s.contains("spawnAgent"), "{s}");
}

/// `tree` and `stats` name a root by its first prompt as the screen does, and children by their
/// names: one label, no id beside it (`stats --json` has both, as `id` and `label`).
#[test]
fn text_outputs_name_every_agent() {
    for (input, root, children) in [
        ("codex-0.171.0/rollouts/collab_v1", "PARENT-TASK", &["Kant", "Feynman", "Anscombe"][..]),
        ("codex-0.171.0/collab_v2.server.ndjson", "PARENT-TASK", &["Arendt", "Avicenna", "Schrodinger"][..]),
        ("claude-2.1.39", "Work on bead spotter-dov.", &["Explore transcript rendering codebase"][..]),
        // A project with an AGENTS.md: Codex writes it as the first user message, before the prompt.
        ("codex-0.171.0/rollouts/agents_md", "say hello", &[][..]),
    ] {
        let p = ingest(&fixture(input));
        let text = tree::render_tree(&p.model);
        let first = text.lines().next().unwrap_or_default();
        let id = short_id(&p.model.thread(p.model.sessions[0]).id);
        assert!(first.contains(root) && !first.contains(&id), "{input}: {first}");
        for child in children {
            assert!(text.contains(&format!(" {child}")), "{input}: {child}\n{text}");
        }
        let table = stats::render_text(&p);
        assert!(table.contains(root), "{input}\n{table}");
        no_child_ids(&p, &text, input);
    }
}

/// Esc mid-stream: the rollout gets a `<turn_aborted>` user message, then `event_msg`
/// `turn_aborted` (the real TUI in tmux, and `turn/interrupt` to the real app-server, the same
/// core). The turn ends interrupted and stays so while the children report; a next prompt starts a
/// turn of its own; the note is never a prompt and never a name.
#[test]
fn an_interrupted_rollout_turn_ends_interrupted_and_its_note_is_no_prompt() {
    use swarmtop::model::{ItemKind, Status, TurnStatus};
    use swarmtop::ui::label;
    for (input, turns, status, second) in [
        ("codex-0.171.0/rollouts/interrupt", &[TurnStatus::Interrupted][..], Status::Interrupted, None),
        (
            "codex-0.171.0/rollouts/tui_interrupt",
            &[TurnStatus::Interrupted, TurnStatus::Completed][..],
            Status::Idle,
            Some("@@agent=root@@ go on"),
        ),
    ] {
        let p = ingest(&fixture(input));
        let root = p.model.thread(p.model.sessions[0]);
        assert_eq!(root.status, status, "{input}");
        assert_eq!(root.turns.iter().map(|t| t.status).collect::<Vec<_>>(), turns, "{input}");
        assert_eq!(label::prompt_of_turn(root, 1), second, "{input}");
        for item in root.items.iter().filter(|i| i.kind == ItemKind::UserMessage) {
            assert!(!item.text.as_str().contains("turn_aborted"), "{input}: a prompt item: {:?}", item.text.as_str());
        }
        for (w, h) in [(80, 24), (200, 60)] {
            let s = screen(&p, (w, h));
            assert!(!s.contains("turn_aborted") && !s.contains("interrupted the previous turn"), "{input}\n{s}");
        }
        let text = tree::render_tree(&p.model);
        assert!(text.lines().next().is_some_and(|l| l.contains("narrate while helpers run")), "{input}\n{text}");
    }
}

/// `!cmd` in the Codex TUI: the rollout writes the command and its result as a user message of a
/// turn of its own (`<user_shell_command>`): the screen shows the command the user ran, no markup.
#[test]
fn a_shell_command_run_in_the_tui_shows_as_a_command() {
    let p = ingest(&fixture("codex-0.171.0/rollouts/tui_shell"));
    for (w, h) in [(80, 24), (200, 60)] {
        let s = screen(&p, (w, h));
        assert!(!s.contains("user_shell_command") && !s.contains("Exit code"), "{s}");
        assert!(s.contains("echo hello-from-shell") && s.contains("hello-from-shell"), "{s}");
    }
}
