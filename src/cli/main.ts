import { parseArgs } from "node:util";
import { loadConfig, type ConfigOverrides } from "../config/load.js";
import { start } from "../index.js";
import { credentialsOf } from "../kv/databases.js";
import { readQueueCredentials, resetQueueToken } from "../queue/credentials.js";
import { createDatabase, deleteDatabase, readRegistry, resetPassword } from "../kv/registry.js";
import { readRuntime } from "../runtime.js";
import { AppError, messageOf } from "../shared/errors.js";

const USAGE = `stashd: Upstash-compatible Redis REST gateway and message queue on your own Redis

Usage:
  stashd start [--host H] [--kv-port N] [--queue-port N] [--data-dir DIR] [--log-level L]
  stashd credentials [--data-dir DIR] [--json]
  stashd db create NAME [--redis-url URL] [--max-request-size BYTES] [--daily-request-limit N]
                        [--script-time-limit MS] [--allow-migrate]
  stashd db list [--json]
  stashd db reset-password NAME
  stashd db delete NAME
  stashd queue reset-token

Every option is also an environment variable (see the README's configuration table).
`;

const OPTIONS = {
  host: { type: "string" },
  "kv-port": { type: "string" },
  "queue-port": { type: "string" },
  "data-dir": { type: "string" },
  "log-level": { type: "string" },
  "redis-url": { type: "string" },
  "max-request-size": { type: "string" },
  "daily-request-limit": { type: "string" },
  "script-time-limit": { type: "string" },
  "allow-migrate": { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parse>["values"];

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

/** Entry point of `bin/stashd`; returns the process exit code (start never returns). */
export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`stashd: ${messageOf(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, sub, name] = positionals;
  if (values.help || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    if (command === "start") return await runStart(values);
    if (command === "credentials") return printCredentials(values);
    if (command === "db") return runDb(sub, name, values);
    if (command === "queue") return runQueue(sub, name, values);
  } catch (err) {
    process.stderr.write(`stashd: ${messageOf(err)}\n`);
    return 1;
  }
  process.stderr.write(`stashd: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  return 2;
}

function overridesOf(values: Values): ConfigOverrides {
  const int = (v: string | undefined): number | undefined =>
    v === undefined ? undefined : Number(v);
  return {
    host: values.host,
    kvPort: int(values["kv-port"]),
    queuePort: int(values["queue-port"]),
    dataDir: values["data-dir"],
    logLevel: values["log-level"] as ConfigOverrides["logLevel"],
  };
}

async function runStart(values: Values): Promise<number> {
  const stashd = await start(overridesOf(values));
  const dataDir = stashd.config.dataDir;
  process.stderr.write(
    `stashd is running\n` +
      `  Redis REST API (UPSTASH_REDIS_REST_URL): ${stashd.kv.url}\n` +
      `  message queue (QSTASH_URL): ${stashd.queue.url}\n` +
      `  credentials:  stashd credentials --data-dir ${dataDir}  (kept in ${dataDir})\n` +
      `  stop with Ctrl-C\n`,
  );
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: string): void => {
      if (++signals > 1) process.exit(130);
      process.stderr.write(`stashd: ${signal} received, shutting down\n`);
      stashd.stop().then(resolve, (err: unknown) => {
        process.stderr.write(`stashd: shutdown error: ${messageOf(err)}\n`);
        resolve();
      });
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  return 0;
}

function printCredentials(values: Values): number {
  const config = loadConfig(overridesOf(values));
  const runtime = readRuntime(config.dataDir);
  const kvUrl = runtime?.kvUrl ?? `http://${config.host}:${config.kvPort}`;
  const dbs = readRegistry(config.dataDir).map(credentialsOf);
  const queueUrl = runtime?.queueUrl ?? `http://${config.host}:${config.queuePort}`;
  const queue = readQueueCredentials(config);
  if (values.json) {
    const out = {
      running: runtime !== undefined,
      kv: { url: kvUrl, databases: dbs.map((d) => ({ ...d, url: kvUrl })) },
      ...(queue ? { queue: { url: queueUrl, ...queue } } : {}),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  if (dbs.length === 0) {
    throw new AppError(
      "not_found",
      `no credentials in ${config.dataDir} yet: run \`stashd start\` once first`,
    );
  }
  const [main, ...others] = [...dbs].sort((a, b) =>
    a.name === "default" ? -1 : b.name === "default" ? 1 : 0,
  );
  const lines = [
    `# stashd ${runtime ? "running" : "not running; URL from configuration"} (data dir ${config.dataDir})`,
    `# database: ${main?.name ?? ""}`,
    `UPSTASH_REDIS_REST_URL=${kvUrl}`,
    `UPSTASH_REDIS_REST_TOKEN=${main?.token ?? ""}`,
    `UPSTASH_REDIS_REST_READONLY_TOKEN=${main?.readonlyToken ?? ""}`,
    ...others.flatMap((d) => [
      `# database ${d.name}:`,
      `# UPSTASH_REDIS_REST_TOKEN=${d.token}`,
      `# UPSTASH_REDIS_REST_READONLY_TOKEN=${d.readonlyToken}`,
    ]),
    ...(queue
      ? [
          `QSTASH_URL=${queueUrl}`,
          `QSTASH_TOKEN=${queue.token}`,
          `QSTASH_CURRENT_SIGNING_KEY=${queue.currentSigningKey}`,
          `QSTASH_NEXT_SIGNING_KEY=${queue.nextSigningKey}`,
        ]
      : []),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}

function runDb(sub: string | undefined, name: string | undefined, values: Values): number {
  const { dataDir } = loadConfig(overridesOf(values));
  if (sub === "list") {
    const dbs = readRegistry(dataDir).map((r) => ({
      name: r.name,
      backend: r.redisUrl ? "external" : "managed",
      createdAt: r.createdAt,
    }));
    process.stdout.write(
      values.json
        ? `${JSON.stringify(dbs, null, 2)}\n`
        : dbs.map((d) => `${d.name}\t${d.backend}\t${d.createdAt}`).join("\n") + "\n",
    );
    return 0;
  }
  if (!name || !["create", "reset-password", "delete"].includes(sub ?? "")) {
    throw new AppError(
      "bad_request",
      `usage: stashd db create|reset-password|delete NAME, or stashd db list`,
    );
  }
  if (sub === "create") {
    const record = createDatabase(dataDir, name, {
      ...(values["redis-url"] ? { redisUrl: values["redis-url"] } : {}),
      ...numberOption("maxRequestBytes", values["max-request-size"]),
      ...numberOption("dailyRequestLimit", values["daily-request-limit"]),
      ...numberOption("scriptTimeLimitMs", values["script-time-limit"]),
      ...(values["allow-migrate"] ? { allowMigrate: true } : {}),
    });
    const creds = credentialsOf(record);
    process.stdout.write(
      `created database ${name}\ntoken: ${creds.token}\nread-only token: ${creds.readonlyToken}\n`,
    );
  } else if (sub === "reset-password") {
    const creds = credentialsOf(resetPassword(dataDir, name));
    process.stdout.write(
      `reset database ${name}: the old tokens are revoked\ntoken: ${creds.token}\nread-only token: ${creds.readonlyToken}\n`,
    );
  } else {
    deleteDatabase(dataDir, name);
    process.stdout.write(`deleted database ${name}\n`);
  }
  return 0;
}

/**
 * `stashd queue reset-token`: a new queue API token in the credentials file (signing keys kept).
 * Running servers on this data dir refuse the old token within `registryPollMs`. Refused when
 * QSTASH_TOKEN is set: the servers then use that token, and a new file token would revoke nothing.
 */
function runQueue(sub: string | undefined, extra: string | undefined, values: Values): number {
  if (sub !== "reset-token" || extra !== undefined) {
    throw new AppError("bad_request", "usage: stashd queue reset-token [--data-dir DIR]");
  }
  const config = loadConfig(overridesOf(values));
  if (config.queueToken !== undefined) {
    throw new AppError(
      "conflict",
      "QSTASH_TOKEN is set, so stashd uses it and not the token in queue-credentials.json: " +
        "resetting the file's token would revoke nothing. Change QSTASH_TOKEN where stashd runs " +
        "and restart it, or unset it here and run reset-token again.",
    );
  }
  const token = resetQueueToken(config.dataDir);
  const running = readRuntime(config.dataDir) !== undefined;
  process.stdout.write(
    `# queue token reset: the old token is revoked (${
      running
        ? "a running stashd on this data dir refuses it within STASHD_REGISTRY_POLL_MS"
        : "stashd is not running; the new token applies at its next start"
    })\nQSTASH_TOKEN=${token}\n`,
  );
  return 0;
}

function numberOption<K extends string>(key: K, raw: string | undefined): { [P in K]?: number } {
  if (raw === undefined) return {};
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new AppError("bad_request", `--${key} must be a whole number, got ${raw}`);
  return { [key]: n } as { [P in K]?: number };
}
