import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

/**
 * Issue 25, hole 7: a publish cannot multiply without end. A URL group naming stashd's own queue
 * listener is refused, a publish arriving on a delivery too many hops deep (`Upstash-Hop`,
 * STASHD_QUEUE_MAX_HOPS) is refused, and a URL group has at most
 * STASHD_QUEUE_MAX_URL_GROUP_ENDPOINTS endpoints.
 */
const MAX_HOPS = 3;
const MAX_ENDPOINTS = 5;
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueMaxHops: MAX_HOPS, queueMaxUrlGroupEndpoints: MAX_ENDPOINTS });
});
afterAll(async () => {
  await env?.close();
});

async function addEndpoints(group: string, urls: string[]): Promise<Response> {
  return env.api(`/v2/topics/${group}/endpoints`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ endpoints: urls.map((url) => ({ url })) }),
  });
}

async function healthy(): Promise<void> {
  const res = await fetch(`${env.stashd.admin?.url ?? ""}/healthz`);
  expect(res.status).toBe(200);
  expect((await env.api("/v2/topics")).status).toBe(200);
}

describe("publish amplification", () => {
  it("refuses a URL group endpoint or destination that is stashd's own queue listener", async () => {
    const port = env.stashd.queue.port;
    const own = [
      `http://127.0.0.1:${port}/v2/publish/loop?qstash_token=${env.stashd.queue.token}`,
      `http://localhost:${port}/v2/publish/loop`,
      `http://[::1]:${port}/v2/publish/loop`,
      `http://0.0.0.0:${port}/v2/publish/loop`,
    ];
    for (const url of own) {
      const res = await addEndpoints("loop", [url, "http://127.0.0.1:9/other"]);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(
        /own queue listener \(a publish to itself would loop\)/,
      );
    }
    expect((await env.api("/v2/topics/loop")).status).toBe(404);
    const direct = await env.api(`/v2/publish/http://127.0.0.1:${port}/v2/publish/x`, {
      method: "POST",
      body: "x",
    });
    expect(direct.status).toBe(400);
    await healthy();
  });

  it("stops a loop through a relay after STASHD_QUEUE_MAX_HOPS hops", async () => {
    // A relay that publishes every delivery it gets back to the group, passing Upstash-Hop on:
    // a two-endpoint group pointing at it doubles the messages on every round.
    const outcomes: { hop: string; status: number; error?: string }[] = [];
    const relay = http.createServer((req, res) => {
      req.resume();
      const hop = String(req.headers["upstash-hop"] ?? "");
      res.end("ok");
      void env
        .api("/v2/publish/relayed", { method: "POST", body: "x", headers: { "upstash-hop": hop } })
        .then(async (r) => {
          const body = (await r.json()) as { error?: string };
          outcomes.push({ hop, status: r.status, ...(body.error ? { error: body.error } : {}) });
        });
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
      expect((await addEndpoints("relayed", [`${url}/a`, `${url}/b`])).status).toBe(200);
      const first = await env.api("/v2/publish/relayed", { method: "POST", body: "x" });
      expect(first.status).toBe(201);
      // Rounds: 2 deliveries (hop 1) and 4 (hop 2) publish again; the 8 at hop 3 are refused.
      await eventually(() => expect(outcomes).toHaveLength(2 + 4 + 8), { timeoutMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(outcomes).toHaveLength(14);
      const refused = outcomes.filter((o) => o.status === 400);
      expect(refused).toHaveLength(8);
      expect(refused.every((o) => o.hop === "3")).toBe(true);
      expect(refused[0]?.error).toMatch(/3 stashd hops deep \(STASHD_QUEUE_MAX_HOPS is 3\)/);
      expect(outcomes.filter((o) => o.status === 201)).toHaveLength(6);
      await healthy();
    } finally {
      relay.closeAllConnections();
      await new Promise((resolve) => relay.close(resolve));
    }
  });

  it("deliveries carry Upstash-Hop, one more than the publish they came from", async () => {
    const rx = await env.receiver();
    expect(
      (
        await env.api(`/v2/publish/${rx.url}/h`, {
          method: "POST",
          body: "h",
          headers: { "upstash-hop": "1" },
        })
      ).status,
    ).toBe(201);
    await eventually(() => expect(rx.requests).toHaveLength(1));
    expect(rx.requests[0]?.headers["upstash-hop"]).toBe("2");
  });

  it("limits the endpoints of a URL group", async () => {
    const urls = (n: number, from = 0) =>
      Array.from({ length: n }, (_, i) => `http://127.0.0.1:9/e${from + i}`);
    const tooMany = await addEndpoints("big", urls(MAX_ENDPOINTS + 1));
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: string }).error).toBe(
      `a url group may have at most ${MAX_ENDPOINTS} endpoints (STASHD_QUEUE_MAX_URL_GROUP_ENDPOINTS)`,
    );
    expect((await addEndpoints("big", urls(3))).status).toBe(200);
    // Updating existing endpoints adds none; three new ones would make six.
    expect((await addEndpoints("big", urls(3))).status).toBe(200);
    const more = await addEndpoints("big", urls(3, 3));
    expect(more.status).toBe(400);
    const group = (await (await env.api("/v2/topics/big")).json()) as { endpoints: unknown[] };
    expect(group.endpoints).toHaveLength(3);
    expect((await addEndpoints("big", urls(2, 3))).status).toBe(200);
    await healthy();
  });
});
