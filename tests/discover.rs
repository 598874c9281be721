//! The machine view (`swarmtop` with no arguments) in a real terminal under tmux, on a fresh
//! HOME: every session found is on the screen, a session that starts later appears, a sub-agent
//! file that appears later lands under its spawn card, and with nothing found the screen says
//! where it looked and what to run. Needs tmux (installed by `scripts/test`); without it the
//! tests say so and pass, except in CI, where they fail.

#[path = "support/home.rs"]
mod home;

use std::fs;
use std::io::Write;
use std::path::Path;

use home::{CLAUDE_NEW_AGENT, CLAUDE_NEW_SESSION, Home};

#[path = "support/tmux.rs"]
mod tmux;
use tmux::Tmux;

/// The machine view of `home`, as `swarmtop` with no arguments opens it there.
fn machine_view(name: &str, home: &Home) -> Option<Tmux> {
    Tmux::start(&format!("discover-{name}"), 160, 45, &home.shell_command(""))
}

/// Whether a line naming `what` comes below the first line naming `group`.
fn below(screen: &str, group: &str, what: &str) -> bool {
    let at = |needle: &str| screen.lines().position(|l| l.contains(needle));
    matches!((at(group), at(what)), (Some(g), Some(w)) if g < w)
}

/// The line of the agents pane that names `what`.
fn row<'a>(screen: &'a str, what: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(what))
}

#[test]
fn shows_every_session_and_picks_up_new_sessions_and_sub_agents() {
    let home = Home::new();
    home.add_claude_old();
    home.add_codex("collab_v1");
    let mut tee = home
        .tee_serving(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0/probe.server.ndjson"));
    home.wait_tee(5);
    let Some(tmux) = machine_view("sessions", &home) else {
        tee.kill().unwrap();
        tee.wait().unwrap();
        return;
    };

    // Claude's session and its sub-agent, Codex's children, the tee's session (by its prompt).
    let screen = tmux.wait_for("every session", |s| {
        s.contains("machine:")
            && s.contains("Explore transcri")
            && s.contains("say hello")
            && s.contains("Kant")
            && s.contains("1 live")
    });
    assert!(row(&screen, "machine:").unwrap().contains("3 sessions"), "{screen}");
    // Grouped by agent, then project: both agents have a group row, each session under one.
    assert!(screen.contains("▾ claude ×1") && screen.contains("▾ codex ×2"), "{screen}");
    assert!(below(&screen, "▾ codex", "Kant") && below(&screen, "▾ claude", "Explore transcri"), "{screen}");

    // A Codex session that starts after the screen opened.
    home.add_codex("collab_v2");
    let screen = tmux.wait_for("the new Codex session", |s| s.contains("Arendt") && s.contains("Schrodinger"));
    assert!(below(&screen, "▾ codex ×3", "Arendt"), "the new session joins its agent's group:\n{screen}");

    // A Claude Code session whose sub-agent's file appears while it runs (written elsewhere
    // first, then moved in piece by piece as Claude Code would write it).
    let staging = Home::new();
    let staged = staging.add_claude_new();
    let staged_agent = staged.with_extension("").join(format!("subagents/agent-{CLAUDE_NEW_AGENT}.jsonl"));
    let lines: Vec<String> = fs::read_to_string(&staged).unwrap().lines().map(str::to_owned).collect();
    let project = home.claude_projects().join("-home-dev-web");
    fs::create_dir_all(&project).unwrap();
    let file = project.join(staged.file_name().unwrap());
    fs::write(&file, lines[..2].join("\n") + "\n").unwrap();
    tmux.wait_for("the new Claude session", |s| s.contains("Survey the code"));
    let subagents = project.join(CLAUDE_NEW_SESSION).join("subagents");
    fs::create_dir_all(&subagents).unwrap();
    fs::copy(&staged_agent, subagents.join(staged_agent.file_name().unwrap())).unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all((lines[2..].join("\n") + "\n").as_bytes()).unwrap();
    drop(f);
    // The child's own spend (3,040 tokens) comes from its file.
    let child_row = |l: &str| l.contains("└─") && l.contains("Survey the code") && l.contains("3.0k");
    let screen = tmux.wait_for("the sub-agent under its card", |s| s.lines().any(child_row));
    let lines: Vec<&str> = screen.lines().collect();
    let card = lines.iter().position(|l| l.contains("Survey the code")).expect("the session's row");
    let child = lines.iter().position(|l| child_row(l)).expect("the child's row");
    let spawn = lines[card..child].iter().any(|l| l.contains('⑂'));
    assert!(child > card && spawn, "the child sits under the session's spawn card:\n{screen}");
    // The new session sits under its agent and its project (the folder's name first).
    let claude = lines.iter().position(|l| l.contains("claude ×2")).expect("the claude group's row");
    let web = lines.iter().position(|l| l.contains("web ×1") && l.contains("/home/dev/web")).expect("its project");
    assert!(claude < web && web < card, "agent ▸ project ▸ session:\n{screen}");

    // ← on the first row folds its group to one row; → opens it again.
    tmux.keys(&["Home", "Left"]);
    tmux.wait_for("a folded group", |s| s.contains("▸ codex ×3") || s.contains("▸ claude ×2"));
    tmux.keys(&["Right"]);
    tmux.wait_for("the group open again", |s| s.contains("▾ codex ×3") && s.contains("▾ claude ×2"));

    tee.kill().unwrap();
    tee.wait().unwrap();
}

#[test]
fn with_nothing_found_says_where_it_looked_then_shows_what_starts() {
    let home = Home::new();
    let Some(tmux) = machine_view("empty", &home) else { return };
    let screen = tmux.wait_for("the empty screen", |s| {
        s.contains("No agent sessions active in the last 30m.") && s.contains("~/.codex")
    });
    assert!(screen.contains("Older sessions:  swarmtop --all"), "{screen}");
    assert!(screen.contains("~/.claude/projects") && screen.contains("~/.codex/sessions"), "{screen}");
    assert!(screen.contains("swarmtop tee -- codex app-server"), "{screen}");
    assert!(screen.contains("swarmtop demo"), "{screen}");
    // The agent's folder did not exist when the screen opened.
    home.add_codex("collab_v1");
    tmux.wait_for("the session that started", |s| s.contains("Kant") && s.contains("Anscombe"));
}

/// A Claude Code 2.1.332 session's first lines (`permission-mode`, `file-history-snapshot`, …)
/// carry no `cwd`: its project group is named by the project's folder at once, never `?`, and by
/// the real cwd as soon as a line brings it.
#[test]
fn a_claude_session_read_before_its_first_cwd_is_grouped_by_its_folder_then_its_cwd() {
    let home = Home::new();
    let id = "5e6f7a8b-1c2d-4e3f-9a0b-c1d2e3f40332";
    let project = home.claude_projects().join("-home-dev-late-app");
    fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{id}.jsonl"));
    let at = home::iso(home::now_ms() - 5_000);
    let first = [
        format!(r#"{{"type":"permission-mode","permissionMode":"default","sessionId":"{id}"}}"#),
        format!(
            r#"{{"type":"file-history-snapshot","messageId":"u1","snapshot":{{"messageId":"u1","trackedFileBackups":{{}},"timestamp":"{at}"}},"isSnapshotUpdate":false}}"#
        ),
    ];
    fs::write(&file, first.join("\n") + "\n").unwrap();
    let Some(tmux) = machine_view("late-cwd", &home) else { return };
    let no_unknown_group = |s: &str| !s.lines().any(|l| l.contains("? ×"));
    let screen = tmux.wait_for("the session in its folder's group", |s| s.contains("-home-dev-late-app ×1"));
    assert!(no_unknown_group(&screen), "{screen}");
    let group = screen.lines().find(|l| l.contains("-home-dev-late-app ×1")).unwrap_or_default();
    assert_eq!(group.matches("-home-dev-late-app").count(), 1, "a folder's name is no path to repeat:\n{screen}");
    let prompt = format!(
        r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"{id}","isSidechain":false,"cwd":"/home/dev/late_app","version":"2.1.332","timestamp":"{at}","message":{{"role":"user","content":"Tidy the late app"}}}}"#
    );
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all((prompt + "\n").as_bytes()).unwrap();
    drop(f);
    let screen = tmux.wait_for("the session under its cwd", |s| {
        s.lines().any(|l| l.contains("late_app ×1") && l.contains("/home/dev/late_app"))
            && s.contains("Tidy the late app")
    });
    assert!(no_unknown_group(&screen) && !screen.contains("-home-dev-late-app"), "{screen}");
}
