import { AppError } from "../../shared/errors.js";
import type { Reply } from "../../shared/redis/resp.js";
import { filterFromQuery, matches } from "../../queue/domain/filters.js";
import type { MessageMeta } from "../../queue/domain/message.js";
import type { Partition, Partitions } from "../../queue/store/partitions.js";
import { asArray, asText, checked } from "../../queue/store/replies.js";

/**
 * "What is pending now" (docs/console.md, Pending): every message not yet finished, put in
 * exactly one state by reading the queue's Redis directly (read only):
 *
 *   inFlight   in `active` (an attempt holds its lease)
 *   retrying   in `due` with state RETRY (waiting for its next attempt, until its due time)
 *   ready      in `due`, due now, not retrying (waiting for a delivery slot)
 *   delayed    in `due`, due later, not retrying (a delay or notBefore)
 *   waiting    in neither, held in a FIFO queue's or a flow-control key's wait list
 *   other      in neither and in no wait list (a workflow step waiting for an event, a message
 *              between two transitions)
 *
 * The pending messages are read oldest first from the `pending` index, at most
 * PENDING_SCAN_LIMIT of them (three pipelined reads each, 500 messages per round trip), so the
 * counts add up to `scanned`, and `scanned` equals `total` unless the queue holds more than the
 * limit (the page then says the counts cover the oldest `scanned`).
 */
export const PENDING_SCAN_LIMIT = 20_000;
const CHUNK = 500;
/** Rows returned for the chosen state. */
const ROWS = 100;

export const PENDING_STATES = [
  "ready",
  "delayed",
  "inFlight",
  "retrying",
  "waiting",
  "other",
] as const;
export type PendingState = (typeof PENDING_STATES)[number];
type Counts = Record<PendingState, number>;

export interface PendingRow {
  messageId: string;
  url: string;
  state: PendingState;
  /** Due time (ready, delayed, retrying) or lease deadline (in flight), ms. */
  until?: number | undefined;
  createdAt: number;
  retried: number;
  queueName?: string | undefined;
  topicName?: string | undefined;
  flowControlKey?: string | undefined;
}

export interface PendingGroup {
  kind: "queue" | "urlGroup";
  name: string;
  counts: Counts;
}

export interface PendingNow {
  now: number;
  /** Messages not finished (ZCARD of every partition's `pending`). */
  total: number;
  /** How many of them were read and counted (the counts add up to this). */
  scanned: number;
  counts: Counts;
  groups: PendingGroup[];
  /** Up to 100 messages in `state` (and the group asked for), oldest first. */
  rows: PendingRow[];
}

export interface PendingQuery {
  state: PendingState;
  queueName?: string | undefined;
  topicName?: string | undefined;
}

export function pendingQuery(q: URLSearchParams): PendingQuery {
  const state = q.get("state") || "ready";
  if (!(PENDING_STATES as readonly string[]).includes(state)) {
    throw new AppError("bad_request", `state must be one of ${PENDING_STATES.join(", ")}`);
  }
  return {
    state: state as PendingState,
    queueName: q.get("queueName") || undefined,
    topicName: q.get("topicName") || undefined,
  };
}

const zero = (): Counts => ({
  ready: 0,
  delayed: 0,
  inFlight: 0,
  retrying: 0,
  waiting: 0,
  other: 0,
});

export async function readPendingNow(parts: Partitions, query: PendingQuery): Promise<PendingNow> {
  const now = Date.now();
  const found = await scanAll(parts, now);
  const rows = found.rows.map((r) => r.row);
  const counts = zero();
  const groups = new Map<string, PendingGroup>();
  const groupOf = (kind: PendingGroup["kind"], name: string) => {
    const key = `${kind}:${name}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { kind, name, counts: zero() }));
    return g;
  };
  for (const r of rows) {
    counts[r.state]++;
    if (r.queueName !== undefined) groupOf("queue", r.queueName).counts[r.state]++;
    if (r.topicName !== undefined) groupOf("urlGroup", r.topicName).counts[r.state]++;
  }
  const chosen = rows.filter(
    (r) =>
      r.state === query.state &&
      (query.queueName === undefined || r.queueName === query.queueName) &&
      (query.topicName === undefined || r.topicName === query.topicName),
  );
  return {
    now,
    total: found.total,
    scanned: rows.length,
    counts,
    groups: [...groups.values()].sort(
      (a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
    ),
    rows: chosen.slice(0, ROWS),
  };
}

/** Every pending message read (oldest first, at most PENDING_SCAN_LIMIT), with its meta. */
async function scanAll(parts: Partitions, now: number) {
  const perPartition = Math.ceil(PENDING_SCAN_LIMIT / parts.all.length);
  const found = await parts.each((p) => scanPartition(p, now, perPartition));
  return {
    total: found.reduce((n, f) => n + f.total, 0),
    rows: found.flatMap((f) => f.rows).sort((a, b) => a.row.createdAt - b.row.createdAt),
  };
}

/** States a "state now" filter of the Messages list selects (message-list.tsx, STATES_NOW). */
const STATE_NOW: Record<string, PendingState[]> = {
  "": [...PENDING_STATES],
  IN_PROGRESS: [...PENDING_STATES],
  CREATED: ["ready", "delayed", "waiting", "other"],
  ACTIVE: ["inFlight"],
  RETRY: ["retrying"],
};

/**
 * `GET /console/api/pending/ids?<filters>` → `{ids, total, scanned}`: the ids of the pending
 * messages matching the Messages list's filters (the logs' filter keys, matched as the queue API
 * matches them; `fromDate`/`toDate` on the creation time; `state` the state now), for a bulk
 * cancel that shows its count first. A finished state is refused: those cannot be cancelled.
 */
export interface PendingIds {
  ids: string[];
  total: number;
  scanned: number;
}

export async function readPendingIds(parts: Partitions, q: URLSearchParams): Promise<PendingIds> {
  const params = new URLSearchParams(q);
  const stateNow = (params.get("state") ?? "").toUpperCase();
  params.delete("state");
  const states = STATE_NOW[stateNow];
  if (!states) {
    throw new AppError("bad_request", `only pending messages can be cancelled, not ${stateNow}`);
  }
  const filter = filterFromQuery(params, "logs");
  const found = await scanAll(parts, Date.now());
  const ids = found.rows
    .filter(
      ({ row, meta }) =>
        states.includes(row.state) && matches(filter, meta, { time: meta.createdAt }),
    )
    .map(({ row }) => row.messageId);
  return { ids, total: found.total, scanned: found.rows.length };
}

async function scanPartition(p: Partition, now: number, limit: number) {
  const K = p.keys;
  const [card, range] = await p.redis.execMany([
    ["ZCARD", K.pending],
    ["ZRANGE", K.pending, "0", String(limit - 1)],
  ]);
  const total = card?.kind === "int" ? Number(card.value) : 0;
  const ids = (range ? asArray(checked(range, "pending")) : []).map((r) => asText(r) ?? "");
  const rows: { row: PendingRow; meta: MessageMeta }[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const replies = await p.redis.execMany(
      chunk.flatMap((id) => [
        ["HMGET", K.message(id), "state", "meta", "retried", "queue", "fc", "origin"],
        ["ZSCORE", K.due, id],
        ["ZSCORE", K.active, id],
      ]),
    );
    const found: Found[] = [];
    chunk.forEach((id, j) => {
      const row = rowOf(id, now, replies[j * 3], replies[j * 3 + 1], replies[j * 3 + 2]);
      if (row) found.push(row);
    });
    await placeParked(p, now, found);
    rows.push(...found);
  }
  return { total, rows };
}

/** A row as read, with what placeParked needs: the message's origin and whether it retries. */
type Found = { row: PendingRow; meta: MessageMeta; origin: string | undefined; retrying: boolean };

/**
 * The rows in neither set that a claim parked while their destination held its share
 * (queue/store/lua/includes/parking.lua): due, so ready (or retrying), at their parked score.
 */
async function placeParked(p: Partition, now: number, found: Found[]): Promise<void> {
  const other = found.filter((f) => f.row.state === "other" && f.origin !== undefined);
  if (other.length === 0) return;
  const scores = await p.redis.execMany(
    other.map((f) => ["ZSCORE", p.keys.parkedDue(f.origin ?? ""), f.row.messageId]),
  );
  other.forEach((f, i) => {
    const score = asText(scores[i]);
    if (score === undefined) return;
    const due = Number(score);
    f.row.state = f.retrying ? "retrying" : due <= now ? "ready" : "delayed";
    f.row.until = due;
  });
}

/** One pending message's row; undefined when it finished between the two reads. */
function rowOf(
  id: string,
  now: number,
  fields: Reply | undefined,
  due: Reply | undefined,
  active: Reply | undefined,
): Found | undefined {
  const f = fields?.kind === "array" ? fields.value.map((r) => asText(r)) : [];
  const [state, metaJson, retried, queue, fc, origin] = f;
  if (metaJson === undefined) return undefined;
  const meta = JSON.parse(metaJson) as MessageMeta;
  const dueAt = asText(due);
  const leaseUntil = asText(active);
  const [where, until] =
    leaseUntil !== undefined
      ? (["inFlight", Number(leaseUntil)] as const)
      : dueAt !== undefined
        ? ([
            state === "RETRY" ? "retrying" : Number(dueAt) <= now ? "ready" : "delayed",
            Number(dueAt),
          ] as const)
        : ([queue !== undefined || fc !== undefined ? "waiting" : "other", undefined] as const);
  const row: PendingRow = {
    messageId: id,
    url: meta.url,
    state: where,
    until,
    createdAt: meta.createdAt,
    retried: Number(retried ?? 0),
    queueName: meta.queueName,
    topicName: meta.topicName,
    flowControlKey: meta.flowControl?.key,
  };
  return { row, meta, origin, retrying: state === "RETRY" };
}
