//! situate: contextual semantic search over the markdown and text files of a workspace.
//!
//! Modules are layered (ARCHITECTURE.md, "Layers"), each importing only from below:
//! `analysis`, `chunk`, `context`, `providers` → `workspace`, `snippets` → `index` → `search` →
//! `config` → `engine` → `eval` → `compare`, `service` → `wire` → `lsp`, `mcp` → `cli`.
//! The engine speaks plain data; `cli` is the only module that prints, `lsp` the only one
//! that knows the Language Server Protocol and `mcp` the only one that knows the Model
//! Context Protocol.

pub mod analysis;
pub mod chunk;
pub mod cli;
pub mod compare;
pub mod config;
pub mod context;
pub mod engine;
pub mod eval;
pub mod index;
pub mod lsp;
pub mod mcp;
pub mod providers;
pub mod search;
pub mod service;
pub mod snippets;
pub mod team;
pub mod wire;
pub mod workspace;
