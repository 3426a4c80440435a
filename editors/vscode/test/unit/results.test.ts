// Unit tests of how hits become picker rows: labels, descriptions, details, ranges and notices.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Hit, SearchAnswer } from "../../src/protocol";
import {
  answerNotice,
  escapeIcons,
  formatScore,
  hitDescription,
  hitDetail,
  hitLabel,
  hitRows,
  matchedTerms,
  termRanges,
} from "../../src/results";

const retention: Hit = {
  uri: "file:///home/me/notes/ops/backup.md",
  range: { start: { line: 9, character: 0 }, end: { line: 12, character: 22 } },
  path: "ops/backup.md",
  title: "Backup policy",
  heading_path: ["Backups", "Retention"],
  context: "Document: Backup policy > Backups > Retention",
  score: 0.1364,
  preview: "Snapshots are kept for thirty days. After that they are deleted for good, unless a",
  preview_marks: [[0, 9]],
  preview_line: 11,
};

test("the label is the title and the heading path", () => {
  assert.equal(hitLabel(retention), "Backup policy › Backups › Retention");
});

test("a first heading equal to the title is not repeated", () => {
  assert.equal(hitLabel({ ...retention, title: "Backups" }), "Backups › Retention");
});

test("a hit without headings is labelled with its title, and without a title with its path", () => {
  assert.equal(hitLabel({ ...retention, heading_path: [] }), "Backup policy");
  assert.equal(hitLabel({ ...retention, title: " ", heading_path: [] }), "ops/backup.md");
});

test("the description gives the 1-based line that matched and the score", () => {
  assert.equal(hitDescription(retention), "ops/backup.md:12 · 0.136");
  assert.equal(formatScore(0.5), "0.500");
});

test("the detail is the preview on one line, cut when long", () => {
  assert.equal(hitDetail({ preview: "  two\n\tlines  " }), "two lines");
  const long = hitDetail({ preview: "word ".repeat(100) });
  assert.equal(long.length, 200);
  assert.ok(long.endsWith("…"));
});

test("icon syntax in the text stays literal", () => {
  assert.equal(escapeIcons("run $(pwd) and $HOME"), "run \\$(pwd) and $HOME");
  assert.equal(hitLabel({ ...retention, title: "Shell $(subshells)" }), "Shell \\$(subshells) › Backups › Retention");
});

test("rows keep the server's order, uri and the chunk's own range", () => {
  const other: Hit = { ...retention, path: "ops/deploy.md", uri: "file:///x/ops/deploy.md", score: 0.05 };
  const rows = hitRows({ indexing: false, hits: [retention, other] });
  assert.deepEqual(
    rows.map((r) => r.uri),
    [retention.uri, other.uri],
  );
  assert.deepEqual(rows[0], {
    label: "Backup policy › Backups › Retention",
    description: "ops/backup.md:12 · 0.136",
    detail: retention.preview,
    uri: retention.uri,
    range: retention.range,
    terms: ["Snapshots"],
  });
});

test("the description shows the document's tags", () => {
  assert.equal(hitDescription({ ...retention, metadata: { Tags: ["backup", "#ops"] } }), "ops/backup.md:12 · #backup #ops · 0.136");
  assert.equal(hitDescription({ ...retention, metadata: { category: ["ops"] } }), "ops/backup.md:12 · 0.136");
});

test("the matched terms are the marked slices of the preview, once each", () => {
  const hit = { preview: "😀 keep … keep daily", preview_marks: [[3, 7], [10, 14], [15, 20]] as [number, number][] };
  assert.deepEqual(matchedTerms(hit), ["keep", "daily"]);
  assert.deepEqual(matchedTerms({ preview: "x", preview_marks: [] }), []);
});

test("term ranges are every place the terms occur in the chunk's lines, in order", () => {
  const lines = ["Keep keep", "", "we keep daily 😀 keep"];
  assert.deepEqual(termRanges(lines, 10, ["keep", "daily"]), [
    { line: 10, start: 5, end: 9 },
    { line: 12, start: 3, end: 7 },
    { line: 12, start: 8, end: 13 },
    { line: 12, start: 17, end: 21 },
  ]);
});

test("the notice says when the index is still building or nothing was found", () => {
  const empty: SearchAnswer = { indexing: false, hits: [] };
  assert.equal(answerNotice({ indexing: true, hits: [] }, "x"), "index still building: no results yet");
  assert.equal(answerNotice({ indexing: true, hits: [retention] }, "x"), "index still building: results come from the last commit");
  assert.equal(answerNotice(empty, " backups "), 'no results for "backups"');
  assert.equal(answerNotice(empty, ""), undefined);
  assert.equal(answerNotice({ indexing: false, hits: [retention] }, "x"), undefined);
});

test("rows name each file as the workspace does: with its folder when there are several", () => {
  const zh: Hit = { ...retention, path: "README.md", uri: "file:///w/zh/README.md" };
  const notes: Hit = { ...retention, path: "README.md", uri: "file:///w/notes/README.md" };
  const placeOf = (hit: Hit): string => hit.uri.replace("file:///w/", "");
  const rows = hitRows({ indexing: false, hits: [zh, notes] }, placeOf);
  assert.deepEqual(
    rows.map((r) => r.description),
    ["zh/README.md:12 · 0.136", "notes/README.md:12 · 0.136"],
  );
});

test("a long heading path keeps the title and the last headings, so the file and line stay in view", () => {
  const deep = {
    ...retention,
    title: "OpenID Connect Authentication",
    heading_path: ["Configuration Options", "redirectUrl", "Replace the Request URL with the Redirect URL"],
  };
  assert.equal(hitLabel(deep), "OpenID Connect Authentication › … › Replace the Request URL…");
  assert.ok(hitLabel(deep).length <= 60);
  const two = { ...deep, heading_path: ["Configuration Options", "redirectUrl", "Examples"] };
  assert.equal(hitLabel(two), "OpenID Connect Authentication › … › redirectUrl › Examples", "as many last headings as fit");
  assert.equal(hitLabel(retention), "Backup policy › Backups › Retention", "a short path is whole");
});
