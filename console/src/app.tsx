import { CHOICES, chooseRefresh, refreshNow, useRefreshChoice, useRefreshNow } from "./refresh.js";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { useRoute, type Route } from "./routes.js";
import { ApiError, get, request, UNREACHABLE, whenLoggedOut } from "./api.js";
import { Login } from "./login.js";
import { DlqPage } from "./pages/dlq.js";
import { FlowControlPage } from "./pages/flow-control.js";
import { KvPage } from "./pages/kv.js";
import type { DataSize } from "./data-level.js";
import { DataMark } from "./pages/kv-data.js";
import { LogsPage } from "./pages/logs.js";
import { filtersFrom } from "./filters.js";
import { MessageListPage } from "./pages/message-list.js";
import { MessagePage } from "./pages/message-page.js";
import { ChartsPage } from "./pages/charts.js";
import { PendingPage } from "./pages/pending.js";
import { RequestBuilderPage } from "./pages/request-builder.js";
import { QueuesPage } from "./pages/queues.js";
import { SchedulesPage } from "./pages/schedules.js";
import { SigningKeysPage } from "./pages/signing-keys.js";
import { UrlGroupsPage } from "./pages/url-groups.js";
import { RunPage } from "./pages/workflow-run.js";
import { WorkflowsPage } from "./pages/workflows.js";
import { announceReconnect, fmtCount, fmtTime, messageOf, Toasts, useInterval } from "./ui.js";

export interface Summary {
  queue: {
    ready: number;
    delayed: number;
    inFlight: number;
    pending: number;
    /** Message entries: what the DLQ page lists. */
    dlq: number;
    /** Workflow runs' entries: what the workflow DLQ tab lists. */
    workflowDlq: number;
  } | null;
  schedules: number | null;
  queues: number | null;
  urlGroups: number | null;
  flowControlKeys: number | null;
  databases: { name: string; keys: number | null; data: DataSize }[];
  /** Sources that did not answer (src/admin/console/summary.ts). */
  down: string[];
}

/** What the top bar says about the connection to stashd and its databases. */
interface Connection {
  state: "connecting" | "live" | "offline";
  /** Why offline: "stashd is unreachable", "queue not answering", ... */
  detail: string;
  /** When the last complete summary came (ms). */
  lastLive: number | undefined;
}

interface Session {
  databases: string[];
}

/** Live counts refresh this often (the summary is a handful of O(1)-ish reads). */
const SUMMARY_EVERY_MS = 3000;
/**
 * A summary not answered within this is "offline" (the server gives each source 2 s), so a
 * stopped stashd or database shows within SUMMARY_EVERY_MS + this.
 */
const SUMMARY_TIMEOUT_MS = 4000;

const NAV: [string, string][] = [
  ["messages", "Messages"],
  ["pending", "Pending now"],
  ["publish", "Publish"],
  ["charts", "Charts"],
  ["dlq", "DLQ"],
  ["logs", "Logs"],
  ["schedules", "Schedules"],
  ["queues", "Queues"],
  ["url-groups", "URL groups"],
  ["workflows", "Workflow runs"],
  ["flow-control", "Flow control"],
  ["signing-keys", "Signing keys"],
];

/**
 * The databases the side bar lists: the live summary's (refreshed every SUMMARY_EVERY_MS, so one
 * created or removed with `stashd db` shows without a reload), or the session's while no summary
 * has come.
 */
function databaseNames(session: Session, summary: Summary | undefined): string[] {
  return summary ? summary.databases.map((d) => d.name) : session.databases;
}

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const check = () => get<Session>("session").then(setSession, () => setSession(null));
  // At mount, not a frame later (useEffect): every page waits for the session (bench/console.ts).
  useLayoutEffect(() => {
    whenLoggedOut(() => setSession(null));
    void check();
  }, []);
  if (session === undefined) return <div class="boot">Loading…</div>;
  return (
    <>
      {session ? (
        <Shell session={session} onLogout={() => setSession(null)} />
      ) : (
        <Login onDone={check} />
      )}
      <Toasts />
    </>
  );
}

function Shell(p: { session: Session; onLogout: () => void }) {
  const route = useRoute();
  const [summary, setSummary] = useState<Summary | undefined>();
  const [conn, setConn] = useState<Connection>({
    state: "connecting",
    detail: "",
    lastLive: undefined,
  });
  const wasOffline = useRef(false);
  const update = (next: Connection, counts: Summary | undefined) => {
    // Counts are shown only from a summary of now: offline shows "—", never the last numbers.
    setSummary(counts);
    setConn(next);
    if (wasOffline.current && next.state === "live") announceReconnect();
    wasOffline.current = next.state === "offline";
  };
  const poll = () =>
    void get<Summary>("summary", SUMMARY_TIMEOUT_MS).then(
      (s) => update(connectionOf(s, conn.lastLive), s),
      (err: unknown) => update(offline(err, conn.lastLive), undefined),
    );
  const page = route.page || "messages";
  // Counts refresh on every page change too, so a page never opens next to stale numbers.
  useEffect(poll, [page]);
  useInterval(poll, SUMMARY_EVERY_MS);
  useRefreshNow(poll);
  const logout = async () => {
    await request("POST", "logout").catch(() => undefined);
    p.onLogout();
  };
  return (
    <div class="shell">
      <nav class="side">
        <div class="brand">stashd</div>
        <div class="nav-group">Queue</div>
        {NAV.map(([id, label]) => (
          <a key={id} href={`#/${id}`} class={page === id ? "active" : ""}>
            <span>{label}</span>
            <span class="count">{navCount(id, summary)}</span>
          </a>
        ))}
        <div class="nav-group">KV databases</div>
        {databaseNames(p.session, summary).map((db) => (
          <a
            key={db}
            href={`#/kv/${encodeURIComponent(db)}`}
            class={page === "kv" && route.rest[0] === db ? "active" : ""}
          >
            <span>{db}</span>
            <DataMark data={databaseOf(summary, db)?.data} />
            <span class="count">{fmtCount(databaseOf(summary, db)?.keys)}</span>
          </a>
        ))}
        <button type="button" class="btn plain logout" onClick={logout}>
          Log out
        </button>
      </nav>
      <main class="content">
        <StatusBar summary={summary} conn={conn} />
        {conn.state === "offline" && (
          <p class="offline-banner" role="alert">
            Offline ({conn.detail}): what this page shows was loaded before and may be out of date;
            it loads again when the connection is back.
          </p>
        )}
        <PageFor route={route} session={p.session} summary={summary} />
      </main>
    </div>
  );
}

/** A database's entry in the live summary (its key count and data size), if it came. */
function databaseOf(
  s: Summary | undefined,
  name: string,
): Summary["databases"][number] | undefined {
  return s?.databases.find((d) => d.name === name);
}

function navCount(id: string, s: Summary | undefined): string {
  if (!s) return "";
  const n: Record<string, number | null | undefined> = {
    messages: s.queue?.pending,
    dlq: s.queue?.dlq,
    schedules: s.schedules,
    queues: s.queues,
    "url-groups": s.urlGroups,
    "flow-control": s.flowControlKeys,
  };
  return id in n ? fmtCount(n[id]) : "";
}

function connectionOf(s: Summary, lastLive: number | undefined): Connection {
  if (s.down.length === 0) return { state: "live", detail: "", lastLive: Date.now() };
  return { state: "offline", detail: `${s.down.join(", ")} not answering`, lastLive };
}

function offline(err: unknown, lastLive: number | undefined): Connection {
  const unreachable = err instanceof ApiError && err.status === UNREACHABLE;
  return {
    state: "offline",
    detail: unreachable ? "stashd is unreachable" : messageOf(err),
    lastLive,
  };
}

/** The connection indicator: green "live", red "offline" with the reason, grey "connecting". */
function ConnectionBadge(p: { conn: Connection }) {
  const { state, detail, lastLive } = p.conn;
  const paused = useRefreshChoice() === 0;
  const label =
    state === "live"
      ? paused
        ? "live, paused"
        : "live"
      : state === "offline"
        ? "offline"
        : "connecting…";
  const title =
    state === "live"
      ? paused
        ? `refresh paused: counts as of ${lastLive ? fmtTime(lastLive) : "the last load"}`
        : "counts refreshed at the pace chosen beside"
      : `${detail}${lastLive ? `; last live ${fmtTime(lastLive)}` : ""}`;
  return (
    <span
      class={`conn ${state}${paused ? " paused" : ""}`}
      data-connection={state}
      title={title}
      role="status"
    >
      ● {label}
      {state === "offline" && <span class="conn-detail">{detail}</span>}
    </span>
  );
}

/**
 * The status bar's one refresh control (refresh.ts): how often live parts refresh, paused
 * included, and "Refresh now", which loads everything on screen again at once, paused or not.
 */
function RefreshControl() {
  const ms = useRefreshChoice();
  return (
    <div class="refresh-choice">
      <select
        aria-label="Refresh"
        value={String(ms)}
        onChange={(e) => chooseRefresh(Number((e.target as HTMLSelectElement).value))}
      >
        {CHOICES.map((c) => (
          <option key={c.ms} value={String(c.ms)}>
            {c.ms === 0 ? "Refresh paused" : `Refresh ${c.label}`}
          </option>
        ))}
      </select>
      <button
        type="button"
        class="btn plain"
        title="Load the counts and everything on this page again now"
        onClick={refreshNow}
      >
        Refresh now
      </button>
    </div>
  );
}

function StatusBar(p: { summary: Summary | undefined; conn: Connection }) {
  const q = p.summary?.queue;
  const items: [string, number | null | undefined][] = [
    ["pending", q?.pending],
    ["ready", q?.ready],
    ["delayed", q?.delayed],
    ["in flight", q?.inFlight],
    // Counted apart on the server (lua/depth.lua), so each matches its own list.
    ["DLQ", q?.dlq],
    ["workflow DLQ", q?.workflowDlq],
  ];
  return (
    <div class="status" aria-label="Live counts">
      {items.map(([label, n]) => (
        <div key={label} class="stat">
          <span class="n" data-stat={label}>
            {fmtCount(n)}
          </span>
          <span class="l">{label}</span>
        </div>
      ))}
      <ConnectionBadge conn={p.conn} />
      <RefreshControl />
    </div>
  );
}

/**
 * The page of a route (routes.ts has the URL forms). A list page is keyed by its filters, so new
 * filters (a link, back/forward) start it afresh at its first page; the object open is a prop.
 */
function PageFor(p: { route: Route; session: Session; summary: Summary | undefined }) {
  const { page, rest, params } = p.route;
  const id = rest[0];
  const filters = params.toString();
  switch (page) {
    case "pending":
      return <PendingPage />;
    case "charts":
      return <ChartsPage />;
    case "publish":
      return rest[0] === "schedule" ? (
        <RequestBuilderPage key={rest[1] ?? ""} mode="schedule" scheduleId={rest[1]} />
      ) : (
        <RequestBuilderPage key="publish" mode="publish" />
      );
    case "dlq":
      return <DlqPage key={filters} id={id} params={params} />;
    case "logs":
      return <LogsPage key={filters} params={params} />;
    case "schedules":
      return <SchedulesPage id={id} />;
    case "queues":
      return <QueuesPage name={id} />;
    case "url-groups":
      return <UrlGroupsPage />;
    case "flow-control":
      return <FlowControlPage />;
    case "signing-keys":
      return <SigningKeysPage />;
    case "workflows":
      return rest[0] === "runs" && rest[1] !== undefined ? (
        <RunPage key={rest[1]} workflowRunId={rest[1]} />
      ) : (
        <WorkflowsPage key={`${id ?? ""}?${filters}`} tab={id} params={params} />
      );
    case "kv": {
      const db = id ?? p.session.databases[0] ?? "default";
      const key = rest[1] === "key" ? rest[2] : undefined;
      const data = databaseOf(p.summary, db)?.data;
      return <KvPage key={db} db={db} selected={key} params={params} data={data} />;
    }
    default:
      if (page === "messages" && id !== undefined) return <MessagePage key={id} id={id} />;
      return <MessageListPage key={filters} filters={filtersFrom(params)} />;
  }
}
