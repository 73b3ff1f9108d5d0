import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

let redis: TestRedis;
let stashd: TestStashd;

beforeAll(async () => {
  // A fixed port gives this file its own redis-server even with REDIS_URL set: it stops it.
  redis = await startRedis([], await freePort());
  stashd = await startStashd({ kvRedisUrl: redis.url });
});
afterAll(async () => {
  await stashd?.stop();
  await redis?.stop();
});

describe("@upstash/redis while Redis is down", () => {
  it("surfaces the gateway's error, then works again once Redis is back", async () => {
    const { url, token } = stashd.kv;
    const sdk = new Redis({ url, token, retry: false });
    const direct = new Redis({ url, token, retry: false, enableAutoPipelining: false });
    expect(await sdk.set("k", "before")).toBe("OK");
    await redis.stop();

    // A JSON 503, which the SDK turns into an error carrying the gateway's text.
    await expect(direct.get("k")).rejects.toThrow(/^ERR Redis is unreachable: /);
    await expect(sdk.get("k")).rejects.toThrow(/ERR Redis is unreachable: /);
    await expect(sdk.pipeline().get("k").exec()).rejects.toThrow(/ERR Redis is unreachable: /);
    const sub = sdk.subscribe<string>("outage");
    const errors: string[] = [];
    sub.on("error", (e) => errors.push(e.message));
    await eventually(() =>
      expect(errors).toEqual([expect.stringMatching(/ERR Redis is unreachable/)]),
    );
    await sub.unsubscribe();

    // Same port, empty data: the gateway reconnects by itself.
    redis = await startRedis([], redis.port);
    await eventually(async () => expect(await direct.ping()).toBe("PONG"), { timeoutMs: 10_000 });
    expect(await sdk.get("k")).toBeNull();
    expect(await sdk.set("k", "after")).toBe("OK");
    expect(await sdk.get("k")).toBe("after");
  });
});
