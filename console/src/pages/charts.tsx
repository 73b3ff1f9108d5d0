import { get } from "../api.js";
import { fmtCount, Page, Table, useInterval, useLoad } from "../ui.js";
import { fmtZoned } from "./shown.js";

/** GET /console/api/charts (src/admin/console/charts.ts): every worker's counts added up. */
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
  /** KV commands in the step, per database. */
  kvCommands: Record<string, number>;
  keys: Record<string, number | null>;
}
interface MissingWorker {
  worker: number;
  pid: number | null;
  error: string;
}
interface Charts {
  stepMs: number;
  now: number;
  points: Point[];
  /** The processes added up, and the workers whose counts are not in the points. */
  workers: { counted: number; missing: MissingWorker[] };
  /** Key counts when the page asked. */
  databases: { name: string; keys: number | null }[];
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
export function LineChart(p: {
  title: string;
  series: Series[];
  unit?: string;
  times: number[];
  /**
   * What the legend gives per series: its last value drawn (default: a step without one, such as
   * a step without attempts, is skipped), or its total over the points.
   */
  legend?: "last" | "total";
}) {
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
            {p.legend === "total"
              ? `${fmtCount(s.values.reduce<number>((a, v) => a + (v ?? 0), 0))} in all`
              : `${fmtCount(lastKnown(s.values))}${p.unit ?? ""}`}
          </span>
        ))}
      </div>
    </figure>
  );
}

/** The newest value that is not null. */
function lastKnown(values: (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i] ?? null;
  return null;
}

const series = (
  points: Point[],
  pick: (readonly [string, (p: Point) => number | null])[],
): Series[] =>
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
  const stepMs = d?.stepMs ?? 60_000;
  const step = stepText(stepMs);
  const names = d?.databases.map((db) => db.name) ?? [];
  const kvDbs = [...new Set([...names, ...pts.flatMap((p) => Object.keys(p.kvCommands))])];
  const keyDbs = [...new Set([...names, ...pts.flatMap((p) => Object.keys(p.keys))])];
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
      {d && <WorkersLine workers={d.workers} />}
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
              legend="total"
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
              title="KV commands per second, per database"
              unit="/s"
              times={times}
              series={series(
                pts,
                kvDbs.map(
                  (db) => [db, (p: Point) => perSecond(p.kvCommands[db] ?? 0, stepMs)] as const,
                ),
              )}
            />
            <LineChart
              title="Keys per database (end of each step)"
              times={times}
              series={series(
                pts,
                keyDbs.map((db) => [db, (p: Point) => p.keys[db] ?? null] as const),
              )}
            />
          </div>
          {d && <DatabaseTable charts={d} />}
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

/** Commands in a step as a rate, one decimal. */
function perSecond(commands: number, stepMs: number): number {
  return Math.round((commands / stepMs) * 10_000) / 10;
}

/**
 * Whose counts the charts add up: every worker's of `stashd start`, and by name each worker that
 * did not answer in time (its counts are missing from these points, not zero).
 */
function WorkersLine(p: { workers: Charts["workers"] }) {
  const { counted, missing } = p.workers;
  return (
    <>
      {counted > 1 && missing.length === 0 && (
        <p class="hint" data-testid="workers-counted">
          The counts of all {counted} worker processes, added up.
        </p>
      )}
      {missing.map((m) => (
        <p key={m.worker} class="error-line" role="alert" data-testid="worker-missing">
          Worker {m.worker}
          {m.pid === null ? "" : ` (pid ${m.pid})`} is left out of these counts ({m.error}): they
          add up {counted} of {counted + missing.length} workers.
        </p>
      ))}
    </>
  );
}

/** Per database: commands over the kept points, the last step's and the busiest step's rate, keys now. */
function DatabaseTable(p: { charts: Charts }) {
  const pts = p.charts.points;
  const rows = p.charts.databases.map((db) => {
    const steps = pts.map((pt) => pt.kvCommands[db.name] ?? 0);
    return {
      name: db.name,
      keys: db.keys,
      total: steps.reduce((a, b) => a + b, 0),
      last: perSecond(steps[steps.length - 1] ?? 0, p.charts.stepMs),
      peak: perSecond(Math.max(0, ...steps), p.charts.stepMs),
    };
  });
  return (
    <>
      <h2 class="section">Per database</h2>
      <Table
        label="Per database"
        rows={rows}
        rowKey={(r) => r.name}
        empty="No database."
        columns={[
          { title: "Database", render: (r) => <code>{r.name}</code> },
          { title: "Commands", render: (r) => fmtCount(r.total), class: "num" },
          { title: "Last step /s", render: (r) => fmtCount(r.last), class: "num" },
          { title: "Busiest step /s", render: (r) => fmtCount(r.peak), class: "num" },
          { title: "Keys now", render: (r) => fmtCount(r.keys), class: "num" },
        ]}
      />
    </>
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
