//! The JSON that situate prints (`--json` of the CLI) and that the language server sends in
//! the shapes it shares with the CLI (reports, index status): one serialized struct per
//! shape, converted from engine types here. Engine types stay plain data, so renaming an
//! engine field never changes what scripts and editors read; only this module (and the
//! language server's own `lsp/ext.rs`) decides field names.

mod eval;
mod hits;
pub mod jsonrpc;
mod report;
mod status;

pub use eval::EvalReportJson;
pub use hits::{ChunkJson, ExpansionJson, HitJson, PreviewJson, SnippetJson};
pub use report::{IndexSummaryJson, ReportJson, SkippedJson, SnippetRunJson, TotalsJson};
pub use status::StatusJson;
