import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@upstash/qstash";
import { expect } from "vitest";
import { spawnStashdKeepingStderr, whenRunning, type StashdProcess } from "../harness/process.js";
import { eventually } from "../harness/eventually.js";
import { startReceiver, type TestReceiver } from "./receiver.js";

/**
 * The real `bin/stashd` (built by `npm test`'s setup step) SIGKILLed mid-delivery and restarted
 * on the same data dir: it must lose no accepted message. `env` adds settings (e.g. the queue
 * Redis URL of a cluster); without one the managed queue Redis (appendfsync always) is used.
 */
export class CrashScenario {
  private server: StashdProcess | undefined;
  private rx: TestReceiver | undefined;
  private readonly dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-queue-proc-"));

  constructor(private readonly env: NodeJS.ProcessEnv = {}) {}

  async start(): Promise<void> {
    let keys = { current: "", next: "" };
    this.rx = await startReceiver(() => keys);
    this.rx.delayMs = 100;
    this.server = this.spawn();
    const q = await this.running();
    keys = { current: q.currentSigningKey, next: q.nextSigningKey };
  }

  async stop(): Promise<void> {
    const server = this.server?.child;
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once("exit", r));
      server.kill("SIGTERM");
      await exited;
    }
    await this.rx?.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** Publishes `n` messages, SIGKILLs stashd mid-delivery, restarts it, checks every delivery. */
  async killAndRestart(n: number): Promise<void> {
    const rx = this.rx as TestReceiver;
    const q = await this.running();
    const client = new Client({ baseUrl: q.url, token: q.token });
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push((await client.publish({ url: `${rx.url}/slow`, body: `m${i}` })).messageId);
    }
    await eventually(() => expect(rx.requests.length).toBeGreaterThanOrEqual(4));
    const killed = this.server?.child;
    const exited = new Promise((r) => killed?.once("exit", r));
    killed?.kill("SIGKILL");
    await exited;
    expect(rx.requests.length).toBeLessThan(n);
    const inFlight = rx.requests.length;
    this.server = this.spawn();
    const after = await this.running();
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
  }

  private spawn(): StashdProcess {
    return spawnStashdKeepingStderr(this.dataDir, {
      env: {
        STASHD_QUEUE_LEASE_MS: "300",
        STASHD_QUEUE_REAP_MS: "50",
        STASHD_QUEUE_IDLE_POLL_MS: "50",
        STASHD_QUEUE_CONCURRENCY: "4",
        STASHD_QUEUE_ALLOW_UNSAFE_REDIS: "true", // an external test Redis runs without persistence
        ...this.env,
      },
    });
  }

  private async running(): Promise<QueueCredentials> {
    if (!this.server) throw new Error("not started");
    const { queue } = await whenRunning<{ running: boolean; queue?: QueueCredentials }>(
      this.dataDir,
      this.server,
    );
    if (!queue) throw new Error("stashd runs without queue credentials");
    return queue;
  }
}

interface QueueCredentials {
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}
