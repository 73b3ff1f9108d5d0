import type { Arg } from "../../shared/redis/resp.js";

/** The most GET patterns one SORT or SORT_RO may carry. */
export const MAX_SORT_GETS = 64;

/**
 * SORT and SORT_RO look up every GET pattern for every element they sort, so the work is the
 * list's length times the request's patterns: `SORT l BY nosort GET w_* …` with 25,000 patterns
 * over a 2,000-element list held Redis for 10 s, from 700 KB of request (the reply was cut at
 * the reply limit only after Redis had built it). More than MAX_SORT_GETS patterns are refused
 * before Redis sees them; the list's own length is bounded by the data, as any read is.
 */
export function sortPatternRefusal(upper: string, argv: readonly Arg[]): string | undefined {
  if (argv.length <= 2 + 2 * MAX_SORT_GETS) return undefined;
  let gets = 0;
  for (let i = 2; i < argv.length;) {
    const option = argv[i]?.toString().toLowerCase();
    if (option === "get") gets++;
    i += option === "limit" ? 3 : option === "get" || option === "by" || option === "store" ? 2 : 1;
  }
  if (gets <= MAX_SORT_GETS) return undefined;
  return (
    `ERR ${upper} with ${gets} GET patterns: at most ${MAX_SORT_GETS}, since each pattern is ` +
    "another lookup for every element sorted"
  );
}
