import { Client, serve, WorkflowNonRetryableError } from "@upstash/workflow";
import { afterAll, describe, expect, it } from "vitest";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { FAST_QUEUE } from "../queue/setup.js";
import { runPartitionAt, startApp, type App } from "./harness.js";

/*
 * A SIGKILL between a workflow message's final failure (the finish transition that moves it to
 * the DLQ) and the transition that ends its run leaves the run active with its failed message in
 * the DLQ. That window is a few microseconds wide, too narrow to hit with a real kill, so these
 * tests fail a run for real and then put its records back into exactly the state such a kill
 * leaves: run active, the failed message still one of its messages, the DLQ entry in place.
 */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Setup {
  redisUrl: string;
  pool: RedisPool;
  app: App;
  stashd: TestStashd;
  env: Record<string, string>;
  client: Client;
}

async function setup(): Promise<Setup> {
  const redis = await startRedis();
  const stashd = await startStashd({ queueRedisUrl: redis.url, ...FAST_QUEUE });
  const app = await startApp();
  const pool = testPool(redis.url);
  const s: Setup = {
    redisUrl: redis.url,
    pool,
    app,
    stashd,
    env: {
      QSTASH_URL: stashd.queue.url,
      QSTASH_TOKEN: stashd.queue.token,
      QSTASH_CURRENT_SIGNING_KEY: stashd.queue.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: stashd.queue.nextSigningKey,
    },
    client: new Client({ baseUrl: stashd.queue.url, token: stashd.queue.token }),
  };
  cleanups.push(async () => {
    await app.close();
    await s.stashd.stop();
    await pool.close();
    await redis.stop();
  });
  return s;
}

/** A route whose first step fails for good (non-retryable); `failureUrl` gets the callback. */
function failingRoute(s: Setup, path: string): string {
  return s.app.route(
    path,
    serve(
      async (context) => {
        await context.run("doomed", () => {
          throw new WorkflowNonRetryableError("no way");
        });
      },
      { env: s.env },
    ).handler,
  );
}

async function runState(s: Setup, workflowRunId: string) {
  const { runs } = await s.client.logs({ workflowRunId });
  return runs[0];
}

/** The failed run's DLQ entry (its failed message). */
async function dlqEntryOf(s: Setup, workflowRunId: string) {
  return eventually(async () => {
    const { messages } = await s.client.dlq.list();
    const entry = messages.find((m) => m.workflowRunId === workflowRunId);
    if (!entry) throw new Error("no DLQ entry yet");
    // The SDK's type leaves out the message id, which the API sends.
    return entry as typeof entry & { messageId: string };
  });
}

/** Puts run `runId` back into the state a kill right after its failure leaves. */
async function undoRunEnd(pool: RedisPool, runId: string, failedMessageId: string) {
  const Q = (await runPartitionAt(pool, runId)).keys;
  await pool.exec(["HSET", Q.workflowRun(runId), "state", "RUN_STARTED"]);
  await pool.exec(["HDEL", Q.workflowRun(runId), "completedAt", "dlqId", "error", "failure"]);
  for (const key of [Q.workflowRun(runId), Q.workflowSteps(runId)]) {
    await pool.exec(["PERSIST", key]);
  }
  await pool.exec(["SADD", Q.workflowMessages(runId), failedMessageId]);
}

describe("a kill between a run's final failure and its end", () => {
  it("is finished when stashd starts again: the run fails with its DLQ entry", async () => {
    const s = await setup();
    const url = failingRoute(s, "/doomed");
    const { workflowRunId } = await s.client.trigger({ url, retries: 0 });
    const entry = await dlqEntryOf(s, workflowRunId);
    await eventually(async () =>
      expect((await runState(s, workflowRunId))?.workflowState).toBe("RUN_FAILED"),
    );
    await s.stashd.stop();
    await undoRunEnd(s.pool, workflowRunId, entry.messageId);
    s.stashd = await startStashd({ queueRedisUrl: s.redisUrl, ...FAST_QUEUE });
    const client = new Client({ baseUrl: s.stashd.queue.url, token: s.stashd.queue.token });
    const run = await eventually(async () => {
      const { runs } = await client.logs({ workflowRunId });
      expect(runs[0]?.workflowState).toBe("RUN_FAILED");
      return runs[0];
    });
    expect(run?.dlqId).toBe(entry.dlqId);
    // Refused like any ended run.
    expect(
      (
        await fetch(`${s.stashd.queue.url}/v2/workflows/runs/${workflowRunId}`, {
          headers: { authorization: `Bearer ${s.stashd.queue.token}` },
        })
      ).status,
    ).toBe(404);
  });

  it("is finished by the failure callback's delivery while stashd keeps running", async () => {
    const s = await setup();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const failureUrl = s.app.route("/failure-cb", async () => {
      calls += 1;
      // The first attempt waits until the crash state is in place, then fails: the retry is
      // the delivery that must find the run still active.
      if (calls === 1) {
        await gate;
        return new Response("not yet", { status: 500 });
      }
      return new Response("ok", { status: 200 });
    });
    const url = failingRoute(s, "/doomed-cb");
    const { workflowRunId } = await s.client.trigger({ url, retries: 1, failureUrl });
    const entry = await dlqEntryOf(s, workflowRunId);
    await eventually(() => expect(calls).toBe(1));
    await eventually(async () =>
      expect((await runState(s, workflowRunId))?.workflowState).toBe("RUN_FAILED"),
    );
    await undoRunEnd(s.pool, workflowRunId, entry.messageId);
    expect((await runState(s, workflowRunId))?.workflowState).toBe("RUN_STARTED");
    release();
    const run = await eventually(async () => {
      const r = await runState(s, workflowRunId);
      expect(r?.workflowState).toBe("RUN_FAILED");
      expect(r?.failureFunction?.state).toBe("CALLBACK_SUCCESS");
      return r;
    });
    expect(calls).toBe(2);
    expect(run?.dlqId).toBe(entry.dlqId);
  });
});

describe("a workflow DLQ entry written before the DLQ's workflow index existed", () => {
  it("joins the index when stashd starts, so the DLQ counts tell it from a message's", async () => {
    const s = await setup();
    const url = failingRoute(s, "/old-entry");
    const { workflowRunId } = await s.client.trigger({ url, retries: 0 });
    const entry = await dlqEntryOf(s, workflowRunId);
    const Q = (await runPartitionAt(s.pool, workflowRunId)).keys;
    expect(await s.pool.exec(["ZCARD", Q.dlqWorkflow])).toMatchObject({ kind: "int", value: "1" });
    await s.stashd.stop();
    await s.pool.exec(["ZREM", Q.dlqWorkflow, entry.dlqId]); // as an older stashd left it
    s.stashd = await startStashd({ queueRedisUrl: s.redisUrl, ...FAST_QUEUE });
    await eventually(async () =>
      expect(await s.pool.exec(["ZCARD", Q.dlqWorkflow])).toMatchObject({
        kind: "int",
        value: "1",
      }),
    );
  });
});
