import { useState } from "preact/hooks";
import { get, query, queue, queueSend } from "../api.js";
import { BulkAction, dlqPlans } from "./bulk.js";
import { DlqActions, DlqOutcomeLine, type DlqOutcome } from "./dlq-actions.js";
import { Timeline, type Detail } from "./message-page.js";
import { RunLink, type Message } from "./message-detail.js";
import {
  filterParams,
  FilterBar,
  filtersFrom,
  Pager,
  useCursorPages,
  type Filters,
} from "../filters.js";
import { href, navigate } from "../routes.js";
import {
  Action,
  ErrorLine,
  Facts,
  fmtTime,
  Page,
  HeaderList,
  Id,
  Panel,
  Pre,
  Table,
  useLoad,
} from "../ui.js";

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

/**
 * DLQ: failed messages, newest first; view, retry or delete one, or the selected ones at once.
 * The URL holds the filters (`#/dlq?url=...`) and the entry open (`#/dlq/<dlqId>`, read by id, so
 * a pasted link opens it whatever page of the list it is on).
 */
export function DlqPage(p: { id: string | undefined; params: URLSearchParams }) {
  const filters = filtersFrom(p.params);
  const listHref = href.list("dlq", filterParams(filters, false));
  const pages = useCursorPages();
  const [checked, setChecked] = useState<Set<string>>(new Set());
  const [outcome, setOutcome] = useState<DlqOutcome | undefined>();
  const opened = useLoad(
    () =>
      p.id === undefined
        ? Promise.resolve(undefined)
        : queue<DlqMessage>(`dlq/${encodeURIComponent(p.id)}`),
    [p.id],
  );
  const open = opened.data;
  const list = useLoad(
    () =>
      queue<{ messages: DlqMessage[]; cursor?: string }>(
        `dlq${query({ ...filterParams(filters), order: "latestFirst", count: "50", cursor: pages.cursor })}`,
      ),
    [JSON.stringify(filters), pages.cursor],
  );
  const rows = list.data?.messages ?? [];
  const toggle = (id: string) => {
    const next = new Set(checked);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setChecked(next);
  };
  const close = () => navigate(listHref);
  const after = () => {
    setChecked(new Set());
    close();
    list.reload();
  };
  const done = (o: DlqOutcome) => {
    setOutcome(o);
    setChecked(new Set());
    close();
  };
  const ids = [...checked];
  const side =
    p.id === undefined ? undefined : open ? (
      <DlqDetail m={open} onClose={close} onDone={done} />
    ) : (
      <Panel title={`DLQ ${p.id}`} onClose={close}>
        <ErrorLine error={opened.error} />
        {opened.loading && <p class="hint">Loading…</p>}
      </Panel>
    );
  return (
    <Page title="Dead-letter queue" side={side}>
      <FilterBar
        fields={FIELDS}
        initial={filters}
        onApply={(f) => {
          pages.reset();
          navigate(href.list("dlq", filterParams(f, false)));
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
      <DlqOutcomeLine outcome={outcome} />
      <Table
        error={list.error}
        label="dlq"
        stack
        rows={rows}
        rowKey={(m) => m.dlqId}
        selected={p.id}
        onRow={(m) => navigate(href.dlq(m.dlqId) + listHref.replace(/^#\/dlq/, ""))}
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
          { title: "Message", render: (m) => <Id value={m.messageId} what="message id" /> },
          { title: "URL", render: (m) => <span class="url">{m.url}</span> },
          { title: "Status", render: (m) => String(m.responseStatus) },
          { title: "Via", render: (m) => m.queueName ?? m.topicName ?? "" },
        ]}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </Page>
  );
}

/**
 * A DLQ entry: retry or delete it, its request, the last response, and every attempt the log
 * kept (the console's message view: GET /v2/events by message id).
 */
function DlqDetail(p: { m: DlqMessage; onClose: () => void; onDone: (o: DlqOutcome) => void }) {
  const { m } = p;
  return (
    <Panel title={`DLQ ${m.dlqId}`} onClose={p.onClose}>
      <DlqActions dlqId={m.dlqId} onDone={p.onDone} />
      <Facts
        items={[
          [
            "Message",
            <Id value={m.messageId} what="message id" href={href.message(m.messageId)} />,
          ],
          ["Destination", <span class="url">{`${m.method} ${m.url}`}</span>],
          ["Created", fmtTime(m.createdAt)],
          ["Response status", String(m.responseStatus)],
          ["Workflow run", <RunLink messageId={m.messageId} />],
        ]}
      />
      <Attempts messageId={m.messageId} />
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

/** The attempts of a dead message, each with its time, status or error and response excerpt. */
function Attempts(p: { messageId: string }) {
  const detail = useLoad(
    () => get<Detail>(`messages/${encodeURIComponent(p.messageId)}`),
    [p.messageId],
  );
  const attempts = detail.data?.attempts;
  return (
    <section aria-label="attempt history">
      <h3>Attempts{attempts ? ` (${attempts.length})` : ""}, oldest first</h3>
      <ErrorLine error={detail.error} />
      {attempts ? <Timeline attempts={attempts} /> : detail.loading && <p class="hint">Loading…</p>}
    </section>
  );
}
