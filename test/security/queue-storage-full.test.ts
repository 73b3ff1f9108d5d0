import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { testPool } from "../harness/redis.js";
import { queueEnv, received, type QueueTestEnv } from "../queue/setup.js";

/**
 * The queue had no bound on what it stores: a publisher in a loop (a bug, or a leaked queue
 * token) could grow the queue's Redis, 1 MB a message, until the kernel's OOM killer ended it or
 * stashd, and with it every message accepted so far. Now the queue reads its Redis's
 * `used_memory` every STASHD_QUEUE_ROOM_CHECK_MS and, past STASHD_QUEUE_MAX_DATA_BYTES, answers
 * API writes 507 while what it accepted is still delivered and retried.
 */

const MIB = 1024 * 1024;
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueMaxDataBytes: 4 * MIB, queueRoomCheckMs: 20 });
});
afterAll(async () => {
  await env?.close();
});

function publish(url: string, body: string, headers: Record<string, string> = {}) {
  return env.api(`/v2/publish/${url}`, { method: "POST", body, headers });
}

/** A publish that is never delivered during the test (an hour's delay, to a closed port). */
function publishElsewhere(): Promise<Response> {
  return publish("http://127.0.0.1:9/elsewhere", "x", { "upstash-delay": "1h" });
}

/** Publishes 256 KiB messages delayed an hour until one is refused; answers that answer. */
async function fillUntilRefused(url: string): Promise<Response> {
  const body = "m".repeat(256 * 1024);
  for (let i = 0; i < 200; i++) {
    const res = await publish(url, body, { "upstash-delay": "1h" });
    if (res.status !== 201) return res;
    await res.arrayBuffer();
    // Let the next reading of the store's memory happen (every 20 ms).
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("200 publishes of 256 KiB (50 MiB) were all accepted");
}

describe("a full queue store", () => {
  it("stops a publisher in a loop with a 507, and accepts again once cancels make room", async () => {
    const dest = await env.receiver();
    const refused = await fillUntilRefused(`${dest.url}/fill`);
    expect(refused.status).toBe(507);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /^the queue's storage is full: its Redis uses [\d.]+ MiB of the 4\.0 MiB it may \(STASHD_QUEUE_MAX_DATA_BYTES\)/,
    );
    // Reads go on.
    expect((await env.api("/v2/dlq")).status).toBe(200);
    const cancel = await env.api("/v2/messages", { method: "DELETE" });
    expect(cancel.status).toBe(200);
    await eventually(async () =>
      expect((await publish(`${dest.url}/again`, "x")).status).toBe(201),
    );
  });

  it("keeps delivering and retrying what it accepted while API writes are refused", async () => {
    const dest = await env.receiver();
    dest.status = 503;
    await publish(`${dest.url}/retry`, "accepted before", {
      "upstash-retries": "1",
      "upstash-retry-delay": "300",
    });
    await received(dest, 0);
    dest.status = 200;
    // Other data on the queue's Redis (a KV database sharing it, say) fills it past the limit.
    const admin = testPool(env.redis.url);
    try {
      await admin.exec(["SET", "other-data", Buffer.alloc(6 * MIB)]);
      await eventually(async () => expect((await publishElsewhere()).status).toBe(507));
      const batch = await env.api("/v2/batch", {
        method: "POST",
        body: JSON.stringify([{ destination: `${dest.url}/b`, body: "x" }]),
      });
      expect(batch.status).toBe(507);
      expect((await received(dest, 1)).body).toBe("accepted before");
      expect((await publishElsewhere()).status).toBe(507);
      await admin.exec(["DEL", "other-data"]);
      await eventually(async () => expect((await publishElsewhere()).status).toBe(201));
    } finally {
      await admin.close();
    }
  });
});
