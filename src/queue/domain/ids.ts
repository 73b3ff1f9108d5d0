import { randomBytes } from "node:crypto";

/**
 * Identifiers in the shapes the SDKs expect (spec section 7.1). Every id is URL-path-safe
 * (`[A-Za-z0-9_-]`), because clients put ids into paths unencoded.
 */
const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

export function base58(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += BASE58[b % 58];
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
