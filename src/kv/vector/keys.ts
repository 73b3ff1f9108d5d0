/**
 * Where a vector index lives in Redis (docs/vector.md, "Storage"): the index is one hash at the
 * user's key, so EXISTS, EXPIRE, DEL and TYPE see it as Upstash describes; its change log is a
 * stream in the same hash slot, so the write script can touch both on a Redis Cluster.
 */

/** Field names in the index hash. Vectors are `id:<id>`, beside four `meta:` fields. */
export const META_DIM = "meta:dim";
export const META_METRIC = "meta:metric";
export const META_GEN = "meta:gen";
export const META_SEQ = "meta:seq";
export const ID_PREFIX = "id:";
/** How many `meta:` fields an index hash has (HLEN minus this is the vector count). */
export const META_FIELD_COUNT = 4;

/**
 * The text Redis Cluster hashes for `key`: the first `{…}` with something inside, else the key.
 * See the Redis Cluster specification, "Hash tags".
 */
export function hashedPart(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/**
 * The change log's key, in the index's slot: `{<hashed part>}stashd:vector-log:<index>`.
 * Undefined when no such key exists: a name that Redis hashes whole and that holds a `}` (the
 * tag would end early). Such names are refused (docs/vector.md).
 */
export function logKeyOf(index: string): string | undefined {
  const hashed = hashedPart(index);
  if (hashed.includes("}")) return undefined;
  return `{${hashed}}stashd:vector-log:${index}`;
}
