import { describe, expect, it } from "vitest";
import { Graph } from "./graph.js";
import { LocalIndex } from "./local-index.js";
import { fp32Text, parseQuery, parseVector, VectorSyntax } from "./parse.js";
import { nearest } from "./search.js";
import { Deadline } from "../search/deadline.js";
import { runToEnd } from "../search/scheduler.js";

/** The in-process copy and its HNSW graph, without Redis: what VECTOR.QUERY searches. */

const unbounded = (): Deadline => new Deadline(Infinity);

function unit(i: number, dim = 16): Float32Array {
  const v = Float32Array.from(
    { length: dim },
    (_, j) => (Math.sin(i * 12.9898 + j * 78.233) * 43758.5453) % 1,
  );
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function withGraph(n: number): LocalIndex {
  const local = new LocalIndex(16, "COSINE", "g");
  for (let i = 0; i < n; i++) local.upsert(`v${i}`, unit(i));
  local.graph = new Graph(16, "COSINE", n);
  for (const slot of local.slots()) local.graph.enqueue(slot);
  while (local.graph.build(local, 50));
  return local;
}

describe("LocalIndex and its graph", () => {
  it("finds with the graph what the exact scan finds, and keeps up with updates and removals", () => {
    const local = withGraph(2_000);
    const graph = local.graph as Graph;
    let agree = 0;
    for (let i = 0; i < 50; i++) {
      const exact = runToEnd(local.exact(unit(i + 5_000), 10, unbounded())).map((h) => h.slot);
      const approx = graph.search(unit(i + 5_000), 10, 120);
      agree += approx.filter((s) => exact.includes(s)).length;
    }
    expect(agree / 500).toBeGreaterThanOrEqual(0.9);

    local.remove("v7");
    expect(graph.search(unit(7), 5, 120).map((s) => local.idAt(s))).not.toContain("v7");
    local.upsert("v8", unit(9_999));
    expect(graph.ready).toBe(false);
    while (graph.build(local, 50));
    expect(local.idAt(graph.search(unit(9_999), 1, 120)[0] as number)).toBe("v8");
    expect(
      runToEnd(local.exact(unit(9_999), 1, unbounded())).map((h) => local.idAt(h.slot)),
    ).toEqual(["v8"]);
  });

  it("compacts once holes outnumber vectors, keeping ids, vectors and the log position", () => {
    const local = new LocalIndex(16, "EUCLIDEAN", "c");
    for (let i = 0; i < 3_000; i++) local.upsert(`v${i}`, unit(i));
    for (let i = 0; i < 2_000; i++) local.remove(`v${i}`);
    local.seq = 5_000;
    expect(local.needsCompaction).toBe(true);
    const copy = runToEnd(local.compacted(unbounded()));
    expect(copy.count).toBe(1_000);
    expect(copy.needsCompaction).toBe(false);
    expect(copy.seq).toBe(5_000);
    expect(runToEnd(copy.exact(unit(2_500), 1, unbounded())).map((h) => copy.idAt(h.slot))).toEqual(
      ["v2500"],
    );
  });

  it("stops an exact scan at its deadline", () => {
    const local = new LocalIndex(16, "DOT", "t");
    for (let i = 0; i < 5_000; i++) local.upsert(`v${i}`, unit(i));
    // A budget of 0 ms is spent by the first clock reading (the 256th vector).
    expect(() => runToEnd(local.exact(unit(1), 10, new Deadline(0)))).toThrow();
  });
});

describe("vector arguments", () => {
  it("parses the three vector forms alike and prints FP32 values shortest", () => {
    const bytes = Buffer.from(new Float32Array([0.1, -2.5]).buffer);
    const forms = [
      ["VALUES", "2", "0.1", "-2.5"],
      ["FP32", bytes],
      ["BASE64-FP32", bytes.toString("base64")],
    ];
    for (const form of forms) {
      const [vector] = parseVector(form, 0, 10);
      expect(Array.from(vector, fp32Text)).toEqual(["0.1", "-2.5"]);
    }
    expect(() => parseVector(["FP32", Buffer.alloc(3)], 0, 10)).toThrow(VectorSyntax);
    expect(() => parseVector(["VALUES", "11"], 0, 10)).toThrow(/between 1 and 10/);
    expect(() => parseVector(["VALUES", "1", "1e39"], 0, 10)).toThrow(/finite/);
  });

  it("reads QUERY options in any order, BALANCED by default", () => {
    const limits = { maxDimension: 4, maxTopK: 5 };
    expect(parseQuery(["VALUES", "1", "1", "TOPK", "3"], limits).profile).toBe("BALANCED");
    const q = parseQuery(["PROFILE", "fast", "TOPK", "5", "VALUES", "1", "2"], limits);
    expect([q.profile, q.topK, Array.from(q.vector)]).toEqual(["FAST", 5, [2]]);
    expect(() => parseQuery(["TOPK", "6", "VALUES", "1", "1"], limits)).toThrow(/TOPK/);
  });
});

describe("VECTOR.QUERY's search (search.ts)", () => {
  it("merges the graph's hits with an exact scan of vectors not in it yet", () => {
    const local = withGraph(2_000);
    for (let i = 0; i < 50; i++) local.upsert(`new${i}`, unit(20_000 + i));
    local.upsert("v3", unit(30_000));
    expect((local.graph as Graph).pendingCount).toBe(51);
    const query = (i: number, profile: "FAST" | "BALANCED") =>
      runToEnd(nearest(local, { topK: 3, profile, vector: unit(i) }, unbounded()));
    expect(query(20_007, "FAST")[0]).toEqual({ id: "new7", score: expect.closeTo(1, 5) });
    const moved = query(30_000, "BALANCED");
    expect(moved[0]?.id).toBe("v3");
    expect(new Set(moved.map((h) => h.id)).size).toBe(3);
    expect(query(3, "FAST").map((h) => h.id)).not.toContain("v3");
  });
});
