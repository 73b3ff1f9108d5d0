import type { RedisBackend } from "../../shared/redis/backend.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { summedKeysOf } from "./policy.js";

/**
 * Set and sorted-set algebra held to a number of elements (STASHD_KV_MAX_COMBINED_ELEMENTS).
 *
 * SUNION, SINTER, SDIFF, ZUNION and the rest pass over their keys' elements inside one command,
 * and Redis serves no other client meanwhile: with two sets of a million members, SUNION held
 * Redis 2.1-4.4 s and SINTERCARD 1.8-2.8 s (2026-11-28, 2 cores under load), from the read-only
 * token as from any other. The policy already refuses a key named again and again (policy.ts,
 * repeatRefusal); this bounds the distinct keys' sizes. Before such a command is sent, the sizes
 * of its keys are read (SCARD, or ZCARD then SCARD for the ZSET commands, which take sets too:
 * O(1) each, one exchange) and the work is estimated:
 * - union and difference: the sum of the sizes (a difference may take less: Redis picks the
 *   cheaper of two passes, never more than this);
 * - intersection: the smallest size times the number of keys (Redis walks the smallest and looks
 *   each element up in the others).
 * Past the limit the command is refused with what it would pass over. The sizes are read with
 * the token's own rights: a key the token may not read answers an error there, counted as 0,
 * and Redis then refuses the command itself. Keys written later in the same pipeline are not yet
 * counted: the estimate is of the data as it is when the command is checked.
 */
type Estimate = "sum" | "smallest";

const ALGEBRA: Readonly<Record<string, { estimate: Estimate; sorted: boolean }>> = {
  sunion: { estimate: "sum", sorted: false },
  sunionstore: { estimate: "sum", sorted: false },
  sdiff: { estimate: "sum", sorted: false },
  sdiffstore: { estimate: "sum", sorted: false },
  sinter: { estimate: "smallest", sorted: false },
  sinterstore: { estimate: "smallest", sorted: false },
  sintercard: { estimate: "smallest", sorted: false },
  zunion: { estimate: "sum", sorted: true },
  zunionstore: { estimate: "sum", sorted: true },
  zdiff: { estimate: "sum", sorted: true },
  zdiffstore: { estimate: "sum", sorted: true },
  zinter: { estimate: "smallest", sorted: true },
  zinterstore: { estimate: "smallest", sorted: true },
  zintercard: { estimate: "smallest", sorted: true },
};

/** Whether `argv` is a set algebra command whose size is checked (a cheap test by name). */
export function isSetAlgebra(argv: readonly Arg[]): boolean {
  const first = argv[0];
  return first !== undefined && first.length <= 11 && lowerName(first) in ALGEBRA;
}

/**
 * Why `argv` is refused for the elements it would pass over, or undefined (not set algebra,
 * within `limit`, or `limit` 0). Reads its keys' sizes through `pool`.
 */
export async function combinedSizeRefusal(
  argv: readonly Arg[],
  pool: RedisBackend,
  limit: number,
): Promise<string | undefined> {
  if (limit <= 0 || argv[0] === undefined) return undefined;
  const name = lowerName(argv[0]);
  const kind = ALGEBRA[name];
  const keys = kind && summedKeysOf(name, argv);
  if (!kind || !keys || keys.length === 0) return undefined;
  const sizes = await sizesOf(keys, kind.sorted, pool);
  const work =
    kind.estimate === "sum" ? sizes.reduce((a, b) => a + b, 0) : Math.min(...sizes) * sizes.length;
  if (work <= limit) return undefined;
  return (
    `ERR too many elements: ${name.toUpperCase()} would pass over ${work} elements of its ` +
    `${keys.length} keys, more than the ${limit} one command may (STASHD_KV_MAX_COMBINED_ELEMENTS), ` +
    "since Redis serves no other client while it runs; combine fewer or smaller keys"
  );
}

/** Each key's size: SCARD, or for sorted commands ZCARD, then SCARD where that was a set. */
async function sizesOf(keys: readonly Arg[], sorted: boolean, pool: RedisBackend) {
  const first = await pool.execMany(keys.map((k) => [sorted ? "ZCARD" : "SCARD", k]));
  const sizes = first.map(sizeOf);
  if (!sorted) return sizes;
  const sets = first.flatMap((r, i) => (r.kind === "error" ? [i] : []));
  if (sets.length === 0) return sizes;
  const again = await pool.execMany(sets.map((i) => ["SCARD", keys[i] as Arg]));
  sets.forEach((at, j) => (sizes[at] = sizeOf(again[j])));
  return sizes;
}

const sizeOf = (r: Reply | undefined): number => (r?.kind === "int" ? Number(r.value) : 0);

const lowerName = (a: Arg): string => a.toString("latin1").toLowerCase();
