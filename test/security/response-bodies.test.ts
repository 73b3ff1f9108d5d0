import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

/**
 * Issue 25, hole 8: a destination's response body is read only up to a cap and kept in logs and
 * the DLQ cut to STASHD_QUEUE_LOGGED_RESPONSE_BYTES, marked `responseBodyTruncated`; callbacks
 * still carry up to the message size; listings end a page at STASHD_QUEUE_PAGE_MAX_BYTES.
 */
const KEPT = 1024;
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueLoggedResponseBytes: KEPT, queuePageMaxBytes: 8 * 1024 });
});
afterAll(async () => {
  await env?.close();
});

interface HugeDestination {
  url: string;
  /** Per answered request: whether the whole body was taken by the client. */
  finished: boolean[];
  close(): Promise<void>;
}

/** A destination answering `status` with `bytes` bytes, written in 64 KiB pieces with backpressure. */
async function hugeDestination(bytes: number, status = 200): Promise<HugeDestination> {
  const finished: boolean[] = [];
  const piece = Buffer.alloc(64 * 1024, 98);
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(status, { "content-length": String(bytes) });
    let left = bytes;
    const index = finished.push(false) - 1;
    res.on("finish", () => (finished[index] = true));
    const pump = (): void => {
      while (left > 0 && !res.destroyed) {
        const n = Math.min(left, piece.length);
        left -= n;
        if (!res.write(n === piece.length ? piece : piece.subarray(0, n))) {
          res.once("drain", pump);
          return;
        }
      }
      if (left === 0) res.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    finished,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Event {
  messageId: string;
  state: string;
  responseBody?: string;
  responseBodyTruncated?: boolean;
}

async function events(query: string): Promise<{ events: Event[]; cursor?: string }> {
  return (await (await env.api(`/v2/events?${query}`)).json()) as {
    events: Event[];
    cursor?: string;
  };
}

async function publish(path: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await env.api(`/v2/publish/${path}`, { method: "POST", body: "x", headers });
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

describe("destination response bodies", () => {
  it("reads a huge response only up to the cap, closes the connection, logs it cut and marked", async () => {
    const dest = await hugeDestination(200 * 1024 * 1024);
    try {
      const id = await publish(`${dest.url}/huge`);
      const delivered = await eventually(
        async () => {
          const e = (await events(`messageId=${id}&state=DELIVERED`)).events[0];
          expect(e).toBeDefined();
          return e as Event;
        },
        { timeoutMs: 10_000 },
      );
      expect(Buffer.from(delivered.responseBody ?? "", "base64")).toEqual(Buffer.alloc(KEPT, 98));
      expect(delivered.responseBodyTruncated).toBe(true);
      // stashd stopped reading long before the 200 MiB were sent.
      await eventually(() => expect(dest.finished).toEqual([false]));
      expect((await fetch(`${env.stashd.admin?.url ?? ""}/healthz`)).status).toBe(200);
    } finally {
      await dest.close();
    }
  });

  it("a callback carries the response up to the message size while the log keeps the cap", async () => {
    const size = 100 * 1024;
    const dest = await hugeDestination(size);
    const cb = await env.receiver();
    try {
      const id = await publish(`${dest.url}/cb`, { "Upstash-Callback": `${cb.url}/cb` });
      await eventually(() => expect(cb.requests).toHaveLength(1), { timeoutMs: 10_000 });
      const payload = JSON.parse(cb.requests[0]?.body ?? "{}") as { body: string };
      expect(Buffer.from(payload.body, "base64")).toEqual(Buffer.alloc(size, 98));
      expect(dest.finished).toEqual([true]);
      const e = (await events(`messageId=${id}&state=DELIVERED`)).events[0];
      expect(Buffer.from(e?.responseBody ?? "", "base64")).toHaveLength(KEPT);
      expect(e?.responseBodyTruncated).toBe(true);
    } finally {
      await dest.close();
    }
  });

  it("keeps a failed message's response in the DLQ cut to the cap, marked", async () => {
    const dest = await hugeDestination(300 * 1024, 500);
    try {
      const id = await publish(`${dest.url}/dlq`, { "Upstash-Retries": "0" });
      const entry = await eventually(
        async () => {
          const list = (await (await env.api("/v2/dlq")).json()) as {
            messages: {
              messageId: string;
              responseBody?: string;
              responseBodyTruncated?: boolean;
            }[];
          };
          const found = list.messages.find((m) => m.messageId === id);
          expect(found).toBeDefined();
          return found;
        },
        { timeoutMs: 10_000 },
      );
      expect(entry?.responseBody).toBe("b".repeat(KEPT));
      expect(entry?.responseBodyTruncated).toBe(true);
    } finally {
      await dest.close();
    }
  });

  it("ends a listing page at the byte budget and continues with the cursor", async () => {
    const dest = await hugeDestination(4 * 1024);
    try {
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push(await publish(`${dest.url}/page${i}`));
      const all = new Set(ids);
      await eventually(
        async () => {
          const seen = new Set<string>();
          let cursor: string | undefined;
          let pages = 0;
          do {
            const page = await events(
              `state=DELIVERED&count=50${cursor ? `&cursor=${cursor}` : ""}`,
            );
            // Each event keeps about 1.4 KB of base64 body: an 8 KiB page holds a few, not 50.
            expect(page.events.length).toBeLessThanOrEqual(8);
            for (const e of page.events) {
              expect(seen.has(e.messageId)).toBe(false);
              seen.add(e.messageId);
            }
            cursor = page.cursor;
            pages++;
          } while (cursor);
          for (const id of all) expect(seen.has(id)).toBe(true);
          expect(pages).toBeGreaterThan(1);
        },
        { timeoutMs: 10_000 },
      );
    } finally {
      await dest.close();
    }
  });
});
