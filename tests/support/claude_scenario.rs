//! The scripted Claude Code sessions of the end-to-end test, for the mock in `anthropic.rs`.
//!
//! `team` (one run, every way a child can end):
//!
//! ```text
//! lead (claude-sonnet-4-5)
//! ├── survey     foreground, the session's model; runs `ls`, then spawns a grandchild of its own
//! │   └── grep   foreground, depth 2; runs `ls -1`, reports
//! ├── docs       foreground, `model: haiku` (the CLI resolves it: claude-haiku-5-5); runs `ls -la`, reports
//! ├── watch      background (`run_in_background: true`); sleeps, reports through a task notification
//! └── changelog  foreground; runs `ls`, then every request gets HTTP 529 until the CLI gives up
//! ```
//!
//! `interrupt`: the lead spawns one foreground child (`slow`), whose second answer streams slowly; the test
//! sends SIGINT to the CLI in the middle of it.
//!
//! Every (agent, step) has its own usage, so per-agent sums are checkable against what the mock served.

use std::time::Duration;

use serde_json::{Value, json};

use super::anthropic::{Block, MessagesRequest, Reply, Script, Usage};

/// The model of the session (`--model`).
pub const ROOT_MODEL: &str = "claude-sonnet-4-5";
/// What 2.1.332 sends for `model: haiku` (wire.md §6).
pub const HAIKU_MODEL: &str = "claude-haiku-5-5";

/// One agent of a scenario, as the test expects to see it in the transcripts.
#[derive(Clone, Copy, Debug)]
pub struct Agent {
    pub tag: &'static str,
    pub parent: Option<&'static str>,
    /// The spawning tool_use id (the child's card in its parent); `None` for the lead.
    pub card: Option<&'static str>,
    pub description: &'static str,
    /// The model the mock answers with.
    pub model: &'static str,
    pub background: bool,
    /// Whether its requests end in HTTP 529 after the first step.
    pub fails: bool,
}

pub const TEAM: &[Agent] = &[
    Agent {
        tag: "lead",
        parent: None,
        card: None,
        description: "",
        model: ROOT_MODEL,
        background: false,
        fails: false,
    },
    Agent {
        tag: "survey",
        parent: Some("lead"),
        card: Some("toolu_team_lead_survey"),
        description: "Survey the project",
        model: ROOT_MODEL,
        background: false,
        fails: false,
    },
    Agent {
        tag: "grep",
        parent: Some("survey"),
        card: Some("toolu_team_survey_grep"),
        description: "Grep the sources",
        model: ROOT_MODEL,
        background: false,
        fails: false,
    },
    Agent {
        tag: "docs",
        parent: Some("lead"),
        card: Some("toolu_team_lead_docs"),
        description: "Check the docs",
        model: HAIKU_MODEL,
        background: false,
        fails: false,
    },
    Agent {
        tag: "watch",
        parent: Some("lead"),
        card: Some("toolu_team_lead_watch"),
        description: "Watch the build",
        model: ROOT_MODEL,
        background: true,
        fails: false,
    },
    Agent {
        tag: "changelog",
        parent: Some("lead"),
        card: Some("toolu_team_lead_changelog"),
        description: "Read the changelog",
        model: ROOT_MODEL,
        background: false,
        fails: true,
    },
];

pub const INTERRUPT: &[Agent] = &[
    Agent {
        tag: "lead",
        parent: None,
        card: None,
        description: "",
        model: ROOT_MODEL,
        background: false,
        fails: false,
    },
    Agent {
        tag: "slow",
        parent: Some("lead"),
        card: Some("toolu_int_lead_slow"),
        description: "Write a long report",
        model: ROOT_MODEL,
        background: false,
        fails: false,
    },
];

pub fn agent(agents: &'static [Agent], tag: &str) -> &'static Agent {
    agents.iter().find(|a| a.tag == tag).unwrap_or_else(|| panic!("no agent {tag} in the scenario"))
}

/// The `-p` prompt of both runs.
pub const ROOT_PROMPT: &str = "[[agent:lead]] Look at this project and tell me what is in it. Use sub-agents.";

/// Files of the scratch project the agents list.
pub const PROJECT_FILES: &[(&str, &str)] = &[
    ("README.md", "# demo\nA tiny project for the swarmtop end-to-end test.\n"),
    ("main.py", "def main():\n    print(\"hello\")\n\n\nif __name__ == \"__main__\":\n    main()\n"),
];

/// How fast the scripted model answers: a think time before each answer and a pause after each delta.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    pub think: Duration,
    pub delta: Duration,
}

impl Pacing {
    /// Slow enough that a follower polling the files sees every child running (each lives over a second),
    /// fast enough that the run takes seconds.
    pub const LIVE: Pacing = Pacing { think: Duration::from_millis(350), delta: Duration::from_millis(25) };
}

/// Usage of one (agent, step): distinct for every pair, so sums say which responses were counted.
/// The lead writes to the 1-hour cache (priced 2x input), everyone else to the 5-minute one (1.25x).
pub fn usage_of(agents: &[Agent], tag: &str, step: usize) -> Usage {
    let a = agents.iter().position(|x| x.tag == tag).unwrap_or(agents.len()) as u64;
    let n = a * 10 + step as u64;
    let write = 300 + n;
    let (w5, w1) = if tag == "lead" { (0, write) } else { (write, 0) };
    Usage { input: 1000 + n, cache_write_5m: w5, cache_write_1h: w1, cache_read: 5000 + n * 7, output: 100 + n }
}

fn agent_call(card: &str, child: &Agent, prompt_tail: &str, model: Option<&str>) -> Block {
    let mut input = json!({
        "description": child.description,
        "prompt": format!("[[agent:{}]] {prompt_tail}", child.tag),
        "subagent_type": "general-purpose",
        // 2.1.332 runs agents in the background unless told otherwise (wire.md §8).
        "run_in_background": child.background,
    });
    if let Some(m) = model {
        input["model"] = json!(m);
    }
    Block::ToolUse { id: card.to_owned(), name: "Agent".to_owned(), input }
}

fn bash(id: &str, command: &str) -> Block {
    Block::ToolUse {
        id: id.to_owned(),
        name: "Bash".to_owned(),
        input: json!({"command": command, "description": "List the project files"}),
    }
}

fn text(t: &str) -> Block {
    Block::Text(t.to_owned())
}

/// Whether the newest user message is the CLI's background-task notification (a new turn of the lead).
fn is_notification(body: &Value) -> bool {
    let Some(last) = body.get("messages").and_then(Value::as_array).and_then(|m| m.last()) else {
        return false;
    };
    last.get("content").is_some_and(|c| {
        let s = c.to_string();
        s.contains("task-notification") || s.contains("SYSTEM NOTIFICATION")
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Team,
    Interrupt,
}

pub struct Scenario {
    pub which: Which,
    pub agents: &'static [Agent],
    pub pacing: Pacing,
}

impl Scenario {
    pub fn team(pacing: Pacing) -> Self {
        Self { which: Which::Team, agents: TEAM, pacing }
    }

    pub fn interrupt(pacing: Pacing) -> Self {
        Self { which: Which::Interrupt, agents: INTERRUPT, pacing }
    }

    fn answer(&self, tag: &str, step: usize, blocks: Vec<Block>, stop: &'static str) -> Reply {
        let a = agent(self.agents, tag);
        Reply::Message {
            blocks,
            stop,
            usage: usage_of(self.agents, tag, step),
            model: Some(a.model.to_owned()),
            pre_delay: self.pacing.think,
            delta_delay: self.pacing.delta,
            signal: false,
        }
    }

    fn team_reply(&self, tag: &str, step: usize, body: &Value) -> Option<Reply> {
        let ag = |t| agent(TEAM, t);
        let report = "List the files of the project directory with the Bash tool and report their names.";
        Some(match (tag, step) {
            ("lead", 0) => self.answer(
                tag,
                step,
                vec![
                    Block::Thinking("Four independent pieces of work: one helper each.".to_owned()),
                    text("I'll split this between four helpers."),
                    agent_call("toolu_team_lead_survey", ag("survey"), report, None),
                    agent_call("toolu_team_lead_docs", ag("docs"), report, Some("haiku")),
                    agent_call("toolu_team_lead_watch", ag("watch"), report, None),
                    agent_call("toolu_team_lead_changelog", ag("changelog"), report, None),
                ],
                "tool_use",
            ),
            ("lead", _) if is_notification(body) => self.answer(
                tag,
                step,
                vec![text("The watcher reported as well: the project has README.md and main.py.")],
                "end_turn",
            ),
            ("lead", _) => self.answer(
                tag,
                step,
                vec![text(
                    "Survey and docs agree: README.md and main.py. The changelog helper failed; the watcher \
                     is still running in the background.",
                )],
                "end_turn",
            ),
            ("survey", 0) => {
                self.answer(tag, step, vec![text("Listing first."), bash("toolu_team_survey_ls", "ls")], "tool_use")
            }
            ("survey", 1) => {
                self.answer(tag, step, vec![agent_call("toolu_team_survey_grep", ag("grep"), report, None)], "tool_use")
            }
            ("survey", _) => {
                self.answer(tag, step, vec![text("survey: README.md and main.py (grep agrees).")], "end_turn")
            }
            ("grep", 0) => self.answer(tag, step, vec![bash("toolu_team_grep_ls", "ls -1")], "tool_use"),
            ("grep", _) => self.answer(tag, step, vec![text("grep: README.md, main.py.")], "end_turn"),
            ("docs", 0) => self.answer(tag, step, vec![bash("toolu_team_docs_ls", "ls -la")], "tool_use"),
            ("docs", _) => self.answer(tag, step, vec![text("docs: README.md is the only document.")], "end_turn"),
            // The background child outlives the foreground ones, so its end is a notification turn.
            ("watch", 0) => self.answer(tag, step, vec![bash("toolu_team_watch_ls", "sleep 2; ls")], "tool_use"),
            ("watch", _) => {
                self.answer(tag, step, vec![text("watch: the build has README.md and main.py.")], "end_turn")
            }
            ("changelog", 0) => self.answer(tag, step, vec![bash("toolu_team_changelog_ls", "ls")], "tool_use"),
            ("changelog", _) => Reply::Error { status: 529, kind: "overloaded_error", message: "Overloaded" },
            _ => return None,
        })
    }

    fn interrupt_reply(&self, tag: &str, step: usize) -> Option<Reply> {
        let report = "List the files of the project directory with the Bash tool and write a long report.";
        Some(match (tag, step) {
            ("lead", 0) => self.answer(
                tag,
                step,
                vec![agent_call("toolu_int_lead_slow", agent(INTERRUPT, "slow"), report, None)],
                "tool_use",
            ),
            ("lead", _) => self.answer(tag, step, vec![text("never reached: the run is interrupted")], "end_turn"),
            ("slow", 0) => self.answer(tag, step, vec![bash("toolu_int_slow_ls", "ls")], "tool_use"),
            ("slow", _) => {
                let long: Vec<String> = (0..400).map(|i| format!("word{i}")).collect();
                // A finished block first (the CLI writes one line per block), then the long one it is
                // interrupted in.
                let blocks = vec![text("Here is the long report."), text(&long.join(" "))];
                let mut r = self.answer(tag, step, blocks, "end_turn");
                if let Reply::Message { delta_delay, signal, .. } = &mut r {
                    *delta_delay = Duration::from_millis(60);
                    *signal = true;
                }
                r
            }
            _ => return None,
        })
    }
}

impl Script for Scenario {
    fn reply(&self, req: &MessagesRequest<'_>) -> Reply {
        let scripted = req.agent.as_deref().filter(|t| self.agents.iter().any(|a| a.tag == *t)).and_then(|tag| {
            // A sub-agent's request must say so in its system prompt, and the lead's must not; anything else
            // is a side query of the CLI's (a title, a summary) that happens to quote a prompt.
            if (tag == "lead") == req.is_subagent || req.tools.is_empty() {
                return None;
            }
            if self.which == Which::Team {
                self.team_reply(tag, req.step, req.body)
            } else {
                self.interrupt_reply(tag, req.step)
            }
        });
        scripted.unwrap_or_else(|| Reply::Message {
            blocks: vec![text("Side answer.")],
            stop: "end_turn",
            usage: Usage { input: 9, cache_write_5m: 0, cache_write_1h: 0, cache_read: 0, output: 3 },
            model: None,
            pre_delay: Duration::ZERO,
            delta_delay: Duration::ZERO,
            signal: false,
        })
    }
}
