/**
 * Queue benchmark: `npm run bench:queue [-- --seconds N]`.
 *
 * One run on this machine, stashd (`bin/stashd start`, managed queue Redis with appendfsync
 * always, so every counted publish is on disk) and a local receiver as child processes:
 * - bare: an undici POST loop straight to the receiver, 1 and 50 connections (the ceiling);
 * - durable publishes/s at 1 and 50 connections (autocannon against /v2/publish/<receiver>);
 * - deliveries/s: a backlog released at once by a common Upstash-Not-Before, without and with a
 *   flow-control key whose limit never binds (the flow-control overhead);
 * - publish->delivery latency p50/p99 with no delay, one publish at a time.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { Pool } from "undici";
import { stopChild } from "../test/harness/redis.js";

const seconds = Number(process.argv[process.argv.indexOf("--seconds") + 1]) || 4;
const now = (): number => performance.timeOrigin + performance.now();

/** Receiver: 200 to everything; records publish->arrival latency from `X-Bench-T`. */
const RECEIVER = `
const http = require("node:http");
let count = 0; let lat = [];
const now = () => performance.timeOrigin + performance.now();
http.createServer((req, res) => {
  if (req.url === "/stats") { res.end(JSON.stringify({ count, lat })); count = 0; lat = []; return; }
  req.resume();
  req.on("end", () => {
    count++;
    const t = req.headers["x-bench-t"];
    if (t) lat.push(now() - Number(t));
    res.end("ok");
  });
}).listen(0, "127.0.0.1", function () { process.stdout.write(String(this.address().port) + "\\n"); });
`;

async function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve) =>
    child.stdout?.once("data", (d: Buffer) => resolve(d.toString().trim())),
  );
}

async function stats(url: string): Promise<{ count: number; lat: number[] }> {
  return (await (await fetch(`${url}/stats`)).json()) as { count: number; lat: number[] };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** `connections` concurrent POST loops through one undici Pool for `secs` seconds. */
async function bareLoop(url: string, connections: number, secs: number) {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections });
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

async function startStashd(dataDir: string) {
  const child = spawn(process.execPath, ["bin/stashd", "start", "--data-dir", dataDir], {
    env: { ...process.env, STASHD_KV_PORT: "0", STASHD_QUEUE_PORT: "0", STASHD_LOG_LEVEL: "warn" },
    stdio: "ignore",
  });
  for (let i = 0; i < 300; i++) {
    const out = spawnSync(
      process.execPath,
      ["bin/stashd", "credentials", "--json", "--data-dir", dataDir],
      {
        encoding: "utf8",
      },
    ).stdout;
    const creds = JSON.parse(out || "{}") as {
      running?: boolean;
      queue?: { url: string; token: string };
    };
    if (creds.running && creds.queue) return { child, ...creds.queue };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("stashd did not start");
}

async function publishLoad(base: string, token: string, target: string, connections: number) {
  const r = await autocannon({
    url: `${base}/v2/publish/${target}/load`,
    connections,
    duration: seconds,
    method: "POST",
    body: "hello",
    headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
  });
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(`publish: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

async function drain(rx: string, expected: number, timeoutMs: number): Promise<number> {
  let seen = 0;
  const end = Date.now() + timeoutMs;
  while (seen < expected && Date.now() < end) {
    seen += (await stats(rx)).count;
    await new Promise((r) => setTimeout(r, 50));
  }
  return seen;
}

async function deliveries(
  base: string,
  token: string,
  rx: string,
  n: number,
  rate: number,
  extra: Record<string, string> = {},
) {
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
  await stats(rx);
  const t = Date.now();
  const got = await drain(rx, n, 60_000);
  return got / ((Date.now() - t) / 1000);
}

async function latency(base: string, token: string, rx: string, samples: number) {
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
  await drain(rx, 0, 0);
  await new Promise((r) => setTimeout(r, 500));
  const lat = (await stats(rx)).lat.sort((a, b) => a - b);
  return { n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99) };
}

async function main(): Promise<void> {
  const receiver = spawn(process.execPath, ["-e", RECEIVER], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const rx = `http://127.0.0.1:${await firstLine(receiver)}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-queue-"));
  const stashd = await startStashd(dataDir);
  try {
    const bare1 = await bareLoop(rx, 1, seconds);
    const bare50 = await bareLoop(rx, 50, seconds);
    await stats(rx);
    const pub1 = await publishLoad(stashd.url, stashd.token, rx, 1);
    const pub50 = await publishLoad(stashd.url, stashd.token, rx, 50);
    await drain(rx, Number.MAX_SAFE_INTEGER, 3000);
    const n = Math.min(20_000, Math.max(2000, Math.round(pub50.rps * 2)));
    const dps = await deliveries(stashd.url, stashd.token, rx, n, pub50.rps);
    // Flow-control overhead: the same backlog under one key whose limit never binds.
    const dpsKey = await deliveries(stashd.url, stashd.token, rx, n, pub50.rps, {
      "upstash-flow-control-key": "bench",
      "upstash-flow-control-value": "parallelism=100000",
    });
    const lat = await latency(stashd.url, stashd.token, rx, 500);
    const f = (x: number) => x.toFixed(x < 10 ? 2 : 0);
    console.log(`| measure | value |\n|---|---|`);
    console.log(
      `| bare undici POST, 1 connection | ${f(bare1.rps)} req/s, p50 ${f(bare1.p50)} ms, p99 ${f(bare1.p99)} ms |`,
    );
    console.log(`| bare undici POST, 50 connections | ${f(bare50.rps)} req/s |`);
    console.log(
      `| durable publishes, 1 connection | ${f(pub1.rps)} /s, p50 ${pub1.p50} ms, p99 ${pub1.p99} ms |`,
    );
    console.log(
      `| durable publishes, 50 connections | ${f(pub50.rps)} /s, p50 ${pub50.p50} ms, p99 ${pub50.p99} ms |`,
    );
    console.log(
      `| deliveries (backlog of ${n}) | ${f(dps)} /s (${f((dps / bare50.rps) * 100)} % of bare 50) |`,
    );
    console.log(
      `| deliveries with a flow-control key (limit never reached) | ${f(dpsKey)} /s (${f((dpsKey / dps) * 100)} % of without) |`,
    );
    console.log(
      `| publish -> delivery latency (${lat.n} samples) | p50 ${f(lat.p50)} ms, p99 ${f(lat.p99)} ms |`,
    );
  } finally {
    await stopChild(stashd.child);
    receiver.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
