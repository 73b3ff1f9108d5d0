import { describe, expect, it } from "vitest";
import { Deadline } from "./deadline.js";
import { SliceScheduler, type Steps } from "./scheduler.js";

/**
 * The scheduler's contract (scheduler.ts): one slice per event-loop turn, round-robin; a time
 * budget summed over slices; bounded running and waiting leases; the wall-clock limit.
 */
const settings = { sliceMs: 1, maxRunning: 2, maxWaiting: 1, wallLimitMs: 60_000 };

/** Spins until its slice is over, `slices` times, noting its name at each slice. */
function* spinner(name: string, slices: number, log: string[], deadline: Deadline): Steps<string> {
  for (let i = 0; i < slices; i++) {
    log.push(name);
    while (!deadline.tick());
    if (i < slices - 1) yield;
  }
  return name;
}

describe("SliceScheduler", () => {
  it("runs the computations in progress a slice each in turn, with I/O between slices", async () => {
    const scheduler = new SliceScheduler(settings);
    const log: string[] = [];
    const [a, b] = [new Deadline(10_000), new Deadline(10_000)];
    let timerFired = false;
    setTimeout(() => (timerFired = true), 0);
    const done = Promise.all([
      scheduler.background(spinner("a", 3, log, a), a),
      scheduler.background(spinner("b", 3, log, b), b),
    ]);
    expect(log).toEqual([]); // nothing runs in the caller's turn
    expect(await done).toEqual(["a", "b"]);
    expect(log).toEqual(["a", "b", "a", "b", "a", "b"]);
    expect(timerFired).toBe(true);
  });

  it("ends a computation once its slices add up to its time budget", async () => {
    const scheduler = new SliceScheduler(settings);
    const budget = new Deadline(5, () => new Error("over budget"));
    await expect(scheduler.background(spinner("x", 1_000, [], budget), budget)).rejects.toThrow(
      "over budget",
    );
  });

  it("lets MAX_RUNNING compute, MAX_WAITING wait, and refuses one more at once", async () => {
    const scheduler = new SliceScheduler(settings);
    const first = await scheduler.admit("search");
    await scheduler.admit("search");
    const waiting = scheduler.admit("search");
    await expect(scheduler.admit("search")).rejects.toThrow("ERR search is busy, try again");
    first.release();
    first.release(); // twice is once
    const third = await waiting;
    const fourth = scheduler.admit("vector search"); // the waiting place is free again
    await expect(scheduler.admit("vector search")).rejects.toThrow(
      "ERR vector search is busy, try again",
    );
    third.release();
    (await fourth).release();
  });

  it("ends a wait, and a computation, past the wall-clock limit", async () => {
    const scheduler = new SliceScheduler({ ...settings, wallLimitMs: 30 });
    const lease = await scheduler.admit("search");
    await scheduler.admit("search");
    await expect(scheduler.admit("search")).rejects.toThrow(/waited and ran longer than 30 ms/);
    const budget = new Deadline(10_000);
    await expect(lease.run(spinner("x", 1_000, [], budget), budget)).rejects.toThrow(
      /ERR search waited and ran longer than 30 ms/,
    );
  });

  it("drops a query whose client goes away: off the wait list at once, or at its next slice", async () => {
    const scheduler = new SliceScheduler(settings);
    const client = new TestClient();
    const running = await scheduler.admit("search", client);
    await scheduler.admit("search");
    const waiting = scheduler.admit("search", client);
    const log: string[] = [];
    const budget = new Deadline(60_000);
    const work = running.run(spinner("r", 1_000_000, log, budget), budget);
    await new Promise((resolve) => setTimeout(resolve, 5));
    client.goAway("the client went away");
    await expect(waiting).rejects.toThrow("ERR search ended: the client went away");
    await expect(work).rejects.toThrow("ERR search ended: the client went away");
    expect(log.length).toBeLessThan(1_000_000);
    running.release();
    expect(client.watching).toBe(0); // both watches stopped
    // Both places are free again: one more running, one waiting.
    await scheduler.admit("search");
    void scheduler.admit("search");
    await expect(scheduler.admit("search")).rejects.toThrow("busy");
  });

  it("gives no place to a query whose client is already gone", async () => {
    const scheduler = new SliceScheduler(settings);
    const client = new TestClient();
    client.goAway("the client went away");
    await expect(scheduler.admit("search", client)).rejects.toThrow("ERR search ended");
    expect(client.watching).toBe(0);
    await scheduler.admit("search");
    await scheduler.admit("search");
  });
});

/** Interrupts as http.ts gives them: `goAway` calls every watcher (at once for later ones). */
class TestClient {
  private gone: string | undefined;
  private readonly ends = new Set<(why: string) => void>();

  get watching(): number {
    return this.ends.size;
  }

  watch(end: (why: string) => void): () => void {
    if (this.gone !== undefined) {
      end(this.gone);
      return () => undefined;
    }
    this.ends.add(end);
    return () => this.ends.delete(end);
  }

  goAway(why: string): void {
    this.gone = why;
    for (const end of [...this.ends]) end(why);
  }
}
