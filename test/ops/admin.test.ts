import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { openSse } from "../harness/sse.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { counter, metric } from "./helpers.js";

/** The admin listener of an in-process stashd with managed Redis servers. */
let s: TestStashd;
let admin: string;

beforeAll(async () => {
  s = await startStashd({ managedRestartMaxBackoffMs: 200 });
  admin = s.admin?.url ?? "";
});
afterAll(async () => {
  await s.stop();
});

function managedPid(...dir: string[]): number {
  return Number(readFileSync(path.join(s.dataDir, ...dir, "redis.pid"), "utf8"));
}

async function readyz(): Promise<{ status: number; body: { error?: string; checks: object } }> {
  const res = await fetch(`${admin}/readyz`);
  return { status: res.status, body: (await res.json()) as { error?: string; checks: object } };
}

describe("admin listener", () => {
  it("answers /healthz and /readyz without a token, on loopback", async () => {
    expect(new URL(admin).hostname).toBe("127.0.0.1");
    const health = await fetch(`${admin}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: "ready", checks: { "kv:default": "ok", queue: "ok", "queue-store": "ok" } },
    });
    expect((await fetch(`${admin}/nope`)).status).toBe(404);
  });

  it("turns not ready while a managed redis-server is down, then ready again", async () => {
    const restarts = await counter(admin, "stashd_managed_redis_restarts_total", {
      server: "default",
    });
    process.kill(managedPid("kv", "redis", "default"), "SIGKILL");
    const down = await eventually(async () => {
      const r = await readyz();
      expect(r.status).toBe(503);
      return r;
    });
    expect(down.body.error).toMatch(/^not ready: kv:default: /);
    expect(await metric(admin, "stashd_ready", { check: "all" })).toBeDefined();
    await eventually(async () => expect((await readyz()).status).toBe(200), { timeoutMs: 10_000 });
    expect(await counter(admin, "stashd_managed_redis_restarts_total", { server: "default" })).toBe(
      restarts + 1,
    );
  });

  it("reports the queue Redis in readiness too", async () => {
    process.kill(managedPid("queue-redis"), "SIGKILL");
    await eventually(async () => {
      const r = await readyz();
      expect(r.status).toBe(503);
      expect(r.body.error).toContain("queue: ");
    });
    await eventually(async () => expect((await readyz()).status).toBe(200), { timeoutMs: 10_000 });
    expect(await metric(admin, "stashd_ready", { check: "all" })).toBe(1);
  });

  it("counts KV requests by command and status, with a latency histogram", async () => {
    const labels = { service: "kv", route: "SET", status: "200" };
    const before = await counter(admin, "stashd_http_requests_total", labels);
    expect((await s.kvFetch("/", { body: '["SET","k","v"]' })).status).toBe(200);
    expect((await s.kvFetch("/set/k2/v")).status).toBe(200);
    await eventually(async () =>
      expect(await counter(admin, "stashd_http_requests_total", labels)).toBe(before + 2),
    );
    expect(
      await counter(admin, "stashd_http_request_duration_seconds_count", {
        service: "kv",
        route: "SET",
      }),
    ).toBeGreaterThanOrEqual(2);
    // An unknown command does not mint a label of its own.
    await s.kvFetch("/", { body: '["NOSUCHCMD123"]' });
    await eventually(async () =>
      expect(
        await counter(admin, "stashd_http_requests_total", {
          service: "kv",
          route: "other",
          status: "400",
        }),
      ).toBeGreaterThanOrEqual(1),
    );
    expect(await (await fetch(`${admin}/metrics`)).text()).not.toContain("NOSUCHCMD123");
  });

  it("tracks open SSE streams", async () => {
    const before = (await metric(admin, "stashd_sse_streams_open")) ?? 0;
    const stream = await openSse(`${s.kv.url}/subscribe/news`, s.kv.token);
    expect(await metric(admin, "stashd_sse_streams_open")).toBe(before + 1);
    stream.close();
    await eventually(async () =>
      expect(await metric(admin, "stashd_sse_streams_open")).toBe(before),
    );
  });

  it("counts backend errors when a Redis is unreachable", async () => {
    const before = await counter(admin, "stashd_backend_errors_total", { service: "kv" });
    process.kill(managedPid("kv", "redis", "default"), "SIGKILL");
    await eventually(async () => {
      expect((await s.kvFetch("/", { body: '["GET","k"]' })).status).toBe(503);
    });
    expect(await counter(admin, "stashd_backend_errors_total", { service: "kv" })).toBeGreaterThan(
      before,
    );
    await eventually(async () => expect((await readyz()).status).toBe(200), { timeoutMs: 10_000 });
  });

  it("serves process metrics and a mounted handler", async () => {
    expect(await metric(admin, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    s.admin?.mount("/extra", (_req, res) => res.end("extra here"));
    expect(await (await fetch(`${admin}/extra/x`)).text()).toBe("extra here");
  });
});
