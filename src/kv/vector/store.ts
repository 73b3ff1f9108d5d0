import { Deadline } from "../search/deadline.js";
import type { SliceScheduler, Steps } from "../search/scheduler.js";
import { Graph } from "./graph.js";
import type { LocalIndex } from "./local-index.js";
import type { VectorSettings } from "./settings.js";
import { catchUp, CacheFull, loadWhole, readMeta, type LoadProgress, type Reader } from "./sync.js";

/**
 * One database's in-process vector index copies, by index name (derived state: any of them may
 * be dropped at any time and is loaded again from Redis). Syncs of one index run one at a time
 * (`chain`); a query waits for its sync at most until its deadline, and the sync goes on in the
 * background when the query gives up. Copies are dropped least recently queried first once
 * their bytes pass STASHD_KV_VECTOR_CACHE_BYTES. The computing a sync does (decoding and
 * storing vectors, compaction, graph building) runs on the process's scheduler a slice at a time
 * (search/scheduler.ts), beside the queries.
 */

interface Entry {
  local: LocalIndex | undefined;
  chain: Promise<unknown>;
  progress: LoadProgress;
  building: boolean;
}

/** How many whole loads one sync tries when the index keeps changing under it. */
const LOAD_ATTEMPTS = 3;

let buildsRunning = 0;

/** How many graphs this process is building now (bench/vector.ts waits for 0). */
export function graphBuildsRunning(): number {
  return buildsRunning;
}

/** The sync did not finish before the query's deadline (it goes on). */
export class StillLoading extends Error {
  constructor(name: string, loaded: number) {
    super(
      `ERR vector index '${name}' is still loading into this stashd process (${loaded} vectors so far); retry shortly`,
    );
  }
}

export class VectorStore {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly settings: VectorSettings,
    private readonly scheduler: SliceScheduler,
  ) {}

  /**
   * The index's copy, current as of this call (undefined: no such index), waiting at most until
   * `deadline` (performance.now() time). Throws StillLoading, CacheFull or IndexReadError.
   */
  async current(
    pool: Reader,
    name: string,
    log: string,
    deadline: number,
  ): Promise<LocalIndex | undefined> {
    const entry = this.entryOf(name);
    const sync = entry.chain.then(() => this.sync(pool, name, log, entry));
    entry.chain = sync.catch(() => undefined);
    const local = await beforeDeadline(
      sync,
      deadline,
      () => new StillLoading(name, entry.progress.loaded),
    );
    if (local) {
      local.lastUsed = Date.now();
      this.evictBeyondBudget(name);
    }
    return local;
  }

  /** Forgets an index's copy (VECTOR.DROP by this process; others notice the new generation). */
  forget(name: string): void {
    const entry = this.entries.get(name);
    if (entry) entry.local = undefined;
  }

  private entryOf(name: string): Entry {
    let entry = this.entries.get(name);
    if (!entry) {
      entry = {
        local: undefined,
        chain: Promise.resolve(),
        progress: { loaded: 0 },
        building: false,
      };
      this.entries.set(name, entry);
    }
    return entry;
  }

  private async sync(
    pool: Reader,
    name: string,
    log: string,
    entry: Entry,
  ): Promise<LocalIndex | undefined> {
    for (let attempt = 0; attempt < LOAD_ATTEMPTS; attempt++) {
      const meta = await readMeta(pool, name);
      if (!meta) {
        entry.local = undefined;
        return undefined;
      }
      let local = entry.local?.gen === meta.gen ? entry.local : undefined;
      if (local && (await catchUp(pool, name, log, local, meta.seq, this.scheduler))) {
        if (local.needsCompaction) {
          const deadline = new Deadline(Infinity);
          local = entry.local = await this.scheduler.background(
            local.compacted(deadline),
            deadline,
          );
        }
        this.maybeBuildGraph(entry, local);
        return local;
      }
      entry.local = undefined;
      entry.progress = { loaded: 0 };
      const fresh = await loadWhole(
        pool,
        name,
        log,
        meta,
        this.settings.cacheBytes,
        entry.progress,
        this.scheduler,
      );
      if (await catchUp(pool, name, log, fresh, Math.max(meta.seq, fresh.seq), this.scheduler)) {
        entry.local = fresh;
        this.maybeBuildGraph(entry, fresh);
        return fresh;
      }
    }
    throw new Error(`vector index '${name}' changed under ${LOAD_ATTEMPTS} whole loads`);
  }

  /** Gives a large index a graph, and keeps inserting its pending vectors between requests. */
  private maybeBuildGraph(entry: Entry, local: LocalIndex): void {
    if (!local.graph && local.count >= this.settings.hnswMinVectors) {
      local.graph = new Graph(local.dim, local.metric, local.count);
      for (const slot of local.slots()) local.graph.enqueue(slot);
    }
    if (!local.graph || local.graph.ready || entry.building) return;
    entry.building = true;
    buildsRunning++;
    const deadline = new Deadline(Infinity);
    void this.scheduler.background(graphSteps(entry, local, deadline), deadline).finally(() => {
      entry.building = false;
      buildsRunning--;
    });
  }

  private evictBeyondBudget(keep: string): void {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.local?.bytes ?? 0;
    if (total <= this.settings.cacheBytes) return;
    const byAge = [...this.entries.entries()]
      .filter(([name, e]) => name !== keep && e.local)
      .sort(([, a], [, b]) => (a.local?.lastUsed ?? 0) - (b.local?.lastUsed ?? 0));
    for (const [name, entry] of byAge) {
      if (total <= this.settings.cacheBytes) return;
      total -= entry.local?.bytes ?? 0;
      entry.local = undefined;
      this.entries.delete(name);
    }
    const kept = this.entries.get(keep);
    if (total > this.settings.cacheBytes && kept?.local) {
      const bytes = kept.local.bytes;
      kept.local = undefined;
      throw new CacheFull(keep, bytes, this.settings.cacheBytes);
    }
  }
}

/** Inserts the copy's pending vectors into its graph, one at a time, until none is left. */
function* graphSteps(entry: Entry, local: LocalIndex, deadline: Deadline): Steps<void> {
  for (;;) {
    const graph = local.graph;
    // A budget of 0 ms inserts one vector (about a millisecond at 384 dimensions).
    if (entry.local !== local || !graph || !graph.build(local, 0)) return;
    if (deadline.due()) yield;
  }
}

/** The promise's value, or `late()` thrown once `deadline` passes first. */
async function beforeDeadline<T>(
  work: Promise<T>,
  deadline: number,
  late: () => Error,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, deadline - performance.now()));
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
