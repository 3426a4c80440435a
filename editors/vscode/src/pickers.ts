// The Search Workspace and Find Related pickers: QuickPicks over the server's hits that open a hit at its range.
import * as vscode from "vscode";
import { LatestQuery } from "./latestQuery";
import { ServerCommand, type Hit, type SearchAnswer, type SimilarParams } from "./protocol";
import { answerNotice, hitRows, termRanges, type HitRow } from "./results";
import { errorMessage, showCommandError, type Server } from "./server";

/** How long typing must pause before a search goes out. */
const TYPING_PAUSE_MS = 200;

interface HitItem extends vscode.QuickPickItem {
  row: HitRow;
}

function toItems(answer: SearchAnswer, alwaysShow: boolean): HitItem[] {
  // As VS Code names the file: with its folder only in a workspace of several.
  const placeOf = (hit: Hit): string => vscode.workspace.asRelativePath(vscode.Uri.parse(hit.uri));
  return hitRows(answer, placeOf).map((row) => ({
    label: row.label,
    description: row.description,
    detail: row.detail,
    alwaysShow,
    row,
  }));
}

/** How the words that matched are shown in an opened hit: as the editor's find matches. */
let matchDecoration: vscode.TextEditorDecorationType | undefined;

/**
 * Opens the hit's file with the chunk's range revealed and selected, and the words that
 * matched the query highlighted in it until the next hit opens.
 */
async function openHit(row: HitRow): Promise<void> {
  const range = new vscode.Range(row.range.start.line, row.range.start.character, row.range.end.line, row.range.end.character);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(row.uri), { selection: range });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  matchDecoration?.dispose();
  matchDecoration = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("editor.findMatchHighlightBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.findMatchForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
  });
  const lines: string[] = [];
  for (let line = range.start.line; line <= range.end.line && line < editor.document.lineCount; line++) {
    lines.push(editor.document.lineAt(line).text);
  }
  const places = termRanges(lines, range.start.line, row.terms).map((t) => new vscode.Range(t.line, t.start, t.line, t.end));
  editor.setDecorations(matchDecoration, places);
}

function acceptOpens(pick: vscode.QuickPick<HitItem>): void {
  pick.onDidAccept(() => {
    const item = pick.selectedItems[0] ?? pick.activeItems[0];
    if (!item) {
      return;
    }
    pick.hide();
    openHit(item.row).catch((error: unknown) => showCommandError("situate could not open the result", error));
  });
}

/** Situate: Search Workspace — searches as the user types. */
export function searchWorkspace(server: Server): void {
  const title = "Situate: Search Workspace";
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.title = title;
  pick.placeholder = "Search the workspace's notes in plain words, e.g. how long are backups kept?";
  // The server ranks; VS Code must neither filter the hits out nor match on their text.
  pick.matchOnDescription = false;
  pick.matchOnDetail = false;

  const latest = new LatestQuery<vscode.CancellationToken, SearchAnswer>({
    delayMs: TYPING_PAUSE_MS,
    run: (query, token) => server.execute<SearchAnswer>(ServerCommand.search, { query }, token),
    onResult: (query, answer) => {
      pick.items = toItems(answer, true);
      const notice = answerNotice(answer, query);
      pick.title = notice ? `${title} — ${notice}` : title;
    },
    onError: (_query, error) => {
      pick.items = [];
      pick.title = `${title} — ${errorMessage(error)}`;
    },
    onBusy: (busy) => {
      pick.busy = busy;
    },
    newSource: () => new vscode.CancellationTokenSource(),
    isStale: (answer) => answer.indexing,
  });
  // An answer from an index still building is asked again once a run ends, so that the
  // picker does not keep saying "no results yet" over a ready index.
  const caughtUp = server.onProgress(({ ended }) => {
    if (ended) {
      latest.refresh();
    }
  });

  pick.onDidChangeValue((value) => {
    if (value.trim() === "") {
      latest.cancel();
      pick.items = [];
      pick.title = title;
    } else {
      latest.update(value);
    }
  });
  acceptOpens(pick);
  pick.onDidHide(() => {
    caughtUp.dispose();
    latest.dispose();
    pick.dispose();
  });

  if (!server.running) {
    pick.title = `${title} — the server is not running`;
  }
  const selected = vscode.window.activeTextEditor?.document.getText(vscode.window.activeTextEditor.selection);
  pick.show();
  if (selected && selected.trim() !== "" && !selected.includes("\n")) {
    pick.value = selected.trim();
    latest.update(pick.value);
  }
}

/** Situate: Find Related — the chunks most related to the one under the cursor. */
export async function findRelated(server: Server): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== "file") {
    await vscode.window.showInformationMessage("Find Related works on a markdown or text file of the workspace: open one and place the cursor in it.");
    return;
  }
  const document = editor.document;
  const position = editor.selection.active;
  const params: SimilarParams = {
    uri: document.uri.toString(),
    position: { line: position.line, character: position.character },
  };
  let answer: SearchAnswer;
  try {
    answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "situate: finding related passages" },
      (_progress, token) => server.execute<SearchAnswer>(ServerCommand.similar, params, token),
    );
  } catch (error) {
    await showCommandError("Find Related failed", error);
    return;
  }

  const where = `${vscode.workspace.asRelativePath(document.uri)}:${position.line + 1}`;
  const pick = vscode.window.createQuickPick<HitItem>();
  const notice = answer.indexing
    ? "index still building"
    : answer.hits.length === 0
      ? "nothing related found"
      : undefined;
  pick.title = `Situate: Related to ${where}${notice ? ` — ${notice}` : ""}`;
  pick.placeholder = "Filter the related passages";
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  pick.items = toItems(answer, false);
  acceptOpens(pick);
  pick.onDidHide(() => pick.dispose());
  pick.show();
}
