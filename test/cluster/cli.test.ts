import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { freeRange, onNode } from "../harness/cluster.js";
import { eventually } from "../harness/eventually.js";
import { startStashd } from "../harness/stashd.js";

const BIN = path.resolve("bin/stashd");

describe("stashd cluster up", () => {
  it("starts a local 3+3 Redis Cluster that a database URL can name, and stops it on Ctrl-C", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-test-cli-cluster-"));
    const base = await freeRange();
    const child = spawn(
      process.execPath,
      [BIN, "cluster", "up", "--base-port", String(base), "--data-dir", dataDir],
      {
        env: { PATH: process.env["PATH"] ?? "" },
      },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.once("exit", (code) => resolve(code)),
    );
    try {
      await eventually(() => expect(stderr).toContain("Redis Cluster is up"), {
        timeoutMs: 20_000,
      });
      expect(stderr).toContain(`--redis-url redis://127.0.0.1:${base}`);
      const info = await onNode(base + 4, ["INFO", "replication"]);
      expect(info.kind === "bulk" && info.value.toString()).toMatch(/role:slave/);

      const stashd = await startStashd({ kvRedisUrl: `redis://127.0.0.1:${base + 2}` });
      const sdk = new Redis({ url: stashd.kv.url, token: stashd.kv.token });
      await sdk.set("hello", "cluster");
      expect(await sdk.get("hello")).toBe("cluster");
      await stashd.stop();
    } finally {
      child.kill("SIGINT");
      expect(await exited).toBe(0);
      rmSync(dataDir, { recursive: true, force: true });
    }
    await expect(onNode(base, ["PING"])).rejects.toThrow();
  });
});
