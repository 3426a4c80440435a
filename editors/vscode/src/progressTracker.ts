// Follows the server's `$/progress` runs (one per indexed folder) and gives their overall percentage (vscode-free).

export type ProgressToken = string | number;

/** The parts of a work-done progress notification this tracker reads. */
export type ProgressValue =
  | { kind: "begin"; percentage?: number }
  | { kind: "report"; percentage?: number }
  | { kind: "end" };

export class ProgressTracker {
  private readonly runs = new Map<ProgressToken, number>();

  /** Records one notification; returns whether a run ended with it. */
  update(token: ProgressToken, value: ProgressValue): boolean {
    switch (value.kind) {
      case "begin":
        this.runs.set(token, value.percentage ?? 0);
        return false;
      case "report":
        if (this.runs.has(token)) {
          this.runs.set(token, value.percentage ?? this.runs.get(token) ?? 0);
        }
        return false;
      case "end":
        return this.runs.delete(token);
    }
  }

  /** The mean percentage of the running runs, or `undefined` when none runs. */
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
