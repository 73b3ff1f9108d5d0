import { Redis } from "@upstash/redis";
import { afterAll, beforeAll } from "vitest";
import type { Arg, Reply } from "../../src/shared/redis/resp.js";
import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import {
  mastersOf,
  onNode,
  ownerPort,
  startTestCluster,
  type TestCluster,
} from "../harness/cluster.js";
import type { StartOptions } from "../../src/index.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * One Redis Cluster (3 masters, 3 replicas), a stashd whose database URL names one of its nodes,
 * and the official SDK pointed at stashd: shared by the tests of one file.
 */
export interface ClusterContext {
  cluster: TestCluster;
  stashd: TestStashd;
  sdk: Redis;
  direct: Redis;
  readonly: Redis;
  /** Runs a command on one node directly (no redirects followed). */
  node(port: number, args: Arg[]): Promise<Reply>;
  /** Ports of the nodes that are masters right now. */
  masters(): Promise<number[]>;
}

/**
 * `prepare` runs on the new cluster before stashd starts and returns the URL stashd gets
 * (default: the first master's, no credentials).
 */
export function useCluster(
  onReady: (c: ClusterContext) => void,
  options: StartOptions = {},
  prepare?: (cluster: TestCluster) => Promise<string>,
): void {
  let ctx: ClusterContext | undefined;
  beforeAll(async () => {
    const cluster = await startTestCluster();
    const redisUrl = prepare ? await prepare(cluster) : cluster.url;
    const stashd = await startStashd({ kvRedisUrl: redisUrl, ...options });
    const { url, token, readonlyToken } = stashd.kv;
    ctx = {
      cluster,
      stashd,
      sdk: new Redis({ url, token }),
      direct: new Redis({ url, token, enableAutoPipelining: false }),
      readonly: new Redis({ url, token: readonlyToken, enableAutoPipelining: false }),
      node: onNode,
      masters: () => mastersOf(cluster),
    };
    onReady(ctx);
  });
  afterAll(async () => {
    await ctx?.stashd.stop();
    await ctx?.cluster.stop();
  });
}

/** `count` key names whose slots fall on every master (names differ in a counter only). */
export function spreadKeys(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}:${i}`);
}

/** One key name per master (by its slot's owner now), e.g. to test something on every node. */
export async function keyPerMaster(cluster: TestCluster, prefix: string): Promise<string[]> {
  const seed = cluster.ports[0] as number;
  const found = new Map<number, string>();
  for (let i = 0; found.size < 3; i++) {
    const key = `${prefix}:${i}`;
    const owner = await ownerPort(seed, hashSlot(key));
    if (!found.has(owner)) found.set(owner, key);
  }
  return [...found.values()];
}
