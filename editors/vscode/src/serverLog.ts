// Sorts the lines the server writes to stderr by their log level, for the situate output channel (vscode-free).

/** The output channel's method a line goes to. */
export type ChannelLevel = "error" | "warn" | "info";

export interface LogLine {
  level: ChannelLevel;
  /** The line without the server's timestamp (the channel writes its own) and level. */
  text: string;
}

/** `2026-11-27T15:32:51.433105Z  INFO situate::service::worker: indexed: 4 files`. */
const FORMATTED = /^\d{4}-\d\d-\d\dT\S+\s+(ERROR|WARN|INFO|DEBUG|TRACE)\s+(.*)$/;

/**
 * Reads the server's stderr a line at a time. Without this, every line, an INFO one too,
 * would be shown as an error. A line of the log format takes its level; DEBUG and TRACE
 * lines go out at info, with their level in front, since the channel hides its debug
 * messages by default and the user asked for them with `situate.server.logLevel`. A line
 * that continues a message keeps that message's level; anything else the server writes
 * there (a panic) is an error.
 */
export class ServerLog {
  private last: ChannelLevel = "error";

  line(raw: string): LogLine {
    const match = FORMATTED.exec(raw);
    if (!match) {
      const continues = raw.startsWith(" ") || raw.startsWith("\t");
      return { level: continues ? this.last : "error", text: raw };
    }
    const [, level, text] = match;
    switch (level) {
      case "ERROR":
        this.last = "error";
        return { level: "error", text };
      case "WARN":
        this.last = "warn";
        return { level: "warn", text };
      case "INFO":
        this.last = "info";
        return { level: "info", text };
      default:
        this.last = "info";
        return { level: "info", text: `${level} ${text}` };
    }
  }
}

/**
 * `SITUATE_LOG` for the `situate.server.logLevel` setting. `info` and `debug` raise the
 * level of situate's own logs alone: the libraries' debug logs (the search index's every
 * file write) would bury them.
 */
export function logFilter(level: string): string {
  return level === "warn" ? "warn" : `warn,situate=${level}`;
}
