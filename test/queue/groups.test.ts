import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, received, refreshKeys, type QueueTestEnv } from "./setup.js";

let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await env?.close();
});

describe("URL groups", () => {
  it("manages endpoints and deletes the group with its last endpoint", async () => {
    const a = await env.receiver();
    const b = await env.receiver();
    await env.client.urlGroups.addEndpoints({
      name: "g1",
      endpoints: [{ name: "a", url: `${a.url}/a` }, { url: `${b.url}/b` }],
    });
    const group = await env.client.urlGroups.get("g1");
    expect(group.name).toBe("g1");
    expect(group.endpoints).toEqual([{ name: "a", url: `${a.url}/a` }, { url: `${b.url}/b` }]);
    expect((await env.client.urlGroups.list()).map((g) => g.name)).toContain("g1");
    await env.client.urlGroups.removeEndpoints({ name: "g1", endpoints: [{ name: "a" }] });
    expect((await env.client.urlGroups.get("g1")).endpoints).toEqual([{ url: `${b.url}/b` }]);
    await env.client.urlGroups.removeEndpoints({ name: "g1", endpoints: [{ url: `${b.url}/b` }] });
    await expect(env.client.urlGroups.get("g1")).rejects.toThrow();
  });

  it("deletes idempotently: a missing group, and endpoints a group does not hold, answer 200", async () => {
    // qstash-py's suite: client.url_group.delete(name) before creating the group.
    await env.client.urlGroups.delete("never-made");
    const res = await env.api("/v2/topics/never-made", { method: "DELETE" });
    expect(res.status).toBe(200);
    const a = await env.receiver();
    await env.client.urlGroups.addEndpoints({ name: "keep", endpoints: [{ url: `${a.url}/k` }] });
    await env.client.urlGroups.removeEndpoints({ name: "keep", endpoints: [{ name: "absent" }] });
    expect((await env.client.urlGroups.get("keep")).endpoints).toEqual([{ url: `${a.url}/k` }]);
    await env.client.urlGroups.delete("keep");
    await env.client.urlGroups.delete("keep");
    await expect(env.client.urlGroups.get("keep")).rejects.toThrow();
  });

  it("fans out one signed message per endpoint with group default headers", async () => {
    const a = await env.receiver();
    const b = await env.receiver();
    await env.client.urlGroups.addEndpoints({
      name: "fan",
      endpoints: [
        { name: "ea", url: `${a.url}/x` },
        { name: "eb", url: `${b.url}/y` },
      ],
    });
    const patch = await env.api("/v2/topics/fan", {
      method: "PATCH",
      body: JSON.stringify({ headers: { "Upstash-Forward-X-Default": "dflt" } }),
    });
    expect(patch.status).toBe(200);
    const res = await env.client.publish({ urlGroup: "fan", body: "to all" });
    expect(Array.isArray(res)).toBe(true);
    const list = res as unknown as { messageId: string; url: string }[];
    expect(list.map((m) => m.url).sort()).toEqual([`${a.url}/x`, `${b.url}/y`].sort());
    for (const rx of [a, b]) {
      const got = await received(rx, 0);
      expect(got.signatureError).toBeUndefined();
      expect(got.headers["upstash-topic-name"]).toBe("fan");
      expect(got.headers["x-default"]).toBe("dflt");
      expect(got.body).toBe("to all");
    }
    await eventually(async () => {
      const logs = await env.client.logs({ filter: { urlGroup: "fan", state: "DELIVERED" } });
      expect(logs.logs).toHaveLength(2);
    });
    await env.client.urlGroups.delete("fan");
  });
});

describe("signing keys", () => {
  it("rotates: next becomes current and deliveries verify with the new keys", async () => {
    const before = (await (await env.api("/v2/keys")).json()) as { current: string; next: string };
    const rotated = await env.api("/v2/keys/rotate", { method: "POST" });
    const after = (await rotated.json()) as { current: string; next: string };
    expect(after.current).toBe(before.next);
    expect(after.next).toMatch(/^sig_[A-Za-z0-9]{28}$/);
    expect(after.next).not.toBe(before.next);
    await refreshKeys(env);
    const rx = await env.receiver();
    await env.client.publish({ url: `${rx.url}/k`, body: "k" });
    expect((await received(rx, 0)).signatureError).toBeUndefined();
    const alias = await env.api("/v2/rotate", { method: "POST" });
    expect(((await alias.json()) as { current: string }).current).toBe(after.next);
    await refreshKeys(env);
  });
});

describe("logs", () => {
  it("filters by state (IN_PROGRESS), label, url, date and pages with a cursor", async () => {
    const rx = await env.receiver();
    const start = Date.now();
    for (let i = 0; i < 3; i++) {
      await env.client.publish({ url: `${rx.url}/l`, body: `l${i}`, label: "logs" });
    }
    await eventually(() => expect(rx.requests).toHaveLength(3));
    await eventually(async () => {
      const delivered = await env.client.logs({ filter: { label: "logs", state: "DELIVERED" } });
      expect(delivered.logs).toHaveLength(3);
    });
    const page1 = await env.client.logs({ filter: { url: `${rx.url}/l`, count: 4 } });
    expect(page1.logs).toHaveLength(4);
    expect(page1.cursor).toBeDefined();
    const page2 = await env.client.logs({
      cursor: String(page1.cursor),
      filter: { url: `${rx.url}/l` },
    });
    expect(page2.logs).toHaveLength(5);
    expect(page2.cursor).toBeUndefined();
    const inProgress = await env.client.logs({ filter: { label: "logs", state: "IN_PROGRESS" } });
    expect(inProgress.logs.every((l) => l.state === "ACTIVE")).toBe(true);
    const none = await env.client.logs({ filter: { label: "logs", toDate: start - 1 } });
    expect(none.logs).toHaveLength(0);
    const raw = await env.api(`/v2/logs?label=logs&state=CREATED`);
    const body = (await raw.json()) as { logs: { time: number; url: string }[] };
    expect(body.logs).toHaveLength(3);
    expect(body.logs[0]?.url).toBe(`${rx.url}/l`);
  });

  it("redacts body and headers in the API but delivers real values", async () => {
    const rx = await env.receiver();
    const { messageId } = await env.client.publish({
      url: `${rx.url}/secret`,
      body: "secret body",
      headers: { Authorization: "Bearer s3cret", "X-Other": "visible" },
      delay: 1,
      redact: { body: true, header: ["Authorization"] },
    });
    const msg = await env.client.messages.get(messageId);
    expect(msg.body).toMatch(/^REDACTED:[0-9a-f]{64}$/);
    expect(msg.header?.["Authorization"]?.[0]).toMatch(/^REDACTED:/);
    expect(msg.header?.["X-Other"]).toEqual(["visible"]);
    const got = await received(rx, 0, 3000);
    expect(got.body).toBe("secret body");
    expect(got.headers["authorization"]).toBe("Bearer s3cret");
    const logs = await env.client.logs({ messageIds: [messageId] });
    expect(JSON.stringify(logs)).not.toContain("s3cret");
  });
});
