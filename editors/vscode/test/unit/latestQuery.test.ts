// Unit tests of search-as-you-type: the typing pause, cancellation of stale requests, stale answers dropped.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LatestQuery, type CancelSource, type Timers } from "../../src/latestQuery";

/** Timers that move only when the test says so. */
class FakeTimers implements Timers {
  private now = 0;
  private next = 1;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  set(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.pending.set(id, { at: this.now + ms, fn });
    return id;
  }

  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  advance(ms: number): void {
    this.now += ms;
    for (const [id, timer] of [...this.pending].sort((a, b) => a[1].at - b[1].at)) {
      if (timer.at <= this.now) {
        this.pending.delete(id);
        timer.fn();
      }
    }
  }
}

class FakeSource implements CancelSource<{ cancelled: boolean }> {
  readonly token = { cancelled: false };
  disposed = false;
  cancel(): void {
    this.token.cancelled = true;
  }
  dispose(): void {
    this.disposed = true;
  }
}

/** A request the test answers by hand. */
interface Pending {
  query: string;
  token: { cancelled: boolean };
  resolve: (answer: string) => void;
  reject: (error: unknown) => void;
}

function setup(delayMs = 200) {
  const timers = new FakeTimers();
  const requests: Pending[] = [];
  const results: string[] = [];
  const errors: string[] = [];
  const busy: boolean[] = [];
  const latest = new LatestQuery<{ cancelled: boolean }, string>({
    delayMs,
    timers,
    newSource: () => new FakeSource(),
    run: (query, token) =>
      new Promise<string>((resolve, reject) => {
        requests.push({ query, token, resolve, reject });
      }),
    onResult: (query, answer) => results.push(`${query}=${answer}`),
    onError: (query, error) => errors.push(`${query}:${String(error)}`),
    onBusy: (b) => busy.push(b),
  });
  return { timers, requests, results, errors, busy, latest };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test("only the query typed last goes out, once typing pauses", async () => {
  const { timers, requests, results, latest } = setup();
  latest.update("b");
  timers.advance(100);
  latest.update("ba");
  timers.advance(100);
  latest.update("backup");
  timers.advance(199);
  assert.equal(requests.length, 0, "nothing is sent while typing goes on");
  timers.advance(1);
  assert.deepEqual(
    requests.map((r) => r.query),
    ["backup"],
  );
  requests[0].resolve("hits");
  await settle();
  assert.deepEqual(results, ["backup=hits"]);
});

test("a new query cancels the running request and its late answer is dropped", async () => {
  const { timers, requests, results, latest } = setup();
  latest.update("backup");
  timers.advance(200);
  latest.update("backup retention");
  assert.equal(requests[0].token.cancelled, true, "the stale request is cancelled");
  timers.advance(200);
  // The server answers the stale request anyway, after the new one.
  requests[1].resolve("new");
  requests[0].resolve("old");
  await settle();
  assert.deepEqual(results, ["backup retention=new"]);
});

test("a stale answer arriving first is dropped too", async () => {
  const { timers, requests, results, latest } = setup();
  latest.update("a");
  timers.advance(200);
  latest.update("ab");
  requests[0].resolve("old");
  await settle();
  assert.deepEqual(results, []);
  timers.advance(200);
  requests[1].resolve("new");
  await settle();
  assert.deepEqual(results, ["ab=new"]);
});

test("failures of stale requests are dropped; the latest one's is reported", async () => {
  const { timers, requests, errors, latest } = setup();
  latest.update("a");
  timers.advance(200);
  latest.update("ab");
  requests[0].reject(new Error("cancelled"));
  timers.advance(200);
  requests[1].reject(new Error("boom"));
  await settle();
  assert.deepEqual(errors, ["ab:Error: boom"]);
});

test("cancel abandons the wait and the request, and ends busy", async () => {
  const { timers, requests, results, busy, latest } = setup();
  latest.update("a");
  timers.advance(200);
  latest.cancel();
  assert.equal(requests[0].token.cancelled, true);
  latest.update("b");
  latest.cancel();
  timers.advance(1000);
  assert.equal(requests.length, 1, "the cancelled wait sends nothing");
  requests[0].resolve("late");
  await settle();
  assert.deepEqual(results, []);
  assert.deepEqual(busy, [true, false, true, false]);
});

test("busy holds from the first keystroke to the answer, without flicker", async () => {
  const { timers, requests, busy, latest } = setup();
  latest.update("a");
  latest.update("ab");
  timers.advance(200);
  assert.deepEqual(busy, [true]);
  requests[0].resolve("x");
  await settle();
  assert.deepEqual(busy, [true, false]);
});

test("refresh asks again for a query whose answer was stale, at once, and only then", async () => {
  const timers = new FakeTimers();
  const requests: Pending[] = [];
  const results: string[] = [];
  const latest = new LatestQuery<{ cancelled: boolean }, string>({
    delayMs: 200,
    timers,
    newSource: () => new FakeSource(),
    run: (query, token) => new Promise<string>((resolve, reject) => requests.push({ query, token, resolve, reject })),
    onResult: (query, answer) => results.push(`${query}=${answer}`),
    onError: () => {},
    isStale: (answer) => answer === "building",
  });
  latest.refresh();
  assert.equal(requests.length, 0, "nothing was asked yet");
  latest.update("backup");
  timers.advance(200);
  requests[0].resolve("building");
  await settle();
  latest.refresh();
  assert.deepEqual(
    requests.map((r) => r.query),
    ["backup", "backup"],
    "the stale answer's query goes out again without a typing pause",
  );
  requests[1].resolve("ready");
  await settle();
  assert.deepEqual(results, ["backup=building", "backup=ready"]);
  latest.refresh();
  assert.equal(requests.length, 2, "a fresh answer is not asked again");

  latest.update("backups");
  timers.advance(200);
  requests[2].resolve("building");
  await settle();
  latest.update("backups kept");
  latest.refresh();
  assert.equal(requests.length, 3, "a newer query waiting for its pause is not overtaken");
});
