// Maps the extension's `situate.*` settings to the server's situate.toml keys (vscode-free).

/** One setting the server understands: its VS Code key and its situate.toml key. */
export interface SettingSpec {
  /** Key under `situate.` in VS Code, e.g. `search.limit`. */
  readonly key: string;
  /** Dotted situate.toml key, e.g. `search.limit` or `chunk.max_tokens`. */
  readonly server: string;
  /** An empty string means "not set" (paths, names and URLs, where "" can never be meant). */
  readonly emptyIsUnset?: boolean;
}

/**
 * Every setting passed to the server. Settings of the extension itself (`server.*`,
 * `trace.server`) are not in this list and never reach the server.
 */
export const SERVER_SETTINGS: readonly SettingSpec[] = [
  { key: "extensions", server: "extensions" },
  { key: "include", server: "include" },
  { key: "exclude", server: "exclude" },
  { key: "maxFileBytes", server: "max_file_bytes" },
  { key: "followSymlinks", server: "follow_symlinks" },
  { key: "encoding", server: "encoding" },
  { key: "indexDir", server: "index_dir", emptyIsUnset: true },
  { key: "chunk.strategy", server: "chunk.strategy" },
  { key: "chunk.maxTokens", server: "chunk.max_tokens" },
  { key: "chunk.overlapTokens", server: "chunk.overlap_tokens" },
  { key: "chunk.semanticThreshold", server: "chunk.semantic_threshold" },
  { key: "chunk.language", server: "chunk.language" },
  { key: "context.headerTemplate", server: "context.header_template" },
  { key: "context.headerFields", server: "context.header_fields" },
  { key: "search.mode", server: "search.mode" },
  { key: "search.limit", server: "search.limit" },
  { key: "search.candidates", server: "search.candidates" },
  { key: "search.fusion", server: "search.fusion" },
  { key: "search.rrfK", server: "search.rrf_k" },
  { key: "search.bm25Weight", server: "search.bm25_weight" },
  { key: "search.vectorWeight", server: "search.vector_weight" },
  { key: "search.bm25Coverage", server: "search.bm25_coverage" },
  { key: "search.titleBoost", server: "search.title_boost" },
  { key: "search.headingsBoost", server: "search.headings_boost" },
  { key: "search.pathBoost", server: "search.path_boost" },
  { key: "search.snippetBoost", server: "search.snippet_boost" },
  { key: "search.expand", server: "search.expand" },
  { key: "search.window", server: "search.window" },
  { key: "search.mergeShare", server: "search.merge_share" },
  { key: "search.minScoreShare", server: "search.min_score_share" },
  { key: "embedding.provider", server: "embedding.provider" },
  { key: "embedding.modelPath", server: "embedding.model_path", emptyIsUnset: true },
  { key: "embedding.model", server: "embedding.model", emptyIsUnset: true },
  { key: "embedding.baseUrl", server: "embedding.base_url", emptyIsUnset: true },
  { key: "embedding.apiKeyEnv", server: "embedding.api_key_env", emptyIsUnset: true },
  { key: "embedding.dimensions", server: "embedding.dimensions" },
  // Any of these sends a [snippets] table, whose presence turns snippets on.
  { key: "snippets.enabled", server: "snippets.enabled" },
  { key: "snippets.provider", server: "snippets.provider" },
  { key: "snippets.model", server: "snippets.model", emptyIsUnset: true },
  { key: "snippets.baseUrl", server: "snippets.base_url", emptyIsUnset: true },
  { key: "snippets.apiKeyEnv", server: "snippets.api_key_env", emptyIsUnset: true },
  { key: "snippets.mode", server: "snippets.mode" },
  { key: "snippets.concurrency", server: "snippets.concurrency" },
  { key: "snippets.maxCalls", server: "snippets.max_calls" },
  { key: "snippets.maxRunTokens", server: "snippets.max_run_tokens" },
  { key: "snippets.maxTokens", server: "snippets.max_tokens" },
  { key: "snippets.documentBudget", server: "snippets.document_budget" },
  // The team cache: its address (the password is best left to PGPASSWORD) and whether
  // this machine adds to it.
  { key: "team.url", server: "team.url", emptyIsUnset: true },
  { key: "team.push", server: "team.push" },
];

/** The values VS Code's `WorkspaceConfiguration.inspect` reports for one key. */
export interface InspectedValue {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The value the user set, most specific scope first, or `undefined` when they set none.
 * Schema defaults are deliberately ignored: they only document the server's defaults,
 * and sending them would hide the values of a folder's situate.toml.
 */
export function explicitValue(inspected: InspectedValue | undefined): unknown {
  if (!inspected) {
    return undefined;
  }
  for (const value of [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue]) {
    if (value !== undefined && value !== null) {
      return value;
    }
  }
  return undefined;
}

/** Object shaped like situate.toml: `{ "search": { "limit": 20 }, "exclude": [...] }`. */
export type ServerSettings = { [key: string]: unknown };

/**
 * Builds the server's settings from what the user set. `read` returns a setting's explicit
 * value (see `explicitValue`) or `undefined`; unset settings are left out entirely, so
 * that situate.toml decides them.
 */
export function serverSettings(read: (key: string) => unknown): ServerSettings {
  const out: ServerSettings = {};
  for (const spec of SERVER_SETTINGS) {
    const value = read(spec.key);
    if (value === undefined || value === null || (spec.emptyIsUnset && value === "")) {
      continue;
    }
    setDotted(out, spec.server, value);
  }
  return out;
}

function setDotted(target: ServerSettings, dotted: string, value: unknown): void {
  const parts = dotted.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next === "object" && next !== null && !Array.isArray(next)) {
      node = next as ServerSettings;
    } else {
      const created: ServerSettings = {};
      node[part] = created;
      node = created;
    }
  }
  node[parts[parts.length - 1]] = value;
}

/** The `workspace/didChangeConfiguration` params for these settings. */
export function configurationChange(settings: ServerSettings): { settings: { situate: ServerSettings } } {
  return { settings: { situate: settings } };
}

/** Whether two settings objects (as built by `serverSettings`) say the same. */
export function sameSettings(a: ServerSettings, b: ServerSettings): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A command of VS Code and its arguments. */
export interface CommandCall {
  command: string;
  args: unknown[];
}

/**
 * What opens the Settings editor at one of the extension's settings of machine scope
 * (`situate.server.path`). In a remote window (SSH, WSL, a container, code-server) such
 * settings are listed under the Remote tab alone: the User tab would say "No Settings Found".
 */
export function openMachineSetting(key: string, remoteName: string | undefined): CommandCall {
  return remoteName
    ? { command: "workbench.action.openRemoteSettings", args: [{ query: key }] }
    : { command: "workbench.action.openSettings", args: [key] };
}
