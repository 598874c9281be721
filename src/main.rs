use std::process::ExitCode;

// mimalloc, not the system allocator (without huge pages: Cargo.toml says why): decoding on
// every core allocates and frees small lines from several threads at once, which glibc's malloc
// served with lock contention and fresh page faults (`stats` on the Claude folder of `benches/ingest`: 0.23 s → 0.16 s).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    swarmtop::commands::main()
}
