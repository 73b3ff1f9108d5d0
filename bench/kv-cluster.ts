/**
 * The KV gateway on one Redis and on a Redis Cluster, side by side:
 * `npx tsx bench/kv-cluster.ts [--seconds N] [--repeat N] [--smoke]` (`npm run build` first).
 *
 * Starts a redis-server and a local cluster of 3 masters with a replica each (both with
 * persistence off), one stashd child in front of each (same options), and measures, alternating
 * between the two in each round (medians of `--repeat` rounds, default 3):
 * - GET and SET with a JSON body on 64 keys spread over every master, at 1 and 50 connections;
 * - `/pipeline` of 10 GETs on keys of different masters (split by node, reassembled) and of 10
 *   GETs on one hash tag (one node), at 50 connections;
 * next to `redis-benchmark` against the single Redis and with `--cluster` against the cluster,
 * the most the Redis side can do here. On one 2-core machine every process shares the same cores,
 * so this shows what the cluster costs stashd per request, not how a cluster scales out
 * (docs/scaling.md). `--smoke` sends a few requests per scenario (test/bench runs it).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freeRange } from "../test/harness/cluster.js";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { startLocalCluster } from "../src/shared/redis/cluster/local.js";
import { runLoad, type LoadSpec } from "./http-load.js";
import { startStashdChild } from "./stashd-child.js";

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const smoke = process.argv.includes("--smoke");
const seconds = Number(flag("--seconds")) || 5;
const repeat = smoke ? 1 : Number(flag("--repeat")) || 3;
const KEYS = Array.from({ length: 64 }, (_, i) => `bench:${i}`);

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
}

interface Scenario {
  name: string;
  connections: number;
  path: string;
  bodies: string[];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

function scenarios(): Scenario[] {
  const json = (x: unknown): string => JSON.stringify(x);
  const tenOf = (keys: string[]): string[] =>
    Array.from({ length: 8 }, (_, i) =>
      json(Array.from({ length: 10 }, (_, j) => ["GET", keys[(i * 10 + j) % keys.length]])),
    );
  const tagged = Array.from({ length: 10 }, (_, i) => `{bench:tag}:${i}`);
  const c = smoke ? [1, 4] : [1, 50];
  const many = smoke ? 4 : 50;
  return [
    ...c.map((n) => ({
      name: "GET (JSON body)",
      connections: n,
      path: "/",
      bodies: KEYS.map((k) => json(["GET", k])),
    })),
    ...c.map((n) => ({
      name: "SET (JSON body)",
      connections: n,
      path: "/",
      bodies: KEYS.map((k) => json(["SET", k, "v"])),
    })),
    {
      name: "/pipeline 10 GET, keys on every master",
      connections: many,
      path: "/pipeline",
      bodies: tenOf(KEYS),
    },
    {
      name: "/pipeline 10 GET, one hash tag",
      connections: many,
      path: "/pipeline",
      bodies: tenOf(tagged),
    },
  ];
}

async function measure(targets: Target[], dir: string): Promise<Map<string, number[]>> {
  const results = new Map<string, number[]>();
  for (let round = 0; round < repeat; round++) {
    for (const s of scenarios()) {
      for (const t of targets) {
        const spec: LoadSpec = {
          url: `${t.url}${s.path}`,
          connections: s.connections,
          seconds,
          method: "POST",
          bodies: s.bodies,
          headers: t.headers,
          ...(smoke ? { requests: 20 } : {}),
        };
        const { rps } = await runLoad(spec, dir);
        const key = `${s.name}|${s.connections}|${t.name}`;
        results.set(key, [...(results.get(key) ?? []), rps]);
        process.stderr.write(
          `  ${t.name} ${s.name} c=${s.connections}: ${Math.round(rps)} req/s\n`,
        );
      }
    }
  }
  return results;
}

/** redis-benchmark GET and SET at 50 clients on random keys; `cluster` adds `--cluster`. */
function redisBenchmark(port: number, cluster: boolean): { get: number; set: number } {
  const args = ["-p", String(port), "-c", "50", "-r", "100000", "-t", "get,set", "--csv"];
  args.push("-n", String(smoke ? 1000 : 200_000));
  if (cluster) args.push("--cluster");
  const out = spawnSync("redis-benchmark", args, { encoding: "utf8" }).stdout;
  const rate = (name: string): number => {
    const line = out.split("\n").find((l) => l.startsWith(`"${name}"`)) ?? "";
    return Number(line.split(",")[1]?.replace(/"/g, "")) || NaN;
  };
  return { get: rate("GET"), set: rate("SET") };
}

function report(
  results: Map<string, number[]>,
  anchors: Record<string, { get: number; set: number }>,
): void {
  const rows = [
    "| scenario | conns | one Redis req/s | cluster req/s | cluster / one |",
    "|---|---|---|---|---|",
  ];
  for (const s of scenarios()) {
    const one = median(results.get(`${s.name}|${s.connections}|one Redis`) ?? []);
    const many = median(results.get(`${s.name}|${s.connections}|cluster`) ?? []);
    rows.push(
      `| stashd ${s.name} | ${s.connections} | ${Math.round(one)} | ${Math.round(many)} | ${(many / one).toFixed(2)} |`,
    );
  }
  for (const cmd of ["get", "set"] as const) {
    const one = anchors["one"]?.[cmd] ?? NaN;
    const many = anchors["cluster"]?.[cmd] ?? NaN;
    rows.push(
      `| redis-benchmark ${cmd.toUpperCase()} | 50 | ${Math.round(one)} | ${Math.round(many)} | ${(many / one).toFixed(2)} |`,
    );
  }
  process.stdout.write(`\n${rows.join("\n")}\n`);
}

async function seed(target: Target): Promise<void> {
  const body = JSON.stringify(
    [...KEYS, ...Array.from({ length: 10 }, (_, i) => `{bench:tag}:${i}`)].map((k) => [
      "SET",
      k,
      "v",
    ]),
  );
  const res = await fetch(`${target.url}/pipeline`, {
    method: "POST",
    body,
    headers: target.headers,
  });
  if (res.status !== 200) throw new Error(`seeding ${target.name}: ${res.status}`);
  await res.arrayBuffer();
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-cluster-"));
  const redis = await startRedis();
  const cluster = await startLocalCluster({
    dir: path.join(dir, "cluster"),
    basePort: await freeRange(),
  });
  const children = [];
  try {
    const targets: Target[] = [];
    for (const [name, url] of [
      ["one Redis", redis.url],
      ["cluster", cluster.url],
    ] as const) {
      const port = await freePort();
      const { child, token } = await startStashdChild(
        url,
        path.join(dir, name.replace(" ", "-")),
        port,
      );
      children.push(child);
      targets.push({
        name,
        url: `http://127.0.0.1:${port}`,
        headers: { authorization: `Bearer ${token}` },
      });
    }
    // redis-benchmark runs first: its spawnSync blocks this loop, and the seed's keep-alive
    // connections, idle across it, would be reused by the smoke run's fetches after undici could
    // retire them (docs/benchmarks.md, Keep-alive and blocking calls).
    const anchors = {
      one: redisBenchmark(redis.port, false),
      cluster: redisBenchmark(cluster.nodes[0]?.port ?? 0, true),
    };
    for (const t of targets) await seed(t);
    report(await measure(targets, dir), anchors);
  } finally {
    for (const child of children) await stopChild(child);
    await cluster.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
