import type { Deadline } from "../search/deadline.js";
import type { Steps } from "../search/scheduler.js";
import { Graph } from "./graph.js";
import type { Metric } from "./parse.js";
import { prepared, similarity } from "./similarity.js";
import { TopK } from "./top-k.js";

/**
 * One process's copy of a vector index, derived from Redis (sync.ts keeps it current): the
 * vectors packed in one Float32Array by slot, the id of each slot, and, for large indexes, an
 * HNSW graph over the same slots (graph.ts). Slots are never reused: a removed one becomes a
 * hole, and `needsCompaction` asks the store to rebuild the copy once holes outnumber vectors.
 */
export class LocalIndex {
  /** The last change-log entry applied: its stream id and sequence number (meta:seq). */
  logId = "0-0";
  seq = 0;
  lastUsed = Date.now();
  graph: Graph | undefined;
  private data: Float32Array;
  private readonly ids: (string | undefined)[] = [];
  private readonly slotOf = new Map<string, number>();

  constructor(
    readonly dim: number,
    readonly metric: Metric,
    readonly gen: string,
    capacity = 1024,
  ) {
    this.data = new Float32Array(dim * capacity);
  }

  get count(): number {
    return this.slotOf.size;
  }

  /** Bytes this copy holds: its vectors, and as much again for a graph (HNSW keeps a copy). */
  get bytes(): number {
    return this.data.byteLength * (this.graph ? 2 : 1);
  }

  get needsCompaction(): boolean {
    const holes = this.ids.length - this.count;
    return holes > 1024 && holes > this.count;
  }

  idAt(slot: number): string | undefined {
    return this.ids[slot];
  }

  /** The stored (prepared) vector at a slot: a view, valid until the next upsert. */
  vectorAt(slot: number): Float32Array {
    return this.data.subarray(slot * this.dim, (slot + 1) * this.dim);
  }

  upsert(id: string, vector: Float32Array): void {
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      slot = this.ids.length;
      this.grow(slot + 1);
      this.ids.push(id);
      this.slotOf.set(id, slot);
    }
    this.data.set(prepared(this.metric, vector), slot * this.dim);
    this.graph?.enqueue(slot);
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    this.ids[slot] = undefined;
    this.graph?.remove(slot);
  }

  /** Every live slot, in slot order. */
  *slots(): Generator<number> {
    for (let slot = 0; slot < this.ids.length; slot++) if (this.ids[slot] !== undefined) yield slot;
  }

  /**
   * The exact k nearest by a full scan, a slice at a time (search/scheduler.ts): the deadline is
   * ticked per vector, so it yields, or throws `QueryTimeout`, between two vectors. Vectors
   * added while it waits for its next slice are not seen; removed ones are skipped.
   */
  *exact(
    query: Float32Array,
    k: number,
    deadline: Deadline,
  ): Steps<{ slot: number; sim: number }[]> {
    const q = prepared(this.metric, query);
    const top = new TopK(k);
    const n = this.ids.length;
    for (let slot = 0; slot < n; slot++) {
      if (deadline.tick()) yield;
      if (this.ids[slot] === undefined) continue;
      // `this.data` is read again at each vector: an upsert between slices may replace it.
      top.offer(slot, similarity(this.metric, q, this.data, slot * this.dim));
    }
    return top.best();
  }

  /** The similarity of a query (prepared) with the vector at a slot. */
  similarityAt(q: Float32Array, slot: number): number {
    return similarity(this.metric, q, this.data, slot * this.dim);
  }

  /** A copy without holes: the same ids, vectors and log position, no graph. */
  *compacted(deadline: Deadline): Steps<LocalIndex> {
    const copy = new LocalIndex(this.dim, this.metric, this.gen, Math.max(1024, this.count));
    for (const slot of this.slots()) {
      if (deadline.tick()) yield;
      copy.upsertPrepared(this.ids[slot] as string, this.vectorAt(slot));
    }
    copy.logId = this.logId;
    copy.seq = this.seq;
    return copy;
  }

  private upsertPrepared(id: string, vector: Float32Array): void {
    const slot = this.ids.length;
    this.grow(slot + 1);
    this.ids.push(id);
    this.slotOf.set(id, slot);
    this.data.set(vector, slot * this.dim);
  }

  private grow(slots: number): void {
    if (slots * this.dim <= this.data.length) return;
    const bigger = new Float32Array(Math.max(slots, 2 * (this.data.length / this.dim)) * this.dim);
    bigger.set(this.data);
    this.data = bigger;
  }
}

/** A query ran past STASHD_KV_VECTOR_QUERY_TIMEOUT_MS. */
export class QueryTimeout extends Error {}
