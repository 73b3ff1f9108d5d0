import type { Config } from "../config/schema.js";
import { messageOf } from "../shared/errors.js";
import { fileStamp } from "../shared/files.js";
import type { Logger } from "../shared/log.js";
import { queueCredentialsFile, readQueueCredentials } from "./credentials.js";

type WatchConfig = Pick<
  Config,
  "dataDir" | "queueToken" | "queueCurrentSigningKey" | "queueNextSigningKey" | "registryPollMs"
>;

/**
 * The queue API token a running server accepts. When it comes from the credentials file (no
 * QSTASH_TOKEN), the file is polled every `registryPollMs` and re-read when it changed, so
 * `stashd queue reset-token` revokes the old token without a restart, as `stashd db
 * reset-password` does for KV tokens. When QSTASH_TOKEN is set the file's token is never used,
 * so nothing is polled.
 *
 * A missing or unreadable file keeps the last good token (and is logged, without the token):
 * the CLI replaces the file atomically, so that only happens after a manual edit or deletion,
 * and refusing every request because of a typo would be worse than a delayed revocation.
 */
export class QueueTokenWatch {
  private token: string;
  private stamp = "";
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: WatchConfig,
    private readonly log: Logger,
    initial: string,
  ) {
    this.token = initial;
  }

  /** The token to compare requests against (the router compares it in constant time). */
  current(): string {
    return this.token;
  }

  start(): void {
    if (this.config.queueToken !== undefined) return;
    this.reloadIfChanged();
    this.timer = setInterval(() => this.reloadIfChanged(), this.config.registryPollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Re-reads the file when its stamp changed. The stamp is taken before reading, so a write that
   * lands between the two is read now and simply read once more at the next poll.
   */
  private reloadIfChanged(): void {
    const stamp = fileStamp(queueCredentialsFile(this.config.dataDir));
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    const next = this.readToken();
    if (next === undefined || next === this.token) return;
    this.token = next;
    this.log.info("queue token changed in the credentials file: the previous token is refused");
  }

  private readToken(): string | undefined {
    try {
      const token = readQueueCredentials(this.config)?.token;
      if (typeof token === "string" && token !== "") return token;
      this.log.warn("queue credentials file missing or without a token: keeping the current token");
    } catch (err) {
      this.log.error("queue credentials file unreadable: keeping the current token", {
        // JSON.parse messages quote the text around the error, which may be the token.
        err: err instanceof SyntaxError ? "not valid JSON" : messageOf(err),
      });
    }
    return undefined;
  }
}
