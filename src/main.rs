//! The `situate` binary: the command line over the engine, carrying the built-in
//! transformer model (placed by `build.rs`; empty when the build could not get it).

/// Included here rather than in the library, so that only the binary carries the 72 MB.
static BUILTIN_MODEL: &[u8] = include_bytes!(env!("SITUATE_E5_MODEL_FILE"));

fn main() -> std::process::ExitCode {
    situate::providers::provide_builtin_model(BUILTIN_MODEL);
    situate::cli::main()
}
