import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { redisClients } from "../harness/flood.js";
import {
  comparable,
  laneCount,
  once,
  portOf,
  RawClient,
  request,
  useLaneAndNode,
} from "../harness/raw-http.js";
import { testPool } from "../harness/redis.js";
import type { TestStashd } from "../harness/stashd.js";

/**
 * The KV fast lane (src/shared/http/lane.ts) answers whole `POST /` and `POST /pipeline`
 * requests itself, in front of node:http, and hands every other connection to node:http. Pinned
 * here on raw sockets: for each request, the bytes a gateway with the lane answers are the bytes
 * a gateway without it (STASHD_KV_FAST_LANE=false, node:http alone) answers, but for the Date and
 * the sync token; the lane's counter shows which requests it took. Then what node:http does for
 * a connection and the lane must keep: requests pipelined in one write answered in order (also
 * when one of them is handed over), a request split over several writes, a half-closed client,
 * the keep-alive idle timeout, and a blocked command ended when its client goes away.
 */

/** 1 s: node:http's keep-alive timeout is then 500 ms (server.ts), `Keep-Alive: timeout=0`. */
const REQUEST_TIMEOUT_MS = 1000;

const { lane, plain, redis } = useLaneAndNode({ requestTimeoutMs: REQUEST_TIMEOUT_MS });

const auth = (s: TestStashd): Record<string, string> => ({
  Authorization: `Bearer ${s.kv.token}`,
});

const BIG = "x".repeat(200 * 1024);

/** [name, path, body, extra headers, whether the lane takes it] */
const CASES: [string, string, string, Record<string, string>, boolean][] = [
  ["SET", "/", '["SET","lane:k","v"]', {}, true],
  ["GET", "/", '["GET","lane:k"]', {}, true],
  ["GET of a missing key", "/", '["GET","lane:missing"]', {}, true],
  ["a non-ASCII value", "/", '["SET","lane:u","zé 漢"]', {}, true],
  ["GET of it, base64", "/", '["GET","lane:u"]', { "Upstash-Encoding": "base64" }, true],
  ["GET of it, RESP2", "/", '["GET","lane:u"]', { "Upstash-Response-Format": "resp2" }, true],
  ["an integer reply", "/", '["STRLEN","lane:k"]', {}, true],
  ["a wrong type", "/", '["LPUSH","lane:k","a"]', {}, true],
  ["a lower-case name", "/", '["set","lane:l","v"]', {}, true],
  ["an array reply", "/", '["MGET","lane:k","lane:missing"]', {}, true],
  ["an error from Redis", "/", '["INCR","lane:k"]', {}, true],
  [
    "a rewritten command",
    "/",
    '["EVAL","return redis.call(\'GET\',KEYS[1])","1","lane:k"]',
    {},
    true,
  ],
  ["an emulated command", "/", '["JSON.SET","lane:j","$","{\\"a\\":1}"]', {}, true],
  ["an unknown command", "/", '["NOPE","x"]', {}, true],
  ["a refused command", "/", '["SELECT","1"]', {}, true],
  ["a number argument", "/", '["SET","lane:n",5]', {}, true],
  ["invalid JSON", "/", '["GET"', {}, true],
  ["an empty command", "/", "[]", {}, true],
  ["an empty body", "/", "", {}, true],
  ["a pipeline with an empty body", "/pipeline", "", {}, true],
  ["a blocking command timing out", "/", '["BLPOP","lane:empty","0.05"]', {}, true],
  ["a body over 64 KiB", "/", JSON.stringify(["SET", "lane:big", BIG]), {}, false],
  ["GET of it (streamed, chunked)", "/", '["GET","lane:big"]', {}, true],
  [
    "a pipeline with it (streamed, chunked)",
    "/pipeline",
    '[["GET","lane:k"],["GET","lane:big"]]',
    {},
    true,
  ],
  [
    "a pipeline with an error reply, RESP2",
    "/pipeline",
    '[["INCR","lane:k"],["GET","lane:k"],["GET","lane:missing"]]',
    { "Upstash-Response-Format": "resp2" },
    true,
  ],
  [
    "a pipeline of 100 GETs, base64",
    "/pipeline",
    JSON.stringify(Array.from({ length: 100 }, (_, i) => ["GET", i % 2 ? "lane:k" : "lane:u"])),
    { "Upstash-Encoding": "base64" },
    true,
  ],
  [
    "a pipeline",
    "/pipeline",
    '[["SET","lane:p","1"],["INCR","lane:p"],["GET","lane:p"]]',
    {},
    true,
  ],
  [
    "a pipeline with an escape",
    "/pipeline",
    '[["SET","lane:e","a\\"b"],["GET","lane:e"]]',
    {},
    true,
  ],
  ["a pipeline with a refusal", "/pipeline", '[["GET","lane:p"],["SELECT","1"]]', {}, true],
  ["a pipeline, base64", "/pipeline", '[["GET","lane:u"]]', { "Upstash-Encoding": "base64" }, true],
  [
    "a pipeline, RESP2",
    "/pipeline",
    '[["GET","lane:u"]]',
    { "Upstash-Response-Format": "resp2" },
    true,
  ],
  ["a pipeline that is not a list", "/pipeline", '{"a":1}', {}, true],
  ["a bad format header", "/", '["GET","lane:k"]', { "Upstash-Response-Format": "xml" }, false],
  ["Connection: close", "/", '["GET","lane:k"]', { Connection: "close" }, false],
  ["a command in the path", "/get/lane:k", "", {}, false],
];

describe("the KV fast lane answers as node:http does", () => {
  for (const [name, path, body, headers, taken] of CASES) {
    it(`${name} (${taken ? "the lane" : "node:http"})`, async () => {
      const answeredBefore = await laneCount("answered");
      const viaLane = await once(lane(), request(path, body, { ...auth(lane()), ...headers }));
      const answered = (await laneCount("answered")) - answeredBefore;
      const viaNode = await once(plain(), request(path, body, { ...auth(plain()), ...headers }));
      expect(comparable(viaLane, !taken)).toBe(comparable(viaNode, !taken));
      expect(answered).toBe(taken ? 1 : 0);
    });
  }

  it("leaves a wrong token to node:http (401, and the same bytes)", async () => {
    const bad = { Authorization: "Bearer nope" };
    const answeredBefore = await laneCount("answered");
    const viaLane = await once(lane(), request("/", '["GET","k"]', bad));
    expect(await laneCount("answered")).toBe(answeredBefore);
    const viaNode = await once(plain(), request("/", '["GET","k"]', bad));
    expect(viaLane.toString("latin1")).toMatch(/^HTTP\/1\.1 401 /);
    expect(comparable(viaLane, true)).toBe(comparable(viaNode, true));
  });
});

describe("connections on the lane", () => {
  it("answers requests pipelined in one write in order, also when one is handed over", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      const a = auth(lane());
      client.write(
        Buffer.concat([
          request("/", '["SET","lane:o","1"]', a),
          request("/", '["INCR","lane:o"]', a),
          request("/get/lane:o", "", a, "GET"),
          request("/", '["INCR","lane:o"]', a),
        ]),
      );
      const bodies = (await client.responses(4)).map((r) => r.toString().split("\r\n\r\n")[1]);
      expect(bodies).toEqual(['{"result":"OK"}', '{"result":2}', '{"result":"2"}', '{"result":3}']);
    } finally {
      client.destroy();
    }
  });

  it("serves a request whose bytes come in several writes, and the next one", async () => {
    const answeredBefore = await laneCount("answered");
    const client = new RawClient(portOf(lane()));
    try {
      const bytes = request("/", '["SET","lane:s","split"]', auth(lane()));
      for (const [from, to] of [
        [0, 3],
        [3, 40],
        [40, bytes.length - 5],
        [bytes.length - 5, bytes.length],
      ]) {
        client.write(bytes.subarray(from, to));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const [first] = await client.responses(1);
      expect(first?.toString()).toMatch(/\{"result":"OK"\}$/);
      client.write(request("/", '["GET","lane:s"]', auth(lane())));
      const [second] = await client.responses(1);
      expect(second?.toString()).toMatch(/\{"result":"split"\}$/);
      expect((await laneCount("answered")) - answeredBefore).toBe(2);
    } finally {
      client.destroy();
    }
  });

  it("gives a request that stops arriving to node:http, which times it out (408)", async () => {
    const handedBefore = await laneCount("handed_over");
    const client = new RawClient(portOf(lane()));
    try {
      const bytes = request("/", '["SET","lane:slow","v"]', auth(lane()));
      client.write(bytes.subarray(0, bytes.length - 3));
      const [res] = await client.responses(1);
      expect(res?.toString()).toMatch(/^HTTP\/1\.1 408 /);
      expect(await laneCount("handed_over")).toBe(handedBefore + 1);
      await eventually(() => expect(client.closed).toBe(true));
    } finally {
      client.destroy();
    }
  });

  for (const [name, gateway] of [
    ["the lane", () => lane()],
    ["node:http", () => plain()],
  ] as const) {
    it(`ends the connection of a client that half-closes, and its blocked command (${name})`, async () => {
      const s = gateway();
      const watch = testPool(redis().url, 1);
      const client = new RawClient(portOf(s));
      try {
        const blocked = async (): Promise<number> => (await redisClients(watch)).blocked;
        client.write(request("/", '["BLPOP","lane:hc","0"]', auth(s)));
        await eventually(async () => expect(await blocked()).toBe(1));
        client.end();
        await eventually(() => expect(client.closed).toBe(true));
        await eventually(async () => expect(await blocked()).toBe(0));
      } finally {
        client.destroy();
        await watch.close();
      }
    });
  }

  it("closes a connection idle past the keep-alive timeout, and keeps a busy one", async () => {
    const client = new RawClient(portOf(lane()));
    try {
      // Blocked longer than the idle timeout (500 ms): a busy connection is not idle.
      client.write(request("/", '["BLPOP","lane:ka","0.7"]', auth(lane())));
      const [res] = await client.responses(1);
      expect(res?.toString()).toMatch(/\{"result":null\}$/);
      expect(res?.toString()).toMatch(/\r\nKeep-Alive: timeout=0\r\n/);
      await eventually(() => expect(client.closed).toBe(true));
    } finally {
      client.destroy();
    }
  });

  it("ends a blocked command's wait when its client goes away", async () => {
    const client = new RawClient(portOf(lane()));
    client.write(request("/", '["BLPOP","lane:gone","0"]', auth(lane())));
    const watch = testPool(redis().url, 1);
    try {
      const blocked = async (): Promise<number> => (await redisClients(watch)).blocked;
      await eventually(async () => expect(await blocked()).toBe(1));
      client.destroy();
      await eventually(async () => expect(await blocked()).toBe(0));
    } finally {
      await watch.close();
    }
  });
});

describe("the official SDK on the lane", () => {
  it("has its commands and pipelines answered by the lane, in both encodings", async () => {
    const answeredBefore = await laneCount("answered");
    const handedBefore = await laneCount("handed_over");
    for (const responseEncoding of ["base64", false] as const) {
      const sdk = new Redis({
        url: lane().kv.url,
        token: lane().kv.token,
        responseEncoding,
        enableAutoPipelining: false,
      });
      await sdk.set("lane:sdk", { a: "zé" });
      expect(await sdk.get("lane:sdk")).toEqual({ a: "zé" });
      const p = sdk.pipeline();
      p.incr("lane:sdk:n");
      p.get("lane:sdk:n");
      expect(await p.exec()).toEqual([expect.any(Number), expect.any(Number)]);
    }
    // Six requests; an undici body written apart from its headers would be handed over instead.
    expect((await laneCount("answered")) - answeredBefore).toBe(6);
    expect(await laneCount("handed_over")).toBe(handedBefore);
  });
});
