import path from "node:path";
import type { Config } from "../config/schema.js";
import { AppError } from "../shared/errors.js";
import { readJsonFile, withFileLock, writeJsonFile } from "../shared/files.js";
import { base58, newSigningKey } from "./domain/ids.js";

/**
 * Queue credentials: the API token (QStash shape: base64 of `{"UserID","Password"}`) and the two
 * signing keys. Generated at first start into `<dataDir>/queue-credentials.json` (mode 0600);
 * QSTASH_TOKEN / QSTASH_*_SIGNING_KEY override them. After a rotation the file is rewritten so
 * `stashd credentials` shows the keys receivers need. `stashd queue reset-token` writes a new token
 * into the file; running servers re-read it (see token-watch.ts).
 */
export interface QueueCredentials {
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

type CredentialConfig = Pick<
  Config,
  "dataDir" | "queueToken" | "queueCurrentSigningKey" | "queueNextSigningKey"
>;

export function queueCredentialsFile(dataDir: string): string {
  return path.join(dataDir, "queue-credentials.json");
}

export function makeToken(userId: string, password: string): string {
  return Buffer.from(JSON.stringify({ UserID: userId, Password: password })).toString("base64");
}

/** A fresh token of the QStash shape, as generated at first start. */
function newQueueToken(): string {
  return makeToken("stashd", base58(32));
}

/** Stored credentials with config overrides applied; undefined before the first start. */
export function readQueueCredentials(config: CredentialConfig): QueueCredentials | undefined {
  const stored = readJsonFile(queueCredentialsFile(config.dataDir)) as QueueCredentials | undefined;
  if (!stored) return undefined;
  return applyOverrides(stored, config);
}

/** Reads or creates the stored credentials, then applies config overrides. */
export function loadQueueCredentials(config: CredentialConfig): QueueCredentials {
  const file = queueCredentialsFile(config.dataDir);
  const stored = withFileLock(file, () => {
    const existing = readJsonFile(file) as QueueCredentials | undefined;
    if (existing) return existing;
    const created = {
      token: newQueueToken(),
      currentSigningKey: newSigningKey(),
      nextSigningKey: newSigningKey(),
    };
    writeJsonFile(file, created);
    return created;
  });
  return applyOverrides(stored, config);
}

/**
 * Writes a new API token into the stored credentials, keeping the signing keys, and returns it.
 * The file is replaced atomically, so a running server polling it (QueueTokenWatch) sees either
 * the old or the new token, never a half-written file. Throws not_found before the first start:
 * there are no signing keys to keep yet, and the first start generates a token anyway.
 */
export function resetQueueToken(dataDir: string): string {
  const file = queueCredentialsFile(dataDir);
  return withFileLock(file, () => {
    const stored = readJsonFile(file) as QueueCredentials | undefined;
    if (!stored) {
      throw new AppError(
        "not_found",
        `no queue credentials in ${dataDir} yet: run \`stashd start\` once first`,
      );
    }
    const token = newQueueToken();
    writeJsonFile(file, { ...stored, token });
    return token;
  });
}

/** Records rotated signing keys (under the file lock: a concurrent token reset is kept). */
export function saveSigningKeys(dataDir: string, current: string, next: string): void {
  const file = queueCredentialsFile(dataDir);
  withFileLock(file, () => {
    const stored = readJsonFile(file) as QueueCredentials | undefined;
    if (stored)
      writeJsonFile(file, { ...stored, currentSigningKey: current, nextSigningKey: next });
  });
}

function applyOverrides(stored: QueueCredentials, config: CredentialConfig): QueueCredentials {
  return {
    token: config.queueToken ?? stored.token,
    currentSigningKey: config.queueCurrentSigningKey ?? stored.currentSigningKey,
    nextSigningKey: config.queueNextSigningKey ?? stored.nextSigningKey,
  };
}
