import hnswlib from "hnswlib-node";
import type { Metric } from "./parse.js";

/**
 * An HNSW graph (hnswlib-node, the C++ hnswlib) over a LocalIndex's slots, for the FAST and
 * BALANCED profiles of large indexes (docs/decisions.md, "Vector search"). Derived state twice
 * over: rebuilt from the LocalIndex, which is rebuilt from Redis. Insertion costs about a
 * millisecond per 384-dimension vector, so the store adds pending slots a few milliseconds at a
 * time between requests (`build`), and a query searches the graph and scans the few pending slots exactly (commands.ts).
 */

/** Graph degree and construction breadth (measured in bench/vector.ts). */
const M = 16;
const EF_CONSTRUCTION = 100;

const SPACE: Record<Metric, "ip" | "l2"> = { COSINE: "ip", DOT: "ip", EUCLIDEAN: "l2" };

/** What the graph reads the vectors from (LocalIndex). */
export interface SlotVectors {
  vectorAt(slot: number): Float32Array;
}

export class Graph {
  private readonly index: hnswlib.HierarchicalNSW;
  private capacity: number;
  private readonly pending = new Set<number>();
  private readonly inGraph = new Set<number>();

  constructor(dim: number, metric: Metric, capacity: number) {
    this.capacity = Math.max(1024, capacity);
    this.index = new hnswlib.HierarchicalNSW(SPACE[metric], dim);
    this.index.initIndex(this.capacity, M, EF_CONSTRUCTION, 100);
  }

  /** The slot's vector is new or changed: (re)insert it on a later `build`. */
  enqueue(slot: number): void {
    this.pending.add(slot);
  }

  remove(slot: number): void {
    this.pending.delete(slot);
    if (this.inGraph.delete(slot)) this.index.markDelete(slot);
  }

  /** Every vector is in the graph: it may answer queries. */
  get ready(): boolean {
    return this.pending.size === 0;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  isPending(slot: number): boolean {
    return this.pending.has(slot);
  }

  /** The slots not (or not as they are now) in the graph yet. */
  pendingSlots(): IterableIterator<number> {
    return this.pending.values();
  }

  /** Inserts pending slots until `budgetMs` has passed; true while some remain. */
  build(vectors: SlotVectors, budgetMs: number): boolean {
    const until = performance.now() + budgetMs;
    for (const slot of this.pending) {
      if (slot >= this.capacity) {
        this.capacity = Math.max(2 * this.capacity, slot + 1);
        this.index.resizeIndex(this.capacity);
      }
      this.index.addPoint(Array.from(vectors.vectorAt(slot)), slot);
      this.pending.delete(slot);
      this.inGraph.add(slot);
      if (performance.now() > until) break;
    }
    return this.pending.size > 0;
  }

  /** The slots of (about) the k nearest, searching `ef` candidates wide. */
  search(query: Float32Array, k: number, ef: number): number[] {
    const n = Math.min(k, this.inGraph.size);
    if (n === 0) return [];
    this.index.setEf(Math.max(ef, n));
    return this.index.searchKnn(Array.from(query), n).neighbors;
  }
}
