import { useState } from "preact/hooks";
import { EVENT_FILTERS } from "../filters.js";
import { Page, Panel, Pre } from "../ui.js";
import { EventList, type LogEvent } from "./events.js";

const FIELDS = EVENT_FILTERS;

/** Logs: every state change of every message, newest first, refreshed live. */
export function LogsPage() {
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
            <Pre value={selected} />
          </Panel>
        )
      }
    >
      <EventList
        fields={FIELDS}
        live={live}
        selected={selected?.messageId}
        onSelect={setSelected}
      />
    </Page>
  );
}
