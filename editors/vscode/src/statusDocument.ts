// The Show Index Status view: a read-only Markdown document rendered from `situate.status`.
import * as vscode from "vscode";
import { ServerCommand, type StatusAnswer } from "./protocol";
import { errorMessage, showCommandError, type Server } from "./server";
import { statusReport } from "./statusText";

export const STATUS_SCHEME = "situate-status";
const STATUS_URI = vscode.Uri.from({ scheme: STATUS_SCHEME, path: "/index-status.md" });

export class StatusDocument implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: Server) {}

  async provideTextDocumentContent(): Promise<string> {
    try {
      return statusReport(await this.server.execute<StatusAnswer>(ServerCommand.status));
    } catch (error) {
      return `# situate index status\n\nThe status is not available: ${errorMessage(error)}\n`;
    }
  }

  /** Shows the report, fetched afresh. */
  async show(): Promise<void> {
    if (!this.server.running) {
      // The report would only repeat the error; show it with its fix instead.
      await showCommandError("Situate: Show Index Status", this.server.whyNotRunning);
      return;
    }
    this.changed.fire(STATUS_URI);
    const document = await vscode.workspace.openTextDocument(STATUS_URI);
    await vscode.window.showTextDocument(document, { preview: true });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
