import { AppError } from "../../shared/errors.js";
import { kvCommands, resultOf } from "./upstream.js";

interface Db {
  kvUrl: string;
  token: string;
}

/** SCAN COUNT of each step of a tree or a delete walk. */
const STEP_COUNT = 1000;
/** A tree level scans at most this many steps (about STEP_COUNT keys each), then says "partial". */
const TREE_STEPS = 50;
/** Namespaces listed per level at most (the largest first); the rest are summed up. */
const TREE_NODES = 200;
/** Keys a delete by pattern removes at most in one request; more must be narrowed first. */
export const DELETE_MAX = 100_000;
/** Keys per UNLINK. */
const UNLINK_BATCH = 500;

/** A SCAN glob matching exactly `prefix` followed by anything (glob characters escaped). */
export function prefixGlob(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
}

export interface Namespace {
  /** The segment after the prefix, up to the separator. */
  name: string;
  /** Keys under `prefix + name + separator` seen by the scan. */
  count: number;
}

export interface TreeLevel {
  prefix: string;
  separator: string;
  namespaces: Namespace[];
  /** Namespaces beyond TREE_NODES, not listed, and the keys under them. */
  more: { namespaces: number; keys: number };
  /** Keys right at this level (no separator after the prefix). */
  keys: number;
  /** Keys the scan returned (those under the prefix). */
  scanned: number;
  /** Whether the scan walked the whole keyspace (counts are exact); else they are a lower bound. */
  complete: boolean;
}

/**
 * One level of the namespace tree under `prefix` (Redis Insight's tree view): the keys starting
 * with it are scanned (at most TREE_STEPS SCAN steps, so a huge keyspace answers in bounded time
 * with `complete: false`) and grouped by the segment up to the next `separator`.
 */
export async function treeLevel(db: Db, prefix: string, separator: string): Promise<TreeLevel> {
  if (separator === "") throw new AppError("bad_request", "separator must not be empty");
  const counts = new Map<string, number>();
  let keys = 0;
  const walk = await scanAll(db, prefixGlob(prefix), TREE_STEPS, (batch) => {
    for (const key of batch) {
      const rest = key.slice(prefix.length);
      const at = rest.indexOf(separator);
      if (at < 0) keys++;
      else counts.set(rest.slice(0, at), (counts.get(rest.slice(0, at)) ?? 0) + 1);
    }
  });
  const all = [...counts].map(([name, count]) => ({ name, count }));
  all.sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : 1));
  const shown = all.slice(0, TREE_NODES).sort((a, b) => (a.name < b.name ? -1 : 1));
  const hidden = all.slice(TREE_NODES);
  return {
    prefix,
    separator,
    namespaces: shown,
    more: { namespaces: hidden.length, keys: hidden.reduce((n, x) => n + x.count, 0) },
    keys,
    scanned: walk.seen,
    complete: walk.complete,
  };
}

/**
 * Walks SCAN MATCH `match` from the start, handing each step's keys to `take`, for at most
 * `steps` steps. Answers how many keys were seen and whether the walk reached the end.
 */
async function scanAll(
  db: Db,
  match: string,
  steps: number,
  take: (keys: string[]) => void,
): Promise<{ seen: number; complete: boolean }> {
  let cursor = "0";
  let seen = 0;
  for (let step = 0; step < steps; step++) {
    const [reply] = await kvCommands(db.kvUrl, db.token, [
      ["SCAN", cursor, "MATCH", match, "COUNT", String(STEP_COUNT)],
    ]);
    const [next, keys] = resultOf(reply) as [string, string[]];
    seen += keys.length;
    take(keys);
    cursor = next;
    if (cursor === "0") return { seen, complete: true };
  }
  return { seen, complete: false };
}

export interface DeletePlan {
  match: string;
  /** Keys matching now (the count the user confirms). */
  count: number;
  /** The first few of them, to show. */
  sample: string[];
}

/**
 * The keys matching `match` (a SCAN glob), counted over the whole keyspace; refused past
 * DELETE_MAX keys (a pattern that broad is narrowed first, or done from redis-cli).
 */
async function matching(db: Db, match: string): Promise<string[]> {
  if (match === "") throw new AppError("bad_request", "match must not be empty");
  const found = new Set<string>();
  const walk = await scanAll(db, match, Number.MAX_SAFE_INTEGER, (keys) => {
    for (const k of keys) found.add(k); // SCAN may return a key twice
    if (found.size > DELETE_MAX) {
      throw new AppError(
        "bad_request",
        `more than ${DELETE_MAX.toLocaleString("en-US")} keys match ${match}: narrow the pattern`,
      );
    }
  });
  if (!walk.complete) throw new AppError("internal", "the scan did not finish");
  return [...found];
}

/** What a delete by pattern would remove, without removing anything. */
export async function planDelete(db: Db, match: string): Promise<DeletePlan> {
  const keys = await matching(db, match);
  return { match, count: keys.length, sample: keys.slice(0, 10) };
}

/**
 * Deletes the keys matching `match` (UNLINK, in batches) and answers how many were deleted. The
 * keys are looked up again here, so a key created after the count was shown and matching the
 * pattern is deleted too, and one gone meanwhile is not counted.
 */
export async function deleteMatching(db: Db, match: string): Promise<{ deleted: number }> {
  const keys = await matching(db, match);
  let deleted = 0;
  for (let i = 0; i < keys.length; i += UNLINK_BATCH) {
    const [reply] = await kvCommands(db.kvUrl, db.token, [
      ["UNLINK", ...keys.slice(i, i + UNLINK_BATCH)],
    ]);
    deleted += Number(resultOf(reply));
  }
  return { deleted };
}
