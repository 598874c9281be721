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
