import type { Reply } from "../resp.js";
import type { ClusterBackend, Tally } from "./backend.js";
import { aggregate } from "./fanout.js";
import type { Route } from "./route.js";

/**
 * Runs a multi-key command split by slot (route.ts, `split`) and merges the parts the way its
 * `response_policy` says: `agg_sum` adds (DEL, EXISTS, TOUCH, UNLINK), `all_succeeded` returns the
 * first error or OK (MSET), and without a policy the array replies are put back in the order of
 * the original keys (MGET). The parts run concurrently and are not atomic together, as with any
 * Redis Cluster client (docs/scaling.md, Redis Cluster).
 */
export async function runSplit(
  backend: ClusterBackend,
  route: Extract<Route, { kind: "split" }>,
  tally: Tally,
): Promise<Reply> {
  const replies = await Promise.all(
    route.parts.map((part) =>
      backend.execRouted(part.argv, { kind: "slot", slot: part.slot, readonly: false }, tally),
    ),
  );
  const error = replies.find((r) => r.kind === "error");
  if (error) return error;
  if (route.response === "all_succeeded") return replies[0] as Reply;
  if (route.response?.startsWith("agg_")) return aggregate(route.response as "agg_sum", replies);
  const merged = new Array<Reply>(route.keyCount);
  route.parts.forEach((part, p) => {
    const reply = replies[p];
    part.keyIndexes.forEach((k, j) => {
      merged[k] = reply?.kind === "array" ? (reply.value[j] as Reply) : (reply as Reply);
    });
  });
  return { kind: "array", value: merged };
}
