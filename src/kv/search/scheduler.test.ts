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
});
