import type { Deadline } from "../search/deadline.js";
import type { Steps } from "../search/scheduler.js";
import type { LocalIndex } from "./local-index.js";
import type { Profile, QueryRequest } from "./parse.js";
import { prepared, score } from "./similarity.js";
import { TopK } from "./top-k.js";

/**
 * VECTOR.QUERY's search on a process's copy of an index (docs/vector.md, "Profiles"): PRECISE
 * and small indexes scan exactly; FAST and BALANCED search the HNSW graph when there is one.
 */

/** HNSW search breadth per profile (PRECISE scans exactly); measured in bench/vector.ts. */
export const EF: Record<Exclude<Profile, "PRECISE">, number> = { FAST: 40, BALANCED: 120 };

/**
 * The k nearest with their scores, best first: by the graph, or by an exact scan; a slice at a
 * time (search/scheduler.ts). A vector removed while the query waited for a slice is left out.
 */
export function* nearest(
  local: LocalIndex,
  req: QueryRequest,
  deadline: Deadline,
): Steps<{ id: string; score: number }[]> {
  const k = Math.min(req.topK, local.count);
  if (k === 0) return [];
  const hits =
    (req.profile === "PRECISE"
      ? undefined
      : yield* byGraph(local, req.vector, k, EF[req.profile], deadline)) ??
    (yield* local.exact(req.vector, k, deadline));
  const out: { id: string; score: number }[] = [];
  for (const { slot, sim } of hits) {
    const id = local.idAt(slot);
    if (id !== undefined) out.push({ id, score: score(local.metric, sim) });
  }
  return out;
}

/**
 * The graph's k nearest merged with an exact scan of the slots not in it yet (new or changed
 * vectors), every hit scored on the vector as it is now. Undefined (scan everything instead)
 * without a graph, while more than a tenth of the vectors are pending (a first build), or when
 * the graph answers short.
 */
function* byGraph(
  local: LocalIndex,
  query: Float32Array,
  k: number,
  ef: number,
  deadline: Deadline,
): Steps<{ slot: number; sim: number }[] | undefined> {
  const graph = local.graph;
  if (!graph || graph.pendingCount * 10 > local.count) return undefined;
  const q = prepared(local.metric, query);
  const found = graph.search(q, k, ef);
  if (found.length < Math.min(k, local.count - graph.pendingCount)) return undefined;
  const top = new TopK(k);
  for (const slot of found)
    if (!graph.isPending(slot)) top.offer(slot, local.similarityAt(q, slot));
  for (const slot of graph.pendingSlots()) {
    if (deadline.tick()) yield;
    top.offer(slot, local.similarityAt(q, slot));
  }
  return top.best();
}
