//! A stored session replayed from its files shows what was done to it (issue 20): the run store's
//! acts on the session (here a stop by signal, which the agent's own files never hold) become act
//! records of the replay, so the tree and the lane say who stopped it, as the monitor says live.
//! Both ways a stored session is replayed: `swarmtop [--store S] FILE`, and Enter in the history
//! view (`H`) on a session whose files are all there. Drawn over a `TestBackend`.

#[path = "support/home.rs"]
mod home;

use clap::Parser as _;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarmtop::commands::cli::{Cli, GlobalOpts, MonitorOpts, StoreOpts};
use swarmtop::commands::monitor::{Watch, watch_inputs};
use swarmtop::commands::past::{self, Access, Brought};
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::source::recorded::Recorded;
use swarmtop::store::Store;
use swarmtop::store::rows::ActRow;
use swarmtop::ui::{self, Feed, Theme, View};

use home::{CLAUDE_OLD_SESSION, Home};

/// A Claude Code 2.1.39 session synced into a run store of its own, and two acts on it there: a
/// stop by signal (as `swarmtop interrupt` keeps it) and a guard's refusal (which stopped nothing).
fn stored_session() -> (Home, std::path::PathBuf, std::path::PathBuf) {
    let home = Home::new();
    let file = home.add_claude_old();
    let store = home.path().join("history.db");
    let out = home.cmd().arg("sync").arg("--store").arg(&store).output().expect("swarmtop sync");
    assert!(out.status.success(), "sync: {}", String::from_utf8_lossy(&out.stderr));
    let mut s = Store::open(&store).expect("the run store");
    let act = |kind: &str, by: &str, via: &str, detail: &str, outcome: &str, at_ms| ActRow {
        at_ms,
        kind: kind.into(),
        by: by.into(),
        via: via.into(),
        session: Some(CLAUDE_OLD_SESSION.into()),
        target: CLAUDE_OLD_SESSION.into(),
        detail: detail.into(),
        outcome: outcome.into(),
    };
    // After the session's last line (2026-02-12), as a stop comes once it ran.
    // The session's own Task call: the refusal is shown under it.
    let refused = act("deny", "guard", "hook", &format!("Task {TASK_CALL}"), "denied: depth 2 > 1", 1_796_000_000_000);
    let signalled = act(
        "interrupt",
        "swarmtop interrupt",
        "signal",
        "pid 4121 in /home/USER/projects/spotter",
        "exited on SIGINT",
        1_796_000_001_000,
    );
    s.backend_mut().record_act(&refused).expect("kept");
    s.backend_mut().record_act(&signalled).expect("kept");
    (home, file, store)
}

/// A Task call of the session's lead (its tool_use id in the fixture).
const TASK_CALL: &str = "toolu_017pLRuPHYTX5t99EnLyV53m";

/// The whole replay applied, drawn at 120×40.
fn replayed(r: &Recorded) -> String {
    replayed_at(r, 120, 40).0
}

/// The whole replay applied, drawn at `width`×`height`, and its model.
fn replayed_at(r: &Recorded, width: u16, height: u16) -> (String, Pipeline) {
    let mut p = Pipeline::default();
    ui::runtime::apply(r, &mut p, 0..r.len());
    let feed = Feed { source: r.name.clone(), now_ms: p.model.stream_ms, ..Feed::default() };
    let mut view = View::with_theme(Theme::no_color());
    let mut term = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    let counters = p.counters();
    for _ in 0..2 {
        term.draw(|f| ui::render(f, &p.model, &counters, &feed, &mut view)).expect("draw");
    }
    (format!("{}", term.backend()), p)
}

fn said(screen: &str) -> bool {
    screen.contains("stopped by swarmtop interrupt")
}

#[test]
fn swarmtop_file_of_a_stored_session_shows_its_stops() {
    let (home, file, store) = stored_session();
    let cli = Cli::try_parse_from([
        "swarmtop".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--speed".as_ref(),
        "max".as_ref(),
        file.as_os_str(),
    ])
    .expect("the command line");
    let opts = MonitorOpts::new(&cli.replay, cli.follow, &cli.screen, Some(&cli.record));
    let Watch::Replay(r) = watch_inputs(&cli.inputs, &opts, &cli.window).expect("the replay") else {
        panic!("a file is replayed")
    };
    let screen = replayed(&r);
    assert!(said(&screen), "{screen}");
    assert!(!screen.contains("denied"), "a refusal stopped nothing: {screen}");
    // The temporary HOME in the header, named alike in every run.
    let shown = screen.replace(&home.path().display().to_string(), "$HOME");
    insta::assert_snapshot!("replay_of_a_stored_session_120x40", shown);
    // Without the store's acts the files alone say nothing of the stop.
    let bare =
        Recorded::from_inputs(&cli.inputs, &[swarmtop::source::files::Input::File(file)], false, &ui::runtime::time_of)
            .expect("the files");
    assert!(!said(&replayed(&bare)));
}

/// `swarmtop --follow FILE` of a stored session (issue 23: a followed replay read no stored act):
/// its stops come at their times, after the session's lines, and the file is still followed.
#[test]
fn a_followed_replay_of_a_stored_session_shows_its_stops_at_their_times() {
    let (_home, file, store) = stored_session();
    let cli = Cli::try_parse_from([
        "swarmtop".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--follow".as_ref(),
        file.as_os_str(),
    ])
    .expect("the command line");
    let opts = MonitorOpts::new(&cli.replay, cli.follow, &cli.screen, Some(&cli.record));
    let Watch::Replay(r) = watch_inputs(&cli.inputs, &opts, &cli.window).expect("the replay") else {
        panic!("a followed file is replayed")
    };
    assert!(r.follow && r.watched().0.len() == 1, "the file is followed");
    let screen = replayed(&r);
    assert!(said(&screen), "{screen}");
    assert!(screen.contains("SIGINT (pid 4121"), "the act's outcome and detail: {screen}");
    // At their times: the stop (2026-12) is the last record, after every line of the session (2026-02).
    let times: Vec<i64> = r.times().flatten().collect();
    assert_eq!(times.iter().max(), Some(&1_796_000_001_000));
    assert_eq!(times.last(), Some(&1_796_000_001_000), "the stop last, at its time");

    // An act kept while the replay follows comes as it is kept, once (what it had is not again).
    let mut r = r;
    let mut since = r.acts_since.take().expect("a followed replay looks for acts done since");
    assert!(since().is_empty(), "nothing new");
    let later = ActRow {
        at_ms: 1_796_000_002_000,
        kind: "interrupt".into(),
        by: "guard".into(),
        via: "signal".into(),
        session: Some(CLAUDE_OLD_SESSION.into()),
        target: CLAUDE_OLD_SESSION.into(),
        detail: String::new(),
        outcome: "exited on SIGTERM".into(),
    };
    Store::open(&store).expect("the run store").backend_mut().record_act(&later).expect("kept");
    let records = since();
    assert_eq!(String::from_utf8_lossy(&records).lines().count(), 1, "only the new one");
    assert!(since().is_empty(), "once");
    let before = r.len();
    assert_eq!(r.followed(swarmtop::source::live::Change::Acts { records }, &ui::runtime::time_of), 1);
    let mut p = Pipeline::default();
    ui::runtime::apply(&r, &mut p, 0..before);
    let lead = p.router.find(CLAUDE_OLD_SESSION).expect("the lead");
    assert!(p.model.thread(lead).stopped_by.as_ref().is_some_and(|s| s.as_str().starts_with("swarmtop interrupt")));
    ui::runtime::apply(&r, &mut p, before..r.len());
    let by = p.model.thread(lead).stopped_by.as_ref().map(|s| s.as_str().to_owned());
    assert_eq!(by.as_deref(), Some("guard: exited on SIGTERM"), "the act kept since");
}

#[test]
fn a_stored_session_opened_from_the_history_as_a_replay_shows_its_stops() {
    let (_home, _file, store) = stored_session();
    let access = Access {
        store: StoreOpts { store: Some(store.display().to_string()) },
        config: Config::default(),
        global: GlobalOpts::default(),
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    past::open(&access, CLAUDE_OLD_SESSION.to_owned(), 0, tx);
    let reply = rx.blocking_recv().expect("an answer");
    let Brought::Replay(r) = reply.what else { panic!("its files are all there: a replay") };
    let screen = replayed(&r);
    assert!(said(&screen), "{screen}");
    assert!(screen.contains("SIGINT (pid 4121"), "the act's outcome and detail: {screen}");
}

/// A guard's refusal the run store keeps (issue 20: replays showed only stops): the replay of the
/// stored session shows it in the lead's lane under the Task call it refused, and the lead is not
/// said to be stopped by it. Without the store, nothing of it.
#[test]
fn a_replay_of_a_stored_session_shows_a_guard_s_refusal_under_the_call() {
    let (_home, file, store) = stored_session();
    let cli = Cli::try_parse_from(["swarmtop".as_ref(), "--store".as_ref(), store.as_os_str(), file.as_os_str()])
        .expect("the command line");
    let opts = MonitorOpts::new(&cli.replay, cli.follow, &cli.screen, Some(&cli.record));
    let Watch::Replay(r) = watch_inputs(&cli.inputs, &opts, &cli.window).expect("the replay") else {
        panic!("a file is replayed")
    };
    let (_, p) = replayed_at(&r, 120, 40);
    let lead = p.router.find(CLAUDE_OLD_SESSION).expect("the lead");
    let t = p.model.thread(lead);
    let refusals: Vec<(Option<&str>, &str)> = t.refusals.iter().map(|(c, why)| (c.as_deref(), why.as_str())).collect();
    assert_eq!(refusals, [(Some(TASK_CALL), "guard: depth 2 > 1")]);
    assert!(t.items.iter().any(|i| &*i.id == TASK_CALL), "the call it names is the lead's");
    assert!(
        t.stopped_by.as_ref().is_some_and(|s| s.as_str().starts_with("swarmtop interrupt")),
        "the stop, not the refusal"
    );
    // Drawn where the lane draws that call (ui::lanes' unit test); at the end when it names none.
    let bare =
        Recorded::from_inputs(&cli.inputs, &[swarmtop::source::files::Input::File(file)], false, &ui::runtime::time_of)
            .expect("the files");
    let (_, p) = replayed_at(&bare, 120, 40);
    assert!(p.model.threads.iter().all(|t| t.refusals.is_empty()));
}
