//! `swarmtop sync`: index every agent session on this machine into the run store; and the quiet
//! sync every query of the store runs first.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::cli::{GlobalOpts, MachineOpts, StoreOpts, SyncArgs};
use super::ingest::{ingest_partial, ingest_partial_on};
use crate::model::Model;
use crate::pipeline::{Config, Pipeline};
use crate::router::{Sink, ThreadIdx};
use crate::source::agents::Env;
use crate::store::sync::{self, Options, Progress};
use crate::store::{Carry, Reader, Store, Synced, location};

/// Sessions read as `stats` reads them, and kept as `stats`, `tree` and the screen name them.
struct Commands {
    config: Config,
    fingerprint: String,
}

impl Reader for Commands {
    fn config(&self) -> &Config {
        &self.config
    }

    fn read(
        &self,
        files: &[PathBuf],
        also: &mut dyn Sink,
        every_core: bool,
    ) -> Result<(Pipeline, Option<color_eyre::Report>)> {
        if every_core {
            ingest_partial(files, self.config.clone(), also)
        } else {
            ingest_partial_on(files, self.config.clone(), also, 1)
        }
    }

    fn label(&self, model: &Model, idx: ThreadIdx) -> String {
        crate::ui::label::text(model, idx)
    }

    fn stats_json(&self, pipeline: &Pipeline) -> String {
        super::stats::render_json(pipeline)
    }

    fn tree(&self, model: &Model) -> String {
        super::tree::render_tree(model)
    }

    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }
}

/// This swarmtop, the schema it writes and its price table: figures another one stored are
/// figured again, and rows an older schema kept less of (schema 4: items' own tool names, ids and
/// turns), or an older reading (2: a session's unattributed part in its usage), are read again
/// from their files where they are still there.
fn fingerprint(global: &GlobalOpts) -> Result<String> {
    let prices = match &global.pricing {
        Some(path) => {
            let text = std::fs::read(path).wrap_err_with(|| format!("reading {}", path.display()))?;
            let digest: [u8; 32] = Sha256::digest(&text).into();
            digest.iter().fold(String::new(), |mut hex, b| {
                let _ = write!(hex, "{b:02x}");
                hex
            })
        }
        None => "builtin".to_owned(),
    };
    Ok(format!(
        "swarmtop {}; schema {}; reading {}; prices {prices}",
        env!("CARGO_PKG_VERSION"),
        crate::store::READ_SCHEMA,
        crate::store::READING
    ))
}

/// The store `--store` (or the default place) names, opened; a team store for this machine as
/// `machine` names it (else `SWARMTOP_MACHINE`, else the host name).
pub(super) fn open_as(opts: &StoreOpts, machine: &MachineOpts) -> Result<Store> {
    let env = Env::from_process();
    let at = location::resolve(opts.store.as_deref(), &env)?;
    let name = match at {
        location::Location::File(_) => String::new(),
        location::Location::Team(_) => location::machine(machine.name.as_deref(), &env)?,
    };
    Store::open_at(&at, &name)
}

/// The store `--store` (or the default place) names, opened for this machine.
pub(super) fn open(opts: &StoreOpts) -> Result<Store> {
    open_as(opts, &MachineOpts { name: None })
}

/// Sources read at once past which even a quiet sync shows its progress on a terminal.
const LONG_SYNC_BYTES: u64 = 64 << 20;

/// A progress bar on stderr, when stderr is a terminal and the work is worth one.
fn progress_bar(always: bool) -> impl FnMut(Progress) {
    let mut bar: Option<indicatif::ProgressBar> = None;
    let terminal = std::io::stderr().is_terminal();
    move |p: Progress| {
        if !terminal || !(always || p.bytes >= LONG_SYNC_BYTES) {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.bytes);
            b.set_style(
                indicatif::ProgressStyle::with_template("indexing sessions {bar:30} {bytes}/{total_bytes} {msg}")
                    .expect("a valid template"),
            );
            b
        });
        bar.set_position(p.bytes_done);
        bar.set_message(format!("{}/{} sessions", p.sources_done, p.sources));
        if p.sources_done == p.sources {
            bar.finish_and_clear();
        }
    }
}

/// Opens the store and brings it up to date first (unless `--no-sync`): quietly, looking only at
/// what changed since the last sync, and not at all while another sync runs (the store is
/// answered from as it is).
pub(super) fn synced(opts: &StoreOpts, no_sync: bool, config: Config, global: &GlobalOpts) -> Result<Store> {
    let mut store = open(opts)?;
    if !no_sync {
        quiet_sync(&mut store, config, global, true)?;
    }
    Ok(store)
}

/// The quiet sync of a query: what changed since the last one, never waiting for another sync,
/// with a progress bar on a terminal for a long one when `bar` (the monitor's screen has none).
pub(super) fn quiet_sync(store: &mut Store, config: Config, global: &GlobalOpts, bar: bool) -> Result<()> {
    let reader = Commands { config: config.figures(), fingerprint: fingerprint(global)? };
    let mut progress = progress_bar(false);
    let progress: Option<&mut dyn FnMut(Progress)> = if bar { Some(&mut progress) } else { None };
    let synced = sync::sync(
        store,
        &reader,
        Options { env: Env::from_process(), full: false, wait: false, progress, carry: None },
    )?;
    for failure in &synced.failed {
        tracing::warn!("sync: {failure}");
    }
    Ok(())
}

/// The daemon's sync: quiet, never waiting for another sync (the next turn comes soon), every
/// session (`full`) or those changed lately, growing sessions read on from where `carry` keeps
/// them; a source that could not be read is an error, so that it is counted and retried.
pub(super) fn bring_up_to_date(
    store: &mut Store,
    config: Config,
    global: &GlobalOpts,
    full: bool,
    carry: &mut Carry,
) -> Result<Synced> {
    let reader = Commands { config: config.figures(), fingerprint: fingerprint(global)? };
    let opts = Options { env: Env::from_process(), full, wait: false, progress: None, carry: Some(carry) };
    let synced = sync::sync(store, &reader, opts)?;
    match synced.failed.as_slice() {
        [] => Ok(synced),
        [first, ..] => Err(color_eyre::eyre::eyre!("{} sources not read: {first}", synced.failed.len())),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SyncedJson<'a> {
    store: String,
    found: usize,
    read: usize,
    unchanged: usize,
    kept: usize,
    bytes_read: u64,
    sessions: usize,
    runs: usize,
    duplicates: usize,
    /// Rows of sessions, runs, usage and items written (either store's, counted alike).
    rows: u64,
    failed: &'a [String],
    store_bytes: u64,
}

pub fn run(args: &SyncArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    let mut store = open_as(&args.store, &args.machine)?;
    let reader = Commands { config: config.figures(), fingerprint: fingerprint(global)? };
    let mut bar = progress_bar(true);
    let progress: Option<&mut dyn FnMut(Progress)> = if args.quiet || args.json { None } else { Some(&mut bar) };
    let synced = sync::sync(
        &mut store,
        &reader,
        Options { env: Env::from_process(), full: true, wait: true, progress, carry: None },
    )?;
    let size = store.backend().size()?;
    let shown = store.location().shown();
    if args.json {
        let json = SyncedJson {
            store: shown,
            found: synced.found,
            read: synced.read,
            unchanged: synced.unchanged,
            kept: synced.kept,
            bytes_read: synced.bytes_read,
            sessions: synced.sessions,
            runs: synced.runs,
            duplicates: synced.duplicates,
            rows: synced.rows,
            failed: &synced.failed,
            store_bytes: size,
        };
        let mut out = serde_json::to_string(&json).expect("serialises");
        out.push('\n');
        super::print(out.as_bytes())?;
    } else if !args.quiet {
        super::print(summary(&synced, &shown, size).as_bytes())?;
    }
    for failure in &synced.failed {
        eprintln!("swarmtop: {}", crate::wire::sanitize_line(failure));
    }
    Ok(if synced.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn summary(s: &Synced, store: &str, size: u64) -> String {
    format!(
        "{} sessions' files found: {} read ({} bytes), {} unchanged, {} kept after their files went\n\
         stored {} sessions, {} runs{}\n\
         store {store} ({} bytes)\n",
        s.found,
        s.read,
        crate::ui::text::grouped(s.bytes_read),
        s.unchanged,
        s.kept,
        s.sessions,
        s.runs,
        if s.duplicates > 0 {
            format!(" ({} already stored from another source)", s.duplicates)
        } else {
            String::new()
        },
        crate::ui::text::grouped(size),
    )
}

/// The PostgreSQL server the team-store tests start (the integration tests' own).
#[cfg(test)]
#[path = "../../tests/postgres_support/mod.rs"]
mod postgres_support;

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::path::Path;

    use super::*;

    const SESSION: &str = "4d5611e5-241a-462a-8d15-5122611a9569";

    fn reader() -> Commands {
        Commands { config: Config::default().figures(), fingerprint: "test".to_owned() }
    }

    /// One sync of the store at `db` from the home `home`, with `carry` if given.
    fn sync_once(home: &Path, db: &Path, carry: Option<&mut Carry>) -> Synced {
        sync_with(&reader(), home, db, carry)
    }

    /// A home whose one Claude session is the fixture, to be written into it a few lines at a time.
    struct Growing {
        home: std::path::PathBuf,
        transcript: std::path::PathBuf,
        whole: Vec<u8>,
        /// Where each of the fixture's lines ends.
        ends: Vec<usize>,
    }

    impl Growing {
        fn in_dir(dir: &Path) -> Self {
            let home = dir.join("home");
            let project = home.join(".claude/projects/-work-demo");
            std::fs::create_dir_all(&project).unwrap();
            let fixture =
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/claude-2.1.39/{SESSION}.jsonl"));
            let whole = std::fs::read(fixture).unwrap();
            let ends = whole.iter().enumerate().filter(|&(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
            Self { home, transcript: project.join(format!("{SESSION}.jsonl")), whole, ends }
        }
    }

    fn sync_with(reader: &Commands, home: &Path, db: &Path, carry: Option<&mut Carry>) -> Synced {
        sync_at(reader, home, &location::Location::File(db.to_owned()), "", carry)
    }

    /// One sync of the store at `at`, as the machine `machine` (a team store's).
    fn sync_at(
        reader: &Commands,
        home: &Path,
        at: &location::Location,
        machine: &str,
        carry: Option<&mut Carry>,
    ) -> Synced {
        let mut store = Store::open_at(at, machine).unwrap();
        let env = Env::default().with("HOME", home);
        let opts = Options { env, full: false, wait: true, progress: None, carry };
        sync::sync(&mut store, reader, opts).unwrap()
    }

    fn dump(db: &Path) -> String {
        Store::open(db).unwrap().backend().dump().unwrap()
    }

    /// Both text indexes hold exactly what their tables hold (FTS5's own check against its
    /// content table): a run's brief and answer rewritten in place left the index as a fresh
    /// write does.
    fn indexes_agree(db: &Path) {
        let conn = rusqlite::Connection::open(db).unwrap();
        for index in ["runs_fts", "texts_fts"] {
            conn.execute(&format!("INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)"), []).unwrap();
        }
    }

    /// The daemon's syncs of a session written as they run (each read on from where the last one
    /// stopped, a line cut in half read whole the next time) leave the store a clean sync of the
    /// same files fills, after every step.
    #[test]
    fn a_session_read_on_between_syncs_is_stored_as_a_clean_sync_stores_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = home.join(".claude/projects/-work-demo");
        std::fs::create_dir_all(&project).unwrap();
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/claude-2.1.39/{SESSION}.jsonl"));
        let whole = std::fs::read(fixture).unwrap();
        let transcript = project.join(format!("{SESSION}.jsonl"));
        std::fs::write(&transcript, b"").unwrap();
        let (db, mut carry) = (dir.path().join("daemon.db"), Carry::default());
        // Steps of a few hundred lines, one of them ending within a line.
        let ends: Vec<usize> = whole.iter().enumerate().filter(|&(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
        let mut cuts: Vec<usize> = (1..=5).map(|k| ends[ends.len() * k / 6]).collect();
        cuts.insert(3, cuts[2] + (cuts[3] - cuts[2]) / 2);
        cuts.push(whole.len());
        let (mut written, mut continued) = (0, 0);
        for (step, &cut) in cuts.iter().enumerate() {
            let mut file = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
            file.write_all(&whole[written..cut]).unwrap();
            drop(file);
            written = cut;
            continued += sync_once(&home, &db, Some(&mut carry)).continued;
            let clean = dir.path().join(format!("clean{step}.db"));
            let fresh = sync_once(&home, &clean, None);
            assert_eq!(fresh.continued, 0);
            assert_eq!(dump(&db), dump(&clean), "after step {step} ({cut} of {} bytes)", whole.len());
            indexes_agree(&db);
        }
        assert!(continued >= 3, "most steps were read on, not whole: {continued}");
        assert_eq!(carry.len(), 1, "the session is kept for the next sync");
    }

    /// A session being written that the store does not hold yet is kept by the sync that finds
    /// it, so that the next sync reads on from there: taken only once stored, it was read whole
    /// a second time by the next sync. The store is a clean sync's all along.
    #[test]
    fn a_new_session_being_written_is_kept_by_the_sync_that_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = home.join(".claude/projects/-work-demo");
        std::fs::create_dir_all(&project).unwrap();
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/claude-2.1.39/{SESSION}.jsonl"));
        let whole = std::fs::read(fixture).unwrap();
        let ends: Vec<usize> = whole.iter().enumerate().filter(|&(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
        let transcript = project.join(format!("{SESSION}.jsonl"));
        std::fs::write(&transcript, &whole[..ends[ends.len() / 2]]).unwrap();
        let (db, mut carry) = (dir.path().join("daemon.db"), Carry::default());
        let first = sync_once(&home, &db, Some(&mut carry));
        assert_eq!((first.read, first.continued, carry.len()), (1, 0, 1), "read whole, and kept");
        std::fs::write(&transcript, &whole).unwrap();
        let next = sync_once(&home, &db, Some(&mut carry));
        assert_eq!((next.read, next.continued), (1, 1), "read on from where the first stopped");
        let clean = dir.path().join("clean.db");
        sync_once(&home, &clean, None);
        assert_eq!(dump(&db), dump(&clean));
    }

    /// A session read again after more lines writes what they changed, not the session: with
    /// the daemon's carry and without it, the rows written are a few, however many its runs and
    /// items hold, and a thread past its items bound (here 16) writes its new items and deletes
    /// the ones it dropped, not its whole window again; the store is a clean sync's all along.
    #[test]
    fn a_grown_session_writes_only_what_changed() {
        let mut bounded = reader();
        bounded.config.model.items_per_thread = 16;
        for reader in [reader(), bounded] {
            let bound = reader.config.model.items_per_thread;
            let dir = tempfile::tempdir().unwrap();
            let Growing { home, transcript, whole, ends } = Growing::in_dir(dir.path());
            let mut written = ends[ends.len() - 4];
            std::fs::write(&transcript, &whole[..written]).unwrap();
            let (db, plain, mut carry) = (dir.path().join("daemon.db"), dir.path().join("plain.db"), Carry::default());
            let first = sync_with(&reader, &home, &db, Some(&mut carry));
            assert_eq!(sync_with(&reader, &home, &plain, None).rows, first.rows);
            for (step, &end) in ends[ends.len() - 3..].iter().enumerate() {
                let mut file = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
                file.write_all(&whole[written..end]).unwrap();
                drop(file);
                written = end;
                let daemon = sync_with(&reader, &home, &db, Some(&mut carry));
                let again = sync_with(&reader, &home, &plain, None);
                let case = format!("bound {bound}, step {step}");
                assert_eq!((daemon.read, again.read), (1, 1), "{case}");
                assert!(daemon.rows * 10 < first.rows, "{case}: {} rows of {} written again", daemon.rows, first.rows);
                assert_eq!(again.rows, daemon.rows, "{case}");
                let clean = dir.path().join(format!("clean{step}.db"));
                sync_with(&reader, &home, &clean, None);
                assert_eq!(dump(&db), dump(&clean), "{case}");
                assert_eq!(dump(&plain), dump(&clean), "{case}");
                indexes_agree(&db);
                indexes_agree(&plain);
            }
        }
    }

    /// What a team store holds (`dump`), and that every text counts exactly the items that hold
    /// it, none at zero.
    fn team_dump(url: &str) -> String {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let wrong: i64 = client
            .query_one(
                "SELECT count(*) FROM texts t WHERE t.refs <> (SELECT count(*) FROM items i WHERE i.text_id = t.id)
                    OR t.refs <= 0",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(wrong, 0, "texts whose references are not their items'");
        let at = location::Location::Team(url.to_owned());
        Store::open_at(&at, "any").unwrap().backend().dump().unwrap()
    }

    /// The team store writes a session read again as what changed too, and leaves what a replace
    /// leaves: a Claude session grown a line at a time (its first 60 lines, then its last 4,
    /// within its items bound and past a bound of 16, where dropped items are deleted), synced by
    /// the daemon (its carry), by a plain sync, and by two machines into one database (a text
    /// both hold counted twice, given back by one while the other keeps it); at every step each
    /// database is the one a clean sync of the same lines fills, row for row, every text counting
    /// the items that hold it, and the rows written are what the file store counts for the same
    /// sync.
    #[test]
    fn a_grown_session_writes_only_what_changed_in_a_team_store() {
        let pg = super::postgres_support::Postgres::start();
        let mut bounded = reader();
        bounded.config.model.items_per_thread = 16;
        for (case, reader) in [reader(), bounded].iter().enumerate() {
            let bound = reader.config.model.items_per_thread;
            let dir = tempfile::tempdir().unwrap();
            let Growing { home, transcript, whole, ends } = Growing::in_dir(dir.path());
            let mut written = ends[6];
            std::fs::write(&transcript, &whole[..written]).unwrap();
            let team = |name: &str| pg.database(&format!("{name}{case}"));
            let (daemon_db, plain_db, fleet_db, clean_db) =
                (team("daemon"), team("plain"), team("fleet"), team("clean"));
            // Its schema made, for the truncate that empties it before each clean sync.
            crate::store::postgres::open(&clean_db).unwrap();
            let file = location::Location::File(dir.path().join("file.db"));
            let at = |url: &str| location::Location::Team(url.to_owned());
            let (daemon_at, plain_at, fleet_at) = (at(&daemon_db), at(&plain_db), at(&fleet_db));
            let (mut carry, mut fleet_carry) = (Carry::default(), Carry::default());
            let mut sync_all = |step: &str| {
                let daemon = sync_at(reader, &home, &daemon_at, "alpha", Some(&mut carry));
                let plain = sync_at(reader, &home, &plain_at, "alpha", None);
                let local = sync_at(reader, &home, &file, "", None);
                sync_at(reader, &home, &fleet_at, "alpha", Some(&mut fleet_carry));
                sync_at(reader, &home, &fleet_at, "beta", None);
                assert_eq!((daemon.read, plain.read), (1, 1), "{step}");
                assert_eq!((daemon.rows, plain.rows), (local.rows, local.rows), "{step}");
                daemon.rows
            };
            sync_all(&format!("bound {bound}, first"));
            let steps = ends[7..60].iter().chain(&ends[ends.len() - 4..]);
            for (step, &end) in steps.enumerate() {
                let mut f = std::fs::OpenOptions::new().append(true).open(&transcript).unwrap();
                f.write_all(&whole[written..end]).unwrap();
                drop(f);
                let one_line = whole[written..end].iter().filter(|&&b| b == b'\n').count() == 1;
                written = end;
                let case = format!(
                    "bound {bound}, step {step} (line {})",
                    whole[..end].iter().filter(|&&b| b == b'\n').count()
                );
                let rows = sync_all(&case);
                let mut client = postgres::Client::connect(&clean_db, postgres::NoTls).unwrap();
                client.batch_execute("TRUNCATE meta, acts, sources, texts CASCADE").unwrap();
                let clean_at = at(&clean_db);
                let whole_rows = sync_at(reader, &home, &clean_at, "alpha", None).rows;
                let clean = team_dump(&clean_db);
                assert_eq!(team_dump(&daemon_db), clean, "{case}");
                assert_eq!(team_dump(&plain_db), clean, "{case}");
                sync_at(reader, &home, &clean_at, "beta", None);
                assert_eq!(team_dump(&fleet_db), team_dump(&clean_db), "{case}");
                if one_line && end > ends[100] {
                    assert!(rows * 10 < whole_rows, "{case}: {rows} rows of {whole_rows} written again");
                }
            }
        }
    }
}
