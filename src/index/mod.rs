//! The on-disk index: chunk store and BM25 (tantivy), vectors (usearch), manifest.

pub mod tokenizer;
