import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { command, useGateway } from "../kv/helpers.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

/**
 * No single request holds the event loop for long (docs/operations.md, Event-loop holds): every
 * stashd process serves all its KV clients, queue deliveries and schedulers from one loop. stashd
 * runs in this process (the harness), so the loop's longest delay while a request is handled is
 * what every other client of the process would have waited. HOLD_MS leaves room for a loaded
 * 2-core machine and its GC pauses; before the fixes these requests held it for 0.6 to 30 s.
 */
const HOLD_MS = 250;

/** Runs `work` and returns its result with the longest event-loop delay seen meanwhile (ms). */
async function longestHold<T>(work: () => Promise<T>): Promise<{ result: T; holdMs: number }> {
  const monitor = monitorEventLoopDelay({ resolution: 5 });
  monitor.enable();
  try {
    const result = await work();
    return { result, holdMs: monitor.max / 1e6 };
  } finally {
    monitor.disable();
  }
}

describe("KV: replies parsed from many Redis connections at once", () => {
  const { stashd } = useGateway();
  const STREAMS = 60;
  const MESSAGES = 10_000;

  it("share each turn of the event loop: 60 event streams fed by one pipeline of PUBLISH", async () => {
    const s = stashd();
    const streams = Array.from({ length: STREAMS }, () => new AbortController());
    let events = 0;
    for (const ctrl of streams) {
      const res = await s.kvFetch("/subscribe/flood", { method: "GET", signal: ctrl.signal });
      expect(res.status).toBe(200);
      void (async () => {
        const body = res.body as ReadableStream<Uint8Array>;
        try {
          for await (const chunk of body) {
            for (const byte of chunk) if (byte === 0x0a) events++;
          }
        } catch {
          // aborted at the end of the test
        }
      })();
    }
    // Each event is `data: …\n\n`, two line ends; the subscribe confirmations come first.
    await eventually(() => expect(events).toBe(2 * STREAMS));
    const publishes = Array.from({ length: MESSAGES }, () => ["PUBLISH", "flood", "m"]);
    const flood = async (): Promise<number> => {
      const expected = events + 2 * STREAMS * MESSAGES;
      const { holdMs } = await longestHold(async () => {
        const res = await s.kvFetch("/pipeline", { body: JSON.stringify(publishes) });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        await eventually(() => expect(events).toBe(expected), { timeoutMs: 30_000 });
      });
      return holdMs;
    };
    // The better of two floods when the first passes the bound: this process also runs the
    // test's 60 readers and shares 2 cores with the slow tier's other files, so one flood can
    // see the process descheduled (320 ms once in CI); unsliced parsing holds every flood
    // (1,588 ms with 200 streams before the fix).
    let holdMs = await flood();
    if (holdMs >= HOLD_MS) holdMs = Math.min(holdMs, await flood());
    for (const ctrl of streams) ctrl.abort();
    expect(holdMs).toBeLessThan(HOLD_MS);
    expect((await command(s, ["PING"])).body).toEqual({ result: "PONG" });
  });
});

describe("KV: commands of many arguments", () => {
  const { stashd } = useGateway();
  const EXISTS = (n: number): string[] => ["EXISTS", ...Array<string>(n - 1).fill("k")];
  // 100 commands of 26,000 arguments: 10.4 MB, under the default 10 MiB body limit.
  const wide = JSON.stringify(Array.from({ length: 100 }, () => EXISTS(26_000)));

  it("a pipeline of long commands goes in slices of arguments (read-only token)", async () => {
    const s = stashd();
    const { result, holdMs } = await longestHold(async () => {
      const res = await s.kvFetch("/pipeline", { body: wide, token: s.kv.readonlyToken });
      return { status: res.status, body: (await res.json()) as unknown[] };
    });
    expect(result.status).toBe(200);
    expect(result.body).toHaveLength(100);
    expect(result.body[99]).toEqual({ result: 0 });
    expect(holdMs).toBeLessThan(HOLD_MS);
  });

  it("so does a transaction of them", async () => {
    const s = stashd();
    const { result, holdMs } = await longestHold(async () => {
      const res = await s.kvFetch("/multi-exec", { body: wide });
      return { status: res.status, body: (await res.json()) as unknown[] };
    });
    expect(result.status).toBe(200);
    expect(result.body).toHaveLength(100);
    expect(holdMs).toBeLessThan(HOLD_MS);
  });

  it("refuses one command of more than STASHD_KV_MAX_COMMAND_ARGS arguments", async () => {
    const s = stashd();
    const error = {
      error:
        "ERR max arguments per command exceeded: at most 100000 in one command (STASHD_KV_MAX_COMMAND_ARGS)",
    };
    const one = JSON.stringify(EXISTS(2_000_000));
    const single = await command(s, JSON.parse(one) as string[], {
      token: s.kv.readonlyToken,
    });
    expect(single).toEqual({ status: 400, body: error });
    const inPipeline = await s.kvFetch("/pipeline", { body: `[["PING"],${one}]` });
    expect(inPipeline.status).toBe(400);
    expect(await inPipeline.json()).toEqual(error);
    expect((await command(s, EXISTS(100_000))).body).toEqual({ result: 0 });
  });
});

describe("queue: JSON bodies and batches", () => {
  let env: QueueTestEnv;
  beforeAll(async () => {
    env = await queueEnv({ queueMaxBatchItems: 5 });
  });
  afterAll(async () => {
    await env?.close();
  });

  const post = (path: string, body: string): Promise<Response> =>
    env.api(path, { method: "POST", headers: { "content-type": "application/json" }, body });

  it("refuses a 10 MB batch of 3.5 million empty items before parsing it", async () => {
    const items = `[${Array<string>(3_400_000).fill("{}").join(",")}]`;
    const { result, holdMs } = await longestHold(async () => {
      const res = await post("/v2/batch", items);
      return { status: res.status, body: (await res.json()) as { error?: string } };
    });
    expect(result.status).toBe(400);
    expect(result.body.error).toBe(
      "request body has more than 100000 JSON values (STASHD_QUEUE_MAX_JSON_VALUES)",
    );
    expect(holdMs).toBeLessThan(HOLD_MS);
  });

  it("refuses a URL group body of too many values the same way, and stores nothing", async () => {
    const endpoints = Array<string>(150_000).fill('{"url":"http://127.0.0.1:9/x"}').join(",");
    const res = await post("/v2/topics/many/endpoints", `{"endpoints":[${endpoints}]}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/more than 100000 JSON values/);
    expect((await env.api("/v2/topics/many")).status).toBe(404);
  });

  it("takes at most STASHD_QUEUE_MAX_BATCH_ITEMS items", async () => {
    const item = { destination: "http://127.0.0.1:9/x", headers: { "upstash-delay": "1h" } };
    const tooMany = await post("/v2/batch", JSON.stringify(Array(6).fill(item)));
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual({
      error: "batch has 6 items, at most 5 (STASHD_QUEUE_MAX_BATCH_ITEMS)",
    });
    const fits = await post("/v2/batch", JSON.stringify(Array(5).fill(item)));
    expect(fits.status).toBe(201);
    expect((await fits.json()) as unknown[]).toHaveLength(5);
  });
});
