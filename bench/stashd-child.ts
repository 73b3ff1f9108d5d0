import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { Agent, request } from "undici";

/** Starting stashd as a child process for the benches, so the load generator has its own loop. */

/**
 * Polls `url` until it answers. Each probe has a connection of its own, closed after it: a
 * probe's connection left idle in fetch's global pool was reused by the bench's first request
 * after `spawnSync` (the credentials below, run for each child) had blocked the event loop
 * past the server's keep-alive timeout, so that undici could not retire it in time, and that
 * request failed with "other side closed" (kv-cluster's seed did: 419 bytes read, the probe's
 * 401 answer; docs/benchmarks.md, Keep-alive and blocking calls).
 */
export async function waitForHttp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const probe = new Agent();
    try {
      await (await request(url, { dispatcher: probe })).body.dump();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await probe.close();
    }
  }
  throw new Error(`${url} did not come up`);
}

export interface ChildOptions {
  /** Another build's launcher (bin/stashd of a copy made before a change); default bin/stashd. */
  bin?: string;
  /** Node flags for the child, e.g. `--cpu-prof --cpu-prof-dir DIR`. */
  nodeFlags?: string[];
}

export async function startStashdChild(
  redisUrl: string,
  dataDir: string,
  port: number,
  env: Record<string, string> = {},
  opts: ChildOptions = {},
): Promise<{ child: ChildProcess; token: string }> {
  const bin = opts.bin ?? "bin/stashd";
  const args = ["start", "--data-dir", dataDir, "--kv-port", String(port), "--queue-port", "0"];
  args.push("--admin-port", "0", "--log-level", "warn");
  const child = spawn(process.execPath, [...(opts.nodeFlags ?? []), bin, ...args], {
    // One process (bench/workers.ts measures worker counts): the memory and CPU profile read
    // here are this pid's, comparable with the figures before issue 29.
    env: { ...process.env, STASHD_WORKERS: "1", ...env, STASHD_KV_REDIS_URL: redisUrl },
    stdio: ["ignore", "ignore", "inherit"],
  });
  await waitForHttp(`http://127.0.0.1:${port}/`);
  const creds = JSON.parse(
    spawnSync(process.execPath, [bin, "credentials", "--json", "--data-dir", dataDir], {
      encoding: "utf8",
    }).stdout,
  ) as { kv: { databases: { token: string }[] } };
  return { child, token: creds.kv.databases[0]?.token ?? "" };
}
