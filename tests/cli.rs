//! The command line as a user meets it: exit codes, the grammar, every kind of input.

use std::io::Write;
use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0").join(name)
}

fn swarmtop() -> Command {
    Command::cargo_bin("swarmtop").expect("binary built")
}

fn stats_json(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let out = swarmtop().arg("stats").arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn stats_json_is_one_object_on_one_line() {
    let out = swarmtop().args(["stats", "--json"]).arg(fixture("collab_v1.server.ndjson")).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["threads"].as_array().unwrap().len(), 4);
    assert_eq!(v["totals"]["unpricedThreads"], 0);
}

#[test]
fn malformed_input_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.ndjson");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"{\"method\":\"thread/started\",\"params\":{\"thread\":{\"id\":\"r\"}}}\nnot json\n\xff\xfe\n{\"method\":\"turn/started\",\"params\":{\"threadId\":\"r\",\"turn\":{\"id\":\"u\"").unwrap();
    drop(f);
    let v = stats_json(&[path.as_os_str()]);
    assert_eq!(v["routing"]["malformed"], 3);
    assert_eq!(v["input"]["lines"], 4);
}

#[test]
fn unreadable_input_is_a_one_line_error_with_status_1() {
    swarmtop()
        .args(["stats", "/nonexistent/recording.ndjson"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::starts_with("swarmtop: ").and(predicate::str::contains("/nonexistent/recording.ndjson")),
        )
        .stderr(predicate::function(|s: &str| s.trim_end().lines().count() == 1));
}

#[test]
fn usage_errors_exit_2() {
    swarmtop().args(["stats", "--bogus"]).assert().code(2);
    swarmtop().args(["stats"]).assert().code(2);
    swarmtop().args(["--speed", "fast", "x"]).assert().code(2);
}

#[test]
fn subcommand_names_win_over_file_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("probe.server.ndjson"), dir.path().join("tree")).unwrap();
    // `tree FILE` is the subcommand; `./tree` would be the file.
    swarmtop()
        .current_dir(dir.path())
        .args(["tree", "tree"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gpt-5.5"));
}

#[test]
fn directories_gz_and_stdin_are_one_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = std::fs::read(fixture("collab_v1.server.ndjson")).unwrap();
    let (first, rest) = server.split_at(server.len() / 2);
    let cut = first.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(dir.path().join("a.ndjson"), &server[..cut]).unwrap();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(dir.path().join("b.ndjson.gz")).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(&server[cut..]).unwrap();
    gz.finish().unwrap();
    let _ = rest;
    std::fs::write(dir.path().join("ignored.txt"), b"not a recording").unwrap();
    let whole = stats_json(&[fixture("collab_v1.server.ndjson").as_os_str()]);
    let split = stats_json(&[dir.path().as_os_str()]);
    assert_eq!(whole["threads"], split["threads"]);
    assert_eq!(whole["input"], split["input"], "bytes count decompressed bytes");

    let out = swarmtop().args(["stats", "--json", "-"]).write_stdin(server).output().unwrap();
    let piped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(whole["threads"], piped["threads"]);
}

#[test]
fn route_prints_routed_ndjson() {
    let out = swarmtop().arg("route").arg(fixture("collab_v1.server.ndjson")).output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 37 + 32);
    let rehomed: Vec<_> = lines.iter().filter(|l| l["class"] == "rehomed").collect();
    assert_eq!(rehomed.len(), 32);
    assert!(
        rehomed
            .iter()
            .all(|l| l["ownerThreadId"].is_string() && l["sessionThreadId"] == "01a2292d-f8ac-71e0-b822-647118037869")
    );
    assert!(lines.iter().filter(|l| l["class"] == "root").all(|l| l["ownerThreadId"].is_null()));
    // The message is the original line, verbatim.
    let first = std::fs::read_to_string(fixture("collab_v1.server.ndjson")).unwrap();
    let orig: serde_json::Value = serde_json::from_str(first.lines().nth(3).unwrap()).unwrap();
    assert_eq!(lines[0]["msg"], orig);

    let all = swarmtop().args(["route", "--all"]).arg(fixture("collab_v1.server.ndjson")).output().unwrap();
    assert_eq!(all.stdout.iter().filter(|&&b| b == b'\n').count(), 107);
}

#[test]
fn pricing_file_overrides_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, "[models.\"gpt-5.5\"]\ninput = 0.0\ncached_input = 0.0\noutput = 1000000.0\n").unwrap();
    let out = swarmtop()
        .args(["stats", "--json", "--pricing"])
        .arg(&prices)
        .arg(fixture("probe.server.ndjson"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["threads"][0];
    assert_eq!(t["costUsd"].as_f64().unwrap(), t["tokens"]["output"].as_f64().unwrap());

    std::fs::write(&prices, "[models.x]\nprice = 1").unwrap();
    swarmtop().args(["stats", "--pricing"]).arg(&prices).arg(fixture("probe.server.ndjson")).assert().code(1);
}

#[test]
fn stats_text_has_a_table_and_a_tree() {
    swarmtop().arg("stats").arg(fixture("collab_v1.server.ndjson")).assert().success().stdout(
        predicate::str::contains("Kant").and(predicate::str::contains("└─")).and(predicate::str::contains("routing")),
    );
}

/// An input that holds nothing to show is a one-line error naming it and why, exit 1, with or
/// without `--json` (not `(no threads)` and 0).
#[test]
fn inputs_with_no_agent_traffic_are_one_line_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("passwd");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n").unwrap();
    let binary = dir.path().join("blob.ndjson");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0, 1, b'\n', 0x80, 0x81]).unwrap();
    let json = dir.path().join("package.jsonl");
    std::fs::write(&json, "{\"name\":\"x\",\"version\":\"1.0.0\"}\n").unwrap();
    let one_line = |s: &str| s.trim_end().lines().count() == 1 && s.starts_with("swarmtop: ");
    for (args, path, why) in [
        (vec!["stats"], &text, "not JSON"),
        (vec!["stats", "--json"], &text, "not JSON"),
        (vec!["tree"], &binary, "not UTF-8"),
        (vec!["route"], &json, "line 1"),
        (vec!["route", "--all"], &text, "not JSON"),
        (vec!["export", "--otlp-file", "/dev/null"], &text, "not JSON"),
        // The monitor too, before it takes the terminal.
        (vec![], &text, "not JSON"),
    ] {
        let out = swarmtop().args(&args).arg(path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(one_line(&err), "{args:?}: {err}");
        assert!(err.contains(&*path.to_string_lossy()) && err.contains("no agent traffic"), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        if args.contains(&"--json") {
            assert!(out.stdout.is_empty(), "no JSON for an input that held none");
        }
    }
}

#[test]
fn an_empty_input_or_a_folder_with_no_recording_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.ndjson");
    std::fs::write(&empty, "").unwrap();
    let folder = dir.path().join("notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("readme.txt"), "hello\n").unwrap();
    for (args, path, why) in [
        (vec!["stats"], &empty, "empty"),
        (vec!["stats", "--json"], &empty, "empty"),
        (vec!["tree"], &empty, "empty"),
        (vec![], &empty, "empty"),
        (vec!["route"], &folder, "no recording in this folder"),
        (vec!["stats"], &folder, "no recording in this folder"),
        (vec![], &folder, "no recording in this folder"),
    ] {
        let out = swarmtop().args(&args).arg(path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} {}: {err}", path.display());
        assert!(err.trim_end().lines().count() == 1 && err.contains(&*path.to_string_lossy()), "{err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

#[test]
fn speeds_and_durations_are_validated_with_the_allowed_values() {
    let input = fixture("probe.server.ndjson");
    for (args, says) in [
        (&["--speed", "7"][..], "1, 2, 5, 10, 50, max"),
        (&["--speed", "0"][..], "1, 2, 5, 10, 50, max"),
        (&["--stall", "0"][..], "above zero"),
        (&["--max-gap", "2 weeks"][..], "unknown unit"),
        (&["--max-gap", "99999999999999999d"][..], "too long"),
        (&["--fps", "0"][..], "fps"),
    ] {
        let out = swarmtop().args(args).arg(&input).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    swarmtop().args(["demo", "--speed", "7"]).assert().code(2).stderr(predicate::str::contains("1, 2, 5, 10, 50, max"));
    swarmtop()
        .args(["serve", "--print-unit", "--sync-every", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("above zero"));
}

/// Options written before a subcommand's name are the subcommand's (`swarmtop --speed 10 demo`
/// played at 1×: the option went to the bare monitor).
#[test]
fn options_before_the_subcommand_are_the_subcommands() {
    use std::ffi::OsString;
    let moved = |args: &[&str]| {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        swarmtop::commands::subcommand_first(args).into_iter().map(|a| a.into_string().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(moved(&["swarmtop", "--speed", "10", "demo"]), ["swarmtop", "demo", "--speed", "10"]);
    assert_eq!(moved(&["swarmtop", "--speed=10", "demo"]), ["swarmtop", "demo", "--speed=10"]);
    assert_eq!(moved(&["swarmtop", "--json", "stats", "x"]), ["swarmtop", "stats", "--json", "x"]);
    assert_eq!(moved(&["swarmtop", "--all", "--since", "2h", "ps"]), ["swarmtop", "ps", "--all", "--since", "2h"]);
    // A name after an input is an input; an option's value is a value.
    assert_eq!(moved(&["swarmtop", "a.ndjson", "tree"]), ["swarmtop", "a.ndjson", "tree"]);
    assert_eq!(moved(&["swarmtop", "--record", "demo", "x"]), ["swarmtop", "--record", "demo", "x"]);
    assert_eq!(moved(&["swarmtop", "--", "demo"]), ["swarmtop", "--", "demo"]);
    // Through the binary: read as the subcommand's, or refused by name where it takes no such option.
    let input = fixture("probe.server.ndjson");
    swarmtop().args(["--json", "stats"]).arg(&input).assert().success().stdout(predicate::str::starts_with("{"));
    swarmtop().args(["--log", "/dev/null", "tree"]).arg(&input).assert().success();
    swarmtop()
        .args(["--speed", "10", "stats"])
        .arg(&input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--speed"));
    swarmtop().args(["--speed", "10", "demo", "--help"]).assert().success();
}

/// Each subcommand's help lists its own options only, and describes every argument.
#[test]
fn each_help_lists_its_own_options_and_describes_every_argument() {
    let help = |args: &[&str]| {
        let out = swarmtop().args(args).arg("--help").output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    for live in [&["attach"][..], &["listen"][..]] {
        let h = help(live);
        for replay_only in ["--speed", "--max-gap", "--follow"] {
            assert!(!h.contains(replay_only), "{live:?} --help lists {replay_only}\n{h}");
        }
        assert!(h.contains("--record") && h.contains("--theme"), "{h}");
    }
    let demo = help(&["demo"]);
    assert!(demo.contains("--speed") && !demo.contains("--follow") && !demo.contains("--record"), "{demo}");
    for sub in ["stats", "route", "tree", "export", "attach", "history", "search", "report", "interrupt", "tee"] {
        let h = help(&[sub]);
        let Some((_, args)) = h.split_once("Arguments:\n") else { continue };
        // An argument's line (a description wrapped onto more lines starts with spaces only).
        for line in args.lines().take_while(|l| !l.is_empty()).filter(|l| l.trim_start().starts_with(['<', '['])) {
            let described = line.trim_start().split_once("  ").is_some_and(|(_, d)| !d.trim().is_empty());
            assert!(described, "`{sub} --help`: {line:?} has no description\n{h}");
        }
    }
    let top = help(&[]);
    assert!(top.contains("[INPUTS]...  What to watch"), "{top}");
}
