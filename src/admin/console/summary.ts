import type { DatabaseCredentials } from "../../kv/databases/database-manager.js";
import type { QueueDepth } from "../../queue/store/depth.js";
import { withTimeout } from "../../shared/wait.js";
import { messageOf } from "../../shared/errors.js";
import type { DataSize, DataSizeAnswer } from "./kv-data-size.js";
import { callApi } from "./upstream.js";

/** The live counts the console polls every few seconds; null where a source did not answer. */
export interface Summary {
  queue: QueueDepth | null;
  schedules: number | null;
  queues: number | null;
  urlGroups: number | null;
  flowControlKeys: number | null;
  /** Each database's key count and data size (kv-data-size.ts; a failed read says why). */
  databases: { name: string; keys: number | null; data: DataSizeAnswer }[];
  /**
   * The sources that did not answer within SOURCE_TIMEOUT_MS ("queue" for the queue's Redis,
   * "queue API", "KV <name>"): the console shows itself offline while any is listed.
   */
  down: string[];
}

export interface SummarySources {
  queueUrl: string;
  queueToken: string;
  databases: DatabaseCredentials[];
  /** A database's key count, read by stashd itself (not counted as a command of the database). */
  dbSize: (name: string) => Promise<number>;
  /** A database's memory used and its limit (INFO memory), read by stashd itself too. */
  dataSize: (name: string) => Promise<DataSize>;
  queueDepth: (() => Promise<QueueDepth>) | undefined;
}

/**
 * Longest a source may take: a Redis that is down can leave a command waiting for a reconnect,
 * and the console must say "offline" within a few seconds, not after the API's 30 s timeout.
 */
const SOURCE_TIMEOUT_MS = 2000;

/**
 * Gathers every count in parallel; one failing (or slow) source leaves its count null and its
 * name in `down`, not the page.
 */
export async function summarize(s: SummarySources): Promise<Summary> {
  const listLength = async (path: string): Promise<number> => {
    const reply = await callApi(`${s.queueUrl}/v2/${path}`, s.queueToken, { method: "GET" });
    const parsed: unknown = JSON.parse(reply.body.toString("utf8"));
    if (reply.status !== 200 || !Array.isArray(parsed)) {
      throw new Error(`GET /v2/${path} answered ${reply.status}`);
    }
    return parsed.length;
  };
  const down = new Set<string>();
  const settle = <T>(name: string, p: Promise<T>): Promise<T | null> =>
    withTimeout(p, SOURCE_TIMEOUT_MS).catch(() => {
      down.add(name);
      return null;
    });
  // Read beside the counts, not after them: a slow Redis costs one timeout, not two.
  const dataPending = Promise.all(s.databases.map((db) => dataSizeOf(s, db.name)));
  const [queue, schedules, queues, urlGroups, flowControlKeys, ...sizes] = await Promise.all([
    s.queueDepth ? settle("queue", s.queueDepth()) : Promise.resolve(null),
    settle("queue API", listLength("schedules")),
    settle("queue API", listLength("queues")),
    settle("queue API", listLength("topics")),
    settle("queue API", listLength("flowControl")),
    ...s.databases.map((db) => settle(`KV ${db.name}`, s.dbSize(db.name))),
  ]);
  const data = await dataPending;
  return {
    queue: queue as QueueDepth | null,
    schedules: schedules as number | null,
    queues: queues as number | null,
    urlGroups: urlGroups as number | null,
    flowControlKeys: flowControlKeys as number | null,
    databases: s.databases.map((db, i) => ({
      name: db.name,
      keys: sizes[i] as number | null,
      data: data[i] as DataSizeAnswer,
    })),
    down: [...down],
  };
}

/**
 * A database's data size within SOURCE_TIMEOUT_MS, or why not: unlike its key count, a failure
 * here does not make the console offline (an external Redis may refuse INFO to stashd's user).
 */
async function dataSizeOf(s: SummarySources, name: string): Promise<DataSizeAnswer> {
  try {
    return await withTimeout(s.dataSize(name), SOURCE_TIMEOUT_MS);
  } catch (err) {
    return { unknown: messageOf(err) };
  }
}
