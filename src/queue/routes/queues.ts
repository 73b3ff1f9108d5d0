import { AppError } from "../../shared/errors.js";
import type { Handler, QueueRequest } from "./context.js";
import { submitRequest } from "./publish.js";
import { checkQueueName } from "./submit.js";
import { decode, notFound, readJsonObject, reply } from "./util.js";

/**
 * POST /v2/enqueue/{queue}/{destination} (docs/qstash-protocol.md §2.2): a publish into a FIFO
 * queue, created with parallelism 1 on first use. Same headers, body and responses as publish.
 */
export const enqueue: Handler = async (ctx, r) => {
  const { queue, target } = enqueueTarget(r);
  await submitRequest(ctx, r, target, queue);
};

/**
 * The queue an enqueue names, and its target as parseDestination takes it (the path after its
 * first segment: `enqueue/` dropped); 400 for a bad queue name.
 */
export function enqueueTarget(r: Pick<QueueRequest, "segments" | "rawPath" | "rawQuery">): {
  queue: string;
  target: Pick<QueueRequest, "rawPath" | "rawQuery">;
} {
  const queue = checkQueueName(decode(r.segments[1] ?? ""));
  return {
    queue,
    target: { rawPath: r.rawPath.slice(r.rawPath.indexOf("/") + 1), rawQuery: r.rawQuery },
  };
}

/**
 * POST /v2/queues `{"queueName", "parallelism", "paused"}` (docs/qstash-protocol.md §2.5): upsert.
 * A missing field keeps the current value (defaults 1 and false for a new queue); parallelism 0
 * (Go's unset) is taken as 1. Answers 200 with an empty body; 412 above the max parallelism or max
 * queues.
 */
export const upsertQueue: Handler = async (ctx, r) => {
  const body = (await readJsonObject(ctx, r)) ?? {};
  const name = body["queueName"];
  if (typeof name !== "string") throw new AppError("bad_request", "queueName is required");
  const now = Date.now();
  const parallelism = parallelismOf(body["parallelism"]);
  if (parallelism !== undefined && parallelism > ctx.config.queueMaxParallelism) {
    const max = ctx.config.queueMaxParallelism;
    throw new AppError("precondition_failed", `parallelism exceeds the maximum of ${max}`);
  }
  const change = {
    parallelism,
    paused: pausedOf(body["paused"]),
    create: true,
  };
  if (((await ctx.queues.configure(now, checkQueueName(name), change)) ?? 0) > 0) {
    ctx.dispatcher.wake();
  }
  reply(r.res, 200);
};

export const listQueues: Handler = async (ctx, r) => {
  reply(r.res, 200, await ctx.queues.list());
};

export const getQueue: Handler = async (ctx, r) => {
  const q = await ctx.queues.get(nameParam(r));
  if (!q) throw notFound("queue");
  reply(r.res, 200, q);
};

/** Deletes the queue; its messages still waiting for a slot are cancelled. */
export const deleteQueue: Handler = async (ctx, r) => {
  if (!(await ctx.queues.delete(Date.now(), nameParam(r)))) throw notFound("queue");
  reply(r.res, 200);
};

/** POST /v2/queues/{name}/pause: idempotent; the queue keeps accepting messages. */
export const pauseQueue: Handler = async (ctx, r) => {
  const change = { paused: true, create: false };
  const admitted = await ctx.queues.configure(Date.now(), nameParam(r), change);
  if (admitted === undefined) throw notFound("queue");
  reply(r.res, 200);
};

/** POST /v2/queues/{name}/resume: idempotent; waiting messages start at once. */
export const resumeQueue: Handler = async (ctx, r) => {
  const change = { paused: false, create: false };
  const admitted = await ctx.queues.configure(Date.now(), nameParam(r), change);
  if (admitted === undefined) throw notFound("queue");
  if (admitted > 0) ctx.dispatcher.wake();
  reply(r.res, 200);
};

function nameParam(r: QueueRequest): string {
  return checkQueueName(decode(r.segments[1] ?? ""));
}

function parallelismOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new AppError("bad_request", "parallelism must be a positive integer");
  }
  return Math.max(1, value);
}

function pausedOf(value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw new AppError("bad_request", "paused must be a boolean");
  return value;
}
