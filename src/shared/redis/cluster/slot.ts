import type { Arg } from "../resp.js";

/** Redis Cluster's key space: 16384 hash slots (docs/scaling.md, Redis Cluster). */
export const SLOT_COUNT = 16384;

const TABLE = buildTable();

function buildTable(): Uint16Array {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
}

/** CRC16-CCITT (XModem), the checksum Redis Cluster hashes keys with. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes)
    crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/**
 * The slot of a key. A hash tag — the part between the first `{` and the next `}`, when not
 * empty — is hashed instead of the whole key, so `{user1}:a` and `{user1}:b` share a slot.
 */
export function hashSlot(key: Arg): number {
  const bytes = typeof key === "string" ? Buffer.from(key) : key;
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % SLOT_COUNT;
  }
  return crc16(bytes) % SLOT_COUNT;
}
