//! situate: contextual semantic search over the markdown and text files of a workspace.
//!
//! The engine (`workspace` → `chunk` → `context` → `providers` → `index` → `search` →
//! `expand`, driven by `engine`) speaks plain data; `cli` is the only module that prints, and
//! `lsp` serves the same engine to editors.

pub mod chunk;
pub mod cli;
pub mod compare;
pub mod config;
pub mod context;
pub mod engine;
pub mod eval;
pub mod index;
pub mod lsp;
pub mod providers;
pub mod search;
pub mod service;
pub mod snippets;
pub mod wire;
pub mod workspace;
