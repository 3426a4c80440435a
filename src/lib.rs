//! situate: contextual semantic search over the markdown and text files of a workspace.

pub mod chunk;
pub mod index;
pub mod providers;
