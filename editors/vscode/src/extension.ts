// Entry point of the VS Code extension: starts the situate language server and registers commands and the status bar.
import * as vscode from "vscode";
import { findRelated, searchWorkspace } from "./pickers";
import { ServerCommand, type ReindexAnswer } from "./protocol";
import { Server, showCommandError } from "./server";
import { StatusBar } from "./statusBar";
import { STATUS_SCHEME, StatusDocument } from "./statusDocument";
import { reindexSummary } from "./statusText";

/**
 * Palette command ids. The server's own command ids (`situate.search`, …) are registered
 * by the language client, so these must differ from them.
 */
export const PaletteCommand = {
  search: "situate.searchWorkspace",
  related: "situate.findRelated",
  reindex: "situate.reindexWorkspace",
  status: "situate.showStatus",
  restart: "situate.restartServer",
} as const;

let server: Server | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  server = new Server();
  const running = server;
  const statusDocument = new StatusDocument(running);
  context.subscriptions.push(
    running,
    statusDocument,
    vscode.workspace.registerTextDocumentContentProvider(STATUS_SCHEME, statusDocument),
    vscode.commands.registerCommand(PaletteCommand.search, () => searchWorkspace(running)),
    vscode.commands.registerCommand(PaletteCommand.related, () => findRelated(running)),
    vscode.commands.registerCommand(PaletteCommand.reindex, () => reindexWorkspace(running)),
    vscode.commands.registerCommand(PaletteCommand.status, () => statusDocument.show()),
    vscode.commands.registerCommand(PaletteCommand.restart, () => running.restart()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("situate.server")) {
        void offerRestart(running);
      } else if (e.affectsConfiguration("situate")) {
        running.settingsChanged().catch((error: unknown) => showCommandError("situate could not apply the settings", error));
      }
    }),
  );
  // The status bar is created once the start has been tried, so that its first poll
  // already knows whether the server runs.
  await running.start();
  context.subscriptions.push(new StatusBar(running, PaletteCommand.status));
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}

async function reindexWorkspace(server: Server): Promise<void> {
  try {
    const answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "situate: reindexing the workspace…" },
      () => server.execute<ReindexAnswer>(ServerCommand.reindex, {}),
    );
    await vscode.window.showInformationMessage(reindexSummary(answer));
  } catch (error) {
    await showCommandError("Reindex failed", error);
  }
}

/** New server settings: a server that runs is restarted if the user wants; one that does not (not found, failed) starts at once. */
async function offerRestart(server: Server): Promise<void> {
  if (!server.running) {
    await server.restart();
    return;
  }
  const choice = await vscode.window.showInformationMessage(
    "The situate server settings changed. Restart the server to apply them?",
    "Restart",
  );
  if (choice === "Restart") {
    await server.restart();
  }
}
