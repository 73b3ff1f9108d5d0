import { describe, expect, it } from "vitest";
import { runBenchShort } from "./run-smoke.js";

/**
 * bench/queue-cost.ts keeps working: in `--smoke` mode every phase runs for a moment against a
 * real stashd (`bin/stashd`: run `npm run build` first) and prints its per-message rows. The
 * figures are not asserted; the Redis command counts of a published-and-delivered message are
 * checked to be there, since they are the bench's point.
 */
describe("bench/queue-cost.ts --smoke", () => {
  it("prints each phase's cost per message", async () => {
    const out = await runBenchShort(
      "queue-cost.ts",
      ["--smoke"],
      [
        "### publish, each delivered at once",
        "### publish only (Upstash-Delay: 1d)",
        "### backlog of 200 released at once",
        "| attempts started: handed off / claimed |",
      ],
      150_000,
    );
    expect(out).toMatch(/\| Redis commands \(scripts' own commands included\) \| [\d.]+ \|/);
    expect(out).toMatch(/\| evalsha \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/);
  }, 180_000);
});
