import type { IncomingMessage, ServerResponse } from "node:http";
import type { Config } from "../../config/schema.js";
import type { BodyBudget } from "../../shared/http/body.js";
import type { Logger } from "../../shared/log.js";
import type { Dispatcher } from "../delivery/dispatcher.js";
import type { DlqStore } from "../store/dlq-store.js";
import type { FlowControlStore } from "../store/flow-control-store.js";
import type { LogStore } from "../store/log-store.js";
import type { MessageStore } from "../store/message-store.js";
import type { QueueStore } from "../store/queue-store.js";
import type { Scheduler } from "../scheduler/scheduler.js";
import type { StoreSafety } from "../store/safety.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { SigningKeys } from "../store/signing-keys.js";
import type { TopicStore } from "../store/topic-store.js";
import type { WorkflowStore } from "../workflow/state/store.js";

/** Everything a queue route needs; built once by the service. */
export interface QueueContext {
  config: Config;
  log: Logger;
  messages: MessageStore;
  dlq: DlqStore;
  logs: LogStore;
  topics: TopicStore;
  keys: SigningKeys;
  dispatcher: Dispatcher;
  schedules: ScheduleStore;
  /** FIFO queues (docs/qstash-protocol.md §2.2, §2.5). */
  queues: QueueStore;
  /**
   * Flow-control keys (docs/qstash-protocol.md §2.11), read only: limits are enforced in the Lua
   * transitions.
   */
  flowControl: FlowControlStore;
  /** The cron loop; routes take its clock (`now()`) and wake it after changes. */
  scheduler: Scheduler;
  /** Workflow runs (docs/workflow.md). */
  workflows: WorkflowStore;
  /** Request body bytes in flight in this process (STASHD_MAX_INFLIGHT_BODY_BYTES). */
  bodies: BodyBudget;
  /** Refuses writes while the queue's Redis may lose them (store/safety.ts). */
  safety: Pick<StoreSafety, "assertWritable">;
}

/** One parsed request: raw path and query kept as sent (destinations must not be normalized). */
export interface QueueRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** `req.headers` (what the publish-like routes read, publish-request.ts). */
  headers: IncomingMessage["headers"];
  method: string;
  /** Path segments after `/v2/`, raw (not decoded). */
  segments: string[];
  /** Raw path after `/v2/`. */
  rawPath: string;
  rawQuery: string;
  query: URLSearchParams;
}

export type Handler = (ctx: QueueContext, r: QueueRequest) => Promise<void>;
