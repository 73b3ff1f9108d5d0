import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, spawnStashd } from "../harness/process.js";
import { eventually } from "../harness/eventually.js";
import { startReceiver, type TestReceiver } from "./receiver.js";

/**
 * The real `bin/stashd` (built by `npm test`'s setup step) with its managed queue Redis
 * (appendfsync always): SIGKILLed mid-delivery and restarted, it loses no accepted message.
 */
const N = 40;
let dataDir: string;
let server: ChildProcess | undefined;
let rx: TestReceiver;

interface QueueCreds {
  running: boolean;
  queue?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
}

function credentials(): QueueCreds {
  const r = spawnSync(process.execPath, [BIN, "credentials", "--json", "--data-dir", dataDir], {
    encoding: "utf8",
    env: {},
  });
  return JSON.parse(r.stdout) as QueueCreds;
}

function startServer(): ChildProcess {
  return spawnStashd(dataDir, {
    env: {
      STASHD_QUEUE_LEASE_MS: "300",
      STASHD_QUEUE_REAP_MS: "50",
      STASHD_QUEUE_IDLE_POLL_MS: "50",
      STASHD_QUEUE_CONCURRENCY: "4",
    },
    stdio: "ignore",
  });
}

async function running(): Promise<NonNullable<QueueCreds["queue"]>> {
  return eventually(
    () => {
      const c = credentials();
      if (!c.running || !c.queue) throw new Error("not running yet");
      return c.queue;
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  );
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-queue-proc-"));
  let keys = { current: "", next: "" };
  rx = await startReceiver(() => keys);
  rx.delayMs = 100;
  server = startServer();
  const q = await running();
  keys = { current: q.currentSigningKey, next: q.nextSigningKey };
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server?.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await rx?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("crash safety", () => {
  it("delivers every accepted message after SIGKILL mid-delivery and restart", async () => {
    const q = await running();
    const client = new Client({ baseUrl: q.url, token: q.token });
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      ids.push((await client.publish({ url: `${rx.url}/slow`, body: `m${i}` })).messageId);
    }
    await eventually(() => expect(rx.requests.length).toBeGreaterThanOrEqual(4));
    const killed = server;
    const exited = new Promise((r) => killed?.once("exit", r));
    killed?.kill("SIGKILL");
    await exited;
    expect(rx.requests.length).toBeLessThan(N);
    const inFlight = rx.requests.length;
    server = startServer();
    const after = await running();
    const restarted = new Client({ baseUrl: after.url, token: after.token });
    // Every message must reach DELIVERED: the attempts cut off by the kill never finished, so
    // their leases have to expire and the messages be delivered again.
    await eventually(
      async () => {
        const logs = await restarted.logs({ filter: { state: "DELIVERED", count: 1000 } });
        const delivered = new Set(logs.logs.map((l) => l.messageId));
        expect(ids.filter((id) => !delivered.has(id))).toEqual([]);
      },
      { timeoutMs: 25_000, intervalMs: 100 },
    );
    expect(rx.requests.length).toBeGreaterThan(inFlight);
    const retried = await restarted.logs({ filter: { state: "RETRY", count: 1000 } });
    expect(retried.logs.some((l) => l.error === "delivery lease expired")).toBe(true);
    expect(rx.requests.every((r) => r.signatureError === undefined)).toBe(true);
  });
});
