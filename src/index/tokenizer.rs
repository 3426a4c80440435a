//! Code-aware text analysis for BM25.
