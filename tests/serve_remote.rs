//! `swarmtop --server URL`: the machine view of a real `swarmtop serve` on loopback, in a real
//! terminal (tmux), from a home with nothing of its own. It is the machine view of the daemon's
//! home, row for row, takes the same keys, follows what starts there, says when the daemon is gone
//! and comes back with it; beyond loopback it needs the daemon's token.

mod serve_support;
#[path = "store_support/mod.rs"]
mod store_support;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::Path;
use std::time::{Duration, Instant};

use serve_support::{Daemon, outside_address};
use store_support::Machine;
use tmux::Tmux;

/// `swarmtop ARGS` in a terminal, with `home` as its home and nothing else of ours.
fn shell(home: &Path, args: &str) -> String {
    format!(
        "env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u SWARMTOP_SERVER_TOKEN HOME='{}' TZ=UTC '{}' {args}; sleep 60",
        home.display(),
        env!("CARGO_BIN_EXE_swarmtop"),
    )
}

/// The screen below its two header lines (the header names the machine).
fn body(screen: &str) -> Vec<String> {
    screen.lines().skip(2).map(str::to_owned).collect()
}

/// What both views show once every session of the fixtures is read.
fn read(s: &str) -> bool {
    s.contains("Kant") && s.contains("spotter") && !s.contains("connecting")
}

#[test]
fn a_servers_machine_view_is_the_machine_view_of_its_home() {
    let m = Machine::new();
    m.with_claude().with_codex("collab_v1");
    let mut d = Daemon::start(&m.home(), &[]);
    let viewer = tempfile::tempdir().unwrap();
    let Some(there) =
        Tmux::start("remote", 160, 45, &shell(viewer.path(), &format!("--server http://{} --all", d.addr)))
    else {
        return;
    };
    let here = Tmux::start("local", 160, 45, &shell(&m.home(), "--all")).unwrap();
    here.wait_for("the local machine view", read);
    let name = format!("{}: ", d.addr);
    let screen = there.wait_for("the server's machine view", |s| read(s) && s.contains(&name));
    assert!(screen.contains("2 sessions"), "{screen}");
    // Row for row what the daemon's own machine sees (ages and rates may tick between two reads).
    let until = Instant::now() + Duration::from_secs(30);
    while body(&here.screen()) != body(&there.screen()) {
        assert!(
            Instant::now() < until,
            "the same screen below the header:\n{}\n---\n{}",
            here.screen(),
            there.screen()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // What starts on the daemon's machine appears here.
    m.with_codex("collab_v2");
    there.wait_for("the new session", |s| s.contains("Arendt") && s.contains("3 sessions"));
    // The same keys: help, a filter, Esc.
    there.keys(&["?"]);
    there.wait_for("the help overlay", |s| s.contains("┌ keys"));
    there.keys(&["Escape", "/", "K", "a", "n", "t", "Enter"]);
    there.wait_for("the filter", |s| s.contains("/Kant"));
    there.keys(&["Escape", "Escape"]);
    there.wait_for("the filter gone", |s| !s.contains("/Kant") && s.contains("Arendt"));

    // The daemon stops: said at once, the sessions stay; it starts again on its address: read again.
    let addr = d.addr.clone();
    assert!(d.stop().success());
    there.wait_for("the connection lost", |s| s.contains("disconnected") && s.contains("Arendt"));
    d = Daemon::start_on(&m.home(), &addr, &[]);
    let screen = there.wait_for("the daemon back", |s| read(s) && !s.contains("disconnected") && s.contains("Arendt"));
    assert!(screen.contains("3 sessions"), "each session once:\n{screen}");
    drop(d);
}

#[test]
fn beyond_loopback_the_view_needs_the_token() {
    let m = Machine::new();
    m.with_codex("collab_v1");
    let d = Daemon::start_on(&m.home(), "0.0.0.0:0", &[]);
    let Some(ip) = outside_address() else { return };
    let port = d.addr.rsplit(':').next().unwrap().to_owned();
    let url = format!("http://{ip}:{port}");
    let viewer = tempfile::tempdir().unwrap();
    let Some(refused) = Tmux::start("refused", 120, 30, &shell(viewer.path(), &format!("--server {url} --all"))) else {
        return;
    };
    let screen = refused.wait_for("the refusal", |s| s.contains("failed: the server answered 401"));
    assert!(screen.contains("Nothing received from the server") && !screen.contains("Kant"), "{screen}");
    let token = m.home().join(".local/share/swarmtop/serve-token");
    let args = format!("--server {url} --all --token-file '{}'", token.display());
    let admitted = Tmux::start("admitted", 120, 30, &shell(viewer.path(), &args)).unwrap();
    admitted.wait_for("the sessions", |s| s.contains("Kant") && s.contains(&format!("{ip}:{port}: ")));
}
