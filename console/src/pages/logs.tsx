import { useState } from "preact/hooks";
import { filterParams, filtersFrom, type Filters } from "../filters.js";
import { href, navigate } from "../routes.js";
import { Page, Panel, Pre } from "../ui.js";
import { EventList, type LogEvent } from "./events.js";

/** The filters GET /v2/events accepts (src/queue/domain/filters.ts, scope "logs"). */
const FIELDS: (keyof Filters)[] = [
  "messageId",
  "state",
  "url",
  "queueName",
  "topicName",
  "scheduleId",
  "label",
  "flowControlKey",
  "workflowRunId",
  "fromDate",
  "toDate",
];

/** Logs: every state change of every message, newest first, refreshed live; filters in the URL. */
export function LogsPage(p: { params: URLSearchParams }) {
  const [selected, setSelected] = useState<LogEvent | undefined>();
  const [live, setLive] = useState(true);
  return (
    <Page
      title="Logs"
      actions={
        <label class="toggle">
          <input
            type="checkbox"
            checked={live}
            onChange={(e) => setLive((e.target as HTMLInputElement).checked)}
          />
          live
        </label>
      }
      side={
        selected && (
          <Panel
            title={`${selected.state} ${selected.messageId}`}
            onClose={() => setSelected(undefined)}
          >
            <p>
              <a href={href.message(selected.messageId)}>Open the message</a>
            </p>
            <Pre value={selected} />
          </Panel>
        )
      }
    >
      <EventList
        fields={FIELDS}
        filters={filtersFrom(p.params)}
        onApply={(f) => navigate(href.list("logs", filterParams(f, false)))}
        live={live}
        selected={selected?.messageId}
        onSelect={setSelected}
      />
    </Page>
  );
}
