//! The `situate` binary.
fn main() {}
