//! What `initialize` settles: the position encoding, the workspace folders served, and the
//! capabilities the server announces.

use std::path::PathBuf;

use tower_lsp_server::ls_types::*;

use super::documents::Encoding;
use super::ext::COMMANDS;
use super::from_proto::file_path;

/// UTF-8 positions when the client offers them, else UTF-16 (the protocol's default).
pub fn negotiate_encoding(caps: &ClientCapabilities) -> Encoding {
    let offered = caps.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

/// The local folders of the workspace (`workspaceFolders`, else `rootUri`).
pub fn workspace_roots(params: &InitializeParams) -> Vec<PathBuf> {
    let mut uris: Vec<Uri> = params.workspace_folders.iter().flatten().map(|f| f.uri.clone()).collect();
    #[allow(deprecated)]
    if uris.is_empty()
        && let Some(root) = &params.root_uri
    {
        uris.push(root.clone());
    }
    uris.iter()
        .filter_map(|u| match file_path(u) {
            Ok(p) if p.is_dir() => Some(p),
            _ => {
                tracing::warn!("workspace folder {} is not a local folder; left out", u.as_str());
                None
            }
        })
        .collect()
}

/// The answer to `initialize`.
pub fn initialize_result(encoding: Encoding) -> InitializeResult {
    let encoding_kind = match encoding {
        Encoding::Utf8 => PositionEncodingKind::UTF8,
        Encoding::Utf16 => PositionEncodingKind::UTF16,
    };
    InitializeResult {
        capabilities: ServerCapabilities {
            position_encoding: Some(encoding_kind),
            text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..Default::default()
            })),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            workspace_symbol_provider: Some(OneOf::Left(true)),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: COMMANDS.iter().map(ToString::to_string).collect(),
                ..Default::default()
            }),
            workspace: Some(WorkspaceServerCapabilities {
                workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                    supported: Some(true),
                    change_notifications: Some(OneOf::Left(true)),
                }),
                file_operations: None,
            }),
            ..Default::default()
        },
        server_info: Some(ServerInfo {
            name: "situate".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
        offset_encoding: None,
    }
}
