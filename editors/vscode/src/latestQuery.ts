// Search-as-you-type plumbing: waits for typing to pause, cancels stale requests, drops stale answers (vscode-free).

/** A cancellation source: VS Code's `CancellationTokenSource` fits, as does vscode-jsonrpc's. */
export interface CancelSource<Token> {
  readonly token: Token;
  cancel(): void;
  dispose(): void;
}

/** Timer functions, replaceable in tests. */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface LatestQueryOptions<Token, Result> {
  /** How long typing must pause before a request goes out. */
  delayMs: number;
  /** Sends the request; it should stop when the token is cancelled. */
  run: (query: string, token: Token) => Promise<Result>;
  /** Called with the answer to the latest query only. */
  onResult: (query: string, result: Result) => void;
  /** Called when the latest query fails (stale failures, e.g. cancellations, are dropped). */
  onError: (query: string, error: unknown) => void;
  /** Called when there starts or stops being work in flight (a wait or a request). */
  onBusy?: (busy: boolean) => void;
  newSource: () => CancelSource<Token>;
  /** Whether an answer may change as the index catches up (it came from an index still building). */
  isStale?: (result: Result) => boolean;
  timers?: Timers;
}

/**
 * Runs only the latest of a stream of queries. Each `update` restarts the wait, and
 * cancels the request of the previous query if one is running; an answer that arrives
 * after a newer query was typed is thrown away, even when the server did not honour the
 * cancellation.
 */
export class LatestQuery<Token, Result> {
  private readonly timers: Timers;
  private generation = 0;
  private timer: unknown;
  private inFlight: CancelSource<Token> | undefined;
  private busy = false;
  /** The query whose answer is shown, when that answer is stale. */
  private staleQuery: string | undefined;

  constructor(private readonly options: LatestQueryOptions<Token, Result>) {
    this.timers = options.timers ?? realTimers;
  }

  /** A new query: the previous one is abandoned and this one runs after the delay. */
  update(query: string): void {
    this.abandon();
    this.staleQuery = undefined;
    const generation = this.generation;
    this.setBusy(true);
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      void this.send(query, generation);
    }, this.options.delayMs);
  }

  /**
   * Asks again, at once, for the query whose answer is shown when that answer was stale
   * (call it when the index has caught up). Nothing happens while a newer query is waited
   * for or sent.
   */
  refresh(): void {
    const query = this.staleQuery;
    if (query === undefined || this.timer !== undefined || this.inFlight) {
      return;
    }
    this.staleQuery = undefined;
    this.abandon();
    this.setBusy(true);
    void this.send(query, this.generation);
  }

  /** Abandons the pending wait and the running request, if any. */
  cancel(): void {
    this.abandon();
    this.staleQuery = undefined;
    this.setBusy(false);
  }

  dispose(): void {
    this.cancel();
  }

  private abandon(): void {
    this.generation += 1;
    if (this.timer !== undefined) {
      this.timers.clear(this.timer);
      this.timer = undefined;
    }
    if (this.inFlight) {
      this.inFlight.cancel();
      this.inFlight.dispose();
      this.inFlight = undefined;
    }
  }

  private async send(query: string, generation: number): Promise<void> {
    const source = this.options.newSource();
    this.inFlight = source;
    let outcome: { ok: true; result: Result } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, result: await this.options.run(query, source.token) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (generation !== this.generation) {
      return;
    }
    this.inFlight = undefined;
    source.dispose();
    this.setBusy(false);
    if (outcome.ok) {
      this.staleQuery = this.options.isStale?.(outcome.result) ? query : undefined;
      this.options.onResult(query, outcome.result);
    } else {
      this.options.onError(query, outcome.error);
    }
  }

  private setBusy(busy: boolean): void {
    if (busy !== this.busy) {
      this.busy = busy;
      this.options.onBusy?.(busy);
    }
  }
}
