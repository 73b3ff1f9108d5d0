import { spawn, spawnSync, type ChildProcess, type StdioOptions } from "node:child_process";
import { readlinkSync } from "node:fs";
import path from "node:path";

/** The CLI entry point, as a user runs it. */
export const BIN = path.resolve("bin/stashd");

export interface SpawnOptions {
  /** The child's whole environment (not merged with the test's, so settings are explicit). */
  env?: NodeJS.ProcessEnv;
  stdio?: StdioOptions;
  /** A fixed queue port (default: a free one), for clients that must outlive a restart. */
  queuePort?: number;
}

/**
 * Starts `bin/stashd start` as a separate process on a data dir, with the KV, queue and admin
 * listeners on free ports (the admin port too, so test files running in parallel never clash).
 * `credentialsOf(dataDir)` tells when it is running and its URLs.
 */
export function spawnStashd(dataDir: string, options: SpawnOptions = {}): ChildProcess {
  const queue = String(options.queuePort ?? 0);
  const ports = ["--kv-port", "0", "--queue-port", queue, "--admin-port", "0"];
  return spawn(process.execPath, [BIN, "start", "--data-dir", dataDir, ...ports], {
    env: options.env ?? {},
    stdio: options.stdio ?? "ignore",
  });
}

/** `stashd credentials --json` of a data dir (its `running` flag says whether a server is up). */
export function credentialsOf<T>(dataDir: string, env: NodeJS.ProcessEnv = {}): T {
  const r = spawnSync(process.execPath, [BIN, "credentials", "--json", "--data-dir", dataDir], {
    encoding: "utf8",
    env,
  });
  return JSON.parse(r.stdout) as T;
}

/** A spawned `bin/stashd start` whose stderr is kept for failure messages. */
export interface StashdProcess {
  readonly child: ChildProcess;
  /** The last 4 KB of its stderr. */
  stderr(): string;
}

/** `spawnStashd`, keeping the tail of the process's stderr. */
export function spawnStashdKeepingStderr(
  dataDir: string,
  options: Omit<SpawnOptions, "stdio"> = {},
): StashdProcess {
  const child = spawnStashd(dataDir, { ...options, stdio: ["ignore", "ignore", "pipe"] });
  let tail = "";
  child.stderr?.on("data", (d: Buffer) => (tail = (tail + d.toString()).slice(-4000)));
  return { child, stderr: () => tail };
}

/**
 * `stashd credentials --json` of the data dir once `proc` reports itself running. Fails at once,
 * with the process's stderr, if it exits first (a port in use, a bad setting), and with its
 * stderr so far after `timeoutMs`.
 */
export async function whenRunning<T extends { running: boolean }>(
  dataDir: string,
  proc: StashdProcess,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ended = proc.child.exitCode ?? proc.child.signalCode;
    if (ended !== null)
      throw new Error(`stashd exited (${ended}) before running: ${proc.stderr()}`);
    const c = credentialsOf<T>(dataDir);
    if (c.running) return c;
    if (Date.now() > deadline) {
      throw new Error(`stashd not running after ${timeoutMs} ms; its stderr: ${proc.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Pids of redis-servers working in `dir` (a managed server's cwd is its data directory), or,
 * with `under`, anywhere below it.
 */
export function redisServersIn(dir: string, under = false): string[] {
  const root = path.resolve(dir);
  return spawnSync("pgrep", ["-f", "redis-server"], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((pid) => pid.trim() !== "")
    .filter((pid) => {
      try {
        const cwd = readlinkSync(`/proc/${pid}/cwd`);
        return cwd === root || (under && cwd.startsWith(`${root}${path.sep}`));
      } catch {
        return false;
      }
    });
}

/**
 * Ends the redis-servers that a SIGKILLed stashd left running under `dataDir`, so a test that
 * kills stashd leaves no process behind. Returns how many it ended.
 */
export function endOrphanedRedis(dataDir: string): number {
  const pids = redisServersIn(dataDir, true);
  for (const pid of pids) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  return pids.length;
}
