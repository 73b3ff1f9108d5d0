import { useState } from "preact/hooks";
import { get, query } from "../api.js";
import { fmtCount, Page, Table, useInterval, useLoad } from "../ui.js";
import { fmtRelative, fmtZoned, hrefOf } from "./shown.js";

/** GET /console/api/pending (src/admin/console/pending.ts). */
type State = "ready" | "delayed" | "inFlight" | "retrying" | "waiting" | "other";
type Counts = Record<State, number>;
interface PendingRow {
  messageId: string;
  url: string;
  state: State;
  until?: number;
  createdAt: number;
  retried: number;
  queueName?: string;
  topicName?: string;
  flowControlKey?: string;
}
interface PendingNow {
  now: number;
  total: number;
  scanned: number;
  counts: Counts;
  groups: { kind: "queue" | "urlGroup"; name: string; counts: Counts }[];
  rows: PendingRow[];
}

type Group = PendingNow["groups"][number];

const TABS: [State, string, string][] = [
  ["ready", "Ready", "due now, waiting for a delivery slot"],
  ["delayed", "Delayed", "due later (a delay or not-before)"],
  ["inFlight", "In flight", "an attempt is running"],
  ["retrying", "Retrying", "an attempt failed; waiting for the next"],
  ["waiting", "Waiting", "held by a FIFO queue or a flow-control key"],
  ["other", "Other", "none of these (a workflow step waiting for an event)"],
];
const UNTIL: Record<State, string> = {
  ready: "Due since",
  delayed: "Due at",
  inFlight: "Lease until",
  retrying: "Next attempt",
  waiting: "—",
  other: "—",
};
/** The page refreshes this often while visible. */
const REFRESH_MS = 5000;

/**
 * Pending now, like Bull Board's tabs: every unfinished message in exactly one state, per queue
 * and per URL group, with counts that add up. `state`, `queueName`, `topicName`: the starting
 * tab and group (from the URL).
 */
export function PendingPage(p: { state?: State; queueName?: string; topicName?: string }) {
  const [tab, setTab] = useState<State>(p.state ?? "ready");
  const [group, setGroup] = useState({ queueName: p.queueName, topicName: p.topicName });
  const data = useLoad(
    () => get<PendingNow>(`pending${query({ state: tab, ...group })}`),
    [tab, group.queueName, group.topicName],
  );
  useInterval(data.reload, REFRESH_MS);
  const d = data.data;
  const label = group.queueName
    ? `queue ${group.queueName}`
    : group.topicName
      ? `URL group ${group.topicName}`
      : undefined;
  return (
    <Page title="Pending now" actions={<span class="hint">refreshed every 5 s</span>}>
      {d && <Sum d={d} />}
      <div class="tabs pending-tabs" role="tablist">
        {TABS.map(([id, name, help]) => (
          <button
            key={id}
            type="button"
            role="tab"
            aria-selected={tab === id}
            class={`tab ${tab === id ? "active" : ""}`}
            title={help}
            onClick={() => setTab(id)}
          >
            {name} <span class="count">{fmtCount(d?.counts[id])}</span>
          </button>
        ))}
      </div>
      {label && (
        <p class="bar">
          Showing {label} only.{" "}
          <button
            type="button"
            class="btn plain"
            onClick={() => setGroup({ queueName: undefined, topicName: undefined })}
          >
            Show all
          </button>
        </p>
      )}
      <Table
        error={data.error}
        label="pending"
        rows={d?.rows ?? []}
        rowKey={(r) => r.messageId}
        onRow={(r) => (location.hash = hrefOf.message(r.messageId))}
        empty={data.loading && !d ? "Loading…" : `No ${tabName(tab).toLowerCase()} message.`}
        columns={[
          {
            title: "Message",
            render: (r) => (
              <a href={hrefOf.message(r.messageId)}>
                <code>{r.messageId}</code>
              </a>
            ),
          },
          { title: "Destination", render: (r) => <span class="url">{r.url}</span> },
          {
            title: UNTIL[tab],
            render: (r) =>
              r.until ? (
                <span title={fmtZoned(r.until)}>
                  {fmtZoned(r.until)} ({fmtRelative(r.until, d?.now)})
                </span>
              ) : (
                "—"
              ),
            class: "nowrap",
          },
          { title: "Retried", render: (r) => String(r.retried), class: "num" },
          { title: "Created", render: (r) => fmtZoned(r.createdAt), class: "nowrap" },
          {
            title: "Via",
            render: (r) =>
              [
                r.queueName && `queue ${r.queueName}`,
                r.topicName && `group ${r.topicName}`,
                r.flowControlKey && `key ${r.flowControlKey}`,
              ]
                .filter(Boolean)
                .join(" · "),
          },
        ]}
      />
      {d && d.rows.length === 100 && <p class="hint">The oldest 100 are shown.</p>}
      <h2 class="section">Per queue and URL group</h2>
      <Table
        label="pending groups"
        rows={d?.groups ?? []}
        rowKey={(g) => `${g.kind}:${g.name}`}
        onRow={(g) =>
          setGroup(
            g.kind === "queue"
              ? { queueName: g.name, topicName: undefined }
              : { queueName: undefined, topicName: g.name },
          )
        }
        empty="No pending message is in a queue or a URL group."
        columns={[
          { title: "", render: (g) => (g.kind === "queue" ? "Queue" : "URL group") },
          { title: "Name", render: (g) => <code>{g.name}</code> },
          ...TABS.map(([id, name]) => ({
            title: name,
            render: (g: Group) => fmtCount(g.counts[id]),
            class: "num",
          })),
          {
            title: "Total",
            render: (g) => fmtCount(Object.values(g.counts).reduce((a, b) => a + b, 0)),
            class: "num",
          },
        ]}
      />
    </Page>
  );
}

function tabName(s: State): string {
  return TABS.find(([id]) => id === s)?.[1] ?? s;
}

/** "3,302 pending = 1 ready + 2 delayed + …": the counts add up, or say what they cover. */
function Sum(p: { d: PendingNow }) {
  const { d } = p;
  const parts = TABS.map(([id, name]) => `${fmtCount(d.counts[id])} ${name.toLowerCase()}`).join(
    " + ",
  );
  return (
    <p class="pending-sum" data-pending-total={d.total}>
      <strong>{fmtCount(d.total)} pending</strong>
      {d.scanned === d.total
        ? ` = ${parts}`
        : ` (the oldest ${fmtCount(d.scanned)} counted: ${parts})`}
      {` · as of ${fmtZoned(d.now)}`}
    </p>
  );
}
