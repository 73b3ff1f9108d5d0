import { afterEach, describe, expect, it } from "vitest";
import { redisServersIn } from "../harness/process.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * start({ services }): a stashd running one service starts neither the other's managed
 * redis-server nor its listener, and reading the missing service's handle fails loudly.
 */
let running: TestStashd | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe("start({ services })", () => {
  it("runs only the KV gateway: no queue Redis, no admin listener, queue.url throws", async () => {
    running = await startStashd({ services: ["kv"] });
    expect(redisServersIn(running.dataDir, true)).toHaveLength(1); // the default database's
    const res = await running.kvFetch("/", { body: JSON.stringify(["PING"]) });
    expect(await res.json()).toEqual({ result: "PONG" });
    expect(running.admin).toBeUndefined();
    const s = running;
    expect(() => s.queue.url).toThrow(/started without the queue service/);
  });

  it("runs only the queue: no KV Redis, admin probes without the console, kv.url throws", async () => {
    running = await startStashd({ services: ["queue"] });
    expect(redisServersIn(running.dataDir, true)).toHaveLength(1); // the queue's
    const keys = await fetch(`${running.queue.url}/v2/keys`, {
      headers: { authorization: `Bearer ${running.queue.token}` },
    });
    expect(keys.status).toBe(200);
    const admin = running.admin?.url ?? "";
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    expect((await fetch(`${admin}/console/`)).status).toBe(404);
    const s = running;
    expect(() => s.kv.url).toThrow(/started without the kv service/);
  });
});
