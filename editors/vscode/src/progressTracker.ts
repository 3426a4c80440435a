// Follows the server's indexing runs reported through `$/progress` (one per folder) and gives their overall percentage (vscode-free).

export type ProgressToken = string | number;

/** The parts of a work-done progress notification this tracker reads. */
export type ProgressValue =
  | { kind: "begin"; title?: string; percentage?: number }
  | { kind: "report"; percentage?: number }
  | { kind: "end" };

/**
 * Whether the run of this token indexes files. The server names each run's token by its
 * kind: `situate/index/<folder>/<n>` for indexing; `situate/vectors/…` (the pending vectors)
 * and `situate/snippets/…` for work done in the background of a searchable index.
 */
export function isIndexingRun(token: ProgressToken): boolean {
  return typeof token === "string" && token.startsWith("situate/index/");
}

export class ProgressTracker {
  private readonly runs = new Map<ProgressToken, number>();

  /** Records one notification; returns whether a run ended with it (of any kind). */
  update(token: ProgressToken, value: ProgressValue): boolean {
    switch (value.kind) {
      case "begin":
        if (isIndexingRun(token)) {
          this.runs.set(token, value.percentage ?? 0);
        }
        return false;
      case "report":
        if (this.runs.has(token)) {
          this.runs.set(token, value.percentage ?? this.runs.get(token) ?? 0);
        }
        return false;
      case "end":
        // A background run's end brings new figures to show too.
        this.runs.delete(token);
        return true;
    }
  }

  /** The mean percentage of the indexing runs under way, or `undefined` when none runs. */
  percentage(): number | undefined {
    if (this.runs.size === 0) {
      return undefined;
    }
    let sum = 0;
    for (const p of this.runs.values()) {
      sum += p;
    }
    return sum / this.runs.size;
  }

  clear(): void {
    this.runs.clear();
  }
}
