import type { Config } from "../config/schema.js";
import { BodyBudget } from "../shared/http/body.js";
import type { ConnectionCap } from "../shared/http/connections.js";
import { KV_SHAPE } from "../shared/http/lane-parse.js";
import { listen, type RunningHttpServer } from "../shared/http/server.js";
import { instrument, meterLane, RequestMeter, requestLogging } from "../shared/instrument.js";
import type { Logger } from "../shared/log.js";
import { DatabaseManager, type DatabaseCredentials } from "./databases/database-manager.js";
import { KvHttpHandler } from "./http/http.js";

export interface KvService {
  url: string;
  port: number;
  databases(): DatabaseCredentials[];
  manager: DatabaseManager;
  close(): Promise<void>;
}

/** What the gateway shares with the other listeners of its process (serve.ts). */
export interface KvShared {
  /** Request body bytes in flight (own budget when not given). */
  bodies?: BodyBudget;
  /** The process's bound on open connections (none when not given). */
  connections?: ConnectionCap;
}

/** Starts the databases (managed redis-servers included) and the gateway's HTTP server. */
export async function startKvService(
  config: Config,
  logger: Logger,
  shared: KvShared = {},
): Promise<KvService> {
  const bodies = shared.bodies ?? new BodyBudget(config.maxInflightBodyBytes);
  const manager = new DatabaseManager(config, logger.child("db"));
  await manager.start();
  const handler = new KvHttpHandler({
    manager,
    logger,
    sseKeepAliveMs: config.sseKeepAliveMs,
    maxBufferedReplyBytes: config.kvMaxBufferedReplyBytes,
    writeStallMs: config.requestTimeoutMs,
    bodies,
  });
  const metering = { service: "kv", logger, ...requestLogging(config) };
  const meter = new RequestMeter(metering);
  let http: RunningHttpServer;
  try {
    http = await listen(instrument(handler.handle, metering, meter), {
      host: config.host,
      port: config.kvPort,
      requestTimeoutMs: config.requestTimeoutMs,
      errorPrefix: "ERR ",
      connections: shared.connections,
      ...(config.kvFastLane
        ? {
            lane: {
              shape: KV_SHAPE,
              take: handler.serveLane,
              admit: handler.admitLane,
              answered: meterLane(meter),
            },
          }
        : {}),
    });
  } catch (err) {
    await manager.close();
    throw err;
  }
  return {
    url: http.url,
    port: http.port,
    manager,
    databases: () => manager.credentials(),
    close: async () => {
      const closing = http.close(config.shutdownGraceMs);
      handler.endHeld();
      await closing;
      await manager.close();
    },
  };
}
