import type { LogFormat, LogLevel } from "../shared/log.js";
/**
 * Every stashd setting, with its environment variable, default and meaning.
 *
 * This table is the single source for configuration: `load.ts` reads the environment through it
 * (and nowhere else in the code base reads `process.env`), the CLI maps its flags onto it, and the
 * README's configuration table is written from it. Time settings are here so that tests can run
 * with millisecond schedules.
 */

export type SettingKind =
  "string" | "int" | "port" | "optional-string" | "log-level" | "log-format" | "bool";

export interface SettingSpec {
  /** Environment variable that sets it. */
  env: string;
  kind: SettingKind;
  default: string | number | boolean | undefined;
  doc: string;
}

export const SETTINGS = {
  host: {
    env: "STASHD_HOST",
    kind: "string",
    default: "127.0.0.1",
    doc: "Address both HTTP services listen on.",
  },
  kvPort: {
    env: "STASHD_KV_PORT",
    kind: "port",
    default: 8079,
    doc: "Port of the Redis REST gateway (0 picks a free port).",
  },
  queuePort: {
    env: "STASHD_QUEUE_PORT",
    kind: "port",
    default: 8080,
    doc: "Port of the message queue API (0 picks a free port).",
  },
  workers: {
    env: "STASHD_WORKERS",
    kind: "int",
    default: 0,
    doc: "Processes that serve the KV and queue APIs under `stashd start`, sharing the ports, with one supervisor that owns the managed redis-servers and restarts a worker that dies. 0: one per CPU core (os.availableParallelism()); 1 (and a 1-core machine): one process, no supervisor. start() in a program and `stashd dev` always run one process. Sizing: docs/operations.md.",
  },
  dataDir: {
    env: "STASHD_DATA_DIR",
    kind: "string",
    default: "./.stashd",
    doc: "Directory for credentials, the database registry and managed Redis data.",
  },
  redisServerBin: {
    env: "STASHD_REDIS_SERVER",
    kind: "string",
    default: "redis-server",
    doc: "The redis-server (or valkey-server) binary used for managed databases.",
  },
  kvRedisUrl: {
    env: "STASHD_KV_REDIS_URL",
    kind: "optional-string",
    default: undefined,
    doc: "External Redis for the `default` database, created on first start (unset: managed).",
  },
  kvPoolSize: {
    env: "STASHD_KV_POOL_SIZE",
    kind: "int",
    default: 4,
    doc: "Pipelined backend connections per database and token kind.",
  },
  kvFastLane: {
    env: "STASHD_KV_FAST_LANE",
    kind: "bool",
    default: true,
    doc: "true: the KV gateway answers whole `POST /` and `POST /pipeline` requests on its own HTTP/1.1 fast lane, in front of node:http, which serves everything else (docs/decisions.md, KV fast lane). false: node:http serves every request.",
  },
  queueFastLane: {
    env: "STASHD_QUEUE_FAST_LANE",
    kind: "bool",
    default: true,
    doc: "true: the queue answers whole `POST /v2/publish/...` and `POST /v2/enqueue/...` requests on the HTTP/1.1 fast lane in front of node:http, which serves everything else (docs/decisions.md, Queue publishes on the fast lane). false: node:http serves every request.",
  },
  kvClusterFailoverWindowMs: {
    env: "STASHD_KV_CLUSTER_FAILOVER_WINDOW_MS",
    kind: "int",
    default: 20_000,
    doc: "On a Redis Cluster, how long a command waits and retries while its slot has no reachable master (a failover); keep it above cluster-node-timeout.",
  },
  kvMaxRequestBytes: {
    env: "STASHD_KV_MAX_REQUEST_BYTES",
    kind: "int",
    default: 10 * 1024 * 1024,
    doc: "Default max request body size per database (`ERR max request size exceeded`).",
  },
  kvDailyRequestLimit: {
    env: "STASHD_KV_DAILY_REQUEST_LIMIT",
    kind: "int",
    default: 0,
    doc: "Default daily command limit per database and process, 0 = off.",
  },
  kvMaxCommandsPerRequest: {
    env: "STASHD_KV_MAX_COMMANDS_PER_REQUEST",
    kind: "int",
    default: 100_000,
    doc: "Most commands in one pipeline or transaction (`ERR max commands per request exceeded`).",
  },
  kvMaxCommandArgs: {
    env: "STASHD_KV_MAX_COMMAND_ARGS",
    kind: "int",
    default: 100_000,
    doc: "Most arguments of one command, its name included, in a body over 64 KiB (a smaller one holds at most about 21,000): more is `ERR max arguments per command exceeded`, as a command's arguments are read and encoded in one go, holding the event loop (docs/operations.md, Event-loop holds).",
  },
  kvMaxReplyBytes: {
    env: "STASHD_KV_MAX_REPLY_BYTES",
    kind: "int",
    default: 16 * 1024 * 1024,
    doc: "Largest reply per request: bytes from Redis plus 48 per element; replies past it become `ERR reply too large` errors.",
  },
  kvMaxCombinedElements: {
    env: "STASHD_KV_MAX_COMBINED_ELEMENTS",
    kind: "int",
    default: 250_000,
    doc: "Most elements one set or sorted-set union, intersection or difference (SUNION, SINTER, SDIFF, SINTERCARD, ZUNION, ZINTER, ZDIFF, ZINTERCARD and their STORE forms) may pass over, counted from its keys' sizes before it runs: more is refused, since Redis serves no other client meanwhile (about 1 µs per element). 0: no limit.",
  },
  kvMaxRecordBytes: {
    env: "STASHD_KV_MAX_RECORD_BYTES",
    kind: "int",
    default: 100 * 1024 * 1024,
    doc: "Largest string SETRANGE, SETBIT and BITFIELD may extend a key to (Upstash's max record size): an offset past it is `ERR max single record size exceeded`, refused before Redis allocates the string (a 30-byte `SETBIT k 4294967295 1` allocates 512 MB). A managed database's Redis also holds APPEND and scripts to it (its `proto-max-bulk-len`, raised to the request size cap when that is larger).",
  },
  kvMaxDataBytes: {
    env: "STASHD_KV_MAX_DATA_BYTES",
    kind: "int",
    default: 0,
    doc: "Most memory a managed database's redis-server may use for data (its `maxmemory`, no eviction): past it writes answer 507 `ERR DB capacity quota exceeded` while reads and deletes go on (Upstash's max data size). 0: half of the machine's memory, or of the container's memory limit when it has one. Per database: `stashd db create NAME --max-data-size BYTES`. External Redis: set its own `maxmemory`.",
  },
  kvMaxBufferedReplyBytes: {
    env: "STASHD_KV_MAX_BUFFERED_REPLY_BYTES",
    kind: "int",
    default: 256 * 1024 * 1024,
    doc: "Bytes of large replies (over 48 KiB) held for clients still reading them, all databases together; past it a new large reply is answered 503 `ERR too many large replies in flight`.",
  },
  kvScriptTimeLimitMs: {
    env: "STASHD_KV_SCRIPT_TIME_LIMIT_MS",
    kind: "int",
    default: 5_000,
    doc: "A Lua script or function running longer is killed (SCRIPT/FUNCTION KILL) and its request answered with an error.",
  },
  kvScriptMemoryCheckMs: {
    env: "STASHD_KV_SCRIPT_MEMORY_CHECK_MS",
    kind: "int",
    default: 50,
    doc: "While a script runs on a managed database, how often its redis-server's resident memory is read (STASHD_KV_SCRIPT_MAX_GROWTH_BYTES).",
  },
  kvScriptMaxGrowthBytes: {
    env: "STASHD_KV_SCRIPT_MAX_GROWTH_BYTES",
    kind: "int",
    default: 0,
    doc: "How far one script may grow a managed database's redis-server (resident memory) past its max data size, or past what it held when the script was sent; then the script is killed, or its Redis stopped without saving when it wrote (its writes dropped). Redis itself checks the limit only when a script starts. 0 = a quarter of the max data size, at least 64 MiB.",
  },
  kvVectorMaxDimension: {
    env: "STASHD_KV_VECTOR_MAX_DIMENSION",
    kind: "int",
    default: 32_768,
    doc: "Largest DIM of a vector index (VECTOR.CREATE), and most elements in a vector argument.",
  },
  kvVectorMaxIndexBytes: {
    env: "STASHD_KV_VECTOR_MAX_INDEX_BYTES",
    kind: "int",
    default: 256 * 1024 * 1024,
    doc: "Most bytes of vectors (count × DIM × 4) in one vector index; VECTOR.ADD past it answers `ERR vector index full`.",
  },
  kvVectorCacheBytes: {
    env: "STASHD_KV_VECTOR_CACHE_BYTES",
    kind: "int",
    default: 1024 * 1024 * 1024,
    doc: "Memory per database for the in-process copies of vector indexes that VECTOR.QUERY reads (with their HNSW graphs); the least recently queried are dropped past it.",
  },
  kvVectorQueryTimeoutMs: {
    env: "STASHD_KV_VECTOR_QUERY_TIMEOUT_MS",
    kind: "int",
    default: 2_000,
    doc: "Longest a VECTOR.QUERY may take, loading the index into this process included; past it the query answers an error (a load goes on in the background).",
  },
  kvVectorMaxTopK: {
    env: "STASHD_KV_VECTOR_MAX_TOPK",
    kind: "int",
    default: 1_000,
    doc: "Largest TOPK of a VECTOR.QUERY.",
  },
  kvVectorHnswMinVectors: {
    env: "STASHD_KV_VECTOR_HNSW_MIN_VECTORS",
    kind: "int",
    default: 20_000,
    doc: "Vector indexes with fewer vectors answer every profile by an exact scan; larger ones get an HNSW graph for the FAST and BALANCED profiles (PRECISE always scans).",
  },
  kvUnkillableScriptGraceMs: {
    env: "STASHD_KV_UNKILLABLE_SCRIPT_GRACE_MS",
    kind: "int",
    default: 2_000,
    doc: "A script past the time limit that cannot be killed (it wrote) and still runs this much later: its Redis is stopped with SHUTDOWN NOSAVE, dropping the script's effects (managed: restarted from its AOF; external: only with `db create --stop-unkillable-scripts`). 0 = never.",
  },
  kvCommandTimeoutMs: {
    env: "STASHD_KV_COMMAND_TIMEOUT_MS",
    kind: "int",
    default: 15_000,
    doc: "A backend connection owing replies that receives nothing for this long is closed and replaced (503).",
  },
  kvReadonlyScripts: {
    env: "STASHD_KV_READONLY_SCRIPTS",
    kind: "bool",
    default: false,
    doc: "Let the read-only token run Lua (EVAL_RO, EVALSHA_RO, FCALL_RO). Off: one script from a public page could keep the database busy past any time limit (docs/reliability.md, threat model).",
  },
  kvRestTokenFailures: {
    env: "STASHD_KV_RESTTOKEN_FAILURES",
    kind: "int",
    default: 10,
    doc: "Failed `ACL RESTTOKEN` logins per ACL user and database in one window (ten times as many for all users together); past it RESTTOKEN answers 429 with Retry-After until the window ends.",
  },
  kvRestTokenWindowMs: {
    env: "STASHD_KV_RESTTOKEN_WINDOW_MS",
    kind: "int",
    default: 60_000,
    doc: "The window `STASHD_KV_RESTTOKEN_FAILURES` counts in.",
  },
  kvAllowSharedRedis: {
    env: "STASHD_KV_ALLOW_SHARED_REDIS",
    kind: "bool",
    default: false,
    doc: "Let two KV databases use one Redis server (different database numbers). Unsafe: each one's standard token can then reach the other's keys from a script. The queue and one KV database may always share one, in different database numbers.",
  },
  kvEmulateFieldTtl: {
    env: "STASHD_KV_EMULATE_FIELD_TTL",
    kind: "bool",
    default: true,
    doc: "Redis < 7.4: emulate hash-field TTLs (docs/compatibility.md); same in every process.",
  },
  kvExclusiveConnections: {
    env: "STASHD_KV_EXCLUSIVE_CONNECTIONS",
    kind: "int",
    default: 32,
    doc: "Most exclusive backend connections per database, all tokens together (transactions of over 1000 commands, or on a Redis Cluster); further requests wait in line.",
  },
  kvExclusiveQueue: {
    env: "STASHD_KV_EXCLUSIVE_QUEUE",
    kind: "int",
    default: 1000,
    doc: "Requests per database that may wait for an exclusive connection; past it they are answered 429 with Retry-After.",
  },
  kvExclusiveWaitMs: {
    env: "STASHD_KV_EXCLUSIVE_WAIT_MS",
    kind: "int",
    default: 5_000,
    doc: "Longest wait for an exclusive connection; past it the request is answered 503 with Retry-After.",
  },
  kvMaxStreams: {
    env: "STASHD_KV_MAX_STREAMS",
    kind: "int",
    default: 500,
    doc: "Most open event streams (subscribe, psubscribe, monitor; each holds a backend connection) per database, all tokens together; past it a new one is answered 429 with Retry-After.",
  },
  kvMaxBlocked: {
    env: "STASHD_KV_MAX_BLOCKED",
    kind: "int",
    default: 200,
    doc: "Most requests per database, all tokens together, running blocking commands (BLPOP & co., XREAD/XREADGROUP with BLOCK; each holds a backend connection of its own); past it one more is answered 429 with Retry-After. 0 refuses them all.",
  },
  kvMaxBlockMs: {
    env: "STASHD_KV_MAX_BLOCK_MS",
    kind: "int",
    default: 30_000,
    doc: "Longest a request's blocking commands may wait, together: a longer timeout, or 0 (forever), is cut to it (below the 60 s after which proxies cut idle HTTP).",
  },
  searchMaxDocuments: {
    env: "STASHD_SEARCH_MAX_DOCUMENTS",
    kind: "int",
    default: 250_000,
    doc: "Most documents one SEARCH index holds in each stashd process's memory (about 3 KB of heap per document of 60 words, docs/benchmarks.md); past it the index answers every query with an error until documents are removed and a rescan finds it within the limit.",
  },
  searchQueryTimeLimitMs: {
    env: "STASHD_SEARCH_QUERY_TIME_LIMIT_MS",
    kind: "int",
    default: 2_000,
    doc: "Longest a SEARCH.QUERY, COUNT or AGGREGATE may compute before it is answered with an error (the event loop is shared by every request).",
  },
  searchMaxLimit: {
    env: "STASHD_SEARCH_MAX_LIMIT",
    kind: "int",
    default: 1_000,
    doc: "Largest LIMIT a SEARCH.QUERY may ask for (the documents of one page are read from Redis).",
  },
  searchRescanIntervalMs: {
    env: "STASHD_SEARCH_RESCAN_INTERVAL_MS",
    kind: "int",
    default: 300_000,
    doc: "How often each process rescans its SEARCH indexes' keys to repair what lost keyspace notifications missed (0: never; a lost subscriber connection always triggers one).",
  },
  kvComputeSliceMs: {
    env: "STASHD_KV_COMPUTE_SLICE_MS",
    kind: "int",
    default: 5,
    doc: "Longest one slice of SEARCH.* or VECTOR.* computing (a query, an aggregation, indexing) holds the event loop; other requests run between slices, and the time limits count the slices only.",
  },
  kvComputeMaxRunning: {
    env: "STASHD_KV_COMPUTE_MAX_RUNNING",
    kind: "int",
    default: 4,
    doc: "Most SEARCH.QUERY/COUNT/AGGREGATE and VECTOR.QUERY computing at once in each process (they take turns, a slice each); more wait in line.",
  },
  kvComputeMaxWaiting: {
    env: "STASHD_KV_COMPUTE_MAX_WAITING",
    kind: "int",
    default: 64,
    doc: "Most such queries waiting in line in each process; past it one more is answered at once with `ERR search is busy, try again` (or `ERR vector search is busy, try again`).",
  },
  kvComputeWallLimitMs: {
    env: "STASHD_KV_COMPUTE_WALL_LIMIT_MS",
    kind: "int",
    default: 10_000,
    doc: "Longest a SEARCH or VECTOR query may wait in line and compute, together, before it is answered with an error (its own computing time is bounded by STASHD_SEARCH_QUERY_TIME_LIMIT_MS / STASHD_KV_VECTOR_QUERY_TIMEOUT_MS).",
  },
  sseKeepAliveMs: {
    env: "STASHD_SSE_KEEPALIVE_MS",
    kind: "int",
    default: 15_000,
    doc: "Interval of `: keepalive` comments on idle server-sent event streams.",
  },
  maxInflightBodyBytes: {
    env: "STASHD_MAX_INFLIGHT_BODY_BYTES",
    kind: "int",
    default: 256 * 1024 * 1024,
    doc: "Request body bytes the process reads or holds at once (KV and queue together); past it a request with a body is answered 503 with `Retry-After` before its body is read.",
  },
  maxConnections: {
    env: "STASHD_MAX_CONNECTIONS",
    kind: "int",
    default: 0,
    doc: "Client connections one process keeps open, its KV, queue and admin listeners together; past it the oldest connection no standard, ACL or queue token has been sent on is closed. 0: three quarters of the process's open-file limit (the rest is kept for Redis and delivery sockets). Per worker under `stashd start`.",
  },
  requestTimeoutMs: {
    env: "STASHD_REQUEST_TIMEOUT_MS",
    kind: "int",
    default: 30_000,
    doc: "Time a client has to send a whole request (slow clients are cut off).",
  },
  redisConnectTimeoutMs: {
    env: "STASHD_REDIS_CONNECT_TIMEOUT_MS",
    kind: "int",
    default: 5_000,
    doc: "Timeout for opening a backend Redis connection.",
  },
  redisRetryBackoffMs: {
    env: "STASHD_REDIS_RETRY_BACKOFF_MS",
    kind: "int",
    default: 250,
    doc: "After a failed backend connect, requests fail fast for this long before a retry.",
  },
  managedRestartMaxBackoffMs: {
    env: "STASHD_MANAGED_RESTART_MAX_BACKOFF_MS",
    kind: "int",
    default: 5_000,
    doc: "Longest wait before restarting a crashed managed redis-server.",
  },
  registryPollMs: {
    env: "STASHD_REGISTRY_POLL_MS",
    kind: "int",
    default: 250,
    doc: "How often a running server checks the database registry and queue credentials for CLI changes.",
  },
  shutdownGraceMs: {
    env: "STASHD_SHUTDOWN_GRACE_MS",
    kind: "int",
    default: 10_000,
    doc: "Upper bound for in-flight requests and deliveries to finish on SIGINT/SIGTERM; the rest are cut off (unfinished deliveries are redelivered).",
  },
  logLevel: {
    env: "STASHD_LOG_LEVEL",
    kind: "log-level",
    default: "info",
    doc: "debug, info, warn, error or silent.",
  },
  accessLog: {
    env: "STASHD_ACCESS_LOG",
    kind: "bool",
    default: false,
    doc: "true: one `request` log line per HTTP request (method, route, status, ms, bytes). Off by default: at tens of thousands of requests a second the lines cost about 15 % of KV throughput (docs/decisions.md). Errors (5xx) and slow requests are logged either way.",
  },
  slowRequestMs: {
    env: "STASHD_SLOW_REQUEST_MS",
    kind: "int",
    default: 1_000,
    doc: "A request answered after this many ms is logged as `slow request` (info) even without STASHD_ACCESS_LOG; 0 turns that off. Blocking commands and event streams that wait on purpose show up too.",
  },
  stopWithParent: {
    env: "STASHD_STOP_WITH_PARENT",
    kind: "bool",
    default: false,
    doc: "true: `stashd start` stops when its parent process exits. `npx stashd start` sets it (npm's shell does not pass signals on).",
  },
  logFormat: {
    env: "STASHD_LOG_FORMAT",
    kind: "log-format",
    default: "auto",
    doc: "json (one JSON object a line), pretty (for people), or auto: pretty on a terminal, json otherwise.",
  },

  // ---- Admin listener (health, readiness, metrics) ----
  adminEnabled: {
    env: "STASHD_ADMIN",
    kind: "bool",
    default: true,
    doc: "Serve /healthz, /readyz and /metrics (Prometheus) on the admin listener, without a token.",
  },
  adminHost: {
    env: "STASHD_ADMIN_HOST",
    kind: "string",
    default: "127.0.0.1",
    doc: "Address of the admin listener (0.0.0.0 in a container, for probes and scrapes).",
  },
  adminPort: {
    env: "STASHD_ADMIN_PORT",
    kind: "port",
    default: 8081,
    doc: "Port of the admin listener (0 picks a free port).",
  },

  // ---- Queue (QStash-compatible message queue) ----
  queueRedisUrl: {
    env: "STASHD_QUEUE_REDIS_URL",
    kind: "optional-string",
    default: undefined,
    doc: "External Redis holding all queue state (unset: a managed redis-server, appendfsync always).",
  },
  queueMaxDataBytes: {
    env: "STASHD_QUEUE_MAX_DATA_BYTES",
    kind: "int",
    default: 0,
    doc: "Most memory the queue's Redis may use (`used_memory`, the fullest partition's) before the queue API's writes (publish, batch, schedules, DLQ retries…) answer 507 `the queue's storage is full`; deliveries of what was accepted go on, reads and deletes make room. Checked every STASHD_QUEUE_ROOM_CHECK_MS. 0: half of the machine's memory, or of the container's memory limit when it has one.",
  },
  queueRoomCheckMs: {
    env: "STASHD_QUEUE_ROOM_CHECK_MS",
    kind: "int",
    default: 1_000,
    doc: "How often the queue reads its Redis's memory use against STASHD_QUEUE_MAX_DATA_BYTES; a publisher may write up to one interval's worth past the limit.",
  },
  queueAllowUnsafeRedis: {
    env: "STASHD_QUEUE_ALLOW_UNSAFE_REDIS",
    kind: "bool",
    default: false,
    doc: "true: run the queue on a Redis that may lose acknowledged messages (`maxmemory-policy` other than `noeviction`, or persistence off), with a warning, instead of refusing (an ephemeral Redis in CI).",
  },
  queueStoreCheckMs: {
    env: "STASHD_QUEUE_STORE_CHECK_MS",
    kind: "int",
    default: 10_000,
    doc: "How often the queue Redis's eviction policy and persistence are checked again while running; while unsafe, writes answer 503 and /readyz is not ready.",
  },
  queueToken: {
    env: "QSTASH_TOKEN",
    kind: "optional-string",
    default: undefined,
    doc: "Queue API token (unset: generated at first start and kept in the data dir).",
  },
  queueCurrentSigningKey: {
    env: "QSTASH_CURRENT_SIGNING_KEY",
    kind: "optional-string",
    default: undefined,
    doc: "Signing key for deliveries (unset: generated at first start).",
  },
  queueNextSigningKey: {
    env: "QSTASH_NEXT_SIGNING_KEY",
    kind: "optional-string",
    default: undefined,
    doc: "Next signing key, becomes current on rotation (unset: generated at first start).",
  },
  queueKeyRotation: {
    env: "STASHD_QUEUE_KEY_ROTATION",
    kind: "bool",
    default: true,
    doc: "false: `POST /v2/keys/rotate` is refused (403) and the signing keys stay as configured. `stashd dev` always sets it: the SDKs' dev mode trusts only the dev server's fixed key pair.",
  },
  qstashDevPort: {
    env: "QSTASH_DEV_PORT",
    kind: "port",
    default: 8080,
    doc: "`stashd dev` only: port of the message queue API, the one the SDKs' dev mode (`QSTASH_DEV=true`) calls on 127.0.0.1 (STASHD_QUEUE_PORT is not used there).",
  },
  queuePoolSize: {
    env: "STASHD_QUEUE_POOL_SIZE",
    kind: "int",
    default: 4,
    doc: "Pipelined connections to the queue Redis (per master on a cluster), and as many again for acknowledged writes.",
  },
  queuePartitions: {
    env: "STASHD_QUEUE_PARTITIONS",
    kind: "int",
    default: 0,
    doc: "Partitions the queue state is split into, each one cluster slot (0: one on a single Redis, one per master on a Redis Cluster). Fixed when the queue is first used; at most 64.",
  },
  queueClusterFailoverWindowMs: {
    env: "STASHD_QUEUE_CLUSTER_FAILOVER_WINDOW_MS",
    kind: "int",
    default: 20_000,
    doc: "On a Redis Cluster, how long a queue command waits and retries while its slot has no reachable master (a failover); keep it above cluster-node-timeout.",
  },
  queueReplicaAcks: {
    env: "STASHD_QUEUE_REPLICA_ACKS",
    kind: "int",
    default: 1,
    doc: "Replicas that must hold an accepted publish (and other API writes) before it is acknowledged, capped at the queue master's online replicas (0: never wait).",
  },
  queueReplicaAckTimeoutMs: {
    env: "STASHD_QUEUE_REPLICA_ACK_TIMEOUT_MS",
    kind: "int",
    default: 2_000,
    doc: "How long an acknowledgement waits for those replicas; past it the request gets a 503 (the write stays on the master).",
  },
  queueConcurrency: {
    env: "STASHD_QUEUE_CONCURRENCY",
    kind: "int",
    default: 200,
    doc: "Deliveries in flight per stashd process.",
  },
  queueLeaseMs: {
    env: "STASHD_QUEUE_LEASE_MS",
    kind: "int",
    default: 30_000,
    doc: "Delivery lease, renewed by its holder while the attempt runs; an expired one is reaped.",
  },
  queueIdlePollMs: {
    env: "STASHD_QUEUE_IDLE_POLL_MS",
    kind: "int",
    default: 1_000,
    doc: "Longest sleep of an idle dispatcher (it also wakes on local publishes and due times).",
  },
  queueSchedulePollMs: {
    env: "STASHD_QUEUE_SCHEDULE_POLL_MS",
    kind: "int",
    default: 1_000,
    doc: "Longest sleep of the cron scheduler (it also wakes at the earliest tick and on changes).",
  },
  queueScheduleLeadMs: {
    env: "STASHD_QUEUE_SCHEDULE_LEAD_MS",
    kind: "int",
    default: 500,
    doc: "How long before a cron tick its messages are stored, due at the tick, so that only their delivery is left when it comes (0: stored at the tick).",
  },
  queueReapMs: {
    env: "STASHD_QUEUE_REAP_MS",
    kind: "int",
    default: 1_000,
    doc: "How often expired leases are returned to the ready set.",
  },
  queueMaxTimeoutMs: {
    env: "STASHD_QUEUE_MAX_TIMEOUT_MS",
    kind: "int",
    default: 2 * 60 * 60 * 1000,
    doc: "Longest `Upstash-Timeout` (and callback / failure-callback timeout) a publish may ask for; a longer one is refused with 400.",
  },
  queueDefaultTimeoutMs: {
    env: "STASHD_QUEUE_DEFAULT_TIMEOUT_MS",
    kind: "int",
    default: 15 * 60 * 1000,
    doc: "Per-attempt HTTP timeout of a message without `Upstash-Timeout` (at most the ceiling).",
  },
  queueDestinationShare: {
    env: "STASHD_QUEUE_DESTINATION_SHARE",
    kind: "int",
    default: 50,
    doc: "Percent of a process's delivery slots one destination (URL origin) may hold at most.",
  },
  queueBackoffScaleMs: {
    env: "STASHD_QUEUE_BACKOFF_SCALE_MS",
    kind: "int",
    default: 1_000,
    doc: "Unit of the default back-off min(86400, e^(2.5n)); 1 makes it milliseconds for tests.",
  },
  queueMaxMessageBytes: {
    env: "STASHD_QUEUE_MAX_MESSAGE_BYTES",
    kind: "int",
    default: 10 * 1024 * 1024,
    doc: "Largest publish body; response bodies kept for callbacks/DLQ are truncated to it.",
  },
  queueLoggedResponseBytes: {
    env: "STASHD_QUEUE_LOGGED_RESPONSE_BYTES",
    kind: "int",
    default: 10 * 1024,
    doc: "Bytes of a destination's response body kept in the logs and the DLQ (`responseBodyTruncated: true` past it); a delivery without a callback reads no more of it.",
  },
  queuePageMaxBytes: {
    env: "STASHD_QUEUE_PAGE_MAX_BYTES",
    kind: "int",
    default: 2 * 1024 * 1024,
    doc: "A page of `/v2/events`, `/v2/logs`, `/v2/dlq` or `/v2/workflows/logs` ends (with a cursor) once its stored entries (a run's log for the last) pass this many bytes, whatever `count` asked.",
  },
  queuePageMaxScanned: {
    env: "STASHD_QUEUE_PAGE_MAX_SCANNED",
    kind: "int",
    default: 10_000,
    doc: "A page of `/v2/events`, `/v2/logs`, `/v2/dlq` or `/v2/workflows/logs` ends (with a cursor, possibly empty) once it has examined this many stored entries (runs), matched by its filters or not: a filter matching nothing reads at most this much per request.",
  },
  queueMaxRetries: {
    env: "STASHD_QUEUE_MAX_RETRIES",
    kind: "int",
    default: 20,
    doc: "Largest accepted `Upstash-Retries`.",
  },
  queueMaxDelayMs: {
    env: "STASHD_QUEUE_MAX_DELAY_MS",
    kind: "int",
    default: 365 * 24 * 60 * 60 * 1000,
    doc: "Largest accepted delay / not-before distance.",
  },
  queueDedupWindowMs: {
    env: "STASHD_QUEUE_DEDUP_WINDOW_MS",
    kind: "int",
    default: 10 * 60 * 1000,
    doc: "How long a deduplication id is remembered.",
  },
  queueLogRetentionMs: {
    env: "STASHD_QUEUE_LOG_RETENTION_MS",
    kind: "int",
    default: 14 * 24 * 60 * 60 * 1000,
    doc: "How long log events are kept.",
  },
  queueDlqRetentionMs: {
    env: "STASHD_QUEUE_DLQ_RETENTION_MS",
    kind: "int",
    default: 7 * 24 * 60 * 60 * 1000,
    doc: "How long DLQ entries are kept.",
  },
  queueMaxCallbackDepth: {
    env: "STASHD_QUEUE_MAX_CALLBACK_DEPTH",
    kind: "int",
    default: 3,
    doc: "Callbacks of callbacks stop at this depth, so a failing callback cannot loop.",
  },
  queueMaxQueues: {
    env: "STASHD_QUEUE_MAX_QUEUES",
    kind: "int",
    default: 1000,
    doc: "Most FIFO queues; creating one more (upsert, enqueue, schedule fire) is refused with 412.",
  },
  queueMaxFlowControlKeys: {
    env: "STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS",
    kind: "int",
    default: 10_000,
    doc: "Most flow-control keys (`Upstash-Flow-Control-Key`; a key is kept once used); a publish, workflow trigger, step or wait naming one more is refused with 412. Every `GET /v2/flowControl` and `/metrics` scrape reads them all.",
  },
  queueMaxSchedules: {
    env: "STASHD_QUEUE_MAX_SCHEDULES",
    kind: "int",
    default: 10_000,
    doc: "Most cron schedules; creating one more is refused with 412 (replacing one never is).",
  },
  queueMaxUrlGroupEndpoints: {
    env: "STASHD_QUEUE_MAX_URL_GROUP_ENDPOINTS",
    kind: "int",
    default: 1000,
    doc: "Most endpoints of one URL group (a publish to it makes one message per endpoint); adding more is refused with 400.",
  },
  queueMaxBatchItems: {
    env: "STASHD_QUEUE_MAX_BATCH_ITEMS",
    kind: "int",
    default: 1000,
    doc: "Most items of one `POST /v2/batch` or `/v2/batch/trigger` (400 above): each is a publish, stored one after another while the request holds a connection (docs/operations.md, Event-loop holds).",
  },
  queueMaxJsonValues: {
    env: "STASHD_QUEUE_MAX_JSON_VALUES",
    kind: "int",
    default: 100_000,
    doc: "Most JSON values (objects, arrays, strings, numbers…) in a queue API request body that is parsed (batch, URL group endpoints, DLQ and message filters); a body with more is refused with 400 before it is parsed.",
  },
  queueMaxHops: {
    env: "STASHD_QUEUE_MAX_HOPS",
    kind: "int",
    default: 5,
    doc: "A publish arriving on a delivery that already passed this many stashd hops (`Upstash-Hop`) is refused with 400, so a destination that publishes back (a URL group containing itself) cannot loop.",
  },
  queueMaxParallelism: {
    env: "STASHD_QUEUE_MAX_PARALLELISM",
    kind: "int",
    default: 1000,
    doc: "Largest parallelism a FIFO queue may be given (412 above).",
  },
  queueDestinationAllow: {
    env: "STASHD_QUEUE_DESTINATION_ALLOW",
    kind: "optional-string",
    default: undefined,
    doc: "Comma-separated host names (`*.example.com`), IPs or CIDRs deliveries may go to (unset: any).",
  },
  queueDestinationDeny: {
    env: "STASHD_QUEUE_DESTINATION_DENY",
    kind: "optional-string",
    default: undefined,
    doc: "Comma-separated host names, IPs or CIDRs deliveries may never go to (checked after DNS too).",
  },
  queueDenyPrivateNetworks: {
    env: "STASHD_QUEUE_DENY_PRIVATE_NETWORKS",
    kind: "bool",
    default: false,
    doc: "true: refuse loopback, private, link-local and reserved addresses as destinations (shared deployments).",
  },

  // ---- Web console (on the admin listener) ----
  consoleToken: {
    env: "STASHD_CONSOLE_TOKEN",
    kind: "optional-string",
    default: undefined,
    doc: "A second token for the web console login, besides the queue token (unset: queue token only).",
  },
  consoleSessionTtlMs: {
    env: "STASHD_CONSOLE_SESSION_TTL_MS",
    kind: "int",
    default: 8 * 60 * 60 * 1000,
    doc: "Idle time after which a web console session ends (sessions live in memory only).",
  },
  consoleChartStepMs: {
    env: "STASHD_CONSOLE_CHART_STEP_MS",
    kind: "int",
    default: 60_000,
    doc: "Length of one point of the web console's charts; the last 60 points are kept in memory (an hour by default) and lost on restart.",
  },
  consoleChartGatherTimeoutMs: {
    env: "STASHD_CONSOLE_CHART_GATHER_TIMEOUT_MS",
    kind: "int",
    default: 2_000,
    doc: "Under `stashd start` with several workers: how long the Charts page waits for each other worker's counts; a worker that does not answer in time is named on the page and left out of that answer.",
  },
  consoleLoginFailuresPerAddress: {
    env: "STASHD_CONSOLE_LOGIN_FAILURES_PER_ADDRESS",
    kind: "int",
    default: 10,
    doc: "Failed console logins one client address may make per window; then its logins are answered 429 until the window ends.",
  },
  consoleLoginFailuresGlobal: {
    env: "STASHD_CONSOLE_LOGIN_FAILURES_GLOBAL",
    kind: "int",
    default: 100,
    doc: "Failed console logins from all addresses together per window; then every login is answered 429 until the window ends.",
  },
  consoleLoginWindowMs: {
    env: "STASHD_CONSOLE_LOGIN_WINDOW_MS",
    kind: "int",
    default: 60_000,
    doc: "Window in which failed console logins are counted.",
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

type ValueOf<K extends SettingKind> = K extends "string"
  ? string
  : K extends "optional-string"
    ? string | undefined
    : K extends "log-level"
      ? LogLevel
      : K extends "log-format"
        ? LogFormat
        : K extends "bool"
          ? boolean
          : number;

/** The validated, frozen configuration handed to every part of stashd. */
export type Config = {
  readonly [K in SettingName]: ValueOf<(typeof SETTINGS)[K]["kind"]>;
};
