import type { DatabaseCredentials } from "../../kv/database-manager.js";
import type { QueueDepth } from "../../queue/store/depth.js";
import { callApi, kvCommands, resultOf } from "./upstream.js";

/** The live counts the console polls every few seconds; null where a source did not answer. */
export interface Summary {
  queue: QueueDepth | null;
  schedules: number | null;
  queues: number | null;
  urlGroups: number | null;
  flowControlKeys: number | null;
  databases: { name: string; keys: number | null }[];
}

export interface SummarySources {
  queueUrl: string;
  queueToken: string;
  kvUrl: string;
  databases: DatabaseCredentials[];
  queueDepth: (() => Promise<QueueDepth>) | undefined;
}

/** Gathers every count in parallel; one failing source leaves its count null, not the page. */
export async function summarize(s: SummarySources): Promise<Summary> {
  const listLength = async (path: string): Promise<number | null> => {
    const reply = await callApi(`${s.queueUrl}/v2/${path}`, s.queueToken, { method: "GET" });
    const parsed: unknown = JSON.parse(reply.body.toString("utf8"));
    return reply.status === 200 && Array.isArray(parsed) ? parsed.length : null;
  };
  const dbSize = async (db: DatabaseCredentials): Promise<number | null> => {
    const [reply] = await kvCommands(s.kvUrl, db.readonlyToken, [["DBSIZE"]]);
    return Number(resultOf(reply));
  };
  const [queue, schedules, queues, urlGroups, flowControlKeys, ...sizes] = await Promise.all([
    orNull(s.queueDepth ? s.queueDepth() : Promise.resolve(null)),
    orNull(listLength("schedules")),
    orNull(listLength("queues")),
    orNull(listLength("topics")),
    orNull(listLength("flowControl")),
    ...s.databases.map((db) => orNull(dbSize(db))),
  ]);
  return {
    queue: queue as QueueDepth | null,
    schedules: schedules as number | null,
    queues: queues as number | null,
    urlGroups: urlGroups as number | null,
    flowControlKeys: flowControlKeys as number | null,
    databases: s.databases.map((db, i) => ({ name: db.name, keys: sizes[i] as number | null })),
  };
}

function orNull<T>(p: Promise<T>): Promise<T | null> {
  return p.catch(() => null);
}
