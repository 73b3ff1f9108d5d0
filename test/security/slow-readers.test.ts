import net from "node:net";
import { describe, expect, it } from "vitest";
import { SETTINGS } from "../../src/config/schema.js";
import { eventually } from "../harness/eventually.js";
import { command, useGateway } from "../kv/helpers.js";

/**
 * Issue 11, KV (docs/reliability.md): large replies held for clients that read slowly or not at
 * all are bounded process-wide (STASHD_KV_MAX_BUFFERED_REPLY_BYTES); past the budget a new large
 * reply is answered 503 with a JSON error, small replies still go out, and a client that takes
 * nothing of its reply for the request deadline is cut off, which frees its share.
 */
const SIZE = SETTINGS.kvMaxReplyBytes.default - 100;
const STALL_MS = 2000;
const { stashd } = useGateway({
  // Room for two replies of SIZE, not three.
  kvMaxBufferedReplyBytes: Math.floor(2.5 * SIZE),
  requestTimeoutMs: STALL_MS,
});

/** A GET of big:v (base64, ~21 MB of JSON) on a raw socket that never reads past the headers. */
function stalledReader(): {
  started: Promise<void>;
  destroy: () => void;
  /** Reads what is left; resolves with the bytes read once the server has closed. */
  drain: () => Promise<number>;
} {
  const s = stashd();
  const sock = net.connect(s.kv.port, "127.0.0.1");
  sock.on("error", () => undefined);
  sock.write(
    `GET /get/big:v HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${s.kv.readonlyToken}\r\n` +
      "upstash-encoding: base64\r\n\r\n",
  );
  sock.pause();
  return {
    started: new Promise((resolve) => sock.once("readable", () => resolve())),
    destroy: () => sock.destroy(),
    drain: () =>
      new Promise((resolve) => {
        let bytes = 0;
        sock.on("data", (d: Buffer) => (bytes += d.length));
        sock.once("close", () => resolve(bytes));
        sock.resume();
      }),
  };
}

async function getBig(): Promise<{ status: number; text: string }> {
  const res = await stashd().kvFetch("/get/big:v", { method: "GET" });
  return { status: res.status, text: await res.text() };
}

describe("slow readers of large replies", () => {
  it("bounds the bytes held for them, refuses past it with 503, and cuts off stalled ones", async () => {
    await command(stashd(), ["SETRANGE", "big:v", String(SIZE - 1), "x"]);
    await command(stashd(), ["SET", "small", "ok"]);
    const a = stalledReader();
    const b = stalledReader();
    await Promise.all([a.started, b.started]);

    const refused = await getBig();
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text)).toEqual({
      error: expect.stringMatching(
        /^ERR too many large replies in flight: \d+ bytes are held .* \(STASHD_KV_MAX_BUFFERED_REPLY_BYTES\); retry later$/,
      ) as unknown,
    });
    expect(await command(stashd(), ["GET", "small"])).toEqual({
      status: 200,
      body: { result: "ok" },
    });

    // A reader that goes away frees its share at once.
    a.destroy();
    await eventually(async () => expect((await getBig()).status).toBe(200));

    // Stalled ones are cut off after the request deadline (a paused socket cannot see that
    // until it reads), which frees their share.
    b.destroy();
    const c = stalledReader();
    const d = stalledReader();
    await Promise.all([c.started, d.started]);
    const cutOff = performance.now();
    expect((await getBig()).status).toBe(503);
    await eventually(async () => expect((await getBig()).status).toBe(200), {
      timeoutMs: 10 * STALL_MS,
      intervalMs: 200,
    });
    const ms = Math.round(performance.now() - cutOff);
    const [bytesC, bytesD] = await Promise.all([c.drain(), d.drain()]);
    console.log(
      `[reliability] issue 11: 2 stalled readers of a ${SIZE}-byte reply cut off after ~${ms} ms ` +
        `(deadline ${STALL_MS} ms), having received ${bytesC} and ${bytesD} bytes`,
    );
    expect(ms).toBeGreaterThanOrEqual(STALL_MS - 100);
    expect(Math.max(bytesC, bytesD)).toBeLessThan(SIZE);
  });

  it("cuts off a read-only subscriber that does not read once its backlog passes the limits", async () => {
    const s = stashd();
    const sock = net.connect(s.kv.port, "127.0.0.1");
    sock.on("error", () => undefined);
    sock.write(
      `GET /subscribe/sr:ch HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${s.kv.readonlyToken}\r\n\r\n`,
    );
    sock.pause();
    const subscribers = async (): Promise<unknown> =>
      ((await command(s, ["PUBSUB", "NUMSUB", "sr:ch"])).body as { result: unknown[] }).result[1];
    await eventually(async () => expect(await subscribers()).toBe(1));
    // 40 messages of 1 MiB: far past what one stream may leave unsent (STASHD_KV_MAX_REPLY_BYTES)
    // and what the kernel's socket buffers take.
    const payload = "m".repeat(1024 * 1024);
    for (let i = 0; i < 40 && (await subscribers()) === 1; i++) {
      expect((await command(s, ["PUBLISH", "sr:ch", payload])).status).toBe(200);
    }
    // Cut off: its backend subscription is gone and its bytes are no longer counted.
    await eventually(async () => expect(await subscribers()).toBe(0));
    expect((await getBig()).status).toBe(200);
    sock.destroy();
  });
});
