//! The `situate` binary: the command line over the engine.

fn main() -> std::process::ExitCode {
    situate::cli::main()
}
