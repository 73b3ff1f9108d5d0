import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { destinationPolicy } from "../../src/queue/delivery/destination-policy.js";
import { eventually } from "../harness/eventually.js";
import { queueEnv, received, type QueueTestEnv } from "../queue/setup.js";

/**
 * Reliability scenario 5 (docs/reliability.md): the opt-in destination allow/deny list. Off by
 * default; refused URLs get a 400 at publish (destinations, callbacks, group endpoints,
 * schedules); names are checked again after DNS resolution at delivery.
 */
describe("destination policy settings", () => {
  it("allows everything by default", () => {
    const policy = destinationPolicy(loadConfig({}, {}));
    expect(policy.active).toBe(false);
    expect(() => policy.checkUrl("http://127.0.0.1:1/", "destination")).not.toThrow();
  });

  it("reads the private-networks switch as a boolean and refuses junk", () => {
    const env = { STASHD_QUEUE_DENY_PRIVATE_NETWORKS: "yes" };
    expect(loadConfig({}, env).queueDenyPrivateNetworks).toBe(true);
    expect(() => loadConfig({}, { STASHD_QUEUE_DENY_PRIVATE_NETWORKS: "maybe" })).toThrow(
      /STASHD_QUEUE_DENY_PRIVATE_NETWORKS/,
    );
    const bad = loadConfig({}, { STASHD_QUEUE_DESTINATION_DENY: "ok.example, 10.0.0.0/99" });
    expect(() => destinationPolicy(bad)).toThrow(/not a host name or CIDR: 10.0.0.0\/99/);
  });

  it("checks IPv4-mapped IPv6 literals as the IPv4 address they carry", () => {
    const policy = destinationPolicy(loadConfig({ queueDestinationDeny: "10.0.0.0/8" }, {}));
    expect(() => policy.checkUrl("http://[::ffff:10.0.0.1]/", "destination")).toThrow(
      /10\.0\.0\.1 is in a denied network/,
    );
    expect(() => policy.checkUrl("http://11.0.0.1/", "destination")).not.toThrow();
  });
});

async function publishStatus(
  env: QueueTestEnv,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const res = await env.api(`/v2/publish/${url}`, { method: "POST", body: "p", headers });
  return { status: res.status, body: await res.json() };
}

const refused = (pattern: RegExp) => ({
  status: 400,
  body: { error: expect.stringMatching(pattern) as unknown },
});

describe("deny list with private networks refused", () => {
  let env: QueueTestEnv;
  beforeAll(async () => {
    env = await queueEnv({
      queueDenyPrivateNetworks: true,
      queueDestinationDeny: "*.blocked.test, 203.0.113.0/24",
    });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("refuses private, loopback and denied destinations at publish", async () => {
    const privateAddress = refused(/^destination not allowed: .*(private|denied network)/);
    expect(await publishStatus(env, "http://127.0.0.1:1/x")).toEqual(privateAddress);
    expect(await publishStatus(env, "http://[::1]:1/x")).toEqual(privateAddress);
    expect(await publishStatus(env, "http://[::ffff:10.0.0.1]/x")).toEqual(privateAddress);
    expect(await publishStatus(env, "http://localhost:1/x")).toEqual(privateAddress);
    expect(await publishStatus(env, "http://203.0.113.9/x")).toEqual(privateAddress);
    expect(await publishStatus(env, "http://api.blocked.test/x")).toEqual(
      refused(/api\.blocked\.test is on the deny list/),
    );
  });

  it("refuses callbacks, group endpoints and schedules the same way", async () => {
    const cb = await publishStatus(env, "http://public.example/x", {
      "Upstash-Callback": "http://169.254.169.254/latest",
    });
    expect(cb).toEqual(refused(/169\.254\.169\.254/));
    const group = await env.api("/v2/topics/g1/endpoints", {
      method: "POST",
      body: JSON.stringify({ endpoints: [{ url: "http://10.1.2.3/hook" }] }),
    });
    expect(group.status).toBe(400);
    const schedule = await env.api("/v2/schedules/http://192.168.0.1/cron", {
      method: "POST",
      headers: { "Upstash-Cron": "* * * * *" },
    });
    expect(schedule.status).toBe(400);
    expect(await schedule.json()).toEqual({ error: expect.stringMatching(/192\.168\.0\.1/) });
  });

  it("refuses enqueues and batch items the same way", async () => {
    const enqueue = await env.api("/v2/enqueue/q1/http://10.0.0.5/x", {
      method: "POST",
      body: "e",
    });
    expect(enqueue.status).toBe(400);
    expect(await enqueue.json()).toEqual({ error: expect.stringMatching(/10\.0\.0\.5/) });
    const batch = await env.api("/v2/batch", {
      method: "POST",
      body: JSON.stringify([
        { destination: "http://127.0.0.1:1/b" },
        { destination: "http://public.example/b", headers: { "upstash-retries": "0" } },
      ]),
    });
    expect(batch.status).toBe(201);
    const items = (await batch.json()) as Record<string, unknown>[];
    expect(items[0]).toEqual({ error: expect.stringMatching(/^destination not allowed/) });
    expect(items[1]).toHaveProperty("messageId");
  });

  it("accepts a public destination", async () => {
    const ok = await publishStatus(env, "http://public.example/x", { "Upstash-Retries": "0" });
    expect(ok.status).toBe(201);
  });
});

describe("allow list", () => {
  let env: QueueTestEnv;
  beforeAll(async () => {
    env = await queueEnv({ queueDestinationAllow: "localhost" });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("delivers to an allowed name and refuses everything else at publish", async () => {
    const rx = await env.receiver();
    const url = `${rx.url.replace("127.0.0.1", "localhost")}/allowed`;
    expect((await publishStatus(env, url)).status).toBe(201);
    expect((await received(rx, 0)).url).toMatch(/\/allowed$/);
    expect(await publishStatus(env, `${rx.url}/by-ip`)).toEqual(
      refused(/127\.0\.0\.1 is not on the allow list/),
    );
    expect(await publishStatus(env, "http://other.example/x")).toEqual(
      refused(/other\.example is not on the allow list/),
    );
  });
});

describe("allow list by CIDR, checked after DNS resolution", () => {
  let env: QueueTestEnv;
  beforeAll(async () => {
    env = await queueEnv({ queueDestinationAllow: "10.0.0.0/8" });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("fails the delivery of a name that resolves outside the allowed networks", async () => {
    const rx = await env.receiver();
    const url = `${rx.url.replace("127.0.0.1", "localhost")}/resolved`;
    const res = await publishStatus(env, url, { "Upstash-Retries": "0" });
    expect(res.status).toBe(201);
    const logs = await eventually(async () => {
      const page = await env.client.logs({ filter: { state: "ERROR" } });
      expect(page.logs).toHaveLength(1);
      return page.logs;
    });
    expect(logs[0]?.error).toMatch(/destination not allowed: .* is not on the allow list/);
    expect(rx.requests).toEqual([]);
  });
});
