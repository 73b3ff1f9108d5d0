import { useState } from "preact/hooks";
import { Field, Form, Select } from "./ui.js";

/** The SDKs' list filters (docs/qstash-protocol.md, logs and DLQ), as the console offers them. */
export interface Filters {
  messageId: string;
  state: string;
  url: string;
  topicName: string;
  queueName: string;
  scheduleId: string;
  label: string;
  flowControlKey: string;
  responseStatus: string;
  host: string;
  path: string;
  callerIp: string;
  workflowRunId: string;
  fromDate: string;
  toDate: string;
}

/** The filters GET /v2/events accepts (src/queue/domain/filters.ts, scope "logs"), in bar order. */
export const EVENT_FILTERS: (keyof Filters)[] = [
  "messageId",
  "state",
  "url",
  "queueName",
  "topicName",
  "scheduleId",
  "label",
  "flowControlKey",
  "host",
  "path",
  "callerIp",
  "workflowRunId",
  "fromDate",
  "toDate",
];

export const NO_FILTERS: Filters = {
  messageId: "",
  state: "",
  url: "",
  topicName: "",
  queueName: "",
  scheduleId: "",
  label: "",
  flowControlKey: "",
  responseStatus: "",
  host: "",
  path: "",
  callerIp: "",
  workflowRunId: "",
  fromDate: "",
  toDate: "",
};

export const STATES: [string, string][] = [
  ["", "any state"],
  ["CREATED", "created"],
  ["ACTIVE", "active"],
  ["RETRY", "retry"],
  ["ERROR", "error"],
  ["IN_PROGRESS", "in progress"],
  ["DELIVERED", "delivered"],
  ["FAILED", "failed"],
  ["CANCEL_REQUESTED", "cancel requested"],
  ["CANCELLED", "cancelled"],
];

/** Query parameters of the filters (dates as epoch ms, as the API takes them). */
export function filterParams(f: Filters): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(f)) {
    if (v === "") continue;
    out[k] = k === "fromDate" || k === "toDate" ? String(new Date(v).getTime()) : v;
  }
  return out;
}

/** The filter bar; `fields` picks which filters a page offers. */
export function FilterBar(p: {
  fields: (keyof Filters)[];
  initial: Filters;
  onApply: (f: Filters) => void;
  /** The State choices (the events' states unless given). */
  states?: [string, string][];
}) {
  const [f, setF] = useState(p.initial);
  const set = (k: keyof Filters) => (v: string) => setF((cur) => ({ ...cur, [k]: v }));
  const labels: Record<keyof Filters, string> = {
    messageId: "Message id",
    state: "State",
    url: "URL",
    topicName: "URL group",
    queueName: "Queue",
    scheduleId: "Schedule id",
    label: "Label",
    flowControlKey: "Flow-control key",
    responseStatus: "Response status",
    host: "Host",
    path: "Path",
    callerIp: "Caller IP",
    workflowRunId: "Workflow run",
    fromDate: "From",
    toDate: "To",
  };
  return (
    <Form onSubmit={() => p.onApply(f)} class="bar filters">
      {p.fields.map((k) =>
        k === "state" ? (
          <Select
            key={k}
            label="State"
            value={f.state}
            options={p.states ?? STATES}
            onChange={set(k)}
          />
        ) : (
          <Field
            key={k}
            label={labels[k]}
            value={f[k]}
            onInput={set(k)}
            type={k === "fromDate" || k === "toDate" ? "datetime-local" : "text"}
            width={k === "messageId" || k === "url" ? "16rem" : "9rem"}
          />
        ),
      )}
      <SearchButtons
        onClear={() => {
          setF(NO_FILTERS);
          p.onApply(NO_FILTERS);
        }}
      />
    </Form>
  );
}

/** Search (submits the filter form) and Clear, the end of every filter bar. */
export function SearchButtons(p: { onClear: () => void }) {
  return (
    <>
      <button type="submit" class="btn primary">
        Search
      </button>
      <button type="button" class="btn plain" onClick={p.onClear}>
        Clear
      </button>
    </>
  );
}

/** Cursor paging state: the cursors of the pages before, to go back. */
export function useCursorPages() {
  const [stack, setStack] = useState<string[]>([""]);
  const cursor = stack[stack.length - 1] ?? "";
  return {
    cursor,
    page: stack.length,
    next: (c: string) => setStack([...stack, c]),
    prev: () => setStack(stack.length > 1 ? stack.slice(0, -1) : stack),
    reset: () => setStack([""]),
  };
}

export function Pager(p: {
  page: number;
  next: string | undefined;
  onNext: (c: string) => void;
  onPrev: () => void;
}) {
  return (
    <div class="pager">
      <button type="button" class="btn plain" disabled={p.page <= 1} onClick={p.onPrev}>
        ‹ Prev
      </button>
      <span>page {p.page}</span>
      <button
        type="button"
        class="btn plain"
        disabled={!p.next}
        onClick={() => p.next && p.onNext(p.next)}
      >
        Next ›
      </button>
    </div>
  );
}
