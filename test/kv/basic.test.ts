import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

let redis: TestRedis;
let stashd: TestStashd;

beforeAll(async () => {
  redis = await startRedis();
  stashd = await startStashd({ kvRedisUrl: redis.url });
});
afterAll(async () => {
  await stashd?.stop();
  await redis?.stop();
});

async function json(res: Response): Promise<unknown> {
  return JSON.parse(await res.text());
}

describe("JSON body at /", () => {
  it("runs SET and GET", async () => {
    const set = await stashd.kvFetch("/", {
      body: JSON.stringify(["SET", "basic:a", "bar", "EX", 100]),
    });
    expect(set.status).toBe(200);
    expect(await json(set)).toEqual({ result: "OK" });
    const get = await stashd.kvFetch("/", { body: '["GET","basic:a"]' });
    expect(await json(get)).toEqual({ result: "bar" });
  });

  it("keeps big integers exact in both directions", async () => {
    await stashd.kvFetch("/", { body: '["SET","basic:big",9007199254740993]' });
    const res = await stashd.kvFetch("/", { body: '["INCRBY","basic:big",1]' });
    expect(await res.text()).toBe('{"result":9007199254740994}');
  });

  it("returns 400 with the Redis error text", async () => {
    const res = await stashd.kvFetch("/", { body: '["GET"]' });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error: "ERR wrong number of arguments for 'get' command" });
  });
});
