import type { Registry } from "prom-client";

/** One series of a SeriesHistogram: its labels and its counts per bucket (not cumulative). */
interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; the last one: above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One value of a metric as prom-client's `get()` gives it (what its registry prints). */
interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

/**
 * A Prometheus histogram for a per-request hot path: a series is found by a string key the caller
 * already has, and an observation is two array writes. prom-client's Histogram builds, checks
 * and hashes the label object on every `observe`, which took 3-4 % of the KV gateway's CPU per
 * request in perf (2026-11-28, docs/decisions.md, "The request duration histogram").
 *
 * It registers in a prom-client Registry as a metric of its own (a registry takes any object with
 * `name`, `help`, `type`, `aggregator` and `get()`), and `get()` answers the shape prom-client's
 * Histogram answers: cumulative `_bucket` values labelled `le` (the bounds, then `+Inf`), `_sum`
 * and `_count`. So `/metrics` prints the same lines, and the supervisor's
 * `AggregatorRegistry.aggregate` sums the workers' series as it sums prom-client's.
 *
 * Series are never dropped: callers keep their label values bounded (instrument.ts).
 */
export class SeriesHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** Upper bounds, ascending. */
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /**
   * Counts `value` in the series `key`; `labels` makes that series' labels the first time the key
   * is seen (called once per series, so the hot path builds no object).
   */
  observe(key: string, labels: () => Record<string, string>, value: number): void {
    let s = this.series.get(key);
    if (s === undefined) {
      s = { labels: labels(), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++;
    s.counts[i] = (s.counts[i] as number) + 1;
    s.sum += value;
    s.count++;
  }

  /** What prom-client's Histogram `get()` answers (see the class comment). */
  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i] as number;
        values.push({ labels: { le, ...s.labels }, value: acc, metricName: bucket });
      });
      values.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: bucket });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }
}
