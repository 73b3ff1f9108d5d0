/**
 * How much one huge pipeline holds up other requests: `npx tsx bench/kv-pipeline-stall.ts
 * [--commands N] [--runs N] [--transaction] [--cpu-prof DIR] [--stashd PATH]` (`npm run build`
 * first).
 *
 * One stashd child (default limits) on one redis-server started here. For each run: sequential
 * `/ping` requests for one second alone (the same-run baseline), then while one `/pipeline` of
 * N PINGs (default: the documented command cap) is sent, run and read (`--transaction`: one
 * `/multi-exec` of them). Prints the pipeline's
 * time and the pings' p50 / p99 / max for both phases, per run and pooled. The pipeline's reply
 * is read as bytes (never parsed here), so the bench's own loop stays free for the pings.
 * `--cpu-prof DIR` makes the stashd child write a V8 CPU profile there when it stops.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SETTINGS } from "../src/config/schema.js";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { startStashdChild } from "./stashd-child.js";

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const commands = Number(flag("--commands")) || SETTINGS.kvMaxCommandsPerRequest.default;
const runs = Number(flag("--runs")) || 3;
const cpuProfDir = flag("--cpu-prof");
const route = process.argv.includes("--transaction") ? "multi-exec" : "pipeline";

interface Stats {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0);
  return { n: sorted.length, p50: at(50), p99: at(99), max: at(100) };
}

async function pingUntil(url: string, token: string, done: () => boolean): Promise<number[]> {
  const times: number[] = [];
  while (!done()) {
    const t = performance.now();
    const res = await fetch(`${url}/ping`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    times.push(performance.now() - t);
  }
  return times;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-stall-"));
  const port = await freePort();
  const stashd = await startStashdChild(
    redis.url,
    dir,
    port,
    process.env.BENCH_CHILD_NODE_OPTIONS
      ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS }
      : {},
    {
      ...(flag("--stashd") ? { bin: flag("--stashd") as string } : {}),
      nodeFlags: cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", cpuProfDir] : [],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const body = `[${'["PING"],'.repeat(commands - 1)}["PING"]]`;
  const idle: number[] = [];
  const busy: number[] = [];
  const pipelineMs: number[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      const until = performance.now() + 1000;
      const alone = await pingUntil(url, stashd.token, () => performance.now() > until);
      let finished = false;
      const started = performance.now();
      const pipeline = fetch(`${url}/${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${stashd.token}` },
        body,
      })
        .then(async (res) => ({ status: res.status, bytes: (await res.arrayBuffer()).byteLength }))
        .finally(() => (finished = true));
      const during = await pingUntil(url, stashd.token, () => finished);
      const res = await pipeline;
      const ms = Math.round(performance.now() - started);
      if (res.status !== 200) throw new Error(`pipeline answered ${res.status}`);
      idle.push(...alone);
      busy.push(...during);
      pipelineMs.push(ms);
      console.log(
        JSON.stringify({
          run,
          commands,
          pipelineMs: ms,
          replyBytes: res.bytes,
          idle: stats(alone),
          during: stats(during),
        }),
      );
    }
    console.log(
      JSON.stringify({
        pooled: true,
        commands,
        pipelineMs,
        idle: stats(idle),
        during: stats(busy),
      }),
    );
  } finally {
    await stopChild(stashd.child);
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
