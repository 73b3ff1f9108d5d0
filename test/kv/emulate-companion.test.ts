import { describe, expect, it } from "vitest";
import { companionKey } from "../../src/kv/emulate/companion.js";

/** Redis Cluster's key slot: CRC16-XMODEM of the hash tag (or whole key), mod 16384. */
function slotOf(key: Buffer): number {
  const open = key.indexOf(0x7b);
  const close = open < 0 ? -1 : key.indexOf(0x7d, open + 1);
  const tagged = close > open + 1 ? key.subarray(open + 1, close) : key;
  let crc = 0;
  for (const byte of tagged) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

describe("the companion key of a hash's field deadlines", () => {
  it("is named after the hash, in the hash's slot when one can be", () => {
    expect(companionKey("user:1").toString()).toBe("stashd:hfe{user:1}");
    expect(companionKey("{user}:1").toString()).toBe("stashd:hfe:{user}:1");
    expect(companionKey("a{b").toString()).toBe("stashd:hfe{a{b}");
    for (const key of ["user:1", "{user}:1", "a{b", "x{y}z{w}", "é", "{{a}}"]) {
      const name = Buffer.from(key);
      expect(slotOf(companionKey(name)), key).toBe(slotOf(name));
    }
  });

  it("cannot share the slot of a name with `}` but no hash tag, and says so by its prefix", () => {
    expect(companionKey("a}b").toString()).toBe("stashd:hfe:a}b");
    expect(companionKey("}{").toString()).toBe("stashd:hfe:}{");
    expect(companionKey("a{}b").toString()).toBe("stashd:hfe:a{}b"); // `{}` is no tag
  });

  it("differs for every pair of different hash names", () => {
    const names = ["x", "{x}", ":{x}", "stashd:hfe{x}", "a}b", "}a}b"];
    const companions = new Set(names.map((n) => companionKey(n).toString()));
    expect(companions.size).toBe(names.length);
  });
});
