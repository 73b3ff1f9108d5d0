/**
 * Workflow benchmark: `npm run bench:workflow [-- --runs N] [--stashd PATH]`.
 *
 * stashd (`bin/stashd start`, managed queue Redis with appendfsync always) as a child process,
 * and in this process a node:http server hosting two endpoints:
 * - a 10-step `@upstash/workflow` route (`serve`, ten `context.run` steps);
 * - a plain receiver that, on delivery k of a chain, publishes delivery k+1 with
 *   `@upstash/qstash` (the same ten hops done as plain publishes).
 * Reported: steps/s with N runs at once (and hops/s of N plain chains at once), and the latency
 * of one run alone (trigger to the last step) against the same ten hops as plain publishes, and
 * stashd's resident memory after the runs and at its peak.
 * `--stashd PATH` runs another build's launcher (bin/stashd of a copy made before a change).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client as QStash } from "@upstash/qstash";
import { Client, serve } from "@upstash/workflow";
import { stopChild } from "../test/harness/redis.js";
import { rssMb } from "./lib/proc.js";
import { startApp } from "../test/workflow/harness.js";

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const runs = Number(option("--runs")) || 20;
const STEPS = 10;
const BIN = path.resolve(option("--stashd") ?? "bin/stashd");

interface Creds {
  running: boolean;
  queue?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
}

async function credentials(dataDir: string): Promise<NonNullable<Creds["queue"]>> {
  for (;;) {
    const r = spawnSync(process.execPath, [BIN, "credentials", "--json", "--data-dir", dataDir], {
      encoding: "utf8",
      env: {},
    });
    const c = JSON.parse(r.stdout || "{}") as Creds;
    if (c.running && c.queue) return c.queue;
    await new Promise((res) => setTimeout(res, 100));
  }
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-wf-"));
const server = spawn(
  process.execPath,
  [BIN, "start", "--data-dir", dataDir, "--kv-port", "0", "--queue-port", "0", "--admin-port", "0"],
  { env: { ...process.env, STASHD_LOG_LEVEL: "warn" }, stdio: "ignore" },
);
const q = await credentials(dataDir);
const env = {
  QSTASH_URL: q.url,
  QSTASH_TOKEN: q.token,
  QSTASH_CURRENT_SIGNING_KEY: q.currentSigningKey,
  QSTASH_NEXT_SIGNING_KEY: q.nextSigningKey,
};
const app = await startApp();
const done = new Map<string, () => void>();
const workflowUrl = app.route(
  "/wf",
  serve(
    async (context) => {
      for (let i = 1; i <= STEPS; i++) await context.run(`s${i}`, () => i);
      await context.run("end", () => done.get(context.workflowRunId)?.());
    },
    { env },
  ).handler,
);
const qstash = new QStash({ baseUrl: q.url, token: q.token });
const chainUrl = app.route("/chain", async (req) => {
  const { id, k } = (await req.json()) as { id: string; k: number };
  if (k >= STEPS) done.get(id)?.();
  else await qstash.publishJSON({ url: chainUrl, body: { id, k: k + 1 } });
  return new Response("ok");
});
const client = new Client({ baseUrl: q.url, token: q.token });

async function workflowRun(): Promise<number> {
  const t0 = performance.now();
  const id = `bench-${Math.random().toString(36).slice(2)}`;
  const finished = new Promise<void>((resolve) => done.set(`wfr_${id}`, resolve));
  await client.trigger({ url: workflowUrl, workflowRunId: id });
  await finished;
  return performance.now() - t0;
}

async function plainChain(): Promise<number> {
  const t0 = performance.now();
  const id = Math.random().toString(36).slice(2);
  const finished = new Promise<void>((resolve) => done.set(id, resolve));
  await qstash.publishJSON({ url: chainUrl, body: { id, k: 1 } });
  await finished;
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

try {
  await workflowRun(); // warm-up
  const t0 = performance.now();
  await Promise.all(Array.from({ length: runs }, () => workflowRun()));
  const secs = (performance.now() - t0) / 1000;
  // Each run delivers its trigger plus STEPS + 1 steps (the last one records the end).
  const steps = runs * (STEPS + 2);
  console.log(
    `workflow: ${runs} runs of ${STEPS} steps at once: ${(steps / secs).toFixed(0)} steps/s`,
  );
  const p0 = performance.now();
  await Promise.all(Array.from({ length: runs }, () => plainChain()));
  const hops = (runs * STEPS) / ((performance.now() - p0) / 1000);
  console.log(`plain: ${runs} chains of ${STEPS} publishes at once: ${hops.toFixed(0)} hops/s`);
  const alone: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < 5; i++) {
    alone.push(await workflowRun());
    plain.push(await plainChain());
  }
  console.log(`one 10-step run alone: median ${median(alone).toFixed(0)} ms`);
  console.log(`the same 10 hops as plain publishes: median ${median(plain).toFixed(0)} ms`);
  const rss = rssMb(server.pid);
  console.log(
    `stashd resident memory: ${rss.now.toFixed(0)} MB after the runs, peak ${rss.peak.toFixed(0)} MB`,
  );
} finally {
  await app.close();
  await stopChild(server);
  rmSync(dataDir, { recursive: true, force: true });
}
