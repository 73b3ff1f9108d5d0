/**
 * Parts the queue benches share: the receiver child, starting a stashd child and reading its
 * queue credentials, and a publish load.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runLoad } from "../http-load.js";

/**
 * Receiver: 200 to everything; records publish->arrival latency from `X-Bench-T`, and the arrival
 * time (Date.now(): the wall clock all processes share) of every request carrying
 * `Upstash-Schedule-Id` with that id.
 */
const RECEIVER = `
const http = require("node:http");
let count = 0; let lat = []; let ticks = [];
const now = () => performance.timeOrigin + performance.now();
http.createServer((req, res) => {
  if (req.url === "/stats") {
    res.end(JSON.stringify({ count, lat, ticks })); count = 0; lat = []; ticks = []; return;
  }
  req.resume();
  req.on("end", () => {
    count++;
    const t = req.headers["x-bench-t"];
    if (t) lat.push(now() - Number(t));
    const s = req.headers["upstash-schedule-id"];
    if (s) ticks.push({ id: s, at: Date.now() });
    res.end("ok");
  });
}).listen(0, "127.0.0.1", function () { process.stdout.write(String(this.address().port) + "\\n"); });
`;

export interface Rate {
  rps: number;
  p50: number;
  p99: number;
}

async function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve) =>
    child.stdout?.once("data", (d: Buffer) => resolve(d.toString().trim())),
  );
}

/** Starts the receiver child; its URL and the child (to stop it). */
export async function startReceiverChild(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["-e", RECEIVER], { stdio: ["ignore", "pipe", "ignore"] });
  return { url: `http://127.0.0.1:${await firstLine(child)}`, child };
}

/** What the receiver saw since the last call (see RECEIVER). */
export interface ReceiverStats {
  count: number;
  /** Publish->arrival latencies (ms) of requests with `X-Bench-T`. */
  lat: number[];
  /** Arrivals of schedule deliveries: the schedule id, and when (wall clock, ms). */
  ticks: { id: string; at: number }[];
}

/** Arrivals since the last call (and forgets them). */
export async function stats(url: string): Promise<ReceiverStats> {
  return (await (await fetch(`${url}/stats`)).json()) as ReceiverStats;
}

/** Counts arrivals until `expected` arrived or `timeoutMs` passed. */
export async function drain(rx: string, expected: number, timeoutMs: number): Promise<number> {
  let seen = 0;
  const end = Date.now() + timeoutMs;
  while (seen < expected && Date.now() < end) {
    seen += (await stats(rx)).count;
    await new Promise((r) => setTimeout(r, 50));
  }
  return seen;
}

/**
 * Starts `bin start` on `dataDir` (ports chosen by the OS, `env` added) and waits until its
 * credentials say it runs; the queue's URL and token, and the admin URL (metrics).
 */
export async function startQueueChild(
  bin: string,
  dataDir: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<{
  child: ChildProcess;
  url: string;
  token: string;
  admin?: string;
  /** The KV gateway's URL and its `default` database's token. */
  kv?: { url: string; token: string };
}> {
  const child = spawn(process.execPath, [...nodeArgs, bin, "start", "--data-dir", dataDir], {
    env: {
      ...process.env,
      STASHD_KV_PORT: "0",
      STASHD_QUEUE_PORT: "0",
      STASHD_ADMIN_PORT: "0",
      STASHD_LOG_LEVEL: "warn",
      // One process, as before issue 29: these benches read CPU and memory of this pid, and
      // compare builds with their earlier figures. bench/workers.ts measures worker counts.
      STASHD_WORKERS: "1",
      ...env,
    },
    // stderr shown: a child that fails to start says why.
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (let i = 0; i < 300; i++) {
    const args = [bin, "credentials", "--json", "--data-dir", dataDir];
    const out = spawnSync(process.execPath, args, { encoding: "utf8" }).stdout;
    const creds = JSON.parse(out || "{}") as {
      running?: boolean;
      queue?: { url: string; token: string };
      admin?: { url: string };
      kv?: { url: string; databases: { token: string }[] };
    };
    if (creds.running && creds.queue) {
      const kv = creds.kv && { url: creds.kv.url, token: creds.kv.databases[0]?.token ?? "" };
      return {
        child,
        ...creds.queue,
        ...(creds.admin ? { admin: creds.admin.url } : {}),
        ...(kv ? { kv } : {}),
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("stashd did not start");
}

/**
 * Publishes to `target` at `connections` for `seconds`; every answer must be a 2xx. `headers`
 * are added to every publish (e.g. an `Upstash-Delay`). The load comes from wrk when it is
 * installed (bench/http-load.ts): it shares the two cores with stashd, its Redis and the
 * receiver, and costs them a fraction of what a Node load generator does.
 */
export async function publishLoad(
  base: string,
  token: string,
  target: string,
  connections: number,
  seconds: number,
  headers: Record<string, string> = {},
): Promise<Rate & { total: number }> {
  // wrk's request script goes into a directory of this run, removed afterwards.
  const scratch = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-load-"));
  const r = await runLoad(
    {
      url: `${base}/v2/publish/${target}/load`,
      connections,
      seconds,
      method: "POST",
      body: "hello",
      headers: { authorization: `Bearer ${token}`, "content-type": "text/plain", ...headers },
    },
    scratch,
  ).finally(() => rmSync(scratch, { recursive: true, force: true }));
  return { rps: r.rps, p50: r.p50, p99: r.p99, total: r.requests };
}

/** The Node.js memory gauges of a stashd's admin `/metrics` (prom-client's defaults), in MB. */
export async function nodeMemoryMb(admin: string): Promise<{ heapUsed: number; external: number }> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const gauge = (name: string): number =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, "m").exec(text)?.[1]) / 2 ** 20;
  return {
    heapUsed: gauge("nodejs_heap_size_used_bytes"),
    external: gauge("nodejs_external_memory_bytes"),
  };
}

/** The managed queue Redis's pid (its pid file under a stashd data directory). */
export function queueRedisPid(dataDir: string): number | undefined {
  try {
    return (
      Number(readFileSync(path.join(dataDir, "queue-redis", "redis.pid"), "utf8")) || undefined
    );
  } catch {
    return undefined;
  }
}
