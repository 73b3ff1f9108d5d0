import { rmSync } from "node:fs";
import { Client, type Schedule } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QueueService } from "../../src/queue/service.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startReceiver, type TestReceiver } from "./receiver.js";
import { startClockedQueue, TEST_KEYS as KEYS, TEST_TOKEN as TOKEN, TestClock } from "./setup.js";

/**
 * Cron schedules through `@upstash/qstash`, against two queue services (two "processes") on one
 * Redis that share a test clock: advancing it by a minute makes a tick due at once, and the
 * schedulers (polling every 10 ms here) fire it. Deliveries are real and signed.
 */
const MIN = 60_000;
/** 2026-01-01T00:00:30Z: half a minute before the first `* * * * *` tick. */
const T0 = Date.UTC(2026, 0, 1, 0, 0, 30);

let redis: TestRedis;
const clock = new TestClock(T0);
const dirs: string[] = [];
let a: QueueService;
let b: QueueService;
let client: Client;
const receivers: TestReceiver[] = [];

function startQueue(): Promise<QueueService> {
  return startClockedQueue(redis.url, clock, dirs);
}

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(() => KEYS);
  receivers.push(r);
  return r;
}

function api(path: string, init: RequestInit = {}, via = a): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${TOKEN}`);
  return fetch(`${via.url}${path}`, { ...init, headers });
}

/** Moves the test clock to the next whole minute (a `* * * * *` tick) plus `extra` ms. */
function nextMinute(extra = 100): number {
  clock.t = Math.floor(clock.t / MIN) * MIN + MIN + extra;
  return clock.t - extra;
}

beforeAll(async () => {
  redis = await startRedis();
  a = await startQueue();
  b = await startQueue();
  client = new Client({ baseUrl: a.url, token: TOKEN });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await a?.close();
  await b?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("cron schedules", () => {
  it("creates a schedule whose tick delivers a signed message with Upstash-Schedule-Id", async () => {
    const rx = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: `${rx.url}/cron?x=1`,
      cron: "* * * * *",
      body: "tick",
      headers: { "Content-Type": "text/plain", "X-Custom": "yes" },
      method: "PUT",
      retries: 2,
      label: "nightly",
    });
    expect(scheduleId).toMatch(/^scd_[A-Za-z0-9]{28}$/);
    const before = await client.schedules.get(scheduleId);
    expect(before).toMatchObject({
      scheduleId,
      cron: "* * * * *",
      destination: `${rx.url}/cron?x=1`,
      method: "PUT",
      body: "tick",
      retries: 2,
      delay: 0,
      callback: "",
      failureCallback: "",
      isPaused: false,
      createdAt: T0,
      lastScheduleTime: 0,
      nextScheduleTime: Math.floor(T0 / MIN) * MIN + MIN,
      lastScheduleStates: {},
      labels: ["nightly"],
    });
    expect(before.header).toEqual({ "Content-Type": ["text/plain"], "X-Custom": ["yes"] });

    const tick = nextMinute();
    await eventually(() => expect(rx.requests).toHaveLength(1));
    const got = rx.requests[0];
    expect(got?.signatureError).toBeUndefined();
    expect(got?.method).toBe("PUT");
    expect(got?.body).toBe("tick");
    expect(got?.url).toBe(`${rx.url}/cron?x=1`);
    expect(got?.headers["upstash-schedule-id"]).toBe(scheduleId);
    expect(got?.headers["x-custom"]).toBe("yes");
    const messageId = String(got?.headers["upstash-message-id"]);

    const after = await eventually(async () => {
      const s = await client.schedules.get(scheduleId);
      expect(s).toMatchObject({ lastScheduleTime: tick, nextScheduleTime: tick + MIN });
      expect((s as Schedule & { lastScheduleStates: unknown }).lastScheduleStates).toEqual({
        [messageId]: "SUCCESS",
      });
      return s;
    });
    expect(after.isPaused).toBe(false);
    const logs = await client.logs({ filter: { scheduleId } });
    expect(logs.logs.map((l) => l.state)).toContain("DELIVERED");
    await client.schedules.delete(scheduleId);
  });

  it("keeps a fire's state after more log events than a scan reads (the message's log index)", async () => {
    const rx = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: `${rx.url}/long-ago`,
      cron: "* * * * *",
    });
    nextMinute();
    await eventually(() => expect(rx.requests).toHaveLength(1));
    await client.schedules.pause({ schedule: scheduleId });
    const messageId = String(rx.requests[0]?.headers["upstash-message-id"]);
    // 600 other messages: at least 1,200 newer log events than the fire's, more than the 500
    // the listing once scanned for a finished fire's state.
    const other = await receiver();
    const items = Array.from({ length: 600 }, (_, i) => ({ destination: `${other.url}/${i}` }));
    const res = await api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
    expect(res.ok).toBe(true);
    await eventually(() => expect(other.requests).toHaveLength(600), { timeoutMs: 20_000 });
    await eventually(async () => {
      const s = await client.schedules.get(scheduleId);
      expect((s as Schedule & { lastScheduleStates: unknown }).lastScheduleStates).toEqual({
        [messageId]: "SUCCESS",
      });
    });
    await client.schedules.delete(scheduleId);
  });

  it("stores a tick's messages ahead of it (the lead), delivered only once the tick comes", async () => {
    const rx = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: `${rx.url}/lead`,
      cron: "* * * * *",
      body: "early",
    });
    const tick = nextMinute(-300); // 300 ms before the tick: within the 500 ms lead
    const movedAt = Date.now();
    // Fired (stored, the schedule advanced) before the tick...
    const fired = await eventually(async () => {
      const s = (await client.schedules.get(scheduleId)) as Schedule & {
        lastScheduleStates: Record<string, string>;
      };
      expect(s).toMatchObject({ lastScheduleTime: tick, nextScheduleTime: tick + MIN });
      return Object.keys(s.lastScheduleStates);
    });
    expect(fired).toHaveLength(1);
    // ...but due at it: on the wall clock, 300 ms after the scheduler saw tick - 300 ms.
    await eventually(() => expect(rx.requests).toHaveLength(1));
    expect(Date.now() - movedAt).toBeGreaterThanOrEqual(300);
    expect(rx.requests[0]?.headers["upstash-message-id"]).toBe(fired[0]);
    await client.schedules.delete(scheduleId);
  });

  it("stores the cron trimmed and evaluates CRON_TZ in that zone", async () => {
    const rx = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: rx.url,
      cron: "  CRON_TZ=America/New_York   0 9 * * *  ",
    });
    const s = await client.schedules.get(scheduleId);
    expect(s.cron).toBe("CRON_TZ=America/New_York 0 9 * * *");
    const day = Math.floor(clock.t / (24 * 60 * MIN)) * 24 * 60 * MIN;
    // 09:00 in New York in January is 14:00 UTC
    const expected = day + 14 * 60 * MIN + (clock.t - day >= 14 * 60 * MIN ? 24 * 60 * MIN : 0);
    expect((s as Schedule & { nextScheduleTime: number }).nextScheduleTime).toBe(expected);
    await client.schedules.delete(scheduleId);
  });

  it("echoes a flow-control key in the schedule object", async () => {
    const rx = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: rx.url,
      cron: "0 0 * * *",
      flowControl: { key: "sched-key", parallelism: 2, rate: 5, period: "10s" },
    });
    expect(await client.schedules.get(scheduleId)).toMatchObject({
      flowControlKey: "sched-key",
      parallelism: 2,
      rate: 5,
      period: 10,
    });
    await client.schedules.delete(scheduleId);
  });

  it("refuses a bad cron, a missing cron, a bad id and a bad queue name with 400 errors", async () => {
    const rx = await receiver();
    await expect(
      client.schedules.create({ destination: rx.url, cron: "* * * * * *" }),
    ).rejects.toMatchObject({ status: 400 });
    const cases: Record<string, string>[] = [
      { "Upstash-Cron": "not a cron" },
      {},
      { "Upstash-Cron": "* * * * *", "Upstash-Schedule-Id": "bad id!" },
      { "Upstash-Cron": "* * * * *", "Upstash-Queue-Name": "bad name" },
      { "Upstash-Cron": "* * * * *", "Upstash-Retries": "many" },
    ];
    for (const headers of cases) {
      const res = await api(`/v2/schedules/${rx.url}`, { method: "POST", headers });
      expect(res.status).toBe(400);
      expect(typeof ((await res.json()) as { error: unknown }).error).toBe("string");
    }
    expect(await client.schedules.list()).toEqual([]);
  });

  it("replaces a schedule given the same Upstash-Schedule-Id", async () => {
    const first = await receiver();
    const second = await receiver();
    await client.schedules.create({
      destination: first.url,
      cron: "* * * * *",
      scheduleId: "my-job.1",
      body: "old",
    });
    const { scheduleId } = await client.schedules.create({
      destination: second.url,
      cron: "*/2 * * * *",
      scheduleId: "my-job.1",
    });
    expect(scheduleId).toBe("my-job.1");
    const s = await client.schedules.get("my-job.1");
    expect(s.destination).toBe(second.url);
    expect(s.cron).toBe("*/2 * * * *");
    expect(s.body).toBeUndefined();
    expect((await client.schedules.list()).map((x) => x.scheduleId)).toEqual(["my-job.1"]);
    nextMinute();
    nextMinute();
    await eventually(() => expect(second.requests).toHaveLength(1));
    expect(second.requests[0]?.headers["upstash-schedule-id"]).toBe("my-job.1");
    expect(first.requests).toHaveLength(0);
    await client.schedules.delete("my-job.1");
  });

  it("pause stops ticks, resume restarts them; PATCH and POST forms; 404 for unknown ids", async () => {
    const paused = await receiver();
    const sentinel = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: paused.url,
      cron: "* * * * *",
    });
    const control = await client.schedules.create({ destination: sentinel.url, cron: "* * * * *" });
    await client.schedules.pause({ schedule: scheduleId }); // PATCH
    expect((await api(`/v2/schedules/${scheduleId}/pause`, { method: "POST" })).status).toBe(200);
    expect((await client.schedules.get(scheduleId)).isPaused).toBe(true);
    // The sentinel ticks in the same scheduler rounds: once it fired, the paused one would have.
    nextMinute();
    await eventually(() => expect(sentinel.requests).toHaveLength(1));
    expect(paused.requests).toHaveLength(0);

    await client.schedules.resume({ schedule: scheduleId }); // PATCH
    expect((await api(`/v2/schedules/${scheduleId}/resume`, { method: "POST" })).status).toBe(200);
    expect((await client.schedules.get(scheduleId)).isPaused).toBe(false);
    nextMinute();
    await eventually(() => expect(paused.requests).toHaveLength(1));
    expect(paused.requests[0]?.headers["upstash-schedule-id"]).toBe(scheduleId);

    for (const p of ["/v2/schedules/nope", "/v2/schedules/nope/pause"]) {
      const res = await api(p, { method: p.endsWith("pause") ? "PATCH" : "GET" });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "schedule not found" });
    }
    await client.schedules.delete(scheduleId);
    await client.schedules.delete(control.scheduleId);
  });

  it("deletes a schedule: no more ticks, 404 afterwards; /v2/Schedules works too", async () => {
    const gone = await receiver();
    const sentinel = await receiver();
    const { scheduleId } = await client.schedules.create({
      destination: gone.url,
      cron: "* * * * *",
    });
    const control = await client.schedules.create({ destination: sentinel.url, cron: "* * * * *" });
    const upper = await api(`/v2/Schedules/${scheduleId}`);
    expect(upper.status).toBe(200);
    expect(((await upper.json()) as Schedule).scheduleId).toBe(scheduleId);
    const goCreate = await api(`/v2/Schedules/${gone.url}/go`, {
      method: "POST",
      headers: { "upstash-cron": "0 0 1 1 *" },
    });
    expect(goCreate.status).toBe(200);
    const goId = ((await goCreate.json()) as { scheduleId: string }).scheduleId;
    const listed = (await (await api("/v2/schedules/")).json()) as Schedule[];
    expect(listed.map((x) => x.scheduleId).sort()).toEqual(
      [scheduleId, control.scheduleId, goId].sort(),
    );
    await client.schedules.delete(goId);
    await client.schedules.delete(scheduleId);
    await expect(client.schedules.get(scheduleId)).rejects.toMatchObject({ status: 404 });
    expect((await api(`/v2/schedules/${scheduleId}`, { method: "DELETE" })).status).toBe(404);
    nextMinute();
    await eventually(() => expect(sentinel.requests).toHaveLength(1));
    expect(gone.requests).toHaveLength(0);
    await client.schedules.delete(control.scheduleId);
  });

  it("applies the publish configuration to each produced message", async () => {
    const rx = await receiver();
    const cb = await receiver();
    const later = await client.schedules.create({
      destination: `${rx.url}/later`,
      cron: "* * * * *",
      delay: 3600,
      retries: 1,
      timeout: 30,
    });
    const called = await client.schedules.create({
      destination: `${rx.url}/now`,
      cron: "* * * * *",
      callback: `${cb.url}/cb`,
    });
    expect(await client.schedules.get(later.scheduleId)).toMatchObject({ delay: 3600, retries: 1 });
    expect((await client.schedules.get(called.scheduleId)).callback).toBe(`${cb.url}/cb`);
    nextMinute();
    await eventually(() => expect(cb.requests).toHaveLength(1));
    const payload = JSON.parse(cb.requests[0]?.body ?? "{}") as Record<string, unknown>;
    expect(payload["sourceMessageId"]).toBe(rx.requests[0]?.headers["upstash-message-id"]);
    expect(rx.requests.map((r) => r.url)).toEqual([`${rx.url}/now`]);

    const logs = await client.logs({ filter: { scheduleId: later.scheduleId } });
    const id = logs.logs[0]?.messageId ?? "";
    const message = await client.messages.get(id);
    expect(message).toMatchObject({ scheduleId: later.scheduleId, maxRetries: 1 });
    expect((message.notBefore ?? 0) - message.createdAt).toBe(3_600_000);
    await client.messages.delete(id);
    await client.schedules.delete(later.scheduleId);
    await client.schedules.delete(called.scheduleId);
  });

  it("fans a tick out to every endpoint of a URL group", async () => {
    const one = await receiver();
    const two = await receiver();
    await client.urlGroups.addEndpoints({
      name: "crew",
      endpoints: [{ url: one.url }, { url: two.url }],
    });
    const { scheduleId } = await client.schedules.create({
      destination: "crew",
      cron: "* * * * *",
    });
    nextMinute();
    await eventually(() => {
      expect(one.requests).toHaveLength(1);
      expect(two.requests).toHaveLength(1);
    });
    for (const r of [...one.requests, ...two.requests]) {
      expect(r.headers["upstash-schedule-id"]).toBe(scheduleId);
      expect(r.headers["upstash-topic-name"]).toBe("crew");
    }
    await client.schedules.delete(scheduleId);
    await client.urlGroups.delete("crew");
  });

  it("fires each tick exactly once across two processes, and catches up once after a gap", async () => {
    const rx = await receiver();
    const viaB = new Client({ baseUrl: b.url, token: TOKEN });
    const { scheduleId } = await viaB.schedules.create({
      destination: `${rx.url}/every-minute`,
      cron: "* * * * *",
    });
    const ticks: number[] = [];
    for (let i = 1; i <= 6; i++) {
      ticks.push(nextMinute(i * 7));
      await eventually(() => expect(rx.requests).toHaveLength(i));
      await eventually(async () =>
        expect((await client.schedules.get(scheduleId)).lastScheduleTime).toBe(ticks.at(-1)),
      );
    }
    const ids = new Set(rx.requests.map((r) => String(r.headers["upstash-message-id"])));
    expect(ids.size).toBe(6);
    expect(rx.requests.every((r) => r.signatureError === undefined)).toBe(true);

    // Ten minutes pass with no tick fired (as if every process was down): one catch-up fire.
    clock.t = Math.floor(clock.t / MIN) * MIN + 10 * MIN + 500;
    const latest = Math.floor(clock.t / MIN) * MIN;
    await eventually(() => expect(rx.requests).toHaveLength(7));
    await eventually(async () => {
      const s = await client.schedules.get(scheduleId);
      expect(s).toMatchObject({ lastScheduleTime: latest, nextScheduleTime: latest + MIN });
    });
    const created = await client.logs({ filter: { scheduleId, state: "CREATED" } });
    expect(created.logs).toHaveLength(7);
    expect(rx.requests).toHaveLength(7);
    await viaB.schedules.delete(scheduleId);
  });
});
