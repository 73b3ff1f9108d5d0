import { AggregatorRegistry, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { SeriesHistogram } from "./series-histogram.js";

const BOUNDS = [0.001, 0.01, 0.1, 1];
const HELP = "a help text";
const OBSERVED: [string, string, number][] = [
  ["kv", "GET", 0.0004],
  ["kv", "GET", 0.001], // on a bound: counted in that bucket, as prom-client does
  ["kv", "GET", 0.05],
  ["kv", "SET", 3], // above every bound: +Inf only
  ["queue", "/v2/publish/:destination", 0.02],
];

/** The same observations in prom-client's Histogram and in a SeriesHistogram, each in a registry. */
function both(): { ours: Registry; theirs: Registry } {
  const theirs = new Registry();
  const reference = new Histogram({
    name: "x_seconds",
    help: HELP,
    labelNames: ["service", "route"],
    buckets: BOUNDS,
    registers: [theirs],
  });
  const ours = new Registry();
  const histogram = new SeriesHistogram("x_seconds", HELP, BOUNDS, ours);
  for (const [service, route, v] of OBSERVED) {
    reference.observe({ service, route }, v);
    histogram.observe(`${service}\n${route}`, () => ({ service, route }), v);
  }
  return { ours, theirs };
}

describe("SeriesHistogram", () => {
  it("prints what prom-client's Histogram prints for the same observations", async () => {
    const { ours, theirs } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it("adds up across workers as prom-client's Histogram does (AggregatorRegistry)", async () => {
    const a = both();
    const b = both();
    const ours = AggregatorRegistry.aggregate([
      await a.ours.getMetricsAsJSON(),
      await b.ours.getMetricsAsJSON(),
    ] as never);
    const theirs = AggregatorRegistry.aggregate([
      await a.theirs.getMetricsAsJSON(),
      await b.theirs.getMetricsAsJSON(),
    ] as never);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('x_seconds_count{service="kv",route="GET"} 6');
  });
});
