//! `swarmtop tee [--socket PATH] [--record FILE | --no-record] -- CMD [ARGS…]`.

use std::process::ExitCode;

use color_eyre::eyre::{Result, eyre};

use super::cli::TeeArgs;
use crate::source::tee::{self, Failure, Options, RecordTo};

pub fn run(args: &TeeArgs) -> Result<ExitCode> {
    let record = match (&args.record, args.no_record) {
        (_, true) => RecordTo::Off,
        (Some(path), false) => RecordTo::Path(path.clone()),
        (None, false) => RecordTo::Default,
    };
    let opts = Options {
        command: args.command.clone(),
        socket: args.socket.clone(),
        record,
        queue_bytes: args.monitor_queue_bytes,
    };
    match tee::run(opts) {
        Ok(code) => Ok(ExitCode::from(code)),
        Err(Failure::Setup(message)) => Err(eyre!(message)),
        Err(Failure::Spawn { message, code }) => {
            eprintln!("swarmtop tee: {message}");
            Ok(ExitCode::from(code))
        }
    }
}
