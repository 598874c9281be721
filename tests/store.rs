//! The run store through the binary, as a user meets it: what it keeps is what `stats` and `tree`
//! say of the same files, it outlives them, it follows files that grow, shrink and are replaced,
//! it refuses a newer store, and nothing hostile in a brief reaches the terminal.

mod store_support;

use std::path::PathBuf;

use store_support::{CLAUDE_SESSION, CODEX_RUNS, Machine, copy_plain, fixtures};

/// Every fixture session on one machine: the Claude 2.1.39 session and each Codex rollout run.
fn full_machine() -> Machine {
    let m = Machine::new();
    m.with_claude();
    for run in CODEX_RUNS {
        m.with_codex(run);
    }
    m
}

/// Each session's id, with the files `stats` reads for it.
fn sessions() -> Vec<(String, PathBuf)> {
    let mut out = vec![(CLAUDE_SESSION.to_owned(), fixtures().join("claude-2.1.39"))];
    for run in CODEX_RUNS {
        let dir = fixtures().join("codex-0.171.0/rollouts").join(run);
        let stats = Machine::new().json(&["stats", "--json", dir.to_str().unwrap()]);
        let root = stats["threads"].as_array().unwrap().iter().find(|t| t["parent"].is_null()).unwrap()["id"].clone();
        out.push((root.as_str().unwrap().to_owned(), dir));
    }
    out
}

#[test]
fn full_text_search_is_compiled_in() {
    let m = Machine::new();
    m.with_claude();
    let hits = m.json(&["search", "--json", "spotter-dov"]);
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
    let conn = rusqlite::Connection::open(m.store()).unwrap();
    let fts5: bool = conn.query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| r.get(0)).unwrap();
    assert!(fts5);
}

/// What a sub-agent was asked is searchable as its brief, named by its session, agent and time.
#[test]
fn search_finds_a_sub_agents_brief() {
    let m = Machine::new();
    m.with_codex("collab_v1");
    let hits = m.json(&["search", "--json", "CHILD-TASK"]);
    let hits = hits["hits"].as_array().unwrap();
    let brief = hits.iter().find(|h| h["kind"] == "brief").unwrap_or_else(|| panic!("no brief hit: {hits:?}"));
    assert!(brief["session"].is_string() && brief["agent"] == "codex" && brief["time"].is_string(), "{brief}");
    assert_ne!(brief["thread"], brief["session"], "the child's run, not its session's root");
}

/// A report by model lists the models that answered: the `<synthetic>` message Claude Code writes
/// for a request that failed for good is no model, and spent nothing.
#[test]
fn a_report_by_model_leaves_out_claude_s_synthetic_messages() {
    let m = Machine::new();
    m.with_claude_2_1_332("subfail");
    let report = m.json(&["report", "model", "--json"]);
    let keys: Vec<&str> = report["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert!(!keys.is_empty() && !keys.contains(&"<synthetic>"), "{keys:?}");
}

/// A hit says what it is in its agent's own words: Claude's `Agent`, OpenCode's `task`, a plain
/// `message` or `prompt`; never Codex's item type names for another agent's items.
#[test]
fn search_names_each_hit_in_its_agent_s_words() {
    let m = Machine::new();
    m.with_claude_2_1_332("parallel");
    m.with_opencode("tree");
    let text = m.run(&["search", "--tz", "UTC", "--limit", "200", "files"]);
    for codex_word in ["collabAgentToolCall", "agentMessage", "userMessage", "commandExecution"] {
        assert!(!text.contains(codex_word), "{codex_word} in:\n{text}");
    }
    let kind_of = |agent: &str, tool: &str| text.lines().any(|l| l.contains(agent) && l.contains(&format!(" {tool} ")));
    assert!(kind_of("claude", "Agent") && kind_of("opencode", "task"), "{text}");
    // Times as `history` prints them, to the second.
    assert!(
        text.lines().nth(1).is_some_and(|l| l.as_bytes().get(10) == Some(&b' ') && l.as_bytes()[19] == b' '),
        "{text}"
    );
    let hits = m.json(&["search", "--json", "--limit", "200", "files", "--no-sync"]);
    let hits = hits["hits"].as_array().unwrap();
    assert!(hits.iter().any(|h| h["agent"] == "opencode" && h["tool"] == "task"), "{hits:?}");
}

/// A brief that is also its run's first message (a root's prompt, a sub-agent's task as its file
/// begins), or an answer that is its last message, is one place: one hit, the brief or the answer.
#[test]
fn a_brief_that_is_also_a_message_is_one_hit() {
    let m = Machine::new();
    m.with_codex("collab_v1");
    m.with_claude();
    for words in ["PARENT-TASK", "CHILD-TASK", "thorough exploration"] {
        let hits = m.json(&["search", "--json", "--limit", "200", words]);
        let hits = hits["hits"].as_array().unwrap();
        assert!(hits.iter().any(|h| h["kind"] == "brief"), "{words}: a brief hit: {hits:?}");
        for brief in hits.iter().filter(|h| h["kind"] == "brief" || h["kind"] == "answer") {
            let again: Vec<_> = hits
                .iter()
                .filter(|h| {
                    h["kind"] != brief["kind"] && h["thread"] == brief["thread"] && h["snippet"] == brief["snippet"]
                })
                .collect();
            assert!(again.is_empty(), "{words}: {brief} found again as {again:?}");
        }
    }
    let root = m.json(&["search", "--json", "PARENT-TASK", "--no-sync"]);
    let root: Vec<_> = root["hits"].as_array().unwrap().iter().filter(|h| h["thread"] == h["session"]).collect();
    assert_eq!(root.len(), 1, "the root's prompt, once: {root:?}");
    assert_eq!(root[0]["kind"], "brief");
}

/// `history ID` prints the session's tree as `tree` printed it, `--json` as `stats --json` did.
#[test]
fn a_stored_session_is_what_stats_and_tree_said_of_its_files() {
    let m = full_machine();
    m.run(&["sync"]);
    for (id, files) in sessions() {
        let files = files.to_str().unwrap();
        assert_eq!(m.run(&["history", &id, "--json", "--no-sync"]), m.run(&["stats", "--json", files]), "{id}");
        assert_eq!(m.run(&["history", &id, "--no-sync"]), m.run(&["tree", files]), "{id}");
    }
}

fn figures(v: &serde_json::Value) -> (serde_json::Value, serde_json::Value) {
    (v["tokens"].clone(), v["costUsd"].clone())
}

/// A session as `report session --json` gives it and as the store's session row (`history
/// --json`) and `stats --json` of its files give it: each the session's whole spend, its agent's
/// own reported part beyond its threads (the screen's `unattributed` row) included.
fn reported_alike(m: &Machine, id: &str, stats: &serde_json::Value, case: &str) {
    let report = m.json(&["report", "session", "--json", "--no-sync"]);
    let row = report["rows"].as_array().unwrap().iter().find(|r| r["key"] == id).unwrap_or_else(|| panic!("{case}"));
    assert_eq!(figures(row), figures(&stats["totals"]), "{case}: report session = stats --json");
    let listed = m.json(&["history", "--json", "--no-sync"]);
    let session = listed["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap();
    assert_eq!(figures(row), figures(session), "{case}: report session = history");
    for kind in ["daily", "weekly", "monthly", "project", "model", "agent-type"] {
        let other = m.json(&["report", kind, "--json", "--no-sync"]);
        assert_eq!(other["totals"], report["totals"], "{case}: {kind}");
    }
}

/// Every report's rows add up to `stats`: per session (each root's subtree), and in total.
#[test]
fn reports_equal_stats_per_session_and_in_total() {
    let m = full_machine();
    let by_session = m.json(&["report", "session", "--json"]);
    let rows = by_session["rows"].as_array().unwrap();
    let mut total_tokens = 0u64;
    for (id, files) in sessions() {
        let stats = m.json(&["stats", "--json", files.to_str().unwrap()]);
        let root = stats["threads"].as_array().unwrap().iter().find(|t| t["id"] == id.as_str()).unwrap();
        let row = rows.iter().find(|r| r["key"] == id.as_str()).unwrap_or_else(|| panic!("{id} reported"));
        // Each fixture is one session: its figures are stats' totals (its unattributed part too).
        assert_eq!(figures(row), figures(&stats["totals"]), "{id}");
        // The sub-agents' part: the subtree less the root's own.
        let sub = row["subagents"]["tokens"]["total"].as_u64().unwrap();
        let own = root["tokens"]["total"].as_u64().unwrap();
        assert_eq!(sub, root["subtree"]["tokens"]["total"].as_u64().unwrap() - own, "{id}");
        total_tokens += stats["totals"]["tokens"]["total"].as_u64().unwrap();
    }
    for kind in ["daily", "weekly", "monthly", "project", "model", "agent-type"] {
        let report = m.json(&["report", kind, "--json", "--no-sync"]);
        assert_eq!(report["totals"]["tokens"]["total"].as_u64(), Some(total_tokens), "{kind}");
        assert_eq!(report["totals"], by_session["totals"], "{kind}");
        let summed: u64 =
            report["rows"].as_array().unwrap().iter().map(|r| r["tokens"]["total"].as_u64().unwrap()).sum();
        assert_eq!(summed, total_tokens, "{kind}: rows add up to the total");
    }
}

/// ccusage 20.0.24 (`daily --json --offline`) on the same Claude session: 2026-02-12 in UTC,
/// 2026-02-13 in Tokyo, 12,976,160 tokens and $10.11369555 either way.
#[test]
fn daily_totals_are_ccusage_s_in_any_time_zone() {
    let m = Machine::new();
    m.with_claude();
    for (tz, day) in [("UTC", "2026-02-12"), ("Asia/Tokyo", "2026-02-13"), ("America/Los_Angeles", "2026-02-12")] {
        let r = m.json(&["report", "daily", "--json", "--tz", tz]);
        let rows = r["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{tz}: {r}");
        assert_eq!(rows[0]["key"], day, "{tz}");
        assert_eq!(rows[0]["tokens"]["total"], 12_976_160, "{tz}");
        assert_eq!(rows[0]["costUsd"].to_string(), "10.11369555", "{tz}");
        assert_eq!(r["timezone"], tz);
    }
    let r = m.json(&["report", "daily", "--json", "--tz", "UTC", "--since", "2026-02-13", "--no-sync"]);
    assert!(r["rows"].as_array().unwrap().is_empty(), "nothing on the 13th in UTC");
    let r = m.json(&["report", "daily", "--json", "--tz", "UTC", "--until", "20260212", "--no-sync"]);
    assert_eq!(r["rows"].as_array().unwrap().len(), 1, "--until takes its whole day in");
}

/// What the store prints of every session, report and search.
fn seen(m: &Machine) -> Vec<String> {
    let mut out = vec![
        m.run(&["report", "daily", "--json", "--no-sync"]),
        m.run(&["report", "agent-type", "--json", "--no-sync"]),
        m.run(&["search", "--json", "PARENT-TASK", "--no-sync"]),
        m.run(&["search", "--json", "spotter", "--no-sync"]),
    ];
    for (id, _) in sessions() {
        out.push(m.run(&["history", &id, "--json", "--no-sync"]));
        out.push(m.run(&["history", &id, "--no-sync"]));
    }
    out
}

#[test]
fn runs_outlive_their_files() {
    let m = full_machine();
    m.run(&["sync"]);
    let before = seen(&m);
    let listed = m.json(&["history", "--json", "--no-sync"]);
    assert!(listed["sessions"].as_array().unwrap().iter().all(|s| s["filesPresent"] == true));
    std::fs::remove_dir_all(m.home().join(".claude")).unwrap();
    std::fs::remove_dir_all(m.home().join(".codex")).unwrap();
    m.run(&["sync"]);
    assert_eq!(seen(&m), before);
    let listed = m.json(&["history", "--json"]);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1 + CODEX_RUNS.len());
    // Only the sub-agents' files of the Claude session go (Claude Code's clean-up removes them
    // one by one): the session keeps what it had.
    let m = Machine::new();
    m.with_claude();
    m.run(&["sync"]);
    let before = m.run(&["history", CLAUDE_SESSION, "--json"]);
    std::fs::remove_dir_all(m.claude_project().join(CLAUDE_SESSION)).unwrap();
    let out = m.json(&["sync", "--json"]);
    assert_eq!(out["kept"], 1, "{out}");
    assert_eq!(m.run(&["history", CLAUDE_SESSION, "--json"]), before);
    let listed = m.json(&["history", "--json"]);
    assert_eq!(listed["sessions"][0]["filesPresent"], false);
}

/// Every session listed, with whether its files are still there (`filesPresent`), after the
/// quiet sync of `history` (or none: `--no-sync`).
fn present(m: &Machine, sync: bool) -> std::collections::BTreeMap<String, bool> {
    let args: &[&str] = if sync { &["history", "--json"] } else { &["history", "--json", "--no-sync"] };
    let listed = m.json(args);
    listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_owned(), s["filesPresent"].as_bool().unwrap()))
        .collect()
}

/// A machine with every fixture session and an OpenCode store, synced once: every file there.
fn synced_machine() -> (Machine, Vec<String>) {
    let m = full_machine();
    copy_plain(&fixtures().join("opencode-1.18.33/tree"), &m.home().join(".local/share/opencode"));
    // Files of days ago, as most of a history is: a query's quiet sync lists none of them again.
    age(&m.home(), std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400));
    m.run(&["sync"]);
    let all = present(&m, false);
    assert!(all.values().all(|p| *p), "{all:?}");
    let opencode: Vec<String> = m.json(&["history", "--json", "--no-sync", "--agent", "opencode"])["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!opencode.is_empty());
    (m, opencode)
}

/// Every file under `dir` last modified at `when`.
fn age(dir: &std::path::Path, when: std::time::SystemTime) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            age(&entry.path(), when);
        } else {
            std::fs::File::options().write(true).open(entry.path()).unwrap().set_modified(when).unwrap();
        }
    }
}

/// `gone` and only those sessions' files are said gone; every session keeps what it had.
fn only_gone(m: &Machine, sync: bool, gone: &[&str], kept: &[String], case: &str) {
    let now = present(m, sync);
    for (id, there) in &now {
        assert_eq!(*there, !gone.contains(&id.as_str()), "{case}: {id} {now:?}");
    }
    assert_eq!(now.len(), 1 + CODEX_RUNS.len() + kept.len(), "{case}: every session stays: {now:?}");
}

/// A session's files that go in any way say so (`filesPresent`), at the next sync, a query's quiet
/// one included: one file, a folder, a whole place; the places' listing no longer names a session
/// whose folder or place went, so the store looks at what it indexed before, not only at what it
/// finds. Every run stays.
#[test]
fn files_gone_with_their_folder_or_place_are_said_gone() {
    let codex: Vec<String> = sessions().into_iter().skip(1).map(|(id, _)| id).collect();
    let codex: Vec<&str> = codex.iter().map(String::as_str).collect();
    for quiet in [true, false] {
        let sync = |m: &Machine| {
            if !quiet {
                m.run(&["sync"]);
            }
        };
        // One sub-agent's file (Claude Code's clean-up removes them one by one), its transcript
        // unchanged: the place lists it only when something of it changed.
        let (m, opencode) = synced_machine();
        let before = m.run(&["history", CLAUDE_SESSION, "--json", "--no-sync"]);
        std::fs::remove_file(m.claude_project().join(CLAUDE_SESSION).join("subagents/agent-a2898e3.jsonl")).unwrap();
        sync(&m);
        only_gone(&m, quiet, &[CLAUDE_SESSION], &opencode, "a sub-agent's file");
        assert_eq!(m.run(&["history", CLAUDE_SESSION, "--json", "--no-sync"]), before);
        // One file: the transcript itself, which the place lists the session by.
        let (m, opencode) = synced_machine();
        std::fs::remove_file(m.claude_project().join(format!("{CLAUDE_SESSION}.jsonl"))).unwrap();
        sync(&m);
        only_gone(&m, quiet, &[CLAUDE_SESSION], &opencode, "the transcript");
        assert_eq!(m.run(&["history", CLAUDE_SESSION, "--json", "--no-sync"]), before);
        // A folder: the Claude project's, then the day's of the Codex rollouts.
        let (m, opencode) = synced_machine();
        std::fs::remove_dir_all(m.claude_project()).unwrap();
        sync(&m);
        only_gone(&m, quiet, &[CLAUDE_SESSION], &opencode, "the project's folder");
        std::fs::remove_dir_all(m.codex_day()).unwrap();
        sync(&m);
        only_gone(&m, quiet, &[&[CLAUDE_SESSION], &codex[..]].concat(), &opencode, "the day's folder");
        // The whole place: `~/.claude/projects`, `~/.codex/sessions`, OpenCode's store.
        let (m, opencode) = synced_machine();
        let seen_before = seen(&m);
        std::fs::remove_dir_all(m.home().join(".claude/projects")).unwrap();
        sync(&m);
        only_gone(&m, quiet, &[CLAUDE_SESSION], &opencode, "~/.claude/projects");
        std::fs::remove_dir_all(m.home().join(".codex/sessions")).unwrap();
        std::fs::remove_dir_all(m.home().join(".local/share/opencode")).unwrap();
        sync(&m);
        let opencode_ids: Vec<&str> = opencode.iter().map(String::as_str).collect();
        only_gone(&m, quiet, &[&[CLAUDE_SESSION], &codex[..], &opencode_ids[..]].concat(), &opencode, "every place");
        assert_eq!(seen(&m), seen_before, "every run, figure and text stays");
    }
}

#[test]
fn syncing_twice_reads_nothing_and_adds_nothing() {
    let m = full_machine();
    let first = m.json(&["sync", "--json"]);
    assert_eq!(first["read"], 1 + CODEX_RUNS.len());
    let dump = m.dump();
    let again = m.json(&["sync", "--json"]);
    assert_eq!((again["read"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(1 + CODEX_RUNS.len() as u64)));
    assert_eq!(m.dump(), dump);
    // A query's own sync looks only at what changed since: nothing.
    m.run(&["report", "daily"]);
    assert_eq!(m.dump(), dump);
}

/// The store after changes to the files equals a new store synced once from the files as they
/// are: appended, truncated, replaced by another file.
#[test]
fn grown_truncated_and_replaced_files_are_read_again() {
    let m = Machine::new();
    let transcript = m.claude_project().join(format!("{CLAUDE_SESSION}.jsonl"));
    let whole = std::fs::read(fixtures().join(format!("claude-2.1.39/{CLAUDE_SESSION}.jsonl"))).unwrap();
    let lines: Vec<&[u8]> = whole.split_inclusive(|&b| b == b'\n').collect();
    let first_half: Vec<u8> = lines[..lines.len() / 2].concat();
    std::fs::create_dir_all(m.claude_project()).unwrap();
    // A new store synced once from the same files (a copy of them would be other files).
    let clean = |m: &Machine| {
        let fresh = tempfile::tempdir().unwrap();
        let store = fresh.path().join("clean.db");
        let out = m.swarmtop().args(["sync", "--store", store.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success());
        swarmtop::store::Store::open(&store).unwrap().backend().dump().unwrap()
    };
    std::fs::write(&transcript, &first_half).unwrap();
    m.run(&["sync"]);
    let half = m.json(&["report", "daily", "--json", "--no-sync"]);
    // Appended.
    let mut file = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
    std::io::Write::write_all(&mut file, &whole[first_half.len()..]).unwrap();
    drop(file);
    m.run(&["sync"]);
    assert_eq!(m.dump(), clean(&m), "appended");
    let grown = m.json(&["report", "daily", "--json", "--no-sync"]);
    assert_ne!(grown, half);
    let stats = m.json(&["stats", "--json", transcript.to_str().unwrap()]);
    assert_eq!(grown["totals"]["tokens"], stats["totals"]["tokens"], "the whole transcript's figures");
    // Truncated (a rewrite that kept less).
    std::fs::write(&transcript, &first_half).unwrap();
    m.run(&["sync"]);
    assert_eq!(m.dump(), clean(&m), "truncated");
    assert_eq!(m.json(&["report", "daily", "--json", "--no-sync"]), half);
    // Replaced: another file renamed over it (another inode), the same size as before.
    let other = m.claude_project().join("incoming");
    let mut replaced = first_half.clone();
    let at = replaced.len() - 3;
    replaced[at] = b' ';
    std::fs::write(&other, &replaced).unwrap();
    std::fs::rename(&other, &transcript).unwrap();
    let out = m.json(&["sync", "--json"]);
    assert_eq!(out["read"], 1, "{out}");
    assert_eq!(m.dump(), clean(&m), "replaced");
}

#[test]
fn a_store_from_a_newer_swarmtop_is_refused_untouched() {
    let m = Machine::new();
    m.with_claude();
    m.run(&["sync"]);
    {
        let conn = rusqlite::Connection::open(m.store()).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let bytes = std::fs::read(m.store()).unwrap();
    for args in [&["history"][..], &["sync"], &["report", "daily"], &["search", "x"]] {
        let out = m.output(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("written by a newer swarmtop (schema version 99"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(std::fs::read(m.store()).unwrap(), bytes, "not a byte changed");
}

#[test]
fn a_store_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let m = Machine::new();
    m.run(&["sync"]);
    let mode = std::fs::metadata(m.store()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "created for its user alone");
    std::fs::set_permissions(m.store(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = m.output(&["history"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("may be written by other users"));
}

/// Escape sequences, C1 controls, bidi overrides and tag characters in every field of a
/// recording (ids, names, prompts, answers) are stored, listed, reported and found as text.
#[test]
fn hostile_text_never_reaches_the_terminal_raw() {
    let m = Machine::new();
    m.with_recording("hostile/escapes_everywhere.jsonl");
    m.run(&["sync"]);
    let listed = m.json(&["history", "--json", "--no-sync"]);
    let id = listed["sessions"][0]["id"].as_str().unwrap().to_owned();
    // `history ID --json` is `stats --json` of the files, which prints ids exactly as they came
    // (JSON-escaped): it is held to that, not to this.
    assert_eq!(
        m.run(&["history", &id, "--json", "--no-sync"]),
        m.run(&["stats", "--json", m.recordings().join("escapes_everywhere.jsonl").to_str().unwrap()])
    );
    let mut outputs = vec![
        m.run(&["history", "--no-sync"]),
        m.run(&["history", "--json", "--no-sync"]),
        m.run(&["history", &id, "--no-sync"]),
        m.run(&["search", "hello", "--no-sync"]),
        m.run(&["search", "hello", "--json", "--no-sync"]),
        // The spawn's prompt, a sub-agent's brief, held the same escapes (`p` is what is left).
        m.run(&["search", "p", "--no-sync"]),
        m.run(&["search", "p", "--json", "--no-sync"]),
    ];
    assert!(outputs[6].contains("\"kind\":\"brief\""), "a brief was found: {}", outputs[6]);
    for kind in ["session", "model", "agent-type", "project", "daily"] {
        outputs.push(m.run(&["report", kind, "--no-sync"]));
        outputs.push(m.run(&["report", kind, "--json", "--no-sync"]));
    }
    assert!(outputs[3].contains("hello"), "the search found the text: {}", outputs[3]);
    for out in outputs {
        let bad = out.chars().find(|&c| {
            (c.is_control() && c != '\n')
                || ('\u{80}'..='\u{9f}').contains(&c)
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
                || ('\u{e0000}'..='\u{e007f}').contains(&c)
        });
        assert_eq!(bad, None, "{out:?}");
    }
}

/// A query syncs first: a session written since the last sync is in its answer.
#[test]
fn a_query_syncs_first() {
    let m = Machine::new();
    m.with_claude();
    assert_eq!(m.json(&["history", "--json"])["sessions"].as_array().unwrap().len(), 1);
    m.with_codex("collab_v1");
    assert_eq!(m.json(&["history", "--json"])["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(m.json(&["history", "--json", "--agent", "codex"])["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(m.json(&["history", "--json", "--project", "spotter"])["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn pruned_sessions_stay_gone() {
    let m = full_machine();
    m.run(&["sync"]);
    let out = m.run(&["history", "--prune", "--before", "2026-11-01"]);
    assert!(out.starts_with("pruned 1 sessions"), "{out}");
    let listed = m.json(&["history", "--json"]);
    let ids: Vec<&str> = listed["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&CLAUDE_SESSION), "the February session is gone: {ids:?}");
    assert_eq!(ids.len(), CODEX_RUNS.len());
    m.run(&["sync"]);
    assert_eq!(m.json(&["history", "--json"]), listed, "its unchanged files are not read back in");
    let hits = m.json(&["search", "--json", "spotter"]);
    assert!(hits["hits"].as_array().unwrap().is_empty(), "{hits}");
}

/// 2026-01-01T00:00:00Z, in unix ms: before the prune's date below.
const NEW_YEAR_MS: i64 = 1_767_225_600_000;

fn now_ms() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// An act as a guard keeps it, on `session` at `at_ms`.
fn act(session: Option<&str>, at_ms: i64) -> swarmtop::store::rows::ActRow {
    swarmtop::store::rows::ActRow {
        at_ms,
        kind: "deny".to_owned(),
        by: "guard".to_owned(),
        via: "hook".to_owned(),
        session: session.map(str::to_owned),
        target: "a2898e3".to_owned(),
        detail: String::new(),
        outcome: "denied: depth 2 > 1".to_owned(),
    }
}

/// A prune takes the acts on the sessions it removes with them, and the acts older than its date
/// on no session the store keeps; an act on a kept session stays with it, whatever its age, and a
/// newer one on a session never stored stays. It says how many acts went.
#[test]
fn a_prune_removes_the_acts_on_what_it_removes_and_older_ones_on_nothing() {
    let m = full_machine();
    m.run(&["sync"]);
    let codex = sessions().into_iter().find(|(_, files)| files.ends_with("collab_v1")).unwrap().0;
    {
        let mut store = swarmtop::store::Store::open(&m.store()).unwrap();
        let b = store.backend_mut();
        b.record_act(&act(Some(CLAUDE_SESSION), now_ms())).unwrap();
        b.record_act(&act(Some(&codex), NEW_YEAR_MS)).unwrap();
        b.record_act(&act(Some("never-stored"), NEW_YEAR_MS)).unwrap();
        b.record_act(&act(Some("never-stored"), now_ms())).unwrap();
        b.record_act(&act(None, NEW_YEAR_MS)).unwrap();
    }
    let out = m.run(&["history", "--prune", "--before", "2026-11-01"]);
    assert!(out.starts_with("pruned 1 sessions (") && out.contains(" runs, 3 acts); store "), "{out}");
    let store = swarmtop::store::Store::open(&m.store()).unwrap();
    let at = |id: &str| store.backend().acts(id).unwrap().iter().map(|a| a.at_ms).collect::<Vec<_>>();
    assert!(at(CLAUDE_SESSION).is_empty(), "the pruned session's act went with it");
    assert_eq!(at(&codex), [NEW_YEAR_MS], "a kept session keeps its acts, however old");
    assert_eq!(at("never-stored").len(), 1, "the newer act on no stored session stays");
    assert!(at("never-stored")[0] > NEW_YEAR_MS);
    let json = m.json(&["history", &codex, "--json", "--no-sync"]);
    assert_eq!(json["acts"].as_array().unwrap().len(), 1, "{json}");
    let again = m.run(&["history", "--prune", "--before", "2026-11-01"]);
    assert!(again.starts_with("pruned 0 sessions (0 runs, 0 acts)"), "{again}");
}

#[test]
fn history_names_an_unknown_or_ambiguous_session() {
    let m = full_machine();
    let out = m.output(&["history", "nosuchsession"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session nosuchsession in the run store"));
    // Two Codex sessions started within the same minute share their first digits.
    let out = m.output(&["history", "01a2", "--no-sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names more than one session"));
    let v = m.run(&["history", "4d5611e5", "--json", "--no-sync"]);
    assert!(v.contains(CLAUDE_SESSION));
}

/// Tables fit a narrow terminal; piped, every column is whole.
#[test]
fn tables_are_whole_when_piped() {
    let m = full_machine();
    let table = m.run(&["report", "daily", "--tz", "UTC"]);
    let header = table.lines().next().unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["DATE", "SESSIONS", "INPUT", "CACHED", "OUTPUT", "TOKENS", "COST", "SUB-AGENT", "TOKENS", "SUB-AGENT", "COST"]
    );
    let total = table.lines().last().unwrap();
    assert!(total.starts_with("total "), "{total}");
    let history = m.run(&["history", "--no-sync"]);
    assert!(history.lines().skip(1).any(|l| l.contains(CLAUDE_SESSION)), "whole ids: {history}");
}

/// `report session` says which session each row is, as ccusage's session report and `history`
/// do: its last activity (in --tz), agent, id, project, models and name; no count of one session.
#[test]
fn the_session_report_names_each_session() {
    let m = Machine::new();
    m.with_claude_2_1_332("interrupt");
    m.with_codex("collab_v1");
    m.with_opencode("tree");
    let table = m.run(&["report", "session", "--tz", "Asia/Tokyo"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header[..6], ["LAST", "ACTIVITY", "AGENT", "SESSION", "PROJECT", "MODELS"], "{table}");
    assert_eq!(header.last(), Some(&"NAME"));
    assert!(!header.contains(&"SESSIONS"), "{table}");
    let claude = table.lines().find(|l| l.contains("136d4454-0b5e-43dd-b409-4f16ef4e3616")).unwrap();
    // Its last line is 2026-12-02T05:11:33Z: 14:11 in Tokyo.
    assert!(claude.starts_with("2026-12-02 14:11  claude  "), "{claude}");
    assert!(claude.contains("claude-sonnet-4-5") && claude.contains("19,350"), "{claude}");
    let listed = m.json(&["history", "--json", "--no-sync"]);
    let report = m.json(&["report", "session", "--json", "--tz", "UTC", "--no-sync"]);
    for s in listed["sessions"].as_array().unwrap() {
        let row = report["rows"].as_array().unwrap().iter().find(|r| r["key"] == s["id"]).unwrap();
        assert!(
            table.lines().any(|l| l.contains(s["id"].as_str().unwrap()) && l.ends_with(s["name"].as_str().unwrap()))
        );
        for field in ["agent", "name", "project"] {
            assert_eq!(row[field], s[field], "{field}");
        }
        assert_eq!(row["lastActivity"], s["end"]);
        assert!(!row["models"].as_array().unwrap().is_empty(), "{row}");
    }
    assert!(report["totals"].get("agent").is_none(), "{report}");
    // By last activity, the most recent last, as ccusage orders its session report; the table too.
    let rows = report["rows"].as_array().unwrap();
    let last: Vec<&str> = rows.iter().map(|r| r["lastActivity"].as_str().unwrap()).collect();
    assert!(rows.len() == 3 && last.is_sorted() && last[0] < last[1] && last[1] < last[2], "{last:?}");
    // Not by cost: OpenCode's tree ($0.07) ran after Codex's collab_v1 ($0.05), Claude's interrupt
    // ($0.02) last of all.
    let costs: Vec<f64> = rows.iter().map(|r| r["costUsd"].as_f64().unwrap()).collect();
    assert!(!costs.is_sorted_by(|a, b| a >= b), "{costs:?}");
    let ids: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    let listed: Vec<&str> =
        table.lines().skip(1).filter_map(|l| ids.iter().copied().find(|id| l.contains(id))).collect();
    assert_eq!(listed, ids, "the table in the JSON's order: {table}");
}

/// A query while a sync holds the store answers from the store as it is, at once, and leaves the
/// sync for later.
#[test]
fn a_query_does_not_wait_for_another_sync() {
    let m = Machine::new();
    m.with_claude();
    m.run(&["sync"]);
    m.with_codex("collab_v1");
    let store = swarmtop::store::Store::open(&m.store()).unwrap();
    let lock = store.backend().lock(true).unwrap();
    assert_eq!(m.json(&["history", "--json"])["sessions"].as_array().unwrap().len(), 1);
    drop(lock);
    assert_eq!(m.json(&["history", "--json"])["sessions"].as_array().unwrap().len(), 2);
}

/// An OpenCode store holds many sessions: each root is a source of its own, read by its rows, and
/// only the one whose rows changed is read again.
#[test]
fn each_session_of_an_opencode_store_is_read_by_its_rows() {
    let m = Machine::new();
    let dir = m.home().join(".local/share/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let message = |id: &str, session: &str, cost: f64, input: u64, created: i64| {
        format!(
            "INSERT INTO message VALUES ('{id}', '{session}', '{{\"role\":\"assistant\",\"modelID\":\"mock-large\",\
             \"providerID\":\"mock\",\"cost\":{cost},\"tokens\":{{\"input\":{input},\"output\":12,\"reasoning\":0,\
             \"cache\":{{\"read\":10,\"write\":0}}}},\"time\":{{\"created\":{created},\"completed\":{}}},\"finish\":\"stop\"}}');",
            created + 1
        )
    };
    conn.execute_batch(&format!(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT, agent TEXT, model TEXT, \
           cost REAL, tokens_input INT, tokens_output INT, tokens_reasoning INT, tokens_cache_read INT, \
           tokens_cache_write INT, time_created INT, time_updated INT, directory TEXT);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT);
         CREATE TABLE event (id TEXT, aggregate_id TEXT, seq INT, type TEXT, data TEXT);
         INSERT INTO session VALUES ('ses_a', NULL, 'Fix the parser', 'build', NULL, 0.5, 0, 0, 0, 0, 0, 1770854400000, 1770854460000, '/w/a');
         INSERT INTO session VALUES ('ses_a1', 'ses_a', 'Read it (@general subagent)', 'general', NULL, 0.25, 0, 0, 0, 0, 0, 1770854410000, 1770854450000, '/w/a');
         INSERT INTO session VALUES ('ses_b', NULL, 'Write docs', 'build', NULL, 0.125, 0, 0, 0, 0, 0, 1770940800000, 1770940860000, '/w/b');
         {}{}{}",
        message("msg_1", "ses_a", 0.5, 1000, 1_770_854_401_000),
        message("msg_2", "ses_a1", 0.25, 500, 1_770_854_411_000),
        message("msg_3", "ses_b", 0.125, 250, 1_770_940_801_000),
    ))
    .unwrap();
    let first = m.json(&["sync", "--json"]);
    assert_eq!((first["found"].as_u64(), first["read"].as_u64()), (Some(2), Some(2)), "{first}");
    let listed = m.json(&["history", "--json", "--agent", "opencode", "--no-sync"]);
    let ids: Vec<&str> = listed["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["ses_b", "ses_a"], "newest first");
    let stats = m.json(&["stats", "--json", db.to_str().unwrap()]);
    let report = m.json(&["report", "session", "--json", "--no-sync"]);
    for id in ["ses_a", "ses_b"] {
        let root = stats["threads"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap();
        let row = report["rows"].as_array().unwrap().iter().find(|r| r["key"] == id).unwrap();
        assert_eq!(figures(row), figures(&root["subtree"]), "{id}");
    }
    // Session B goes on: only its rows changed.
    conn.execute_batch(&format!(
        "UPDATE session SET time_updated = 1770940900000 WHERE id = 'ses_b'; {}",
        message("msg_4", "ses_b", 0.0625, 125, 1_770_940_890_000)
    ))
    .unwrap();
    let again = m.json(&["sync", "--json"]);
    assert_eq!((again["read"].as_u64(), again["unchanged"].as_u64()), (Some(1), Some(1)), "{again}");
    let stats = m.json(&["stats", "--json", db.to_str().unwrap()]);
    let report = m.json(&["report", "session", "--json", "--no-sync"]);
    assert_eq!(report["totals"]["tokens"], stats["totals"]["tokens"]);
}

/// A thread's running total (Codex) that grows across midnight is split between the two days,
/// each costed at its share; in a zone where both times fall on one day, one row holds it all.
#[test]
fn a_running_total_is_split_where_it_grew() {
    let m = Machine::new();
    std::fs::create_dir_all(m.recordings()).unwrap();
    let (before, after) = (1_770_853_800_000_i64, 1_770_855_000_000_i64); // 23:50 and 00:10 UTC
    let usage = |input: u64, output: u64, at: i64| {
        format!(
            r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"R","turnId":"u1","tokenUsage":{{"total":{{"totalTokens":{t},"inputTokens":{input},"cachedInputTokens":0,"outputTokens":{output},"reasoningOutputTokens":0}},"last":{{"totalTokens":{t},"inputTokens":{input},"cachedInputTokens":0,"outputTokens":{output},"reasoningOutputTokens":0}},"modelContextWindow":258400}}}},"emittedAtMs":{at}}}"#,
            t = input + output
        )
    };
    let lines = [
        format!(
            r#"{{"method":"thread/started","params":{{"thread":{{"id":"R","model":"gpt-5.5"}}}},"emittedAtMs":{before}}}"#
        ),
        format!(
            r#"{{"method":"turn/started","params":{{"threadId":"R","turn":{{"id":"u1","status":"inProgress"}}}},"emittedAtMs":{before}}}"#
        ),
        usage(1000, 100, before + 1000),
        usage(3000, 300, after),
        format!(
            r#"{{"method":"turn/completed","params":{{"threadId":"R","turn":{{"id":"u1","status":"completed"}}}},"emittedAtMs":{after}}}"#
        ),
    ];
    std::fs::write(m.recordings().join("midnight.ndjson"), lines.join("\n") + "\n").unwrap();
    let r = m.json(&["report", "daily", "--json", "--tz", "UTC"]);
    let days: Vec<(String, u64, String)> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (d["key"].as_str().unwrap().to_owned(), d["tokens"]["total"].as_u64().unwrap(), d["costUsd"].to_string())
        })
        .collect();
    // gpt-5.5: $5 input, $30 output per million tokens.
    assert_eq!(
        days,
        [("2026-02-11".to_owned(), 1100, "0.008".to_owned()), ("2026-02-12".to_owned(), 2200, "0.016".to_owned())]
    );
    let stats = m.json(&["stats", "--json", m.recordings().join("midnight.ndjson").to_str().unwrap()]);
    assert_eq!(r["totals"]["costUsd"], stats["totals"]["costUsd"]);
    let tokyo = m.json(&["report", "daily", "--json", "--tz", "Asia/Tokyo", "--no-sync"]);
    assert_eq!(tokyo["rows"].as_array().unwrap().len(), 1);
    assert_eq!(tokyo["rows"][0]["tokens"]["total"], 3300);
    assert_eq!(
        m.json(&["history", "--json", "--no-sync"])["sessions"][0]["agent"],
        "codex",
        "a recording's agent is its format's"
    );
}

/// The root thread's id of what `stats --json` says of `files`.
fn root_of(m: &Machine, files: &str) -> String {
    let stats = m.json(&["stats", "--json", files]);
    let root = stats["threads"].as_array().unwrap().iter().find(|t| t["parent"].is_null()).unwrap();
    root["id"].as_str().unwrap().to_owned()
}

/// The real Claude Code 2.1.332 sessions (sub-agents in parallel, one interrupted, one failing) and
/// OpenCode 1.18.33 stores: each session the store keeps is what `stats` and `tree` say of its
/// files, and `report session` adds up to `stats`.
#[test]
fn real_claude_2_1_332_and_opencode_1_18_33_sessions_are_what_stats_says() {
    for case in ["interrupt", "parallel", "subfail"] {
        let m = Machine::new();
        let project = m.home().join(".claude/projects/-work-fixture");
        copy_plain(&fixtures().join("claude-2.1.332").join(case), &project);
        let transcript = std::fs::read_dir(&project)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .unwrap();
        let id = root_of(&m, transcript.to_str().unwrap());
        let files = project.to_str().unwrap();
        m.run(&["sync"]);
        assert_eq!(m.run(&["history", &id, "--json", "--no-sync"]), m.run(&["stats", "--json", files]), "{case}");
        assert_eq!(m.run(&["history", &id, "--no-sync"]), m.run(&["tree", files]), "{case}");
        let stats = m.json(&["stats", "--json", files]);
        reported_alike(&m, &id, &stats, case);
        if case == "interrupt" {
            // Its agent reported 50 tokens beyond its two threads' own: in the report too.
            let part = stats["threads"].as_array().unwrap().iter().find(|t| t["id"] == id.as_str()).unwrap();
            assert_eq!(part["reported"]["unattributed"]["tokens"]["total"], 50, "{case}");
            assert_eq!(stats["totals"]["tokens"]["total"], 19_350, "{case}");
        }
        gone_changes_nothing(&m, &id, &project, case);
    }
    for case in ["subfail", "tree"] {
        let m = Machine::new();
        let dir = m.home().join(".local/share/opencode");
        copy_plain(&fixtures().join("opencode-1.18.33").join(case), &dir);
        let db = dir.join("opencode.db");
        let db = db.to_str().unwrap();
        m.run(&["sync"]);
        let id = root_of(&m, db);
        assert_eq!(m.run(&["history", &id, "--json", "--no-sync"]), m.run(&["stats", "--json", db]), "{case}");
        assert_eq!(m.run(&["history", &id, "--no-sync"]), m.run(&["tree", db]), "{case}");
        let stats = m.json(&["stats", "--json", db]);
        reported_alike(&m, &id, &stats, case);
        gone_changes_nothing(&m, &id, &dir, case);
    }
}

/// The session's files deleted (the agent's clean-up), then synced again: its tree, figures,
/// reports and text are what they were.
fn gone_changes_nothing(m: &Machine, id: &str, files: &std::path::Path, case: &str) {
    let seen = || {
        let mut out = vec![m.run(&["history", id, "--json", "--no-sync"]), m.run(&["history", id, "--no-sync"])];
        for kind in ["session", "daily", "model", "agent-type"] {
            out.push(m.run(&["report", kind, "--json", "--no-sync"]));
        }
        let mut listed = m.json(&["history", "--json", "--no-sync"]);
        listed["sessions"][0]["filesPresent"] = serde_json::Value::Null;
        out.push(listed.to_string());
        out
    };
    let before = seen();
    std::fs::remove_dir_all(files).unwrap();
    m.run(&["sync"]);
    assert_eq!(seen(), before, "{case}: after its files went");
}

/// Every act is kept in the run store as it is done, and `history SESSION` reads it back: here a
/// guard's refusal of a sub-agent's spawn, after the session's tree and under `acts` in `--json`.
#[test]
fn a_guards_refusal_is_kept_and_history_reads_it_back() {
    let m = Machine::new();
    m.with_claude();
    let transcript = m.claude_project().join(format!("{CLAUDE_SESSION}.jsonl"));
    let call = serde_json::json!({"session_id": CLAUDE_SESSION, "transcript_path": transcript,
        "hook_event_name": "PreToolUse", "tool_name": "Task", "tool_input": {}, "tool_use_id": "toolu_new",
        "agent_id": "a2898e3"});
    let out = m.swarmtop().args(["guard", "--max-depth", "1"]).write_stdin(call.to_string()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"permissionDecision\":\"deny\""), "{out:?}");
    let text = m.run(&["history", CLAUDE_SESSION]);
    let (tree, acts) = text.split_once("\nacts:\n").unwrap_or_else(|| panic!("no acts: {text}"));
    assert!(tree.contains("Explore transcript rendering codebase"), "the tree first: {tree}");
    let acts: Vec<&str> = acts.lines().collect();
    assert_eq!(acts.len(), 1, "{acts:?}");
    assert!(acts[0].ends_with("deny a2898e3 by guard via hook (Task toolu_new): denied: depth 2 > 1"), "{acts:?}");
    let json = m.json(&["history", CLAUDE_SESSION, "--json", "--no-sync"]);
    let act = &json["acts"][0];
    assert_eq!((&act["kind"], &act["by"], &act["via"]), (&"deny".into(), &"guard".into(), &"hook".into()), "{act}");
    assert_eq!((&act["target"], &act["outcome"]), (&"a2898e3".into(), &"denied: depth 2 > 1".into()));
    assert!(act["at"].is_string());
    // Acts are the session's own: another session's record has none.
    m.with_codex("collab_v1");
    let other = sessions().into_iter().find(|(_, files)| files.ends_with("collab_v1")).unwrap().0;
    assert!(!m.run(&["history", &other]).contains("\nacts:\n"));
}

/// What schema 3 wrote for items (before each kept its id, turn and the agent's own tool name):
/// a store synced by this swarmtop, its item columns of schema 4 dropped, its version set back and
/// its sources marked as read by the swarmtop before (whose fingerprint named no schema).
const TO_SCHEMA_3: &str = "ALTER TABLE items DROP COLUMN item_id;
    ALTER TABLE items DROP COLUMN turn;
    ALTER TABLE items DROP COLUMN tool;
    ALTER TABLE items DROP COLUMN op;
    ALTER TABLE items DROP COLUMN exit_code;
    ALTER TABLE items DROP COLUMN receivers;
    ALTER TABLE items DROP COLUMN why;
    UPDATE sources SET fingerprint = 'swarmtop 0.1.0; prices builtin';
    UPDATE meta SET value = 'swarmtop 0.1.0; prices builtin' WHERE key = 'reader';
    PRAGMA user_version = 3;";

/// The store's items as schema 3 kept them, in order.
fn items_v3(store: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut st = conn
        .prepare(
            "SELECT src.key, r.ordinal, i.ordinal, i.kind, i.status, i.title, t.body, i.at_ms FROM items i
             JOIN runs r ON r.id = i.run_id JOIN sources src ON src.id = r.source_id
             LEFT JOIN texts t ON t.id = i.text_id ORDER BY src.key, r.ordinal, i.ordinal",
        )
        .unwrap();
    let rows = st.query_map([], |r| {
        let values: Vec<rusqlite::types::Value> = (0..8).map(|i| r.get(i)).collect::<Result<_, _>>()?;
        Ok(format!("{values:?}"))
    });
    rows.unwrap().collect::<Result<_, _>>().unwrap()
}

fn user_version(store: &std::path::Path) -> i64 {
    rusqlite::Connection::open(store).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap()
}

/// Schema 4: a store schema 3 wrote opens upgraded in place (one transaction), its sessions,
/// figures, reports and item text as they were, the new columns empty; the next sync reads again
/// the sources whose files are there (the reader's fingerprint names the schema), and the store
/// is then what a new store synced once holds.
#[test]
fn a_schema_3_store_is_upgraded_in_place_and_keeps_its_runs() {
    let m = Machine::new();
    m.with_claude().with_opencode("tree");
    m.run(&["sync"]);
    let clean = m.dump();
    let seen = |m: &Machine| {
        let mut out = vec![
            m.run(&["history", "--json", "--no-sync"]),
            m.run(&["history", CLAUDE_SESSION, "--json", "--no-sync"]),
        ];
        for kind in ["session", "daily", "agent-type"] {
            out.push(m.run(&["report", kind, "--json", "--no-sync"]));
        }
        // Search hits as schema 3 kept them: without the call's own tool name, which schema 4 adds.
        let mut hits = m.json(&["search", "spotter", "--json", "--no-sync"]);
        for hit in hits["hits"].as_array_mut().unwrap() {
            hit.as_object_mut().unwrap().remove("tool");
        }
        out.push(hits.to_string());
        out
    };
    let before = seen(&m);
    let items = items_v3(&m.store());
    assert!(items.len() > 100, "{}", items.len());
    rusqlite::Connection::open(m.store()).unwrap().execute_batch(TO_SCHEMA_3).unwrap();
    assert_eq!(user_version(&m.store()), 3);
    assert_eq!(items_v3(&m.store()), items, "schema 3's own columns are untouched by the way back");

    assert_eq!(seen(&m), before, "opened and upgraded: every session, figure and text as it was");
    assert_eq!(user_version(&m.store()), i64::try_from(swarmtop::store::SCHEMA_VERSION).unwrap());
    assert_eq!(items_v3(&m.store()), items);
    // Version 5 fills only what the rows tell: OpenCode's spawns are `task`; nothing else is named.
    let tools: Vec<String> = v4_columns(&m.store()).into_iter().filter_map(|c| c.5).collect();
    assert_eq!(tools, ["task", "task", "task"], "what schema 3 did not keep is not made up");

    let synced = m.json(&["sync", "--json"]);
    assert_eq!(synced["read"], 2, "both sources read again: {synced}");
    assert_eq!(m.dump(), clean, "the store a clean sync fills");
}

/// Each item's version 4 columns (its source's agent, run and item ordinals; item_id, turn, tool,
/// op), in order.
type Columns = (String, i64, i64, Option<String>, Option<i64>, Option<String>, Option<String>);

fn v4_columns(store: &std::path::Path) -> Vec<Columns> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut st = conn
        .prepare(
            "SELECT src.agent, r.ordinal, i.ordinal, i.item_id, i.turn, i.tool, i.op FROM items i
             JOIN runs r ON r.id = i.run_id JOIN sources src ON src.id = r.source_id
             ORDER BY src.key, r.ordinal, i.ordinal",
        )
        .unwrap();
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)));
    rows.unwrap().collect::<Result<_, _>>().unwrap()
}

/// Issue 20: sessions whose files were deleted before the schema 4 upgrade kept schema 3's rows,
/// their calls drawn as a generic `⑂ agent` with no turns. Version 5 fills what those rows tell
/// exactly (Claude's and OpenCode's calls are spawns, OpenCode's `task`, a one-turn run's items in
/// turn 0, a spawn's id from the child it started): each value filled is the one a read of the
/// files gives, and what the rows do not tell stays unknown. The sync then reads nothing again.
#[test]
fn a_session_gone_before_schema_4_gets_what_its_rows_tell() {
    let m = Machine::new();
    m.with_claude().with_claude_2_1_332("parallel").with_opencode("tree");
    m.run(&["sync"]);
    let clean = v4_columns(&m.store());
    rusqlite::Connection::open(m.store()).unwrap().execute_batch(TO_SCHEMA_3).unwrap();
    std::fs::remove_dir_all(m.home().join(".claude")).unwrap();
    std::fs::remove_dir_all(m.opencode_dir()).unwrap();
    let synced = m.json(&["sync", "--json"]);
    assert_eq!((synced["read"].as_u64(), synced["kept"].as_u64()), (Some(0), Some(3)), "{synced}");
    assert_eq!(user_version(&m.store()), i64::try_from(swarmtop::store::SCHEMA_VERSION).unwrap());
    let upgraded = v4_columns(&m.store());
    assert_eq!(upgraded.len(), clean.len());
    let mut filled = std::collections::BTreeMap::<&str, usize>::new();
    for (old, new) in clean.iter().zip(&upgraded) {
        assert_eq!((&old.0, old.1, old.2), (&new.0, new.1, new.2), "the same items");
        // Each value filled is the read's; none is made up.
        for (name, o, n) in [("item_id", &old.3, &new.3), ("tool", &old.5, &new.5), ("op", &old.6, &new.6)] {
            if n.is_some() {
                assert_eq!(o, n, "{name} of {old:?}");
                *filled.entry(name).or_default() += 1;
            }
        }
        if new.4.is_some() {
            assert_eq!(old.4, new.4, "turn of {old:?}");
            *filled.entry("turn").or_default() += 1;
        }
    }
    // Every spawn of the three sessions is one again, with its own id: OpenCode's 3 (task) and
    // Claude's 4 (2.1.39's Task calls and 2.1.332's Agent calls: their names unknown).
    let spawns = |cols: &[Columns], agent: &str| {
        cols.iter().filter(|c| c.0 == agent && c.6.as_deref() == Some("spawn")).map(|c| c.3.clone()).collect::<Vec<_>>()
    };
    for agent in ["claude", "opencode"] {
        assert_eq!(spawns(&upgraded, agent), spawns(&clean, agent), "{agent}'s spawns");
    }
    assert_eq!(spawns(&upgraded, "opencode").len(), 3);
    assert_eq!(spawns(&upgraded, "claude").len(), 4);
    assert_eq!(filled.get("tool"), Some(&3), "OpenCode's `task` only: {filled:?}");
    assert!(filled.get("turn").is_some_and(|&n| n > 20), "{filled:?}");
    // Read by the same reader: nothing to read again (the files are gone anyway), and nothing lost.
    assert_eq!(m.json(&["sync", "--json"])["read"], 0);
    assert_eq!(v4_columns(&m.store()), upgraded);
}

/// Each stored reason of a failed call (schema 6), in text order (row ids follow the order the
/// sync's readers finished in).
fn whys(store: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut st = conn.prepare("SELECT why FROM items WHERE why IS NOT NULL ORDER BY why").unwrap();
    st.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

/// What schema 5 wrote: a store synced by this swarmtop, the items' reasons dropped, its version set
/// back and its sources marked as read by that swarmtop (whose fingerprint named schema 5).
const TO_SCHEMA_5: &str = "ALTER TABLE items DROP COLUMN why;
    UPDATE sources SET fingerprint = replace(fingerprint, 'schema 6;', 'schema 5;');
    UPDATE meta SET value = replace(value, 'schema 6;', 'schema 5;') WHERE key = 'reader';
    PRAGMA user_version = 5;";

/// Schema 6 (issue 19): a failed call's reason is stored with its item. The real Claude Code
/// 2.1.332 and OpenCode 1.18.33 `badtype` sessions each keep their CLI's words. A store schema 5
/// wrote opens upgraded in place (its sessions as they were, no reason made up); the next sync
/// reads the sources again and the store is what a new store synced once holds; a store from a
/// version past this swarmtop's is refused untouched.
#[test]
fn a_schema_5_store_is_upgraded_to_keep_why_calls_failed() {
    let m = Machine::new();
    m.with_claude_2_1_332("badtype").with_opencode("badtype");
    m.run(&["sync"]);
    let clean = m.dump();
    let kept = whys(&m.store());
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().any(|w| w.starts_with("Agent type 'no-such-agent' not found.")), "{kept:?}");
    assert!(kept.iter().any(|w| w.starts_with("Unknown agent type: no-such-agent")), "{kept:?}");
    let listed = m.run(&["history", "--json", "--no-sync"]);
    rusqlite::Connection::open(m.store()).unwrap().execute_batch(TO_SCHEMA_5).unwrap();
    assert_eq!(user_version(&m.store()), 5);
    assert_eq!(m.run(&["history", "--json", "--no-sync"]), listed, "opened and upgraded: every session as it was");
    assert_eq!(user_version(&m.store()), i64::try_from(swarmtop::store::SCHEMA_VERSION).unwrap());
    assert!(whys(&m.store()).is_empty(), "what schema 5 did not keep is not made up");
    let synced = m.json(&["sync", "--json"]);
    assert_eq!(synced["read"], 2, "both sources read again: {synced}");
    assert_eq!(m.dump(), clean, "the store a clean sync fills");
    assert_eq!(whys(&m.store()), kept);
    // One version past this swarmtop's: refused, not a byte changed.
    let next = i64::try_from(swarmtop::store::SCHEMA_VERSION + 1).unwrap();
    rusqlite::Connection::open(m.store()).unwrap().pragma_update(None, "user_version", next).unwrap();
    let bytes = std::fs::read(m.store()).unwrap();
    let out = m.output(&["history", "--no-sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("schema version {next}")));
    assert_eq!(std::fs::read(m.store()).unwrap(), bytes);
}

/// Synced again, a session's items are the same rows, not one more copy of each: whether nothing
/// changed (nothing is read), or its files were touched and read again whole.
#[test]
fn real_sessions_synced_twice_add_nothing() {
    let m = Machine::new();
    m.with_claude_2_1_332("parallel").with_opencode("tree");
    assert_eq!(m.json(&["sync", "--json"])["read"], 2);
    let dump = m.dump();
    for tool in ["tool=Text(\"task\")", "tool=Text(\"Agent\")"] {
        assert!(dump.contains(tool), "each agent's own name for its spawns is kept: {tool}");
    }
    let again = m.json(&["sync", "--json"]);
    assert_eq!((again["read"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(2)));
    assert_eq!(m.dump(), dump);
    // Read again whole (as by another swarmtop: another fingerprint): the same rows in place of
    // the old, and each text still counted once per item that holds it.
    rusqlite::Connection::open(m.store()).unwrap().execute("UPDATE sources SET fingerprint = 'another'", []).unwrap();
    assert_eq!(m.json(&["sync", "--json"])["read"], 2);
    assert_eq!(m.dump(), dump);
}

/// `history SESSION` prints the session's tree as the sync stored it: a spawn the CLI refused
/// started no agent, so only its own line says it happened, with the CLI's reason (issue 19), also
/// once the session's files are gone (the real Claude Code 2.1.332 and OpenCode 1.18.33 `badtype`).
#[test]
fn history_of_a_session_whose_files_went_says_why_its_call_failed() {
    let m = Machine::new();
    m.with_claude_2_1_332("badtype").with_opencode("badtype");
    m.run(&["sync"]);
    std::fs::remove_dir_all(m.claude_fixture_project()).unwrap();
    std::fs::remove_dir_all(m.opencode_dir()).unwrap();
    m.run(&["sync"]);
    let listed = m.json(&["history", "--json", "--no-sync"]);
    let mut said = Vec::new();
    for session in listed["sessions"].as_array().unwrap() {
        assert_eq!(session["filesPresent"], false, "{session}");
        let tree = m.run(&["history", session["id"].as_str().unwrap(), "--no-sync"]);
        said.extend(tree.lines().filter(|l| l.contains(" failed: ")).map(str::to_owned));
    }
    said.sort();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].ends_with("✗ Agent failed: Agent type 'no-such-agent' not found. Available agents: claude, Explore, general-purpose, Plan, sta…"), "{said:?}");
    assert!(
        said[1].ends_with("✗ task failed: Unknown agent type: no-such-agent is not a valid agent type"),
        "{said:?}"
    );
}
