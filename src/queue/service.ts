import path from "node:path";
import type { Config } from "../config/schema.js";
import { messageOf } from "../shared/errors.js";
import { BodyBudget } from "../shared/http/body.js";
import type { ConnectionCap } from "../shared/http/connections.js";
import { Cors } from "../shared/http/cors.js";
import { waitAtMost } from "../shared/wait.js";
import { listen } from "../shared/http/server.js";
import { instrument, meterLane, RequestMeter, requestLogging } from "../shared/instrument.js";
import { QUEUE_SHAPE } from "../shared/http/lane-parse.js";
import type { Logger } from "../shared/log.js";
import { parseRedisUrl, type RedisEndpoint } from "../shared/redis/connection.js";
import { ManagedRedis } from "../shared/redis/managed.js";
import { loadQueueCredentials, saveSigningKeys } from "./credentials.js";
import { Dispatcher } from "./delivery/dispatcher.js";
import { destinationPolicy, noteQueueListener } from "./delivery/destination-policy.js";
import { HttpClient } from "./delivery/http-client.js";
import { createQueueLane } from "./routes/lane.js";
import { createQueueHandler } from "./routes/router.js";
import { Scheduler, systemClock, type Clock } from "./scheduler/scheduler.js";
import { DlqStore } from "./store/dlq-store.js";
import { LogStore } from "./store/log-store.js";
import { MessageStore } from "./store/message-store.js";
import { QueueStore } from "./store/queue-store.js";
import { openQueueRedis, type QueueConnection } from "./store/redis.js";
import { FlowControlStore } from "./store/flow-control-store.js";
import { halfOfMemory } from "../shared/memory.js";
import { StoreRoom } from "./store/room.js";
import { StoreSafety } from "./store/safety.js";
import { ScheduleStore } from "./store/schedule-store.js";
import { SigningKeys } from "./store/signing-keys.js";
import { TopicStore } from "./store/topic-store.js";
import { QueueTokenWatch } from "./token-watch.js";
import { WorkflowDelivery } from "./workflow/engine/delivery.js";
import { startRepair } from "./workflow/engine/repair.js";
import { MAX_RUN_ENTRIES, WorkflowStore } from "./workflow/state/store.js";

export interface QueueService {
  url: string;
  port: number;
  /** The API token as of start; `stashd queue reset-token` may replace it while running. */
  token: string;
  /** The API token now (after any reset), for callers of the API inside stashd (the console). */
  currentToken(): string;
  /** Current signing keys (as of start; GET /v2/keys has the live ones). */
  currentSigningKey: string;
  nextSigningKey: string;
  /** The queue Redis, for readiness checks and scrape-time gauges (src/admin). */
  pool: QueueConnection;
  managed: ManagedRedis | undefined;
  /** Why the queue refuses writes now (its Redis may lose them, see store/safety.ts), or undefined. */
  storeRefusal(): string | undefined;
  close(): Promise<void>;
}

/** Injected parts; tests pass a clock to make cron minutes pass at once. */
export interface QueueDeps {
  clock?: Clock;
  /** Request body bytes in flight, shared with the KV gateway (own budget when not given). */
  bodies?: BodyBudget;
  /** The process's bound on open connections, shared with the other listeners (none: no bound). */
  connections?: ConnectionCap;
}

/**
 * Starts the queue: its own Redis (managed with `appendfsync always` unless STASHD_QUEUE_REDIS_URL
 * is set; a single Redis or a Redis Cluster, see store/redis.ts), the stores, the delivery dispatcher with its lease reaper, the cron scheduler, and the
 * HTTP API.
 */
export async function startQueueService(
  config: Config,
  log: Logger,
  deps: QueueDeps = {},
): Promise<QueueService> {
  const managed = config.queueRedisUrl ? undefined : managedRedis(config, log);
  const endpoint: RedisEndpoint = managed
    ? await managed.start()
    : parseRedisUrl(config.queueRedisUrl ?? "");
  let pool: QueueConnection;
  try {
    pool = await openQueueRedis(config, endpoint);
  } catch (err) {
    await managed?.stop();
    throw err;
  }
  try {
    const bodies = deps.bodies ?? new BodyBudget(config.maxInflightBodyBytes);
    const shared = { bodies, connections: deps.connections };
    return await assemble(config, log, pool, managed, deps.clock ?? systemClock, shared);
  } catch (err) {
    await pool.close();
    await managed?.stop();
    throw err;
  }
}

/**
 * CORS on the queue API, the KV gateway's rules (shared/http/cors.ts), so qstash-js works from a
 * browser. Request headers are allowed as the preflight asks: a publish carries any
 * `Upstash-Forward-*` header its caller chose. The rate-limit headers are those the SDK reads.
 */
const QUEUE_CORS = new Cors({
  methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
  allowHeaders: "requested",
  exposeHeaders: [
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "burst-ratelimit-limit",
    "burst-ratelimit-remaining",
    "burst-ratelimit-reset",
    "retry-after",
  ],
});

/** DLQ retention runs every minute, or more often when the retention itself is short (tests). */
function dlqExpiryEvery(config: Config): number {
  const tenth = Math.floor(config.queueDlqRetentionMs / 10);
  return Math.min(60_000, Math.max(config.queueReapMs, tenth));
}

/** Where the managed queue redis-server keeps its files (AOF, RDB, pid). */
export function managedQueueDir(dataDir: string): string {
  return path.join(dataDir, "queue-redis");
}

function managedRedis(config: Config, log: Logger): ManagedRedis {
  return new ManagedRedis({
    dir: managedQueueDir(config.dataDir),
    bin: config.redisServerBin,
    appendfsync: "always",
    maxRestartBackoffMs: config.managedRestartMaxBackoffMs,
    logger: log.child("redis"),
  });
}

async function assemble(
  config: Config,
  log: Logger,
  pool: QueueConnection,
  managed: ManagedRedis | undefined,
  clock: Clock,
  { bodies, connections }: { bodies: BodyBudget; connections: ConnectionCap | undefined },
): Promise<QueueService> {
  const safety = new StoreSafety(
    pool.partitions,
    { allowUnsafe: config.queueAllowUnsafeRedis, everyMs: config.queueStoreCheckMs },
    log.child("store"),
  );
  await safety.checkAtStart();
  const room = new StoreRoom(
    pool.partitions,
    { maxBytes: config.queueMaxDataBytes || halfOfMemory(), everyMs: config.queueRoomCheckMs },
    log.child("store"),
  );
  await room.start();
  const creds = loadQueueCredentials(config);
  const tokens = new QueueTokenWatch(config, log, creds.token);
  const keys = new SigningKeys(pool.partitions, config.queueReapMs);
  const forced = config.queueCurrentSigningKey !== undefined;
  const pair = await keys.init(
    { current: creds.currentSigningKey, next: creds.nextSigningKey },
    forced,
  );
  // Another process sharing this Redis may have seeded (or rotated) the keys: show those.
  if (pair.current !== creds.currentSigningKey || pair.next !== creds.nextSigningKey) {
    saveSigningKeys(config.dataDir, pair.current, pair.next);
  }
  const messages = new MessageStore(
    pool.partitions,
    config.queueLogRetentionMs,
    config.queueMaxFlowControlKeys,
  );
  const client = new HttpClient(config.queueMaxMessageBytes, destinationPolicy(config));
  const dispatcher = new Dispatcher(messages, client, keys, config, log.child("delivery"));
  const pageLimits = {
    maxBytes: config.queuePageMaxBytes,
    maxScanned: config.queuePageMaxScanned,
  };
  const dlq = new DlqStore(pool.partitions, pageLimits);
  const topics = new TopicStore(pool.partitions, config.queueMaxUrlGroupEndpoints);
  const schedules = new ScheduleStore(pool.partitions, config.queueMaxSchedules);
  const queues = new QueueStore(
    pool.partitions,
    config.queueLogRetentionMs,
    config.queueMaxQueues,
    config.queueMaxFlowControlKeys,
  );
  const scheduler = new Scheduler({
    schedules,
    messages,
    queues,
    topics,
    dispatcher,
    clock,
    cfg: config,
    log: log.child("scheduler"),
  });
  const ctx = {
    config,
    log,
    messages,
    dlq,
    logs: new LogStore(pool.partitions, config.queueLogRetentionMs, pageLimits),
    topics,
    keys,
    dispatcher,
    schedules,
    scheduler,
    queues,
    flowControl: new FlowControlStore(pool.partitions),
    // An API write needs a Redis that keeps it (safety) and room for it (room).
    safety: {
      assertWritable: () => {
        safety.assertWritable();
        room.assertRoom();
      },
    },
    workflows: new WorkflowStore(
      pool.partitions,
      config.queueLogRetentionMs,
      MAX_RUN_ENTRIES,
      config.queueMaxFlowControlKeys,
    ),
    bodies,
  };
  dispatcher.useHooks(new WorkflowDelivery(ctx));
  const metering = { service: "queue", logger: log, ...requestLogging(config) };
  const meter = new RequestMeter(metering);
  const token = (): string => tokens.current();
  const server = await listen(
    instrument(QUEUE_CORS.wrap(createQueueHandler(ctx, token)), metering, meter),
    {
      host: config.host,
      port: config.queuePort,
      requestTimeoutMs: config.requestTimeoutMs,
      connections,
      ...(config.queueFastLane
        ? {
            lane: {
              shape: QUEUE_SHAPE,
              ...createQueueLane(ctx, token, QUEUE_CORS.headerLines()),
              answered: meterLane(meter),
            },
          }
        : {}),
    },
  );
  noteQueueListener(config, server.port);
  tokens.start();
  safety.start();
  dispatcher.start();
  scheduler.start();
  startRepair(ctx);
  // A queue deletion a stopped process left half done (queue-store.ts, delete) ends now.
  queues.drainLeft().catch((err: unknown) => {
    log.warn("finishing queue deletions failed", { err: messageOf(err) });
  });
  let expiring: Promise<void> | undefined;
  const expiry = setInterval(() => {
    expiring ??= dlq
      .expire(Date.now() - config.queueDlqRetentionMs)
      .then(
        () => undefined,
        (err: unknown) => log.warn("dlq retention failed", { err: messageOf(err) }),
      )
      .finally(() => (expiring = undefined));
  }, dlqExpiryEvery(config));
  log.info("queue listening", { url: server.url });
  return {
    url: server.url,
    port: server.port,
    token: creds.token,
    currentToken: () => tokens.current(),
    currentSigningKey: pair.current,
    nextSigningKey: pair.next,
    pool,
    managed,
    storeRefusal: () => safety.refusal(),
    // One grace period bounds both the HTTP requests and the deliveries in flight; the pool
    // closes only after the dispatcher recorded every attempt whose response arrived and every
    // background command (claims, reaps, retention, store checks) came back.
    close: async () => {
      clearInterval(expiry);
      tokens.stop();
      const grace = config.shutdownGraceMs;
      await Promise.all([
        server.close(grace),
        scheduler.stop(),
        dispatcher.stop(grace),
        waitAtMost(Promise.all([safety.stop(), room.stop(), expiring]), grace),
      ]);
      await client.close();
      await pool.close();
      await managed?.stop();
    },
  };
}
