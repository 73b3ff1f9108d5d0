import { textOf } from "./commands.js";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { RedisConnection } from "../connection.js";
import type { Arg, Reply } from "../resp.js";
import { SLOT_COUNT } from "./slot.js";

/**
 * A local Redis Cluster for development and tests (docs/scaling.md, Redis Cluster): `masters`
 * redis-server processes owning equal slot ranges, each with `replicas` replicas, on consecutive
 * loopback ports from `basePort`. Built with CLUSTER MEET / ADDSLOTSRANGE / REPLICATE from Node,
 * so redis-cli is not needed. Persistence is off: this is a scratch cluster.
 */
export interface LocalClusterOptions {
  dir: string;
  basePort: number;
  masters?: number;
  replicas?: number;
  bin?: string;
  /** cluster-node-timeout: how long a master must be unreachable before its replica takes over. */
  nodeTimeoutMs?: number;
  /**
   * Also serve TLS on each node's port + `portOffset`, with the cluster bus and replication over
   * TLS as well (`tls-cluster`, `tls-replication`; the nodes then announce both ports). `url` is
   * then the first master's rediss:// URL. Clients need not present a certificate.
   */
  tls?: LocalClusterTls;
}

export interface LocalClusterTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  portOffset: number;
}

export interface LocalNode {
  port: number;
  child: ChildProcess;
}

export interface LocalCluster {
  /** A seed URL (the first master); any node's URL works the same. */
  url: string;
  nodes: LocalNode[];
  /** Stops every node (SIGTERM) and waits for them to exit. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 20_000;
const CONNECT_TIMEOUT_MS = 2_000;

export async function startLocalCluster(opts: LocalClusterOptions): Promise<LocalCluster> {
  const masters = opts.masters ?? 3;
  const total = masters * (1 + (opts.replicas ?? 1));
  const ports = Array.from({ length: total }, (_, i) => opts.basePort + i);
  const nodes = ports.map((port) => ({ port, child: spawnNode(opts, port) }));
  const cluster: LocalCluster = {
    url: opts.tls
      ? `rediss://127.0.0.1:${opts.basePort + opts.tls.portOffset}`
      : `redis://127.0.0.1:${opts.basePort}`,
    nodes,
    stop: () => stopNodes(nodes),
  };
  try {
    await Promise.all(
      ports.map((port) => waitUntil(port, async (c) => isPong(await c.send(["PING"])))),
    );
    await createCluster(ports, masters, opts.tls?.portOffset ?? 0);
    return cluster;
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

function spawnNode(opts: LocalClusterOptions, port: number): ChildProcess {
  const dir = path.join(opts.dir, String(port));
  mkdirSync(dir, { recursive: true });
  const args = [
    ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
    ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
    ...["--cluster-node-timeout", String(opts.nodeTimeoutMs ?? 5_000)],
    ...["--save", "", "--appendonly", "no", "--logfile", "redis.log"],
    // Replicas sync at once instead of after the default 5 s wait for more replicas.
    ...["--repl-diskless-sync-delay", "0"],
    ...(opts.tls ? tlsArgs(opts.tls, port) : []),
  ];
  return spawn(opts.bin ?? "redis-server", args, { stdio: "ignore" });
}

function tlsArgs(tls: LocalClusterTls, port: number): string[] {
  return [
    ...["--tls-port", String(port + tls.portOffset), "--tls-auth-clients", "no"],
    ...["--tls-cert-file", tls.certFile, "--tls-key-file", tls.keyFile],
    ...["--tls-ca-cert-file", tls.caFile, "--tls-cluster", "yes", "--tls-replication", "yes"],
  ];
}

/**
 * Assigns slot ranges, joins every node to the first, then makes the replicas follow. With TLS
 * the bus listens beside the TLS port (`busOffset`), so MEET names that port.
 */
async function createCluster(ports: number[], masters: number, busOffset: number): Promise<void> {
  const ids = await Promise.all(ports.map((p) => call(p, ["CLUSTER", "MYID"])));
  await Promise.all(
    ports.slice(0, masters).map((port, i) => {
      const first = Math.floor((i * SLOT_COUNT) / masters);
      const last = Math.floor(((i + 1) * SLOT_COUNT) / masters) - 1;
      return call(port, ["CLUSTER", "ADDSLOTSRANGE", String(first), String(last)]);
    }),
  );
  const seed = ports[0] as number;
  await Promise.all(
    ports.slice(1).map((p) => call(p, ["CLUSTER", "MEET", "127.0.0.1", String(seed + busOffset)])),
  );
  // A node can only replicate a master it already knows.
  await Promise.all(
    ports.map((p) =>
      waitUntil(p, async (c) => knownNodes(await c.send(["CLUSTER", "NODES"])) === ports.length),
    ),
  );
  await Promise.all(
    ports
      .slice(masters)
      .map((p, i) => call(p, ["CLUSTER", "REPLICATE", ids[i % masters] as string])),
  );
  await Promise.all(
    ports.map((p) =>
      waitUntil(p, async (c) =>
        /cluster_state:ok/.test(textOf(await c.send(["CLUSTER", "INFO"])) ?? ""),
      ),
    ),
  );
  // A replica that has not synced yet could not take over from its master.
  await Promise.all(
    ports
      .slice(masters)
      .map((p) =>
        waitUntil(p, async (c) =>
          /master_link_status:up/.test(textOf(await c.send(["INFO", "replication"])) ?? ""),
        ),
      ),
  );
}

/** Nodes in CLUSTER NODES whose handshake is over (flags field without `handshake`/`noaddr`). */
function knownNodes(reply: Reply): number {
  const lines = (textOf(reply) ?? "").split("\n").filter((l) => l.trim() !== "");
  return lines.filter((l) => !/handshake|noaddr/.test(l.split(" ")[2] ?? "")).length;
}

/** Runs one command on a node; a Redis error reply is thrown. */
async function call(port: number, args: Arg[]): Promise<string> {
  const conn = await RedisConnection.open({ host: "127.0.0.1", port }, CONNECT_TIMEOUT_MS);
  try {
    const reply = await conn.send(args);
    if (reply.kind === "error")
      throw new Error(`${args.join(" ")} on port ${port}: ${reply.value}`);
    return textOf(reply) ?? "";
  } finally {
    conn.destroy();
  }
}

async function waitUntil(
  port: number,
  test: (c: RedisConnection) => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ok = await RedisConnection.open({ host: "127.0.0.1", port }, CONNECT_TIMEOUT_MS).then(
      (c) => test(c).finally(() => c.destroy()),
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`cluster node on port ${port} did not get ready`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function isPong(reply: Reply): boolean {
  return textOf(reply) === "PONG";
}

async function stopNodes(nodes: LocalNode[]): Promise<void> {
  await Promise.all(
    nodes.map(({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      return exited;
    }),
  );
}
