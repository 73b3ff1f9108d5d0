/**
 * Vector search benchmark: `npx tsx bench/vector.ts [-- --vectors N --dim D --queries Q --smoke]`
 * (defaults 100 000 vectors of 384 dimensions, 200 queries; `--smoke`: 3 000 × 32, 20 queries).
 *
 * One run, one data set (seeded, clustered like text embeddings: 1 000 gaussian clusters, unit
 * length, COSINE), measured two ways:
 * 1. In this process, on the classes VECTOR.QUERY uses (src/kv/vector): the exact scan (the
 *    brute-force anchor and the ground truth), the HNSW graph's build time, and its query latency
 *    and recall@10 at several search breadths (ef), FAST's and BALANCED's among them.
 * 2. End to end, through a stashd and the official `@upstash/redis` client on a redis-server
 *    started here: load throughput (VECTOR.ADD pipelines of BASE64-FP32), then VECTOR.QUERY
 *    latency and recall@10 per PROFILE once the graph is built.
 * Prints a Markdown table, the machine's load (uptime) before and after; figures go to
 * docs/benchmarks.md.
 */
import { execSync } from "node:child_process";
import { Redis } from "@upstash/redis";
import { Graph } from "../src/kv/vector/graph.js";
import { Deadline } from "../src/kv/search/deadline.js";
import { runToEnd } from "../src/kv/search/scheduler.js";
import { LocalIndex } from "../src/kv/vector/local-index.js";
import { prepared } from "../src/kv/vector/similarity.js";
import { graphBuildsRunning } from "../src/kv/vector/store.js";
import { startRedis } from "../test/harness/redis.js";
import { startStashd } from "../test/harness/stashd.js";

function flag(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

const smoke = process.argv.includes("--smoke");
const N = flag("--vectors") ?? (smoke ? 3_000 : 100_000);
const DIM = flag("--dim") ?? (smoke ? 32 : 384);
const QUERIES = flag("--queries") ?? (smoke ? 20 : 200);
const K = 10;
const CLUSTERS = 1_000;
const EFS = [16, 40, 80, 120, 200];

/** mulberry32: a small seeded generator, so every run measures the same data. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
}

/** `n` unit vectors near random cluster centres (noise 0.5 of a centre's scale per element). */
function dataset(n: number, seed: number, centres: Float32Array[]): Float32Array[] {
  const rand = rng(seed);
  return Array.from({ length: n }, () => {
    const c = centres[Math.floor(rand() * centres.length)] as Float32Array;
    return prepared(
      "COSINE",
      c.map((x) => x + 0.5 * gaussian(rand)),
    );
  });
}

const ms = (from: number): number => performance.now() - from;
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const recall = (got: string[], truth: string[]): number =>
  got.filter((id) => truth.includes(id)).length / truth.length;
const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(2));

interface Row {
  what: string;
  p50: number;
  p99: number;
  recall: number;
}
const rows: Row[] = [];

function record(what: string, latencies: number[], recalls: number[]): void {
  const mean = recalls.reduce((a, b) => a + b, 0) / recalls.length;
  rows.push({ what, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99), recall: mean });
}

const uptime = (): string => execSync("uptime").toString().trim();
const progress = (what: string): void => console.error(`[${new Date().toISOString()}] ${what}`);

async function main(): Promise<void> {
  console.log(`# vector bench: ${N} vectors × ${DIM} dims, ${QUERIES} queries, k=${K}`);
  console.log(`load before: ${uptime()}`);
  const centreRand = rng(7);
  const centres = Array.from({ length: CLUSTERS }, () =>
    Float32Array.from({ length: DIM }, () => gaussian(centreRand)),
  );
  const vectors = dataset(N, 1, centres);
  const queries = dataset(QUERIES, 2, centres);

  // 1. In process: exact scan (ground truth) and the graph.
  const local = new LocalIndex(DIM, "COSINE", "bench", N);
  vectors.forEach((v, i) => local.upsert(`v${i}`, v));
  const truth: string[][] = [];
  const exactTimes: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    const hits = runToEnd(local.exact(q, K, new Deadline(Infinity)));
    exactTimes.push(ms(t));
    truth.push(hits.map((h) => local.idAt(h.slot) as string));
  }
  record(
    "exact scan (in process)",
    exactTimes,
    truth.map(() => 1),
  );

  const graph = new Graph(DIM, "COSINE", N);
  for (const slot of local.slots()) graph.enqueue(slot);
  const buildStart = performance.now();
  while (graph.build(local, 1_000)) progress(`graph: ${graph.pendingCount} to go`);
  const buildMs = ms(buildStart);
  progress(`graph built in ${fmt(buildMs / 1000)} s`);
  for (const ef of EFS) {
    const times: number[] = [];
    const recalls = queries.map((q, i) => {
      const t = performance.now();
      const slots = graph.search(q, K, ef);
      times.push(ms(t));
      return recall(
        slots.map((s) => local.idAt(s) as string),
        truth[i] as string[],
      );
    });
    record(`HNSW ef=${ef} (in process)`, times, recalls);
  }

  // 2. End to end through stashd and @upstash/redis.
  const redisServer = await startRedis();
  const stashd = await startStashd({
    kvRedisUrl: redisServer.url,
    services: ["kv"],
    kvVectorQueryTimeoutMs: 120_000,
    // The default threshold (20 000), or half the vectors of a smaller run so it has a graph too.
    kvVectorHnswMinVectors: Math.min(20_000, Math.floor(N / 2)),
  });
  try {
    const sdk = new Redis({ url: stashd.kv.url, token: stashd.kv.token });
    const index = await sdk.vector.createIndex({ name: "bench", dimension: DIM, metric: "COSINE" });
    const loadStart = performance.now();
    // The SDK's pipeline has no vector methods: VECTOR.ADD pipelines go as raw /pipeline bodies.
    for (let from = 0; from < N; from += 500) {
      const body = vectors.slice(from, from + 500).map((v, j) => {
        const base64 = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
        return ["VECTOR.ADD", "bench", `v${from + j}`, "BASE64-FP32", base64];
      });
      const res = await stashd.kvFetch("/pipeline", { body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`load failed: ${res.status} ${await res.text()}`);
    }
    const loadMs = ms(loadStart);
    progress(`loaded through stashd in ${fmt(loadMs / 1000)} s`);
    // The first query loads the index into the process (and starts the graph's build).
    const firstStart = performance.now();
    await index.query({ vector: queries[0] as Float32Array, topK: K, profile: "PRECISE" });
    const firstMs = ms(firstStart);
    const e2e = async (profile: "FAST" | "BALANCED" | "PRECISE"): Promise<void> => {
      const times: number[] = [];
      const recalls: number[] = [];
      for (const [i, q] of queries.entries()) {
        const t = performance.now();
        const hits = await index.query({ vector: q, topK: K, profile });
        times.push(ms(t));
        recalls.push(
          recall(
            hits.map((h) => h.id),
            truth[i] as string[],
          ),
        );
      }
      record(`VECTOR.QUERY ${profile} (HTTP, @upstash/redis)`, times, recalls);
    };
    await e2e("PRECISE");
    // The graph builds in 8 ms slices between requests, in this process (stashd runs in it).
    const waitStart = performance.now();
    while (graphBuildsRunning() > 0) await new Promise((r) => setTimeout(r, 500));
    progress(`graph built after ${fmt(ms(waitStart) / 1000)} s`);
    await e2e("BALANCED");
    await e2e("FAST");
    console.log(
      `\nload: ${N} VECTOR.ADD in ${fmt(loadMs / 1000)} s (${fmt(N / (loadMs / 1000))}/s); first query (loads the index into the process): ${fmt(firstMs)} ms; graph build in process: ${fmt(buildMs / 1000)} s`,
    );
  } finally {
    await stashd.stop();
    await redisServer.stop();
  }

  console.log("\n| measurement | p50 ms | p99 ms | recall@10 |\n| --- | --- | --- | --- |");
  for (const r of rows)
    console.log(`| ${r.what} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.recall.toFixed(3)} |`);
  console.log(`\nload after: ${uptime()}`);
}

await main();
