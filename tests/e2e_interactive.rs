//! End-to-end with the real Claude Code CLI 2.1.332 **interactive** (no `-p`), typed at in a tmux pane as a
//! person would, against the scripted mock of `support/anthropic.rs`: a prompt that starts a sub-agent, Esc
//! while the session's answer streams and the sub-agent still works, the sub-agent's notification turn,
//! `/compact`, `/exit`. swarmtop reads the transcripts at each step.
//!
//! What the interactive CLI writes that `-p` does not: lines marked `entrypoint: cli`; Esc stops the turn
//! but the CLI (and its background agents) go on; slash commands it runs itself are `user` lines
//! (`<command-name>…`, `<local-command-stdout>…`) that ask the model nothing.
//!
//! Every wait is on a condition (the screen, a file, the mock), never a fixed sleep. Needs tmux and the CLI
//! (`scripts/setup-claude.sh`); skips, loudly, without them outside CI.

mod support;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::anthropic::{Block, MessagesRequest, MockAnthropic, Reply, Script, Usage};
use support::claude_driver;
use swarmtop::model::Status;
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::wire::fact::ItemKind;
use tmux::Tmux;

const KEY: &str = "sk-test-not-a-real-key";

/// The lead starts `helper` and then streams a long answer (to be interrupted); the helper runs a slow
/// command. Later requests of the lead (the helper's notification, the compaction summary) get a short text.
struct Interactive;

impl Script for Interactive {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let usage =
            |n: u64| Usage { input: 100 + n, cache_write_5m: 10, cache_write_1h: 0, cache_read: 1000, output: 20 + n };
        let message = |blocks: Vec<Block>, stop: &'static str, n: u64| Reply::Message {
            blocks,
            stop,
            usage: usage(n),
            model: None,
            pre_delay: Duration::from_millis(50),
            delta_delay: Duration::from_millis(5),
            signal: false,
        };
        let text = |t: &str| Block::Text(t.to_owned());
        match (req.agent.as_deref(), req.is_subagent, req.step) {
            (Some("lead"), false, 0) if !req.tools.is_empty() => message(
                vec![
                    text("One helper for the slow part."),
                    Block::ToolUse {
                        id: "toolu_ia_helper".to_owned(),
                        name: "Agent".to_owned(),
                        input: json!({"description": "Slow helper", "subagent_type": "general-purpose",
                            "prompt": "[[agent:helper]] List the project files with the Bash tool.",
                            "run_in_background": false}),
                    },
                ],
                "tool_use",
                0,
            ),
            (Some("lead"), false, 1) => {
                let long: Vec<String> = (0..400).map(|i| format!("word{i}")).collect();
                let Reply::Message { blocks, stop, usage, model, pre_delay, .. } =
                    message(vec![text(&long.join(" "))], "end_turn", 1)
                else {
                    unreachable!()
                };
                Reply::Message {
                    blocks,
                    stop,
                    usage,
                    model,
                    pre_delay,
                    delta_delay: Duration::from_millis(80),
                    signal: true,
                }
            }
            (Some("helper"), true, 0) => message(
                vec![Block::ToolUse {
                    id: "toolu_ia_helper_ls".to_owned(),
                    name: "Bash".to_owned(),
                    input: json!({"command": "sleep 6; ls", "description": "List slowly"}),
                }],
                "tool_use",
                10,
            ),
            (Some("helper"), true, _) => message(vec![text("helper: README.md and main.py.")], "end_turn", 11),
            (_, _, step) => message(vec![text("Noted.")], "end_turn", 20 + step as u64),
        }
    }
}

fn ingest(path: &Path) -> Pipeline {
    ingest_paths(&[path.to_path_buf()])
}

fn ingest_paths(paths: &[PathBuf]) -> Pipeline {
    let p = swarmtop::commands::ingest(paths, Config::default(), &mut |_: &swarmtop::router::Event<'_, '_>| {})
        .unwrap_or_else(|e| panic!("ingesting {paths:?}: {e}"));
    assert!(p.counters().conserved(), "every line counted once");
    assert_eq!(p.counters().malformed, 0, "no malformed lines in {paths:?}");
    p
}

/// The sub-agents' transcripts, then the session's: the order their lines were written in while the
/// session's interrupted turn was its last word.
fn in_written_order(projects: &Path) -> Vec<PathBuf> {
    let project = std::fs::read_dir(projects).expect("projects").flatten().map(|e| e.path()).find(|p| p.is_dir());
    let project = project.expect("the project's folder");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut sessions: Vec<PathBuf> = Vec::new();
    let mut sidecars: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(&project).expect("the project's folder").flatten() {
        let p = e.path();
        if p.is_dir() {
            let mut agents: Vec<PathBuf> =
                std::fs::read_dir(p.join("subagents")).into_iter().flatten().flatten().map(|e| e.path()).collect();
            agents.sort();
            files.extend(agents.iter().filter(|a| a.extension().is_some_and(|x| x == "jsonl")).cloned());
            sidecars.extend(agents.iter().filter(|a| a.to_string_lossy().ends_with(".meta.json")).cloned());
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            sessions.push(p);
        }
    }
    files.extend(sessions);
    // A sidecar read before its session names the session with the child's description (a bug of
    // its own, outside this test): last, where it only describes the child again.
    files.extend(sidecars);
    files
}

/// Waits for `what` on anything but the screen (a file, the mock), polling.
fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every transcript file's text, concatenated.
fn transcripts(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                text.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    text
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_interactive_esc_keeps_background_agents_and_local_commands_leave_it_idle() {
    let Some(bin) = claude_driver::binary() else { return };
    let world = claude_driver::World::new().expect("a world");
    // Past every first-run screen: onboarding, the API key, the folder's trust, the bypass warning.
    let config = json!({
        "hasCompletedOnboarding": true, "theme": "dark", "bypassPermissionsModeAccepted": true,
        "customApiKeyResponses": {"approved": [&KEY[KEY.len() - 20..]], "rejected": []},
        "projects": {world.project.to_string_lossy(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
    });
    std::fs::write(world.home.join(".claude.json"), config.to_string()).expect(".claude.json");
    let mock = MockAnthropic::start(Interactive).await.expect("the mock");
    let mut streaming = mock.streaming();
    let env: Vec<String> = claude_driver::env(&world, &mock.base_url(), None)
        .into_iter()
        .map(|(k, v)| {
            let v = if k == "ANTHROPIC_API_KEY" { KEY.into() } else { v };
            format!("{}={}", k.to_string_lossy(), quoted(&v.to_string_lossy()))
        })
        .collect();
    let command = format!(
        "cd {} && env -i TERM=xterm-256color {} {} --model claude-sonnet-4-5 --dangerously-skip-permissions; echo CLAUDE_EXIT=$?; sleep 120",
        quoted(&world.project.to_string_lossy()),
        env.join(" "),
        quoted(&bin.to_string_lossy()),
    );
    let Some(t) = Tmux::start("claude-interactive", 160, 45, &command) else { return };
    // Typed, seen in the input box, then sent: keys that arrive while the CLI is still starting are lost.
    let typed = |text: &str| {
        t.run(&["send-keys", "-t", "t", "-l", text]);
        t.wait_for("the typed text", |s| s.contains(text));
        t.keys(&["Enter"]);
    };
    let projects = world.projects();
    tokio::task::block_in_place(|| {
        t.wait_for("the prompt", |s| s.contains("bypass permissions"));
        typed("[[agent:lead]] Look at this project. Use a helper.");
    });
    let streamed = tokio::time::timeout(Duration::from_secs(60), streaming.changed()).await;
    assert!(
        matches!(streamed, Ok(Ok(()))),
        "the lead's long answer never streamed; the screen:\n{}\nthe mock served: {:#?}",
        t.screen(),
        mock.served()
    );
    tokio::task::block_in_place(|| {
        t.keys(&["Escape"]);
        wait_until("the interrupt note", Duration::from_secs(20), || {
            transcripts(&projects).contains("[Request interrupted by user]")
        });
    });
    // The turn is over; the helper's command still runs (it sleeps 6 s), and it must not look interrupted.
    // Its lines so far were written before the session's interrupt note: read in that order, as a
    // follower met them.
    let text = transcripts(&projects);
    let order = in_written_order(&projects);
    if let Some(dir) = std::env::var_os("SWARMTOP_E2E_KEEP") {
        for (i, f) in order.iter().enumerate() {
            let dest = Path::new(&dir).join(format!("{i:02}-{}", f.file_name().unwrap_or_default().to_string_lossy()));
            std::fs::copy(f, dest).expect("keeping the transcripts");
        }
    }
    let p = ingest_paths(&order);
    let lead = p.model.threads.iter().find(|t| t.depth == 0).expect("the session");
    assert_eq!(lead.status, Status::Interrupted, "the session's turn was interrupted");
    let helper = p.model.threads.iter().find(|t| t.depth == 1).expect("the helper under the session");
    assert_eq!(helper.nickname.as_ref().map(swarmtop::wire::Clean::as_str), Some("Slow helper"));
    if text.contains("helper: README.md") {
        eprintln!("the helper finished before the check: its running state was not observed");
    } else {
        assert!(
            matches!(helper.status, Status::Running | Status::Pending),
            "Esc stops the session's turn, not its background agent: {:?}",
            helper.status
        );
    }
    tokio::task::block_in_place(|| {
        // Its notification is a turn of the session's own, answered.
        wait_until("the helper's end", Duration::from_secs(60), || {
            transcripts(&projects).contains("helper: README.md")
        });
        wait_until("the notification turn", Duration::from_secs(60), || transcripts(&projects).contains("Noted."));
        t.wait_for("the prompt after the notification", |s| !s.contains("esc to interrupt"));
        typed("/compact");
        t.wait_for("the compaction", |s| s.contains("Compacted"));
        wait_until("the compaction's output line", Duration::from_secs(20), || {
            transcripts(&projects).contains("local-command-stdout")
        });
    });
    let p = ingest(&projects);
    let lead = &p.model.threads[0];
    assert_eq!(lead.status, Status::Idle, "after /compact the session waits for the user, it is not running");
    let kinds: Vec<&ItemKind> = lead.items.iter().map(|i| &i.kind).collect();
    assert!(kinds.contains(&&ItemKind::Compaction), "the summary is a compaction: {kinds:?}");
    assert!(lead.items.iter().any(|i| i.text.as_str() == "/compact"), "the command, as typed");
    for child in &p.model.threads[1..] {
        assert_eq!(child.status, Status::Idle, "{:?}", child.nickname);
    }
    tokio::task::block_in_place(|| {
        typed("/exit");
        t.wait_for("the CLI's exit", |s| s.contains("CLAUDE_EXIT=0"));
    });
    let p = ingest(&projects);
    assert_eq!(p.model.threads[0].status, Status::Idle, "after /exit");
    eprintln!("mock served {} requests", mock.served().len());
}
