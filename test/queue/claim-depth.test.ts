import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClaimDepth } from "../../src/queue/delivery/claim-depth.js";
import { eventually } from "../harness/eventually.js";
import { message, storeOnOwnRedis } from "./lua-guard.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * How far claims look into the due set (delivery/claim-depth.ts): short scans while long ones
 * find nothing deeper, so refilling one busy destination does not walk its whole backlog each
 * time, without starving other destinations' messages behind that backlog.
 */
describe("claim depth policy", () => {
  it("takes the long scan first, then short ones until the interval has passed", () => {
    const depth = new ClaimDepth(1024, 64, 100);
    expect(depth.scan(20, 1000)).toBe(1024);
    depth.saw(20, 15, 1000);
    expect(depth.scan(20, 1050)).toBe(84);
    expect(depth.scan(64, 1099)).toBe(128);
    expect(depth.scan(20, 1100)).toBe(1024);
    expect(depth.scan(20, 1101)).toBe(84);
  });

  it("keeps taking the long scan while long scans lease messages beyond the short reach", () => {
    const depth = new ClaimDepth(1024, 64, 100);
    expect(depth.scan(20, 1000)).toBe(1024);
    depth.saw(20, 500, 1000);
    expect(depth.scan(20, 1010)).toBe(1024);
    depth.saw(20, 300, 1010);
    expect(depth.scan(20, 1105)).toBe(1024);
    depth.saw(20, 10, 1105);
    // The last deep find was at 1010: long scans until 1110, then one every 100 ms.
    expect(depth.scan(20, 1111)).toBe(84);
  });

  it("tells when the next long scan is due, for a wake after a short scan left messages", () => {
    const depth = new ClaimDepth(1024, 64, 100);
    expect(depth.scan(20, 1000)).toBe(1024);
    expect(depth.scan(20, 1030)).toBe(84);
    expect(depth.nextLongAt()).toBe(1100);
    expect(depth.scan(20, depth.nextLongAt())).toBe(1024);
  });

  it("never scans further than the long scan", () => {
    const depth = new ClaimDepth(100, 64, 100);
    depth.scan(64, 0);
    expect(depth.scan(64, 1)).toBe(100);
  });
});

describe("a claim's deepest lease", () => {
  const ctx = storeOnOwnRedis();

  it("is how many due entries the script had looked at when it leased its last message", async () => {
    const now = Date.now();
    const busy = "http://busy.example";
    // Due one ms apart, so the due set holds them in this order: 8 of busy, then one other.
    const messages = Array.from({ length: 8 }, (_, i) =>
      message(`b${i}`, now - 20 + i, { url: `${busy}/${i}` }),
    );
    messages.push(message("other", now - 5, { url: "http://other.example/" }));
    await ctx.store.enqueue(now, messages);
    const fair = { cap: 2, scan: 1024, inflight: [] as [string, number][] };
    const deep = await ctx.store.claim(now, 10, 60_000, fair);
    expect(deep.claimed.map((c) => c.meta.messageId)).toEqual(["b0", "b1", "other"]);
    expect(deep.deepest).toBe(9);
    expect(deep.skipped).toBe(6);
  });

  it("is 0 when nothing was leased, and stays within a short scan", async () => {
    const now = Date.now();
    const messages = Array.from({ length: 6 }, (_, i) =>
      message(`b${i}`, now - 20 + i, { url: "http://busy.example/" }),
    );
    messages.push(message("other", now - 5, { url: "http://other.example/" }));
    await ctx.store.enqueue(now, messages);
    const full = [["http://busy.example", 2]] as [string, number][];
    const none = await ctx.store.claim(now, 10, 60_000, { cap: 2, scan: 4, inflight: full });
    expect(none.claimed).toEqual([]);
    expect(none.deepest).toBe(0);
    expect(none.skipped).toBe(4);
  });
});

describe("another destination behind a saturated destination's backlog", () => {
  let env: QueueTestEnv;

  beforeAll(async () => {
    // 20 slots, a destination's share 10: the slow one holds 10 and keeps a backlog waiting.
    env = await queueEnv({ queueConcurrency: 20, queueDestinationShare: 50 });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("is delivered while that backlog drains, beyond the reach of short scans", async () => {
    const slow = await env.receiver();
    slow.delayMs = 100;
    const other = await env.receiver();
    other.delayMs = 30;
    const at = Math.ceil(Date.now() / 1000) + 2;
    const publish = (url: string, count: number, notBefore: number) =>
      env.api("/v2/batch", {
        method: "POST",
        body: JSON.stringify(
          Array.from({ length: count }, (_, i) => ({
            destination: `${url}/${i}`,
            body: String(i),
            headers: { "Upstash-Not-Before": String(notBefore) },
          })),
        ),
      });
    // 400 to the slow destination (10 at a time, 100 ms each: 4 s), due first; a second later
    // 40 to the other, due behind what is left of them (about 300 entries).
    expect((await publish(slow.url, 400, at)).status).toBe(201);
    expect((await publish(other.url, 40, at + 1)).status).toBe(201);
    await eventually(() => expect(other.requests).toHaveLength(40), { timeoutMs: 10_000 });
    const otherDoneAfterMs = Date.now() - (at + 1) * 1000;
    expect(slow.requests.length).toBeLessThan(400);
    expect(otherDoneAfterMs).toBeLessThan(2_500);
    await eventually(() => expect(slow.requests).toHaveLength(400), { timeoutMs: 20_000 });
  });
});
