import type { KvDatabase } from "../kv/databases/database.js";
import { messageOf } from "../shared/errors.js";
import type { ManagedRedis } from "../shared/redis/managed.js";
import type { QueueRedis } from "../queue/store/redis.js";

/** What readiness looks at; index.ts builds it from the running services. */
export interface ReadinessSources {
  /** Databases open now. */
  databases(): KvDatabase[];
  /** Names in the registry (a database that could not start is in it but not open). */
  registered(): string[];
  /** Every queue partition's Redis behind one `exec` (see admin/wiring.ts). */
  queuePool: Pick<QueueRedis, "exec">;
  queueManaged: ManagedRedis | undefined;
  /** Why the queue refuses writes (its Redis may lose them), or undefined. */
  queueStoreRefusal(): string | undefined;
  /** Per-check deadline, so a stalled Redis answers "not ready" instead of hanging the probe. */
  timeoutMs: number;
}

export interface Readiness {
  ready: boolean;
  /** One entry per check: "ok" or why not. */
  checks: Record<string, string>;
}

/**
 * Ready = every database's Redis and the queue Redis answer PING, every managed redis-server
 * is running, and the queue Redis keeps what it acknowledges (`queue-store`, store/safety.ts). Checks run in parallel; each is bounded by `timeoutMs`.
 */
export async function checkReadiness(src: ReadinessSources): Promise<Readiness> {
  const open = src.databases();
  const openNames = new Set(open.map((db) => db.name));
  const checks: [string, Promise<string>][] = [
    ...open.map((db): [string, Promise<string>] => [
      `kv:${db.name}`,
      ping(db.poolFor({ db, role: "standard" }), db.managed, src.timeoutMs),
    ]),
    ...src
      .registered()
      .filter((name) => !openNames.has(name))
      .map((name): [string, Promise<string>] => [
        `kv:${name}`,
        Promise.resolve("database could not start (see the logs)"),
      ]),
    ["queue", ping(src.queuePool, src.queueManaged, src.timeoutMs)],
    ["queue-store", Promise.resolve(src.queueStoreRefusal() ?? "ok")],
  ];
  const results = await Promise.all(checks.map(async ([name, p]) => [name, await p] as const));
  return {
    ready: results.every(([, r]) => r === "ok"),
    checks: Object.fromEntries(results),
  };
}

async function ping(
  pool: Pick<QueueRedis, "exec">,
  managed: ManagedRedis | undefined,
  timeoutMs: number,
): Promise<string> {
  if (managed && !managed.running) return "managed redis-server is not running";
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer to PING within ${timeoutMs} ms`), timeoutMs);
  });
  const answer = pool.exec(["PING"]).then(
    (reply) => (reply.kind === "error" ? `PING failed: ${reply.value}` : "ok"),
    (err: unknown) => `unreachable: ${messageOf(err)}`,
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
