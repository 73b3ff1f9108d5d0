import { useEffect } from "preact/hooks";
import { query, queue } from "../api.js";
import { filterParams, FilterBar, Pager, useCursorPages, type Filters } from "../filters.js";
import { Badge, fmtTime, Id, Table, useInterval, useLoad, type Children } from "../ui.js";

/** One log event as GET /v2/events lists it. */
export interface LogEvent {
  time: number;
  messageId: string;
  state: string;
  url: string;
  topicName?: string;
  queueName?: string;
  scheduleId?: string;
  responseStatus?: number;
  [field: string]: unknown;
}

interface EventPage {
  events: LogEvent[];
  cursor?: string;
}

const PAGE_SIZE = 50;

/**
 * The searchable, paged event list shared by the Messages and Logs pages: filters go to the
 * server (GET /v2/events), which pages with its cursor, so 100k messages cost one page at a time.
 * `live` reloads the current page every few seconds. The filters are the page's URL's
 * (`filters`); Search hands new ones to `onApply`, which puts them in the URL. `open` is the
 * message id the URL names: its newest event is handed to `onSelect` once the rows are in.
 */
export function EventList(p: {
  fields: (keyof Filters)[];
  filters: Filters;
  onApply: (f: Filters) => void;
  live: boolean;
  selected: string | undefined;
  open?: string | undefined;
  onSelect: (e: LogEvent) => void;
  toolbar?: (filters: Filters) => Children;
}) {
  const filters = p.filters;
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      queue<EventPage>(
        `events${query({ ...filterParams(filters), count: String(PAGE_SIZE), cursor: pages.cursor })}`,
      ),
    [JSON.stringify(filters), pages.cursor],
  );
  useInterval(() => p.live && list.reload(), 3000);
  const rows = list.data?.events ?? [];
  useEffect(() => {
    const opened = p.open && rows.find((e) => e.messageId === p.open);
    if (opened) p.onSelect(opened);
  }, [list.data, p.open]);
  return (
    <>
      <FilterBar
        fields={p.fields}
        initial={filters}
        onApply={(f) => {
          pages.reset();
          p.onApply(f);
        }}
      />
      {p.toolbar?.(filters)}
      <Table
        error={list.error}
        label="events"
        stack
        rows={rows}
        rowKey={(e) => `${e.messageId}:${e.state}:${e.time}`}
        selected={undefined}
        onRow={p.onSelect}
        empty={list.loading ? "Loading…" : "No matching events."}
        columns={[
          { title: "Time", render: (e) => fmtTime(e.time), class: "nowrap" },
          { title: "State", render: (e) => <Badge text={e.state} /> },
          {
            title: "Message",
            render: (e) => (
              <Id
                value={e.messageId}
                what="message id"
                mark={p.selected === e.messageId ? "hl" : undefined}
              />
            ),
          },
          { title: "URL", render: (e) => <span class="url">{e.url}</span> },
          {
            title: "Via",
            render: (e) => e.queueName ?? e.topicName ?? (e.scheduleId ? "schedule" : ""),
          },
          { title: "Status", render: (e) => (e.responseStatus ? String(e.responseStatus) : "") },
        ]}
      />
      <Pager page={pages.page} next={list.data?.cursor} onNext={pages.next} onPrev={pages.prev} />
    </>
  );
}
