import { resetQueueToken } from "../queue/credentials.js";
import { readRuntime } from "../runtime.js";
import { AppError } from "../shared/errors.js";
import type { Invocation } from "./main.js";

/**
 * `stashd queue reset-token`: a new queue API token in the credentials file (signing keys kept).
 * Running servers on this data dir refuse the old token within `registryPollMs`. Refused when
 * QSTASH_TOKEN is set: the servers then use that token, and a new file token would revoke nothing.
 */
export function runQueue(inv: Invocation): number {
  const config = inv.config();
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
