import { textOf } from "../../src/shared/redis/cluster/commands.js";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  startLocalCluster,
  type LocalCluster,
  type LocalClusterTls,
} from "../../src/shared/redis/cluster/local.js";
import { RedisConnection } from "../../src/shared/redis/connection.js";
import type { Arg, Reply } from "../../src/shared/redis/resp.js";
import { ephemeralLow, isFreePort } from "./redis.js";

/**
 * A real Redis Cluster for one test file: 3 masters and 3 replicas on free consecutive loopback
 * ports (each node also needs its port + 10000 for the cluster bus), with a 1 s
 * cluster-node-timeout so a killed master's replica takes over within a few seconds.
 */
export interface TestCluster extends LocalCluster {
  ports: number[];
}

const NODES = 6;
/** Redis Cluster's bus port is the node's port + 10000. */
const BUS_OFFSET = 10_000;

/** Where a TLS test cluster serves TLS: each node's port + this. */
export const TLS_PORT_OFFSET = 100;

/** With `tls`, the nodes also serve TLS (and talk TLS among themselves) on port + TLS_PORT_OFFSET. */
export async function startTestCluster(
  tls?: Omit<LocalClusterTls, "portOffset">,
): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-test-cluster-"));
  const offsets = tls ? [0, TLS_PORT_OFFSET] : [0];
  for (let attempt = 0; ; attempt++) {
    const basePort = await freeRange(offsets);
    try {
      const cluster = await startLocalCluster({
        dir,
        basePort,
        nodeTimeoutMs: 1_000,
        ...(tls ? { tls: { ...tls, portOffset: TLS_PORT_OFFSET } } : {}),
      });
      return {
        ...cluster,
        ports: cluster.nodes.map((n) => n.port),
        stop: async () => {
          await cluster.stop();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      if (attempt >= 2) throw err;
    }
  }
}

/**
 * A base port such that, for each offset, the NODES ports from base + offset and their bus ports
 * (+10000) are all free right now, all below the kernel's ephemeral range where it leaves room
 * (so no other test's outgoing connection takes one before the node binds it).
 */
export async function freeRange(offsets: number[] = [0]): Promise<number> {
  const top = ephemeralLow() - BUS_OFFSET - Math.max(...offsets) - NODES;
  const [low, span] = top - 10_000 > 1_000 ? [10_000, top - 10_000] : [20_000, 20_000];
  for (;;) {
    const base = low + Math.floor(Math.random() * span);
    const ports = offsets.flatMap((o) => Array.from({ length: NODES }, (_, i) => base + o + i));
    const free = await Promise.all([...ports, ...ports.map((p) => p + BUS_OFFSET)].map(isFreePort));
    if (free.every(Boolean)) return base;
  }
}

/**
 * Moves one slot between masters the way `redis-cli --cluster reshard` does: IMPORTING on the
 * target, MIGRATING on the source, MIGRATE the keys in batches, then SETSLOT NODE everywhere.
 * Clients see ASK (and TRYAGAIN for multi-key commands) while it runs, MOVED afterwards.
 */
export async function migrateSlot(
  cluster: TestCluster,
  slot: number,
  from: number,
  to: number,
): Promise<void> {
  const [fromId, toId] = await Promise.all([nodeId(from), nodeId(to)]);
  await ok(to, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", fromId]);
  await ok(from, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", toId]);
  for (;;) {
    const keys = await onNode(from, ["CLUSTER", "GETKEYSINSLOT", String(slot), "50"]);
    const names = keys.kind === "array" ? keys.value.map((k) => textOf(k) ?? "") : [];
    if (names.length === 0) break;
    await ok(from, ["MIGRATE", "127.0.0.1", String(to), "", "0", "5000", "KEYS", ...names]);
  }
  await ok(to, ["CLUSTER", "SETSLOT", String(slot), "NODE", toId]);
  await ok(from, ["CLUSTER", "SETSLOT", String(slot), "NODE", toId]);
  const others = cluster.ports.filter((p) => p !== from && p !== to);
  await Promise.all(
    others.map((p) => onNode(p, ["CLUSTER", "SETSLOT", String(slot), "NODE", toId])),
  );
}

/** Ports of the nodes that are masters right now (by their own ROLE). */
export async function mastersOf(cluster: TestCluster): Promise<number[]> {
  const roles = await Promise.all(
    cluster.ports.map((p) => onNode(p, ["ROLE"]).catch(() => undefined)),
  );
  return cluster.ports.filter((_, i) => {
    const role = roles[i];
    return role?.kind === "array" && textOf(role.value[0] as Reply) === "master";
  });
}

/** Port of the master serving a slot, as the node on `port` sees it. */
export async function ownerPort(port: number, slot: number): Promise<number> {
  const reply = await onNode(port, ["CLUSTER", "SHARDS"]);
  for (const shard of reply.kind === "array" ? reply.value : []) {
    const fields = shard.kind === "array" ? shard.value : [];
    const ranges =
      fields[1]?.kind === "array"
        ? fields[1].value.map((r) => Number(textOf(r) ?? (r.kind === "int" ? r.value : NaN)))
        : [];
    const nodes = fields[3]?.kind === "array" ? fields[3].value : [];
    for (let i = 0; i + 1 < ranges.length; i += 2) {
      if (slot < (ranges[i] as number) || slot > (ranges[i + 1] as number)) continue;
      for (const node of nodes) {
        const f =
          node.kind === "array"
            ? node.value.map((r) => textOf(r) ?? (r.kind === "int" ? r.value : ""))
            : [];
        if (f[f.indexOf("role") + 1] === "master") return Number(f[f.indexOf("port") + 1]);
      }
    }
  }
  throw new Error(`no master serves slot ${slot}`);
}

async function nodeId(port: number): Promise<string> {
  return textOf(await ok(port, ["CLUSTER", "MYID"])) ?? "";
}

async function ok(port: number, args: Arg[]): Promise<Reply> {
  const reply = await onNode(port, args);
  if (reply.kind === "error") throw new Error(`${args.join(" ")} on ${port}: ${reply.value}`);
  return reply;
}

/** Runs one command on one node directly (no redirects followed). */
export async function onNode(port: number, args: Arg[]): Promise<Reply> {
  const conn = await RedisConnection.open({ host: "127.0.0.1", port }, 2_000);
  try {
    return await conn.send(args);
  } finally {
    conn.destroy();
  }
}
