import { describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { eventually } from "../harness/eventually.js";
import { startRedis } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";
import { bodyOf, command, useGateway } from "./helpers.js";

// Its second database shares the Redis in another database number, as an operator may allow.
const { stashd, redis } = useGateway({ kvMaxRequestBytes: 2048, kvAllowSharedRedis: true });

describe("request size limit", () => {
  it("refuses a body over the limit with the documented error", async () => {
    const res = await stashd().kvFetch("/", {
      body: JSON.stringify(["SET", "lim:k", "x".repeat(4096)]),
    });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ error: "ERR max request size exceeded" });
    const ok = await command(stashd(), ["SET", "lim:k", "x".repeat(1000)]);
    expect(ok.status).toBe(200);
  });

  it("refuses a whole transaction over the limit, running nothing", async () => {
    const res = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["SET", "lim:tx", "1"],
        ["SET", "lim:big", "y".repeat(4096)],
      ]),
    });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ error: "ERR max request size exceeded" });
    expect((await command(stashd(), ["EXISTS", "lim:tx"])).body).toEqual({ result: 0 });
  });

  it("cuts off a chunked body once it passes the limit", async () => {
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode("z".repeat(512)));
        controller.close();
      },
    });
    const res = await stashd().kvFetch("/set/lim:chunked", {
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({ error: "ERR max request size exceeded" });
  });
});

describe("databases added by the CLI", () => {
  it("serves a new database with its own tokens and daily limit", async () => {
    const record = createDatabase(stashd().dataDir, "limited", {
      redisUrl: `${redis().url}/2`,
      dailyRequestLimit: 3,
    });
    const { token } = credentialsOf(record);
    await eventually(async () =>
      expect((await command(stashd(), ["SET", "lim:d", "1"], { token })).status).toBe(200),
    );
    // A pipeline counts each of its commands (read straight from the body or not).
    const pipeline = (body: string) => stashd().kvFetch("/pipeline", { token, body });
    const two = await pipeline('[["GET","lim:d"],["GET","lim:d"]]');
    expect(await bodyOf(two)).toEqual([{ result: "1" }, { result: "1" }]);
    const refused = await pipeline('[["GET","lim:d"]]');
    expect(refused.status).toBe(400);
    expect(await bodyOf(refused)).toEqual({ error: "ERR max daily request limit exceeded" });
    expect(await command(stashd(), ["GET", "lim:d"], { token })).toEqual({
      status: 400,
      body: { error: "ERR max daily request limit exceeded" },
    });
    expect((await command(stashd(), ["GET", "lim:d"])).body).toEqual({ result: null });
  });
});

describe("Redis unreachable", () => {
  it("answers a JSON 503 naming the cause and recovers by itself", async () => {
    const own = await startRedis();
    const s = await startStashd({ kvRedisUrl: own.url });
    try {
      expect((await command(s, ["SET", "k", "1"])).status).toBe(200);
      await own.stop();
      const down = await command(s, ["GET", "k"]);
      expect(down.status).toBe(503);
      expect(down.body).toEqual({ error: expect.stringMatching(/^ERR Redis is unreachable: /) });
      const back = await startRedis([], own.port);
      try {
        await eventually(async () => {
          const r = await command(s, ["PING"]);
          expect(r.body).toEqual({ result: "PONG" });
        });
        // Many requests while and after recovering must not leave extra backend connections:
        // at most the pool (4), stashd's own connection (ACL set-up) plus the one asking.
        await Promise.all(Array.from({ length: 50 }, () => command(s, ["INCR", "after"])));
        const info = (await command(s, ["INFO", "clients"])).body as { result: string };
        expect(Number(/connected_clients:(\d+)/.exec(info.result)?.[1])).toBeLessThanOrEqual(6);
      } finally {
        await back.stop();
      }
    } finally {
      await s.stop();
    }
  });
});

describe("clients that go away", () => {
  it("keeps serving after a client aborts in the middle of a body", async () => {
    const net = await import("node:net");
    const port = Number(new URL(stashd().kv.url).port);
    await new Promise<void>((resolve) => {
      const sock = net.connect(port, "127.0.0.1", () => {
        sock.write(
          `POST /set/lim:abort HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${stashd().kv.token}\r\ncontent-length: 1000\r\n\r\npartial`,
        );
        setImmediate(() => {
          sock.destroy();
          resolve();
        });
      });
    });
    expect((await command(stashd(), ["EXISTS", "lim:abort"])).body).toEqual({ result: 0 });
    expect((await command(stashd(), ["PING"])).body).toEqual({ result: "PONG" });
  });
});

describe("slow clients", () => {
  it("cuts off a client that does not finish its request in time", async () => {
    const s = await startStashd({ kvRedisUrl: redis().url, requestTimeoutMs: 300 });
    try {
      const net = await import("node:net");
      const port = Number(new URL(s.kv.url).port);
      const started = Date.now();
      const answer = await new Promise<string>((resolve) => {
        let text = "";
        const sock = net.connect(port, "127.0.0.1", () =>
          sock.write("POST / HTTP/1.1\r\nhost: x\r\n"),
        );
        sock.on("data", (d) => (text += d.toString()));
        sock.on("close", () => resolve(text));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await s.stop();
    }
  });
});
