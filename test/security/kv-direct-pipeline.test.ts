import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import {
  comparable,
  laneCount,
  once,
  portOf,
  RawClient,
  request,
  settledLaneAnswers,
  useLaneAndNode,
} from "../harness/raw-http.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import type { StartOptions } from "../../src/index.js";

/**
 * An adversarial review of the KV fast lane's promise-free `/pipeline` path
 * (kv/commands/execute.ts sendEncodedPipeline, kv/http/direct-pipeline.ts): a pipeline body sent
 * to Redis straight from its bytes and answered in the socket event that brings its replies,
 * rendered through a scratch buffer kept between answers (kv/reply/reply-bytes.ts renderRaw).
 * What the general path guarantees must hold here too: a JSON error for every waiting client when
 * its Redis connection goes, answers that never share bytes, the reply cap, the policy of every
 * command, answers in order on one connection, and the daily limit counting every command.
 */

const MAX_REPLY = 1024 * 1024;
const { lane, plain, redis } = useLaneAndNode({
  requestTimeoutMs: 2000,
  kvPoolSize: 1,
  kvMaxReplyBytes: MAX_REPLY,
});

const auth = (s: TestStashd): Record<string, string> => ({
  Authorization: `Bearer ${s.kv.token}`,
});
const readonly = (s: TestStashd): Record<string, string> => ({
  Authorization: `Bearer ${s.kv.readonlyToken}`,
});

const bodyOf = (r: Buffer | undefined): Buffer => {
  const raw = r ?? Buffer.alloc(0);
  return raw.subarray(raw.indexOf("\r\n\r\n") + 4);
};
const statusOf = (r: Buffer | undefined): number =>
  Number((r ?? Buffer.alloc(0)).toString("latin1").slice(9, 12));

/** CLIENT LIST's text. */
async function clientList(pool: RedisPool): Promise<string> {
  const reply = await pool.exec(["CLIENT", "LIST"]);
  return reply.kind === "bulk" ? reply.value.toString() : "";
}

/** A KV gateway of its own on a Redis of its own, started for the enclosing describe. */
function useKvGateway(options: StartOptions): { gateway: () => TestStashd; url: () => string } {
  let backend: TestRedis | undefined;
  let gateway: TestStashd | undefined;
  beforeAll(async () => {
    backend = await startRedis();
    gateway = await startStashd({ ...options, kvRedisUrl: backend.url, services: ["kv"] });
  });
  afterAll(async () => {
    await gateway?.stop();
    await backend?.stop();
  });
  return { gateway: () => gateway as TestStashd, url: () => (backend as TestRedis).url };
}

/** Each client's one answer is a JSON error (5xx). */
async function failedEach(clients: RawClient[]): Promise<void> {
  for (const c of clients) {
    const [res] = await c.responses(1);
    expect(statusOf(res)).toBeGreaterThanOrEqual(500);
    expect(JSON.parse(bodyOf(res).toString())).toEqual({ error: expect.any(String) });
  }
}

/** `s` serves pipelines again (once its Redis connection is back). */
async function servedAgain(s: TestStashd): Promise<void> {
  await eventually(async () => {
    const res = await once(s, request("/pipeline", '[["ECHO","again"]]', auth(s)));
    expect(bodyOf(res).toString()).toBe('[{"result":"again"}]');
  });
}

/** Runs `body` while the test Redis holds writes (CLIENT PAUSE WRITE), with a pool of one. */
async function whilePaused<T>(body: (pool: RedisPool) => Promise<T>): Promise<T> {
  const pool = testPool(redis().url, 1); // one connection: CLIENT KILL … SKIPME yes spares it
  try {
    await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
    return await body(pool);
  } finally {
    await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
    await pool.close();
  }
}

/**
 * Until Redis holds a PSETEX: a command no other test here sends, since CLIENT LIST shows the
 * last command of every connection (an idle one's `cmd=set` would match at once).
 */
async function held(pool: RedisPool): Promise<void> {
  await eventually(async () => expect(await clientList(pool)).toMatch(/cmd=psetex /));
}

/** Sets each key to its value on the test Redis. */
async function setAll(values: Record<string, Buffer>): Promise<void> {
  const pool = testPool(redis().url);
  try {
    for (const [key, value] of Object.entries(values)) await pool.exec(["SET", key, value]);
  } finally {
    await pool.close();
  }
}

/** A pipeline body of GETs of these keys. */
const gets = (keys: string[]): string => JSON.stringify(keys.map((k) => ["GET", k]));

/** The same request to both gateways, its answers `comparable`, and the lane's counted answered. */
async function both(
  path: string,
  body: string,
  headers: (s: TestStashd) => Record<string, string>,
) {
  const [viaLane, viaNode] = await Promise.all(
    [lane(), plain()].map((s) => once(s, request(path, body, headers(s)))),
  );
  return { lane: viaLane as Buffer, node: viaNode as Buffer };
}

describe("a promise-free pipeline and its Redis connection", () => {
  it("every waiting client gets a JSON error when it drops, then the next are served", async () => {
    const pool = testPool(redis().url, 1); // one connection: SKIPME yes spares it
    const clients = Array.from({ length: 4 }, () => new RawClient(portOf(lane())));
    try {
      const answeredBefore = await laneCount("answered");
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      clients.forEach((c, i) =>
        c.write(
          request(
            "/pipeline",
            `[["GET","p:drop"],["PSETEX","p:drop:${i}","100000","v"]]`,
            auth(lane()),
          ),
        ),
      );
      await eventually(async () => expect(await clientList(pool)).toMatch(/cmd=psetex /));
      await pool.exec(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      await pool.exec(["CLIENT", "UNPAUSE"]);
      await failedEach(clients);
      expect((await laneCount("answered")) - answeredBefore).toBe(4);
      await servedAgain(lane());
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      for (const c of clients) c.destroy();
    }
  });
});

describe("answers rendered through the kept scratch buffer", () => {
  const values: Record<string, Buffer> = {};
  beforeAll(async () => {
    const sizes = [0, 1, 5, 63, 64, 65, 200, 3000];
    for (let i = 0; i < 80; i++) {
      const size = sizes[i % sizes.length] as number;
      // Plain ASCII (written directly), random bytes (escaped or not UTF-8: renderItem).
      values[`p:s:${i}`] =
        i % 3 === 0
          ? randomBytes(size)
          : Buffer.from(randomBytes(size).toString("hex").slice(0, size));
    }
    for (let i = 0; i < 20; i++) values[`p:big:${i}`] = randomBytes(8 * 1024);
    await setAll(values);
  });

  it("never share or corrupt bytes across many connections, small, large and streamed", async () => {
    const keys = Object.keys(values).filter((k) => k.startsWith("p:s:"));
    const big = Object.keys(values).filter((k) => k.startsWith("p:big:"));
    const formats: Record<string, string>[] = [{}, { "Upstash-Encoding": "base64" }];
    const jobs: { body: string; headers: Record<string, string> }[] = [];
    for (let i = 0; i < 60; i++) {
      const picked = Array.from(
        { length: 1 + (i % 17) },
        (_, j) => keys[(i * 7 + j * 13) % keys.length] as string,
      );
      // Every fifth pipeline is too large to render at once: sendList streams it.
      const list = i % 5 === 0 ? [...picked, ...big] : picked;
      jobs.push({ body: gets(list), headers: formats[i % 2] as Record<string, string> });
    }
    const clients = Array.from({ length: 12 }, () => new RawClient(portOf(lane())));
    const answeredBefore = await laneCount("answered");
    try {
      jobs.forEach((job, i) => {
        const c = clients[i % clients.length] as RawClient;
        c.write(request("/pipeline", job.body, { ...auth(lane()), ...job.headers }));
      });
      const answers = await Promise.all(
        clients.map((c, n) =>
          c.responses(jobs.filter((_, i) => i % clients.length === n).length, 15_000),
        ),
      );
      expect((await laneCount("answered")) - answeredBefore).toBe(jobs.length);
      // Each answer is the node:http gateway's for the same request.
      for (let i = 0; i < jobs.length; i++) {
        const job = jobs[i] as (typeof jobs)[number];
        const got = (answers[i % clients.length] as Buffer[])[Math.floor(i / clients.length)];
        const expected = await once(
          plain(),
          request("/pipeline", job.body, { ...auth(plain()), ...job.headers }),
        );
        expect(comparable(got as Buffer), `pipeline ${i}`).toBe(comparable(expected));
      }
    } finally {
      for (const c of clients) c.destroy();
    }
  });
});

describe("pipeline replies in every format and the reply cap", () => {
  beforeAll(async () => {
    const pool = testPool(redis().url);
    try {
      await pool.exec(["SET", "p:bin", Buffer.from([0xff, 0xfe, 0x00, 0x22, 0x5c, 0xc3, 0x28])]);
      await pool.exec(["RPUSH", "p:list", "a", Buffer.from([0xff]), "c"]);
      await pool.exec(["HSET", "p:hash", "f", "v"]);
      for (let i = 0; i < 20; i++) await pool.exec(["SET", `p:huge:${i}`, "x".repeat(80 * 1024)]);
    } finally {
      await pool.close();
    }
  });

  const BODIES: [string, string][] = [
    [
      "errors among replies",
      '[["GET","p:bin"],["INCR","p:bin"],["GET","p:none"],["HGET","p:list","f"]]',
    ],
    [
      "nil and nested arrays",
      '[["LRANGE","p:list","0","-1"],["GET","p:none"],["HGETALL","p:hash"],["SCAN","0","MATCH","p:hash"]]',
    ],
    ["non-UTF-8", '[["GET","p:bin"],["LRANGE","p:list","0","-1"],["PING"],["STRLEN","p:bin"]]'],
    ["the reply cap crossed midway", gets(Array.from({ length: 20 }, (_, i) => `p:huge:${i}`))],
    ["an unknown command", '[["GET","p:bin"],["NOSUCHCOMMAND","x"]]'],
  ];
  const FORMATS: [string, Record<string, string>][] = [
    ["JSON", {}],
    ["base64", { "Upstash-Encoding": "base64" }],
    ["RESP2", { "Upstash-Response-Format": "resp2" }],
  ];

  for (const [name, body] of BODIES) {
    for (const [formatName, headers] of FORMATS) {
      it(`${name}, ${formatName}: the bytes node:http writes`, async () => {
        const r = await both("/pipeline", body, (s) => ({ ...auth(s), ...headers }));
        expect(comparable(r.lane)).toBe(comparable(r.node));
      });
    }
  }
});

describe("policy on a promise-free pipeline", () => {
  /** The keys these pipelines touch, as before each of them. */
  async function reset(): Promise<void> {
    const pool = testPool(redis().url);
    try {
      await pool.exec(["DEL", "p:pol", "p:json", "p:h"]);
    } finally {
      await pool.close();
    }
  }

  const MIXED: string[][][] = [
    [
      ["GET", "p:pol"],
      ["SET", "p:pol", "w"],
    ],
    [["GET", "p:pol"], ["FLUSHALL"]],
    [["GET", "p:pol"], ["FLUSHDB"]],
    [
      ["GET", "p:pol"],
      ["EVAL", "return redis.call('SET','p:pol','e')", "0"],
    ],
    [
      ["GET", "p:pol"],
      ["JSON.SET", "p:json", "$", "1"],
    ],
    [
      ["GET", "p:pol"],
      ["JSON.GET", "p:json"],
    ],
    [
      ["GET", "p:pol"],
      ["BLPOP", "p:none", "0.01"],
    ],
    [
      ["GET", "p:pol"],
      ["SUBSCRIBE", "ch"],
    ],
    [
      ["GET", "p:pol"],
      ["CLIENT", "KILL", "TYPE", "normal"],
    ],
    [
      ["GET", "p:pol"],
      ["CONFIG", "SET", "maxmemory", "1"],
    ],
    [["GET", "p:pol"], ["SHUTDOWN"]],
    [
      ["GET", "p:pol"],
      ["DEBUG", "SLEEP", "0"],
    ],
    [
      ["GET", "p:pol"],
      ["KEYS", "*"],
    ],
    [
      ["GET", "p:pol"],
      ["HSETEX", "p:h", "EX", "10", "FIELDS", "1", "f", "v"],
    ],
    [["GET", "p:pol"], ["MULTI"], ["SET", "p:pol", "m"], ["EXEC"]],
    [
      ["GET", "p:pol"],
      ["SELECT", "2"],
      ["SET", "p:pol", "s"],
    ],
  ];

  for (const [tokenName, token] of [
    ["standard", auth],
    ["read-only", readonly],
  ] as const) {
    it(`${tokenName} token: refused, rewritten and emulated commands as on the general path`, async () => {
      for (const commands of MIXED) {
        const body = JSON.stringify(commands);
        // One gateway after the other, each from the same keys (the commands write).
        const answers: string[] = [];
        for (const s of [lane(), plain()]) {
          await reset();
          answers.push(
            `${body} ${comparable(await once(s, request("/pipeline", body, token(s))))}`,
          );
        }
        expect(answers[0]).toBe(answers[1]);
      }
      const pool = testPool(redis().url);
      try {
        // CONFIG SET maxmemory 1 and SHUTDOWN were refused on both paths: Redis serves as before.
        const maxmemory = await pool.exec(["CONFIG", "GET", "maxmemory"]);
        const value = maxmemory.kind === "array" ? maxmemory.value[1] : undefined;
        expect(value?.kind === "bulk" ? value.value.toString() : "").toBe("0");
        expect((await pool.exec(["PING"])).kind).toBe("simple");
      } finally {
        await pool.close();
      }
    });
  }
});

describe("one connection, several pipelines", () => {
  it("answers in request order, direct and general mixed, and a half-close while owed", async () => {
    const a = auth(lane());
    const sent: [string, string][] = [
      ["/pipeline", '[["SET","p:order","1"],["INCR","p:order"]]'],
      ["/pipeline", '[["INCR","p:order"],["BLPOP","p:order:none","0.05"]]'],
      ["/", '["INCR","p:order"]'],
      [
        "/pipeline",
        '[["INCR","p:order"],["EVAL","return redis.call(\'INCR\',KEYS[1])","1","p:order"]]',
      ],
      ["/pipeline", '[["GET","p:order"]]'],
    ];
    const client = new RawClient(portOf(lane()));
    try {
      client.write(Buffer.concat(sent.map(([path, body]) => request(path, body, a))));
      const bodies = (await client.responses(sent.length)).map((r) => bodyOf(r).toString());
      expect(bodies).toEqual([
        '[{"result":"OK"},{"result":2}]',
        '[{"result":3},{"result":null}]',
        '{"result":4}',
        '[{"result":5},{"result":6}]',
        '[{"result":"6"}]',
      ]);
    } finally {
      client.destroy();
    }
  });

  /** What a client gets for a pipeline waiting in Redis, then another, then its FIN. */
  async function halfClosed(s: TestStashd, key: string): Promise<string[]> {
    const client = new RawClient(portOf(s));
    try {
      return await whilePaused(async (pool) => {
        client.write(request("/pipeline", `[["PSETEX","${key}","100000","v"]]`, auth(s)));
        client.write(request("/pipeline", `[["GET","${key}"]]`, auth(s)));
        await held(pool);
        client.end();
        await pool.exec(["CLIENT", "UNPAUSE"]);
        return (await client.untilClosed()).map((r) => `${statusOf(r)} ${bodyOf(r).toString()}`);
      });
    } finally {
      client.destroy();
    }
  }

  it("a half-closed client gets what node:http gives it, and the gateway serves on", async () => {
    const viaLane = await halfClosed(lane(), "p:half:lane");
    expect(viaLane).toEqual(await halfClosed(plain(), "p:half:node"));
    const res = await once(lane(), request("/pipeline", '[["ECHO","on"]]', auth(lane())));
    expect(bodyOf(res).toString()).toBe('[{"result":"on"}]');
  });

  /** Pipelines waiting in Redis whose clients go away: what the keys they set read after. */
  async function gone(s: TestStashd, key: string): Promise<string> {
    const pool = testPool(redis().url, 1);
    try {
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      const clients = Array.from({ length: 5 }, () => new RawClient(portOf(s)));
      clients.forEach((c, i) =>
        c.write(request("/pipeline", `[["PSETEX","${key}:${i}","100000","v"]]`, auth(s))),
      );
      // A command no other test sends: CLIENT LIST shows a connection's last command.
      await eventually(async () => expect(await clientList(pool)).toMatch(/cmd=psetex /));
      for (const c of clients) c.destroy();
      await pool.exec(["CLIENT", "UNPAUSE"]);
      const all = gets(clients.map((_, i) => `${key}:${i}`));
      const want = `[${clients.map(() => '{"result":"v"}').join(",")}]`;
      let last = "";
      await eventually(async () => {
        last = bodyOf(await once(s, request("/pipeline", all, auth(s)))).toString();
        expect(last).toBe(want);
      }).catch(() => undefined);
      return last;
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
    }
  }

  it("a client gone while its pipeline is owed: its commands run as on node:http", async () => {
    const viaNode = await gone(plain(), "p:gone:node");
    const viaLane = await gone(lane(), "p:gone:lane");
    expect(viaLane).toBe(viaNode);
  });
});

describe("limits on a promise-free pipeline", () => {
  let backend: TestRedis | undefined;
  const gateways: TestStashd[] = [];
  beforeAll(async () => {
    backend = await startRedis();
    for (const kvFastLane of [true, false]) {
      const options = { kvRedisUrl: backend.url, services: ["kv" as const], kvFastLane };
      const limits = { kvDailyRequestLimit: 8, kvMaxCommandsPerRequest: 3, kvPoolSize: 1 };
      gateways.push(await startStashd({ ...options, ...limits }));
    }
  });
  afterAll(async () => {
    for (const g of gateways) await g.stop();
    await backend?.stop();
  });

  /** What each pipeline on one connection gets, as `status body`. */
  async function limited(s: TestStashd, bodies: string[]): Promise<string[]> {
    const client = new RawClient(portOf(s));
    try {
      client.write(Buffer.concat(bodies.map((b) => request("/pipeline", b, auth(s)))));
      const answers = await client.responses(bodies.length);
      return answers.map((r) => `${statusOf(r)} ${bodyOf(r).toString()}`);
    } finally {
      client.destroy();
    }
  }

  it("the daily limit counts each command, per-request limits refuse, as on the general path", async () => {
    const [withLane, nodeOnly] = gateways as [TestStashd, TestStashd];
    // One command each, so the command table is loaded and the lane takes its promise-free path.
    for (const s of gateways) await once(s, request("/pipeline", '[["PING"]]', auth(s)));
    const three = gets(["a", "b", "c"]);
    const bodies = [three, gets(["a", "b", "c", "d"]), three, gets(["a", "b"]), gets(["a"])];
    const viaLane = await limited(withLane, bodies);
    expect(viaLane).toEqual(await limited(nodeOnly, bodies));
    expect(viaLane[0]).toMatch(/^200 /);
    expect(viaLane[1]).toMatch(/^400 .*max commands per request/);
    expect(viaLane[3]).toMatch(/^400 .*max daily request limit exceeded/);
    expect(viaLane[4]).toMatch(/^200 /);
  });
});

describe("commands that change a connection's state, in a pipeline", () => {
  /** Each beside a GET: none may reach the shared connection (the next answers would shift). */
  const STATEFUL: string[][] = [
    ["CLIENT", "REPLY", "OFF"],
    ["CLIENT", "REPLY", "SKIP"],
    ["SELECT", "3"],
    ["HELLO", "3"],
    ["RESET"],
    ["QUIT"],
    ["WATCH", "p:state"],
    ["MULTI"],
    ["READONLY"],
    ["MONITOR"],
    ["SUBSCRIBE", "p:ch"],
    ["PSUBSCRIBE", "p:*"],
    ["SSUBSCRIBE", "p:ch"],
    ["client", "reply", "off"],
    ["CLIENT", "SETNAME", "evil"],
    ["CLIENT", "NO-EVICT", "on"],
    ["CLIENT", "TRACKING", "on"],
    ["AUTH", "default", "x"],
  ];

  it("answer as on the general path, and every later request on the lane is answered right", async () => {
    await setAll({ "p:state": Buffer.from("s") });
    for (const command of STATEFUL) {
      const body = JSON.stringify([["GET", "p:state"], command]);
      const r = await both("/pipeline", body, auth);
      expect(`${body} ${comparable(r.lane)}`).toBe(`${body} ${comparable(r.node)}`);
      const clients = Array.from({ length: 3 }, () => new RawClient(portOf(lane())));
      try {
        clients.forEach((c, i) =>
          c.write(request("/pipeline", `[["ECHO","${i}"],["GET","p:state"]]`, auth(lane()))),
        );
        for (const [i, c] of clients.entries()) {
          const [res] = await c.responses(1);
          expect(`${body} ${bodyOf(res).toString()}`).toBe(
            `${body} [{"result":"${i}"},{"result":"s"}]`,
          );
        }
      } finally {
        for (const c of clients) c.destroy();
      }
    }
  });
});

describe("the request-body budget when Redis drops under a promise-free pipeline", () => {
  const PIPELINE = '[["SET","p:budget","v"]]';
  /** As long as PIPELINE, with a command CLIENT LIST can tell from the SET before it. */
  const HELD = '[["PSETEX","b","9","v"]]';
  const { gateway, url } = useKvGateway({
    maxInflightBodyBytes: Buffer.byteLength(PIPELINE),
    kvPoolSize: 1,
  });

  it("is given back: the next pipelines are answered on the lane", async () => {
    const s = gateway();
    await once(s, request("/pipeline", PIPELINE, auth(s))); // the command table loaded
    const pool = testPool(url(), 1);
    const client = new RawClient(portOf(s));
    try {
      await pool.exec(["CLIENT", "PAUSE", "5000", "WRITE"]);
      client.write(request("/pipeline", HELD, auth(s)));
      await eventually(async () => expect(await clientList(pool)).toMatch(/cmd=psetex /));
      await pool.exec(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      await pool.exec(["CLIENT", "UNPAUSE"]);
      const [failed] = await client.responses(1);
      expect(JSON.parse(bodyOf(failed).toString())).toEqual({ error: expect.any(String) });
      const handedBefore = await laneCount("handed_over");
      await eventually(async () => {
        client.write(request("/pipeline", PIPELINE, auth(s)));
        const [res] = await client.responses(1);
        expect(bodyOf(res).toString()).toBe('[{"result":"OK"}]');
      });
      for (let i = 0; i < 3; i++) client.write(request("/pipeline", PIPELINE, auth(s)));
      const bodies = (await client.responses(3)).map((r) => bodyOf(r).toString());
      expect(bodies).toEqual(Array.from({ length: 3 }, () => '[{"result":"OK"}]'));
      expect(await laneCount("handed_over")).toBe(handedBefore);
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      client.destroy();
    }
  });
});

describe("ACL-user tokens on a promise-free pipeline", () => {
  /** An ACL RESTTOKEN of the user `piper` (GET, SET, PING on p:acl:* only) from gateway `s`. */
  async function mint(s: TestStashd): Promise<string> {
    const res = await once(s, request("/", '["ACL","RESTTOKEN","piper","secret"]', auth(s)));
    return (JSON.parse(bodyOf(res).toString()) as { result: string }).result;
  }

  it("run as their user, refused as on the general path, and leave the other tokens' rights alone", async () => {
    const setuser = '["ACL","SETUSER","piper","on",">secret","~p:acl:*","+get","+set","+ping"]';
    expect(bodyOf(await once(lane(), request("/", setuser, auth(lane())))).toString()).toBe(
      '{"result":"OK"}',
    );
    const tokens = new Map([
      [lane(), await mint(lane())],
      [plain(), await mint(plain())],
    ]);
    // Plain commands only (the promise-free path), then with FLUSHALL (rewritten: the general one).
    const body = JSON.stringify([
      ["SET", "p:acl:1", "v"],
      ["GET", "p:acl:1"],
      ["SET", "p:other", "x"],
      ["GET", "p:other"],
      ["PING"],
    ]);
    const flush = JSON.stringify([["GET", "p:acl:1"], ["FLUSHALL"], ["PING"]]);
    for (const pipeline of [body, flush]) {
      const r = await both("/pipeline", pipeline, (s) => ({
        Authorization: `Bearer ${tokens.get(s)}`,
      }));
      expect(comparable(r.lane)).toBe(comparable(r.node));
      expect(bodyOf(r.lane).toString()).toMatch(/NOPERM/);
    }
    // Interleaved on the lane: the standard token's pipelines still run as the standard user.
    const mixed = [lane(), lane(), lane()].map((s, i) =>
      once(
        s,
        request(
          "/pipeline",
          i === 1 ? body : `[["SET","p:std:${i}","s"],["GET","p:std:${i}"]]`,
          i === 1 ? { Authorization: `Bearer ${tokens.get(lane())}` } : auth(s),
        ),
      ),
    );
    const answers = (await Promise.all(mixed)).map((a) => bodyOf(a).toString());
    expect(answers[0]).toBe('[{"result":"OK"},{"result":"s"}]');
    expect(answers[2]).toBe('[{"result":"OK"},{"result":"s"}]');
    expect(answers[1]).toMatch(/NOPERM/);
    const exists = await once(lane(), request("/", '["EXISTS","p:other","p:std:0"]', auth(lane())));
    expect(bodyOf(exists).toString()).toBe('{"result":1}');
  });
});

describe("format headers on a pipeline", () => {
  const HEADERS: Record<string, string>[] = [
    { "Upstash-Encoding": "base64", "Upstash-Response-Format": "resp2" },
    { "Upstash-Encoding": " BASE64 " },
    { "Upstash-Response-Format": "JSON" },
    { "Upstash-Response-Format": "resp3" },
    { "Upstash-Encoding": "gzip" },
    { "Upstash-Sync-Token": "someone-else-1" },
  ];

  it("are read as on the general path", async () => {
    await setAll({ "p:fmt": Buffer.from([0xc3, 0x28, 0x41]) });
    const body = '[["GET","p:fmt"],["GET","p:fmt:none"],["INCR","p:fmt"]]';
    for (const headers of HEADERS) {
      const r = await both("/pipeline", body, (s) => ({ ...auth(s), ...headers }));
      const name = JSON.stringify(headers);
      // A refused header hands the request to node:http, which keeps the connection (comparable).
      expect(`${name} ${comparable(r.lane, true)}`).toBe(`${name} ${comparable(r.node, true)}`);
    }
  });
});

describe("promise-free pipelines past the command timeout", () => {
  // One shared connection, open after the first request: the lane's promise-free path.
  const { gateway, url } = useKvGateway({ kvCommandTimeoutMs: 300, kvPoolSize: 1 });

  it("each get a JSON error when their connection is given up, then the next are served", async () => {
    const s = gateway();
    await once(s, request("/pipeline", '[["PING"]]', auth(s))); // the command table loaded
    const pool = testPool(url(), 1);
    const clients = Array.from({ length: 3 }, () => new RawClient(portOf(s)));
    try {
      await pool.exec(["CLIENT", "PAUSE", "3000", "WRITE"]);
      clients.forEach((c, i) =>
        c.write(request("/pipeline", `[["GET","t"],["PSETEX","t:${i}","9","v"]]`, auth(s))),
      );
      await failedEach(clients);
      await pool.exec(["CLIENT", "UNPAUSE"]);
      await servedAgain(s);
    } finally {
      await pool.exec(["CLIENT", "UNPAUSE"]).catch(() => undefined);
      await pool.close();
      for (const c of clients) c.destroy();
    }
  });
});

describe("a client that does not read its pipelines' answers", () => {
  it("gets no more answered until it reads, then all of them in order", async () => {
    await setAll({ "p:reply": Buffer.from("r".repeat(32 * 1024)) });
    const client = new RawClient(portOf(lane()));
    try {
      client.reading(false);
      const count = 1000; // 31 MiB of answers, each rendered at once (under one piece)
      const answeredBefore = await laneCount("answered");
      client.write(
        Buffer.concat(
          Array.from({ length: count }, (_, i) =>
            request("/pipeline", `[["ECHO","${i}"],["GET","p:reply"]]`, auth(lane())),
          ),
        ),
      );
      expect(await settledLaneAnswers(answeredBefore)).toBeLessThan(count / 4);
      client.reading(true);
      const answers = await client.responses(count, 20_000);
      const echoed = answers.map((r) => /^\[\{"result":"(\d+)"\}/.exec(bodyOf(r).toString())?.[1]);
      expect(echoed).toEqual(Array.from({ length: count }, (_, i) => String(i)));
    } finally {
      client.destroy();
    }
  });
});
