import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { testPool } from "../harness/redis.js";
import { command, useGateway } from "./helpers.js";

/**
 * VECTOR.* with the official `@upstash/redis` 1.39 (`redis.vector`, its VectorIndex command
 * classes) and raw REST requests, on a plain Redis 7.0 (docs/vector.md). The examples follow
 * Upstash's documentation pages for the vector commands.
 */
const { stashd, redis } = useGateway({ kvVectorHnswMinVectors: 500 });

const sdk = (token?: string): Redis =>
  new Redis({ url: stashd().kv.url, token: token ?? stashd().kv.token });

describe("VECTOR.* through @upstash/redis", () => {
  it("creates an index, adds, gets, queries, counts, deletes and drops (the SDK's example)", async () => {
    const index = await sdk().vector.createIndex({ name: "docs", dimension: 3, metric: "COSINE" });
    expect(await index.add("doc-1", [0.1, 0.2, 0.3])).toBe(1);
    expect(await index.add("doc-2", [0.3, 0.2, 0.1])).toBe(1);
    expect(await index.add("doc-1", [0.1, 0.2, 0.35])).toBe(0);
    expect(await index.count()).toBe(2);
    expect(await index.get("doc-1")).toEqual([0.1, 0.2, 0.35]);
    expect(await index.get("none")).toBeNull();
    expect(await index.info()).toEqual({ dimension: 3, metric: "COSINE" });

    const hits = await index.query({ vector: [0.1, 0.2, 0.35], topK: 5 });
    expect(hits.map((h) => h.id)).toEqual(["doc-1", "doc-2"]);
    expect(hits[0]?.score).toBeCloseTo(1, 6);
    expect(hits[1]?.score).toBeGreaterThan(0);
    expect(hits[1]?.score).toBeLessThan(hits[0]?.score as number);

    expect(await index.delete("doc-2")).toBe(1);
    expect(await index.delete("doc-2")).toBe(0);
    expect(await index.count()).toBe(1);
    expect(await index.drop()).toBe(1);
    expect(await index.drop()).toBe(0);
    expect(await index.info()).toBeNull();
    expect(await index.count()).toBe(0);
  });

  it("takes vectors as number[], Float32Array and { base64 } alike", async () => {
    const index = await sdk().vector.createIndex({ name: "forms", dimension: 4, metric: "DOT" });
    const values = [0.5, -0.25, 1.5, 2];
    await index.add("list", values);
    await index.add("typed", new Float32Array(values));
    const base64 = Buffer.from(new Float32Array([1, 0, 0, 0]).buffer).toString("base64");
    await index.add("b64", { base64 });
    expect(await index.get("typed")).toEqual(values);
    expect(await index.get("b64")).toEqual([1, 0, 0, 0]);
    const hits = await index.query({ vector: new Float32Array([1, 0, 0, 0]), topK: 1 });
    expect(hits).toEqual([{ id: "b64", score: 1 }]);
  });

  it("normalises scores to 0…1 for each metric, higher is closer", async () => {
    const r = sdk();
    const cos = await r.vector.createIndex({ name: "s:cos", dimension: 2, metric: "COSINE" });
    await cos.add("same", [1, 0]);
    await cos.add("orthogonal", [0, 3]);
    await cos.add("opposite", [-2, 0]);
    expect(await cos.query({ vector: [5, 0], topK: 3, profile: "PRECISE" })).toEqual([
      { id: "same", score: 1 },
      { id: "orthogonal", score: 0.5 },
      { id: "opposite", score: 0 },
    ]);
    const euc = await r.vector.createIndex({ name: "s:euc", dimension: 2, metric: "EUCLIDEAN" });
    await euc.add("here", [1, 1]);
    await euc.add("near", [1, 2]);
    await euc.add("far", [4, 5]);
    expect(await euc.query({ vector: [1, 1], topK: 3 })).toEqual([
      { id: "here", score: 1 },
      { id: "near", score: 0.5 },
      { id: "far", score: 1 / 26 },
    ]);
    const dot = await r.vector.createIndex({ name: "s:dot", dimension: 2, metric: "DOT" });
    await dot.add("a", [0.5, 0]);
    await dot.add("b", [-0.5, 0]);
    expect(await dot.query({ vector: [1, 0], topK: 2, profile: "FAST" })).toEqual([
      { id: "a", score: 0.75 },
      { id: "b", score: 0.25 },
    ]);
  });

  it("asks for more than the index holds and gets everything it has; an unknown index answers []", async () => {
    const index = await sdk().vector.createIndex({ name: "small", dimension: 2, metric: "COSINE" });
    await index.add("only", [1, 1]);
    expect(await index.query({ vector: [1, 1], topK: 1000 })).toHaveLength(1);
    expect(
      await sdk()
        .vector.index("missing")
        .query({ vector: [1, 1], topK: 3 }),
    ).toEqual([]);
  });

  it("EXISTSOK succeeds on the same DIM and METRIC and fails on another", async () => {
    const r = sdk();
    await r.vector.createIndex({ name: "again", dimension: 3, metric: "EUCLIDEAN" });
    await expect(
      r.vector.createIndex({ name: "again", dimension: 3, metric: "EUCLIDEAN" }),
    ).rejects.toThrow(/already exists/);
    await r.vector.createIndex({
      name: "again",
      dimension: 3,
      metric: "EUCLIDEAN",
      existsOk: true,
    });
    await expect(
      r.vector.createIndex({ name: "again", dimension: 4, metric: "EUCLIDEAN", existsOk: true }),
    ).rejects.toThrow(/DIM 3/);
  });

  it("refuses a wrong dimension, a missing index, another key type and bad arguments", async () => {
    const r = sdk();
    const index = await r.vector.createIndex({ name: "strict", dimension: 3, metric: "COSINE" });
    await expect(index.add("x", [1, 2])).rejects.toThrow(/DIM 3/);
    await expect(index.query({ vector: [1, 2], topK: 1 })).rejects.toThrow(/DIM 3/);
    await expect(index.query({ vector: [1, 2, 3], topK: 0 })).rejects.toThrow(/TOPK/);
    await expect(index.query({ vector: [1, 2, 3], topK: 1001 })).rejects.toThrow(/TOPK/);
    await expect(r.vector.index("nope").add("x", [1, 2, 3])).rejects.toThrow(
      /no such vector index/,
    );
    await r.set("plain", "text");
    await expect(
      r.vector.createIndex({ name: "plain", dimension: 3, metric: "DOT" }),
    ).rejects.toThrow(/WRONGTYPE/);
    await expect(r.vector.index("plain").count()).rejects.toThrow(/WRONGTYPE/);
    await expect(
      r.vector.createIndex({ name: "big", dimension: 40_000, metric: "DOT" }),
    ).rejects.toThrow(/DIM must be an integer between 1 and 32768/);
    const s = stashd();
    for (const argv of [
      ["VECTOR.ADD", "strict", "x", "VALUES", "3", "1", "2"],
      ["VECTOR.ADD", "strict", "x", "VALUES", "3", "1", "2", "nan"],
      ["VECTOR.ADD", "strict", "", "VALUES", "3", "1", "2", "3"],
      ["VECTOR.ADD", "strict", "x", "BASE64-FP32", "not base64!"],
      ["VECTOR.QUERY", "strict", "TOPK", "3", "VALUES", "3", "1", "2", "3", "PROFILE", "SLOW"],
      ["VECTOR.CREATE", "m", "DIM", "3", "METRIC", "MANHATTAN"],
      ["VECTOR.GET", "strict"],
      ["VECTOR.NOPE", "strict"],
    ]) {
      const reply = await command(s, argv);
      expect(reply.status, JSON.stringify(argv)).toBe(400);
      expect(reply.body, JSON.stringify(argv)).toEqual({ error: expect.stringMatching(/^ERR /) });
    }
  });

  it("keeps the index at its key: TYPE, EXISTS and EXPIRE apply, DEL removes it", async () => {
    const r = sdk();
    const index = await r.vector.createIndex({ name: "keyed", dimension: 2, metric: "COSINE" });
    await index.add("a", [1, 0]);
    expect(await r.exists("keyed")).toBe(1);
    expect(await r.type("keyed")).toBe("hash");
    await r.del("keyed");
    expect(await index.info()).toBeNull();
    expect(await index.query({ vector: [1, 0], topK: 1 })).toEqual([]);
  });

  it("lets the read-only token GET, QUERY, COUNT and INFO but not CREATE, ADD, DEL or DROP", async () => {
    const index = await sdk().vector.createIndex({ name: "ro", dimension: 2, metric: "COSINE" });
    await index.add("a", [1, 0]);
    const ro = sdk(stashd().kv.readonlyToken).vector.index("ro");
    expect(await ro.get("a")).toEqual([1, 0]);
    expect(await ro.count()).toBe(1);
    expect(await ro.info()).toEqual({ dimension: 2, metric: "COSINE" });
    expect(await ro.query({ vector: [1, 0], topK: 1 })).toEqual([{ id: "a", score: 1 }]);
    await expect(ro.add("b", [0, 1])).rejects.toThrow(/NOPERM/);
    await expect(ro.delete("a")).rejects.toThrow(/NOPERM/);
    await expect(ro.drop()).rejects.toThrow(/NOPERM/);
    await expect(
      sdk(stashd().kv.readonlyToken).vector.createIndex({
        name: "ro2",
        dimension: 2,
        metric: "DOT",
      }),
    ).rejects.toThrow(/NOPERM/);
    expect(await index.count()).toBe(1);
  });

  it("sees writes made by another writer straight to Redis (the change log)", async () => {
    const index = await sdk().vector.createIndex({
      name: "{t}shared",
      dimension: 2,
      metric: "EUCLIDEAN",
    });
    await index.add("a", [0, 0]);
    expect(await index.query({ vector: [5, 5], topK: 1 })).toEqual([{ id: "a", score: 1 / 51 }]);
    // Another stashd process's write, as the script makes it: vector, sequence and log entry.
    const client = testPool(redis().url);
    const bytes = Buffer.from(new Float32Array([5, 5]).buffer);
    await client.exec(["HSET", "{t}shared", "id:b", bytes]);
    await client.exec(["HINCRBY", "{t}shared", "meta:seq", "1"]);
    await client.exec(["XADD", "{t}stashd:vector-log:{t}shared", "*", "i", "b", "n", "2"]);
    await client.close();
    expect(await index.query({ vector: [5, 5], topK: 1 })).toEqual([{ id: "b", score: 1 }]);
  });
});

describe("VECTOR.* over REST", () => {
  it("answers in pipelines, in base64 and RESP2, and refuses them in transactions", async () => {
    const s = stashd();
    await command(s, ["VECTOR.CREATE", "rest", "DIM", "2", "METRIC", "COSINE"]);
    const res = await s.kvFetch("/pipeline", {
      body: JSON.stringify([
        ["VECTOR.ADD", "rest", "a", "VALUES", "2", "1", "0"],
        ["SET", "k", "v"],
        ["VECTOR.QUERY", "rest", "TOPK", "1", "VALUES", "2", "1", "0"],
        ["VECTOR.INFO", "rest"],
      ]),
    });
    expect(await res.json()).toEqual([
      { result: 1 },
      { result: "OK" },
      { result: [["a", "1"]] },
      { result: ["dimension", 2, "metric", "COSINE"] },
    ]);
    const b64 = await s.kvFetch("/", {
      body: JSON.stringify(["VECTOR.GET", "rest", "a"]),
      headers: { "upstash-encoding": "base64" },
    });
    expect(await b64.json()).toEqual({ result: [btoa("1"), btoa("0")] });
    const resp = await s.kvFetch("/", {
      body: JSON.stringify(["VECTOR.COUNT", "rest"]),
      headers: { "upstash-response-format": "resp2" },
    });
    expect(Buffer.from(await resp.arrayBuffer()).toString()).toBe(":1\r\n");
    const multi = await s.kvFetch("/multi-exec", {
      body: JSON.stringify([["VECTOR.COUNT", "rest"]]),
    });
    expect(multi.status).toBe(400);
    expect(await multi.json()).toEqual({
      error: expect.stringMatching(/not allowed in a transaction/),
    });
  });
});
