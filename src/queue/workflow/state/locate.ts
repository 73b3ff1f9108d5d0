import type { Partition, Partitions } from "../../store/partitions.js";
import { asInt, checked } from "../../store/replies.js";

/** Run ids whose partition one process remembers (docs/workflow.md §3, Partitions). */
export const RUN_CACHE_SIZE = 10_000;

/**
 * Finds the partition a workflow run lives in. A run is placed by its flow-control key when it
 * has one (else by its id), and run ids can be chosen by the user, so the id alone does not
 * name the partition: the run's hash is looked for, in the id's own partition first (where runs
 * without flow control live), then in all others at once. Found partitions are kept in a
 * bounded least-recently-used cache; a cached partition can be stale only if the run was
 * started again elsewhere (an ended run's id re-triggered with another flow-control key), which
 * callers detect by not finding the run there (see WorkflowStore.onRun) and then `search` again.
 */
export class RunLocator {
  private readonly cache = new Map<string, Partition>();

  constructor(
    private readonly parts: Partitions,
    private readonly size = RUN_CACHE_SIZE,
  ) {}

  /** The cached partition of the run, if any (refreshed as most recently used). */
  cached(runId: string): Partition | undefined {
    if (this.parts.count === 1) return this.parts.main;
    const p = this.cache.get(runId);
    if (p) this.remember(runId, p);
    return p;
  }

  /** Notes that the run lives in `p` (a run just started, or seen in a listing). */
  remember(runId: string, p: Partition): void {
    this.cache.delete(runId);
    this.cache.set(runId, p);
    if (this.cache.size > this.size) {
      const [oldest] = this.cache.keys();
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }

  drop(runId: string): void {
    this.cache.delete(runId);
  }

  /** The partition holding the run's hash, looked up in Redis; undefined when none has it. */
  async search(runId: string): Promise<Partition | undefined> {
    if (this.parts.count === 1) return this.parts.main;
    const home = this.parts.ofName(runId);
    const found = (await holds(home, runId)) ? home : (await this.others(runId, home))[0];
    if (found) this.remember(runId, found);
    else this.drop(runId);
    return found;
  }

  /** The cached partition, else `search`. */
  async find(runId: string): Promise<Partition | undefined> {
    return this.cached(runId) ?? (await this.search(runId));
  }

  /** Every partition but `except` holding the run's hash, looked up in one parallel round. */
  async others(runId: string, except: Partition): Promise<Partition[]> {
    const rest = this.parts.all.filter((p) => p !== except);
    const held = await Promise.all(rest.map((p) => holds(p, runId)));
    return rest.filter((_, i) => held[i]);
  }
}

const holds = async (p: Partition, runId: string): Promise<boolean> =>
  asInt(checked(await p.redis.exec(["EXISTS", p.keys.workflowRun(runId)]), "workflow run")) === 1;
