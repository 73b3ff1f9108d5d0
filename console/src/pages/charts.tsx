import { get } from "../api.js";
import { fmtCount, Page, Table, useInterval, useLoad } from "../ui.js";
import { fmtZoned } from "./shown.js";

/** GET /console/api/charts (src/admin/console/charts.ts). */
interface Outcomes {
  delivered: number;
  failed: number;
  retried: number;
}
interface Point {
  t: number;
  published: number;
  delivered: number;
  failed: number;
  retried: number;
  latency: { count: number; p50: number | null; p90: number | null; p99: number | null };
  backlog: {
    pending: number;
    ready: number;
    delayed: number;
    inFlight: number;
    dlq: number;
  } | null;
  byQueue: Record<string, Outcomes>;
  byHost: Record<string, Outcomes>;
  kvRequestsPerSecond: number;
  keys: Record<string, number | null>;
}
interface Charts {
  stepMs: number;
  now: number;
  points: Point[];
  /** True when stashd runs several worker processes: the counts are the first worker's. */
  firstWorkerOnly: boolean;
}

interface Series {
  name: string;
  color: string;
  values: (number | null)[];
}

const COLORS = ["#2f6fed", "#1f8a4c", "#c93a3a", "#b7791f", "#7a4fd6", "#0e8a8a"];
const W = 520;
const H = 120;

/**
 * A small line chart in inline SVG: one polyline per series over the points' times, the y axis
 * from 0 to the largest value, a legend with each series' last value. No chart library.
 */
export function LineChart(p: { title: string; series: Series[]; unit?: string; times: number[] }) {
  const max = Math.max(1, ...p.series.flatMap((s) => s.values.map((v) => v ?? 0)));
  const n = Math.max(2, p.times.length);
  const x = (i: number) => (i / (n - 1)) * (W - 40) + 36;
  const y = (v: number) => H - 16 - (v / max) * (H - 28);
  return (
    <figure class="chart" aria-label={p.title}>
      <figcaption>{p.title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${p.title} chart`}>
        <line x1="36" y1={y(0)} x2={W - 4} y2={y(0)} class="axis" />
        <text x="32" y={y(max) + 4} class="tick" text-anchor="end">
          {fmtCount(max)}
        </text>
        <text x="32" y={y(0) + 4} class="tick" text-anchor="end">
          0
        </text>
        {p.times.length > 0 && (
          <>
            <text x="36" y={H - 2} class="tick">
              {fmtZoned(p.times[0]).slice(11, 16)}
            </text>
            <text x={W - 4} y={H - 2} class="tick" text-anchor="end">
              {fmtZoned(p.times[p.times.length - 1]).slice(11)}
            </text>
          </>
        )}
        {p.series.map((s) => (
          <polyline
            key={s.name}
            fill="none"
            stroke={s.color}
            stroke-width="1.8"
            points={s.values
              .map((v, i) => (v === null ? "" : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
              .filter(Boolean)
              .join(" ")}
          />
        ))}
      </svg>
      <div class="legend">
        {p.series.map((s) => (
          <span key={s.name} data-series={s.name}>
            <i style={{ background: s.color }} /> {s.name}:{" "}
            {fmtCount(s.values[s.values.length - 1] ?? null)}
            {p.unit ?? ""}
          </span>
        ))}
      </div>
    </figure>
  );
}

const series = (points: Point[], pick: [string, (p: Point) => number | null][]): Series[] =>
  pick.map(([name, f], i) => ({
    name,
    color: COLORS[i % COLORS.length] ?? "#333",
    values: points.map(f),
  }));

/** Charts: what the queue and KV did per step over the last hour (docs/console.md, Charts). */
export function ChartsPage() {
  const data = useLoad(() => get<Charts>("charts"), []);
  useInterval(data.reload, 10_000);
  const d = data.data;
  const pts = d?.points ?? [];
  const times = pts.map((p) => p.t);
  const step = d ? stepText(d.stepMs) : "";
  const dbs = [...new Set(pts.flatMap((p) => Object.keys(p.keys)))];
  return (
    <Page
      title="Charts"
      actions={
        d && (
          <span class="hint">
            one point per {step}, the last {pts.length} of 60 kept in memory
          </span>
        )
      }
    >
      {data.error && (
        <p class="error-line" role="alert">
          {data.error}
        </p>
      )}
      {d?.firstWorkerOnly && (
        <p class="hint" data-testid="first-worker-only">
          stashd runs several worker processes (STASHD_WORKERS): the publishes, deliveries,
          durations and KV requests here are the first worker's share only. The backlog and key
          counts are the whole server's; /metrics on the admin port adds up every worker.
        </p>
      )}
      {d && pts.length === 0 && (
        <p class="empty">
          No point yet: the first comes {step} after stashd started (charts are kept in memory and
          start over on restart).
        </p>
      )}
      {pts.length > 0 && (
        <>
          <div class="charts">
            <LineChart
              title={`Messages per ${step}`}
              times={times}
              series={series(pts, [
                ["published", (p) => p.published],
                ["delivered", (p) => p.delivered],
                ["failed", (p) => p.failed],
                ["retried", (p) => p.retried],
              ])}
            />
            <LineChart
              title="Backlog (end of each step)"
              times={times}
              series={series(pts, [
                ["pending", (p) => p.backlog?.pending ?? null],
                ["ready", (p) => p.backlog?.ready ?? null],
                ["delayed", (p) => p.backlog?.delayed ?? null],
                ["in flight", (p) => p.backlog?.inFlight ?? null],
                ["DLQ", (p) => p.backlog?.dlq ?? null],
              ])}
            />
            <LineChart
              title="Attempt duration (ms, bucket upper bounds)"
              unit=" ms"
              times={times}
              series={series(pts, [
                ["p50", (p) => p.latency.p50],
                ["p90", (p) => p.latency.p90],
                ["p99", (p) => p.latency.p99],
              ])}
            />
            <LineChart
              title="KV requests per second"
              times={times}
              series={series(pts, [["all databases", (p) => p.kvRequestsPerSecond]])}
            />
            <LineChart
              title="Keys per database"
              times={times}
              series={series(
                pts,
                dbs.map(
                  (db) =>
                    [db, (p: Point) => p.keys[db] ?? null] as [string, (p: Point) => number | null],
                ),
              )}
            />
          </div>
          <GroupTable
            title="Per queue, last hour"
            points={pts}
            pick={(p) => p.byQueue}
            empty="No queue message was delivered."
          />
          <GroupTable
            title="Per destination host, last hour"
            points={pts}
            pick={(p) => p.byHost}
            empty="Nothing was delivered."
          />
        </>
      )}
    </Page>
  );
}

function stepText(ms: number): string {
  if (ms === 60_000) return "minute";
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** Sums over the kept points per group, busiest first. */
function GroupTable(p: {
  title: string;
  points: Point[];
  pick: (p: Point) => Record<string, Outcomes>;
  empty: string;
}) {
  const sums = new Map<string, Outcomes>();
  for (const pt of p.points) {
    for (const [name, o] of Object.entries(p.pick(pt))) {
      const s = sums.get(name) ?? { delivered: 0, failed: 0, retried: 0 };
      sums.set(name, {
        delivered: s.delivered + o.delivered,
        failed: s.failed + o.failed,
        retried: s.retried + o.retried,
      });
    }
  }
  const rows = [...sums.entries()].sort(
    (a, b) => b[1].delivered + b[1].failed - (a[1].delivered + a[1].failed),
  );
  return (
    <>
      <h2 class="section">{p.title}</h2>
      <Table
        label={p.title}
        rows={rows}
        rowKey={([name]) => name}
        empty={p.empty}
        columns={[
          { title: "Name", render: ([name]) => <code>{name}</code> },
          { title: "Delivered", render: ([, o]) => fmtCount(o.delivered), class: "num" },
          { title: "Failed", render: ([, o]) => fmtCount(o.failed), class: "num" },
          { title: "Retried", render: ([, o]) => fmtCount(o.retried), class: "num" },
        ]}
      />
    </>
  );
}
