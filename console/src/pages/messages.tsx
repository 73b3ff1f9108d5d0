import { useState } from "preact/hooks";
import { queueSend } from "../api.js";
import { filterParams, type Filters } from "../filters.js";
import { Action, Page } from "../ui.js";
import { EventList, type LogEvent } from "./events.js";
import { MessageDetail } from "./message-detail.js";

const FIELDS: (keyof Filters)[] = [
  "messageId",
  "state",
  "url",
  "queueName",
  "topicName",
  "scheduleId",
  "label",
  "flowControlKey",
  "fromDate",
  "toDate",
];

/** Messages: search by the SDKs' filters, open one for its headers and body, cancel. */
export function MessagesPage() {
  const [selected, setSelected] = useState<LogEvent | undefined>();
  const [version, setVersion] = useState(0);
  return (
    <Page
      title="Messages"
      side={
        selected && (
          <MessageDetail
            key={selected.messageId}
            event={selected}
            onClose={() => setSelected(undefined)}
            onChanged={() => setVersion(version + 1)}
          />
        )
      }
    >
      <EventList
        key={version}
        fields={FIELDS}
        live={false}
        selected={selected?.messageId}
        onSelect={setSelected}
        toolbar={(filters) => (
          <div class="bar">
            <Action
              label="Cancel all matching"
              kind="danger"
              confirm="Cancel every pending message matching these filters (all of them when none are set)?"
              run={async () => {
                const r = await queueSend<{ cancelled: number }>(
                  "DELETE",
                  "messages",
                  filterParams(filters),
                );
                setVersion(version + 1);
                return r;
              }}
              done="Matching messages cancelled"
            />
          </div>
        )}
      />
    </Page>
  );
}
