import { useState } from "preact/hooks";
import { query, queue } from "../api.js";
import {
  filterParams,
  FilterBar,
  NO_FILTERS,
  Pager,
  useCursorPages,
  type Filters,
} from "../filters.js";
import { Badge, fmtTime, Table, useInterval, useLoad, type Children } from "../ui.js";

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
 * `live` reloads the current page every few seconds.
 */
export function EventList(p: {
  fields: (keyof Filters)[];
  live: boolean;
  selected: string | undefined;
  onSelect: (e: LogEvent) => void;
  toolbar?: (filters: Filters) => Children;
}) {
  const [filters, setFilters] = useState(NO_FILTERS);
  const pages = useCursorPages();
  const list = useLoad(
    () =>
      queue<EventPage>(
        `events${query({ ...filterParams(filters), count: String(PAGE_SIZE), cursor: pages.cursor })}`,
      ),
    [filters, pages.cursor],
  );
  useInterval(() => p.live && list.reload(), 3000);
  const rows = list.data?.events ?? [];
  return (
    <>
      <FilterBar
        fields={p.fields}
        initial={filters}
        onApply={(f) => {
          setFilters(f);
          pages.reset();
        }}
      />
      {p.toolbar?.(filters)}
      <Table
        error={list.error}
        label="events"
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
              <code class={p.selected === e.messageId ? "hl" : ""}>{e.messageId}</code>
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
