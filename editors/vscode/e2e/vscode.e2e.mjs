// The extension in a real VS Code (code-server) driven through headless Chromium, step by step as a user would.
//
// run.sh packages the extension and calls this with the tools' paths in the environment.
// Each step leaves a screenshot in the artifacts folder; a failing step is named, with a
// screenshot of the moment and the end of code-server's log.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

const need = (name) => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`vscode e2e: ${name} is not set (run editors/vscode/e2e/run.sh)`);
  }
  return value;
};
const serverBinary = need("SITUATE_BIN");
const vsix = need("SITUATE_VSIX");
const codeServer = need("CODE_SERVER");
const chromiumPath = need("CHROMIUM");
const artifacts = need("SITUATE_E2E_ARTIFACTS");
const { chromium } = createRequire(path.join(need("PLAYWRIGHT_DIR"), "package.json"))("playwright-core");
const fixture = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../tests/data/workspace");

const QUERY = "how long are backups kept";
/** A word no note holds: only the vector arm finds anything for it. */
const NONSENSE_QUERY = "xylophone quarterly";
const NEW_WORDS = "The lighthouse ledger lists every quartz lantern";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "situate-vscode-e2e-"));
const workspace = path.join(work, "workspace");
fs.mkdirSync(artifacts, { recursive: true });
for (const old of fs.readdirSync(artifacts)) {
  if (old.endsWith(".png") || old.endsWith(".log")) {
    fs.rmSync(path.join(artifacts, old));
  }
}

let codeServerProcess;
let browser;
let page;
let stepNumber = 0;

/** Runs one step of the user's path, with a screenshot after it; a failure names the step. */
async function step(name, body) {
  stepNumber += 1;
  const file = `${String(stepNumber).padStart(2, "0")}-${name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
  const started = Date.now();
  try {
    await body();
    if (page) {
      await page.screenshot({ path: path.join(artifacts, `${file}.png`) });
    }
    console.log(`ok ${stepNumber} - ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    if (page) {
      await page.screenshot({ path: path.join(artifacts, `${file}-FAILED.png`) }).catch(() => {});
    }
    console.error(`not ok ${stepNumber} - ${name}`);
    console.error(`vscode e2e: the step "${name}" failed: ${error instanceof Error ? error.stack : error}`);
    if (page) {
      // What the window showed, for a failure seen only in a CI log.
      const toasts = await page.locator(".notification-toast").allInnerTexts().catch(() => []);
      console.error(`vscode e2e: toasts shown: ${JSON.stringify(toasts)}`);
      const status = await page.locator(".statusbar-item").allInnerTexts().catch(() => []);
      console.error(`vscode e2e: status bar: ${JSON.stringify(status.filter((t) => t.trim()))}`);
    }
    console.error(`vscode e2e: screenshots and code-server's log are in ${artifacts}`);
    await shutDown();
    process.exit(1);
  }
}

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

async function shutDown() {
  await browser?.close().catch(() => {});
  if (codeServerProcess && codeServerProcess.exitCode === null) {
    // code-server runs in a process group of its own: its extension host and the language
    // server it starts end with it.
    try {
      process.kill(-codeServerProcess.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-codeServerProcess.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
        resolve();
      }, 5_000);
      codeServerProcess.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  fs.rmSync(work, { recursive: true, force: true });
}

/** The workspace: the test fixture, plus generated notes, so that their vectors take seconds to fill in. */
function makeWorkspace() {
  fs.cpSync(fixture, workspace, { recursive: true });
  const subjects = ["the orchard", "the chess club", "the sailing course", "the choir", "the allotment", "the telescope"];
  const sentences = [
    "Meetings start at seven and end when the last question is answered.",
    "Bring a notebook, a pencil and something warm to wear.",
    "The committee reads every proposal before the spring vote.",
    "Volunteers rotate each month so that nobody carries the load alone.",
    "Photographs from the last gathering hang in the hallway.",
    "New members are paired with someone who has been around for a year.",
  ];
  fs.mkdirSync(path.join(workspace, "clubs"));
  for (let i = 0; i < 120; i++) {
    const subject = subjects[i % subjects.length];
    const body = [0, 1, 2, 3].map((k) => sentences[(i + k) % sentences.length]).join(" ");
    const text = `# Notes on ${subject}, week ${i}\n\n${body}\n\n## Plans\n\n${sentences[(i + 4) % sentences.length]} ${body}\n`;
    fs.writeFileSync(path.join(workspace, "clubs", `week-${String(i).padStart(3, "0")}.md`), text);
  }
}

function writeSettings(userData) {
  const settings = {
    // Restricted Mode would keep the extension off in a folder it has not been told to trust.
    "security.workspace.trust.enabled": false,
    "situate.server.path": serverBinary,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    // Screenshots then show the pickers fully drawn, not halfway through a fade.
    "workbench.reduceMotion": "on",
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
    "editor.wordBasedSuggestions": "off",
    "editor.hover.delay": 200,
    "files.autoSave": "off",
  };
  // A browser window of code-server is a remote window: settings of machine scope
  // (situate.server.path is one) are read from the machine's settings, not the user's.
  for (const scope of ["User", "Machine"]) {
    fs.mkdirSync(path.join(userData, scope), { recursive: true });
    fs.writeFileSync(path.join(userData, scope, "settings.json"), JSON.stringify(settings, null, 2));
  }
}

function runCodeServer(args, options = {}) {
  return spawn(codeServer, args, {
    env: {
      ...process.env,
      XDG_CONFIG_HOME: path.join(work, "xdg"),
      XDG_DATA_HOME: path.join(work, "xdg"),
      // The language server the extension starts inherits this: its log lands beside the screenshots.
      SITUATE_LOG_FILE: path.join(artifacts, "situate-server.log"),
    },
    stdio: ["ignore", "pipe", "pipe"],
    ...options,
  });
}

const codeServerLog = () => path.join(artifacts, "code-server.log");

/** The texts the situate status-bar item has shown, in order (recorded in the page from its first paint). */
const statusTexts = () => page.evaluate(() => window.situateStatusTexts ?? []);

/** The words under the matched-word highlights of the active editor, each with its 1-based line. */
function highlightedWords() {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-group-container.active .monaco-editor");
    if (!editor) {
      return [];
    }
    const lineAt = (top) => {
      for (const number of editor.querySelectorAll(".margin-view-overlays .line-numbers")) {
        const box = number.getBoundingClientRect();
        if (Math.abs(box.top - top) < 2) {
          return Number(number.textContent.trim());
        }
      }
      return undefined;
    };
    const words = [];
    // createTextEditorDecorationType's decorations are drawn as `ced-…` overlays.
    for (const mark of editor.querySelectorAll(".view-overlays div[class*='ced-']")) {
      const box = mark.getBoundingClientRect();
      const line = [...editor.querySelectorAll(".view-line")].find((l) => Math.abs(l.getBoundingClientRect().top - box.top) < 2);
      if (!line) {
        continue;
      }
      // The text of the line under the overlay, by character positions.
      let text = "";
      const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const r = range.getBoundingClientRect();
          const middle = r.left + r.width / 2;
          if (middle > box.left && middle < box.right) {
            text += node.data[i];
          }
        }
      }
      words.push({ line: lineAt(box.top), word: text.replace(/\u00a0/g, " ") });
    }
    return words;
  });
}

const quickInput = () => page.locator(".quick-input-widget input");
const pickRows = () => page.locator(".quick-input-widget .quick-input-list .monaco-list-row");
const statusItem = () => page.locator("[id='situate.situate']");

/** Runs a command from the palette, as a user types its name. */
async function runCommand(title) {
  await page.keyboard.press("F1");
  await quickInput().waitFor({ state: "visible", timeout: 10_000 });
  await quickInput().fill(`>${title}`);
  const row = pickRows().filter({ hasText: title }).first();
  await row.waitFor({ timeout: 10_000 });
  await page.keyboard.press("Enter");
}

const pickerTitle = () => page.locator(".quick-input-widget .quick-input-title");

/** Opens Search Workspace and types a query; resolves once the picker shows an answer (hits or a notice). */
async function search(query) {
  await runCommand("Situate: Search Workspace");
  await pickerTitle().filter({ hasText: "Situate: Search Workspace" }).waitFor({ timeout: 10_000 });
  await quickInput().pressSequentially(query, { delay: 20 });
  await pickRows().first().or(pickerTitle().filter({ hasText: "—" })).first().waitFor({ timeout: 20_000 });
}

/**
 * Searches until `answered` holds for what the picker shows, as a user types the query
 * again after the index has caught up (a save, a new setting); fails after `seconds`.
 */
async function searchUntil(query, answered, seconds, what) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    await search(query);
    // The rows of one answer are drawn together; give a late answer a moment.
    await page.waitForTimeout(300);
    const rows = (await pickRows().allInnerTexts()).map((r) => r.replace(/\u00a0/g, " "));
    const title = await pickerTitle().innerText();
    if (answered(rows, title)) {
      return { rows, title };
    }
    if (Date.now() > deadline) {
      throw new Error(`for "${query}" the picker never showed ${what}; it shows "${title}" over ${JSON.stringify(rows.slice(0, 3))}`);
    }
    await page.keyboard.press("Escape");
    await page.waitForTimeout(1_000);
  }
}

const userData = path.join(work, "user-data");
const extensions = path.join(work, "extensions");

await step("install the packaged extension", async () => {
  makeWorkspace();
  writeSettings(userData);
  const install = runCodeServer(["--user-data-dir", userData, "--extensions-dir", extensions, "--install-extension", vsix]);
  let out = "";
  install.stdout.on("data", (d) => (out += d));
  install.stderr.on("data", (d) => (out += d));
  const code = await new Promise((resolve) => install.on("exit", resolve));
  check(code === 0 && /successfully installed/.test(out), `code-server --install-extension failed (exit ${code}): ${out}`);
  const installed = fs.readdirSync(extensions).filter((d) => d.startsWith("situate.situate-"));
  check(installed.length === 1, `the extensions folder holds ${JSON.stringify(fs.readdirSync(extensions))}`);
});

await step("start code-server and open the workspace", async () => {
  fs.writeFileSync(path.join(work, "config.yaml"), "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
  const log = fs.createWriteStream(codeServerLog());
  codeServerProcess = runCodeServer(
    [
      "--config", path.join(work, "config.yaml"),
      "--user-data-dir", userData,
      "--extensions-dir", extensions,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--ignore-last-opened",
    ],
    { detached: true },
  );
  codeServerProcess.stderr.pipe(log);
  const address = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`code-server did not start listening in 60 s: ${seen}`)), 60_000);
    codeServerProcess.stdout.on("data", (chunk) => {
      log.write(chunk);
      seen += chunk;
      const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    codeServerProcess.on("exit", (code) => reject(new Error(`code-server exited (${code}): ${seen}`)));
  });
  const url = `${address}/?folder=${encodeURIComponent(workspace)}`;

  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Records every text of the situate status-bar item from the first paint on, so that
  // the indexing states, however brief, are seen.
  await page.addInitScript(() => {
    window.situateStatusTexts = [];
    const record = () => {
      const item = document.getElementById("situate.situate");
      if (!item) {
        return;
      }
      const icon = item.querySelector(".codicon")?.className.match(/codicon-([\w-]+)/)?.[1] ?? "";
      const text = `${icon}|${item.textContent.trim()}`;
      const texts = window.situateStatusTexts;
      if (texts[texts.length - 1] !== text) {
        texts.push(text);
      }
    };
    new MutationObserver(record).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
  });
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await page.locator(".explorer-folders-view").getByText("clubs", { exact: true }).waitFor({ timeout: 60_000 });
});

await step("the status bar shows the index searchable while its vectors fill in, then complete", async () => {
  // The files are indexed in a fraction of a second, often while the window is still
  // activating its extensions; the e5 vectors take seconds more, and that is the progress a
  // user watches. Wait for its end: "situate: 248 chunks", with no vectors left.
  await statusItem().filter({ hasText: /situate: [\d,]+ chunks\s*$/ }).waitFor({ timeout: 300_000 });
  const texts = await statusTexts();
  const filling = texts.findIndex((t) => /^search\|situate: [\d,]+ chunks, vectors \d+%$/.test(t));
  const complete = texts.findIndex((t) => /^search\|situate: [\d,]+ chunks$/.test(t));
  check(filling >= 0, `the status bar never showed the vectors filling in: ${JSON.stringify(texts)}`);
  check(complete > filling, `the status bar did not go from the vectors filling in to complete: ${JSON.stringify(texts)}`);
  // Percentages never go back while the vectors fill.
  const shares = texts.slice(filling, complete).map((t) => /vectors (\d+)%$/.exec(t)?.[1]).filter(Boolean).map(Number);
  check(shares.every((p, i) => i === 0 || p >= shares[i - 1]), `the vectors' share went back: ${JSON.stringify(texts)}`);
  // The indexing percentage, when the window drew it in time, comes before the index is ready.
  const indexing = texts.findLastIndex((t) => /^sync\|situate \d+%$/.test(t));
  check(indexing < filling, `indexing progress came after the index was ready: ${JSON.stringify(texts)}`);
  const chunks = Number(/situate: ([\d,]+) chunks/.exec(texts[complete])[1].replace(/,/g, ""));
  // 4 fixture files make 8 chunks; each generated note makes 2.
  check(chunks === 8 + 2 * 120, `the status bar counts ${chunks} chunks: ${texts[complete]}`);
  console.log(`  status bar: ${texts.map((t) => t.split("|")[1]).join(" → ")}`);
});

await step("the status bar opens the status report", async () => {
  await statusItem().click();
  const tab = page.locator(".tabs-container .tab").filter({ hasText: "index-status.md" });
  await tab.waitFor({ timeout: 15_000 });
  const editor = page.locator(".editor-group-container.active .monaco-editor .view-lines");
  await editor.getByText("# situate index status").waitFor({ timeout: 15_000 });
  const report = await editor.innerText();
  check(report.replace(/\u00a0/g, " ").includes("Files: 124 · chunks: 248"), `the report does not count 124 files and 248 chunks:\n${report}`);
});

await step("the palette lists the Situate commands", async () => {
  await page.keyboard.press("F1");
  await quickInput().waitFor({ state: "visible", timeout: 10_000 });
  await quickInput().fill(">Situate:");
  await pickRows().filter({ hasText: "Situate: Search Workspace" }).first().waitFor({ timeout: 10_000 });
  const titles = (await pickRows().allInnerTexts()).map((t) => t.split("\n")[0]);
  for (const command of ["Search Workspace", "Reindex Workspace", "Show Index Status", "Restart Server"]) {
    check(titles.some((t) => t.includes(`Situate: ${command}`)), `the palette lacks "Situate: ${command}": ${JSON.stringify(titles)}`);
  }
  await page.keyboard.press("Escape");
});

await step(`Search Workspace lists ops/backup.md with its heading path and line for "${QUERY}"`, async () => {
  const { rows } = await searchUntil(QUERY, (rows) => rows.length > 0, 20, "any hit");
  const first = rows[0];
  check(first.includes("Backup policy › Backups › Retention"), `the first pick lacks the heading path: ${first}`);
  // In a workspace of one folder the file is named without the folder's name.
  const place = (await pickRows().first().locator(".label-description").innerText()).replace(/\u00a0/g, " ");
  check(place.startsWith("ops/backup.md:12 "), `the first pick is not ops/backup.md:12: ${place}`);
  check(first.includes("Snapshots are kept for thirty days."), `the first pick lacks the matching line: ${first}`);
});

await step("Enter opens the passage, selected, with the matched words highlighted", async () => {
  await page.keyboard.press("Enter");
  await page.locator(".tabs-container .tab.active").filter({ hasText: "backup.md" }).waitFor({ timeout: 15_000 });
  const passage = fs.readFileSync(path.join(workspace, "ops/backup.md"), "utf8").split("\n").slice(9, 13);
  const selected = passage.join("\n").length;
  const where = `Ln 13, Col ${passage[3].length + 1} (${selected} selected)`;
  await page.locator("[id='status.editor.selection']").filter({ hasText: where }).waitFor({ timeout: 10_000 });
  // The highlights are set just after the editor opens.
  let words = [];
  for (const deadline = Date.now() + 10_000; words.length === 0 && Date.now() < deadline; ) {
    await page.waitForTimeout(200);
    words = await highlightedWords();
  }
  check(words.length > 0, "no word of the passage is highlighted");
  check(words.some((w) => w.line === 12 && w.word === "kept"), `"kept" on line 12 is not highlighted: ${JSON.stringify(words)}`);
  check(words.every((w) => w.line >= 10 && w.line <= 13), `a highlight lies outside lines 10–13: ${JSON.stringify(words)}`);
  // Collapse the selection so that the screenshot shows the highlights.
  await page.keyboard.press("ArrowRight");
});

await step("hover on a paragraph shows the context its chunk was indexed with", async () => {
  const line = page.locator(".editor-group-container.active .view-line").filter({ hasText: "Snapshots are kept" });
  await line.hover({ position: { x: 40, y: 5 } });
  const hover = page.locator(".monaco-hover .hover-contents, .monaco-hover .rendered-markdown").filter({ hasText: "Indexed with the context" }).first();
  await hover.waitFor({ timeout: 15_000 });
  const text = (await hover.innerText()).replace(/\u00a0/g, " ");
  check(text.includes("Backups › Retention"), `the hover lacks the heading path: ${text}`);
  check(text.includes("ops/backup.md") && text.includes("lines 10–13"), `the hover lacks the place: ${text}`);
  check(text.includes("Document: Backup policy > Backups > Retention"), `the hover lacks the context: ${text}`);
});

await step("an edited and saved file is found by its new words", async () => {
  await page.mouse.move(5, 400);
  await page.locator(".editor-group-container.active .view-line").filter({ hasText: "Snapshots are kept" }).click();
  await page.keyboard.press("Control+End");
  await page.keyboard.press("Enter");
  await page.keyboard.type(`${NEW_WORDS}.`, { delay: 5 });
  await page.keyboard.press("Control+S");
  await page.locator(".tabs-container .tab.active.dirty").waitFor({ state: "detached", timeout: 10_000 });
  check(fs.readFileSync(path.join(workspace, "ops/backup.md"), "utf8").includes(NEW_WORDS), "the save did not reach the file");
  const { rows } = await searchUntil("quartz lantern ledger", (rows) => rows.some((r) => r.includes(NEW_WORDS)), 30, "the new paragraph");
  check(rows[0].includes("ops/backup.md:20") && rows[0].includes(NEW_WORDS), `the first pick is not the new paragraph: ${rows[0]}`);
  await page.keyboard.press("Escape");
});

await step(`with the search mode set to bm25 in the Settings editor, "${NONSENSE_QUERY}" finds nothing`, async () => {
  // In the default hybrid mode the vector arm answers any query with its nearest passages.
  await searchUntil(NONSENSE_QUERY, (rows) => rows.length > 0, 20, "the vector arm's hits");
  await page.keyboard.press("Escape");

  await runCommand("Preferences: Open Settings (UI)");
  // The Settings editor opens with the keyboard in its search box.
  await page.locator(".settings-editor .settings-header .suggest-input-container").waitFor({ timeout: 15_000 });
  await page.keyboard.type("situate.search.mode");
  const setting = page.locator(".settings-editor .setting-item-enum").filter({ hasText: "Search: Mode" }).first();
  await setting.waitFor({ timeout: 15_000 });
  await setting.locator("select").selectOption("bm25");
  const userSettings = () => JSON.parse(fs.readFileSync(path.join(userData, "User", "settings.json"), "utf8"));
  for (const deadline = Date.now() + 10_000; userSettings()["situate.search.mode"] !== "bm25" && Date.now() < deadline; ) {
    await page.waitForTimeout(200);
  }
  check(userSettings()["situate.search.mode"] === "bm25", `the user settings hold ${JSON.stringify(userSettings()["situate.search.mode"])}`);
  await page.screenshot({ path: path.join(artifacts, `${String(stepNumber).padStart(2, "0")}-settings-editor.png`) });
  await page.keyboard.press("Escape");
  await page.locator(".settings-editor").waitFor({ state: "hidden", timeout: 10_000 }).catch(() => page.keyboard.press("Control+W"));

  // The server reopens the folder with the new settings; a search soon goes by words only.
  const { title } = await searchUntil(NONSENSE_QUERY, (rows, title) => rows.length === 0 && title.includes("no results for"), 30, "no results");
  check(title.includes(`no results for "${NONSENSE_QUERY}"`), `in bm25 mode the picker says: ${title}`);
});

await step("a wrong server binary, then a missing one, are reported with a button to the setting; a right one starts the server at once", async () => {
  await page.keyboard.press("Escape");
  // The user edits the machine's settings.json by hand, first naming an older build that
  // lacks the language server, and restarts as offered.
  const machineSettings = path.join(userData, "Machine", "settings.json");
  const settings = JSON.parse(fs.readFileSync(machineSettings, "utf8"));
  // Written whole and renamed into place, as editors save: code-server could otherwise read
  // the file between its truncation and the write that follows, and see no settings at all.
  const setServerPath = (value) => {
    fs.writeFileSync(`${machineSettings}.new`, JSON.stringify({ ...settings, "situate.server.path": value }, null, 2));
    fs.renameSync(`${machineSettings}.new`, machineSettings);
  };
  const older = path.join(work, "older-situate");
  fs.writeFileSync(older, "#!/bin/sh\necho \"error: unrecognized subcommand 'lsp'\" >&2\nexit 2\n", { mode: 0o755 });
  setServerPath(older);
  const toast = (text) => page.locator(".notification-toast").filter({ hasText: text });
  await toast("Restart the server to apply them?").getByRole("button", { name: "Restart" }).click({ timeout: 15_000 });
  // Once, with what the binary said, and without restarting it again and again.
  await toast("unrecognized subcommand 'lsp'").filter({ hasText: "situate.server.path" }).waitFor({ timeout: 15_000 });
  await statusItem().locator(".codicon-circle-slash").waitFor({ timeout: 10_000 });
  check((await toast("will not be restarted").count()) === 0, "the binary was restarted until the client gave up");
  check((await toast("couldn't create connection").count()) === 0, "the failed start was reported twice");

  // A server that does not run starts at once with the next path, here a missing one. The
  // toasts so far are cleared first, as a user would, so that the next one shows alone.
  await runCommand("Notifications: Clear All Notifications");
  await page.locator(".notification-toast").first().waitFor({ state: "hidden", timeout: 10_000 });
  setServerPath(path.join(work, "no-such-situate"));
  const error = toast("which is not an executable file");
  // The settings file is watched, and on two loaded cores its change can take a while.
  await error.waitFor({ timeout: 30_000 });
  check((await toast("Restart the server").count()) === 0, "a restart was offered for a server that was not running");
  await error.getByRole("button", { name: "Open Settings" }).click();
  // In code-server's remote window the setting, of machine scope, is listed under the Remote tab alone.
  const setting = page.locator(".settings-editor .setting-item").filter({ hasText: "Server: Path" }).first();
  await setting.waitFor({ timeout: 15_000 });
  const input = setting.locator("input").first();
  check((await input.inputValue()).endsWith("no-such-situate"), `the setting shown holds ${await input.inputValue()}`);
  await input.fill(serverBinary);
  await input.press("Tab");
  // The server was not running: it starts with the new path, without a question.
  await statusItem().filter({ hasText: /situate: [\d,]+ chunks/ }).waitFor({ timeout: 60_000 });
  check((await toast("Restart the server").count()) === 0, "a restart was offered for a server that was not running");

  // The situate output channel says which binary runs, and kept the error.
  await page.keyboard.press("Escape");
  await runCommand("Output: Show Output Channels...");
  await pickRows().filter({ hasText: /^situate$/ }).first().click({ timeout: 10_000 });
  const output = page.locator(".panel .monaco-editor .view-lines").first();
  const started = `Starting ${serverBinary} lsp (from situate.server.path)`;
  let text = "";
  for (const deadline = Date.now() + 10_000; !text.includes(started) && Date.now() < deadline; ) {
    await page.waitForTimeout(200);
    // Long lines wrap after a space; joining the rows gives the lines back.
    text = (await output.innerText()).replace(/\u00a0/g, " ").replace(/\n/g, "");
  }
  check(text.includes(started), `the output channel does not say which binary runs: ${text}`);
  check(text.includes("no-such-situate, which is not an executable file"), `the output channel does not keep the missing binary's error: ${text}`);
});

await shutDown();
console.log(`vscode e2e: all ${stepNumber} steps passed; screenshots in ${artifacts}`);
