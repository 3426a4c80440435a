//! What a one-shot command pays to embed one query: loading the model from a file (as a
//! process that embeds a single query does) and the query itself, in milliseconds.
//!
//! `cargo run --release -p situate-e5 --example query -- MODEL.bin "QUERY"`

use std::time::Instant;

use situate_e5::{E5Model, Kind};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model_path, query] = args.as_slice() else {
        eprintln!("usage: query MODEL.bin QUERY");
        std::process::exit(2);
    };
    let t0 = Instant::now();
    let model = E5Model::from_file(model_path).expect("model");
    let loaded = t0.elapsed();
    let t1 = Instant::now();
    let vector = model.embed(&[query.as_str()], Kind::Query);
    let embedded = t1.elapsed();
    let t2 = Instant::now();
    model.embed(&[query.as_str()], Kind::Query);
    let again = t2.elapsed();
    println!(
        "load {:.1} ms, query {:.1} ms, again {:.1} ms ({} dimensions, {})",
        loaded.as_secs_f64() * 1e3,
        embedded.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3,
        vector[0].len(),
        model.instruction_set()
    );
}
