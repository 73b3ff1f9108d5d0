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
  /** The process's open-file limit (`ulimit -n`), below the test's own: fd exhaustion tests. */
  openFiles?: number;
}

/**
 * Starts `bin/stashd start` as a separate process on a data dir, with the KV, queue and admin
 * listeners on free ports (the admin port too, so test files running in parallel never clash).
 * `credentialsOf(dataDir)` tells when it is running and its URLs.
 */
export function spawnStashd(dataDir: string, options: SpawnOptions = {}): ChildProcess {
  const queue = String(options.queuePort ?? 0);
  const ports = ["--kv-port", "0", "--queue-port", queue, "--admin-port", "0"];
  const command = [process.execPath, BIN, "start", "--data-dir", dataDir, ...ports];
  // The shell lowers the limit and then becomes stashd (exec): the child's pid is stashd's.
  const limited =
    options.openFiles === undefined
      ? command
      : ["/bin/sh", "-c", `ulimit -n ${options.openFiles} && exec "$@"`, "sh", ...command];
  return spawn(limited[0] as string, limited.slice(1), {
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

/** How a `bin/stashd` command ended, as `runStashd` reports it. */
export interface CommandResult {
  /** The exit code (null when a signal ended it). */
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** The child's whole environment (default: empty, so settings are explicit). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Kills it (SIGTERM) after this long, so a hung command cannot outlive its test. */
  timeoutMs?: number;
}

/**
 * Runs `bin/stashd ARGS` to its end without blocking the test's event loop. Each run costs a Node
 * start and the load of `dist/` (about half a CPU second), so a test starts the invocations that
 * do not depend on each other together (`Promise.all`) instead of one after the other.
 */
export function runStashd(args: string[], options: RunOptions = {}): Promise<CommandResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: options.env ?? {},
    cwd: options.cwd,
    timeout: options.timeoutMs,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** `credentialsOf` without blocking the event loop (`runStashd`). */
export async function credentialsOfAsync<T>(dataDir: string): Promise<T> {
  const r = await runStashd(["credentials", "--json", "--data-dir", dataDir]);
  return JSON.parse(r.stdout) as T;
}

/** A spawned `bin/stashd start` whose stderr is kept for failure messages. */
export interface StashdProcess {
  readonly child: ChildProcess;
  /** The last 4 KB of its stderr. */
  stderr(): string;
  /** Whether its stderr has shown the "stashd is running" banner (src/cli/start.ts). */
  bannerShown(): boolean;
}

/** The line `stashd start` writes to stderr once every listener is up. */
const BANNER = "stashd is running";

/** `spawnStashd`, keeping the tail of the process's stderr. */
export function spawnStashdKeepingStderr(
  dataDir: string,
  options: Omit<SpawnOptions, "stdio"> = {},
): StashdProcess {
  const child = spawnStashd(dataDir, { ...options, stdio: ["ignore", "ignore", "pipe"] });
  let tail = "";
  let banner = false;
  child.stderr?.on("data", (d: Buffer) => {
    // Looked for before the cut, so a banner split over two chunks is still seen.
    const joined = tail + d.toString();
    banner ||= joined.includes(BANNER);
    tail = joined.slice(-4000);
  });
  return { child, stderr: () => tail, bannerShown: () => banner };
}

/**
 * `stashd credentials --json` of the data dir once `proc` reports itself running. Fails at once,
 * with the process's stderr, if it exits first (a port in use, a bad setting), and with its
 * stderr so far after `timeoutMs`. Asks `credentials` only once the banner is shown: each ask is
 * a Node start, which would take CPU from the stashd starting beside it on a 2-core machine.
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
    if (proc.bannerShown()) {
      const c = await credentialsOfAsync<T>(dataDir);
      if (c.running) return c;
    }
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
