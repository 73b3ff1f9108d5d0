import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startLocalCluster, type LocalCluster } from "../../src/shared/redis/cluster/local.js";

/**
 * A real Redis Cluster for one test file: 3 masters and 3 replicas on free consecutive loopback
 * ports (each node also needs its port + 10000 for the cluster bus), with a 1 s
 * cluster-node-timeout so a killed master's replica takes over within a few seconds.
 */
export interface TestCluster extends LocalCluster {
  ports: number[];
}

const NODES = 6;

export async function startTestCluster(): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-test-cluster-"));
  for (let attempt = 0; ; attempt++) {
    const basePort = await freeRange();
    try {
      const cluster = await startLocalCluster({ dir, basePort, nodeTimeoutMs: 1_000 });
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

/** A base port whose NODES ports and their bus ports (+10000) are all free right now. */
async function freeRange(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ports = Array.from({ length: NODES }, (_, i) => base + i);
    const free = await Promise.all([...ports, ...ports.map((p) => p + 10_000)].map(isFree));
    if (free.every(Boolean)) return base;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
