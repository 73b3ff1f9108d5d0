import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registry } from "../../src/shared/metrics.js";
import { eventually } from "../harness/eventually.js";
import {
  comparable,
  laneCount,
  once,
  portOf,
  RawClient,
  request,
  useLaneAndNode,
} from "../harness/raw-http.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * An adversarial review of the KV fast lane's single-command path (src/kv/fast/single.ts,
 * src/kv/http/direct.ts): a plain `POST /` command sent straight to a shared Redis connection and
 * answered in the socket event that brings its reply. What the general path guarantees must hold
 * here too: the request-body budget given back before the connection reads on, every waiting
 * client answered with a JSON error when its Redis connection goes, a direct command never queued
 * behind a blocking one, the bytes of every reply format as node:http's gateway writes them, and
 * the request counters equal to the traffic, bounded whatever names a client invents.
 */

const { lane, plain, redis } = useLaneAndNode({ requestTimeoutMs: 1000, kvPoolSize: 1 });

const auth = (s: TestStashd): Record<string, string> => ({
  Authorization: `Bearer ${s.kv.token}`,
});

const bodyOf = (r: Buffer | undefined): string =>
  (r ?? Buffer.alloc(0)).toString().split("\r\n\r\n")[1] ?? "";
const statusOf = (r: Buffer | undefined): number =>
  Number((r ?? Buffer.alloc(0)).toString("latin1").slice(9, 12));

/** CLIENT LIST's text. */
async function clientList(pool: RedisPool): Promise<string> {
  const reply = await pool.exec(["CLIENT", "LIST"]);
  return reply.kind === "bulk" ? reply.value.toString() : "";
}

describe("direct replies in every format", () => {
  /** [name, command, headers]: replies with bytes that are not UTF-8, errors, nil, arrays. */
  const CASES: [string, string[], Record<string, string>][] = [
    ["binary, JSON", ["GET", "d:bin"], {}],
    ["binary, base64", ["GET", "d:bin"], { "Upstash-Encoding": "base64" }],
    ["binary, RESP2", ["GET", "d:bin"], { "Upstash-Response-Format": "resp2" }],
    ["binary in an array, base64", ["MGET", "d:bin", "d:none"], { "Upstash-Encoding": "base64" }],
    ["an error, base64", ["INCR", "d:bin"], { "Upstash-Encoding": "base64" }],
    ["an error, RESP2", ["INCR", "d:bin"], { "Upstash-Response-Format": "resp2" }],
    ["nil, RESP2", ["GET", "d:none"], { "Upstash-Response-Format": "resp2" }],
    ["an integer, base64", ["STRLEN", "d:bin"], { "Upstash-Encoding": "base64" }],
    ["a simple string, base64", ["PING"], { "Upstash-Encoding": "base64" }],
  ];

  beforeAll(async () => {
    const pool = testPool(redis().url);
    try {
      await pool.exec(["SET", "d:bin", Buffer.from([0xff, 0xfe, 0x00, 0x22, 0x5c, 0xc3, 0x28])]);
    } finally {
      await pool.close();
    }
  });

  for (const [name, argv, headers] of CASES) {
    it(name, async () => {
      const body = JSON.stringify(argv);
      const answeredBefore = await laneCount("answered");
      const viaLane = await once(lane(), request("/", body, { ...auth(lane()), ...headers }));
      expect((await laneCount("answered")) - answeredBefore).toBe(1);
      const viaNode = await once(plain(), request("/", body, { ...auth(plain()), ...headers }));
      expect(comparable(viaLane)).toBe(comparable(viaNode));
    });
  }
});

/**
 * A CLIENT LIST line of a connection whose SET waits in Redis (`flags=b`: held by CLIENT PAUSE
 * WRITE). `cmd=` alone names a connection's last command, so an idle connection that last sent a
 * SET would match before the test's own request reached Redis.
 */
const WAITING_SET = /flags=b .*cmd=set /;

describe("direct commands and their Redis connection", () => {
  it("never wait behind a blocking command (one shared connection)", async () => {
    const blocked = new RawClient(portOf(lane()));
    const direct = new RawClient(portOf(lane()));
    try {
      blocked.write(request("/", '["BLPOP","d:empty","3"]', auth(lane())));
      await eventually(async () => {
        const pool = testPool(redis().url);
        try {
          expect(await clientList(pool)).toMatch(/flags=b .*cmd=blpop /);
        } finally {
          await pool.close();
        }
      });
      const started = Date.now();
      direct.write(request("/", '["ECHO","not behind"]', auth(lane())));
      expect(bodyOf((await direct.responses(1))[0])).toBe('{"result":"not behind"}');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      blocked.destroy();
      direct.destroy();
    }
  });

  it("answer every waiting client with a JSON error when it drops, then serve again", async () => {
    // One connection: CLIENT KILL ... SKIPME yes spares it.
    const pool = testPool(redis().url, 1);
    const clients = Array.from({ length: 4 }, () => new RawClient(portOf(lane())));
    try {
      // Writes wait in Redis (CLIENT PAUSE WRITE), then the gateway's connections are killed.
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      clients.forEach((c, i) => c.write(request("/", `["SET","d:drop:${i}","v"]`, auth(lane()))));
      await eventually(async () => {
        expect(await clientList(pool)).toMatch(WAITING_SET);
      });
      await pool.exec(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      await pool.exec(["CLIENT", "UNPAUSE"]);
      for (const c of clients) {
        const [res] = await c.responses(1);
        expect(statusOf(res)).toBeGreaterThanOrEqual(500);
        expect(JSON.parse(bodyOf(res))).toEqual({ error: expect.any(String) });
      }
      await eventually(async () => {
        const res = await once(lane(), request("/", '["ECHO","again"]', auth(lane())));
        expect(bodyOf(res)).toBe('{"result":"again"}');
      });
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      for (const c of clients) c.destroy();
    }
  });
});

describe("a client that half-closes while its direct reply is owed", () => {
  /** What a client gets for a write waiting in Redis, then a pipelined GET, then its FIN. */
  async function halfClosed(s: TestStashd, key: string): Promise<string[]> {
    const pool = testPool(redis().url, 1);
    const client = new RawClient(portOf(s));
    try {
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      client.write(request("/", `["SET","${key}","v"]`, auth(s)));
      client.write(request("/", `["GET","${key}"]`, auth(s)));
      await eventually(async () => expect(await clientList(pool)).toMatch(WAITING_SET));
      client.end();
      await pool.exec(["CLIENT", "UNPAUSE"]);
      return (await client.untilClosed()).map((r) => `${statusOf(r)} ${bodyOf(r)}`);
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      client.destroy();
    }
  }

  it("gets no answer, as from node:http's gateway, and the gateway serves on", async () => {
    const viaLane = await halfClosed(lane(), "d:half:lane");
    expect(viaLane).toEqual(await halfClosed(plain(), "d:half:node"));
    expect(viaLane).toEqual([]);
    const res = await once(lane(), request("/", '["ECHO","on"]', auth(lane())));
    expect(bodyOf(res)).toBe('{"result":"on"}');
  });
});

/** The sum of `stashd_http_requests_total` for the KV service, and its number of series. */
async function kvRequests(): Promise<{ total: number; series: number }> {
  const metric = await registry.getSingleMetric("stashd_http_requests_total")?.get();
  const kv = (metric?.values ?? []).filter((v) => v.labels.service === "kv");
  return { total: kv.reduce((sum, v) => sum + v.value, 0), series: kv.length };
}

describe("the request counters of direct commands", () => {
  it("equal the requests sent, errors and clients gone included, in bounded series", async () => {
    const before = await kvRequests();
    const client = new RawClient(portOf(lane()));
    const gone = new RawClient(portOf(lane()));
    const pool = testPool(redis().url, 1);
    try {
      const sent = [
        ...Array.from({ length: 50 }, (_, i) => request("/", `["ECHO","${i}"]`, auth(lane()))),
        ...Array.from({ length: 20 }, () => request("/", '["INCR","d:bin"]', auth(lane()))),
        // Invented names: errors, counted under one `other` series, never one series each.
        ...Array.from({ length: 600 }, (_, i) => request("/", `["X${i}"]`, auth(lane()))),
      ];
      client.write(Buffer.concat(sent));
      await client.responses(sent.length);
      // A write waiting in Redis (CLIENT PAUSE WRITE) when its client goes: answered to no one.
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      gone.write(request("/", '["SET","d:gone","v"]', auth(lane())));
      await eventually(async () => {
        const list = await clientList(pool);
        expect(list, list).toMatch(WAITING_SET);
      });
      gone.destroy();
      await pool.exec(["CLIENT", "UNPAUSE"]);
      await eventually(async () => {
        const now = await kvRequests();
        expect(now.total - before.total).toBe(sent.length + 1);
      });
      expect((await kvRequests()).series - before.series).toBeLessThanOrEqual(5);
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      client.destroy();
    }
  });
});

describe("the request-body budget of direct commands", () => {
  /** Bodies in flight at most the size of one request's: the next one needs it given back. */
  const BODY = '["ECHO","budget"]';
  const PIPELINE = '[["ECHO","budget"]]';
  let backend: TestRedis | undefined;
  let gateway: TestStashd | undefined;
  beforeAll(async () => {
    backend = await startRedis();
    gateway = await startStashd({
      kvRedisUrl: backend.url,
      services: ["kv"],
      maxInflightBodyBytes: Buffer.byteLength(PIPELINE),
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await backend?.stop();
  });

  it("is given back before the connection reads its next request (direct and general path)", async () => {
    const s = gateway as TestStashd;
    await once(s, request("/", BODY, auth(s))); // the command table loaded
    const handedBefore = await laneCount("handed_over");
    const answeredBefore = await laneCount("answered");
    const client = new RawClient(portOf(s));
    try {
      const sent = [BODY, PIPELINE, BODY, PIPELINE, BODY].map((b) =>
        request(b === BODY ? "/" : "/pipeline", b, auth(s)),
      );
      client.write(Buffer.concat(sent));
      const bodies = (await client.responses(5)).map(bodyOf);
      const one = '{"result":"budget"}';
      expect(bodies).toEqual([one, `[${one}]`, one, `[${one}]`, one]);
      expect((await laneCount("answered")) - answeredBefore).toBe(5);
      expect(await laneCount("handed_over")).toBe(handedBefore);
    } finally {
      client.destroy();
    }
  });
  /**
   * A request whose body is still arriving (found in the queue lane's second review, on the lane
   * both share): node:http refuses a stranger's from its head and counts a token holder's declared
   * body from it; the lane used to wait for either, counted nowhere. Within 2.5 s: before the
   * lane's own wait (the keep-alive timeout, 5 s) would have handed it over anyway.
   */
  it("counts a body still arriving, and refuses a stranger's from its head", async () => {
    const s = gateway as TestStashd;
    const partial = (headers: Record<string, string>): Buffer =>
      request("/pipeline", PIPELINE, headers).subarray(0, -2);
    const quickly = { timeoutMs: 2_500 };
    const holder = new RawClient(portOf(s));
    const stranger = new RawClient(portOf(s));
    try {
      holder.write(partial(auth(s)));
      await eventually(async () => {
        expect(statusOf(await once(s, request("/", BODY, auth(s))))).toBe(503);
      }, quickly);
      holder.write(PIPELINE.slice(-2));
      expect((await holder.responses(1)).map(bodyOf)).toEqual(['[{"result":"budget"}]']);
      expect(bodyOf(await once(s, request("/", BODY, auth(s))))).toBe('{"result":"budget"}');
      stranger.write(partial({}));
      const [refused] = await stranger.untilClosed(quickly.timeoutMs);
      expect(statusOf(refused as Buffer)).toBe(401);
    } finally {
      holder.destroy();
      stranger.destroy();
    }
  });
});

describe("answers on one connection, the direct and the general path mixed", () => {
  it("come back in request order", async () => {
    const a = auth(lane());
    const sent: [string, string, string][] = [
      ["/", '["SET","d:order","1"]', '{"result":"OK"}'],
      ["/pipeline", '[["INCR","d:order"]]', '[{"result":2}]'],
      ["/", '["GET","d:order"]', '{"result":"2"}'],
      ["/", '["BLPOP","d:order:none","0.05"]', '{"result":null}'],
      ["/", '["INCR","d:order"]', '{"result":3}'],
      ["/", '["EVAL","return redis.call(\'INCR\',KEYS[1])","1","d:order"]', '{"result":4}'],
      ["/", '["GET","d:order"]', '{"result":"4"}'],
      ["/?handed=over", '["INCR","d:order"]', '{"result":5}'],
      ["/", '["GET","d:order"]', '{"result":"5"}'],
    ];
    const client = new RawClient(portOf(lane()));
    try {
      client.write(Buffer.concat(sent.map(([path, body]) => request(path, body, a))));
      const bodies = (await client.responses(sent.length)).map(bodyOf);
      expect(bodies).toEqual(sent.map(([, , answer]) => answer));
    } finally {
      client.destroy();
    }
  });
});

describe("the daily request limit on the direct path", () => {
  /** What each of `count` GETs pipelined on one connection gets, as `status body`. */
  async function limited(s: TestStashd, count: number): Promise<string[]> {
    const client = new RawClient(portOf(s));
    try {
      const one = request("/", '["GET","d:limit"]', auth(s));
      client.write(Buffer.concat(Array.from({ length: count }, () => one)));
      const answers = await client.responses(count);
      return answers.map((r) => `${statusOf(r)} ${bodyOf(r)}`);
    } finally {
      client.destroy();
    }
  }

  let backend: TestRedis | undefined;
  const gateways: TestStashd[] = [];
  beforeAll(async () => {
    backend = await startRedis();
    for (const kvFastLane of [true, false]) {
      const options = { kvRedisUrl: backend.url, services: ["kv" as const], kvFastLane };
      gateways.push(await startStashd({ ...options, kvDailyRequestLimit: 4 }));
    }
  });
  afterAll(async () => {
    for (const g of gateways) await g.stop();
    await backend?.stop();
  });

  it("counts and refuses as the general path does", async () => {
    const [withLane, nodeOnly] = gateways as [TestStashd, TestStashd];
    const viaLane = await limited(withLane, 6);
    const viaNode = await limited(nodeOnly, 6);
    expect(viaLane).toEqual(viaNode);
    expect(viaLane.slice(0, 4)).toEqual(Array.from({ length: 4 }, () => '200 {"result":null}'));
    expect(viaLane[4]).toMatch(/^400 .*max daily request limit exceeded/);
  });
});

describe("the read-only token on the direct path", () => {
  /** Commands the read-only token must not run, or runs only as the general path lets it. */
  const COMMANDS = [
    ["RESTORE", "d:ro", "0", "not a dump payload"],
    ["SET", "d:ro", "v"],
    ["DEL", "d:ro"],
    ["SCAN", "0"],
    ["KEYS", "*"],
    ["FLUSHDB"],
    ["EVAL", "return redis.call('SET','d:ro','v')", "0"],
    ["EVAL_RO", "return 1", "0"],
    ["SETRANGE", "d:ro", "0", "x"],
    ["COPY", "d:a", "d:ro"],
    ["GET", "d:ro"],
  ];

  it("is refused and allowed exactly as on the general path", async () => {
    for (const argv of COMMANDS) {
      const body = JSON.stringify(argv);
      const [viaLane, viaNode] = await Promise.all(
        [lane(), plain()].map((s) =>
          once(s, request("/", body, { Authorization: `Bearer ${s.kv.readonlyToken}` })),
        ),
      );
      expect(`${argv[0]} ${comparable(viaLane as Buffer)}`).toBe(
        `${argv[0]} ${comparable(viaNode as Buffer)}`,
      );
      if (argv[0] !== "GET" && argv[0] !== "EVAL_RO") expect(statusOf(viaLane)).toBe(400);
    }
    expect(
      await plain()
        .kvFetch("/exists/d:ro")
        .then((r) => r.json()),
    ).toEqual({ result: 0 });
  });

  it("and the standard token's RESTORE, refused by the database's rights, as on the general path", async () => {
    const body = JSON.stringify(["RESTORE", "d:restored", "0", "not a dump payload"]);
    const [viaLane, viaNode] = await Promise.all(
      [lane(), plain()].map((s) => once(s, request("/", body, auth(s)))),
    );
    expect(comparable(viaLane as Buffer)).toBe(comparable(viaNode as Buffer));
    expect(statusOf(viaLane)).toBe(400);
  });
});
