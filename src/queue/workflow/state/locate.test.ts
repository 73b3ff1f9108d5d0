import { describe, expect, it } from "vitest";
import type { Arg } from "../../../shared/redis/resp.js";
import { makePartitions, type Partitions } from "../../store/partitions.js";
import type { QueueRedis } from "../../store/redis.js";
import { RunLocator } from "./locate.js";

/** Partitions on a fake Redis holding `keys`; `asked` records every EXISTS. */
function fake(count: number): { parts: Partitions; keys: Set<string>; asked: string[] } {
  const keys = new Set<string>();
  const asked: string[] = [];
  const redis: QueueRedis = {
    exec: (argv: readonly Arg[]) => {
      const key = String(argv[1]);
      asked.push(key);
      return Promise.resolve({ kind: "int", value: keys.has(key) ? "1" : "0" });
    },
    execMany: () => Promise.reject(new Error("unused")),
  };
  return { parts: makePartitions(count, () => redis), keys, asked };
}

describe("RunLocator", () => {
  it("looks in the id's own partition first, then in every other one", async () => {
    const { parts, keys, asked } = fake(3);
    const home = parts.ofName("wfr_a");
    const other = parts.all.find((p) => p !== home);
    keys.add(home.keys.workflowRun("wfr_a"));
    const runs = new RunLocator(parts);
    expect(await runs.search("wfr_a")).toBe(home);
    expect(asked).toHaveLength(1);
    keys.clear();
    keys.add(other?.keys.workflowRun("wfr_a") ?? "");
    asked.length = 0;
    expect(await runs.search("wfr_a")).toBe(other);
    expect(asked).toHaveLength(3);
    expect(runs.cached("wfr_a")).toBe(other);
    keys.clear();
    expect(await runs.search("wfr_a")).toBeUndefined();
    expect(runs.cached("wfr_a")).toBeUndefined();
  });

  it("keeps the most recently used runs up to its size", () => {
    const { parts } = fake(3);
    const runs = new RunLocator(parts, 2);
    const [p0, p1, p2] = parts.all;
    if (!p0 || !p1 || !p2) throw new Error("3 partitions");
    runs.remember("a", p0);
    runs.remember("b", p1);
    expect(runs.cached("a")).toBe(p0); // a is now the most recent
    runs.remember("c", p2);
    expect(runs.cached("b")).toBeUndefined();
    expect([runs.cached("a"), runs.cached("c")]).toEqual([p0, p2]);
  });

  it("needs no look-up with one partition", async () => {
    const { parts, asked } = fake(1);
    const runs = new RunLocator(parts);
    expect(runs.cached("wfr_x")).toBe(parts.main);
    expect(await runs.search("wfr_x")).toBe(parts.main);
    expect(asked).toEqual([]);
  });
});
