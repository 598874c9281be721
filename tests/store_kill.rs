//! A sync killed at any moment (SIGKILL: no clean-up runs) leaves a store that the next sync
//! completes into exactly what one uninterrupted sync makes; and two syncs at once neither
//! corrupt nor double anything.

mod store_support;

#[path = "../benches/support/claude_folder.rs"]
#[allow(dead_code)]
mod claude_folder;

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use store_support::Machine;

/// Sessions in the generated Claude folder: enough that a sync takes a while to kill midway.
const COPIES: u32 = 6;

/// A machine with the generated folder and the Codex fixtures, and what a clean sync of it stores
/// and how long that took.
struct Clean {
    machine: Machine,
    dump: String,
    took: Duration,
}

fn clean() -> &'static Clean {
    static CLEAN: OnceLock<Clean> = OnceLock::new();
    CLEAN.get_or_init(|| {
        let machine = Machine::new();
        claude_folder::write(&machine.home().join(".claude"), COPIES).expect("the Claude folder");
        machine.with_codex("collab_v1").with_codex("collab_v2");
        let start = Instant::now();
        machine.run(&["sync"]);
        let took = start.elapsed();
        let dump = machine.dump();
        Clean { machine, dump, took }
    })
}

/// `swarmtop sync` into `store`, on the clean machine's files.
fn sync_into(store: &std::path::Path) -> Command {
    let m = &clean().machine;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_swarmtop"));
    cmd.env_clear()
        .env("HOME", m.home())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["sync", "--quiet", "--store"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn dump(store: &std::path::Path) -> String {
    swarmtop::store::Store::open(store).expect("the store opens").backend().dump().expect("dumps")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn a_sync_killed_at_any_point_is_completed_by_the_next(at in 0.0f64..1.2) {
        let c = clean();
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("history.db");
        let mut child = sync_into(&store).spawn().unwrap();
        std::thread::sleep(c.took.mul_f64(at));
        // SIGKILL: nothing of the sync's own runs after it.
        let midway = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        let partial = if store.exists() { dump(&store) } else { String::new() };
        eprintln!("killed at {:.0}% of {:?}: midway {midway}, {} of {} lines stored", at * 100.0, c.took,
            partial.lines().count(), c.dump.lines().count());
        let out = sync_into(&store).output().unwrap();
        prop_assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        prop_assert_eq!(dump(&store), c.dump.clone());
    }
}

#[test]
fn two_syncs_at_once_store_each_run_once() {
    let c = clean();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.db");
    let first = sync_into(&store).spawn().unwrap();
    let second = sync_into(&store).spawn().unwrap();
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(dump(&store), c.dump);
}
