import { useState } from "preact/hooks";
import { get, query } from "../api.js";
import {
  EVENT_FILTERS,
  filterParams,
  FilterBar,
  NO_FILTERS,
  Pager,
  useCursorPages,
  type Filters,
} from "../filters.js";
import { Badge, Id, Page, Table, useLoad } from "../ui.js";
import { BulkAction, cancelPlan, cancelRefusal } from "./bulk.js";
import { fmtRelative, fmtZoned, go, hrefOf } from "./shown.js";

/** A row of GET /console/api/messages (src/admin/console/messages.ts). */
export interface MessageRow {
  messageId: string;
  url: string;
  method: string;
  state: string;
  attempts: number;
  lastStatus?: number;
  lastError?: string;
  nextDeliveryTime?: number;
  createdAt: number;
  labels: string[];
  queueName?: string;
  topicName?: string;
  scheduleId?: string;
  dlqId?: string;
}

const FIELDS = EVENT_FILTERS;

/** "State now" choices: a message's latest state, not an event's. */
export const STATES_NOW: [string, string][] = [
  ["", "any state"],
  ["IN_PROGRESS", "not finished"],
  ["CREATED", "waiting (created)"],
  ["ACTIVE", "in flight"],
  ["RETRY", "retrying"],
  ["DELIVERED", "delivered"],
  ["FAILED", "failed (in DLQ)"],
  ["CANCELED", "cancelled"],
];

/**
 * Messages: one row per message as it is now (state, attempts, last status, next attempt), newest
 * first; a row opens the message's page. `filters` are the list's starting filters (from the URL).
 */
export function MessageListPage(p: { filters?: Partial<Filters> }) {
  const [filters, setFilters] = useState<Filters>({ ...NO_FILTERS, ...p.filters });
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      get<{ messages: MessageRow[]; cursor?: string }>(
        `messages${query({ ...filterParams(filters), cursor: pages.cursor })}`,
      ),
    [filters, pages.cursor],
  );
  return (
    <Page title="Messages">
      <FilterBar
        fields={FIELDS}
        states={STATES_NOW}
        initial={filters}
        onApply={(f) => {
          setFilters(f);
          pages.reset();
        }}
      />
      <div class="bar">
        <BulkAction
          key={JSON.stringify(filters)}
          plan={cancelPlan(filters)}
          disabled={cancelRefusal(filters)}
          onDone={list.reload}
        />
      </div>
      <MessageTable
        rows={list.data?.messages ?? []}
        error={list.error}
        empty={list.loading ? "Loading…" : "No message matches."}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </Page>
  );
}

export function MessageTable(p: { rows: MessageRow[]; error: string | undefined; empty: string }) {
  return (
    <Table
      error={p.error}
      label="messages"
      stack
      rows={p.rows}
      rowKey={(m) => m.messageId}
      onRow={(m) => go(hrefOf.message(m.messageId))}
      empty={p.empty}
      columns={[
        {
          title: "Message",
          render: (m) => (
            <Id value={m.messageId} what="message id" href={hrefOf.message(m.messageId)} />
          ),
        },
        { title: "Destination", render: (m) => <span class="url">{`${m.method} ${m.url}`}</span> },
        { title: "State now", render: (m) => <Badge text={m.state} /> },
        { title: "Attempts", render: (m) => String(m.attempts), class: "num" },
        {
          title: "Last status",
          render: (m) => (
            <span title={m.lastError ?? ""}>
              {m.lastStatus === undefined ? "—" : m.lastStatus === 0 ? "no answer" : m.lastStatus}
            </span>
          ),
        },
        {
          title: "Next attempt",
          render: (m) =>
            m.nextDeliveryTime ? (
              <span title={fmtZoned(m.nextDeliveryTime)}>{fmtRelative(m.nextDeliveryTime)}</span>
            ) : m.dlqId ? (
              <a href={hrefOf.dlq(m.dlqId)} onClick={(e) => e.stopPropagation()}>
                in DLQ
              </a>
            ) : (
              "—"
            ),
          class: "nowrap",
        },
        { title: "Created", render: (m) => fmtZoned(m.createdAt), class: "nowrap" },
        {
          title: "Via / labels",
          render: (m) => (
            <span class="labels">
              {[m.queueName && `queue ${m.queueName}`, m.topicName && `group ${m.topicName}`]
                .filter(Boolean)
                .join(" · ")}
              {m.labels.map((l) => (
                <span key={l} class="label-chip">
                  {l}
                </span>
              ))}
            </span>
          ),
        },
      ]}
    />
  );
}
