import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  makePartitions,
  type Partition,
  type Partitions,
} from "../../src/queue/store/partitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { testPool } from "../harness/redis.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/**
 * Workflow runs on a queue split into 3 partitions on one Redis (docs/workflow.md §3,
 * Partitions): runs are placed by flow-control key or id, found by id for every later call,
 * waiters are looked for in every partition, and the logs merge the partitions' run indexes.
 */
let w: WorkflowTestEnv;
let pool: RedisPool;
/** The partitions as stashd lays them out (their Redis: the test's own pool). */
let parts: Partitions;

beforeAll(async () => {
  w = await workflowEnv({ queuePartitions: 3 });
  pool = testPool(w.redis.url);
  parts = makePartitions(3, () => pool);
});
afterAll(async () => {
  await pool?.close();
  await w?.close();
});

interface RunLog {
  workflowRunId: string;
  workflowState: string;
  workflowRunCreatedAt: number;
  steps: { steps: { messageId?: string }[] }[];
}

async function runLog(workflowRunId: string): Promise<RunLog | undefined> {
  const { runs } = (await w.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
  return runs[0];
}

/** The partitions holding run `runId`'s hash (a Redis look at every partition). */
async function partitionsOf(runId: string): Promise<number[]> {
  const found: number[] = [];
  for (const p of parts.all) {
    const reply = await pool.exec(["EXISTS", p.keys.workflowRun(runId)]);
    if (reply.kind === "int" && reply.value === "1") found.push(p.index);
  }
  return found;
}

/** A run id (`wfr_<prefix>-<n>`) whose own partition is `p`. */
function idIn(p: Partition, prefix: string): string {
  for (let n = 0; ; n++) {
    const id = `wfr_${prefix}-${n}`;
    if (parts.ofName(id) === p) return id;
  }
}

/** The id to give the SDK's trigger for run id `runId` (it prefixes `wfr_` itself). */
const given = (runId: string): string => runId.slice("wfr_".length);

const at = (i: number): Partition => parts.all[i] as Partition;

/** An app counting deliveries in flight (the most at once) and finished runs. */
function tracked(path: string, steps: number) {
  const state = { inFlight: 0, most: 0, done: 0 };
  const url = w.app.route(
    path,
    serve(
      async (context) => {
        for (let i = 0; i < steps; i++) {
          await context.run(`s${i}`, async () => {
            state.inFlight++;
            state.most = Math.max(state.most, state.inFlight);
            await new Promise((r) => setTimeout(r, 30));
            state.inFlight--;
            return i;
          });
        }
        await context.run("done", () => state.done++);
      },
      { env: w.env },
    ).handler,
  );
  return { url, state };
}

async function succeeded(runIds: readonly string[]) {
  await eventually(
    async () => {
      for (const id of runIds) expect((await runLog(id))?.workflowState).toBe("RUN_SUCCESS");
    },
    { timeoutMs: 20_000 },
  );
}

describe("workflow runs over 3 queue partitions", () => {
  it("places runs by id in several partitions, with their messages, and completes them", async () => {
    const { url, state } = tracked("/spread", 2);
    const runs = await w.client.trigger([...Array(9).keys()].map(() => ({ url })));
    const ids = runs.map((r) => r.workflowRunId);
    const homes = await Promise.all(ids.map(partitionsOf));
    expect(homes).toEqual(ids.map((id) => [parts.ofName(id).index]));
    expect(new Set(homes.flat()).size).toBeGreaterThan(1);
    await succeeded(ids);
    expect(state.done).toBe(9);
    for (const id of ids) {
      const log = await runLog(id);
      const messageIds = log?.steps.flatMap((g) => g.steps.map((s) => s.messageId ?? "")) ?? [];
      expect(messageIds.length).toBeGreaterThan(2);
      for (const m of messageIds) expect(parts.ofMessage(m)).toBe(parts.ofName(id));
    }
  });

  it("keeps a flow-controlled run in its key's partition; parallelism holds across runs", async () => {
    const { url, state } = tracked("/fc", 2);
    const key = "wf-part-key";
    const home = parts.ofName(key);
    // Run ids whose own partition is another one: they are placed by the key all the same.
    const other = parts.all.find((p) => p !== home) as Partition;
    const ids = ["a", "b", "c"].map((x) => idIn(other, `fc${x}`));
    const flowControl = { key, parallelism: 1 };
    await w.client.trigger(ids.map((id) => ({ url, workflowRunId: given(id), flowControl })));
    for (const id of ids) expect(await partitionsOf(id)).toEqual([home.index]);
    await succeeded(ids);
    expect(state.done).toBe(3);
    expect(state.most).toBe(1);
  });

  it("notifies waiting runs in every partition, and one run by id", async () => {
    const got: string[] = [];
    const url = w.app.route(
      "/wait",
      serve(
        async (context) => {
          const r = await context.waitForEvent("wait", "evt-parts", { timeout: "1h" });
          await context.run("got", () =>
            got.push(`${context.workflowRunId}:${String(r.eventData)}`),
          );
        },
        { env: w.env },
      ).handler,
    );
    const ids = [0, 1, 2].map((i) => idIn(at(i), "wait"));
    await w.client.trigger(ids.map((id) => ({ url, workflowRunId: given(id) })));
    await eventually(async () =>
      expect(await w.client.getWaiters({ eventId: "evt-parts" })).toHaveLength(3),
    );
    const [byRun, ...rest] = ids as [string, ...string[]];
    const one = await w.client.notify({
      eventId: "evt-parts",
      eventData: "one",
      workflowRunId: byRun,
    });
    expect(one).toHaveLength(1);
    expect(await w.client.notify({ eventId: "evt-parts", eventData: "all" })).toHaveLength(2);
    await eventually(() =>
      expect(got.sort()).toEqual([`${byRun}:one`, ...rest.map((id) => `${id}:all`)].sort()),
    );
  });

  it("cancels a run by id when it lives outside its id's partition", async () => {
    const url = w.app.route(
      "/sleepy",
      serve(
        async (context) => {
          await context.sleep("long", 3600);
        },
        { env: w.env },
      ).handler,
    );
    const key = "wf-cancel-key";
    const elsewhere = parts.all.find((p) => p !== parts.ofName(key)) as Partition;
    const workflowRunId = idIn(elsewhere, "cancel");
    const flowControl = { key, parallelism: 5 };
    await w.client.trigger({ url, workflowRunId: given(workflowRunId), flowControl });
    expect(await partitionsOf(workflowRunId)).toEqual([parts.ofName(key).index]);
    // Cancelled once the endpoint has answered its first call (the sleep step is stored).
    await eventually(() => expect(w.app.hitsOf("/sleepy")[0]?.status).toBe(200));
    expect(await w.client.cancel({ ids: workflowRunId })).toEqual({ cancelled: 1 });
    expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_CANCELED");
  });

  it("lists every run exactly once across pages, newest first", async () => {
    const { url } = tracked("/quick", 1);
    const runs = await w.client.trigger([...Array(7).keys()].map(() => ({ url })));
    await succeeded(runs.map((r) => r.workflowRunId));
    const listed: RunLog[] = [];
    let cursor: string | undefined;
    do {
      const page = (await w.client.logs({
        count: 2,
        ...(cursor ? { cursor } : {}),
      })) as unknown as {
        runs: RunLog[];
        cursor?: string;
      };
      listed.push(...page.runs);
      cursor = page.cursor;
    } while (cursor);
    const ids = listed.map((r) => r.workflowRunId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of runs) expect(ids).toContain(r.workflowRunId);
    const order = listed.map((r) => [r.workflowRunCreatedAt, r.workflowRunId] as const);
    const sorted = [...order].sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? 1 : -1));
    expect(order).toEqual(sorted);
    expect(new Set(ids.map((id) => parts.ofName(id).index)).size).toBeGreaterThan(1);
  });

  it("keeps one record per run id when an ended run's id starts again in another partition", async () => {
    const sleepy = w.app.route(
      "/sleepy-again",
      serve(async (context) => context.sleep("long", 3600), { env: w.env }).handler,
    );
    const { url: quick, state } = tracked("/quick-again", 1);
    const first = "wf-first-key";
    const second = keyOutside(parts.ofName(first), "wf-second-key");
    const runId = "wfr_moving";
    await w.client.trigger({ url: sleepy, workflowRunId: given(runId), flowControl: fc(first) });
    expect(await partitionsOf(runId)).toEqual([parts.ofName(first).index]);
    // Active in the first key's partition: a start placed in another one is a duplicate.
    const headers = {
      "Upstash-Workflow-RunId": runId,
      "Upstash-Flow-Control-Key": second,
      "Upstash-Flow-Control-Value": "parallelism=1",
    };
    const again = await w.api(`/v2/trigger/${quick}`, { method: "POST", headers, body: "{}" });
    expect(again.status).toBe(409);
    expect(await partitionsOf(runId)).toEqual([parts.ofName(first).index]);
    // Cancelled once the endpoint has answered its first call: a step still in flight would
    // publish its sleep under the reused id into the new run (docs/workflow.md §6).
    await eventually(() => expect(w.app.hitsOf("/sleepy-again")[0]?.status).toBe(200));
    expect(await w.client.cancel({ ids: runId })).toEqual({ cancelled: 1 });
    // Ended: the id starts afresh in the second key's partition, the old record removed.
    await w.client.trigger({ url: quick, workflowRunId: given(runId), flowControl: fc(second) });
    expect(await partitionsOf(runId)).toEqual([parts.ofName(second).index]);
    await succeeded([runId]);
    expect(state.done).toBe(1);
    const { runs } = (await w.client.logs({ workflowRunId: runId })) as unknown as {
      runs: RunLog[];
    };
    expect(runs.map((r) => r.workflowState)).toEqual(["RUN_SUCCESS"]);
  });
});

/** A flow-control setting of key `key`, one at a time. */
const fc = (key: string) => ({ key, parallelism: 1 });

/** `<prefix>-<n>`, the first such flow-control key outside partition `p`. */
function keyOutside(p: Partition, prefix: string): string {
  for (let n = 0; ; n++) if (parts.ofName(`${prefix}-${n}`) !== p) return `${prefix}-${n}`;
}
