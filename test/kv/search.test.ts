import { Redis, s } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCompat, type Compat } from "../compat/context.js";
import { RedisConnection, parseRedisUrl } from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";

/**
 * SEARCH.* through stashd with @upstash/redis as the client (docs/search.md): definitions,
 * the filter language, options, aliases, a restart, and keys changed behind stashd's back.
 */
let c: Compat;
let redis: Redis;
let n = 0;
const fresh = (what: string) => `${what}-${++n}-${Date.now().toString(36)}`;

beforeAll(async () => {
  c = await startCompat();
  redis = c.sdk;
});
afterAll(async () => {
  await c?.stop();
});

const products = [
  {
    name: "Laptop Pro",
    description: "High performance laptop",
    category: "electronics",
    price: 1299.99,
    stock: 50,
    active: true,
  },
  {
    name: "Laptop Basic",
    description: "Budget friendly laptop",
    category: "electronics",
    price: 599.99,
    stock: 100,
    active: true,
  },
  {
    name: "Wireless Mouse",
    description: "Ergonomic wireless mouse",
    category: "electronics",
    price: 29.99,
    stock: 200,
    active: true,
  },
  {
    name: "USB Cable",
    description: "Fast charging USB cable",
    category: "accessories",
    price: 9.99,
    stock: 500,
    active: true,
  },
  {
    name: "Phone Case",
    description: "Protective phone case",
    category: "accessories",
    price: 19.99,
    stock: 300,
    active: false,
  },
];

const productSchema = s.object({
  name: s.string(),
  description: s.string(),
  category: s.keyword(),
  price: s.number(),
  stock: s.number("U64"),
  active: s.boolean(),
});

async function productIndex(dataType: "json" | "string" = "json") {
  const name = fresh("products");
  const index = await redis.search.createIndex({
    name,
    schema: productSchema,
    dataType,
    prefix: `${name}:`,
  });
  for (const [i, p] of products.entries()) {
    if (dataType === "json") await redis.json.set(`${name}:${i}`, "$", p);
    else await redis.set(`${name}:${i}`, JSON.stringify(p));
  }
  expect(await index.waitIndexing()).toBe(1);
  return { name, index };
}

const names = (rows: { data?: unknown }[]) => rows.map((r) => (r.data as { name: string }).name);

describe("SEARCH.CREATE, DESCRIBE, DROP, LISTINDEXES", () => {
  it("creates, describes, refuses a duplicate, accepts EXISTSOK, drops", async () => {
    const name = fresh("idx");
    const schema = s.object({
      title: s.string().noStem(),
      views: s.number("U64"),
      at: s.date().fast(),
    });
    await redis.search.createIndex({
      name,
      schema,
      dataType: "hash",
      prefix: [`${name}:a:`, `${name}:b:`],
      language: "german",
    });
    const description = await redis.search.index({ name }).describe();
    expect(description).toMatchObject({
      name,
      dataType: "hash",
      prefixes: [`${name}:a:`, `${name}:b:`],
      language: "german",
      schema: {
        title: { type: "TEXT", noStem: true },
        views: { type: "U64", fast: true },
        at: { type: "DATE", fast: true },
      },
    });
    await expect(
      redis.search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` }),
    ).rejects.toThrow("already exists");
    expect(
      await redis.exec([
        "SEARCH.CREATE",
        name,
        "EXISTSOK",
        "ON",
        "HASH",
        "PREFIX",
        "2",
        `${name}:a:`,
        `${name}:b:`,
        "LANGUAGE",
        "german",
        "SCHEMA",
        "title",
        "TEXT",
        "NOSTEM",
        "views",
        "U64",
        "FAST",
        "at",
        "DATE",
        "FAST",
      ]),
    ).toBe(0);
    expect(await redis.exec(["SEARCH.LISTINDEXES"])).toContain(name);
    expect(await redis.search.index({ name }).drop()).toBe(1);
    expect(await redis.search.index({ name }).drop()).toBe(0);
    expect(await redis.search.index({ name }).describe()).toBeNull();
  });

  it("answers bad definitions with errors", async () => {
    const create = (on: string, ...schema: string[]) =>
      redis.exec(["SEARCH.CREATE", "x", "ON", on, "PREFIX", "1", "x:", "SCHEMA", ...schema]);
    await expect(create("LIST", "a", "TEXT")).rejects.toThrow("unknown data type");
    await expect(create("HASH", "a", "VECTOR")).rejects.toThrow("unknown field type");
    await expect(create("HASH", "a.b", "TEXT")).rejects.toThrow("flat fields");
    await expect(create("HASH", "a", "U64", "NOSTEM")).rejects.toThrow("TEXT fields only");
    await expect(create("HASH")).rejects.toThrow("at least one field");
  });

  it("answers the SDK's values for indexes that do not exist", async () => {
    const index = redis.search.index({ name: "no-such-index" });
    expect(await index.query()).toBeNull();
    expect(await index.count({ filter: {} })).toEqual({ count: -1 });
    expect(await index.waitIndexing()).toBe(0);
  });
});

describe("SEARCH.QUERY filters", () => {
  let index: Awaited<ReturnType<typeof productIndex>>["index"];
  beforeAll(async () => {
    ({ index } = await productIndex());
  });

  it("matches text by term, smart, fuzzy, phrase and regex", async () => {
    expect(names(await index.query({ filter: { name: { $eq: "laptop" } } }))).toEqual([
      "Laptop Pro",
      "Laptop Basic",
    ]);
    expect(names(await index.query({ filter: { name: "laptpo" } }))).toEqual([
      "Laptop Pro",
      "Laptop Basic",
    ]);
    expect(
      names(await index.query({ filter: { name: { $fuzzy: { value: "Laptopp", distance: 2 } } } })),
    ).toHaveLength(2);
    expect(
      await index.query({
        filter: { name: { $fuzzy: { value: "laptpo", distance: 1, transpositionCostOne: false } } },
      }),
    ).toEqual([]);
    expect(
      names(
        await index.query({
          filter: { name: { $fuzzy: { value: "lep", distance: 1, prefix: true } } },
        }),
      ),
    ).toHaveLength(2);
    expect(
      names(await index.query({ filter: { description: { $phrase: "wireless mouse" } } })),
    ).toEqual(["Wireless Mouse"]);
    expect(await index.query({ filter: { description: { $phrase: "mouse wireless" } } })).toEqual(
      [],
    );
    expect(
      names(
        await index.query({ filter: { description: { $phrase: { value: "fast usb", slop: 1 } } } }),
      ),
    ).toEqual(["USB Cable"]);
    expect(
      names(
        await index.query({
          filter: { description: { $phrase: { value: "ergonomic wire", prefix: true } } },
        }),
      ),
    ).toEqual(["Wireless Mouse"]);
    expect(names(await index.query({ filter: { name: { $regex: "Lap.*" } } }))).toEqual([
      "Laptop Pro",
      "Laptop Basic",
    ]);
  });

  it("filters numbers, booleans and keywords, and combines clauses", async () => {
    expect(names(await index.query({ filter: { price: { $gt: 100, $lt: 1000 } } }))).toEqual([
      "Laptop Basic",
    ]);
    expect(names(await index.query({ filter: { stock: { $in: [50, 300] } } }))).toEqual([
      "Laptop Pro",
      "Phone Case",
    ]);
    expect(names(await index.query({ filter: { active: false } }))).toEqual(["Phone Case"]);
    expect(names(await index.query({ filter: { category: { $gte: "b" } } }))).toHaveLength(3);
    expect(
      names(
        await index.query({
          filter: { $must: [{ category: "electronics" }], $mustNot: [{ name: "laptop" }] },
        }),
      ),
    ).toEqual(["Wireless Mouse"]);
    expect(names(await index.query({ filter: { $mustNot: [{ name: "laptop" }] } }))).toEqual([]);
    expect(
      names(
        await index.query({
          filter: { $or: [{ name: "mouse" }, { name: "cable" }] },
          orderBy: { price: "ASC" },
        }),
      ),
    ).toEqual(["USB Cable", "Wireless Mouse"]);
    const boosted = await index.query({
      filter: {
        $should: [{ name: { $eq: "laptop" } }, { description: { $eq: "budget", $boost: 10 } }],
      },
    });
    expect(names(boosted)[0]).toBe("Laptop Basic");
  });

  it("pages, orders, selects and highlights", async () => {
    const byPrice = await index.query({
      filter: {},
      orderBy: { price: "DESC" },
      limit: 2,
      offset: 1,
    });
    expect(names(byPrice)).toEqual(["Laptop Basic", "Wireless Mouse"]);
    const keysOnly = await index.query({ filter: { active: true }, select: {} });
    expect(keysOnly).toHaveLength(4);
    expect(keysOnly[0]).not.toHaveProperty("data");
    const selected = await index.query({
      filter: { description: "laptop" },
      select: { description: true, price: true },
      highlight: { fields: ["description"], preTag: "[", postTag: "]" },
    });
    expect(selected.map((r) => r.data)).toEqual([
      { description: "High performance [laptop]", price: 1299.99 },
      { description: "Budget friendly [laptop]", price: 599.99 },
    ]);
    await expect(index.query({ filter: {}, orderBy: { name: "ASC" } } as never)).rejects.toThrow(
      "FAST",
    );
  });

  it("matches several words smartly and highlights whole documents", async () => {
    expect(names(await index.query({ filter: { description: "ergonomic wireles mous" } }))).toEqual(
      ["Wireless Mouse"],
    );
    const [hit] = await index.query({
      filter: { description: { $eq: "cable" } },
      highlight: { fields: ["description"] },
    });
    expect(hit?.data).toMatchObject({
      name: "USB Cable",
      description: "Fast charging USB <em>cable</em>",
    });
  });

  it("counts, and answers bad filters with errors", async () => {
    expect(await index.count({ filter: { category: "accessories" } })).toEqual({ count: 2 });
    await expect(index.query({ filter: { nope: 1 } } as never)).rejects.toThrow(
      "unknown field 'nope'",
    );
    await expect(index.query({ filter: { price: { $regex: "x" } } } as never)).rejects.toThrow(
      "does not apply",
    );
    await expect(redis.exec(["SEARCH.QUERY", index.name, "{not json"])).rejects.toThrow(
      "not valid JSON",
    );
    await expect(redis.exec(["SEARCH.QUERY", index.name, "{}", "LIMIT", "100000"])).rejects.toThrow(
      "STASHD_SEARCH_MAX_LIMIT",
    );
  });
});

describe("index upkeep", () => {
  it("follows writes, deletes and expiries, also those made behind stashd's back", async () => {
    const { name, index } = await productIndex("string");
    const direct = await RedisConnection.open(parseRedisUrl(c.redis.url), 2000);
    try {
      await direct.send([
        "SET",
        `${name}:9`,
        JSON.stringify({ name: "Laptop Ultra", price: 1, stock: 1, active: true }),
      ]);
      await direct.send(["DEL", `${name}:1`]);
      await direct.send([
        "SET",
        `${name}:0`,
        JSON.stringify({ name: "Desktop", price: 2, stock: 1, active: true }),
      ]);
      await direct.send(["PEXPIRE", `${name}:2`, "1"]);
      await direct.send(["SET", `${name}:8`, "not json"]);
      await index.waitIndexing();
      expect(names(await index.query({ filter: { name: "laptop" } }))).toEqual(["Laptop Ultra"]);
      // Redis expires the key within its active-expiry cycle, then notifies.
      await eventually(async () => {
        await index.waitIndexing();
        expect(await index.count({ filter: {} })).toEqual({ count: 4 });
      });
    } finally {
      direct.destroy();
    }
  });

  it("keeps definitions across a restart and rebuilds the index from Redis", async () => {
    const { name } = await productIndex("json");
    await c.stashd.stopKeepingData();
    const again = await startCompat({ kvRedisUrl: c.redis.url, dataDir: c.stashd.dataDir });
    try {
      const index = again.sdk.search.index({ name });
      expect(await index.count({ filter: { category: "electronics" } })).toEqual({ count: 3 });
    } finally {
      // `again` started a redis-server of its own (unused: kvRedisUrl points at c's); both go.
      await again.stop();
      await c.redis.stop();
    }
    c = await startCompat();
    redis = c.sdk;
  });
});

describe("aliases and tokens", () => {
  it("queries through an alias and lists aliases", async () => {
    const { name } = await productIndex("json");
    const alias = fresh("alias");
    expect(await redis.search.alias.add({ indexName: name, alias })).toBe(1);
    expect((await redis.search.alias.list())[alias]).toBe(name);
    expect(await redis.search.index({ name: alias }).count({ filter: { active: true } })).toEqual({
      count: 4,
    });
    expect(await redis.search.alias.delete({ alias })).toBe(1);
    expect(await redis.search.alias.delete({ alias })).toBe(0);
  });

  it("lets the read-only token query but not create or drop", async () => {
    const { name } = await productIndex("json");
    const ro = new Redis({ url: c.stashd.kv.url, token: c.stashd.kv.readonlyToken });
    expect(await ro.search.index({ name }).count({ filter: {} })).toEqual({ count: 5 });
    await expect(ro.search.index({ name }).drop()).rejects.toThrow("read-only");
    await expect(
      ro.search.createIndex({
        name: "x",
        schema: s.object({ a: s.string() }),
        dataType: "json",
        prefix: "x:",
      }),
    ).rejects.toThrow("read-only");
  });

  it("serves SEARCH in pipelines, not in transactions", async () => {
    const { name } = await productIndex("json");
    const body = JSON.stringify([
      ["SEARCH.COUNT", name, "{}"],
      ["GET", "nothing"],
      ["SEARCH.QUERY", name, "{", "LIMIT", "1"],
    ]);
    const piped = await c.stashd.kvFetch("/pipeline", { body });
    expect(await piped.json()).toEqual([
      { result: 5 },
      { result: null },
      { error: "ERR the filter is not valid JSON" },
    ]);
    const tx = await c.stashd.kvFetch("/multi-exec", {
      body: JSON.stringify([["SEARCH.COUNT", name, "{}"]]),
    });
    expect(tx.status).toBe(400);
    expect(((await tx.json()) as { error: string }).error).toContain(
      "not allowed in a transaction",
    );
  });
});

describe("SEARCH.AGGREGATE, SCOREFUNC, dates, REINDEX and reply forms", () => {
  let name: string;
  beforeAll(async () => {
    name = fresh("sales");
    const schema = s.object({
      title: s.string(),
      region: s.facet(),
      amount: s.number("F64"),
      units: s.number("U64"),
      at: s.date().fast(),
    });
    await redis.search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
    const rows = [
      ["widget sale", "/eu/fr", 10, 1, "2026-01-01T10:00:00Z"],
      ["widget sale", "/eu/de", 20, 2, "2026-01-01T20:00:00Z"],
      ["gadget sale", "/eu/de", 30, 3, "2026-01-02T10:00:00Z"],
      ["gadget sale", "/us/ny", 45, 4, "2026-01-03T10:00:00Z"],
    ] as const;
    for (const [i, [title, region, amount, units, at]] of rows.entries()) {
      await redis.hset(`${name}:${i}`, { title, region, amount, units, at });
    }
    await redis.search.index({ name }).waitIndexing();
  });

  it("computes metrics, buckets with nested aggregations, and facet trees", async () => {
    const index = redis.search.index({ name });
    const result = await index.aggregate({
      filter: { title: "sale" },
      aggregations: {
        stats: { $stats: { field: "amount" } },
        p: { $percentiles: { field: "amount", percents: [50] } },
        distinct: { $cardinality: { field: "region" } },
        byUnits: {
          $range: { field: "units", ranges: [{ to: 3 }, { from: 3 }] },
          $aggs: { sum: { $sum: { field: "amount" } } },
        },
        perDay: { $dateHistogram: { field: "at", fixedInterval: "1d" } },
        regions: { $facet: { field: "region", path: "/eu" } },
      },
    } as never);
    expect(result).toEqual({
      stats: { count: 4, min: 10, max: 45, sum: 105, avg: 26.25 },
      p: { values: { "50.0": 25 } },
      distinct: { value: 3 },
      byUnits: {
        buckets: [
          { key: "*-3", docCount: 2, to: 3, sum: { value: 30 } },
          { key: "3-*", docCount: 2, from: 3, sum: { value: 75 } },
        ],
      },
      perDay: {
        buckets: [
          { key: Date.parse("2026-01-01"), docCount: 2 },
          { key: Date.parse("2026-01-02"), docCount: 1 },
          { key: Date.parse("2026-01-03"), docCount: 1 },
        ],
      },
      regions: {
        path: "/eu",
        sumOtherDocCount: 0,
        children: [
          { path: "/eu/de", docCount: 2, sumOtherDocCount: 0 },
          { path: "/eu/fr", docCount: 1, sumOtherDocCount: 0 },
        ],
      },
    });
    await expect(
      index.aggregate({ aggregations: { x: { $avg: { field: "title" } } } } as never),
    ).rejects.toThrow("non-TEXT");
  });

  it("ranks by SCOREFUNC and filters dates", async () => {
    const index = redis.search.index({ name });
    // Untyped index: the options' types would need the schema, the rows are keys and scores.
    const keysAndScores = (opts: object) =>
      index.query(opts as never) as Promise<{ key: string; score: number }[]>;
    const replaced = await keysAndScores({
      filter: { title: "sale" },
      scoreFunc: { field: "amount", scoreMode: "replace" },
      select: {},
    });
    expect(replaced.map((r) => r.score)).toEqual([45, 30, 20, 10]);
    const logged = await keysAndScores({
      filter: { title: "sale" },
      scoreFunc: { field: "units", modifier: "log1p", factor: 9, scoreMode: "replace" },
      select: {},
    });
    expect(logged[0]?.score).toBeCloseTo(Math.log10(1 + 36));
    const january2 = await keysAndScores({
      filter: { at: { $gte: "2026-01-02T00:00:00Z", $lt: "2026-01-03T00:00:00Z" } },
      select: {},
    });
    expect(january2.map((r) => r.key)).toEqual([`${name}:2`]);
  });

  it("REINDEX rescans; replies come as JSON, base64 and RESP2", async () => {
    expect(await redis.exec(["SEARCH.REINDEX", name])).toBe("OK");
    const args = JSON.stringify([
      "SEARCH.QUERY",
      name,
      JSON.stringify({ title: "gadget" }),
      "NOCONTENT",
      "LIMIT",
      "1",
      "ORDERBY",
      "amount",
      "DESC",
    ]);
    const json = await c.stashd.kvFetch("/", { body: args });
    expect(await json.json()).toEqual({ result: [[`${name}:3`, expect.any(String)]] });
    const b64 = await c.stashd.kvFetch("/", {
      body: args,
      headers: { "upstash-encoding": "base64" },
    });
    const [[key]] = ((await b64.json()) as { result: string[][] }).result as [[string]];
    expect(Buffer.from(key, "base64").toString()).toBe(`${name}:3`);
    const resp = await c.stashd.kvFetch("/", {
      body: args,
      headers: { "upstash-response-format": "resp2" },
    });
    expect(await resp.text()).toMatch(
      new RegExp(`^\\*1\\r\\n\\*2\\r\\n\\$\\d+\\r\\n${name}:3\\r\\n\\$\\d+\\r\\n`),
    );
  });
});
