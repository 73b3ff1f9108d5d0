import { spawn } from "node:child_process";
import type { RedisPool } from "../../src/shared/redis/pool.js";

/** Tools of the bounded flood tests (test/security/kv-*.test.ts), loopback only. */

/** connected_clients and blocked_clients of INFO clients, read on `watch`. */
export async function redisClients(
  watch: RedisPool,
): Promise<{ connected: number; blocked: number }> {
  const reply = await watch.exec(["INFO", "clients"]);
  const text = reply.kind === "bulk" ? reply.value.toString() : "";
  return {
    connected: Number(/connected_clients:(\d+)/.exec(text)?.[1]),
    blocked: Number(/blocked_clients:(\d+)/.exec(text)?.[1]),
  };
}

/** Samples `redisClients` every few ms until `stop` is called, which resolves with the maxima. */
export function sampleClients(watch: RedisPool): {
  stop: () => Promise<{ connected: number; blocked: number }>;
} {
  const max = { connected: 0, blocked: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = await redisClients(watch);
      max.connected = Math.max(max.connected, now.connected);
      max.blocked = Math.max(max.blocked, now.blocked);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return max;
    },
  };
}

export interface FloodOutcome {
  /** Index of the token (and body) that request used: request i uses i % tokens.length. */
  token: number;
  /** 0 when the request failed or its client went away before an answer. */
  status: number;
  retryAfter: string | undefined;
  body: string;
  ms: number;
}

export interface Flood {
  url: string;
  tokens: string[];
  /** The POST body of each token's requests. */
  bodies: string[];
  count: number;
  /** Every this many requests, the client goes away 300 ms in (0: none does). */
  abortEvery?: number;
}

/**
 * The flood runs in a child process, one connection per request (no agent), so it really is
 * concurrent and does not share the in-process stashd's event loop (nor the timings taken there).
 * The child prints the outcomes as one JSON array.
 */
const FLOOD_SCRIPT = `
const { url, tokens, bodies, count, abortEvery } = JSON.parse(process.argv[1]);
const one = (i) => new Promise((resolve) => {
  const token = i % tokens.length;
  const started = performance.now();
  const done = (o) => resolve({ token, ms: performance.now() - started, ...o });
  const req = http.request(url, { method: "POST", agent: false,
    headers: { authorization: "Bearer " + tokens[token], "content-type": "application/json" } });
  req.on("response", (res) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (d) => (text += d));
    res.on("end", () => done({ status: res.statusCode, retryAfter: res.headers["retry-after"], body: text }));
  });
  req.on("error", (err) => done({ status: 0, body: String(err) }));
  req.end(bodies[token]);
  if (abortEvery > 0 && i % abortEvery === abortEvery - 1) setTimeout(() => req.destroy(), 300);
});
const all = await Promise.all(Array.from({ length: count }, (_, i) => one(i)));
process.stdout.write(JSON.stringify(all));
`;

export function floodInChild(flood: Flood): Promise<FloodOutcome[]> {
  const args = JSON.stringify({ abortEvery: 0, ...flood });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", FLOOD_SCRIPT, args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(out) as FloodOutcome[])
        : reject(new Error(`flood exit ${code}`)),
    );
  });
}
