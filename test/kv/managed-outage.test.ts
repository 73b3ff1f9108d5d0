import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startStashd } from "../harness/stashd.js";
import { command } from "./helpers.js";

/**
 * Reliability scenario 3, managed mode (docs/reliability.md): the KV database's managed
 * redis-server is SIGKILLed. Requests meanwhile get a JSON 503 (never a hang or a 500), stashd
 * restarts the server by itself, service resumes without restarting stashd, and no backend
 * connections leak.
 */
describe("managed KV redis-server killed", () => {
  it("answers JSON 503 while it is down, then serves again without leaked connections", async () => {
    const s = await startStashd({ managedRestartMaxBackoffMs: 200, logLevel: "error" });
    try {
      expect((await command(s, ["SET", "k", "1"])).status).toBe(200);
      const pidFile = path.join(s.dataDir, "kv", "redis", "default", "redis.pid");
      process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
      const seen = new Set<string>();
      const probe = async (): Promise<number> => {
        const r = await command(s, ["GET", "k"]);
        const ok = r.status === 200 || (r.status === 503 && "error" in (r.body as object));
        seen.add(ok ? String(r.status) : `${r.status} ${JSON.stringify(r.body)}`);
        return r.status;
      };
      await eventually(async () => expect(await probe()).toBe(503), { timeoutMs: 5_000 });
      await eventually(async () => expect(await probe()).toBe(200), { timeoutMs: 10_000 });
      expect([...seen].sort()).toEqual(["200", "503"]);
      await Promise.all(Array.from({ length: 50 }, () => command(s, ["INCR", "after"])));
      const info = (await command(s, ["INFO", "clients"])).body as { result: string };
      // At most the pool (4 standard connections), stashd's own one (ACL set-up) plus the one asking.
      expect(Number(/connected_clients:(\d+)/.exec(info.result)?.[1])).toBeLessThanOrEqual(6);
    } finally {
      await s.stop();
    }
  });
});
