// Finds the situate binary: the `situate.server.path` setting, else PATH, else cargo's bin folder (vscode-free).
import * as fs from "node:fs";
import * as path from "node:path";

/** Everything discovery looks at, passed in so that tests need no real machine state. */
export interface DiscoveryInput {
  /** The `situate.server.path` setting; empty or undefined when unset. */
  configured?: string;
  /** The `PATH` environment variable. */
  pathEnv?: string;
  /** Windows' `PATHEXT`, e.g. `.COM;.EXE;.BAT`. */
  pathExt?: string;
  platform: NodeJS.Platform;
  /** The user's home folder, for `~` in the setting and for `~/.cargo/bin`. */
  home?: string;
  /** `CARGO_HOME`, when set (cargo installs into `$CARGO_HOME/bin`). */
  cargoHome?: string;
  /** The first workspace folder, against which a relative setting is resolved. */
  workspaceRoot?: string;
  isExecutable: (file: string) => boolean;
}

export type Discovery =
  | { found: true; path: string; source: "setting" | "PATH" | "cargo" }
  | { found: false; message: string; fromSetting: boolean };

/** The fix shown with every "not found" message. */
export const INSTALL_HINT =
  "Install it with `cargo install --path .` from the situate repository, or set `situate.server.path` to the binary.";

/** Where nothing was set: an install alone changes no setting, so the server must be started by hand. */
const RESTART_HINT = "Once it is installed, run Situate: Restart Server.";

export function findServer(input: DiscoveryInput): Discovery {
  const windows = input.platform === "win32";
  const configured = input.configured?.trim();
  if (configured) {
    const resolved = resolveConfigured(configured, input);
    if (input.isExecutable(resolved)) {
      return { found: true, path: resolved, source: "setting" };
    }
    return {
      found: false,
      fromSetting: true,
      message: `situate.server.path is set to ${resolved}, which is not an executable file. ${INSTALL_HINT}`,
    };
  }

  const names = windows ? executableNames("situate", input.pathExt) : ["situate"];
  const separator = windows ? ";" : ":";
  for (const dir of (input.pathEnv ?? "").split(separator)) {
    if (!dir) {
      continue;
    }
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (input.isExecutable(candidate)) {
        return { found: true, path: candidate, source: "PATH" };
      }
    }
  }

  // An editor started from a desktop menu often lacks the shell's PATH, so look where
  // `cargo install` puts binaries too.
  const cargoBin = input.cargoHome
    ? path.join(input.cargoHome, "bin")
    : input.home
      ? path.join(input.home, ".cargo", "bin")
      : undefined;
  if (cargoBin) {
    for (const name of windows ? ["situate.exe"] : ["situate"]) {
      const candidate = path.join(cargoBin, name);
      if (input.isExecutable(candidate)) {
        return { found: true, path: candidate, source: "cargo" };
      }
    }
  }

  return {
    found: false,
    fromSetting: false,
    message: `The situate language server was not found: \`situate\` is not on PATH. ${INSTALL_HINT} ${RESTART_HINT}`,
  };
}

function resolveConfigured(configured: string, input: DiscoveryInput): string {
  let p = configured;
  if (input.home && (p === "~" || p.startsWith("~/") || p.startsWith("~\\"))) {
    p = path.join(input.home, p.slice(1));
  }
  if (!path.isAbsolute(p) && input.workspaceRoot) {
    p = path.join(input.workspaceRoot, p);
  }
  return p;
}

function executableNames(base: string, pathExt: string | undefined): string[] {
  const exts = (pathExt ?? ".EXE").split(";").filter((e) => e.length > 0);
  return exts.map((e) => base + e.toLowerCase());
}

/** Whether `file` is a regular file this process may execute. */
export function isExecutableFile(file: string, platform: NodeJS.Platform = process.platform): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (platform !== "win32") {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

/** Discovery on this machine, with the real environment and file system. */
export function findServerHere(configured: string | undefined, workspaceRoot: string | undefined): Discovery {
  return findServer({
    configured,
    pathEnv: process.env.PATH,
    pathExt: process.env.PATHEXT,
    platform: process.platform,
    home: process.env.HOME ?? process.env.USERPROFILE,
    cargoHome: process.env.CARGO_HOME,
    workspaceRoot,
    isExecutable: (f) => isExecutableFile(f),
  });
}

/** The output channel's first line: which binary runs, where it was found, at which log level. */
export function startMessage(found: { path: string; source: "setting" | "PATH" | "cargo" }, logLevel: string): string {
  const where = { setting: "from situate.server.path", PATH: "found on PATH", cargo: "found in cargo's bin folder" }[found.source];
  return `Starting ${found.path} lsp (${where}); server log level ${logLevel} (situate.server.logLevel)`;
}
