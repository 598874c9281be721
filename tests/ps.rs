//! `swarmtop ps` on a fresh HOME: every root session once, with the figures `stats` gives for
//! that session's own inputs; the same Codex session behind a tee and in rollouts is one row;
//! liveness comes from a real process holding a session file open.

#[path = "support/home.rs"]
mod home;
#[path = "support/tmux.rs"]
mod tmux;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use home::{CLAUDE_NEW_SESSION, CLAUDE_OLD_SESSION, CODEX_V1_ROOT, CODEX_V2_ROOT, Home};
use serde_json::Value;

fn ps(home: &Home, args: &[&str]) -> Vec<Value> {
    let out = home.cmd().arg("ps").arg("--json").args(args).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "ps failed: {}", String::from_utf8_lossy(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("ps --json prints JSON");
    rows.as_array().expect("an array").clone()
}

fn by_id(rows: &[Value]) -> HashMap<String, Value> {
    let mut map = HashMap::new();
    for r in rows {
        let id = r["id"].as_str().unwrap().to_owned();
        assert!(map.insert(id.clone(), r.clone()).is_none(), "session {id} listed twice");
    }
    map
}

/// `stats --json` of these inputs: the root thread's subtree (agents, total tokens, cost).
fn stats_of(root: &str, inputs: &[PathBuf]) -> (u64, u64, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_swarmtop")).arg("stats").arg("--json").args(inputs).output().unwrap();
    assert!(out.status.success());
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    let thread = stats["threads"].as_array().unwrap().iter().find(|t| t["id"] == root).expect("root in stats").clone();
    let sub = &thread["subtree"];
    (sub["threads"].as_u64().unwrap(), sub["tokens"]["total"].as_u64().unwrap(), sub["costUsd"].clone())
}

fn figures(row: &Value) -> (u64, u64, Value) {
    (row["agents"].as_u64().unwrap(), row["tokens"].as_u64().unwrap(), row["costUsd"].clone())
}

fn session_inputs(file: &Path) -> Vec<PathBuf> {
    let dir = file.with_extension("");
    if dir.is_dir() { vec![file.to_owned(), dir] } else { vec![file.to_owned()] }
}

#[test]
fn lists_every_root_session_once_with_the_figures_of_stats() {
    let home = Home::new();
    let old = home.add_claude_old();
    let new = home.add_claude_new();
    let v1 = home.add_codex("collab_v1");
    let v2 = home.add_codex("collab_v2");
    home.add_old_claude_session();
    let mut tee = home
        .tee_serving(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0/probe.server.ndjson"));
    let (socket, recording) = home.wait_tee(5);

    let rows = ps(&home, &[]);
    let rows = by_id(&rows);
    let probe_root = {
        let out =
            Command::new(env!("CARGO_BIN_EXE_swarmtop")).arg("stats").arg("--json").arg(&recording).output().unwrap();
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        stats["threads"].as_array().unwrap().iter().find(|t| t["depth"] == 0).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let mut ids: Vec<&str> = rows.keys().map(String::as_str).collect();
    ids.sort_unstable();
    let mut want = vec![CLAUDE_OLD_SESSION, CLAUDE_NEW_SESSION, CODEX_V1_ROOT, CODEX_V2_ROOT, probe_root.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want, "the session outside the window is left out");

    let claude_old = &rows[CLAUDE_OLD_SESSION];
    assert_eq!(claude_old["tool"], "claude");
    assert_eq!(claude_old["project"], "/home/USER/projects/spotter-worktrees/spotter-dov");
    assert_eq!(claude_old["source"], old.display().to_string());
    assert_eq!(figures(claude_old), stats_of(CLAUDE_OLD_SESSION, &session_inputs(&old)));
    assert_eq!(claude_old["agents"], 2);

    let claude_new = &rows[CLAUDE_NEW_SESSION];
    assert_eq!(claude_new["tool"], "claude");
    assert_eq!(claude_new["project"], "/home/dev/web");
    assert_eq!(figures(claude_new), stats_of(CLAUDE_NEW_SESSION, &session_inputs(&new)));
    assert_eq!(claude_new["agents"], 2, "the sub-agent is in the tree");

    for (root, files) in [(CODEX_V1_ROOT, &v1), (CODEX_V2_ROOT, &v2)] {
        let row = &rows[root];
        assert_eq!(row["tool"], "codex");
        assert_eq!(row["project"], "/home/dev/project");
        assert_eq!(row["state"], "idle", "nobody holds the files; they were written just now");
        assert_eq!(figures(row), stats_of(root, files));
        assert_eq!(row["agents"], 4, "root and three children: {row}");
        assert_eq!(row["name"], "PARENT-TASK", "named by its first prompt as the screen names it");
    }
    assert!(claude_old["name"].as_str().unwrap().starts_with("Work on bead spotter-dov."), "{claude_old}");
    assert_eq!(rows[CODEX_V1_ROOT]["costUsd"].to_string(), "0.04686224");

    let probe = &rows[probe_root.as_str()];
    assert_eq!(probe["tool"], "codex");
    assert_eq!(probe["source"], socket.display().to_string());
    assert_eq!(probe["state"], "live");
    assert_eq!(probe["pid"], tee.id());
    assert!(probe["memoryBytes"].as_u64().unwrap() > 0);
    assert_eq!(figures(probe), stats_of(&probe_root, &[recording]));

    let all = ps(&home, &["--all"]);
    assert_eq!(all.len(), 6, "--all lists the old session too");
    let narrow = ps(&home, &["--since", "0s"]);
    assert!(narrow.iter().all(|r| r["state"] == "live"), "only what runs now: {narrow:?}");

    tee.kill().unwrap();
    tee.wait().unwrap();
}

#[test]
fn a_codex_session_through_a_tee_and_in_rollouts_is_one_row() {
    let home = Home::new();
    let mut tee =
        home.tee_serving(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tee/collab_v1.server.ndjson"));
    let (socket, recording) = home.wait_tee(100);
    // The app-server behind the tee writes the same session's rollouts as it goes.
    home.add_codex_at("collab_v1", home::now_ms());

    let rows = ps(&home, &[]);
    assert_eq!(rows.len(), 1, "one session, once: {rows:?}");
    let row = &rows[0];
    assert_eq!(row["id"], CODEX_V1_ROOT);
    assert_eq!(row["source"], socket.display().to_string(), "the tee's stream wins");
    assert_eq!(row["project"], "/home/dev/project", "the rollout names the project");
    assert_eq!(row["state"], "live");
    assert_eq!(figures(row), stats_of(CODEX_V1_ROOT, &[recording]));
    assert_eq!(row["agents"], 4);

    tee.kill().unwrap();
    tee.wait().unwrap();
}

#[test]
fn a_process_holding_a_session_file_makes_it_live() {
    let home = Home::new();
    let files = home.add_codex("collab_v2");
    let root_file = files.iter().find(|f| f.to_string_lossy().contains(CODEX_V2_ROOT)).unwrap();
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg("exec 3>>\"$0\"; exec sleep 600")
        .arg(root_file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let row = home::wait_for("the holder to open the file", || {
        let rows = ps(&home, &[]);
        rows.into_iter().find(|r| r["state"] == "live")
    });
    assert_eq!(row["id"], CODEX_V2_ROOT);
    assert_eq!(row["pid"], holder.id());
    assert!(row["cpuPercent"].as_f64().is_some());
    holder.kill().unwrap();
    holder.wait().unwrap();

    let rows = ps(&home, &[]);
    assert_eq!(rows[0]["state"], "idle", "without the process, file age decides");
    assert_eq!(rows[0]["pid"], Value::Null);
}

#[test]
fn says_where_it_looked_when_it_finds_nothing() {
    let home = Home::new();
    let out = home.cmd().arg("ps").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("no agent sessions found"), "{text}");
    assert!(text.contains("~/.claude/projects") && text.contains("~/.codex/sessions"), "{text}");
    let out = home.cmd().args(["ps", "--json"]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "[]\n");
    let moved = home.path().join("elsewhere");
    let out = home.cmd().env("CLAUDE_CONFIG_DIR", &moved).arg("ps").output().unwrap();
    assert!(String::from_utf8(out.stdout).unwrap().contains("~/elsewhere/projects"));
}

/// `swarmtop ps` in a terminal of `width` columns, in `home`: the screen's non-empty lines.
fn ps_on_a_terminal(home: &Home, width: u16) -> Option<Vec<String>> {
    let command = format!(
        "env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u COLUMNS HOME='{}' XDG_RUNTIME_DIR='{}' XDG_STATE_HOME='{}' '{}' ps; \
         echo END; sleep 60",
        home.path().display(),
        home.run_dir().display(),
        home.state_dir().display(),
        env!("CARGO_BIN_EXE_swarmtop"),
    );
    let t = tmux::Tmux::start(&format!("ps-{width}"), width, 40, &command)?;
    let screen = t.wait_for("ps to finish", |s| s.lines().any(|l| l == "END"));
    Some(screen.lines().take_while(|l| *l != "END").filter(|l| !l.is_empty()).map(str::to_owned).collect())
}

/// On a terminal the table fits its width, one line per session, as `ps` fits its command: at
/// 80 columns every row wrapped over three lines (a rollout path alone is ~95 columns). The
/// source goes first, then ids are cut to their tails; the figures and the name's start stay.
#[test]
fn on_a_terminal_the_table_fits_its_width_one_line_a_session() {
    let home = Home::new();
    home.add_claude_new();
    home.add_codex("collab_v1");
    home.add_codex("collab_v2");
    let sessions = ps(&home, &[]).len();
    assert_eq!(sessions, 3);
    let Some(narrow) = ps_on_a_terminal(&home, 80) else { return };
    assert_eq!(narrow.len(), 1 + sessions, "a header and one line a session:\n{}", narrow.join("\n"));
    for l in &narrow {
        assert!(l.chars().count() <= 80, "fits 80 columns: {l:?}");
    }
    let header: Vec<&str> = narrow[0].split_whitespace().collect();
    for col in ["AGENT", "ID", "STATE", "TOKENS", "COST", "NAME"] {
        assert!(header.contains(&col), "{col} kept at 80 columns: {header:?}");
    }
    assert!(!header.contains(&"SOURCE"), "the source goes first: {header:?}");
    let v1 = narrow.iter().find(|l| l.starts_with("codex") && l.contains(&CODEX_V1_ROOT[CODEX_V1_ROOT.len() - 8..]));
    assert!(v1.is_some_and(|l| l.contains("…")), "a cut id keeps its tail:\n{}", narrow.join("\n"));
    // Wide enough, ids are whole.
    let Some(wide) = ps_on_a_terminal(&home, 200) else { return };
    assert!(wide.iter().any(|l| l.contains(CODEX_V1_ROOT)), "{}", wide.join("\n"));
}

/// Piped, every chosen column is whole, one line a session, and the lines stay short enough to
/// read (the source, ~95 columns for a rollout, only with `-o`: lines were ~250 columns).
#[test]
fn piped_output_is_whole_rows_that_parse() {
    let home = Home::new();
    home.add_claude_new();
    home.add_codex("collab_v1");
    let out = home.cmd().arg("ps").stdin(Stdio::null()).output().unwrap();
    let piped = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = piped.lines().collect();
    assert_eq!(lines.len(), 3, "a header and a line a session:\n{piped}");
    assert!(!lines[0].contains("SOURCE") && lines.iter().all(|l| l.chars().count() <= 160), "{piped}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header[..3], ["AGENT", "ID", "PROJECT"]);
    let v1: Vec<&str> = lines.iter().find(|l| l.contains(CODEX_V1_ROOT)).unwrap().split_whitespace().collect();
    assert_eq!(v1[..3], ["codex", CODEX_V1_ROOT, "/home/dev/project"], "{piped}");

    let out = home.cmd().args(["ps", "-o", "id,source,cost"]).stdin(Stdio::null()).output().unwrap();
    let chosen = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = chosen.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["ID", "SOURCE", "COST"], "{chosen}");
    assert!(chosen.contains("rollout-") && chosen.contains("$0.05"), "{chosen}");

    let out = home.cmd().args(["ps", "-o", "id,bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one of: agent, id"), "the columns are named");
}

/// `--sort` orders the rows as `ps` does: `-KEY` largest first, `KEY` smallest first; the JSON
/// follows it too.
#[test]
fn sort_orders_rows_by_any_column() {
    let home = Home::new();
    home.add_claude_new();
    home.add_codex("collab_v1");
    home.add_codex("collab_v2");
    let ids = |args: &[&str]| -> Vec<String> {
        ps(&home, args).iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let costs =
        |args: &[&str]| -> Vec<f64> { ps(&home, args).iter().map(|r| r["costUsd"].as_f64().unwrap()).collect() };
    let down = costs(&["--sort", "-cost"]);
    assert!(down.windows(2).all(|w| w[0] >= w[1]), "{down:?}");
    let up = costs(&["--sort", "cost"]);
    assert!(up.windows(2).all(|w| w[0] <= w[1]), "{up:?}");
    let by_agent = ps(&home, &["--sort", "agent,-tokens"]);
    assert_eq!(by_agent[0]["tool"], "claude");
    assert!(by_agent[1]["tokens"].as_u64() >= by_agent[2]["tokens"].as_u64());
    assert_eq!(ids(&["--sort=-id"]), [CLAUDE_NEW_SESSION, CODEX_V2_ROOT, CODEX_V1_ROOT]);
    assert_eq!(ids(&["--sort", "+id"]), [CODEX_V1_ROOT, CODEX_V2_ROOT, CLAUDE_NEW_SESSION]);
    let out = home.cmd().args(["ps", "--sort", "-nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Sessions older than the window are not "nothing found": `ps` says how many `--all` would add.
#[test]
fn says_how_many_older_sessions_all_would_add() {
    let home = Home::new();
    home.add_old_claude_session();
    let out = home.cmd().arg("ps").stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("no agent sessions found"), "{text}");
    assert!(text.contains("no agent sessions active in the last 30m; 1 older session"), "{text}");
    assert!(text.contains("swarmtop ps --all"), "{text}");
    home.add_claude_new();
    let out = home.cmd().args(["ps", "--since", "2h"]).stdin(Stdio::null()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert_eq!(stdout.lines().count(), 2, "the table holds rows only: {stdout}");
    assert!(stderr.contains("1 older session (active before the last 2h): swarmtop ps --all"), "{stderr}");
    let out = home.cmd().args(["ps", "--all"]).stdin(Stdio::null()).output().unwrap();
    assert!(!String::from_utf8(out.stderr).unwrap().contains("older"), "--all leaves nothing out");
}
