import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * The benchmark scripts in bench/ keep working: each runs in its `--smoke` mode (a moment of
 * every phase). Their figures are not asserted (speed is measured by the scripts, never by
 * tests); what is checked is that they run to the end and print every row.
 */
const run = async (script: string, args: string[] = []): Promise<string> => {
  const tsx = "node_modules/.bin/tsx";
  const { stdout } = await promisify(execFile)(tsx, [script, "--smoke", ...args], {
    encoding: "utf8",
    timeout: 150_000,
  });
  return stdout;
};

describe("bench smoke runs", () => {
  it("runs the queue bench, each row beside its anchor", { timeout: 180_000 }, async () => {
    const heapDir = mkdtempSync(path.join(os.tmpdir(), "stashd-smoke-heap-"));
    let out: string;
    try {
      out = await run("bench/queue.ts", ["--soak", "2", "--heap-snapshots", heapDir]);
      expect(readdirSync(heapDir).filter((f) => f.endsWith(".heapsnapshot"))).toHaveLength(2);
    } finally {
      rmSync(heapDir, { recursive: true, force: true });
    }
    expect(out).toMatch(/\| stashd resident memory over a 2 s publish soak \| [\d.]+, [\d.]+/);
    expect(out).toMatch(
      /\| stashd V8 heap used \/ external memory over the soak \| [\d.]+\/[\d.]+, /,
    );
    expect(out).toMatch(/stashd heap, first soak round -> last:\nlive heap [\d.]+ MB -> [\d.]+ MB/);
    for (const row of [
      "| durable publishes, 1 connection |",
      "| durable publishes, 50 connections, each delivered at once (until the last arrived) |",
      "| durable publishes, 50 connections, delivered a day later (storing only) |",
      "| deliveries (backlog of 100) |",
      "| deliveries with a flow-control key (limit never reached) |",
      "| publish -> delivery latency (20 samples) |",
      "| CPU per message",
      "| stashd resident memory |",
    ]) {
      expect(out).toContain(row);
    }
    expect(out).toContain("redis-benchmark SET, appendfsync always, 50 clients");
    expect(out).toContain("bare undici POST, 50 connections");
  });

  it("runs the schedules bench: every schedule fires once", { timeout: 180_000 }, async () => {
    const out = await run("bench/schedules.ts");
    expect(out).toContain("deliveries 20 (expected 20), duplicates 0");
    expect(out).toMatch(/tick -> delivered: first \d+ ms, p50 \d+ ms, p99 \d+ ms/);
    expect(out).toMatch(/anchor, 20 bare undici POSTs .* done after p50 \d+ ms, p99 \d+ ms/);
    expect(out).toMatch(/resident memory of this process .*: \d+ MB after the ticks, peak \d+ MB/);
  });
});
