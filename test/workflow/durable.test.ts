import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, serve } from "@upstash/workflow";
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";
import {
  endOrphanedRedis,
  spawnStashdKeepingStderr,
  whenRunning,
  type StashdProcess,
} from "../harness/process.js";
import { sharedQueueOptions, TEST_KEYS, TEST_TOKEN } from "../queue/setup.js";
import { startApp, type App } from "./harness.js";

const cleanups: (() => Promise<void> | void)[] = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Creds {
  running: boolean;
  queue?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
}

/**
 * The real bin/stashd with its managed queue Redis (appendfsync always), on a fixed port. One
 * process (`STASHD_WORKERS=1`): the test is about a SIGKILL of stashd between steps, and three
 * starts of a supervisor with workers cost seconds of a loaded CI machine's CPU for nothing it
 * asserts (the supervisor's SIGKILL is test/ops/workers.test.ts's).
 */
function startServer(dataDir: string, port: number): StashdProcess {
  return spawnStashdKeepingStderr(dataDir, {
    queuePort: port,
    env: {
      STASHD_WORKERS: "1",
      STASHD_QUEUE_LEASE_MS: "300",
      STASHD_QUEUE_REAP_MS: "50",
      STASHD_QUEUE_IDLE_POLL_MS: "50",
      STASHD_QUEUE_BACKOFF_SCALE_MS: "10",
    },
  });
}

async function running(dataDir: string, server: StashdProcess) {
  const { queue } = await whenRunning<Creds>(dataDir, server);
  if (!queue) throw new Error("stashd runs without queue credentials");
  return queue;
}

async function kill({ child }: StashdProcess): Promise<void> {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

const STEPS = ["s1", "s2", "s3", "s4", "s5", "s6"];

/** A six-step workflow counting how often each step of each run executed. */
function countingRoute(
  app: App,
  path: string,
  env: Record<string, string>,
  runs: Map<string, string[]>,
) {
  return app.route(
    path,
    serve(
      async (context) => {
        for (const step of STEPS) {
          await context.run(step, () => {
            const list = runs.get(context.workflowRunId) ?? [];
            list.push(step);
            runs.set(context.workflowRunId, list);
          });
        }
        return "ok";
      },
      { env },
    ).handler,
  );
}

describe("durable workflow runs", () => {
  it("completes a run across two SIGKILLs of stashd between steps", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-wf-proc-"));
    const port = await freePort();
    let server = startServer(dataDir, port);
    cleanups.push(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) await kill(server);
      endOrphanedRedis(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    });
    const q = await running(dataDir, server);
    const app = await startApp();
    cleanups.push(() => app.close());
    const env = {
      QSTASH_URL: q.url,
      QSTASH_TOKEN: q.token,
      QSTASH_CURRENT_SIGNING_KEY: q.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: q.nextSigningKey,
    };
    const runs = new Map<string, string[]>();
    const url = countingRoute(app, "/durable", env, runs);
    const client = new Client({ baseUrl: q.url, token: q.token });
    const { workflowRunId } = await client.trigger({ url });
    const ran = () => runs.get(workflowRunId) ?? [];
    for (const after of ["s2", "s4"]) {
      await eventually(() => expect(ran()).toContain(after), { timeoutMs: 20_000 });
      await kill(server);
      server = startServer(dataDir, port);
      await running(dataDir, server);
    }
    await eventually(() => expect(ran()).toContain("s6"), { timeoutMs: 30_000 });
    // At least once: a step cut off by a kill may run again, but none is skipped.
    expect(new Set(ran())).toEqual(new Set(STEPS));
    await eventually(async () => {
      const { runs: logs } = await client.logs({ workflowRunId });
      expect(logs[0]?.workflowState).toBe("RUN_SUCCESS");
    });
    // Three starts and two kills of a real process: up to 70 s of waits above on a loaded machine.
  }, 90_000);

  it("runs workflows on two stashd processes sharing one queue Redis, each step once", async () => {
    const redis = await startRedis();
    // "Each step once" holds while every attempt keeps its lease. The tests' 2 s lease can lapse
    // when this loaded process renews late, and then a step may rightly run again (at least
    // once, as in the test above); 10 s keeps this test about two processes sharing the work.
    const options = { ...sharedQueueOptions(redis.url), queueLeaseMs: 10_000 };
    const a = await startStashd(options);
    const b = await startStashd(options);
    const app = await startApp();
    cleanups.push(async () => {
      await app.close();
      await a.stop();
      await b.stop();
      await redis.stop();
    });
    const envOf = (url: string) => ({
      QSTASH_URL: url,
      QSTASH_TOKEN: TEST_TOKEN,
      QSTASH_CURRENT_SIGNING_KEY: TEST_KEYS.current,
      QSTASH_NEXT_SIGNING_KEY: TEST_KEYS.next,
    });
    const runs = new Map<string, string[]>();
    const viaA = countingRoute(app, "/via-a", envOf(a.queue.url), runs);
    const viaB = countingRoute(app, "/via-b", envOf(b.queue.url), runs);
    const client = new Client({ baseUrl: a.queue.url, token: TEST_TOKEN });
    const triggered = await client.trigger(
      Array.from({ length: 10 }, (_, i) => ({ url: i % 2 === 0 ? viaA : viaB })),
    );
    await eventually(
      () => {
        for (const t of triggered) expect(runs.get(t.workflowRunId)).toEqual(STEPS);
      },
      { timeoutMs: 20_000 },
    );
    await eventually(async () => {
      const { runs: logs } = await client.logs({ filter: { state: "RUN_SUCCESS" } });
      expect(logs.length).toBe(10);
    });
    // Half of the runs publish their steps through each process.
    const paths = new Set(app.hits.map((h) => h.path));
    expect(paths).toEqual(new Set(["/via-a", "/via-b"]));
  });
});
