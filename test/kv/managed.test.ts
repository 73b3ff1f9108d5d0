import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startStashd } from "../harness/stashd.js";
import { command } from "./helpers.js";

function managedPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, "kv", "redis", "default", "redis.pid"), "utf8"));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("managed redis-server", () => {
  it("keeps data across a stashd restart and stops its child on shutdown", async () => {
    const first = await startStashd();
    const dataDir = first.dataDir;
    try {
      expect((await command(first, ["SET", "durable", "yes"])).body).toEqual({ result: "OK" });
      const pid = managedPid(dataDir);
      await first.stopKeepingData();
      expect(alive(pid)).toBe(false);
      const second = await startStashd({ dataDir });
      try {
        expect(second.kv.token).toBe(first.kv.token);
        expect((await command(second, ["GET", "durable"])).body).toEqual({ result: "yes" });
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
  });

  it("restarts a crashed redis-server and the gateway recovers without a restart", async () => {
    const s = await startStashd({ managedRestartMaxBackoffMs: 200 });
    try {
      await command(s, ["SET", "before-crash", "1"]);
      await command(s, ["SAVE"]);
      const pid = managedPid(s.dataDir);
      process.kill(pid, "SIGKILL");
      await eventually(
        async () =>
          expect((await command(s, ["GET", "before-crash"])).body).toEqual({ result: "1" }),
        {
          timeoutMs: 10_000,
        },
      );
      expect(managedPid(s.dataDir)).not.toBe(pid);
    } finally {
      await s.stop();
    }
  });
});
