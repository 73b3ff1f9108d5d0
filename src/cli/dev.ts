import { seedDevCredentials } from "../dev.js";
import { devOverrides, start, type Stashd } from "../index.js";
import { envLines } from "./credentials.js";
import type { Invocation } from "./main.js";
import { runUntilStopped } from "./start.js";

/**
 * `stashd dev`: `stashd start` with the QStash dev server's well-known credentials on loopback
 * (src/dev.ts), its own data dir, optionally emptied first (`--fresh`). Stops like `stashd start`.
 */
export function runDev(inv: Invocation): Promise<number> {
  const dataDir = inv.values["data-dir"];
  const overrides = devOverrides({
    flags: inv.flags,
    dataDir: typeof dataDir === "string" ? dataDir : undefined,
  });
  const fresh = inv.values.fresh === true;
  const begin = () => {
    seedDevCredentials(String(overrides.dataDir));
    return start({ ...overrides, flags: inv.flags, fresh });
  };
  return runUntilStopped(inv, begin, devBanner);
}

/**
 * Status on stderr (with the logs); the .env block on stdout, always: the queue values are the
 * SDKs' public dev credentials and everything listens on loopback only.
 */
function devBanner(stashd: Stashd): void {
  process.stderr.write(
    [
      "stashd dev is running (in place of the QStash dev server; loopback only)",
      `  message queue: ${stashd.queue.url}`,
      `  Redis REST API: ${stashd.kv.url}`,
      ...(stashd.admin ? [`  admin: ${stashd.admin.url}`] : []),
      `  data dir: ${stashd.config.dataDir}`,
      "  stop with Ctrl-C",
      "",
    ].join("\n"),
  );
  process.stdout.write(`${devEnvLines(stashd).join("\n")}\n`);
}

/** The app's .env for dev mode; the explicit QStash values commented, for SDKs without it. */
export function devEnvLines(stashd: Stashd): string[] {
  const port = stashd.queue.port;
  return [
    "# .env for apps using the Upstash SDKs against `stashd dev`:",
    "QSTASH_DEV=true",
    ...(port === 8080 ? [] : [`QSTASH_DEV_PORT=${port}`]),
    "# SDKs without a dev mode (other languages, older versions) take these instead:",
    `# QSTASH_URL=${stashd.queue.url}`,
    `# QSTASH_TOKEN=${stashd.queue.token}`,
    `# QSTASH_CURRENT_SIGNING_KEY=${stashd.queue.currentSigningKey}`,
    `# QSTASH_NEXT_SIGNING_KEY=${stashd.queue.nextSigningKey}`,
    ...envLines({
      kvUrl: stashd.kv.url,
      databases: stashd.kv.databases(),
      queueUrl: stashd.queue.url,
      queue: undefined,
    }),
  ];
}
