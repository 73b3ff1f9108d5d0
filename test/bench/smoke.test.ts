import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * The benchmark scripts in bench/ keep working: each runs in its `--smoke` mode (a moment of
 * every phase). Their figures are not asserted (speed is measured by the scripts, never by
 * tests); what is checked is that they run to the end and print every row.
 */
const run = async (script: string): Promise<string> => {
  const tsx = "node_modules/.bin/tsx";
  const { stdout } = await promisify(execFile)(tsx, [script, "--smoke"], {
    encoding: "utf8",
    timeout: 150_000,
  });
  return stdout;
};

describe("bench smoke runs", () => {
  it("runs the queue bench, each row beside its anchor", { timeout: 180_000 }, async () => {
    const out = await run("bench/queue.ts");
    for (const row of [
      "| durable publishes, 1 connection |",
      "| durable publishes, 50 connections (each also delivered meanwhile) |",
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
  });
});
