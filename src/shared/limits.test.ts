import { describe, expect, it } from "vitest";
import { AppError } from "./errors.js";
import { FailureThrottle } from "./failure-throttle.js";
import { SlotGate } from "./slot-gate.js";

describe("SlotGate", () => {
  const gate = (queue: number, waitMs: number): SlotGate =>
    new SlotGate({ slots: 2, queue, waitMs, what: "a test slot" });

  it("hands slots out in order of arrival and never more than `slots` at once", async () => {
    const g = gate(10, 5_000);
    const a = await g.enter();
    const b = await g.enter();
    const order: string[] = [];
    const c = g.enter().then((leave) => (order.push("c"), leave));
    const d = g.enter().then((leave) => (order.push("d"), leave));
    expect([g.held, g.waiting]).toEqual([2, 2]);
    a();
    a(); // a second call gives nothing back twice
    (await c)();
    b();
    (await d)();
    expect(order).toEqual(["c", "d"]);
    expect([g.held, g.waiting]).toEqual([0, 0]);
  });

  it("refuses past the queue (429) and after the wait (503), both with Retry-After", async () => {
    const g = gate(1, 30);
    await g.enter();
    await g.enter();
    const waiting = g.enter();
    const full = await g.enter().catch((e: unknown) => e);
    expect(full).toBeInstanceOf(AppError);
    expect(full).toMatchObject({ status: 429, headers: { "retry-after": "1" } });
    const late = await waiting.catch((e: unknown) => e);
    expect(late).toMatchObject({ status: 503, headers: { "retry-after": "1" } });
    expect((late as Error).message).toMatch(/waited 30 ms for a test slot, none became free/);
    expect(g.waiting).toBe(0);
    expect(g.tryEnter()).toBeUndefined();
  });
});

describe("FailureThrottle", () => {
  it("counts failures per key and for all keys, per window", () => {
    let now = 0;
    const t = new FailureThrottle({
      perKey: 2,
      global: 3,
      windowMs: 10_000,
      what: "test login",
      now: () => now,
    });
    t.check("a");
    t.fail("a");
    t.fail("a");
    expect(() => t.check("a")).toThrow(/too many failed test login attempts from this client/);
    t.check("b");
    t.fail("b");
    let refused: unknown;
    try {
      t.check("c");
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ status: 429, headers: { "retry-after": "10" } });
    expect((refused as Error).message).toMatch(/from all clients/);
    now = 10_000;
    t.check("a");
    t.check("c");
  });

  it("forgets a key's failures after a success and keeps at most maxKeys", () => {
    const t = new FailureThrottle({
      perKey: 1,
      global: 100,
      windowMs: 1_000,
      what: "x",
      maxKeys: 2,
    });
    t.fail("a");
    t.succeed("a");
    t.check("a");
    t.fail("k1");
    t.fail("k2");
    t.fail("k3"); // k1, the oldest, is forgotten to make room
    t.check("k1");
    expect(() => t.check("k3")).toThrow(AppError);
  });
});
