import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";
import { startTracker, type Tracker } from "./tracker.js";

/**
 * Flow control (spec 2.11, 3.3) through `@upstash/qstash` and raw HTTP: the parallelism and the
 * rate of a key as seen at a local receiver, and the GET endpoints' shapes.
 */
let env: QueueTestEnv;
const trackers: Tracker[] = [];

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await Promise.all(trackers.map((t) => t.close()));
  await env?.close();
});

async function tracker(): Promise<Tracker> {
  const t = await startTracker(env.keys);
  trackers.push(t);
  return t;
}

/** The fields of a `/v2/logs` event these tests read. */
interface LogEvent {
  time: number;
  messageId: string;
  state: string;
  /** When the attempt's request was sent (ms; DELIVERED, ERROR, RETRY and FAILED events). */
  startedAt?: number;
}

describe("flow control", () => {
  it("never has more than parallelism deliveries of a key in flight", async () => {
    const rx = await tracker();
    rx.delayMs = 100;
    const flowControl = { key: "fc-par", parallelism: 2 };
    for (let n = 0; n < 8; n++) {
      await env.client.publishJSON({ url: `${rx.url}/p`, body: { n }, flowControl });
    }
    await eventually(() => expect(rx.answered).toHaveLength(8), { timeoutMs: 10_000 });
    expect(rx.maxInflight).toBe(2);
    // The last finish is recorded just after the receiver answered: wait for it.
    await eventually(async () => {
      const info = (await (await env.api("/v2/flowControl/fc-par")).json()) as object;
      expect(info).toMatchObject({ parallelismMax: 2, parallelismCount: 0, waitListSize: 0 });
    });
  });

  it("limits enqueued queue messages by their key too", async () => {
    const rx = await tracker();
    rx.delayMs = 50;
    await env.client.queue({ queueName: "fc-q" }).upsert({ parallelism: 4 });
    for (let n = 0; n < 5; n++) {
      const res = await env.api(`/v2/enqueue/fc-q/${rx.url}/q`, {
        method: "POST",
        headers: {
          // The hash tag puts the key in the queue's partition (docs/scaling.md, Placement).
          "Upstash-Flow-Control-Key": "fc-queue-{fc-q}",
          "Upstash-Flow-Control-Value": "parallelism=1",
        },
        body: String(n),
      });
      expect(res.status).toBe(201);
    }
    await eventually(() => expect(rx.answered).toHaveLength(5), { timeoutMs: 10_000 });
    expect(rx.maxInflight).toBe(1);
    expect(rx.answered.map((a) => a.body)).toEqual(["0", "1", "2", "3", "4"]);
  });

  // The rate is a fixed window (docs/queue.md, Flow control): at most `rate` admissions per
  // period, a period starting at the first admission after the previous one ended. Two periods'
  // worth may so start within less than a period (the end of one, the start of the next), and a
  // delivery starts after its admission by the dispatcher's latency, which a loaded machine
  // stretches unevenly: receiver clocks over a sliding window do not measure the contract. These
  // tests read the key's state and the server's own timestamps instead.
  it("admits at most rate messages per period, oldest first", async () => {
    const rx = await tracker();
    // A period far longer than the test: its periods change only when resetRate starts one.
    const flowControl = { key: "fc-rate-count", rate: 2, period: 600 };
    for (let n = 0; n < 6; n++) {
      await env.client.publishJSON({ url: `${rx.url}/c`, body: { n }, flowControl });
    }
    const delivered = () => rx.answered.map((a) => (JSON.parse(a.body) as { n: number }).n);
    const info = async () => (await env.client.flowControl.get("fc-rate-count")) as object;
    for (const [period, waiting] of [4, 2, 0].entries()) {
      const upTo = 2 * (period + 1);
      await eventually(() => expect(rx.answered).toHaveLength(upTo));
      expect(
        delivered()
          .slice(upTo - 2)
          .sort(),
      ).toEqual([upTo - 2, upTo - 1]);
      // The rest are held in the wait list, not merely late: the server's count says so.
      expect(await info()).toMatchObject({ rateMax: 2, rateCount: 2, waitListSize: waiting });
      await env.client.flowControl.resetRate("fc-rate-count");
    }
  });

  it("starts each period at least a period after the previous one began", async () => {
    const rx = await tracker();
    const flowControl = { key: "fc-rate", rate: 2, period: 1 };
    const ids: string[] = [];
    for (let n = 0; n < 6; n++) {
      ids.push(
        (await env.client.publishJSON({ url: `${rx.url}/r`, body: { n }, flowControl })).messageId,
      );
    }
    await eventually(() => expect(rx.answered).toHaveLength(6), { timeoutMs: 10_000 });
    const events = await eventually(async () => {
      const res = await env.api("/v2/logs?flowControlKey=fc-rate&count=1000");
      const { logs } = (await res.json()) as { logs: LogEvent[] };
      expect(logs.filter((e) => e.state === "DELIVERED")).toHaveLength(6);
      return logs;
    });
    // The first message opened the key's first period when it was stored: its CREATED time.
    const opened = events.find((e) => e.messageId === ids[0] && e.state === "CREATED")?.time ?? 0;
    expect(opened).toBeGreaterThan(0);
    // Message n is admitted in period floor(n / rate) or later, and every period begins at least
    // a period after the one before: no delivery of it starts earlier (server clock; a delivery
    // starts after the script that admitted it ran, so lateness never breaks this bound).
    for (const [n, id] of ids.entries()) {
      const sent = events.find((e) => e.messageId === id && e.state === "DELIVERED");
      expect(sent?.startedAt, `message ${n}`).toBeGreaterThanOrEqual(
        opened + Math.floor(n / 2) * 1_000,
      );
    }
  });

  it("reports keys with every numeric field, by key and by search; 404 for unknown", async () => {
    const rx = await tracker();
    const res = await env.api(`/v2/publish/${rx.url}/h`, {
      method: "POST",
      headers: {
        "Upstash-Flow-Control-Key": "fc-http",
        "Upstash-Flow-Control-Value": "parallelism=3, rate=10,period=1m",
      },
      body: "x",
    });
    expect(res.status).toBe(201);
    const { messageId } = (await res.json()) as { messageId: string };
    await eventually(() => expect(rx.answered).toHaveLength(1));
    const get = async () => (await (await env.api("/v2/flowControl/fc-http")).json()) as object;
    await eventually(async () => expect(await get()).toMatchObject({ parallelismCount: 0 }));
    const info = await get();
    expect(info).toEqual({
      flowControlKey: "fc-http",
      waitListSize: 0,
      parallelismMax: 3,
      parallelismCount: 0,
      rateMax: 10,
      rateCount: 1,
      ratePeriod: 60,
      ratePeriodStart: expect.any(Number) as number,
      isPaused: false,
      isPinnedParallelism: false,
      isPinnedRate: false,
    });
    const found = (await (await env.api("/v2/flowControl?search=http")).json()) as object[];
    expect(found).toEqual([info]);
    const all = (await (await env.api("/v2/flowControl")).json()) as { flowControlKey: string }[];
    expect(all.map((x) => x.flowControlKey)).toContain("fc-par");
    expect((await env.api("/v2/flowControl/nope")).status).toBe(404);
    const logs = (await (await env.api(`/v2/logs?flowControlKey=fc-http`)).json()) as {
      logs: { messageId: string }[];
    };
    expect(logs.logs.length).toBeGreaterThan(0);
    expect(logs.logs.every((e) => e.messageId === messageId)).toBe(true);
    const bad = await env.api(`/v2/publish/${rx.url}/h`, {
      method: "POST",
      headers: { "Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": "period=1s" },
    });
    expect(bad.status).toBe(400);
  });
  it("pauses, resumes, pins, unpins and resets a key through the SDK", async () => {
    const rx = await tracker();
    const fc = env.client.flowControl;
    const flowControl = { key: "fc-admin", parallelism: 5 };
    await env.client.publishJSON({ url: `${rx.url}/a`, body: { n: 0 }, flowControl });
    await eventually(() => expect(rx.answered).toHaveLength(1));
    await fc.pause("fc-admin");
    await env.client.publishJSON({ url: `${rx.url}/a`, body: { n: 1 }, flowControl });
    expect(await fc.get("fc-admin")).toMatchObject({ isPaused: true, waitListSize: 1 });
    expect(rx.answered).toHaveLength(1);
    await fc.resume("fc-admin");
    await eventually(() => expect(rx.answered).toHaveLength(2));
    await fc.pin("fc-admin", { parallelism: 3, rate: 20, period: 120 });
    await env.client.publishJSON({ url: `${rx.url}/a`, body: { n: 2 }, flowControl });
    expect(await fc.get("fc-admin")).toMatchObject({
      parallelismMax: 3,
      rateMax: 20,
      ratePeriod: 120,
      isPinnedParallelism: true,
      isPinnedRate: true,
      isPaused: false,
    });
    await fc.unpin("fc-admin", { parallelism: true, rate: false });
    expect(await fc.get("fc-admin")).toMatchObject({
      isPinnedParallelism: false,
      isPinnedRate: true,
    });
    await fc.resetRate("fc-admin");
    expect(await fc.get("fc-admin")).toMatchObject({ rateCount: 0 });
    expect((await env.api("/v2/flowControl/fc-admin/reset", { method: "POST" })).status).toBe(200);
    expect((await env.api("/v2/flowControl/nope/pause", { method: "POST" })).status).toBe(404);
    const badPin = await env.api("/v2/flowControl/fc-admin/pin?parallelism=x", { method: "POST" });
    expect(badPin.status).toBe(400);
    const global = await fc.getGlobalParallelism();
    expect(global).toMatchObject({ parallelismMax: 0 });
    expect(typeof global.parallelismCount).toBe("number");
  });
});
