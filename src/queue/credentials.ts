import path from "node:path";
import type { Config } from "../config/schema.js";
import { readJsonFile, writeJsonFile } from "../shared/files.js";
import { base58, newSigningKey } from "./domain/ids.js";

/**
 * Queue credentials: the API token (QStash shape: base64 of `{"UserID","Password"}`) and the two
 * signing keys. Generated at first start into `<dataDir>/queue-credentials.json` (mode 0600);
 * QSTASH_TOKEN / QSTASH_*_SIGNING_KEY override them. After a rotation the file is rewritten so
 * `stashd credentials` shows the keys receivers need.
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

/** Stored credentials with config overrides applied; undefined before the first start. */
export function readQueueCredentials(config: CredentialConfig): QueueCredentials | undefined {
  const stored = readJsonFile(queueCredentialsFile(config.dataDir)) as QueueCredentials | undefined;
  if (!stored) return undefined;
  return applyOverrides(stored, config);
}

/** Reads or creates the stored credentials, then applies config overrides. */
export function loadQueueCredentials(config: CredentialConfig): QueueCredentials {
  const file = queueCredentialsFile(config.dataDir);
  let stored = readJsonFile(file) as QueueCredentials | undefined;
  if (!stored) {
    stored = {
      token: makeToken("stashd", base58(32)),
      currentSigningKey: newSigningKey(),
      nextSigningKey: newSigningKey(),
    };
    writeJsonFile(file, stored);
  }
  return applyOverrides(stored, config);
}

export function saveSigningKeys(dataDir: string, current: string, next: string): void {
  const file = queueCredentialsFile(dataDir);
  const stored = readJsonFile(file) as QueueCredentials | undefined;
  if (!stored) return;
  writeJsonFile(file, { ...stored, currentSigningKey: current, nextSigningKey: next });
}

function applyOverrides(stored: QueueCredentials, config: CredentialConfig): QueueCredentials {
  return {
    token: config.queueToken ?? stored.token,
    currentSigningKey: config.queueCurrentSigningKey ?? stored.currentSigningKey,
    nextSigningKey: config.queueNextSigningKey ?? stored.nextSigningKey,
  };
}
