import cluster from "node:cluster";
import { start, type Stashd } from "../index.js";
import { credentialsOf } from "../kv/databases/database-manager.js";
import { readRegistry } from "../kv/databases/registry.js";
import { readQueueCredentials } from "../queue/credentials.js";
import { messageOf } from "../shared/errors.js";
import { createLogger } from "../shared/log.js";
import { envLines, type EnvLinesInput } from "./credentials.js";
import type { Invocation } from "./main.js";
import { startSupervisor, workerCount, type SupervisedServer } from "./supervisor.js";
import { runWorker } from "./worker.js";

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const PARENT_POLL_MS = 200;

/**
 * `stashd start`: runs until SIGINT, SIGTERM or SIGHUP (or, when started by `npm start`'s
 * launcher, until that parent goes away), then stops gracefully. Signal handlers are in place
 * before anything starts, so a signal during startup still stops the managed redis-servers. A
 * second signal exits at once. Returns the exit code; bin/stashd exits with it right away.
 */
export function runStart(inv: Invocation): Promise<number> {
  if (cluster.isWorker) return runWorker(inv);
  const config = inv.config();
  const count = workerCount(config);
  if (count <= 1) return runUntilStopped(inv, () => start({ flags: inv.flags }), bannerOf);
  const logger = createLogger(config.logLevel, "stashd", { format: config.logFormat });
  return runUntilStopped(inv, () => startSupervisor(config, logger, count), supervisedBanner);
}

/**
 * Starts stashd with `begin`, shows `announce` once it runs, and stops it on a signal (or when
 * the launcher or parent goes away): the life cycle of `stashd start` and `stashd dev`.
 */
export async function runUntilStopped<T extends { stop(): Promise<void> }>(
  inv: Invocation,
  begin: () => Promise<T>,
  announce: (running: T) => void,
): Promise<number> {
  let stopRequested: ((reason: string) => void) | undefined;
  const requested = new Promise<string>((resolve) => (stopRequested = resolve));
  let signals = 0;
  const onSignal = (reason: string): void => {
    if (++signals > 1) process.exit(130);
    process.stderr.write(`stashd: ${reason}, shutting down\n`);
    stopRequested?.(reason);
  };
  for (const s of SIGNALS) process.on(s, () => onSignal(`${s} received`));
  if (process.connected) {
    // Launched with an IPC channel (scripts/start.mjs): its end means the launcher is gone.
    process.once("disconnect", () => onSignal("launcher exited"));
    process.channel?.unref();
  }
  if (inv.config().stopWithParent) watchParent(() => onSignal("parent process exited"));
  const starting = begin();
  const first = await Promise.race([starting, requested]);
  if (typeof first === "string") {
    // A signal during startup: stop as soon as it is up (or report why it could not start).
    await (await starting).stop();
    return 0;
  }
  const stashd = first;
  announce(stashd);
  await requested;
  try {
    await stashd.stop();
    return 0;
  } catch (err) {
    process.stderr.write(`stashd: shutdown error: ${messageOf(err)}\n`);
    return 1;
  }
}

/** What the banner shows: the URLs, and the credentials when a person reads it. */
interface BannerInput extends EnvLinesInput {
  dataDir: string;
  adminUrl: string | undefined;
  /** Worker processes (none: one process). */
  workers?: number;
}

function bannerOf(stashd: Stashd): void {
  banner({
    dataDir: stashd.config.dataDir,
    kvUrl: stashd.kv.url,
    databases: stashd.kv.databases(),
    queueUrl: stashd.queue.url,
    queue: stashd.queue,
    adminUrl: stashd.admin?.url,
  });
}

function supervisedBanner(server: SupervisedServer): void {
  const { dataDir } = server.config;
  banner({
    dataDir,
    kvUrl: server.urls.kvUrl,
    databases: readRegistry(dataDir).map(credentialsOf),
    queueUrl: server.urls.queueUrl,
    queue: readQueueCredentials(server.config),
    adminUrl: server.urls.adminUrl,
    workers: workerCount(server.config),
  });
}

/**
 * The ready .env block on a terminal (a person is there to copy it); without a terminal the
 * banner ends up in log files, so tokens are left out and `stashd credentials` named instead.
 */
function banner(input: BannerInput): void {
  const head = [
    input.workers ? `stashd is running (${input.workers} worker processes)` : "stashd is running",
    `  Redis REST API (UPSTASH_REDIS_REST_URL): ${input.kvUrl}`,
    `  message queue (QSTASH_URL): ${input.queueUrl}`,
    ...(input.adminUrl
      ? [
          `  web console: ${input.adminUrl}/console`,
          `  admin (health, readiness, metrics): ${input.adminUrl}`,
        ]
      : []),
  ];
  const creds = `stashd credentials --data-dir ${input.dataDir}`;
  const tail = process.stderr.isTTY
    ? ["", "# .env for the Upstash SDKs (also printed by `" + creds + "`):", ...envLines(input), ""]
    : [`  tokens: \`${creds}\` (not written to logs)`];
  process.stderr.write(`${[...head, ...tail, "  stop with Ctrl-C"].join("\n")}\n`);
}

/** Calls `gone` once this process is orphaned (re-parented when its parent exits). */
function watchParent(gone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    gone();
  }, PARENT_POLL_MS);
  timer.unref();
}
