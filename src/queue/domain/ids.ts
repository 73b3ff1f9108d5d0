import { randomBytes } from "node:crypto";

/**
 * Identifiers in the shapes the SDKs expect (docs/qstash-protocol.md §7.1). Every id is
 * URL-path-safe (`[A-Za-z0-9_-]`), because clients put ids into paths unencoded.
 */
const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Random bytes are drawn from a refilled pool: one randomBytes call per 4 KB, not per id. */
let pool = randomBytes(4096);
let offset = 0;

export function base58(length: number): string {
  if (offset + length > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  let out = "";
  for (let i = 0; i < length; i++) out += BASE58[(pool[offset + i] ?? 0) % 58];
  offset += length;
  return out;
}

export const newMessageId = (): string => `msg_${base58(26)}`;
export const newJwtId = (): string => `jwt_${base58(28)}`;
export const newSigningKey = (): string => `sig_${base58(28)}`;

let dlqSeq = 0;

/** DLQ ids look like Redis stream ids, `<unix ms>-<seq>`; the random part keeps processes apart. */
export function newDlqId(now: number): string {
  dlqSeq = (dlqSeq + 1) % 1000;
  return `${now}-${randomBytes(3).readUIntBE(0, 3) * 1000 + dlqSeq}`;
}
