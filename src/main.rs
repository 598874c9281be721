use std::process::ExitCode;

fn main() -> ExitCode {
    swarmtop::commands::main()
}
