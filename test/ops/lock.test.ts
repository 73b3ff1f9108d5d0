import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { endOrphanedRedis } from "../harness/process.js";
import { startStashd } from "../harness/stashd.js";
import {
  bannerUrl,
  processesMentioning,
  redisServersIn,
  spawnStashd,
  untilRunning,
  type Spawned,
} from "./helpers.js";

/**
 * One stashd per data dir: a lock held for the process's life, recovered after a SIGKILL. Each
 * test works on a data dir of its own (and free ports), so the tests run together: most of their
 * time is stashd starting, which they then wait out at once. What they started is ended after
 * all of them.
 */
const running: Spawned[] = [];
const dirs: string[] = [];
const PORTS = ["--kv-port", "0", "--queue-port", "0", "--admin-port", "0"];

afterAll(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill("SIGTERM");
      await s.exited;
    }
  }
  for (const d of dirs.splice(0)) {
    endOrphanedRedis(d);
    rmSync(d, { recursive: true, force: true });
  }
});

function tempDir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "stashd-lock-"));
  dirs.push(d);
  return d;
}

function start(dataDir: string): Spawned {
  const s = spawnStashd(["start", "--data-dir", dataDir, ...PORTS]);
  running.push(s);
  return s;
}

function managedServers(dataDir: string): string[] {
  return redisServersIn(path.join(dataDir, "kv", "redis", "default"));
}

describe.concurrent("instance lock", () => {
  it("refuses a second start on the same data dir, naming the running pid and URLs", async () => {
    const dataDir = tempDir();
    const first = start(dataDir);
    const banner = await untilRunning(first);
    const servers = managedServers(dataDir);
    expect(servers).toHaveLength(1);
    const second = start(dataDir);
    expect(await second.exited).toBe(1);
    const message = second.output();
    expect(message).toContain(`in use by a running stashd (pid ${first.child.pid}`);
    expect(message).toContain(bannerUrl(banner, "UPSTASH_REDIS_REST_URL"));
    expect(message).toContain(bannerUrl(banner, "QSTASH_URL"));
    // The first instance's managed redis-server was left alone and still serves.
    expect(managedServers(dataDir)).toEqual(servers);
  });

  it("recovers the lock of a SIGKILLed stashd, and its redis-servers are replaced, not shared", async () => {
    const dataDir = tempDir();
    const first = start(dataDir);
    await untilRunning(first);
    const oldServer = managedServers(dataDir);
    first.child.kill("SIGKILL");
    await first.exited;
    const lock = JSON.parse(readFileSync(path.join(dataDir, "instance.lock"), "utf8")) as {
      pid: number;
    };
    expect(lock.pid).toBe(first.child.pid);
    const second = start(dataDir);
    await untilRunning(second);
    const now = managedServers(dataDir);
    expect(now).toHaveLength(1);
    expect(now).not.toEqual(oldServer);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(processesMentioning(dataDir)).toEqual([]);
    expect(managedServers(dataDir)).toEqual([]);
  });

  it("refuses a second in-process start() on a locked data dir, and frees it at stop()", async () => {
    const a = await startStashd();
    try {
      await expect(startStashd({ dataDir: a.dataDir })).rejects.toThrow(
        `in use by a running stashd (pid ${process.pid}`,
      );
      await a.stopKeepingData();
      const b = await startStashd({ dataDir: a.dataDir });
      await b.stopKeepingData();
    } finally {
      await a.stop();
    }
  });

  it("lets `credentials` ignore a runtime.json left by a killed process", async () => {
    const dataDir = tempDir();
    const first = start(dataDir);
    await untilRunning(first);
    first.child.kill("SIGKILL");
    await first.exited;
    const creds = spawnStashd(["credentials", "--json", "--data-dir", dataDir]);
    expect(await creds.exited).toBe(0);
    await eventually(() => expect(JSON.parse(creds.output())).toMatchObject({ running: false }));
  });
});
