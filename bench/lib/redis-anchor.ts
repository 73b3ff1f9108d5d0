/**
 * The durability anchor of the queue bench: `redis-benchmark` SET against a redis-server
 * configured exactly as stashd's managed queue Redis (the same ManagedRedis class writes its
 * config: unix socket, password, AOF with `appendfsync always`), its data directory on the same
 * disk as stashd's. A publish acknowledged after its fsync cannot beat this.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ManagedRedis } from "../../src/shared/redis/managed.js";
import { createLogger } from "../../src/shared/log.js";

export interface AnchorRow {
  clients: number;
  rps: number;
  p50: number;
  p99: number;
}

/** SET/s at each client count (`requests` SETs per run); undefined without redis-benchmark. */
export async function fsyncAlwaysSet(
  runs: readonly { clients: number; requests: number }[],
): Promise<AnchorRow[] | undefined> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-anchor-"));
  const redis = new ManagedRedis({
    dir,
    bin: "redis-server",
    appendfsync: "always",
    maxRestartBackoffMs: 1000,
    logger: createLogger("error"),
  });
  const ep = await redis.start();
  try {
    const out: AnchorRow[] = [];
    for (const run of runs) {
      const args = ["-s", ep.path ?? "", "-a", ep.password ?? "", "--csv", "-t", "set"];
      args.push("-c", String(run.clients), "-n", String(run.requests));
      const row = await redisBenchmark(args);
      if (!row) return undefined;
      out.push({ clients: run.clients, ...row });
    }
    return out;
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * One `redis-benchmark --csv` run: `"SET","rps","avg","min","p50","p95","p99","max"`; the row of
 * `command` (SET unless said).
 */
export async function redisBenchmark(args: string[], command = "SET") {
  try {
    const { stdout } = await promisify(execFile)("redis-benchmark", args, { encoding: "utf8" });
    const line = stdout.split("\n").find((l) => l.startsWith(`"${command}"`)) ?? "";
    const f = line.split(",").map((x) => Number(x.replace(/"/g, "")));
    return { rps: f[1] ?? NaN, p50: f[4] ?? NaN, p99: f[6] ?? NaN };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
