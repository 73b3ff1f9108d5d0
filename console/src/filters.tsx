import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  EVENT_FILTERS as SHARED_EVENT_FILTERS,
  FILTER_LABELS,
  type FilterKey,
} from "../../src/shared/message-filters.js";
import { paramsOf } from "./routes.js";
import { Field, Form, Select } from "./ui.js";

/**
 * The SDKs' list filters (docs/qstash-protocol.md, logs and DLQ), as the console offers them: one
 * value per key of src/shared/message-filters.ts ("" when not set).
 */
export type Filters = Record<FilterKey, string>;

/**
 * The filters of the Messages and Logs pages, in bar order: one list with the console API's
 * (src/shared/message-filters.ts).
 */
export const EVENT_FILTERS: (keyof Filters)[] = [...SHARED_EVENT_FILTERS];

export const NO_FILTERS: Filters = {
  messageId: "",
  state: "",
  url: "",
  topicName: "",
  queueName: "",
  scheduleId: "",
  label: "",
  flowControlKey: "",
  workflowRunId: "",
  responseStatus: "",
  host: "",
  path: "",
  callerIp: "",
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

/** The filters a URL's query names (#/logs?state=ERROR); the others empty. */
export function filtersFrom(params: URLSearchParams): Filters {
  return paramsOf(params, Object.keys(NO_FILTERS) as (keyof Filters)[]);
}

/**
 * Query parameters of the filters: for the API (dates as epoch ms, as it takes them), or with
 * `forApi` false for the console's URL (dates as typed, so the form shows them again).
 */
export function filterParams(f: Filters, forApi = true): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(f)) {
    if (v === "") continue;
    const date = forApi && (k === "fromDate" || k === "toDate");
    out[k] = date ? String(new Date(v).getTime()) : v;
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
  // The fields follow the URL (back/forward, a pasted link), not only what was typed.
  const shown = JSON.stringify(p.initial);
  useEffect(() => setF(p.initial), [shown]);
  const set = (k: keyof Filters) => (v: string) => setF((cur) => ({ ...cur, [k]: v }));
  return (
    <FilterForm onSubmit={() => p.onApply(f)} set={Object.values(p.initial)}>
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
            label={FILTER_LABELS[k]}
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
    </FilterForm>
  );
}

/**
 * A filter bar's form. On a phone (under 760 px) its fields fold behind a "Filters" button that
 * says how many are set, and open two to a row (folding again on Search), so the list is on the
 * first screen; wider, the fields are always shown and the button is hidden (style.css, .filters).
 */
export function FilterForm(p: {
  onSubmit: () => void;
  /** The applied values (the URL's), to count those set. */
  set: string[];
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const count = p.set.filter((v) => v !== "").length;
  return (
    <Form
      onSubmit={() => {
        setOpen(false);
        p.onSubmit();
      }}
      class={`bar filters${open ? " open" : ""}`}
    >
      <button
        type="button"
        class="btn plain filters-toggle"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        {open ? "Hide filters" : count > 0 ? `Filters (${count} set)` : "Filters"}
      </button>
      {p.children}
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
