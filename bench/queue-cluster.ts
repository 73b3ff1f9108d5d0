/**
 * Durable publishes on a Redis Cluster, the queue in one partition against one partition per
 * master: `npx tsx bench/queue-cluster.ts [--seconds N] [--repeat N] [--smoke]` (`npm run build`
 * first).
 *
 * Starts a local cluster of 3 masters (no replicas) whose nodes write an `appendfsync always`
 * AOF, and a receiver. Each round publishes at 50 connections for `--seconds` through a fresh
 * stashd child whose STASHD_QUEUE_REDIS_URL names the cluster, once with
 * STASHD_QUEUE_PARTITIONS=1 (every queue write on one master) and once with 3 (one partition per
 * master), alternating, on an emptied cluster each time; every publish is also delivered. Medians
 * of `--repeat` rounds (default 3), next to the anchor of the same run: `redis-benchmark` SET at
 * 50 clients on one master and with `--cluster` over all three (the most the Redis side does).
 * On one 2-core machine every process shares the same cores, so this shows whether partitions
 * take the fsync-bound master out of the way, not how a cluster of machines scales
 * (docs/scaling.md). `--smoke` runs one short round (test/bench runs it).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startLocalCluster } from "../src/shared/redis/cluster/local.js";
import { hashSlot } from "../src/shared/redis/cluster/slot.js";
import { freeRange, onNode, ownerPort } from "../test/harness/cluster.js";
import { stopChild } from "../test/harness/redis.js";
import {
  drain,
  publishLoad,
  startQueueChild,
  startReceiverChild,
  type Rate,
} from "./lib/queue-parts.js";
import { redisBenchmark } from "./lib/redis-anchor.js";

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const smoke = process.argv.includes("--smoke");
const seconds = smoke ? 1 : Number(option("--seconds")) || 5;
const repeat = smoke ? 1 : Number(option("--repeat")) || 3;
const BIN = path.resolve("bin/stashd");
const MASTERS = 3;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** One round: a fresh stashd with `partitions` on the emptied cluster, 50-connection publishes. */
async function round(clusterUrl: string, ports: number[], rx: string, partitions: number) {
  await Promise.all(ports.map((p) => onNode(p, ["FLUSHALL"])));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-qcluster-"));
  const stashd = await startQueueChild(BIN, dataDir, {
    STASHD_QUEUE_REDIS_URL: clusterUrl,
    STASHD_QUEUE_PARTITIONS: String(partitions),
  });
  try {
    const rate = await publishLoad(stashd.url, stashd.token, rx, 50, seconds);
    const delivered = await drain(rx, rate.total, 60_000);
    if (delivered < rate.total) throw new Error(`${delivered} of ${rate.total} delivered`);
    return rate;
  } finally {
    await stopChild(stashd.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function anchors(ports: number[]) {
  const requests = String(smoke ? 2000 : seconds * 20_000);
  const set = ["--csv", "-t", "set", "-c", "50", "-n", requests];
  // Without -r every SET writes the one key `key:__rand_int__`: sent to the master owning it.
  const owner = await ownerPort(ports[0] as number, hashSlot("key:__rand_int__"));
  const one = await redisBenchmark(["-p", String(owner), ...set]);
  const all = await redisBenchmark(["-p", String(ports[0]), "--cluster", "-r", "100000", ...set]);
  return { one, all };
}

async function main(): Promise<void> {
  const base = await freeRange();
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-qcluster-nodes-"));
  const cluster = await startLocalCluster({ dir, basePort: base, masters: MASTERS, replicas: 0 });
  const ports = cluster.nodes.map((n) => n.port);
  const rx = await startReceiverChild();
  try {
    for (const p of ports) {
      await onNode(p, ["CONFIG", "SET", "appendonly", "yes", "appendfsync", "always"]);
    }
    const anchor = await anchors(ports);
    const rounds: Record<number, Rate[]> = { 1: [], 3: [] };
    for (let r = 0; r < repeat; r++) {
      for (const n of r % 2 === 0 ? [1, 3] : [3, 1]) {
        rounds[n]?.push(await round(cluster.url, ports, rx.url, n));
      }
    }
    print(rounds, anchor);
  } finally {
    await stopChild(rx.child);
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function print(rounds: Record<number, Rate[]>, anchor: Awaited<ReturnType<typeof anchors>>) {
  const f = (x: number | undefined) => (x === undefined ? "n/a" : Math.round(x).toString());
  const ms = (x: number) => x.toFixed(1);
  const row = (name: string, rates: Rate[]) => {
    const rps = median(rates.map((r) => r.rps));
    const p50 = median(rates.map((r) => r.p50));
    const p99 = median(rates.map((r) => r.p99));
    return `| ${name} | ${f(rps)} | ${ms(p50)} | ${ms(p99)} |`;
  };
  console.log(
    `\nDurable publishes at 50 connections, ${MASTERS}-master cluster, ${seconds} s x ${repeat}`,
  );
  console.log("| what | per s | p50 ms | p99 ms |\n| --- | --- | --- | --- |");
  console.log(row("stashd, 1 partition (one master)", rounds[1] ?? []));
  console.log(row(`stashd, ${MASTERS} partitions (one per master)`, rounds[3] ?? []));
  const a = (x: { rps: number; p50: number; p99: number } | undefined, name: string) =>
    x ? `| ${name} | ${f(x.rps)} | ${ms(x.p50)} | ${ms(x.p99)} |` : `| ${name} | n/a | | |`;
  console.log(a(anchor.one, "redis-benchmark SET, one master"));
  console.log(a(anchor.all, `redis-benchmark SET --cluster, ${MASTERS} masters`));
}

await main();
