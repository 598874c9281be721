//! `swarmtop serve`: the bridge daemon (`crate::serve`), with what it renders from the store
//! made here, as `history`, `report` and `search` make it.
//!
//! With a team store (`--store postgres://…`) the daemon keeps this machine's own file as well:
//! each turn syncs the file, then the database; a database that is down fails its part (counted,
//! retried the next turn) while the file goes on, and the queries are answered from the file until
//! the database is back. The sync reads the agents' files, so the database catches up by itself:
//! its last finished look is older, and everything changed since is read again and replaces what
//! it held, once.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use color_eyre::eyre::{Result, WrapErr, eyre};

use super::cli::{FilterOpts, GlobalOpts, ServeArgs, StoreOpts};
use super::terminal::QuitSignals;
use crate::pipeline::Config;
use crate::serve::http::FEED_EVENTS;
use crate::serve::{Api, SyncFigures};
use crate::source::agents::Env;
use crate::source::census::{self, Options, window};
use crate::source::otlp::trust::Token;
use crate::source::remote;
use crate::store::{Carry, Location, Store, Synced, location};
use crate::store::{Lookup, report};

/// Where the daemon keeps runs: this machine's file, and the team's database if there is one.
struct Stores {
    local: PathBuf,
    team: Option<(Location, String)>,
}

impl Stores {
    fn of(args: &ServeArgs) -> Result<Self> {
        let env = Env::from_process();
        match location::resolve(args.store.store.as_deref(), &env)? {
            Location::File(local) => Ok(Self { local, team: None }),
            team @ Location::Team(_) => Ok(Self {
                local: location::local(&env)?,
                team: Some((team, location::machine(args.machine.name.as_deref(), &env)?)),
            }),
        }
    }

    /// The store queries are answered from: the team's, or this machine's file while it is down.
    fn read(&self) -> Result<Store> {
        if let Some((team, machine)) = &self.team {
            match Store::open_at(team, machine) {
                Ok(store) => return Ok(store),
                Err(e) => {
                    let local = self.shown();
                    tracing::warn!("serve: the team store is unavailable, answering from {local}: {e:#}");
                }
            }
        }
        Store::open(&self.local)
    }

    fn shown(&self) -> String {
        Location::File(self.local.clone()).shown()
    }
}

/// Hits `/api/search` returns at most, unless `limit` says fewer.
const SEARCH_LIMIT: usize = 50;

struct Commands {
    store: StoreOpts,
    stores: Stores,
    config: Config,
    global: GlobalOpts,
    /// The growing sessions kept between syncs, read on from where the last one stopped (one for
    /// both stores: it keeps what the files hold, not what a store does).
    carry: std::sync::Mutex<Carry>,
}

impl Commands {
    fn filter(&self, query: &[(String, String)]) -> FilterOpts {
        let get = |key: &str| query.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        FilterOpts {
            since: get("since"),
            until: get("until"),
            tz: get("tz"),
            agent: get("agent"),
            project: get("project"),
            machine: get("machine"),
            no_sync: true,
            store: self.store.clone(),
        }
    }
}

impl Api for Commands {
    fn sessions(&self, query: &[(String, String)]) -> Result<String> {
        let (filter, tz) = super::report::filter(&self.filter(query))?;
        let store = self.stores.read()?;
        Ok(super::history::render_json(&store.backend().sessions(&filter)?, &tz))
    }

    fn session(&self, id: &str) -> Result<Option<String>> {
        let store = self.stores.read()?;
        match store.backend().session(id)? {
            Lookup::Found(view) => Ok(Some(view.stats_json)),
            Lookup::Missing => Ok(None),
            Lookup::Ambiguous(ids) => Err(eyre!("{} sessions start so", ids.len())),
        }
    }

    fn report(&self, kind: &str, query: &[(String, String)]) -> Result<Option<String>> {
        let Some(kind) = report::Kind::of(kind) else { return Ok(None) };
        let (filter, tz) = super::report::filter(&self.filter(query))?;
        let store = self.stores.read()?;
        let report = report::report(&store, kind, &filter, &tz)?;
        Ok(Some(super::report::render_json(&report, kind, &tz)))
    }

    fn search(&self, query: &[(String, String)]) -> Result<String> {
        let (filter, tz) = super::report::filter(&self.filter(query))?;
        let text = query.iter().find(|(k, _)| k == "q").map(|(_, v)| v.as_str()).unwrap_or_default();
        let words = super::search::words(text).ok_or_else(|| eyre!("search: give words to find (q=)"))?;
        let limit = query
            .iter()
            .find(|(k, _)| k == "limit")
            .and_then(|(_, v)| v.parse().ok())
            .map_or(SEARCH_LIMIT, |n: usize| n.min(SEARCH_LIMIT));
        let store = self.stores.read()?;
        Ok(super::search::render_json(&store.backend().search(&words, &filter, limit)?, &tz))
    }

    fn sync(&self, full: bool) -> Result<SyncFigures> {
        let mut carry = self.carry.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut up_to_date =
            |s: &mut Store| super::sync::bring_up_to_date(s, self.config.clone(), &self.global, full, &mut carry);
        let local = Store::open(&self.stores.local).and_then(|mut s| up_to_date(&mut s));
        let Some((team, machine)) = &self.stores.team else { return local.map(|s| figures(&[&s])) };
        // The team's part is tried whatever the file's did: each catches up on its own.
        let shared = Store::open_at(team, machine)
            .and_then(|mut s| up_to_date(&mut s))
            .map_err(|e| e.wrap_err("the team store"));
        match (local, shared) {
            (Ok(a), Ok(b)) => Ok(figures(&[&a, &b])),
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(a.wrap_err(format!("{b:#}"))),
        }
    }
}

/// What the syncs of one turn (the file's, and the team's) read and wrote, together.
fn figures(synced: &[&Synced]) -> SyncFigures {
    synced.iter().fold(SyncFigures::default(), |f, s| SyncFigures {
        read: f.read + s.read,
        continued: f.continued + s.continued,
        bytes_read: f.bytes_read + s.bytes_read,
        rows: f.rows + s.rows,
    })
}

/// `$XDG_DATA_HOME/swarmtop/serve-token`, else `~/.local/share/swarmtop/serve-token`.
fn token_path() -> Option<PathBuf> {
    let otlp = crate::source::otlp::trust::default_token_path()?;
    Some(otlp.with_file_name("serve-token"))
}

/// Beyond loopback a token is made if there is none (and shown once); on loopback the one kept
/// is used if there is one, for the other users of this machine.
fn token(listen: SocketAddr) -> Result<Option<Token>> {
    let path = token_path().ok_or_else(|| eyre!("no home folder to keep the token in"))?;
    if listen.ip().is_loopback() && !path.exists() {
        return Ok(None);
    }
    let (token, new) = Token::load_or_create(&path).wrap_err("the serve token")?;
    if new {
        eprintln!(
            "swarmtop serve: clients other than yours must send `Authorization: Bearer {}` (kept in {})",
            token.secret(),
            crate::wire::Clean::path(token.path())
        );
    }
    Ok(Some(token))
}

/// `--otlp [URL]`; without it, the collector `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` names, if set.
fn export_request(args: &ServeArgs) -> Option<crate::export::Request> {
    let url = args.otlp.clone().or_else(|| {
        ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
            .into_iter()
            .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
            .then(String::new)
    })?;
    Some(crate::export::Request { url: (!url.is_empty()).then_some(url), file: None })
}

/// A systemd user unit that runs this swarmtop as the daemon.
fn unit(args: &ServeArgs) -> String {
    let exe = std::env::current_exe().map_or_else(|_| "swarmtop".to_owned(), |p| p.display().to_string());
    format!(
        "# ~/.config/systemd/user/swarmtop.service, then: systemctl --user enable --now swarmtop\n\
         [Unit]\nDescription=swarmtop serve: agent sessions, runs and spend over HTTP\n\n\
         [Service]\nExecStart={exe} serve --listen {}\nRestart=on-failure\n\n\
         [Install]\nWantedBy=default.target\n",
        args.listen
    )
}

/// mimalloc's setting for how long a freed span stays committed before it goes back to the kernel.
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// The daemon runs with mimalloc's purge delay at 0 (unless the environment sets one): it execs
/// itself again with it, as mimalloc reads its settings from the environment at start only (and
/// setting them through its C API takes `unsafe`). With the delay, a freed span goes back only
/// when the thread that allocated it allocates again past the delay; the threads that read a
/// history in chunks of a MiB (the machine source, each feed's own, which ends with its client)
/// then go quiet or end, and what they read stayed committed: a 100 MB session read at start left
/// the daemon at 79 MiB (17 with the delay at 0), and six feeds of it at 192 MiB (21 after four;
/// `serve_soak`'s `feeds_give_back_what_they_read`). An exec that fails runs on as it is.
fn purge_at_once() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    // /proc/self/exe: this very binary, even if the file was replaced since.
    let e = std::process::Command::new("/proc/self/exe").arg0(arg0).args(args).env(PURGE_DELAY, "0").exec();
    tracing::warn!("serve: running with mimalloc's purge delay (the exec to set it to 0 failed: {e})");
}

pub fn run(args: &ServeArgs, config: Config, global: &GlobalOpts) -> Result<ExitCode> {
    if args.print_unit {
        super::print(unit(args).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    purge_at_once();
    let token = token(args.listen)?;
    let api: Arc<dyn Api> = Arc::new(Commands {
        store: args.store.clone(),
        stores: Stores::of(args)?,
        config: config.clone(),
        global: global.clone(),
        carry: std::sync::Mutex::default(),
    });
    let opts = crate::serve::Options {
        listen: args.listen,
        token,
        sync_every: std::time::Duration::from_millis(args.sync_every),
        keep_events: usize::try_from(args.keep_events).unwrap_or(usize::MAX),
        export: super::export::start_live(export_request(args))?,
        feed: Some(crate::serve::http::Feed {
            spawn: Arc::new(|w: remote::Window| {
                census::machine::spawn_holding(Options::machine(window(w.since_ms, w.all)), FEED_EVENTS)
            }),
            window: remote::Window { since_ms: args.window.since, all: args.window.all },
        }),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().wrap_err("starting the runtime")?;
    let stopped = runtime.block_on(async {
        let mut signals = QuitSignals::new()?;
        let events = census::machine::spawn(Options::machine(window(args.window.since, args.window.all)));
        crate::serve::run(
            opts,
            api,
            config,
            events,
            async move {
                signals.recv().await;
            },
            |addr| {
                println!("swarmtop serve: http://{addr}");
            },
        )
        .await
        .wrap_err_with(|| format!("serving on {}", args.listen))
    })?;
    if let Some(export) = &stopped.export {
        eprintln!("swarmtop serve: OTLP export: {export}");
    }
    eprintln!("swarmtop serve: stopped; {}", stopped.counters.describe());
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(ExitCode::SUCCESS)
}
