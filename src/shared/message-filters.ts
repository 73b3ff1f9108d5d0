/**
 * The console's list filters, one source for both sides (docs/console.md, Links): the browser's
 * filter bars (console/src/filters.tsx) and the console API of the Messages list
 * (src/admin/console/messages.ts) both import this module, so a filter the page offers is one the
 * API takes and the other way round (test/console/message-filters.test.ts checks both against
 * the queue's own GET /v2/events, src/queue/domain/filters.ts scope "logs").
 *
 * Keys are the queue API's query parameter names; labels are what the page shows (and the
 * fields' `name`). Plain data, no imports: the console's bundle takes it as it is.
 */
export const FILTER_LABELS = {
  messageId: "Message id",
  state: "State",
  url: "URL",
  topicName: "URL group",
  queueName: "Queue",
  scheduleId: "Schedule id",
  label: "Label",
  flowControlKey: "Flow-control key",
  workflowRunId: "Workflow run",
  responseStatus: "Response status",
  host: "Host",
  path: "Path",
  callerIp: "Caller IP",
  fromDate: "From",
  toDate: "To",
} as const;

export type FilterKey = keyof typeof FILTER_LABELS;

/**
 * The filters of the Messages and Logs pages, in the filter bar's order: every filter of
 * GET /v2/events but `api` (it names a provider API a message was published through; stashd has
 * none, so it matches nothing and is not offered). `state` is the event's state on Logs and the
 * message's state now on Messages; `fromDate`/`toDate` are epoch ms on the wire.
 */
export const EVENT_FILTERS = [
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
] as const satisfies readonly FilterKey[];

/** Event filters the queue API takes that the console does not offer, with the reason above. */
export const EVENT_FILTERS_LEFT_OUT = ["api"] as const;
