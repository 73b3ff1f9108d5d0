import { useState } from "preact/hooks";
import { query, queue, queueSend } from "../api.js";
import { BulkAction, dlqPlans } from "./bulk.js";
import type { Message } from "./message-detail.js";
import {
  filterParams,
  FilterBar,
  NO_FILTERS,
  Pager,
  useCursorPages,
  type Filters,
} from "../filters.js";
import { Action, Facts, fmtTime, Page, HeaderList, Panel, Pre, Table, useLoad } from "../ui.js";

interface DlqMessage extends Message {
  dlqId: string;
  responseStatus: number;
  responseHeader?: Record<string, string[]>;
  responseBody?: string;
}

const FIELDS: (keyof Filters)[] = [
  "messageId",
  "url",
  "queueName",
  "topicName",
  "responseStatus",
  "fromDate",
  "toDate",
];

/** DLQ: failed messages, newest first; view, retry or delete one, or the selected ones at once. */
export function DlqPage() {
  const [filters, setFilters] = useState(NO_FILTERS);
  const pages = useCursorPages();
  const [checked, setChecked] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<DlqMessage | undefined>();
  const list = useLoad(
    () =>
      queue<{ messages: DlqMessage[]; cursor?: string }>(
        `dlq${query({ ...filterParams(filters), order: "latestFirst", count: "50", cursor: pages.cursor })}`,
      ),
    [filters, pages.cursor],
  );
  const rows = list.data?.messages ?? [];
  const toggle = (id: string) => {
    const next = new Set(checked);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setChecked(next);
  };
  const after = () => {
    setChecked(new Set());
    setOpen(undefined);
    list.reload();
  };
  const ids = [...checked];
  return (
    <Page
      title="Dead-letter queue"
      side={open && <DlqDetail m={open} onClose={() => setOpen(undefined)} onChanged={after} />}
    >
      <FilterBar
        fields={FIELDS}
        initial={filters}
        onApply={(f) => {
          setFilters(f);
          pages.reset();
        }}
      />
      <div class="bar">
        <Action
          label={`Retry selected (${ids.length})`}
          kind="primary"
          disabled={ids.length === 0}
          done="Retried"
          run={() => queueSend("POST", "dlq/retry", { dlqIds: ids }).then(after)}
        />
        <Action
          label={`Delete selected (${ids.length})`}
          kind="danger"
          disabled={ids.length === 0}
          confirm={`Delete ${ids.length} DLQ messages?`}
          done="Deleted"
          run={() => queueSend("DELETE", "dlq", { dlqIds: ids }).then(after)}
        />
        {dlqPlans(filters).map((plan) => (
          <BulkAction key={`${plan.label}${JSON.stringify(filters)}`} plan={plan} onDone={after} />
        ))}
      </div>
      <Table
        error={list.error}
        label="dlq"
        rows={rows}
        rowKey={(m) => m.dlqId}
        selected={open?.dlqId}
        onRow={setOpen}
        empty={list.loading ? "Loading…" : "The DLQ is empty."}
        columns={[
          {
            title: "",
            render: (m) => (
              <input
                type="checkbox"
                aria-label={`select ${m.dlqId}`}
                checked={checked.has(m.dlqId)}
                onClick={(e) => e.stopPropagation()}
                onChange={() => toggle(m.dlqId)}
              />
            ),
          },
          {
            title: "Failed at",
            render: (m) => fmtTime(Number(m.dlqId.split("-")[0])),
            class: "nowrap",
          },
          { title: "Message", render: (m) => <code>{m.messageId}</code> },
          { title: "URL", render: (m) => <span class="url">{m.url}</span> },
          { title: "Status", render: (m) => String(m.responseStatus) },
          { title: "Via", render: (m) => m.queueName ?? m.topicName ?? "" },
        ]}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </Page>
  );
}

function DlqDetail(p: { m: DlqMessage; onClose: () => void; onChanged: () => void }) {
  const { m } = p;
  const id = encodeURIComponent(m.dlqId);
  return (
    <Panel title={`DLQ ${m.dlqId}`} onClose={p.onClose}>
      <div class="bar">
        <Action
          label="Retry"
          kind="primary"
          done="Retried: a new message was published"
          run={() => queueSend("POST", `dlq/retry/${id}`).then(p.onChanged)}
        />
        <Action
          label="Delete"
          kind="danger"
          confirm="Delete this DLQ message?"
          done="Deleted"
          run={() => queueSend("DELETE", `dlq/${id}`).then(p.onChanged)}
        />
      </div>
      <Facts
        items={[
          ["Message", <code>{m.messageId}</code>],
          ["Destination", <span class="url">{`${m.method} ${m.url}`}</span>],
          ["Created", fmtTime(m.createdAt)],
          ["Response status", String(m.responseStatus)],
        ]}
      />
      <h3>Request headers</h3>
      <HeaderList headers={m.header} />
      <h3>Request body</h3>
      <Pre value={m.body ?? (m.bodyBase64 ? `(base64) ${m.bodyBase64}` : "(empty)")} />
      <h3>Response headers</h3>
      <HeaderList headers={m.responseHeader} />
      <h3>Response body</h3>
      <Pre value={m.responseBody ?? "(empty)"} />
    </Panel>
  );
}
