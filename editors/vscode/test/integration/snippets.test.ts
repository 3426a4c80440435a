// Integration test: snippet settings through the real `situate lsp`, against a chat server on 127.0.0.1.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import {
  createProtocolConnection,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  RegistrationRequest,
  ShowMessageNotification,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  type ProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { ServerCommand, type FolderStatus, type SearchAnswer, type StatusAnswer } from "../../src/protocol";
import { configurationChange, serverSettings } from "../../src/settings";
import { snippetLines, statusBarText, statusReport } from "../../src/statusText";

const packageRoot = path.resolve(__dirname, "../../..");
const repoRoot = path.resolve(packageRoot, "../..");
const serverBin = process.env.SITUATE_BIN
  ? path.resolve(process.env.SITUATE_BIN)
  : path.join(repoRoot, "target", "debug", "situate");
const fixture = path.join(repoRoot, "tests", "data", "workspace");

/** Chunks of the fixture workspace. */
const CHUNKS = 8;
/** Words the chat server writes for the backup retention chunk, found nowhere in the files. */
const RETENTION_SNIPPET = "This section states the archival lifespan of nightly database dumps.";

let child: ChildProcess;
let connection: ProtocolConnection;
let chat: http.Server;
let chatUrl: string;
let scratch: string;
let stderr = "";
let chatCalls = 0;
const shown: string[] = [];

/** The snippet settings a user might set; the API key is never one (a local server needs none). */
function userSettings(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    "snippets.model": "small-chat",
    "snippets.baseUrl": chatUrl,
    "snippets.apiKeyEnv": "",
    "snippets.concurrency": 1,
    "snippets.maxCalls": 3,
    ...overrides,
  };
}

function execute<T>(command: string, argument?: object): Promise<T> {
  const args = argument === undefined ? [] : [argument];
  return connection.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }) as Promise<T>;
}

async function folderStatus(): Promise<FolderStatus> {
  return (await execute<StatusAnswer>(ServerCommand.status)).folders[0];
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      last = await folderStatus().catch((error: unknown) => String(error));
      throw new Error(`timed out waiting for ${what}; last status:\n${JSON.stringify(last, null, 2)}\nserver stderr:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** An OpenAI-compatible `/chat/completions` endpoint that writes one sentence per chunk. */
function startChatServer(): Promise<void> {
  chat = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
        response.writeHead(404).end();
        return;
      }
      chatCalls += 1;
      const content = body.includes("thirty days") ? RETENTION_SNIPPET : "This part of the notes describes a routine task.";
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 120, completion_tokens: 12 },
        }),
      );
    });
  });
  return new Promise((resolve) => {
    chat.listen(0, "127.0.0.1", () => {
      chatUrl = `http://127.0.0.1:${(chat.address() as AddressInfo).port}/v1`;
      resolve();
    });
  });
}

before(async () => {
  assert.ok(
    fs.existsSync(serverBin),
    `the situate binary was not found at ${serverBin}. Build it with \`cargo build\` at the repository root, ` +
      "or point SITUATE_BIN at a built binary (e.g. SITUATE_BIN=/path/to/situate npm test).",
  );
  await startChatServer();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "situate-vscode-snippets-"));
  const workspace = path.join(scratch, "notes");
  fs.cpSync(fixture, workspace, { recursive: true });

  // Neither key variable is needed with a base URL; leaving them out proves it.
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: path.join(scratch, "cache"), SITUATE_LOG: "warn" };
  delete env.OPENAI_API_KEY;
  delete env.ANTHROPIC_API_KEY;
  child = spawn(serverBin, ["lsp"], { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  connection = createProtocolConnection(
    new StreamMessageReader(child.stdout as NodeJS.ReadableStream),
    new StreamMessageWriter(child.stdin as NodeJS.WritableStream),
  );
  connection.onRequest(RegistrationRequest.type, () => undefined);
  connection.onNotification(ShowMessageNotification.type, ({ message }) => {
    shown.push(message);
  });
  connection.listen();

  const initializationOptions = serverSettings((key) => userSettings()[key]);
  assert.deepEqual(initializationOptions, {
    snippets: { model: "small-chat", base_url: chatUrl, concurrency: 1, max_calls: 3 },
  });
  const uri = pathToFileURL(workspace).toString();
  await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "notes" }],
    initializationOptions,
    capabilities: { workspace: { didChangeWatchedFiles: { dynamicRegistration: true }, workspaceFolders: true } },
  });
  await connection.sendNotification(InitializedNotification.type, {});
});

after(() => {
  connection?.dispose();
  if (child && child.exitCode === null) {
    child.kill();
  }
  chat?.close();
  if (scratch) {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
});

test("a spent budget pauses the snippets, and the report says why and what starts a new period", async () => {
  // The status and the message travel separately: wait for both.
  const folder = await waitFor("the snippet budget to be spent and the pause shown", async () => {
    const f = await folderStatus();
    return f.snippets?.state === "paused" && shown.length > 0 ? f : undefined;
  });
  assert.equal(folder.phase, "ready");
  assert.equal(folder.index?.snippets?.max_calls, 3);
  assert.equal(folder.snippets?.totals.calls, 3, "the budget of 3 calls holds");
  assert.equal(folder.index?.snippets?.done, 3);
  assert.equal(folder.index?.snippets?.pending, CHUNKS - 3);
  assert.equal(chatCalls, 3);
  assert.equal(shown.length, 1, `the pause is shown once: ${shown.join(" | ")}`);

  const lines = snippetLines(folder);
  console.log(lines.join("\n"));
  assert.match(lines[0], /^- Snippets: paused · 3 written, 5 pending · 3 calls, 360 input \+ 36 output tokens this period · `openai\/small-chat@127\.0\.0\.1:\d+` \(section mode\)$/);
  assert.match(lines[1], /^ {2}- Paused: .*budget.*\*\*Situate: Reindex Workspace\*\* starts a new budget period\.$/);
  assert.equal(lines[2], "  - Budget per period: 3 calls, unlimited tokens");
  assert.ok(statusReport({ folders: [folder] }).includes(lines[0]));
  assert.match(statusBarText({ folders: [folder] }).tooltip, /3 snippets written, 5 waiting \(paused: the budget is spent\)/);
});

test("a full reindex starts a new budget period", async () => {
  await execute(ServerCommand.reindex, {});
  const folder = await waitFor("the second period's budget to be spent", async () => {
    const f = await folderStatus();
    return f.snippets?.state === "paused" && f.index?.snippets?.done === 6 ? f : undefined;
  });
  assert.equal(folder.snippets?.totals.calls, 3, "the totals are those of the new period");
  assert.equal(folder.index?.snippets?.pending, CHUNKS - 6);
  assert.equal(chatCalls, 6);
});

test("a larger budget from the settings finishes the snippets, and search finds their words", async () => {
  await connection.sendNotification(
    DidChangeConfigurationNotification.type,
    configurationChange(serverSettings((key) => userSettings({ "snippets.maxCalls": 100, "search.snippetBoost": 2 })[key])),
  );
  const folder = await waitFor("every chunk to have its snippet", async () => {
    const f = await folderStatus();
    return f.snippets?.state === "idle" && f.index?.snippets?.pending === 0 ? f : undefined;
  });
  assert.equal(folder.index?.snippets?.done, CHUNKS);
  assert.equal(folder.index?.snippets?.max_calls, 100);
  assert.equal(chatCalls, CHUNKS, "snippets already written are not asked for again");
  const lines = snippetLines(folder);
  console.log(lines.join("\n"));
  assert.match(lines[0], /^- Snippets: idle · 8 written, 0 pending · /);
  assert.equal(lines.length, 2, "no reason once idle");

  const answer = await execute<SearchAnswer>(ServerCommand.search, { query: "archival lifespan", mode: "bm25" });
  assert.equal(answer.hits[0]?.path, "ops/backup.md", "the snippet's words find their chunk");
});

test("turning snippets off removes them from the report", async () => {
  const settings = serverSettings((key) => userSettings({ "snippets.enabled": false })[key]);
  assert.equal((settings.snippets as Record<string, unknown>).enabled, false);
  await connection.sendNotification(DidChangeConfigurationNotification.type, configurationChange(settings));
  const folder = await waitFor("snippets to be off", async () => {
    const f = await folderStatus();
    return f.phase === "ready" && f.index && !f.index.snippets ? f : undefined;
  });
  // The folder may still carry its queue's last state; the index says snippets are off.
  assert.deepEqual(snippetLines(folder), []);
  assert.ok(!statusReport({ folders: [folder] }).includes("Snippets"));
  assert.ok(!statusBarText({ folders: [folder] }).tooltip.includes("snippet"));
});

test("shutdown and exit end the server with code 0", async () => {
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await connection.sendRequest(ShutdownRequest.type);
  await connection.sendNotification(ExitNotification.type);
  assert.equal(await exited, 0);
});
