// The status-bar item: indexing progress from `$/progress`, else the chunk count from a polled `situate.status`.
import * as vscode from "vscode";
import { ServerCommand, type StatusAnswer } from "./protocol";
import { errorMessage, type Server } from "./server";
import { pollDelay, READY_POLL_MS, statusBarText } from "./statusText";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  private readonly subscriptions: vscode.Disposable[] = [];
  private status: StatusAnswer | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private disposed = false;

  constructor(
    private readonly server: Server,
    showStatusCommand: string,
  ) {
    this.item.name = "situate";
    this.item.command = showStatusCommand;
    this.render();
    this.item.show();
    this.subscriptions.push(
      server.onProgress(({ ended }) => {
        this.render();
        if (ended) {
          // The run's figures are in the next status; do not wait for the poll.
          this.schedule(0);
        }
      }),
      server.onRunning((running) => {
        this.status = undefined;
        this.render();
        if (running) {
          this.schedule(0);
        }
      }),
    );
    this.schedule(0);
  }

  /** Asks the server for its status now and draws it. */
  async refresh(): Promise<void> {
    if (this.disposed) {
      return;
    }
    if (!this.server.running) {
      this.item.text = "$(circle-slash) situate";
      this.item.tooltip = "The situate server is not running. Click for details.";
      this.schedule(READY_POLL_MS);
      return;
    }
    try {
      this.status = await this.server.execute<StatusAnswer>(ServerCommand.status);
      this.render();
    } catch (error) {
      this.item.text = "$(warning) situate";
      this.item.tooltip = `situate.status failed: ${errorMessage(error)}`;
    }
    this.schedule(pollDelay(this.status));
  }

  private render(): void {
    const { text, tooltip } = statusBarText(this.status, this.server.indexingPercentage);
    this.item.text = text;
    this.item.tooltip = tooltip;
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    if (this.disposed) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, ms);
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
    }
    for (const s of this.subscriptions) {
      s.dispose();
    }
    this.item.dispose();
  }
}
