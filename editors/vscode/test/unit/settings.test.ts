// Unit tests of the settings mapping: VS Code keys to situate.toml keys, unset values left out.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { configurationChange, explicitValue, openMachineSetting, sameSettings, SERVER_SETTINGS, serverSettings } from "../../src/settings";

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

test("remote embedding and snippet settings map to their snake_case keys", () => {
  const settings = serverSettings(
    reader({
      "embedding.provider": "openai",
      "embedding.model": "nomic-embed-text",
      "embedding.baseUrl": "http://localhost:11434/v1",
      "embedding.apiKeyEnv": "EMBED_KEY",
      "embedding.dimensions": 768,
      "search.snippetBoost": 0.5,
      "snippets.enabled": true,
      "snippets.provider": "anthropic",
      "snippets.model": "claude-3-5-haiku-latest",
      "snippets.baseUrl": "https://api.anthropic.com",
      "snippets.apiKeyEnv": "ANTHROPIC_API_KEY",
      "snippets.mode": "document",
      "snippets.concurrency": 8,
      "snippets.maxCalls": 100,
      "snippets.maxRunTokens": 200000,
      "snippets.maxTokens": 200,
      "snippets.documentBudget": 8000,
    }),
  );
  assert.deepEqual(settings, {
    search: { snippet_boost: 0.5 },
    embedding: {
      provider: "openai",
      model: "nomic-embed-text",
      base_url: "http://localhost:11434/v1",
      api_key_env: "EMBED_KEY",
      dimensions: 768,
    },
    snippets: {
      enabled: true,
      provider: "anthropic",
      model: "claude-3-5-haiku-latest",
      base_url: "https://api.anthropic.com",
      api_key_env: "ANTHROPIC_API_KEY",
      mode: "document",
      concurrency: 8,
      max_calls: 100,
      max_run_tokens: 200000,
      max_tokens: 200,
      document_budget: 8000,
    },
  });
});

test("no snippet setting set sends no [snippets] table, so situate.toml alone turns snippets on", () => {
  const settings = serverSettings(
    reader({ "snippets.model": "", "snippets.baseUrl": "", "snippets.apiKeyEnv": "", "snippets.maxRunTokens": null }),
  );
  assert.deepEqual(settings, {});
  // Turning snippets off sends the table with enabled = false and nothing else.
  assert.deepEqual(serverSettings(reader({ "snippets.enabled": false })), { snippets: { enabled: false } });
  // A local server: a model and a base URL, and no key variable.
  assert.deepEqual(
    serverSettings(reader({ "snippets.model": "llama3.2", "snippets.baseUrl": "http://localhost:11434/v1", "snippets.apiKeyEnv": "" })),
    { snippets: { model: "llama3.2", base_url: "http://localhost:11434/v1" } },
  );
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
  type: string | string[];
  default?: unknown;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  markdownDescription?: string;
  scope?: string;
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

/** The keys of the situate.toml in docs/configuration.md, with their values. */
function documentedKeys(): Map<string, string> {
  // The configuration page is the reference for the server's keys and defaults.
  const page = fs.readFileSync(path.join(packageRoot, "../../docs/configuration.md"), "utf8");
  const block = /^# Configuration[\s\S]*?```toml\n([\s\S]*?)```/m.exec(page)?.[1];
  assert.ok(block, "docs/configuration.md has a ```toml block under # Configuration");
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
  return documented;
}

/** The Rust sources of the server, concatenated. */
function serverSources(): string {
  const texts: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
      } else if (entry.name.endsWith(".rs")) {
        texts.push(fs.readFileSync(full, "utf8"));
      }
    }
  };
  walk(path.join(packageRoot, "../../src"));
  return texts.join("\n");
}

test("the mapped keys and the contributed defaults are those of the documented situate.toml", () => {
  const documented = documentedKeys();
  const properties = contributedProperties();
  for (const spec of SERVER_SETTINGS) {
    if (!documented.has(spec.server)) {
      continue; // Keys documented in other sections: checked below.
    }
    const value = documented.get(spec.server) as string;
    const property = properties[`situate.${spec.key}`];
    // index_dir and model_path are examples on the page, not defaults.
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
  for (const key of documented.keys()) {
    assert.ok(
      SERVER_SETTINGS.some((s) => s.server === key),
      `${key} of the documented situate.toml has a setting`,
    );
  }
});

test("the keys beyond the documented situate.toml are keys the server reads", () => {
  // Remote embeddings and snippets have their own pages; the server names each key it
  // reads in its problems (`"snippets.max_calls"`), so the key must appear in its sources.
  const documented = documentedKeys();
  const sources = serverSources();
  const others = SERVER_SETTINGS.filter((s) => !documented.has(s.server));
  assert.ok(others.some((s) => s.server.startsWith("snippets.")));
  for (const spec of others) {
    assert.ok(sources.includes(`"${spec.server}"`), `the server reads ${spec.server}`);
  }
});

test("string settings where \"\" cannot be meant default to \"\" and are left out when empty", () => {
  const properties = contributedProperties();
  for (const key of [
    "indexDir",
    "embedding.modelPath",
    "embedding.model",
    "embedding.baseUrl",
    "embedding.apiKeyEnv",
    "snippets.model",
    "snippets.baseUrl",
    "snippets.apiKeyEnv",
  ]) {
    const spec = SERVER_SETTINGS.find((s) => s.key === key);
    assert.ok(spec?.emptyIsUnset, `${key} treats "" as unset`);
    assert.equal(properties[`situate.${key}`].type, "string");
    assert.equal(properties[`situate.${key}`].default, "");
  }
});

test("the snippet settings carry the server's defaults, ranges and choices", () => {
  const properties = contributedProperties();
  const expected: Record<string, Partial<ConfigurationProperty>> = {
    "snippets.enabled": { type: "boolean", default: true },
    "snippets.provider": { type: "string", default: "openai", enum: ["openai", "anthropic"] },
    "snippets.mode": { type: "string", default: "section", enum: ["section", "document"] },
    "snippets.concurrency": { type: "integer", default: 4, minimum: 1, maximum: 64 },
    "snippets.maxCalls": { type: "integer", default: 5000, minimum: 1 },
    "snippets.maxRunTokens": { type: ["integer", "null"], default: null, minimum: 1 },
    "snippets.maxTokens": { type: "integer", default: 150, minimum: 16, maximum: 4096 },
    "snippets.documentBudget": { type: "integer", default: 6000, minimum: 256, maximum: 200000 },
    "search.snippetBoost": { type: "number", default: 1 },
    "embedding.dimensions": { type: ["integer", "null"], default: null, minimum: 1 },
    "embedding.provider": { type: "string", default: "e5", enum: ["e5", "static", "transformer", "openai"] },
  };
  for (const [key, want] of Object.entries(expected)) {
    const property = properties[`situate.${key}`];
    assert.ok(property, `situate.${key} is contributed`);
    for (const [field, value] of Object.entries(want)) {
      assert.deepEqual(property[field as keyof ConfigurationProperty], value, `${field} of situate.${key}`);
    }
  }
});

test("the chunk and search settings carry the server's ranges, so the Settings editor flags a value the server refuses", () => {
  // The ranges of src/config/validate.rs; a value outside them is replaced by the default.
  const properties = contributedProperties();
  const expected: Record<string, Partial<ConfigurationProperty>> = {
    extensions: { minItems: 1 },
    maxFileBytes: { minimum: 1 },
    "chunk.maxTokens": { minimum: 16, maximum: 8192 },
    "chunk.overlapTokens": { minimum: 0 },
    "chunk.semanticThreshold": { minimum: 0 },
    "search.limit": { minimum: 1, maximum: 1000 },
    "search.candidates": { minimum: 1, maximum: 10000 },
    "search.window": { minimum: 0, maximum: 100 },
    "search.mergeShare": { exclusiveMinimum: 0, maximum: 1 },
  };
  for (const key of ["rrfK", "bm25Weight", "vectorWeight", "bm25Coverage", "titleBoost", "headingsBoost", "pathBoost", "snippetBoost"]) {
    expected[`search.${key}`] = { minimum: 0 };
  }
  for (const [key, want] of Object.entries(expected)) {
    const property = properties[`situate.${key}`];
    for (const field of ["minimum", "maximum", "exclusiveMinimum", "minItems"] as const) {
      assert.equal(property[field], want[field], `${field} of situate.${key}`);
    }
  }
});

test("every server setting says it is only sent when set, and no setting holds a key", () => {
  const properties = contributedProperties();
  for (const spec of SERVER_SETTINGS) {
    const description = properties[`situate.${spec.key}`].markdownDescription ?? "";
    assert.match(description, /Only sent to the server when set here/, `situate.${spec.key}`);
    assert.ok(description.includes(`(\`${spec.server}\`)`), `situate.${spec.key} names its situate.toml key`);
  }
  for (const key of Object.keys(properties)) {
    assert.ok(!/apiKey$|secret|token$/i.test(key), `${key} would hold a secret; only variable names are settings`);
  }
});

test("the README's settings table lists every server setting with its situate.toml key", () => {
  const readme = fs.readFileSync(path.join(packageRoot, "README.md"), "utf8");
  const rows = new Map<string, string>();
  for (const match of readme.matchAll(/^\| `situate\.([\w.]+)` \| `([\w.]+)` \|/gm)) {
    rows.set(match[1], match[2]);
  }
  assert.deepEqual(
    [...rows.keys()].sort(),
    SERVER_SETTINGS.map((s) => s.key).sort(),
  );
  for (const spec of SERVER_SETTINGS) {
    assert.equal(rows.get(spec.key), spec.server, `the row of situate.${spec.key}`);
  }
});

test("the server path setting opens in the Remote tab of a remote window, where machine settings are listed", () => {
  assert.deepEqual(openMachineSetting("situate.server.path", undefined), {
    command: "workbench.action.openSettings",
    args: ["situate.server.path"],
  });
  assert.deepEqual(openMachineSetting("situate.server.path", "ssh-remote"), {
    command: "workbench.action.openRemoteSettings",
    args: [{ query: "situate.server.path" }],
  });
});
