import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import { eventually } from "../harness/eventually.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";

/**
 * A destination whose answer depends on the path: `/ok` 200 with a text body and an
 * `X-Reply` header, `/bin` 500 with a binary body, `/busy` 503 "busy"; anything else 200.
 */
export interface Destination {
  url: string;
  close(): Promise<void>;
}

export const BINARY_REPLY = Buffer.from([0xff, 0x00, 0xfe, 0x01, 0x80]);

export async function startDestination(): Promise<Destination> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/slow") return;
      if (path === "/bin") res.writeHead(500, { "x-reply": "binary" }).end(BINARY_REPLY);
      else if (path === "/busy") res.writeHead(503).end("busy");
      else res.writeHead(200, { "x-reply": "thanks" }).end("thanks: grüße");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** The messages the queue pages' tests look at, by role. */
export interface Seeded {
  delivered: string;
  failed: string;
  retrying: string;
  delayed: string;
}

/**
 * Seeds the queue: `bulk` delivered messages (batches of 100, labelled "bulk"), then one message
 * delivered with a text answer, one failing to the DLQ with a binary answer, one retrying (first
 * attempt answered 503, next attempt in 10 min) and one delayed by an hour (labelled "later").
 * Waits until the bulk is delivered and each one is in its state.
 */
export async function seedQueue(env: ConsoleEnv, dest: Destination, bulk: number): Promise<Seeded> {
  const client = env.q.client;
  for (let i = 0; i < bulk; i += 100) {
    const n = Math.min(100, bulk - i);
    await client.batchJSON(
      Array.from({ length: n }, (_, j) => ({
        url: `${dest.url}/ok`,
        body: { n: i + j },
        label: "bulk",
      })),
    );
  }
  const delivered = (
    await client.publishJSON({ url: `${dest.url}/ok`, body: { hello: "wörld" }, label: "seed" })
  ).messageId;
  const failed = (
    await client.publish({
      url: `${dest.url}/bin`,
      body: "please fail",
      retries: 0,
      headers: { "x-seed": "failed" },
    })
  ).messageId;
  const retrying = (
    await client.publishJSON({
      url: `${dest.url}/busy`,
      body: { try: "again" },
      retries: 3,
      retryDelay: "600000",
    })
  ).messageId;
  const delayed = (
    await client.publishJSON({
      url: `${dest.url}/ok`,
      body: { later: true },
      delay: 3600,
      label: "later",
    })
  ).messageId;
  await eventually(
    async () => {
      const res = await env.q.api("/v2/dlq");
      const dlq = (await res.json()) as { messages: { messageId: string }[] };
      expect(dlq.messages.map((m) => m.messageId)).toContain(failed);
      const r = await env.q.api(`/v2/events?messageId=${retrying}&state=RETRY`);
      expect(((await r.json()) as { events: unknown[] }).events).toHaveLength(1);
      const d = await env.q.api(`/v2/events?messageId=${delivered}&state=DELIVERED`);
      expect(((await d.json()) as { events: unknown[] }).events).toHaveLength(1);
    },
    { timeoutMs: 30_000 },
  );
  return { delivered, failed, retrying, delayed };
}

/**
 * How long a console page takes to show `ready` after its hash is set in a logged-in tab: from
 * setting `location.hash` to the element being visible, measured by the test (node side).
 */
export async function renderMs(
  page: import("playwright-core").Page,
  hash: string,
  ready: import("playwright-core").Locator,
): Promise<number> {
  // Start from a page that loads nothing of the queue's lists.
  await page.evaluate(setHash, "#/signing-keys");
  const t0 = performance.now();
  await page.evaluate(setHash, hash);
  await ready.waitFor();
  return Math.round(performance.now() - t0);
}

/** Runs in the page: goes to hash `h` (the test's tsconfig has no DOM types). */
function setHash(h: string): void {
  (globalThis as unknown as { location: { hash: string } }).location.hash = h;
}

/** A console on a seeded queue (seedQueue) with a logged-in tab; `close` stops it all. */
export interface SeededConsole {
  env: ConsoleEnv;
  dest: Destination;
  seed: Seeded;
  page: import("playwright-core").Page;
  close(): Promise<void>;
}

/** Starts a console, a destination and seeds `bulk` messages; `more` adds to the seed first. */
export async function seededConsole(
  bulk: number,
  more?: (env: ConsoleEnv, dest: Destination) => Promise<void>,
): Promise<SeededConsole> {
  const env = await consoleEnv();
  const dest = await startDestination();
  const seed = await seedQueue(env, dest, bulk);
  await more?.(env, dest);
  const page = await env.newPage();
  await env.login(page);
  return {
    env,
    dest,
    seed,
    page,
    close: async () => {
      await dest.close();
      await env.close();
    },
  };
}
