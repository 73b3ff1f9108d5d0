import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

/** The SDK's own count of auto-pipeline batches it sent (one `/pipeline` request each). */
function batches(redis: Redis): number {
  const exec = (redis as unknown as { autoPipelineExecutor?: { pipelineCounter: number } })
    .autoPipelineExecutor;
  return exec?.pipelineCounter ?? 0;
}

describe("@upstash/redis pipeline()", () => {
  it("runs many commands in one request and deserializes each", async () => {
    const { sdk } = c;
    const res = await sdk
      .pipeline()
      .set(k("p1"), "one")
      .incr(k("p2"))
      .get(k("p1"))
      .hset(k("ph"), { a: 1 })
      .hgetall(k("ph"))
      .zadd(k("pz"), { score: 1.5, member: "m" })
      .zscore(k("pz"), "m")
      .lpush(k("pl"), "x", "OK")
      .lrange(k("pl"), 0, -1)
      .exec();
    expect(res).toEqual(["OK", 1, "one", 1, { a: 1 }, 1, 1.5, 2, ["OK", "x"]]);
  });

  it("reports per-item errors without failing the others", async () => {
    const { sdk } = c;
    await sdk.set(k("str"), "text");
    const p = sdk.pipeline().incr(k("str")).set(k("after"), "ran").get(k("after"));
    const res = await p.exec({ keepErrors: true });
    expect(res[0]?.error).toBe("ERR value is not an integer or out of range");
    expect(res.slice(1)).toEqual([
      { error: undefined, result: "OK" },
      { error: undefined, result: "ran" },
    ]);
    await expect(sdk.pipeline().incr(k("str")).get(k("after")).exec()).rejects.toThrow(
      "Command 1 [ incr ] failed: ERR value is not an integer or out of range",
    );
  });
});

describe("@upstash/redis multi()", () => {
  it("runs a transaction atomically, with a runtime error item", async () => {
    const { sdk } = c;
    await sdk.set(k("m:str"), "text");
    const res = await sdk
      .multi()
      .set(k("m:a"), 1)
      .incr(k("m:str"))
      .incr(k("m:a"))
      .get(k("m:a"))
      .exec({ keepErrors: true });
    expect(res).toEqual([
      { error: undefined, result: "OK" },
      { error: "ERR value is not an integer or out of range", result: undefined },
      { error: undefined, result: 2 },
      { error: undefined, result: 2 },
    ]);
  });

  it("is not interleaved with concurrent writers", async () => {
    const { sdk, direct } = c;
    await sdk.set(k("m:n"), 0);
    const tx = sdk.multi();
    for (let i = 0; i < 200; i++) tx.incr(k("m:n"));
    tx.get(k("m:n"));
    const [txResult] = await Promise.all([
      tx.exec(),
      ...Array.from({ length: 20 }, () => direct.incr(k("m:n"))),
    ]);
    const incrs = txResult.slice(0, 200) as number[];
    // Inside the transaction every INCR follows the previous one with no gap.
    expect(incrs.every((v, i) => i === 0 || v === (incrs[i - 1] ?? 0) + 1)).toBe(true);
    expect(txResult[200]).toBe(incrs[199]);
    expect(await sdk.get(k("m:n"))).toBe(220);
  });

  it("refuses the whole transaction when one command is not allowed", async () => {
    const { sdk } = c;
    // CLIENT would change a pooled connection's state: the gateway refuses the transaction.
    const tx = sdk.multi().set(k("m:never"), "x").clientSetinfo("LIB-NAME", "compat");
    await expect(tx.exec()).rejects.toThrow(/CLIENT/);
    expect(await sdk.get(k("m:never"))).toBeNull();
  });
});

describe("@upstash/redis auto-pipelining", () => {
  it("batches concurrent calls and keeps per-call results and errors", async () => {
    const { sdk } = c;
    await sdk.set(k("ap:str"), "text");
    const before = batches(sdk);
    const writes = Array.from({ length: 30 }, (_, i) => sdk.set(k(`ap:${i}`), i));
    const failing = sdk.incr(k("ap:str"));
    const refused = sdk.exec(["WAIT", 0, 0]);
    const [okWrites, fail, refusal] = await Promise.all([
      Promise.all(writes),
      failing.then(
        () => "resolved",
        (e: Error) => e.message,
      ),
      refused.then(
        () => "resolved",
        (e: Error) => e.message,
      ),
    ]);
    expect(okWrites).toEqual(Array(30).fill("OK"));
    expect(fail).toBe("Command failed: ERR value is not an integer or out of range");
    // `exec` bypasses the auto-pipeline: the refusal comes back as a single-command error.
    expect(refusal).toMatch(/^ERR Command "WAIT" is not allowed in REST/);
    const reads = await Promise.all(Array.from({ length: 30 }, (_, i) => sdk.get(k(`ap:${i}`))));
    expect(reads).toEqual(Array.from({ length: 30 }, (_, i) => i));
    // 31 writes in one batch, 30 reads in another.
    expect(batches(sdk) - before).toBe(2);
  });
});

describe("read-your-writes sync token", () => {
  it("changes after writes, single and pipelined, and the client keeps working", async () => {
    const { sdk, direct } = c;
    await direct.set(k("ryw"), "a");
    const t1 = direct.readYourWritesSyncToken;
    expect(t1).toBeTruthy();
    await direct.set(k("ryw"), "b");
    const t2 = direct.readYourWritesSyncToken;
    expect(t2).not.toBe(t1);
    expect(await direct.get(k("ryw"))).toBe("b");
    await direct.pipeline().set(k("ryw"), "c").incr(k("ryw:n")).exec();
    const t3 = direct.readYourWritesSyncToken;
    expect(t3).not.toBe(t2);
    await direct.eval("return redis.call('SET', KEYS[1], 'd')", [k("ryw")], []);
    expect(direct.readYourWritesSyncToken).not.toBe(t3);
    expect(await direct.get(k("ryw"))).toBe("d");
    // The SDK echoes the token back: a stale or foreign token is accepted too.
    direct.readYourWritesSyncToken = "stale-token";
    expect(await direct.get(k("ryw"))).toBe("d");
    await sdk.set(k("ryw"), "e");
    expect(await sdk.get(k("ryw"))).toBe("e");
    expect(sdk.readYourWritesSyncToken).toBeTruthy();
  });

  it("is on every raw response and changes after a write", async () => {
    const { stashd } = c;
    const h = (r: Response): string | null => r.headers.get("upstash-sync-token");
    const w1 = await stashd.kvFetch("/", { body: JSON.stringify(["SET", k("raw"), "1"]) });
    const w2 = await stashd.kvFetch("/", { body: JSON.stringify(["SET", k("raw"), "2"]) });
    expect(h(w1)).toBeTruthy();
    expect(h(w2)).toBeTruthy();
    expect(h(w2)).not.toBe(h(w1));
  });

  it("works with readYourWrites off", async () => {
    const { stashd } = c;
    const plain = new Redis({ url: stashd.kv.url, token: stashd.kv.token, readYourWrites: false });
    await plain.set(k("noryw"), "x");
    expect(await plain.get(k("noryw"))).toBe("x");
  });
});

describe("configuration from the environment", () => {
  it("works with Redis.fromEnv() as an unchanged application would", async () => {
    process.env["UPSTASH_REDIS_REST_URL"] = c.stashd.kv.url;
    process.env["UPSTASH_REDIS_REST_TOKEN"] = c.stashd.kv.token;
    const app = Redis.fromEnv();
    await app.set(k("env"), { from: "env" });
    expect(await app.get(k("env"))).toEqual({ from: "env" });
  });
});

describe("response encodings", () => {
  it("returns the same values with base64 off", async () => {
    const { stashd } = c;
    const plain = new Redis({
      url: stashd.kv.url,
      token: stashd.kv.token,
      responseEncoding: false,
    });
    await plain.set(k("enc"), "héllo ☃");
    expect(await plain.get(k("enc"))).toBe("héllo ☃");
    expect(await plain.mget(k("enc"), k("enc:none"))).toEqual(["héllo ☃", null]);
    expect(await plain.ping()).toBe("PONG");
  });
});
