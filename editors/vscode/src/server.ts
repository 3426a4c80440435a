// Owns the language client: finds and starts `situate lsp`, sends commands and settings, follows indexing progress.
import * as readline from "node:readline";
import type { Readable } from "node:stream";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  type ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { ProgressTracker } from "./progressTracker";
import { logFilter, ServerLog } from "./serverLog";
import { findServerHere, startMessage } from "./serverBinary";
import {
  configurationChange,
  explicitValue,
  openMachineSetting,
  sameSettings,
  serverSettings,
  type ServerSettings,
} from "./settings";

/** The user's settings for the server, leaving out everything they did not set. */
export function currentServerSettings(): ServerSettings {
  const config = vscode.workspace.getConfiguration("situate");
  return serverSettings((key) => explicitValue(config.inspect(key)));
}

/** Raised when a command needs the server and it is not running. */
export class ServerNotRunning extends Error {
  constructor(
    message: string,
    readonly fixInSettings: boolean,
  ) {
    super(message);
  }
}

/**
 * The language client, except that until its server has run it shows no messages of its own:
 * a server that cannot start is reported once, by the extension, with what the process said
 * and a button to the setting. The client's own "couldn't create connection to server" toast
 * would say it again, less clearly. Its messages still go to the output channel.
 */
class SituateClient extends LanguageClient {
  hasRun = false;

  override error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    super.error(message, data, this.hasRun ? showNotification : false);
  }
}

export class Server implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private sentSettings: ServerSettings = {};
  private notRunning: ServerNotRunning = new ServerNotRunning("situate is starting", false);
  private readonly progress = new ProgressTracker();
  /** One channel for every run of the server, so that a restart keeps the earlier lines in view. */
  private readonly channel = vscode.window.createOutputChannel("situate", { log: true });
  private readonly progressEmitter = new vscode.EventEmitter<{ percentage: number | undefined; ended: boolean }>();
  private readonly runningEmitter = new vscode.EventEmitter<boolean>();

  /** Fires on every progress notification, with the overall percentage. */
  readonly onProgress = this.progressEmitter.event;
  /** Fires when the server starts or stops. */
  readonly onRunning = this.runningEmitter.event;

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Why commands cannot run now (meaningful only while the server is not running). */
  get whyNotRunning(): ServerNotRunning {
    return this.notRunning;
  }

  get indexingPercentage(): number | undefined {
    return this.progress.percentage();
  }

  /** Finds the binary and starts it; problems are shown to the user, never thrown. */
  async start(): Promise<void> {
    const config = vscode.workspace.getConfiguration("situate");
    const root = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file")?.uri.fsPath;
    const found = findServerHere(config.get<string>("server.path"), root);
    if (!found.found) {
      this.notRunning = new ServerNotRunning(found.message, true);
      this.channel.error(found.message);
      void showServerError(found.message);
      return;
    }

    const logLevel = config.get<string>("server.logLevel") ?? "warn";
    const serverOptions: ServerOptions = {
      command: found.path,
      args: ["lsp"],
      transport: TransportKind.stdio,
      options: { env: { ...process.env, SITUATE_LOG: logFilter(logLevel) } },
    };
    this.sentSettings = currentServerSettings();
    // A binary that is not the situate server (an older build, another program) exits at
    // once: it is not restarted again and again, and its last words name the problem.
    let started = false;
    const said: string[] = [];
    let stderrClosed: Promise<unknown> = Promise.resolve();
    // The client's own handler, for a server that did start; set once the client exists.
    const usual: { handler?: ErrorHandler } = {};
    const clientOptions: LanguageClientOptions = {
      initializationFailedHandler: () => false,
      errorHandler: {
        error: (error, message, count) =>
          started && usual.handler ? usual.handler.error(error, message, count) : { action: ErrorAction.Shutdown, handled: true },
        closed: () => (started && usual.handler ? usual.handler.closed() : { action: CloseAction.DoNotRestart, handled: true }),
      },
      documentSelector: [
        { scheme: "file", language: "markdown" },
        { scheme: "file", language: "mdx" },
        { scheme: "file", language: "plaintext" },
      ],
      initializationOptions: this.sentSettings,
      outputChannel: this.channel,
      // The server logs to stderr at the level the user chose; each line keeps its level.
      stdioOptions: {
        stdout: (input, channel) => lines(input, (line) => channel.info(line)),
        stderr: (input, channel) => {
          const log = new ServerLog();
          said.length = 0;
          stderrClosed = new Promise((resolve) => input.once("close", resolve));
          lines(input, (raw) => {
            const { level, text } = log.line(raw);
            channel[level](text);
            if (!started && level === "error") {
              said.push(text.trim());
            }
          });
        },
      },
      middleware: {
        handleWorkDoneProgress: (token, params, next) => {
          const ended = this.progress.update(token, params);
          this.progressEmitter.fire({ percentage: this.progress.percentage(), ended });
          next(token, params);
        },
      },
    };

    const client = new SituateClient("situate", "situate", serverOptions, clientOptions);
    usual.handler = client.createDefaultErrorHandler();
    client.onDidChangeState((e) => {
      started ||= e.newState === State.Running;
      client.hasRun = started;
      if (e.newState === State.Stopped) {
        this.progress.clear();
        this.notRunning = new ServerNotRunning("the situate server has stopped; run Situate: Restart Server", false);
      }
      this.runningEmitter.fire(e.newState === State.Running);
    });
    this.client = client;
    this.channel.info(startMessage(found, logLevel));
    try {
      await client.start();
    } catch (error) {
      // What the process wrote before it ended says more than the broken connection.
      await Promise.race([stderrClosed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
      const why = said.length > 0 ? said.slice(-3).join(" ") : errorMessage(error);
      const message = `The situate server (${found.path}) could not start: ${why}. Check that situate.server.path names the situate binary.`;
      this.notRunning = new ServerNotRunning(message, true);
      this.channel.error(message);
      void showServerError(message);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.progress.clear();
    if (!client) {
      return;
    }
    if (client.state === State.Starting) {
      // The start under way ends first, one way or the other.
      await client.start().catch(() => undefined);
    }
    // A client whose start failed has no server to stop, and refuses to be stopped.
    if (client.state === State.Running) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Runs one of the server's `workspace/executeCommand` commands with its single argument. */
  async execute<T>(command: string, argument?: object, token?: vscode.CancellationToken): Promise<T> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw this.notRunning;
    }
    const args = argument === undefined ? [] : [argument];
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token)) as T;
  }

  /** Sends the settings again when the user changed one the server reads. */
  async settingsChanged(): Promise<void> {
    const settings = currentServerSettings();
    if (!this.client || !this.running || sameSettings(settings, this.sentSettings)) {
      return;
    }
    this.sentSettings = settings;
    await this.client.sendNotification(DidChangeConfigurationNotification.type, configurationChange(settings));
  }

  dispose(): void {
    void this.stop();
    this.progressEmitter.dispose();
    this.channel.dispose();
    this.runningEmitter.dispose();
  }
}

/** Calls `each` with every line of a stream. */
function lines(input: Readable, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", each);
}

/** An error about the server, with a button to the setting that fixes it. */
export async function showServerError(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Open Settings");
  if (choice === "Open Settings") {
    const open = openMachineSetting("situate.server.path", vscode.env.remoteName);
    await vscode.commands.executeCommand(open.command, ...open.args);
  }
}

/** Shows a failed command: with the settings button when the server is missing. */
export async function showCommandError(what: string, error: unknown): Promise<void> {
  if (error instanceof ServerNotRunning) {
    if (error.fixInSettings) {
      await showServerError(error.message);
    } else {
      await vscode.window.showErrorMessage(`${what}: ${error.message}`);
    }
    return;
  }
  await vscode.window.showErrorMessage(`${what}: ${errorMessage(error)}`);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
