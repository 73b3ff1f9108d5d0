import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnStashdKeepingStderr, whenRunning, type StashdProcess } from "../harness/process.js";
import { startRedis, type TestRedis } from "../harness/redis.js";

/**
 * The real `bin/stashd` SIGKILLed while VECTOR.ADDs are in flight, then started again on the same
 * data dir and Redis: the index definition and every acknowledged vector are there (each write
 * is one Lua script, so none is half made), and queries answer from them.
 */
interface Credentials {
  running: boolean;
  kv: { url: string; databases: { name: string; token: string }[] };
}

let redis: TestRedis;
let server: StashdProcess | undefined;
const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-vector-crash-"));

function spawn(): StashdProcess {
  return spawnStashdKeepingStderr(dataDir, {
    env: {
      STASHD_KV_REDIS_URL: `${redis.url}/0`,
      STASHD_QUEUE_REDIS_URL: `${redis.url}/1`,
      STASHD_QUEUE_ALLOW_UNSAFE_REDIS: "true",
      STASHD_KV_VECTOR_HNSW_MIN_VECTORS: "100",
      // One process: the kill -9 lands on the process that writes (with workers it would land
      // on the supervisor), and two starts of a supervisor cost a loaded machine seconds.
      STASHD_WORKERS: "1",
    },
  });
}

async function client(): Promise<Redis> {
  const creds = await whenRunning<Credentials>(dataDir, server as StashdProcess);
  const db = creds.kv.databases.find((d) => d.name === "default");
  return new Redis({ url: creds.kv.url, token: db?.token ?? "", retry: false });
}

beforeAll(async () => {
  redis = await startRedis();
  server = spawn();
});
afterAll(async () => {
  const child = server?.child;
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const vectorOf = (i: number): number[] => [Math.cos(i), Math.sin(i), (i % 7) / 7, 1];

describe("kill -9 during VECTOR.ADD", () => {
  it("keeps the index and every acknowledged vector", async () => {
    const sdk = await client();
    const index = await sdk.vector.createIndex({
      name: "crash",
      dimension: 4,
      metric: "EUCLIDEAN",
    });
    const acked: string[] = [];
    const writer = (async () => {
      for (let i = 0; ; i++) {
        try {
          await index.add(`v${i}`, vectorOf(i));
          acked.push(`v${i}`);
        } catch {
          return; // the process is gone
        }
      }
    })();
    while (acked.length < 150) await new Promise((r) => setTimeout(r, 10));
    const child = (server as StashdProcess).child;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    await writer;

    server = spawn();
    const again = (await client()).vector.index("crash");
    expect(await again.info()).toEqual({ dimension: 4, metric: "EUCLIDEAN" });
    const count = await again.count();
    expect(count).toBeGreaterThanOrEqual(acked.length);
    expect(count).toBeLessThanOrEqual(acked.length + 1);
    const last = acked[acked.length - 1] as string;
    const i = Number(last.slice(1));
    const stored = (await again.get(last))?.map((x) => Math.fround(x));
    expect(stored).toEqual(vectorOf(i).map((x) => Math.fround(x)));
    expect((await again.query({ vector: vectorOf(i), topK: 1, profile: "PRECISE" }))[0]).toEqual({
      id: last,
      score: 1,
    });
  }, 60_000); // two starts of a real process: 19 s alone once, 30 s at load 10
});
