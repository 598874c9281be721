//! The thin edges: parse the command line, run the shared pipeline, print or draw.

pub mod acting;
pub mod attach;
pub mod cli;
pub mod export;
pub mod guard;
pub mod history;
mod ingest;
pub mod interrupt;
pub mod listen;
mod live;
pub mod monitor;
pub mod past;
pub mod ps;
pub mod report;
pub mod route;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod stats;
pub mod sync;
pub mod table;
pub mod tee;
mod terminal;
mod traffic;
pub mod tree;

use std::process::ExitCode;

use clap::Parser;
use color_eyre::eyre::{Result, WrapErr};

use crate::wire::sanitize_line;

use self::cli::MonitorOpts;
pub use self::cli::{Cli, Command};
pub use self::ingest::{config, ingest, ingest_partial, ingest_partial_on, ingest_timed};
pub use self::monitor::Follow;
pub use self::past::stored;

/// Runs swarmtop; exit status 0 on success, 1 on a runtime error (one line), 2 on a usage error.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(subcommand_first(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let _log_guard = init_logging(cli.global.log.as_deref());
    match run(cli) {
        Ok(code) => code,
        // `swarmtop tree X | head -1`: the reader has what it wanted.
        Err(e) if e.downcast_ref::<StdoutClosed>().is_some() => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:?}");
            eprintln!("swarmtop: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// `swarmtop --speed 10 demo`: options written before a subcommand's name are read as the
/// subcommand's, as if written after it (parsed where they stand, they were the bare monitor's,
/// which a subcommand never reads, and were lost); `swarmtop --json stats X` works as well. An
/// option the subcommand does not take is then a usage error naming it, not ignored. The name is
/// found as clap finds it: the first word that is neither an option nor an option's value (an
/// option the bare command does not know is taken for a flag); a word that is not a
/// subcommand's name is an input, and nothing moves.
pub fn subcommand_first(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory as _;
    // A first word that is no option is where clap looks for a subcommand already: nothing moves,
    // and the command is not built for nothing (building it was a tenth of a repeated `report`).
    if args.get(1).and_then(|w| w.to_str()).is_none_or(|w| !w.starts_with('-') || w == "-") {
        return args;
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut i = 1;
    while let Some(word) = args.get(i).and_then(|w| w.to_str()) {
        if word == "--" {
            return args;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, inline) = long.split_once('=').map_or((long, false), |(n, _)| (n, true));
            let arg = cmd.get_arguments().find(|a| a.get_long() == Some(name));
            let takes = arg.and_then(clap::Arg::get_num_args).is_some_and(|n| n.takes_values());
            // An optional value (`--otlp [URL]`) is the next word too when it is not an option.
            let next_is_value = args.get(i + 1).and_then(|w| w.to_str()).is_some_and(|w| !w.starts_with('-'));
            i += if takes && !inline && next_is_value { 2 } else { 1 };
            continue;
        }
        if word.starts_with('-') && word != "-" {
            i += 1;
            continue;
        }
        if i > 1 && cmd.find_subcommand(word).is_some() {
            let name = args.remove(i);
            args.insert(1, name);
        }
        return args;
    }
    args
}

/// The error and its causes on one line: `reading x.ndjson: No such file or directory`. Messages
/// carry names from the input and the file system (paths, socket names): sanitised, since a name
/// can hold escape sequences or a newline that forges a second message.
fn one_line(e: &color_eyre::Report) -> String {
    let text = e.chain().map(ToString::to_string).collect::<Vec<_>>().join(": ");
    sanitize_line(&text).as_str().to_owned()
}

/// Whoever reads our standard output has closed it (`| head -1`): a normal end, not an error.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Maps a failed write to stdout: a closed pipe becomes [`StdoutClosed`].
pub(crate) fn stdout_error(e: std::io::Error) -> color_eyre::Report {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        color_eyre::Report::new(StdoutClosed)
    } else {
        color_eyre::Report::new(e).wrap_err("writing to standard output")
    }
}

/// Writes all of `text` to stdout and flushes it.
pub(crate) fn print(text: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text).and_then(|()| stdout.flush()).map_err(stdout_error)
}

/// Transparent huge pages off for this process: the allocator asks for them, and the kernel
/// zeroes each 2 MiB page whole on its first touch, which was a fifth of the CPU time of a query
/// of the run store (`report daily`, repeated: 7.3 → 6.5 ms; on an empty store, syncing 200 MB:
/// 0.40 → 0.33 s). Only for commands that start no process: a child would inherit the setting.
fn small_pages() {
    if let Err(e) = nix::sys::prctl::set_thp_disable(true) {
        tracing::debug!(error = %e, "transparent huge pages stay on");
    }
}

/// Logs go to a file, never to the terminal (the screen owns it).
fn init_logging(path: Option<&std::path::Path>) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let path = path?;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SWARMTOP_LOG").unwrap_or_else(|_| "info".into()))
        .try_init()
        .ok()?;
    Some(guard)
}

fn run(cli: Cli) -> Result<ExitCode> {
    if matches!(cli.command, Some(Command::Sync(_) | Command::History(_) | Command::Report(_) | Command::Search(_))) {
        small_pages();
    }
    let config = config(&cli.global).wrap_err("loading the price table")?;
    match cli.command {
        Some(Command::Stats(args)) => stats::run(&args, config),
        Some(Command::Route(args)) => route::run(&args, config),
        Some(Command::Tree(args)) => tree::run(&args, config),
        Some(Command::Tee(args)) => tee::run(&args, config),
        Some(Command::Attach(args)) => attach::run(&args, config, &cli.global),
        Some(Command::Listen(args)) => listen::run(&args, config, &cli.global),
        Some(Command::Ps(args)) => ps::run(&args, &config),
        Some(Command::Export(args)) => export::run(&args, config),
        Some(Command::Guard(args)) => guard::run(&args, &cli.global, config),
        Some(Command::Interrupt(args)) => interrupt::run(&args, config),
        Some(Command::Sync(args)) => sync::run(&args, config, &cli.global),
        Some(Command::History(args)) => history::run(&args, config, &cli.global),
        Some(Command::Report(args)) => report::run(&args, config, &cli.global),
        Some(Command::Search(args)) => search::run(&args, config, &cli.global),
        Some(Command::Serve(args)) => serve::run(&args, config, &cli.global),
        Some(Command::Demo(args)) => {
            let opts = MonitorOpts::new(&args.replay, false, &args.screen, None);
            monitor::run(monitor::demo(), &opts, config, &cli.global)
        }
        None if cli.remote.server.is_some() => {
            if !cli.inputs.is_empty() {
                color_eyre::eyre::bail!("--server shows a server's machine view: give it no inputs");
            }
            let opts = MonitorOpts::live(&cli.screen, &cli.record);
            monitor::run_remote(monitor::watch_server(&cli.remote, &cli.window)?, &opts, config)
        }
        None => {
            let opts = MonitorOpts::new(&cli.replay, cli.follow, &cli.screen, Some(&cli.record));
            monitor::run(monitor::watch_inputs(&cli.inputs, &opts, &cli.window)?, &opts, config, &cli.global)
        }
    }
}
