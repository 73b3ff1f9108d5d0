import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { parseRedisUrl, type RedisEndpoint } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";

/**
 * A real redis-server for one test file: spawned on a free loopback port with persistence off
 * (`--save '' --appendonly no`, as Valkey's own suite does for speed), stopped by `stop()`.
 * With REDIS_URL set, that server is used instead and nothing is spawned.
 */
export interface TestRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Where the kernel's ephemeral port range starts (ports for `listen(0)` and outgoing connections). */
export function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    if (Number.isInteger(low) && low > 0) return low;
  } catch {
    // Not Linux: the IANA range most other kernels use.
  }
  return 49152;
}

/** Whether a loopback listener can bind `port` right now. */
export function isFreePort(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

const LOWEST_PORT = 10_000;

/**
 * A loopback port that is free now and lies below the kernel's ephemeral range, so that no
 * outgoing connection or `listen(0)` of a test running in parallel can take it between this
 * check and the bind, or while a server restarts on it (a SIGKILLed stashd on a fixed port).
 * A port from `listen(0)` is in that range and can be taken in such a window.
 */
export async function freePort(): Promise<number> {
  const span = ephemeralLow() - LOWEST_PORT;
  for (let i = 0; span > 1000 && i < 100; i++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * span);
    if (await isFreePort(port)) return port;
  }
  return anyFreePort(); // a kernel without room below its ephemeral range
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function startRedis(extraArgs: string[] = [], fixedPort?: number): Promise<TestRedis> {
  const external = process.env["REDIS_URL"];
  if (external && fixedPort === undefined)
    return {
      url: external,
      port: Number(new URL(external).port || 6379),
      stop: async () => undefined,
    };
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-test-redis-"));
  const port = fixedPort ?? (await freePort());
  const child = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
      ...extraArgs,
    ],
    { stdio: "ignore" },
  );
  await waitForPort(port, child);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await stopChild(child, REDIS_KILL_AFTER_MS);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const sock = net.connect(port, "127.0.0.1");
      sock.once("connect", () => {
        sock.write("PING\r\n");
        sock.once("data", (d) => {
          sock.destroy();
          resolve(d.toString().startsWith("+PONG"));
        });
      });
      sock.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`redis-server did not start on port ${port}`);
}

/** How long a test redis-server gets to exit on SIGTERM before SIGKILL (see stopChild). */
const REDIS_KILL_AFTER_MS = 5_000;

/**
 * SIGTERM, and SIGKILL after `killAfterMs` when given. A redis-server inside a script that wrote
 * never handles SIGTERM, and a test that failed with one running must report its failure, not
 * hang; a stashd that does not stop is a finding, so its tests give no `killAfterMs`.
 */
export async function stopChild(child: ChildProcess, killAfterMs?: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer =
    killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  await exited.finally(() => clearTimeout(timer));
}

/** A RedisPool on a test Redis (a URL, or an endpoint to log in differently), timeouts short. */
export function testPool(at: string | RedisEndpoint, size = 2): RedisPool {
  const endpoint = typeof at === "string" ? parseRedisUrl(at) : at;
  return new RedisPool(endpoint, { size, connectTimeoutMs: 2000, retryBackoffMs: 20 });
}
