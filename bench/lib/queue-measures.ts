/**
 * Queue measurements the benches share (bench/queue.ts, bench/workers.ts): the bare undici POST
 * loop (the anchor of deliveries), a backlog released at once, and publish->delivery latency.
 */
import { Pool } from "undici";
import { stats, type Rate } from "./queue-parts.js";

const now = (): number => performance.timeOrigin + performance.now();

export function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** `connections` concurrent POST loops through one undici Pool for `secs` seconds. */
export async function bareLoop(url: string, connections: number, secs: number): Promise<Rate> {
  const pool = new Pool(new URL(url).origin, { connections });
  const lat: number[] = [];
  const end = Date.now() + secs * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        const t = now();
        const res = await pool.request({ path: "/bare", method: "POST", body: "x" });
        await res.body.dump();
        lat.push(now() - t);
      }
    }),
  );
  await pool.close();
  lat.sort((a, b) => a - b);
  return { rps: lat.length / secs, p50: pct(lat, 50), p99: pct(lat, 99) };
}

/**
 * Publishes `n` messages to `rx` with one common `Upstash-Not-Before` (far enough ahead for
 * publishing at `rate`/s to finish first) and waits until that moment: the backlog is then due
 * all at once. `extra` headers go on every publish.
 */
export async function publishBacklog(
  base: string,
  token: string,
  rx: string,
  n: number,
  rate: number,
  extra: Record<string, string> = {},
): Promise<void> {
  const pool = new Pool(base, { connections: 20 });
  const releaseAt = Math.ceil((Date.now() + (n / rate) * 1000 * 1.5 + 1500) / 1000);
  const headers = {
    authorization: `Bearer ${token}`,
    "upstash-not-before": String(releaseAt),
    ...extra,
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next++ < n) {
        const res = await pool.request({
          path: `/v2/publish/${rx}/d`,
          method: "POST",
          headers,
          body: "d",
        });
        await res.body.dump();
      }
    }),
  );
  await pool.close();
  const wait = releaseAt * 1000 - Date.now();
  if (wait < 0) throw new Error("publishing the backlog took longer than planned");
  await new Promise((r) => setTimeout(r, wait));
}

/** Publish->delivery latency of `samples` publishes, one at a time (the receiver measures). */
export async function latency(base: string, token: string, rx: string, samples: number) {
  const pool = new Pool(base, { connections: 1 });
  for (let i = 0; i < samples; i++) {
    const headers = {
      authorization: `Bearer ${token}`,
      "upstash-forward-x-bench-t": String(now()),
    };
    const res = await pool.request({
      path: `/v2/publish/${rx}/lat`,
      method: "POST",
      headers,
      body: "l",
    });
    await res.body.dump();
    await new Promise((r) => setTimeout(r, 2));
  }
  await pool.close();
  await new Promise((r) => setTimeout(r, 500));
  const lat = (await stats(rx)).lat.sort((a, b) => a - b);
  return { n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99) };
}
