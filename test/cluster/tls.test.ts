import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCerts } from "../harness/certs.js";
import { onNode, startTestCluster, type TestCluster } from "../harness/cluster.js";
import { eventually } from "../harness/eventually.js";
import { credentialsOf, spawnStashd } from "../harness/process.js";
import { stopChild } from "../harness/redis.js";
import { keyPerMaster } from "./context.js";

/**
 * A Redis Cluster reached over TLS: the nodes talk TLS among themselves and to clients, and once
 * the cluster is built their plaintext listeners are closed (`CONFIG SET port 0`), so every
 * connection stashd makes, to the seed and to each master the slot map names, must be TLS. stashd
 * runs as a child process so it can trust the test CA through NODE_EXTRA_CA_CERTS.
 */
let dir: string;
let cluster: TestCluster;
let stashd: ChildProcess;
let keys: string[];
let rest: Redis;
let readonly: Redis;

interface Credentials {
  running: boolean;
  kv: { url: string; databases: { token: string; readonlyToken: string }[] };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "stashd-cluster-tls-"));
  const certs = makeTestCerts(dir);
  cluster = await startTestCluster({ certFile: certs.cert, keyFile: certs.key, caFile: certs.ca });
  keys = await keyPerMaster(cluster, "tls");
  for (const port of cluster.ports) await onNode(port, ["CONFIG", "SET", "port", "0"]);
  const data = path.join(dir, "data");
  stashd = spawnStashd(data, {
    env: { STASHD_KV_REDIS_URL: cluster.url, NODE_EXTRA_CA_CERTS: certs.ca },
  });
  const creds = await eventually(
    () => {
      const c = credentialsOf<Credentials>(data);
      expect(c.running).toBe(true);
      return c;
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  const db = creds.kv.databases[0];
  rest = new Redis({ url: creds.kv.url, token: db?.token ?? "", enableAutoPipelining: false });
  readonly = new Redis({ url: creds.kv.url, token: db?.readonlyToken ?? "" });
}, 60_000);

afterAll(async () => {
  await stopChild(stashd);
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("KV on a Redis Cluster over TLS (rediss://)", () => {
  it("routes commands to every master over TLS", async () => {
    const plaintext = onNode(cluster.ports[0] as number, ["PING"]);
    await expect(plaintext).rejects.toThrow();
    for (const [i, key] of keys.entries()) expect(await rest.set(key, `v${i}`)).toBe("OK");
    expect(await rest.mget(...keys)).toEqual(["v0", "v1", "v2"]);
    expect(await rest.dbsize()).toBe(3);
    const p = rest.pipeline();
    for (const key of keys) p.incr(`${key}:n`);
    expect(await p.exec()).toEqual([1, 1, 1]);
  });

  it("enforces the read-only token on every master", async () => {
    for (const key of keys) {
      expect(await readonly.get(key)).toMatch(/^v\d$/);
      await expect(readonly.set(key, "x")).rejects.toThrow(/NOPERM/);
    }
  });
});
