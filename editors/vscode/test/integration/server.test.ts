// Integration test: drives the real `situate lsp` over stdio with exactly the requests the extension sends.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import {
  CancellationTokenSource,
  createProtocolConnection,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  RegistrationRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
  type CancellationToken,
  type ProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { LatestQuery } from "../../src/latestQuery";
import { isIndexingRun, type ProgressToken, ProgressTracker } from "../../src/progressTracker";
import { ServerCommand, type ReindexAnswer, type SearchAnswer, type StatusAnswer } from "../../src/protocol";
import { hitRows, termRanges } from "../../src/results";
import { configurationChange, serverSettings } from "../../src/settings";
import { reindexSummary, statusBarText, statusReport } from "../../src/statusText";

const packageRoot = path.resolve(__dirname, "../../..");
const repoRoot = path.resolve(packageRoot, "../..");
const serverBin = process.env.SITUATE_BIN
  ? path.resolve(process.env.SITUATE_BIN)
  : path.join(repoRoot, "target", "debug", "situate");
const fixture = path.join(repoRoot, "tests", "data", "workspace");

/** The settings a user might have set, as VS Code's `inspect` reports them (unset: undefined). */
const userSettings: Record<string, unknown> = {
  exclude: ["drafts/**"],
  "search.limit": 5,
  "search.mode": undefined,
  indexDir: "",
};

let child: ChildProcess;
let connection: ProtocolConnection;
let workspace: string;
let scratch: string;
let stderr = "";
const progressEnded: Promise<void>[] = [];
/** The kinds each progress token reported, in order, one list per token. */
const progressEvents: string[][] = [];
/** The title each progress token began with, in order. */
const progressTitles: string[] = [];
const progressTokens: ProgressToken[] = [];
/** What the extension makes of the progress notifications. */
const tracker = new ProgressTracker();

function execute<T>(command: string, argument?: object, token?: CancellationToken): Promise<T> {
  const args = argument === undefined ? [] : [argument];
  return connection.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token) as Promise<T>;
}

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; server stderr:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

before(() => {
  assert.ok(
    fs.existsSync(serverBin),
    `the situate binary was not found at ${serverBin}. Build it with \`cargo build\` at the repository root, ` +
      "or point SITUATE_BIN at a built binary (e.g. SITUATE_BIN=/path/to/situate npm test).",
  );
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "situate-vscode-"));
  workspace = path.join(scratch, "notes");
  fs.cpSync(fixture, workspace, { recursive: true });
  // A file the `exclude` setting must keep out of the index.
  fs.mkdirSync(path.join(workspace, "drafts"));
  fs.writeFileSync(
    path.join(workspace, "drafts", "backup-draft.md"),
    "# Backup retention draft\n\nBackup retention: snapshots are kept for thirty days, backup retention.\n",
  );

  child = spawn(serverBin, ["lsp"], {
    cwd: workspace,
    env: { ...process.env, XDG_CACHE_HOME: path.join(scratch, "cache"), SITUATE_LOG: "warn" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  connection = createProtocolConnection(
    new StreamMessageReader(child.stdout as NodeJS.ReadableStream),
    new StreamMessageWriter(child.stdin as NodeJS.WritableStream),
  );
  // What vscode-languageclient does with the server's requests: accept watchers, and
  // follow each progress token it is asked to create.
  connection.onRequest(RegistrationRequest.type, () => undefined);
  connection.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
    const events: string[] = [];
    progressEvents.push(events);
    progressEnded.push(
      new Promise<void>((resolve) => {
        connection.onProgress(WorkDoneProgress.type, token, (value) => {
          events.push(value.kind);
          tracker.update(token, value);
          if (value.kind === "begin") {
            progressTitles.push(value.title);
            progressTokens.push(token);
          }
          if (value.kind === "end") {
            resolve();
          }
        });
      }),
    );
  });
  connection.listen();
});

after(() => {
  connection?.dispose();
  if (child && child.exitCode === null) {
    child.kill();
  }
  if (scratch) {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
});

test("initialize with the settings mapping, then indexing reports progress and ends ready", async () => {
  const initializationOptions = serverSettings((key) => userSettings[key]);
  assert.deepEqual(initializationOptions, { exclude: ["drafts/**"], search: { limit: 5 } });
  const uri = pathToFileURL(workspace).toString();
  const result = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "notes" }],
    initializationOptions,
    capabilities: {
      general: { positionEncodings: ["utf-16"] },
      window: { workDoneProgress: true },
      workspace: { didChangeWatchedFiles: { dynamicRegistration: true }, workspaceFolders: true, configuration: true },
    },
  });
  assert.equal(result.capabilities.positionEncoding, "utf-16");
  const commands = result.capabilities.executeCommandProvider?.commands ?? [];
  for (const command of Object.values(ServerCommand)) {
    assert.ok(commands.includes(command), `the server offers ${command}`);
  }
  await connection.sendNotification(InitializedNotification.type, {});

  await waitFor("the indexing progress to begin", () => (progressEnded.length > 0 ? true : undefined));
  await progressEnded[0];
  // The indexing run's token; the default model's vectors follow under a token of their own.
  const indexing = progressEvents[0];
  assert.equal(indexing[0], "begin");
  assert.equal(indexing[indexing.length - 1], "end");

  const status = await waitFor("the folder to be ready", async () => {
    const s = await execute<StatusAnswer>(ServerCommand.status);
    return s.folders[0]?.phase === "ready" && (s.folders[0].index?.chunks ?? 0) > 0 ? s : undefined;
  });
  const bar = statusBarText(status, tracker.percentage());
  console.log(`status bar: ${bar.text}`);
  // While the e5 vectors fill in, the index is ready and searched: the bar says so.
  const vectors = (status.folders[0].index?.vectors_pending ?? 0) > 0;
  assert.match(bar.text, vectors ? /^\$\(search\) situate: \d+ chunks, vectors \d+%$/ : /^\$\(search\) situate: \d+ chunks$/);
  assert.ok(progressTitles[0].startsWith("Indexing") && isIndexingRun(progressTokens[0]), `the first run is indexing: ${progressTitles[0]}`);
  if (vectors) {
    // The vectors are filled under a run of their own, which the bar does not count as indexing.
    const filling = await waitFor("the vectors' run", () => progressTitles.findIndex((t) => t.startsWith("Embedding")) + 1);
    assert.equal(isIndexingRun(progressTokens[filling - 1]), false);
  }
});

test("situate.search: backup retention finds ops/backup.md › Backups › Retention, formatted as the picker shows it", async () => {
  const answer = await execute<SearchAnswer>(ServerCommand.search, { query: "backup retention" });
  assert.equal(answer.indexing, false);
  assert.ok(answer.hits.length > 0 && answer.hits.length <= 5, `search.limit 5 applies (got ${answer.hits.length})`);
  assert.ok(
    answer.hits.every((h) => !h.path.startsWith("drafts/")),
    "the exclude setting keeps drafts/ out",
  );
  const first = answer.hits[0];
  assert.equal(first.path, "ops/backup.md");
  assert.deepEqual(first.heading_path, ["Backups", "Retention"]);
  assert.equal(first.uri, pathToFileURL(path.join(workspace, "ops", "backup.md")).toString());

  const rows = hitRows(answer);
  for (const row of rows) {
    console.log(`  ${row.label}  [${row.description}]\n      ${row.detail}`);
  }
  assert.equal(rows[0].label, "Backup policy › Backups › Retention");
  // No line holds the query's words: the line closest in meaning is shown, and named.
  assert.match(rows[0].description, /^ops\/backup\.md:12 · \d\.\d{3}$/);
  assert.match(rows[0].detail, /^Snapshots are kept for thirty days\./);
  // The chunk's own range: lines 10–13 of the file, where the editor jumps.
  assert.equal(rows[0].range.start.line, 9);
  assert.equal(rows[0].range.start.character, 0);
  assert.equal(rows[0].range.end.line, 12);
});

test("situate.search: the preview is the line that matched, and its words are found in the chunk to highlight", async () => {
  const answer = await execute<SearchAnswer>(ServerCommand.search, { query: "legal hold" });
  const hit = answer.hits[0];
  assert.equal(hit.preview, "legal hold is placed on them.");
  assert.deepEqual(hit.preview_marks, [
    [0, 5],
    [6, 10],
  ]);
  const row = hitRows(answer)[0];
  assert.match(row.description, /^ops\/backup\.md:13 · /);
  assert.deepEqual(row.terms, ["legal", "hold"]);
  const file = fs.readFileSync(path.join(workspace, "ops", "backup.md"), "utf8").split("\n");
  const chunk = file.slice(row.range.start.line, row.range.end.line + 1);
  assert.deepEqual(termRanges(chunk, row.range.start.line, row.terms), [
    { line: 12, start: 0, end: 5 },
    { line: 12, start: 6, end: 10 },
  ]);
});

test("typing: only the last of quickly typed queries is answered, stale requests are cancelled", async () => {
  const sent: string[] = [];
  const cancelled: string[] = [];
  const answered: string[] = [];
  let latest: LatestQuery<CancellationToken, SearchAnswer> | undefined;
  await new Promise<void>((resolve, reject) => {
    latest = new LatestQuery<CancellationToken, SearchAnswer>({
      delayMs: 200,
      newSource: () => new CancellationTokenSource(),
      run: (query, token) => {
        sent.push(query);
        token.onCancellationRequested(() => cancelled.push(query));
        const request = execute<SearchAnswer>(ServerCommand.search, { query }, token);
        if (query === "backup") {
          // The user types on while the request for "backup" is out.
          latest?.update("backup retention");
        }
        return request;
      },
      onResult: (query, answer) => {
        answered.push(query);
        assert.equal(answer.hits[0]?.path, "ops/backup.md");
        resolve();
      },
      onError: (_query, error) => reject(error instanceof Error ? error : new Error(String(error))),
    });
    latest.update("b");
    latest.update("ba");
    latest.update("backup");
  });
  // Give the answer to the cancelled request time to arrive: it must be dropped.
  await new Promise((resolve) => setTimeout(resolve, 300));
  latest?.dispose();
  assert.deepEqual(sent, ["backup", "backup retention"], "queries typed within the pause are never sent");
  assert.deepEqual(cancelled, ["backup"]);
  assert.deepEqual(answered, ["backup retention"]);
});

test("situate.similar: chunks related to the cursor's chunk, without the chunk itself", async () => {
  const uri = pathToFileURL(path.join(workspace, "ops", "backup.md")).toString();
  const answer = await execute<SearchAnswer>(ServerCommand.similar, { uri, position: { line: 11, character: 0 } });
  assert.ok(answer.hits.length > 0, "something is related");
  assert.ok(
    answer.hits.every((h) => !(h.path === "ops/backup.md" && h.range.start.line === 9)),
    "the chunk under the cursor is left out",
  );
  for (const row of hitRows(answer)) {
    console.log(`  related: ${row.label}  [${row.description}]`);
  }
});

test("situate.reindex: every folder is reconciled, and the summary says so", async () => {
  fs.writeFileSync(path.join(workspace, "ops", "oncall.md"), "# On-call\n\nThe pager rotates every Monday at noon.\n");
  const answer = await execute<ReindexAnswer>(ServerCommand.reindex, {});
  assert.ok("folders" in answer);
  assert.equal(answer.folders.length, 1);
  assert.equal(answer.folders[0].report.files_indexed, 1, "the new file is indexed");
  const summary = reindexSummary(answer);
  console.log(`reindex: ${summary}`);
  assert.match(summary, /^Reindexed: \d+ files seen, 1 indexed, \d+ chunks? written in \d+\.\d\d s\.$/);
  const found = await execute<SearchAnswer>(ServerCommand.search, { query: "pager rotation monday" });
  assert.equal(found.hits[0]?.path, "ops/oncall.md");
});

test("situate.status: the per-folder report the status document shows", async () => {
  const status = await execute<StatusAnswer>(ServerCommand.status);
  assert.equal(status.folders.length, 1);
  const folder = status.folders[0];
  assert.equal(folder.phase, "ready");
  assert.deepEqual(folder.pending, []);
  assert.deepEqual(folder.errors, []);
  assert.equal(folder.index?.files, 5, "four fixture files and the new one; drafts/ excluded");
  const report = statusReport(status);
  assert.ok(report.includes(`## ${folder.root}`));
  assert.ok(report.includes("- Phase: ready"));
  assert.ok(report.includes(`- Files: 5 · chunks: ${folder.index?.chunks}`));
});

test("workspace/didChangeConfiguration: changed settings apply, and unset ones fall back", async () => {
  await connection.sendNotification(
    DidChangeConfigurationNotification.type,
    configurationChange(serverSettings((key) => ({ ...userSettings, "search.limit": 1 })[key])),
  );
  await waitFor("search.limit 1 to apply", async () => {
    const a = await execute<SearchAnswer>(ServerCommand.search, { query: "backup" });
    return a.hits.length === 1 ? true : undefined;
  });

  // The user clears every setting: an empty object goes out, and the defaults apply again
  // (drafts/ is no longer excluded, the limit is back to 10).
  const cleared = configurationChange(serverSettings(() => undefined));
  assert.deepEqual(cleared, { settings: { situate: {} } });
  await connection.sendNotification(DidChangeConfigurationNotification.type, cleared);
  await waitFor("the defaults to apply", async () => {
    const a = await execute<SearchAnswer>(ServerCommand.search, { query: "backup retention draft" });
    return a.hits.length > 1 && a.hits.some((h) => h.path === "drafts/backup-draft.md") ? true : undefined;
  });
});

test("shutdown and exit end the server with code 0", async () => {
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await connection.sendRequest(ShutdownRequest.type);
  await connection.sendNotification(ExitNotification.type);
  assert.equal(await exited, 0);
});
