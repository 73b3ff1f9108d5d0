import { credentialsOf, type DatabaseCredentials } from "../kv/databases/database-manager.js";
import { readRegistry } from "../kv/databases/registry.js";
import { readQueueCredentials, type QueueCredentials } from "../queue/credentials.js";
import { readRuntime } from "../runtime.js";
import { AppError } from "../shared/errors.js";
import type { Invocation } from "./main.js";

export interface EnvLinesInput {
  kvUrl: string;
  databases: DatabaseCredentials[];
  queueUrl: string;
  queue: QueueCredentials | undefined;
}

/**
 * The .env block: the `default` database's tokens on the UPSTASH_REDIS_REST_* lines (another
 * database's tokens are never printed under those names; they follow as comments, by name).
 */
export function envLines(input: EnvLinesInput): string[] {
  const main = input.databases.find((d) => d.name === "default");
  const others = input.databases.filter((d) => d !== main);
  return [
    `UPSTASH_REDIS_REST_URL=${input.kvUrl}`,
    ...(main
      ? [
          `UPSTASH_REDIS_REST_TOKEN=${main.token}`,
          `UPSTASH_REDIS_REST_READONLY_TOKEN=${main.readonlyToken}`,
        ]
      : ["# the default database was deleted; `stashd start` creates it again (empty)"]),
    ...others.flatMap((d) => [
      `# database ${d.name}:`,
      `# UPSTASH_REDIS_REST_TOKEN=${d.token}`,
      `# UPSTASH_REDIS_REST_READONLY_TOKEN=${d.readonlyToken}`,
    ]),
    ...(input.queue
      ? [
          `QSTASH_URL=${input.queueUrl}`,
          `QSTASH_TOKEN=${input.queue.token}`,
          `QSTASH_CURRENT_SIGNING_KEY=${input.queue.currentSigningKey}`,
          `QSTASH_NEXT_SIGNING_KEY=${input.queue.nextSigningKey}`,
        ]
      : []),
  ];
}

export function printCredentials(inv: Invocation): number {
  const config = inv.config();
  const runtime = readRuntime(config.dataDir);
  const kvUrl = runtime?.kvUrl ?? `http://${config.host}:${config.kvPort}`;
  const queueUrl = runtime?.queueUrl ?? `http://${config.host}:${config.queuePort}`;
  const databases = readRegistry(config.dataDir).map(credentialsOf);
  const queue = readQueueCredentials(config);
  if (inv.values.json) {
    const out = {
      running: runtime !== undefined,
      kv: { url: kvUrl, databases: databases.map((d) => ({ ...d, url: kvUrl })) },
      ...(queue ? { queue: { url: queueUrl, ...queue } } : {}),
      ...(runtime?.adminUrl ? { admin: { url: runtime.adminUrl } } : {}),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  if (databases.length === 0 && !queue) {
    throw new AppError(
      "not_found",
      `no credentials in ${config.dataDir} yet: run \`stashd start\` once first`,
    );
  }
  const state = runtime ? "running" : "not running; URLs from configuration";
  const lines = [
    `# stashd ${state} (data dir ${config.dataDir})`,
    ...envLines({ kvUrl, databases, queueUrl, queue }),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
