// Unit tests of the settings mapping: VS Code keys to situate.toml keys, unset values left out.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { configurationChange, explicitValue, sameSettings, SERVER_SETTINGS, serverSettings } from "../../src/settings";

const packageRoot = path.resolve(__dirname, "../../..");

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

test("nothing set sends an empty object", () => {
  assert.deepEqual(serverSettings(reader({})), {});
});

test("set values are nested under their situate.toml keys in snake_case", () => {
  const settings = serverSettings(
    reader({
      "search.limit": 20,
      "search.mode": "bm25",
      "search.rrfK": 30,
      "chunk.maxTokens": 300,
      exclude: ["drafts/**"],
      maxFileBytes: 1000,
      "embedding.modelPath": "/models/m2v",
    }),
  );
  assert.deepEqual(settings, {
    exclude: ["drafts/**"],
    max_file_bytes: 1000,
    chunk: { max_tokens: 300 },
    search: { mode: "bm25", limit: 20, rrf_k: 30 },
    embedding: { model_path: "/models/m2v" },
  });
});

test("unset, null and empty paths are left out; other empty values are sent", () => {
  const settings = serverSettings(
    reader({
      "search.limit": undefined,
      "search.mode": null,
      indexDir: "",
      "embedding.modelPath": "",
      "context.headerTemplate": "",
      exclude: [],
    }),
  );
  assert.deepEqual(settings, { exclude: [], context: { header_template: "" } });
});

test("the most specific scope wins and schema defaults are ignored", () => {
  assert.equal(explicitValue(undefined), undefined);
  assert.equal(explicitValue({}), undefined);
  assert.equal(explicitValue({ globalValue: 5 }), 5);
  assert.equal(explicitValue({ globalValue: 5, workspaceValue: 7 }), 7);
  assert.equal(explicitValue({ globalValue: 5, workspaceValue: 7, workspaceFolderValue: 9 }), 9);
  assert.equal(explicitValue({ globalValue: 5, workspaceValue: null }), 5);
  assert.equal(explicitValue({ defaultValue: 10 }), undefined);
});

test("a configuration change carries the settings under settings.situate", () => {
  assert.deepEqual(configurationChange({ search: { limit: 1 } }), { settings: { situate: { search: { limit: 1 } } } });
  assert.ok(sameSettings({ search: { limit: 1 } }, serverSettings(reader({ "search.limit": 1 }))));
  assert.ok(!sameSettings({ search: { limit: 1 } }, {}));
});

interface ConfigurationProperty {
  type: string;
  default?: unknown;
  enum?: string[];
}

function contributedProperties(): Record<string, ConfigurationProperty> {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, ConfigurationProperty> } };
  };
  return manifest.contributes.configuration.properties;
}

test("every contributed setting is mapped, except the extension's own", () => {
  const own = ["situate.server.path", "situate.server.logLevel", "situate.trace.server"];
  const contributed = Object.keys(contributedProperties()).filter((k) => !own.includes(k));
  const mapped = SERVER_SETTINGS.map((s) => `situate.${s.key}`);
  assert.deepEqual([...contributed].sort(), [...mapped].sort());
});

test("the mapped keys and the contributed defaults are those of the README's situate.toml", () => {
  // The README's Configuration section is the reference for the server's keys and defaults.
  const readme = fs.readFileSync(path.join(packageRoot, "../../README.md"), "utf8");
  const block = /## Configuration[\s\S]*?```toml\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, "README has a ```toml block under ## Configuration");
  const documented = new Map<string, string>();
  let table = "";
  for (const raw of block.split("\n")) {
    const line = raw.replace(/^#\s*/, "");
    const section = /^\[(\w+)\]/.exec(line);
    if (section) {
      table = `${section[1]}.`;
      continue;
    }
    const entry = /^(\w+)\s*=\s*(.*?)\s*(#.*)?$/.exec(line);
    if (entry) {
      documented.set(table + entry[1], entry[2]);
    }
  }
  const properties = contributedProperties();
  for (const spec of SERVER_SETTINGS) {
    assert.ok(documented.has(spec.server), `${spec.server} is a key of situate.toml`);
    const value = documented.get(spec.server) as string;
    const property = properties[`situate.${spec.key}`];
    // index_dir and model_path are examples in the README, not defaults.
    if (spec.emptyIsUnset) {
      assert.equal(property.default, "");
      continue;
    }
    if (spec.server === "exclude") {
      assert.deepEqual(property.default, []);
      continue;
    }
    assert.deepEqual(property.default, JSON.parse(value), `default of situate.${spec.key}`);
  }
  assert.equal(documented.size, SERVER_SETTINGS.length, "every key of situate.toml has a setting");
});
