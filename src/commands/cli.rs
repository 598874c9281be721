//! The command line of design.md: one grammar for every feature.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Global options may stand before a subcommand (`swarmtop --log F tree X`): subcommand names are
/// looked for after options too. A name after an input is an input (`swarmtop a.ndjson tree`).
#[derive(Debug, Parser)]
#[command(
    name = "swarmtop",
    version,
    about = "The htop of agent swarms: watch live sub-agent trees, their output, tokens and cost"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// What to watch: recordings, transcripts and rollouts (files, folders, .gz), an OpenCode store
    /// or server; "-" or a piped stdin is a live stream. None on a terminal: every session on this
    /// machine.
    pub inputs: Vec<PathBuf>,

    #[command(flatten)]
    pub replay: ReplayOpts,
    /// Keep reading files that are still growing.
    #[arg(long)]
    pub follow: bool,
    #[command(flatten)]
    pub screen: ScreenOpts,
    #[command(flatten)]
    pub record: RecordOpt,

    #[command(flatten)]
    pub window: WindowOpts,

    #[command(flatten)]
    pub remote: RemoteOpts,

    #[command(flatten)]
    pub global: GlobalOpts,
}

/// The machine view of another machine, from its `swarmtop serve`.
#[derive(Debug, Clone, Args, Default)]
pub struct RemoteOpts {
    /// Show the machine view of this `swarmtop serve` (http://HOST:PORT; on loopback, e.g. through
    /// an SSH tunnel, or with its token). --since, --all and --keep apply to its sessions.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The file that holds the server's token (its serve-token), which it asks of anyone but its
    /// own user on its own machine [else: $SWARMTOP_SERVER_TOKEN].
    #[arg(long, value_name = "FILE", requires = "server")]
    pub token_file: Option<PathBuf>,
}

/// Which sessions the machine view and `ps` show.
#[derive(Debug, Clone, Args)]
pub struct WindowOpts {
    /// Sessions active within this long (e.g. 30m, 2h, 1d).
    #[arg(long, default_value = "30m", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub since: u64,
    /// Every session found, however old.
    #[arg(long)]
    pub all: bool,
    /// Machine view: how long an ended session stays on screen (dimmed) after its last activity
    /// [default: the --since window; with --all, for ever].
    #[arg(long, value_parser = parse_duration_ms, value_name = "DURATION")]
    pub keep: Option<u64>,
}

impl WindowOpts {
    /// How long the machine view keeps an ended session (`None`: for ever).
    pub fn keep_ms(&self) -> Option<u64> {
        self.keep.or((!self.all).then_some(self.since))
    }
}

#[derive(Debug, Clone, Args, Default)]
pub struct GlobalOpts {
    /// Price table (TOML) that overrides or extends the built-in one.
    #[arg(long, global = true, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Write diagnostics logs to this file (never to the terminal).
    #[arg(long, global = true, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// How a recording is played.
#[derive(Debug, Clone, Args)]
pub struct ReplayOpts {
    /// Replay speed: 1, 2, 5, 10, 50 (times the recorded pace) or max.
    #[arg(long, default_value = "1", value_parser = parse_speed)]
    pub speed: Speed,
    /// Longest idle gap replayed as it was (e.g. 2s, 500ms); longer gaps are shortened to it.
    #[arg(long, default_value = "2s", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub max_gap: u64,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        Self { speed: Speed::Times(1), max_gap: crate::source::replay::DEFAULT_MAX_GAP_MS }
    }
}

/// What every monitor's screen takes.
#[derive(Debug, Clone, Args)]
pub struct ScreenOpts {
    /// Most frames drawn per second.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=240))]
    pub fps: u32,
    /// Quiet time after which a running agent is shown as stalled (e.g. 60s).
    #[arg(long, default_value = "60s", value_parser = parse_positive_ms, value_name = "DURATION")]
    pub stall: u64,
    /// Colour theme.
    #[arg(long, value_enum, default_value_t = Theme::Dark)]
    pub theme: Theme,
    /// Export spawn trees as traces to this OTLP/HTTP collector while watching (no URL:
    /// $OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else http://localhost:4318). On `listen`, an
    /// address without `http://` receives OTLP instead.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "", action = clap::ArgAction::Append)]
    pub otlp: Vec<String>,
    /// When an agent needs approval or input, fails or stalls, or a swarm finishes: ring the
    /// terminal's bell and raise a desktop notification (OSC 9, or OSC 777).
    #[arg(long, env = "SWARMTOP_NOTIFY", value_parser = clap::builder::FalseyValueParser::new())]
    pub notify: bool,
    /// Run this shell command for each such event, with the event as JSON on stdin (notify-send,
    /// ntfy, a webhook with curl); rate-limited, never waited for.
    #[arg(long, env = "SWARMTOP_NOTIFY_CMD", value_name = "CMD")]
    pub notify_cmd: Option<String>,
    /// The run store the history view (H) reads.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// `--record`, for the monitors of a live source.
#[derive(Debug, Clone, Args)]
pub struct RecordOpt {
    /// Record what a live source receives into this bundle.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

/// Everything a monitor runs with: what its command line gave, the rest as by default.
#[derive(Debug, Clone)]
pub struct MonitorOpts {
    pub speed: Speed,
    pub max_gap: u64,
    pub follow: bool,
    pub fps: u32,
    pub stall: u64,
    pub record: Option<PathBuf>,
    pub theme: Theme,
    pub otlp: Vec<String>,
    pub notify: bool,
    pub notify_cmd: Option<String>,
    pub store: StoreOpts,
}

impl MonitorOpts {
    pub fn new(replay: &ReplayOpts, follow: bool, screen: &ScreenOpts, record: Option<&RecordOpt>) -> Self {
        Self {
            speed: replay.speed,
            max_gap: replay.max_gap,
            follow,
            fps: screen.fps,
            stall: screen.stall,
            record: record.and_then(|r| r.record.clone()),
            theme: screen.theme,
            otlp: screen.otlp.clone(),
            notify: screen.notify,
            notify_cmd: screen.notify_cmd.clone(),
            store: screen.store.clone(),
        }
    }

    /// A live source's monitor: nothing to replay, nothing to follow.
    pub fn live(screen: &ScreenOpts, record: &RecordOpt) -> Self {
        Self::new(&ReplayOpts::default(), false, screen, Some(record))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Theme {
    Dark,
    Light,
}

/// Replay pacing: a multiple of recorded time, or as fast as ingest allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    Times(u32),
    Max,
}

impl Speed {
    /// What `--speed` takes: the steps `+` and `-` move between on screen.
    pub const ALLOWED: [Speed; 6] =
        [Speed::Times(1), Speed::Times(2), Speed::Times(5), Speed::Times(10), Speed::Times(50), Speed::Max];

    fn allowed_words() -> String {
        let words: Vec<String> = Self::ALLOWED
            .iter()
            .map(|s| match s {
                Speed::Times(n) => n.to_string(),
                Speed::Max => "max".to_owned(),
            })
            .collect();
        words.join(", ")
    }
}

fn parse_speed(s: &str) -> Result<Speed, String> {
    let speed = match s {
        "max" => Some(Speed::Max),
        _ => s.trim_end_matches(['x', '×']).parse::<u32>().ok().map(Speed::Times),
    };
    match speed {
        Some(speed) if Speed::ALLOWED.contains(&speed) => Ok(speed),
        _ => Err(format!("{s:?} is not a speed: use {}", Speed::allowed_words())),
    }
}

/// Durations as `500ms`, `2s`, `1m`; a bare number is seconds.
pub fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, unit) = s.find(|c: char| !c.is_ascii_digit()).map_or((s, ""), |i| s.split_at(i));
    let n: u64 = digits.parse().map_err(|_| format!("not a duration: {s:?} (try 500ms, 2s, 1m)"))?;
    let factor = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("unknown unit in {s:?} (use ms, s, m, h or d)")),
    };
    n.checked_mul(factor)
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or_else(|| format!("{s:?} is too long (at most 100000d)"))
}

/// Longest duration an option takes: far beyond any use, well within every clock's range.
const MAX_DURATION_MS: u64 = 100_000 * 86_400_000;

/// A duration that must be more than nothing (`--stall 0` would call every agent stalled).
fn parse_positive_ms(s: &str) -> Result<u64, String> {
    match parse_duration_ms(s)? {
        0 => Err(format!("{s:?} is no time at all: give a duration above zero (e.g. 60s)")),
        ms => Ok(ms),
    }
}

/// A moment of stream time: RFC 3339 (`2026-12-02T05:11:30Z`, `…+01:00`) or unix milliseconds.
pub fn parse_time_ms(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| format!("not a time: {s:?} (unix milliseconds out of range)"));
    }
    s.parse::<jiff::Timestamp>().map(jiff::Timestamp::as_millisecond).map_err(|_| {
        format!("not a time: {s:?} (try 2026-12-02T05:11:30Z, 2026-12-02T06:11:30+01:00 or unix ms 1796188290000)")
    })
}

/// `--until TIME` of the headless commands.
#[derive(Debug, Clone, Copy, Args, Default)]
pub struct UntilOpts {
    /// Show the recording as of this stream time, as a live view showed it then (RFC 3339, e.g.
    /// 2026-12-02T05:11:30Z, or unix milliseconds).
    #[arg(long, value_parser = parse_time_ms, value_name = "TIME")]
    pub until: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play the built-in demo recording.
    Demo(DemoArgs),
    /// List the agent sessions on this machine (what the machine view shows), like `ps`.
    Ps(PsArgs),
    /// Print the routing figures and the tree (routing.md §7).
    Stats(StatsArgs),
    /// Print the routed stream as NDJSON.
    Route(RouteArgs),
    /// Print the spawn tree as indented text.
    Tree(TreeArgs),
    /// Run CMD as a transparent stdio proxy: record, forward, and publish to monitors.
    Tee(TeeArgs),
    /// Monitor a running tee through its socket.
    Attach(AttachArgs),
    /// Accept producers that push NDJSON lines into a socket, and monitor them.
    Listen(ListenArgs),
    /// Send spawn trees to an OpenTelemetry collector as traces (or write them as OTLP/JSON lines).
    Export(ExportArgs),
    /// Claude Code PreToolUse hook: refuse a sub-agent spawn that would pass a limit.
    Guard(GuardArgs),
    /// Stop one agent (or its subtree) through the tee, server or process that carries it.
    Interrupt(InterruptArgs),
    /// Index every agent session on this machine into the run store.
    Sync(SyncArgs),
    /// Past root sessions from the run store, newest first; or one session's tree.
    History(HistoryArgs),
    /// Spend by day, week, month, session, project, model or kind of agent, sub-agents apart.
    Report(ReportArgs),
    /// Full-text search over the briefs, answers and items of every stored run.
    Search(SearchArgs),
    /// Run as a daemon: follow every session, keep the run store up to date, and serve sessions,
    /// reports, search and live events over HTTP (loopback only unless given a token).
    Serve(ServeArgs),
}

/// Where the run store is.
#[derive(Debug, Clone, Args)]
pub struct StoreOpts {
    /// The run store: a file, or a team's PostgreSQL database (postgres://USER@HOST/DB) [default:
    /// $XDG_DATA_HOME/swarmtop/history.db, else ~/.local/share/swarmtop/history.db].
    #[arg(long, env = "SWARMTOP_STORE", value_name = "PATH|URL")]
    pub store: Option<String>,
}

/// Which machine this is, in a team store.
#[derive(Debug, Clone, Args)]
pub struct MachineOpts {
    /// This machine's name in a team store [default: $SWARMTOP_MACHINE, else the host name].
    #[arg(long = "machine", value_name = "NAME")]
    pub name: Option<String>,
}

/// Which runs a query of the run store is about.
#[derive(Debug, Clone, Args)]
pub struct FilterOpts {
    /// From this date (2026-02-12 or 20260212), time (RFC 3339), or this long ago (7d, 12h, 2w).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Until this date (inclusive), time, or this long ago.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Time zone of dates, days, weeks and months (an IANA name: Europe/Paris, UTC) [default: local].
    #[arg(long, value_name = "TZ")]
    pub tz: Option<String>,
    /// Only this agent's sessions (claude, codex, opencode).
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Only sessions whose project path contains this.
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// Only this machine's sessions (a team store: postgres://…); with --prune, whose to remove.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Answer from the store as it is, without syncing it first.
    #[arg(long)]
    pub no_sync: bool,
    #[command(flatten)]
    pub store: StoreOpts,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// What was done, as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// No progress bar, no summary.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreOpts,
    #[command(flatten)]
    pub machine: MachineOpts,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// A session's id (or the start of it): print its tree from the store, as `tree` does.
    pub session: Option<String>,
    /// One JSON object instead of a table (with SESSION: the `stats --json` of its files).
    #[arg(long)]
    pub json: bool,
    /// Remove the sessions that ended before --before, their runs and the acts on them.
    #[arg(long, requires = "before", conflicts_with = "session")]
    pub prune: bool,
    /// With --prune: a date (or time, or how long ago).
    #[arg(long, value_name = "WHEN", requires = "prune")]
    pub before: Option<String>,
    #[command(flatten)]
    pub filter: FilterOpts,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// How rows are grouped.
    #[arg(value_parser = report_kind())]
    pub kind: crate::store::report::Kind,
    /// One JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub filter: FilterOpts,
}

fn report_kind() -> impl clap::builder::TypedValueParser<Value = crate::store::report::Kind> {
    use crate::store::report::Kind;
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Kind::ALL.map(Kind::name))
        .map(|name: String| Kind::of(&name).expect("a name the parser offered"))
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words to find (every one must match).
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
    /// One JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Most hits shown.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,
    #[command(flatten)]
    pub filter: FilterOpts,
}

#[derive(Debug, Args)]
pub struct InterruptArgs {
    /// A thread or session id, a unique prefix (or the short id the tree shows), or an agent's name.
    pub target: String,
    /// Also stop every agent below it, the deepest first.
    #[arg(long)]
    pub subtree: bool,
    /// The tee carrying the session (default: every running tee is asked).
    #[arg(long, value_name = "PATH", conflicts_with = "server")]
    pub socket: Option<PathBuf>,
    /// The OpenCode server carrying the session, http://HOST:PORT (default: every one running).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// How long to wait for the agents to confirm they stopped.
    #[arg(long, default_value = "30s", value_parser = parse_wait, value_name = "DURATION")]
    pub timeout: std::time::Duration,
    /// A whole session's process: how long after SIGINT before SIGTERM, and after it before giving up.
    #[arg(long, default_value = "5s", value_parser = parse_wait, value_name = "DURATION")]
    pub grace: std::time::Duration,
    /// Do not ask before signalling a whole session's process.
    #[arg(long, short)]
    pub yes: bool,
}

/// Limits on a swarm: how deep, how many children per agent, how much the whole tree may spend.
#[derive(Debug, Clone, Args, Default)]
pub struct GuardOpts {
    /// Deepest a sub-agent may be (the session's own children are depth 1).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Most sub-agents one agent may spawn.
    #[arg(long, value_name = "N")]
    pub max_children: Option<u32>,
    /// Most a session's whole tree may spend, in US dollars.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost: Option<crate::model::prices::Pico>,
}

impl GuardOpts {
    pub fn limits(&self) -> crate::act::Limits {
        crate::act::Limits { max_depth: self.max_depth, max_children: self.max_children, max_cost: self.max_cost }
    }
}

fn parse_usd(s: &str) -> Result<crate::model::prices::Pico, String> {
    crate::model::prices::Pico::parse_usd(s).ok_or_else(|| format!("not an amount of US dollars: {s:?} (try 0.50)"))
}

#[derive(Debug, Args)]
pub struct GuardArgs {
    #[command(flatten)]
    pub limits: GuardOpts,
    /// Add this guard, with these limits, to Claude Code's settings.json (again: replace it).
    #[arg(long, conflicts_with = "uninstall")]
    pub install: bool,
    /// Remove the guard from Claude Code's settings.json (only its own entry).
    #[arg(long, conflicts_with_all = ["max_depth", "max_children", "max_cost"])]
    pub uninstall: bool,
    #[command(flatten)]
    pub scope: ScopeOpts,
    /// Guard the sessions of the agent server at http://HOST:PORT (`opencode serve`) instead: watch
    /// it until it ends, aborting each sub-agent session past a limit through the server's API.
    #[arg(long, value_name = "URL", conflicts_with_all = ["install", "uninstall"])]
    pub server: Option<String>,
}

/// Which Claude Code settings.json the guard goes into.
#[derive(Debug, Args)]
pub struct ScopeOpts {
    /// The user's settings ($CLAUDE_CONFIG_DIR or ~/.claude/settings.json; the default).
    #[arg(long, conflicts_with = "project")]
    pub user: bool,
    /// This project's settings (./.claude/settings.json).
    #[arg(long)]
    pub project: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// OTLP/HTTP collector (default: $OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else http://localhost:4318).
    #[arg(long, value_name = "URL", conflicts_with = "otlp_file")]
    pub otlp: Option<String>,
    /// Write OTLP/JSON lines (one export request per line) to this file instead.
    #[arg(long, value_name = "PATH")]
    pub otlp_file: Option<PathBuf>,
    /// How long to keep retrying while the collector is down (e.g. 30s).
    #[arg(long, default_value = "30s", value_parser = parse_wait, value_name = "DURATION")]
    pub wait: std::time::Duration,
    /// Recordings, transcripts, rollouts or OpenCode stores (files, folders, .gz; "-" is stdin).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

fn parse_wait(s: &str) -> Result<std::time::Duration, String> {
    parse_duration_ms(s).map(std::time::Duration::from_millis)
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub replay: ReplayOpts,
    #[command(flatten)]
    pub screen: ScreenOpts,
}

#[derive(Debug, Args)]
pub struct PsArgs {
    /// One JSON array of sessions instead of a table (every field, whatever -o says).
    #[arg(long)]
    pub json: bool,
    /// Order rows by these columns, as ps reads them: -KEY largest or newest first, KEY smallest
    /// first; later keys break ties [default: -last, the newest activity first]. Keys: agent, id,
    /// project, source, state, last, pid, cpu, mem, agents, tokens, cost, name.
    #[arg(long, value_name = "KEYS", value_parser = super::ps::columns::parse_sort, allow_hyphen_values = true)]
    pub sort: Option<super::ps::columns::SortKeys>,
    /// The table's columns, in order (e.g. -o agent,state,cost,name) [default: every one but
    /// source]. Names as for --sort.
    #[arg(short = 'o', long = "output", value_name = "COLS", value_parser = super::ps::columns::parse_columns)]
    pub columns: Option<super::ps::columns::Columns>,
    #[command(flatten)]
    pub window: WindowOpts,
    #[command(flatten)]
    pub until: UntilOpts,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// One JSON object instead of a table and a tree.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub until: UntilOpts,
    /// Recordings, transcripts, rollouts or OpenCode stores (files, folders, .gz; "-" is stdin).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RouteArgs {
    /// Also print suppressed, global, control and malformed lines.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub until: UntilOpts,
    /// Recordings, transcripts, rollouts or OpenCode stores (files, folders, .gz; "-" is stdin).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    #[command(flatten)]
    pub until: UntilOpts,
    /// Recordings, transcripts, rollouts or OpenCode stores (files, folders, .gz; "-" is stdin).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TeeArgs {
    /// Socket path for monitors (default: $XDG_RUNTIME_DIR/swarmtop/tee-<pid>.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Recording file (default: $XDG_STATE_HOME/swarmtop/recordings/<time>-tee-<pid>.ndjson).
    #[arg(long, value_name = "FILE", conflicts_with = "no_record")]
    pub record: Option<PathBuf>,
    /// Do not write a recording.
    #[arg(long)]
    pub no_record: bool,
    /// Export the session's spawn tree as traces to this OTLP/HTTP collector (no URL:
    /// $OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else http://localhost:4318).
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub otlp: Option<String>,
    /// Bytes queued for one monitor before it is dropped as lagging (tests exercise lagging).
    #[arg(long, hide = true, value_name = "BYTES")]
    pub monitor_queue_bytes: Option<usize>,
    /// Interrupt a child that passes one of these limits.
    #[command(flatten)]
    pub guards: GuardOpts,
    /// The command to proxy, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The tee's socket; without it, running tees are listed (newest first).
    pub socket: Option<PathBuf>,
    /// No screen: print `stats --json` when the stream ends or on Ctrl-C.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub screen: ScreenOpts,
    #[command(flatten)]
    pub record: RecordOpt,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to serve on; anything but loopback also needs the token (made and shown once).
    #[arg(long, default_value = "127.0.0.1:7077", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// How often the run store is brought up to date while sessions change (e.g. 5s).
    #[arg(long, default_value = "5s", value_parser = parse_positive_ms, value_name = "DURATION")]
    pub sync_every: u64,
    /// Events kept for clients that come back (`Last-Event-ID`) or fall behind; a client further
    /// behind is told to resync. Also bounded to 12 MiB.
    #[arg(long, default_value_t = crate::serve::bus::RING as u64, value_parser = clap::value_parser!(u64).range(1..), value_name = "N")]
    pub keep_events: u64,
    /// Print a systemd user unit that runs this daemon, and exit.
    #[arg(long)]
    pub print_unit: bool,
    #[command(flatten)]
    pub window: WindowOpts,
    // A team store (postgres://…) is written beside this machine's own file, which answers while
    // the database is down.
    #[command(flatten)]
    pub store: StoreOpts,
    #[command(flatten)]
    pub machine: MachineOpts,
    /// Export the spawn trees it follows as traces to this OTLP/HTTP collector (no URL:
    /// $OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else http://localhost:4318); without --otlp, to the
    /// collector those variables name, when they are set.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub otlp: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Socket path to bind (default: $XDG_RUNTIME_DIR/swarmtop/listen-<pid>.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// No screen: print `stats --json` on Ctrl-C.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub screen: ScreenOpts,
    #[command(flatten)]
    pub record: RecordOpt,
}
