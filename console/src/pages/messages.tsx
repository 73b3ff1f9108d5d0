import { useState } from "preact/hooks";
import { queueSend } from "../api.js";
import { filterParams, filtersFrom, NO_FILTERS, type Filters } from "../filters.js";
import { href, navigate } from "../routes.js";
import { Action, Page, toast } from "../ui.js";
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

/**
 * The body of DELETE /v2/messages for "Cancel all matching" with the page's filters, or why it
 * cannot be sent. The cancel API takes ids (`messageIds`, then every other filter is ignored) or
 * filters without `messageId` and `state` (src/queue/domain/filters.ts, scope "messages"), so a
 * message id goes alone as `messageIds`, and a state (cancelling applies to pending messages
 * whatever their state) is refused rather than dropped: a bulk action never widens silently.
 */
export function cancelBody(f: Filters): { body: Record<string, unknown> } | { refused: string } {
  const { messageId, state, ...rest } = filterParams(f);
  if (state !== undefined) {
    return { refused: "Cancel cannot filter by state (it cancels pending messages): clear State." };
  }
  if (messageId === undefined) return { body: rest };
  if (Object.keys(rest).length > 0) {
    return { refused: "Cancel by message id cannot be combined with other filters." };
  }
  return { body: { messageIds: [messageId] } };
}

/**
 * Messages: search by the SDKs' filters, open one for its headers and body, cancel. The URL holds
 * both: `#/messages?state=...` filters, `#/messages/<id>` opens a message (filtered to it when the
 * URL has no other filters).
 */
export function MessagesPage(p: { id: string | undefined; params: URLSearchParams }) {
  const [found, setFound] = useState<LogEvent | undefined>();
  const [version, setVersion] = useState(0);
  const given = filtersFrom(p.params);
  const filters =
    p.id !== undefined && [...p.params.keys()].length === 0
      ? { ...NO_FILTERS, messageId: p.id }
      : given;
  const selected = found?.messageId === p.id ? found : undefined;
  const listHref = (f: Filters) => href.list("messages", filterParams(f, false));
  return (
    <Page
      title="Messages"
      side={
        p.id !== undefined && (
          <MessageDetail
            key={p.id}
            id={p.id}
            event={selected}
            onClose={() => navigate(listHref(given))}
            onChanged={() => setVersion(version + 1)}
          />
        )
      }
    >
      <EventList
        key={version}
        fields={FIELDS}
        filters={filters}
        onApply={(f) => navigate(listHref(f))}
        live={false}
        selected={p.id}
        open={p.id}
        onSelect={(e) => {
          setFound(e);
          navigate(href.message(e.messageId) + listHref(given).replace(/^#\/messages/, ""));
        }}
        toolbar={(filters) => {
          const cancel = cancelBody(filters);
          return (
            <div class="bar">
              <Action
                label="Cancel all matching"
                kind="danger"
                disabled={"refused" in cancel}
                confirm="Cancel every pending message matching these filters (all of them when none are set)?"
                run={async () => {
                  if ("refused" in cancel) throw new Error(cancel.refused);
                  const r = await queueSend<{ cancelled: number }>(
                    "DELETE",
                    "messages",
                    cancel.body,
                  );
                  setVersion(version + 1);
                  toast(`${r.cancelled} ${r.cancelled === 1 ? "message" : "messages"} cancelled`);
                }}
              />
              {"refused" in cancel && <span class="hint">{cancel.refused}</span>}
            </div>
          );
        }}
      />
    </Page>
  );
}
