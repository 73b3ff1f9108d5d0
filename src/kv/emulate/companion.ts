import type { Arg } from "../../shared/redis/resp.js";

/**
 * The name of the key holding a hash's field deadlines (docs/compatibility.md, "Hash-field
 * expiration"). It hashes to the same cluster slot as the hash whenever that is possible:
 * - the hash's name has a hash tag (`a{b}c`): `stashd:hfe:` + name keeps that tag;
 * - it has none and no `}`: `stashd:hfe{` + name + `}` makes the whole name the tag;
 * - it has no tag but a `}` (`a}b`): no tag can reproduce the whole-name slot, so the companion
 *   is `stashd:hfe:` + name, in another slot (fine on one server; documented for clusters).
 * The prefixes differ at their tenth byte, so two different hashes never share a companion.
 */
export function companionKey(key: Arg): Buffer {
  const name = typeof key === "string" ? Buffer.from(key) : key;
  if (hasHashTag(name) || name.includes(0x7d)) return Buffer.concat([TAGGED, name]);
  return Buffer.concat([WRAPPED, name, CLOSE]);
}

const TAGGED = Buffer.from("stashd:hfe:");
const WRAPPED = Buffer.from("stashd:hfe{");
const CLOSE = Buffer.from("}");

/** Redis Cluster's rule: a `{` followed, later, by a `}` with at least one byte between. */
export function hasHashTag(name: Buffer): boolean {
  const open = name.indexOf(0x7b);
  if (open < 0) return false;
  const close = name.indexOf(0x7d, open + 1);
  return close > open + 1;
}
