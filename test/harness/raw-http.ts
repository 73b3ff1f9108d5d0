import net from "node:net";
import { afterAll, beforeAll } from "vitest";
import type { StartOptions } from "../../src/index.js";
import { registry } from "../../src/shared/metrics.js";
import { eventually } from "./eventually.js";
import { startRedis, type TestRedis } from "./redis.js";
import { startStashd, type TestStashd } from "./stashd.js";

/**
 * Raw HTTP/1.1 on a socket, for tests of the fast lanes (src/shared/http/lane.ts) and of what
 * node:http does with the same bytes: requests built byte by byte, whole responses read back.
 */

/** A request's bytes: `POST path` with `headers` (Host and Content-Length added) and `body`. */
export function request(
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  method = "POST",
): Buffer {
  const bytes = Buffer.from(body);
  const lines = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (method !== "GET") lines.push(`Content-Length: ${bytes.length}`);
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), bytes]);
}

/**
 * A raw client connection: writes bytes, reads whole responses (Content-Length or chunked), and
 * tells when the server closed it.
 */
export class RawClient {
  /** What was read, joined when looked at (joining on each read would be quadratic). */
  private read: Buffer[] = [];
  closed = false;
  private readonly socket: net.Socket;

  constructor(port: number) {
    this.socket = net.connect(port, "127.0.0.1");
    this.socket.setNoDelay(true);
    this.socket.on("data", (chunk: Buffer) => {
      this.read.push(chunk);
    });
    this.socket.on("close", () => (this.closed = true));
    this.socket.on("error", () => undefined);
  }

  private get buf(): Buffer {
    if (this.read.length !== 1) this.read = [Buffer.concat(this.read)];
    return this.read[0] as Buffer;
  }

  private set buf(rest: Buffer) {
    this.read = [rest];
  }

  write(bytes: Buffer | string): void {
    this.socket.write(bytes);
  }

  end(): void {
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Stops reading responses (the server's writes then back up), or reads again. */
  reading(on: boolean): void {
    if (on) this.socket.resume();
    else this.socket.pause();
  }

  /** Every response once the server has closed the connection. */
  async untilClosed(timeoutMs = 5_000): Promise<Buffer[]> {
    await eventually(
      () => {
        if (!this.closed) throw new Error("still open");
      },
      { timeoutMs },
    );
    const out: Buffer[] = [];
    let at = 0;
    for (let end = responseEnd(this.buf, at); end !== undefined; end = responseEnd(this.buf, at)) {
      out.push(this.buf.subarray(at, end));
      at = end;
    }
    return out;
  }

  /**
   * The next `count` responses, whole, as raw bytes each. Responses are taken off the buffer as
   * they complete, so each poll joins only what came since: the server under test runs in this
   * process, and re-joining megabytes of answers on every poll starved it (the test for a client
   * that stops reading then reads 31 MiB).
   */
  async responses(count: number, timeoutMs = 5_000): Promise<Buffer[]> {
    const out: Buffer[] = [];
    return eventually(
      () => {
        const buf = this.buf;
        let at = 0;
        for (let end = responseEnd(buf, at); out.length < count && end !== undefined;) {
          out.push(buf.subarray(at, end));
          at = end;
          end = responseEnd(buf, at);
        }
        this.buf = buf.subarray(at);
        if (out.length < count) throw new Error(`${out.length} of ${count} responses so far`);
        return out;
      },
      { timeoutMs },
    );
  }
}

/** Where the response starting at `at` ends, or undefined while it is incomplete. */
export function responseEnd(buf: Buffer, at: number): number | undefined {
  const headEnd = buf.indexOf("\r\n\r\n", at, "latin1");
  if (headEnd === -1) return undefined;
  const head = buf.toString("latin1", at, headEnd);
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (length) {
    const end = headEnd + 4 + Number(length[1]);
    return end <= buf.length ? end : undefined;
  }
  if (!/\r\ntransfer-encoding: *chunked/i.test(head)) return headEnd + 4;
  let pos = headEnd + 4;
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", pos, "latin1");
    if (lineEnd === -1) return undefined;
    const size = parseInt(buf.toString("latin1", pos, lineEnd), 16);
    pos = lineEnd + 2 + size + 2;
    if (pos > buf.length) return undefined;
    if (size === 0) return pos;
  }
}

/** A lane's counter of requests it answered or handed over (this process's listeners). */
export async function laneCount(
  outcome: "answered" | "handed_over",
  service: "kv" | "queue" = "kv",
): Promise<number> {
  const metric = await registry.getSingleMetric(`stashd_${service}_fast_lane_total`)?.get();
  return metric?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/**
 * The lane's answers since `answeredBefore` (laneCount) once their count stops growing: for a
 * client that does not read, answered until the socket's buffers are full, then no more.
 */
export async function settledLaneAnswers(answeredBefore: number): Promise<number> {
  let last = -1;
  await eventually(
    async () => {
      const now = (await laneCount("answered")) - answeredBefore;
      const settled = now === last && now > 0;
      last = now;
      if (!settled) throw new Error(`${now} answered, still changing`);
    },
    { intervalMs: 200 },
  );
  return last;
}

/** Two KV gateways on one test Redis: `lane` with the fast lane, `plain` node:http alone. */
export function useLaneAndNode(options: StartOptions): {
  lane: () => TestStashd;
  plain: () => TestStashd;
  redis: () => TestRedis;
} {
  let redis: TestRedis | undefined;
  let lane: TestStashd | undefined;
  let plain: TestStashd | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    const common = { ...options, kvRedisUrl: redis.url, services: ["kv" as const] };
    lane = await startStashd(common);
    plain = await startStashd({ ...common, kvFastLane: false });
  });
  afterAll(async () => {
    await lane?.stop();
    await plain?.stop();
    await redis?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the gateways are not started yet");
    return value;
  };
  return { lane: () => started(lane), plain: () => started(plain), redis: () => started(redis) };
}

/** The KV port of a test gateway. */
export function portOf(s: TestStashd): number {
  return Number(new URL(s.kv.url).port);
}

/** A chunked body's chunks, joined. */
export function unchunk(body: string): string {
  let out = "";
  let pos = 0;
  for (;;) {
    const lineEnd = body.indexOf("\r\n", pos);
    const size = parseInt(body.slice(pos, lineEnd), 16);
    if (!(size > 0)) return out;
    out += body.slice(lineEnd + 2, lineEnd + 2 + size);
    pos = lineEnd + 2 + size + 2;
  }
}

/**
 * A response without what differs between any two (Date, the sync token), chunks joined. For a
 * request handed to node:http, also without the connection headers: a refusal before the body is
 * read closes the connection when node:http has not parsed the body yet, which it has once the
 * lane hands the request over whole (then it keeps the connection, as for any body read whole).
 */
export function comparable(raw: Buffer, handedOver = false): string {
  const text = raw.toString("latin1");
  const [head = "", ...rest] = text.split("\r\n\r\n");
  let body = rest.join("\r\n\r\n");
  if (/\r\ntransfer-encoding: chunked/i.test(head)) body = unchunk(body);
  const lines = head
    .split("\r\n")
    .filter((l) => !/^(date|upstash-sync-token):/i.test(l))
    .filter((l) => !handedOver || !/^(connection|keep-alive):/i.test(l))
    .map((l) => (/^content-length:/i.test(l) ? "content-length: *" : l));
  return `${lines.join("\n")}\n\n${body}`;
}

/** One request on a fresh connection, its raw response. */
export function once(s: TestStashd, bytes: Buffer): Promise<Buffer> {
  return onceOn(portOf(s), bytes);
}

/** One request on a fresh connection to `port`, its raw response. */
export async function onceOn(port: number, bytes: Buffer): Promise<Buffer> {
  const client = new RawClient(port);
  try {
    client.write(bytes);
    const [res] = await client.responses(1);
    return res as Buffer;
  } finally {
    client.destroy();
  }
}
